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
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/peers"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/sharder"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// DefaultConcurrentTakes is how many fences a replica reads and writes at
// once while taking them.
const DefaultConcurrentTakes = 8

// CoordinatorOptions configure a Coordinator.
type CoordinatorOptions struct {
	// Namespace holds the fence Leases, named <Prefix>-<the space's FenceKey>.
	Namespace, Prefix string
	// LeaseDuration is how long a fence lasts unrenewed, in whole seconds;
	// LeaseRenew how often its holder renews it.
	LeaseDuration, LeaseRenew time.Duration
	// Throttle is how long a replica waits before it tries a fence it
	// failed to take again.
	Throttle time.Duration
	// Probe is how often the replica decides again which spaces it serves.
	Probe time.Duration
	// ConcurrentTakes bounds the fences taken at once (DefaultConcurrentTakes
	// when zero).
	ConcurrentTakes int
	// Sharder decides which replica should serve a space, by its FenceKey.
	Sharder sharder.Sharder
	// Peers is the replicas' membership.
	Peers peers.Registry
	// Clock reads the time (the real clock when nil).
	Clock clock.WithTicker
	Log   logr.Logger
}

// Coordinator serves a share of the spaces: a space is served (its awares
// engaged) by the replica that the sharder picks for it among the live
// peers, and only while that replica holds the space's fence Lease.
//
// It is a fork of multicluster-runtime v0.24.1's sharded.Coordinator
// (pkg/manager/coordinator/sharded: coordinator.go and leaseguard.go),
// which it replaces. It differs in three ways:
//   - the fences are taken concurrently, up to ConcurrentTakes at once,
//     outside the coordinator's lock. The upstream decision pass read and
//     wrote every fence it was to take one after another under its lock, so
//     a replica that inherited a dead peer's spaces served the last of them
//     only after the sum of every take's round trips, and a lost fence
//     waited for the lock to stop its space;
//   - Engage wakes the one decision loop instead of starting a decision pass
//     of its own, so engaging n spaces makes no n passes over n spaces;
//   - a space's fence is named and hashed by its FenceKey, and the awares are
//     engaged under the space's own name (upstream names a fence by the
//     sanitized space name, which kcp's root:a-b and root:a:b share and a
//     long name overflows).
//
// Its fences, their timings and their renewal are upstream's.
type Coordinator struct {
	kube  client.Client
	opts  CoordinatorOptions
	self  sharder.PeerInfo
	log   logr.Logger
	clock clock.WithTicker
	wake  chan struct{}
	takes chan struct{} // a slot for each fence being taken

	mu      sync.Mutex
	engaged map[multicluster.ClusterName]*engagement
	awares  []multicluster.Aware
}

var _ mcmanager.Coordinator = &Coordinator{}

// engagement is the coordinator's state of one engaged space.
type engagement struct {
	name multicluster.ClusterName
	key  multicluster.ClusterName // FenceKey(name)
	cl   cluster.Cluster
	// cancel stops the space's awares; set while started.
	cancel  context.CancelFunc
	started bool
	// taking is set while a take of the fence is in flight.
	taking bool
	fence  *fenceGuard
	// nextTry is when a fence that could not be taken is tried again.
	nextTry time.Time
}

// NewCoordinator returns a coordinator that reads and writes the fence
// Leases through kube, which should not be cached.
func NewCoordinator(kube client.Client, opts CoordinatorOptions) *Coordinator {
	if opts.ConcurrentTakes <= 0 {
		opts.ConcurrentTakes = DefaultConcurrentTakes
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Coordinator{
		kube:    kube,
		opts:    opts,
		self:    opts.Peers.Self(),
		log:     opts.Log,
		clock:   opts.Clock,
		wake:    make(chan struct{}, 1),
		takes:   make(chan struct{}, opts.ConcurrentTakes),
		engaged: map[multicluster.ClusterName]*engagement{},
	}
}

// AddAware implements mcmanager.Coordinator.
func (c *Coordinator) AddAware(a multicluster.Aware) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.awares = append(c.awares, a)
}

// Runnable implements mcmanager.Coordinator: it runs the peer registry and
// decides which spaces to serve at every probe and whenever a space is
// engaged.
func (c *Coordinator) Runnable() manager.Runnable {
	return manager.RunnableFunc(func(ctx context.Context) error {
		c.log.Info("Sharding coordinator starting", "peer", c.self.ID)
		errs := make(chan error, 1)
		go func() { errs <- c.opts.Peers.Run(ctx) }()
		ticker := c.clock.NewTicker(c.opts.Probe)
		defer ticker.Stop()
		for {
			c.decide(ctx)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case err := <-errs:
				return err
			case <-ticker.C():
			case <-c.wake:
			}
		}
	})
}

