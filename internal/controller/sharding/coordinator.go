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
	// Namespace holds the fence Leases, named <Prefix>-<the slot's FenceKey>.
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
	// Sharder decides which replica should serve a slot, by its FenceKey.
	Sharder sharder.Sharder
	// Peers is the replicas' membership.
	Peers peers.Registry
	// Clock reads the time (the real clock when nil).
	Clock clock.WithTicker
	Log   logr.Logger
}

// Coordinator serves a share of the spaces: each space falls into one of
// Slots slots (FenceKey), and the engaged spaces of a slot are served
// (their awares engaged) by the replica that the sharder picks for the
// slot among the live peers, and only while that replica holds the slot's
// fence Lease. A slot's fence is taken when one of its spaces is to be
// served, shared by its spaces, and released when the last of them is
// disengaged or the slot moves away: the fleet renews at most Slots
// fences a period, and a survivor takes at most Slots/R of them after a
// peer dies, however many spaces there are.
//
// It is a fork of multicluster-runtime v0.24.1's sharded.Coordinator
// (pkg/manager/coordinator/sharded: coordinator.go and leaseguard.go),
// which it replaces, and keeps its rules: which replica should serve a
// key; how a fence is taken, renewed, given up at the first failed
// renewal and released. It is forked because upstream took every fence
// one after another under its lock, inside unexported code, so a replica
// that inherited a dead peer's spaces served the last of them only after
// the sum of every take's round trips; this one takes up to
// ConcurrentTakes at once, outside its lock. It also fences slots rather
// than spaces, and mends what upstream got wrong across engagements and
// releases; docs/reliability.md ("Why the coordinator is a fork") lists
// every difference.
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
	// slots holds the engaged spaces of each slot, by the slot's key.
	slots  map[multicluster.ClusterName]map[multicluster.ClusterName]*engagement
	fences map[multicluster.ClusterName]*fenceGuard // by slot key, until released
	awares []multicluster.Aware
}

var _ mcmanager.Coordinator = &Coordinator{}

// engagement is the coordinator's state of one engaged space.
type engagement struct {
	name multicluster.ClusterName
	key  multicluster.ClusterName // FenceKey(name): the slot
	cl   cluster.Cluster
	// cancel stops the space's awares; set while started.
	cancel  context.CancelFunc
	started bool
	// nextTry is when a space whose fence could not be taken, or whose
	// awares failed, is tried again.
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
		slots:   map[multicluster.ClusterName]map[multicluster.ClusterName]*engagement{},
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
	if c.slots[e.key] == nil {
		c.slots[e.key] = map[multicluster.ClusterName]*engagement{}
	}
	c.slots[e.key][name] = e
	c.mu.Unlock()
	go func() {
		<-ctx.Done()
		c.mu.Lock()
		defer c.mu.Unlock()
		c.disengageLocked(e)
	}()
	c.wakeUp()
	return nil
}

// disengageLocked stops and forgets an engagement that ended, unless a
// later one replaced it, and releases the slot's fence once no space of
// the slot is left engaged. The caller holds c.mu.
func (c *Coordinator) disengageLocked(e *engagement) {
	if c.engaged[e.name] != e {
		return
	}
	if e.cancel != nil {
		e.cancel()
	}
	delete(c.engaged, e.name)
	delete(c.slots[e.key], e.name)
	if len(c.slots[e.key]) > 0 {
		return // the slot's other spaces keep the fence
	}
	delete(c.slots, e.key)
	if f := c.fences[e.key]; f != nil {
		c.releaseLocked(e.key, f)
	}
}

func (c *Coordinator) wakeUp() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// decide, for every slot with an engaged space, starts a take of its
// fence or serves its spaces under the fence held when this replica should
// serve the slot, and otherwise stops serving its spaces and releases its
// fence.
func (c *Coordinator) decide(ctx context.Context) {
	peers := c.opts.Peers.Snapshot()
	if len(peers) == 0 {
		return // the registry has not read the peers yet
	}
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, spaces := range c.slots {
		if c.opts.Sharder.ShouldOwn(string(key), peers, c.self) {
			c.claimLocked(ctx, key, spaces, now)
		} else {
			c.yieldLocked(key, spaces)
		}
	}
}

// claimLocked serves the slot's spaces that wait (and are not held back
// by a failure) once its fence is held, or starts a take of the fence for
// them. The caller holds c.mu.
func (c *Coordinator) claimLocked(ctx context.Context, key multicluster.ClusterName, spaces map[multicluster.ClusterName]*engagement, now time.Time) {
	waiting := false
	for _, e := range spaces {
		waiting = waiting || !e.started && !now.Before(e.nextTry)
	}
	if !waiting {
		return
	}
	f := c.fences[key]
	switch {
	case f == nil:
		f = c.newFence(key)
		c.fences[key] = f
	case f.releasing > 0 || f.taking > 0:
		return
	case f.held.Load():
		c.startLocked(ctx, key, now)
		return
	}
	f.taking++
	go c.take(ctx, key, f)
}

