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
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	"sigs.k8s.io/multicluster-runtime/pkg/util/sanitize"
)

// Tenures knows until when this replica holds each space's fence, from the
// fence Leases it writes itself. The sharded coordinator (multicluster-runtime
// v0.24.1) learns that a fence is lost only when its next renewal fails, and
// keeps the space's controller running until then: when a renewal comes late
// and another replica takes the expired fence, both write to the space. A
// space's controller asks Tenures before each write instead.
//
// A tenure starts from the renew time written in the Lease, which the
// coordinator reads from its clock before it sends the renewal, and ends a
// quarter of the Lease's duration before the Lease expires: that quarter
// is left for a write sent just before the end to land, and for the replicas'
// clocks to differ. Safe for concurrent use.
type Tenures struct {
	prefix string
	holder string

	mu     sync.Mutex
	leases map[string]time.Time // tenure's end, by the fence Lease's name
}

// NewTenures returns the tenures of holder (the replica's ID, the fences'
// holder identity) over the fences named <prefix>-<space's fence key>.
func NewTenures(prefix, holder string) *Tenures {
	return &Tenures{prefix: prefix, holder: holder, leases: map[string]time.Time{}}
}

// Client returns c with every create and update of a fence Lease recorded:
// a write that makes this replica the holder starts or extends its tenure
// once it succeeds; any other write of the fence (a release) ends the tenure
// before it is sent.
func (t *Tenures) Client(c client.WithWatch) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return t.write(obj, func() error { return c.Create(ctx, obj, opts...) })
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return t.write(obj, func() error { return c.Update(ctx, obj, opts...) })
		},
	})
}

// write sends a write of obj and records what it means for the tenures.
func (t *Tenures) write(obj client.Object, send func() error) error {
	lease, ok := obj.(*coordinationv1.Lease)
	if !ok || !strings.HasPrefix(lease.Name, t.prefix+"-") {
		return send()
	}
	spec := lease.Spec
	ours := spec.HolderIdentity != nil && *spec.HolderIdentity == t.holder && spec.RenewTime != nil && spec.LeaseDurationSeconds != nil
	if !ours {
		t.end(lease.Name)
		return send()
	}
	if err := send(); err != nil {
		// The tenure already recorded stands: no other replica takes the
		// fence before it expires.
		return err
	}
	lasts := time.Duration(*spec.LeaseDurationSeconds) * time.Second
	t.extend(lease.Name, spec.RenewTime.Add(lasts-lasts/4))
	return nil
}

func (t *Tenures) end(lease string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.leases, lease)
}

func (t *Tenures) extend(lease string, until time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if until.After(t.leases[lease]) {
		t.leases[lease] = until
	}
}

// HeldUntil is when this replica's tenure of the space's fence ends; the
// zero time when it does not hold it.
func (t *Tenures) HeldUntil(space multicluster.ClusterName) time.Time {
	lease := t.prefix + "-" + sanitize.DNS1123(string(FenceKey(space)))
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.leases[lease]
}

// Of returns the tenure of one space.
func (t *Tenures) Of(space multicluster.ClusterName) Tenure {
	return Tenure{tenures: t, space: space}
}

// Tenure is this replica's tenure of one space's fence.
type Tenure struct {
	tenures *Tenures
	space   multicluster.ClusterName
}

// HeldUntil is when the tenure ends; the zero time when this replica does
// not hold the fence.
func (t Tenure) HeldUntil() time.Time { return t.tenures.HeldUntil(t.space) }
