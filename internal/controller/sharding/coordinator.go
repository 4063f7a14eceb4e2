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
// which it replaces, and keeps its rules: which replica should serve a
// space; how a fence is taken, renewed, given up at the first failed
// renewal and released. It is forked because upstream took every fence
// one after another under its lock, inside unexported code, so a replica
// that inherited a dead peer's spaces served the last of them only after
// the sum of every take's round trips; this one takes up to
// ConcurrentTakes at once, outside its lock. It also names each fence by
// its space's FenceKey, and mends what upstream got wrong across
// engagements and releases; docs/reliability.md ("Why the coordinator is
// a fork") lists every difference.
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
	fences  map[multicluster.ClusterName]*fenceGuard // by space, until released
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
	// nextTry is when a fence that could not be taken is tried again.
	nextTry time.Time
}

// NewCoordinator returns a coordinator that reads and writes the fence
// Leases through kube, which should not be cached. Unset timings take
// the stager's defaults.
func NewCoordinator(kube client.Client, opts CoordinatorOptions) *Coordinator {
	if opts.ConcurrentTakes <= 0 {
		opts.ConcurrentTakes = DefaultConcurrentTakes
	}
	if opts.LeaseDuration <= 0 {
		opts.LeaseDuration = 20 * time.Second
	}
	// A Lease counts whole seconds; less than one would expire as it is
	// written.
	opts.LeaseDuration = max(opts.LeaseDuration, time.Second)
	if opts.LeaseRenew <= 0 {
		opts.LeaseRenew = opts.LeaseDuration / 4
	}
	if opts.Probe <= 0 {
		opts.Probe = 2 * time.Second
	}
	if opts.Throttle <= 0 {
		opts.Throttle = time.Second
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
		fences:  map[multicluster.ClusterName]*fenceGuard{},
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
				// The registry deletes this replica's peer Lease as it
				// stops: wait for it, or the process may exit first.
				return <-errs
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
	if cur := c.engaged[name]; cur != nil && cur.cancel != nil {
		// Engaged again: the old engagement stops, the fence stays.
		cur.cancel()
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
		delete(c.engaged, name)
		if f := c.fences[name]; f != nil {
			c.releaseLocked(name, f)
		}
	}()
	c.wakeUp()
	return nil
}

func (c *Coordinator) wakeUp() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// decide starts a take of every fence this replica should hold for a space
// it does not serve, stops serving the spaces it should not, and releases
// the fences it holds for spaces it neither serves nor should.
func (c *Coordinator) decide(ctx context.Context) {
	peers := c.opts.Peers.Snapshot()
	if len(peers) == 0 {
		return // the registry has not read the peers yet
	}
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, e := range c.engaged {
		f := c.fences[name]
		should := c.opts.Sharder.ShouldOwn(string(e.key), peers, c.self)
		switch {
		case should && !e.started && !e.taking && !now.Before(e.nextTry):
			if f == nil {
				f = c.newFence(name, e.key)
				c.fences[name] = f
			}
			if f.releasing > 0 {
				continue
			}
			e.taking = true
			f.taking++
			go c.take(ctx, e, f)
		case !should && e.started:
			e.cancel()
			e.cancel, e.started, e.nextTry = nil, false, time.Time{}
			c.releaseLocked(name, f)
			c.log.Info("Stopped serving a space another replica should serve", "space", name, "peer", c.self.ID)
		case !should && !e.taking && f != nil && f.held.Load() && f.releasing == 0:
			c.releaseLocked(name, f)
		}
	}
}

// newFence returns the guard of a space's fence, which stops serving the
// space when a renewal fails.
func (c *Coordinator) newFence(name, key multicluster.ClusterName) *fenceGuard {
	var f *fenceGuard
	lost := func(err error) {
		c.log.Info("Lost a space's fence; stopped serving it", "space", name, "peer", c.self.ID, "reason", err.Error())
		c.mu.Lock()
		defer c.mu.Unlock()
		if e := c.engaged[name]; e != nil && c.fences[name] == f && e.started {
			e.cancel()
			e.cancel, e.started = nil, false
		}
		c.wakeUp()
	}
	f = newFenceGuard(c.kube, c.clock, c.opts.Namespace, leaseOf(c.opts.Prefix, key), c.self.ID,
		c.opts.LeaseDuration, c.opts.LeaseRenew, lost)
	f.unanswered = func(err error) {
		c.log.Info("A renewal of a space's fence got no answer, or was refused as too busy; serving on and renewing again", "space", name,
			"peer", c.self.ID, "reason", err.Error())
	}
	return f
}

// releaseLocked releases a space's fence in the background, its requests
// bounded by half the fence's duration, and forgets the guard once it is
// released, no take of it is in flight and the space is not engaged; the
// caller holds c.mu.
func (c *Coordinator) releaseLocked(name multicluster.ClusterName, f *fenceGuard) {
	f.releasing++
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.LeaseDuration/2)
		f.Release(ctx)
		cancel()
		c.mu.Lock()
		defer c.mu.Unlock()
		f.releasing--
		if f.releasing == 0 && f.taking == 0 && !f.held.Load() && c.engaged[name] == nil && c.fences[name] == f {
			delete(c.fences, name)
		}
		c.wakeUp()
	}()
}

// endTakeLocked ends a take of a space's fence and, when the space is gone
// and no other take of it is in flight, releases the fence, held or not,
// and so forgets its guard: a release at the disengagement that ended
// before this take left the guard to it, and one still pending may have
// looked before the take held the fence. A release, not a deletion here,
// since it waits for the guard's lock, behind a failed renewal's release
// still in flight, which a later guard's take must not overtake. The
// caller holds c.mu.
func (c *Coordinator) endTakeLocked(e *engagement, f *fenceGuard) {
	e.taking = false
	f.taking--
	if f.taking == 0 && c.engaged[e.name] == nil && c.fences[e.name] == f {
		c.releaseLocked(e.name, f)
	}
}

// take tries a space's fence, when a slot is free, and serves the space
// once it is held.
func (c *Coordinator) take(ctx context.Context, e *engagement, f *fenceGuard) {
	select {
	case c.takes <- struct{}{}:
	case <-ctx.Done():
		c.mu.Lock()
		c.endTakeLocked(e, f)
		c.mu.Unlock()
		return
	}
	defer func() { <-c.takes }()
	// What was decided may have changed while the take waited for a slot.
	c.mu.Lock()
	if c.engaged[e.name] != e || !c.opts.Sharder.ShouldOwn(string(e.key), c.opts.Peers.Snapshot(), c.self) {
		c.endTakeLocked(e, f)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	tctx, cancel := context.WithTimeout(ctx, c.opts.LeaseDuration/2)
	held := f.TryAcquire(tctx)
	cancel()

	c.mu.Lock()
	defer c.mu.Unlock()
	c.endTakeLocked(e, f)
	switch cur := c.engaged[e.name]; {
	case !held || !f.held.Load():
		// Not taken, or lost again since (a failed renewal).
		e.nextTry = c.clock.Now().Add(c.opts.Throttle)
	case cur != e:
		// Engaged again while the fence was taken, and the later
		// engagement has it; or gone, and endTakeLocked released it.
	case !c.opts.Sharder.ShouldOwn(string(e.key), c.opts.Peers.Snapshot(), c.self):
		c.releaseLocked(e.name, f)
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
			// Unless this serving has already stopped, and another begun.
			if e.started && ctx.Err() == nil {
				e.cancel()
				e.cancel, e.started = nil, false
				e.nextTry = c.clock.Now().Add(c.opts.Throttle)
			}
			return
		}
	}
}