// yieldLocked stops serving the spaces of a slot another replica should
// serve, and releases its fence. The caller holds c.mu.
func (c *Coordinator) yieldLocked(key multicluster.ClusterName, spaces map[multicluster.ClusterName]*engagement) {
	stopped := false
	for _, e := range spaces {
		if e.started {
			e.cancel()
			e.cancel, e.started, e.nextTry = nil, false, time.Time{}
			stopped = true
			c.log.Info("Stopped serving a space another replica should serve", "space", e.name, "slot", key, "peer", c.self.ID)
		}
	}
	f := c.fences[key]
	if f != nil && (stopped || f.taking == 0 && f.held.Load() && f.releasing == 0) {
		c.releaseLocked(key, f)
	}
}

// startLocked serves the slot's spaces that wait and are not held back by
// a failure; its fence is held. The caller holds c.mu.
func (c *Coordinator) startLocked(ctx context.Context, key multicluster.ClusterName, now time.Time) {
	for _, e := range c.slots[key] {
		if e.started || now.Before(e.nextTry) {
			continue
		}
		sctx, stop := context.WithCancel(ctx)
		e.cancel, e.started = stop, true
		c.log.Info("Serving a space", "space", e.name, "slot", key, "peer", c.self.ID)
		go c.serve(sctx, e, append([]multicluster.Aware(nil), c.awares...))
	}
}

// newFence returns the guard of a slot's fence, which stops serving the
// slot's spaces when a renewal fails.
func (c *Coordinator) newFence(key multicluster.ClusterName) *fenceGuard {
	var f *fenceGuard
	lost := func(err error) {
		c.log.Info("Lost a slot's fence; stopped serving its spaces", "slot", key, "peer", c.self.ID, "reason", err.Error())
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.fences[key] == f {
			for _, e := range c.slots[key] {
				if e.started {
					e.cancel()
					e.cancel, e.started = nil, false
				}
			}
		}
		c.wakeUp()
	}
	f = newFenceGuard(c.kube, c.clock, c.opts.Namespace, leaseOf(c.opts.Prefix, key), c.self.ID,
		c.opts.LeaseDuration, c.opts.LeaseRenew, lost)
	f.unanswered = func(err error) {
		c.log.Info("A renewal of a slot's fence got no answer, or was refused as too busy; serving on and renewing again", "slot", key,
			"peer", c.self.ID, "reason", err.Error())
	}
	return f
}

// releaseLocked releases a slot's fence in the background, its requests
// bounded by half the fence's duration, and forgets the guard once it is
// released, no take of it is in flight and no space of the slot is
// engaged; the caller holds c.mu.
func (c *Coordinator) releaseLocked(key multicluster.ClusterName, f *fenceGuard) {
	f.releasing++
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.LeaseDuration/2)
		f.Release(ctx)
		cancel()
		c.mu.Lock()
		defer c.mu.Unlock()
		f.releasing--
		if f.releasing == 0 && f.taking == 0 && !f.held.Load() && len(c.slots[key]) == 0 && c.fences[key] == f {
			delete(c.fences, key)
		}
		c.wakeUp()
	}()
}

// endTakeLocked ends a take of a slot's fence and, when no space of the
// slot is engaged any more, releases the fence, held or not, and so
// forgets its guard: a release at the last disengagement that ended before
// this take left the guard to it, and one still pending may have looked
// before the take held the fence. A release, not a deletion here, since it
// waits for the guard's lock, behind a failed renewal's release still in
// flight, which a later guard's take must not overtake. The caller holds
// c.mu.
func (c *Coordinator) endTakeLocked(key multicluster.ClusterName, f *fenceGuard) {
	f.taking--
	if f.taking == 0 && len(c.slots[key]) == 0 && c.fences[key] == f {
		c.releaseLocked(key, f)
	}
}

// take tries a slot's fence, when a take slot is free, and serves the
// slot's spaces once it is held.
func (c *Coordinator) take(ctx context.Context, key multicluster.ClusterName, f *fenceGuard) {
	select {
	case c.takes <- struct{}{}:
	case <-ctx.Done():
		c.mu.Lock()
		c.endTakeLocked(key, f)
		c.mu.Unlock()
		return
	}
	defer func() { <-c.takes }()
	// What was decided may have changed while the take waited.
	c.mu.Lock()
	if len(c.slots[key]) == 0 || !c.opts.Sharder.ShouldOwn(string(key), c.opts.Peers.Snapshot(), c.self) {
		c.endTakeLocked(key, f)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	tctx, cancel := context.WithTimeout(ctx, c.opts.LeaseDuration/2)
	held := f.TryAcquire(tctx)
	cancel()

	c.mu.Lock()
	defer c.mu.Unlock()
	c.endTakeLocked(key, f)
	switch {
	case !held || !f.held.Load():
		// Not taken, or lost again since (a failed renewal).
		next := c.clock.Now().Add(c.opts.Throttle)
		for _, e := range c.slots[key] {
			if !e.started {
				e.nextTry = next
			}
		}
	case len(c.slots[key]) == 0:
		// Gone, and endTakeLocked released the fence.
	case !c.opts.Sharder.ShouldOwn(string(key), c.opts.Peers.Snapshot(), c.self):
		c.releaseLocked(key, f)
	default:
		c.startLocked(ctx, key, c.clock.Now())
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
