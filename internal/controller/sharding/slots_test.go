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
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/sharder"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// fenceWrites counts the writes of fence Leases through a client while
// counting is on.
type fenceWrites struct {
	mu       sync.Mutex
	counting bool
	n        int
}

func (w *fenceWrites) client(c client.WithWatch) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if strings.HasPrefix(obj.GetName(), fencePrefix+"-") {
				w.mu.Lock()
				if w.counting {
					w.n++
				}
				w.mu.Unlock()
			}
			return c.Update(ctx, obj, opts...)
		},
	})
}

// count returns the writes counted while f ran.
func (w *fenceWrites) count(f func()) int {
	w.mu.Lock()
	w.counting = true
	w.mu.Unlock()
	f()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.counting = false
	return w.n
}

// TestFencesAreBoundedBySlots: a replica serving 300 spaces holds at most
// Slots fence Leases and renews at most Slots of them a period. With a
// fence per space, the fleet renewed one Lease per space every period and
// a survivor took a dead peer's every space's fence: at 300 kcp
// workspaces the takeover needed minutes (issue 61).
func TestFencesAreBoundedBySlots(t *testing.T) {
	ns := newNamespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	direct := newDirect(t)
	writes := &fenceWrites{}
	const renew, periods = time.Second, 3
	c := newCoordinator(writes.client(direct), direct, ns, "alone", 4*renew, renew)
	served := &live{}
	c.AddAware(served)
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Runnable().Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	const spaces = 300
	for i := range spaces {
		if err := c.Engage(ctx, multicluster.ClusterName(fmt.Sprintf("kcp#root:wds%03d", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	environment.Eventually(t, 2*time.Minute, "every space served", func() error {
		if got := len(served.served()); got < spaces {
			return fmt.Errorf("%d of %d spaces served", got, spaces)
		}
		return nil
	})
	leases := &coordinationv1.LeaseList{}
	if err := direct.List(ctx, leases, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	fences := 0
	for _, l := range leases.Items {
		if strings.HasPrefix(l.Name, fencePrefix+"-") {
			fences++
		}
	}
	if fences > Slots {
		t.Errorf("%d fence Leases for %d spaces, want at most %d", fences, spaces, Slots)
	}
	// Each fence is renewed once a period (TestRenewalIsOneWrite); over
	// a window of periods its renewals fall in at most periods+1 of them.
	n := writes.count(func() { time.Sleep(periods * renew) })
	if n > (periods+1)*Slots {
		t.Errorf("%d fence renewals in %d periods, want at most %d a period", n, periods, Slots)
	}
}

// views is a peer registry per replica whose snapshot the test sets, so
// that replicas may disagree on who their peers are, as they do while a
// peer Lease is read late.
type views struct {
	mu    sync.Mutex
	views map[string][]sharder.PeerInfo
}

func (v *views) set(id string, peers []sharder.PeerInfo) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.views[id] = peers
}

// of returns the registry of replica id.
func (v *views) of(id string) *view {
	return &view{views: v, self: sharder.PeerInfo{ID: id, Weight: 1}}
}

type view struct {
	views *views
	self  sharder.PeerInfo
}

func (v *view) Self() sharder.PeerInfo { return v.self }

func (v *view) Snapshot() []sharder.PeerInfo {
	v.views.mu.Lock()
	defer v.views.mu.Unlock()
	return slices.Clone(v.views.views[v.self.ID])
}

func (v *view) Run(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

// servings is every replica's serving of every space, checked as each
// begins: no space is served by two replicas at once, and a replica
// serves a space only while it holds the space's fence Lease.
type servings struct {
	leases client.Client

	mu         sync.Mutex
	serving    map[multicluster.ClusterName]map[string]context.Context // by space, then replica
	violations []string
}

// aware is replica id's multicluster.Aware.
type aware struct {
	s  *servings
	id string
}

func (a aware) Engage(ctx context.Context, name multicluster.ClusterName, _ cluster.Cluster) error {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	// The Lease first, then the serving's context: a replica stops
	// serving before it releases the fence, so a Lease read with another
	// holder while the context is live is a serving without the fence.
	holder := s.holder(name)
	if ctx.Err() != nil {
		return nil // stopped already
	}
	if holder != a.id {
		s.violations = append(s.violations, fmt.Sprintf("%s serves %s while its fence is held by %q", a.id, name, holder))
	}
	for other, octx := range s.serving[name] {
		if other != a.id && octx.Err() == nil {
			s.violations = append(s.violations, fmt.Sprintf("%s and %s serve %s at once", a.id, other, name))
		}
	}
	if s.serving[name] == nil {
		s.serving[name] = map[string]context.Context{}
	}
	s.serving[name][a.id] = ctx
	return nil
}

// holder is the holder of the space's fence Lease, or "".
func (s *servings) holder(name multicluster.ClusterName) string {
	var lease coordinationv1.Lease
	if err := s.leases.Get(context.Background(), client.ObjectKey{Namespace: "fences", Name: leaseOf(fencePrefix, FenceKey(name))}, &lease); err != nil {
		return ""
	}
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

// servers returns the replicas serving the space now.
func (s *servings) servers(name multicluster.ClusterName) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for id, ctx := range s.serving[name] {
		if ctx.Err() == nil {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// sharingSpaces returns spaces of a few slots, several to a slot, so that
// spaces share fences.
func sharingSpaces() []multicluster.ClusterName {
	bySlot := map[multicluster.ClusterName][]multicluster.ClusterName{}
	for i := range 400 {
		name := multicluster.ClusterName(fmt.Sprintf("kcp#root:ws%d", i))
		bySlot[FenceKey(name)] = append(bySlot[FenceKey(name)], name)
	}
	groups := slices.SortedFunc(maps.Values(bySlot), func(a, b []multicluster.ClusterName) int {
		return cmp.Or(cmp.Compare(len(b), len(a)), cmp.Compare(a[0], b[0]))
	})
	var out []multicluster.ClusterName
	for _, g := range groups[:4] {
		out = append(out, g[:min(len(g), 3)]...)
	}
	return out
}

// TestNoSpaceServedTwice runs three replicas over spaces that share slot
// fences, through random engagements, disengagements and changes of each
// replica's view of its peers (which may disagree): no space is ever
// served by two replicas at once, a replica serves a space only while it
// holds the space's slot fence, and once the views agree again every space
// is served by the replica it falls to, and no fence is held by a replica
// that serves none of its spaces.
func TestNoSpaceServedTwice(t *testing.T) {
	spaces := sharingSpaces()
	ids := []string{"r0", "r1", "r2"}
	all := peersNamed(ids...)
	rapid.Check(t, func(rt *rapid.T) {
		leases := fake.NewClientBuilder().Build()
		s := &servings{leases: leases, serving: map[multicluster.ClusterName]map[string]context.Context{}}
		v := &views{views: map[string][]sharder.PeerInfo{}}
		ctx, cancel := context.WithCancel(context.Background())
		coordinators := map[string]*Coordinator{}
		var running sync.WaitGroup
		for _, id := range ids {
			v.set(id, all)
			c := NewCoordinator(leases, CoordinatorOptions{
				Namespace: "fences", Prefix: fencePrefix, LeaseDuration: time.Minute, LeaseRenew: 15 * time.Second,
				Throttle: 5 * time.Millisecond, Probe: 5 * time.Millisecond,
				Sharder: Rendezvous{}, Peers: v.of(id), Log: logr.Discard(),
			})
			c.AddAware(aware{s: s, id: id})
			coordinators[id] = c
			running.Add(1)
			go func() { defer running.Done(); _ = c.Runnable().Start(ctx) }()
		}
		engagements := map[string]map[multicluster.ClusterName]context.CancelFunc{}
		for _, id := range ids {
			engagements[id] = map[multicluster.ClusterName]context.CancelFunc{}
		}
		defer func() {
			for _, es := range engagements {
				for _, stop := range es {
					stop()
				}
			}
			cancel()
			running.Wait()
		}()

		for range rapid.IntRange(1, 20).Draw(rt, "steps") {
			id := rapid.SampledFrom(ids).Draw(rt, "replica")
			switch rapid.IntRange(0, 2).Draw(rt, "action") {
			case 0:
				name := rapid.SampledFrom(spaces).Draw(rt, "engage")
				if stop := engagements[id][name]; stop != nil {
					stop() // engaged again
				}
				ectx, stop := context.WithCancel(ctx)
				engagements[id][name] = stop
				if err := coordinators[id].Engage(ectx, name, nil); err != nil {
					rt.Fatal(err)
				}
			case 1:
				name := rapid.SampledFrom(spaces).Draw(rt, "disengage")
				if stop := engagements[id][name]; stop != nil {
					stop()
					delete(engagements[id], name)
				}
			case 2:
				seen := []sharder.PeerInfo{{ID: id, Weight: 1}}
				for _, p := range all {
					if p.ID != id && rapid.Bool().Draw(rt, "sees "+p.ID) {
						seen = append(seen, p)
					}
				}
				v.set(id, seen)
			}
			time.Sleep(time.Duration(rapid.IntRange(0, 20).Draw(rt, "ms")) * time.Millisecond)
		}
		for _, id := range ids {
			v.set(id, all)
		}
		err := pollFor(10*time.Second, func() error { return settled(s, leases, spaces, all, engagements) })
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.violations) > 0 {
			rt.Fatalf("%d violations, first: %s", len(s.violations), s.violations[0])
		}
		if err != nil {
			rt.Fatal(err)
		}
	})
}

// settled reports how the fleet differs from where it should come to rest
// once the replicas' views agree on all: each space served by the replica
// it falls to, if engaged there, else by none; every fence held by the
// replica its slot falls to, and only while one of its spaces is engaged
// there.
func settled(s *servings, leases client.Client, spaces []multicluster.ClusterName, all []sharder.PeerInfo,
	engagements map[string]map[multicluster.ClusterName]context.CancelFunc) error {
	owner := func(key multicluster.ClusterName) string {
		for _, p := range all {
			if (Rendezvous{}).ShouldOwn(string(key), all, p) {
				return p.ID
			}
		}
		return ""
	}
	var errs []error
	slotsWanted := map[multicluster.ClusterName]bool{}
	for _, name := range spaces {
		o := owner(FenceKey(name))
		var want []string
		if engagements[o][name] != nil {
			want = []string{o}
			slotsWanted[FenceKey(name)] = true
		}
		got := s.servers(name)
		if !slices.Equal(got, want) {
			errs = append(errs, fmt.Errorf("%s served by %q, want %q", name, got, want))
		}
		for _, id := range got {
			if holder := s.holder(name); holder != id {
				errs = append(errs, fmt.Errorf("%s served by %s while its fence is held by %q", name, id, holder))
			}
		}
	}
	list := &coordinationv1.LeaseList{}
	if err := leases.List(context.Background(), list, client.InNamespace("fences")); err != nil {
		return err
	}
	for _, l := range list.Items {
		holder := ptr.Deref(l.Spec.HolderIdentity, "")
		key := multicluster.ClusterName(strings.TrimPrefix(l.Name, fencePrefix+"-"))
		if holder != "" && !slotsWanted[key] {
			errs = append(errs, fmt.Errorf("fence %s held by %s, which serves none of its spaces", l.Name, holder))
		}
	}
	return errors.Join(errs...)
}

// pollFor calls check until it returns nil or timeout passes, and returns
// its last error.
func pollFor(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}
