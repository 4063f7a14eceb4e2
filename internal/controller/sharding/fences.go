// Copyright 2026 The KubeStellar Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package sharding

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	"sigs.k8s.io/multicluster-runtime/pkg/util/sanitize"
)

// FencedCoordinator is multicluster-runtime's sharded coordinator with a
// fence Lease of its own for every space. The coordinator (v0.24.1) names a
// space's fence <prefix>-<space, sanitized>: kcp's root:a-b and root:a:b
// shared one fence, and a space name of 240 characters made no valid Lease
// name, so that space was never served. FencedCoordinator hands the
// coordinator each space under its FenceKey, which is unique and a valid
// name, and hands the controllers the space under its own name.
type FencedCoordinator struct {
	inner *sharded.Coordinator

	mu     sync.Mutex
	names  map[multicluster.ClusterName]multicluster.ClusterName // by key
	awares []multicluster.Aware
}

var _ mcmanager.Coordinator = &FencedCoordinator{}

// NewFencedCoordinator wraps inner, which no one else may engage spaces
// with.
func NewFencedCoordinator(inner *sharded.Coordinator) *FencedCoordinator {
	c := &FencedCoordinator{inner: inner, names: map[multicluster.ClusterName]multicluster.ClusterName{}}
	inner.AddAware(renamer{c})
	return c
}

// maxReadableKey is how much of a space's sanitized name its key keeps.
const maxReadableKey = 40

// FenceKey is the name the coordinator knows a space by: its name
// sanitized and cut to 40 characters, for people reading the Leases, and a
// digest of the whole name, which tells spaces apart.
func FenceKey(space multicluster.ClusterName) multicluster.ClusterName {
	sum := sha256.Sum256([]byte(space))
	readable := sanitize.DNS1123(string(space))
	if len(readable) > maxReadableKey {
		readable = strings.TrimRight(readable[:maxReadableKey], "-.")
	}
	return multicluster.ClusterName(fmt.Sprintf("%s-%s", readable, hex.EncodeToString(sum[:5])))
}

// AddAware implements mcmanager.Coordinator.
func (c *FencedCoordinator) AddAware(a multicluster.Aware) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.awares = append(c.awares, a)
}

// Engage implements mcmanager.Coordinator: the coordinator gets the space
// under its key.
func (c *FencedCoordinator) Engage(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	key := FenceKey(name)
	c.mu.Lock()
	c.names[key] = name
	c.mu.Unlock()
	return c.inner.Engage(ctx, key, cl)
}

// Runnable implements mcmanager.Coordinator.
func (c *FencedCoordinator) Runnable() manager.Runnable { return c.inner.Runnable() }

// renamer engages the controllers with a space's own name when the
// coordinator engages its key.
type renamer struct{ c *FencedCoordinator }

// Engage implements multicluster.Aware.
func (r renamer) Engage(ctx context.Context, key multicluster.ClusterName, cl cluster.Cluster) error {
	r.c.mu.Lock()
	name, ok := r.c.names[key]
	awares := append([]multicluster.Aware(nil), r.c.awares...)
	r.c.mu.Unlock()
	if !ok {
		return fmt.Errorf("no space is engaged under the fence key %s", key)
	}
	for _, a := range awares {
		if err := a.Engage(ctx, name, cl); err != nil {
			return err
		}
	}
	return nil
}