// Engage implements mcmanager.Coordinator: the space is served, by this
// replica or another, until ctx ends.
func (c *Coordinator) Engage(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	e := &engagement{name: name, key: FenceKey(name), cl: cl}
	if cur := c.engaged[name]; cur != nil {
		// Engaged again: the old engagement stops, the fence stays.
		if cur.cancel != nil {
			cur.cancel()
		}
		e.fence = cur.fence
	}
	c.engaged[name] = e
	c.mu.Unlock()
	go func() {
		<-ctx.Done()
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.engaged[name] != e {
			return
		}
		if e.cancel != nil {
			e.cancel()
		}
		if e.fence != nil {
			go e.fence.Release(context.Background())
		}
		delete(c.engaged, name)
	}()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return nil
}

// decide starts a take of every fence this replica should hold and does
// not, and stops serving the spaces it should not.
func (c *Coordinator) decide(ctx context.Context) {
	peers := c.opts.Peers.Snapshot()
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.engaged {
		should := c.opts.Sharder.ShouldOwn(string(e.key), peers, c.self)
		switch {
		case should && !e.started && !e.taking && !now.Before(e.nextTry):
			if e.fence == nil {
				e.fence = c.newFence(e.name, e.key)
			}
			e.taking = true
			go c.take(ctx, e)
		case !should && e.started:
			e.cancel()
			e.cancel, e.started, e.nextTry = nil, false, time.Time{}
			go e.fence.Release(ctx)
			c.log.Info("Stopped serving a space another replica should serve", "space", e.name, "peer", c.self.ID)
		}
	}
}

// newFence returns the guard of a space's fence, which stops serving the
// space when a renewal fails.
func (c *Coordinator) newFence(name, key multicluster.ClusterName) *fenceGuard {
	var f *fenceGuard
	lost := func() {
		c.log.Info("Lost a space's fence; stopped serving it", "space", name, "peer", c.self.ID)
		c.mu.Lock()
		defer c.mu.Unlock()
		if e := c.engaged[name]; e != nil && e.fence == f && e.started {
			e.cancel()
			e.cancel, e.started = nil, false
		}
	}
	f = newFenceGuard(c.kube, c.clock, c.opts.Namespace, leaseOf(c.opts.Prefix, key), c.self.ID,
		c.opts.LeaseDuration, c.opts.LeaseRenew, lost)
	return f
}

// take tries the engagement's fence, when a slot is free, and serves the
// space once it is held.
func (c *Coordinator) take(ctx context.Context, e *engagement) {
	select {
	case c.takes <- struct{}{}:
	case <-ctx.Done():
		c.mu.Lock()
		e.taking = false
		c.mu.Unlock()
		return
	}
	// A take answered after half the fence's duration has left little of
	// it; it is tried again instead of held up.
	tctx, cancel := context.WithTimeout(ctx, c.opts.LeaseDuration/2)
	held := e.fence.TryAcquire(tctx)
	cancel()
	<-c.takes

	c.mu.Lock()
	defer c.mu.Unlock()
	e.taking = false
	cur := c.engaged[e.name]
	switch {
	case !held:
		e.nextTry = c.clock.Now().Add(c.opts.Throttle)
	case cur != e:
		// Engaged again, or gone, while the fence was taken: a later
		// engagement keeps the fence, which is released otherwise.
		if cur == nil || cur.fence != e.fence {
			go e.fence.Release(context.Background())
		}
	case !c.opts.Sharder.ShouldOwn(string(e.key), c.opts.Peers.Snapshot(), c.self):
		go e.fence.Release(ctx)
	default:
		sctx, stop := context.WithCancel(ctx)
		e.cancel, e.started = stop, true
		c.log.Info("Serving a space", "space", e.name, "peer", c.self.ID)
		go c.serve(sctx, e, append([]multicluster.Aware(nil), c.awares...))
	}
}

// serve engages the awares with the space; when one fails, the space
// stops, to be tried again at a later decision.
func (c *Coordinator) serve(ctx context.Context, e *engagement, awares []multicluster.Aware) {
	for _, a := range awares {
		if err := a.Engage(ctx, e.name, e.cl); err != nil {
			c.log.Error(err, "Failed to engage a space", "space", e.name)
			c.mu.Lock()
			defer c.mu.Unlock()
			if e.started && e.cancel != nil {
				e.cancel()
				e.cancel, e.started = nil, false
			}
			return
		}
	}
}
