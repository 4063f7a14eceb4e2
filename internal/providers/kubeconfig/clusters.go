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

package kubeconfig

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/kubestellar/workload-stager/internal/reqclass"
	findkubeconfig "github.com/kubestellar/workload-stager/providers/kubeconfig"
)

// Clusters serves spaces from kubeconfigs, one cluster per space name, for
// the providers that find kubeconfigs (Secrets, KubeFlex ControlPlanes). A
// changed kubeconfig replaces the space's cluster make-before-break: the new
// one is engaged first (the space runner then stops the old controller and
// starts the new one), and only then is the old cluster stopped, so the
// space stays engaged. Every kubeconfig goes through the Policy. Safe for
// concurrent use.
type Clusters struct {
	policy  findkubeconfig.Policy
	options []cluster.Option

	mu       sync.Mutex
	ctx      context.Context
	mgr      mcmanager.Manager
	clusters map[string]*engaged
	indexers []index
}

// engaged is a space served from a kubeconfig.
type engaged struct {
	cluster cluster.Cluster
	cancel  context.CancelFunc
	hash    string
}

// index is a field index to apply to every space's cluster.
type index struct {
	object  client.Object
	field   string
	extract client.IndexerFunc
}

// NewClusters returns the clusters of spaces whose kubeconfigs policy
// guards, each configured by options.
func NewClusters(policy findkubeconfig.Policy, options []cluster.Option) *Clusters {
	return &Clusters{policy: policy, options: options, clusters: map[string]*engaged{}}
}

// Start gives the clusters the manager they engage spaces with; ctx bounds
// every space's cluster.
func (c *Clusters) Start(ctx context.Context, mgr mcmanager.Manager) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ctx, c.mgr = ctx, mgr
}

// Get returns the cluster of an engaged space.
func (c *Clusters) Get(_ context.Context, name multicluster.ClusterName) (cluster.Cluster, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.clusters[string(name)]; ok {
		return e.cluster, nil
	}
	return nil, multicluster.ErrClusterNotFound
}

// IndexField indexes a field on every space's cluster, current and future.
func (c *Clusters) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.indexers = append(c.indexers, index{object: obj, field: field, extract: extract})
	for name, e := range c.clusters {
		if err := e.cluster.GetFieldIndexer().IndexField(ctx, obj, field, extract); err != nil {
			return fmt.Errorf("indexing %s on space %s: %w", field, name, err)
		}
	}
	return nil
}

// SharedError refuses a space whose kubeconfig another space, engaged
// first, already serves: the same WDS would be two spaces, and every policy
// in it would be rolled out twice.
type SharedError struct {
	// ServedBy is the space that serves the kubeconfig.
	ServedBy string
}

func (e *SharedError) Error() string {
	return fmt.Sprintf("space %s already serves the same kubeconfig", e.ServedBy)
}

// Engage serves the space name from the kubeconfig raw, unless it is
// served from the same one already. It returns a *RefusedError when the
// Policy refuses raw, and a *SharedError when another space serves it.
func (c *Clusters) Engage(name string, raw []byte, log logr.Logger) error {
	sum := sha256.Sum256(raw)
	hash := hex.EncodeToString(sum[:])
	c.mu.Lock()
	ctx, mgr := c.ctx, c.mgr
	old := c.clusters[name]
	indexers := append([]index(nil), c.indexers...)
	var servedBy string
	for other, e := range c.clusters {
		if other != name && e.hash == hash {
			servedBy = other
		}
	}
	c.mu.Unlock()
	if ctx == nil || mgr == nil {
		return fmt.Errorf("space %s: the clusters are not started", name)
	}
	if servedBy != "" {
		return &SharedError{ServedBy: servedBy}
	}
	if old != nil && old.hash == hash {
		return nil
	}
	cfg, err := spaceConfig(c.policy, raw)
	if err != nil {
		return err
	}
	cl, err := cluster.New(cfg, c.options...)
	if err != nil {
		return fmt.Errorf("space %s: %w", name, err)
	}
	for _, idx := range indexers {
		if err := cl.GetFieldIndexer().IndexField(ctx, idx.object, idx.field, idx.extract); err != nil {
			return fmt.Errorf("space %s: indexing %s: %w", name, idx.field, err)
		}
	}
	clusterCtx, cancel := context.WithCancel(ctx)
	go func() {
		if err := cl.Start(clusterCtx); err != nil {
			log.Error(err, "A space's cluster stopped")
		}
	}()
	e := &engaged{cluster: cl, cancel: cancel, hash: hash}
	c.mu.Lock()
	c.clusters[name] = e
	c.mu.Unlock()
	if err := mgr.Engage(clusterCtx, multicluster.ClusterName(name), cl); err != nil {
		c.mu.Lock()
		if old != nil {
			c.clusters[name] = old
		} else {
			delete(c.clusters, name)
		}
		c.mu.Unlock()
		cancel()
		return fmt.Errorf("engaging space %s: %w", name, err)
	}
	if old != nil {
		old.cancel()
		log.Info("The space's kubeconfig changed; it is served from the new one")
	} else {
		log.Info("Space engaged")
	}
	return nil
}

// Disengage stops serving a space, if it is served.
func (c *Clusters) Disengage(name string, log logr.Logger) {
	c.mu.Lock()
	e := c.clusters[name]
	delete(c.clusters, name)
	c.mu.Unlock()
	if e != nil {
		e.cancel()
		log.Info("Space disengaged")
	}
}

// spaceConfig is the config of a space's cluster made of its kubeconfig:
// as policy allows it, counting its requests (stager_api_requests_total).
func spaceConfig(policy findkubeconfig.Policy, raw []byte) (*rest.Config, error) {
	cfg, err := policy.RESTConfig(raw)
	if err != nil {
		return nil, err
	}
	return reqclass.Options{}.Instrument(cfg), nil
}
