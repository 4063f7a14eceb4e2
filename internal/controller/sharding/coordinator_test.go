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
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// newCoordinator is the coordinator as the stager builds it, with its
// fences in ns read and written through leases and its peer Lease through
// peers.
func newCoordinator(leases, peers client.Client, ns, replica string, duration, renew time.Duration) *Coordinator {
	return NewCoordinator(leases, CoordinatorOptions{
		Namespace:     ns,
		Prefix:        fencePrefix,
		LeaseDuration: duration,
		LeaseRenew:    renew,
		Throttle:      100 * time.Millisecond,
		Probe:         200 * time.Millisecond,
		Sharder:       Rendezvous{},
		Peers:         NewPeerRegistry(peers, ns, "workload-stager-peer", replica, duration, renew, logr.Discard()),
		Log:           logr.Discard(),
	})
}

// inFlight counts the fence reads in flight through a client, and holds
// each until together of them are, or a second has passed.
type inFlight struct {
	together int

	mu      sync.Mutex
	now     int
	most    int
	arrived *sync.Cond
}

func newInFlight(together int) *inFlight {
	f := &inFlight{together: together}
	f.arrived = sync.NewCond(&f.mu)
	return f
}

func (f *inFlight) client(c client.WithWatch) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*coordinationv1.Lease); ok && strings.HasPrefix(key.Name, fencePrefix+"-") {
				f.enter()
				defer f.leave()
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
}

func (f *inFlight) enter() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now++
	f.most = max(f.most, f.now)
	f.arrived.Broadcast()
	give := time.AfterFunc(time.Second, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.arrived.Broadcast()
	})
	defer give.Stop()
	for start := time.Now(); f.now < f.together && time.Since(start) < time.Second; {
		f.arrived.Wait()
	}
}

func (f *inFlight) leave() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now--
}

func (f *inFlight) mostAtOnce() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.most
}

// TestCoordinatorTakesFencesConcurrently: a replica that is to serve many
// spaces at once, as when a peer dies, reads and writes their fences side
// by side, DefaultConcurrentTakes at a time. Taking them one after another
// made failover last the sum of every fence's round trips, which on a busy
// API server was minutes.
func TestCoordinatorTakesFencesConcurrently(t *testing.T) {
	ns := newNamespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	direct := newDirect(t)
	const together = DefaultConcurrentTakes
	reads := newInFlight(together)
	// No renewal is due before every space is served.
	c := newCoordinator(reads.client(direct), direct, ns, "alone", time.Minute, 15*time.Second)
	served := &recorder{}
	c.AddAware(served)
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Runnable().Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	var spaces []multicluster.ClusterName
	for i := range 2 * together {
		name := multicluster.ClusterName(fmt.Sprintf("kcp#root:wds%03d", i))
		spaces = append(spaces, name)
		if err := c.Engage(ctx, name, nil); err != nil {
			t.Fatal(err)
		}
	}
	environment.Eventually(t, 30*time.Second, "every space served", func() error {
		served.mu.Lock()
		defer served.mu.Unlock()
		if len(served.names) < len(spaces) {
			return fmt.Errorf("served so far: %q", served.names)
		}
		return nil
	})
	if most := reads.mostAtOnce(); most != together {
		t.Errorf("at most %d fences were read at once, want %d", most, together)
	}
}

// live is a multicluster.Aware that knows which spaces it serves now: those
// whose engagement has not ended.
type live struct {
	mu     sync.Mutex
	spaces map[multicluster.ClusterName]context.Context
}

func (l *live) Engage(ctx context.Context, name multicluster.ClusterName, _ cluster.Cluster) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.spaces == nil {
		l.spaces = map[multicluster.ClusterName]context.Context{}
	}
	l.spaces[name] = ctx
	return nil
}

func (l *live) served() []multicluster.ClusterName {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []multicluster.ClusterName
	for name, ctx := range l.spaces {
		if ctx.Err() == nil {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// replica runs a coordinator, whose Leases last a minute, over spaces until the returned stop, which
// ends its spaces' engagements and its loop, and waits for the loop.
func replica(t *testing.T, ns, id string, spaces []multicluster.ClusterName) (*live, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := newCoordinator(space.Client, space.Client, ns, id, time.Minute, time.Second)
	l := &live{}
	c.AddAware(l)
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Runnable().Start(ctx) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	for _, name := range spaces {
		if err := c.Engage(ctx, name, nil); err != nil {
			t.Fatal(err)
		}
	}
	return l, stop
}

// TestStoppedCoordinatorHasDeletedItsPeerLease: once a coordinator's
// runnable has returned, its replica's peer Lease is gone, so that a
// process that exits as soon as its manager stops does not leave its peers
// counting it until the Lease expires.
func TestStoppedCoordinatorHasDeletedItsPeerLease(t *testing.T) {
	ns := newNamespace(t)
	_, stop := replica(t, ns, "leaving", nil)
	key := client.ObjectKey{Namespace: ns, Name: "workload-stager-peer-leaving"}
	environment.Eventually(t, 10*time.Second, "the peer Lease written", func() error {
		return space.Client.Get(context.Background(), key, &coordinationv1.Lease{})
	})
	stop()
	if err := space.Client.Get(context.Background(), key, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
		t.Errorf("the peer Lease once the coordinator stopped: %v, want NotFound", err)
	}
}

// TestCoordinatorsShareAndHandOver runs two coordinators: a replica that
// joins takes its share of the spaces from the one serving them all, no
// space is served by both at any moment sampled, and a replica that stops
// hands its share back at once, without waiting for its fences to expire.
func TestCoordinatorsShareAndHandOver(t *testing.T) {
	ns := newNamespace(t)
	var spaces []multicluster.ClusterName
	for i := range 12 {
		spaces = append(spaces, multicluster.ClusterName(fmt.Sprintf("kcp#root:wds%03d", i)))
	}
	a, _ := replica(t, ns, "a", spaces)
	environment.Eventually(t, 20*time.Second, "a serves every space", func() error {
		if got := a.served(); !slices.Equal(got, spaces) {
			return fmt.Errorf("a serves %q", got)
		}
		return nil
	})

	b, stopB := replica(t, ns, "b", spaces)
	sampling, stopSampling := context.WithCancel(context.Background())
	t.Cleanup(stopSampling)
	var overlaps []multicluster.ClusterName
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for sampling.Err() == nil {
			ofB := b.served()
			for _, name := range a.served() {
				if slices.Contains(ofB, name) {
					overlaps = append(overlaps, name)
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	environment.Eventually(t, 20*time.Second, "a and b share the spaces", func() error {
		ofA, ofB := a.served(), b.served()
		if len(ofA) == 0 || len(ofB) == 0 {
			return fmt.Errorf("a serves %q, b %q", ofA, ofB)
		}
		both := slices.Sorted(slices.Values(append(slices.Clone(ofA), ofB...)))
		if !slices.Equal(both, spaces) {
			return fmt.Errorf("a serves %q, b %q: each space once, by one of them, wanted", ofA, ofB)
		}
		return nil
	})

	// b's share is read before a's: a space handed from a to b is in
	// both only if a served it after b began to.
	stopSampling()
	<-sampled
	if len(overlaps) > 0 {
		t.Errorf("served by a and b at once: %q", slices.Compact(overlaps))
	}

	// b's fences and peer Lease last a minute unless b releases them.
	stopB()
	environment.Eventually(t, 20*time.Second, "a serves every space again", func() error {
		if got := a.served(); !slices.Equal(got, spaces) {
			return fmt.Errorf("a serves %q", got)
		}
		return nil
	})
}

// TestFenceReleasedDuringARenewal: a renewal cut off by the fence's release
// neither reports the fence lost nor releases it again once it has been
// taken anew.
func TestFenceReleasedDuringARenewal(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	var mu sync.Mutex
	armed, renewals := false, 0
	inFlight := make(chan struct{})
	direct := newDirect(t)
	leases := interceptor.NewClient(direct, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			mu.Lock()
			hold := armed
			armed = false
			if ptr.Deref(obj.(*coordinationv1.Lease).Spec.HolderIdentity, "") == "a" {
				renewals++
			}
			mu.Unlock()
			if hold {
				close(inFlight)
				<-ctx.Done()
				return ctx.Err()
			}
			return c.Update(ctx, obj, opts...)
		},
	})
	lost := 0
	g := newFenceGuard(leases, clock.RealClock{}, ns, fencePrefix+"-x", "a", 20*time.Second, 100*time.Millisecond,
		func(error) { mu.Lock(); lost++; mu.Unlock() })
	timed := &timings{}
	g.observe = timed.observe
	if !g.TryAcquire(ctx) {
		t.Fatal("the free fence was not taken")
	}
	mu.Lock()
	armed = true
	mu.Unlock()
	<-inFlight
	g.Release(ctx)
	if !g.TryAcquire(ctx) {
		t.Fatal("the released fence was not taken again")
	}
	mu.Lock()
	since := renewals
	mu.Unlock()
	environment.Eventually(t, 10*time.Second, "the fence renewed three times since", func() error {
		mu.Lock()
		defer mu.Unlock()
		if renewals < since+3 {
			return fmt.Errorf("%d renewals", renewals-since)
		}
		return nil
	})
	mu.Lock()
	if lost > 0 {
		t.Errorf("the fence was reported lost %d times", lost)
	}
	mu.Unlock()
	lease := &coordinationv1.Lease{}
	if err := space.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: fencePrefix + "-x"}, lease); err != nil {
		t.Fatal(err)
	}
	if holder := ptr.Deref(lease.Spec.HolderIdentity, ""); holder != "a" {
		t.Errorf("the fence is held by %q, want a", holder)
	}
	g.Release(ctx)
	// The renewal cut off by the release says nothing of the API server.
	if n, m := len(timed.of(renewalUnanswered)), len(timed.of(renewalFailed)); n+m > 0 {
		t.Errorf("renewals timed as unanswered: %d, as failed: %d; want none", n, m)
	}
}

// TestUnansweredRenewalIsTriedAgain: a renewal that the API server does
// not answer within the fence's duration is given up and the next one
// sent, and the fence is kept, its holder unchanged, until an answer shows
// otherwise; once the API server answers, the fence is renewed again.
func TestUnansweredRenewalIsTriedAgain(t *testing.T) {
	keepsTheFenceThrough(t, 500*time.Millisecond, func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	})
}

// TestBrokenRenewalsKeepTheFence: a renewal whose connection breaks got no
// answer either, so it keeps the fence as one cut off by its limit does;
// the fence stays this replica's, and is renewed once requests go through.
func TestBrokenRenewalsKeepTheFence(t *testing.T) {
	keepsTheFenceThrough(t, 200*time.Millisecond, func(context.Context) error {
		return &url.Error{Op: "Put", URL: "https://api.example/leases", Err: io.ErrUnexpectedEOF}
	})
}

// keepsTheFenceThrough holds a 2 s fence, renewed every renew, through
// three renewals that fail, each with fail's error, and checks that the
// fence is neither given up nor taken by another holder meanwhile, and is
// renewed once the renewals go through again.
func keepsTheFenceThrough(t *testing.T, renew time.Duration, fail func(ctx context.Context) error) {
	t.Helper()
	ns := newNamespace(t)
	ctx := context.Background()
	var failing atomic.Bool
	var failed atomic.Int32
	direct := newDirect(t)
	leases := interceptor.NewClient(direct, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if failing.Load() {
				defer failed.Add(1) // once it has failed
				return fail(ctx)
			}
			return c.Update(ctx, obj, opts...)
		},
	})
	const duration = 2 * time.Second
	lost := make(chan error, 1)
	g := newFenceGuard(leases, clock.RealClock{}, ns, fencePrefix+"-x", "a", duration, renew, func(err error) { lost <- err })
	timed := &timings{}
	g.observe = timed.observe
	if !g.TryAcquire(ctx) {
		t.Fatal("the free fence was not taken")
	}
	t.Cleanup(func() { failing.Store(false); g.Release(ctx) })
	key := client.ObjectKey{Namespace: ns, Name: fencePrefix + "-x"}
	var gaveUp error
	givenUp := func() bool {
		select {
		case gaveUp = <-lost:
			return true
		default:
			return false
		}
	}
	failing.Store(true)
	environment.Eventually(t, 5*duration, "three renewals failed", func() error {
		if givenUp() {
			return nil
		}
		if n := failed.Load(); n < 3 {
			return fmt.Errorf("%d renewals failed", n)
		}
		return nil
	})
	if gaveUp != nil {
		t.Fatalf("the fence was given up after %d renewals without an answer: %v", failed.Load(), gaveUp)
	}
	environment.Eventually(t, 2*duration, "three renewals timed as unanswered", func() error {
		if n := len(timed.of(renewalUnanswered)); n < 3 {
			return fmt.Errorf("%d renewals timed as unanswered", n)
		}
		return nil
	})
	if n := len(timed.of(renewalFailed)); n > 0 {
		t.Errorf("%d renewals without an answer timed as failed", n)
	}
	if !g.held.Load() {
		t.Fatal("the fence is not held, though no answer said it was lost")
	}
	before := &coordinationv1.Lease{}
	if err := direct.Get(ctx, key, before); err != nil {
		t.Fatal(err)
	}
	if holder := ptr.Deref(before.Spec.HolderIdentity, ""); holder != "a" {
		t.Fatalf("the fence is held by %q, want a", holder)
	}
	failing.Store(false)
	environment.Eventually(t, 2*duration, "the fence renewed once renewals go through", func() error {
		if givenUp() {
			return nil
		}
		lease := &coordinationv1.Lease{}
		if err := direct.Get(ctx, key, lease); err != nil {
			return err
		}
		if !lease.Spec.RenewTime.After(before.Spec.RenewTime.Time) {
			return fmt.Errorf("renewed last at %v", lease.Spec.RenewTime)
		}
		return nil
	})
	if gaveUp != nil {
		t.Fatalf("the fence was given up once renewals went through: %v", gaveUp)
	}
}

// TestRenewalIsOneWrite: a renewal writes the Lease as the guard last wrote
// it, without reading it first, so that an API server that answers late
// keeps a fence's renewals half as long and half as many.
func TestRenewalIsOneWrite(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	var gets, updates atomic.Int32
	leases := interceptor.NewClient(newDirect(t), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			gets.Add(1)
			return c.Get(ctx, key, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			updates.Add(1)
			return c.Update(ctx, obj, opts...)
		},
	})
	lost := make(chan error, 1)
	g := newFenceGuard(leases, clock.RealClock{}, ns, fencePrefix+"-x", "a", 2*time.Second, 100*time.Millisecond,
		func(err error) { lost <- err })
	if !g.TryAcquire(ctx) {
		t.Fatal("the free fence was not taken")
	}
	t.Cleanup(func() { g.Release(ctx) })
	taking := gets.Load()
	environment.Eventually(t, 5*time.Second, "five renewals", func() error {
		if n := updates.Load(); n < 5 {
			return fmt.Errorf("%d renewals", n)
		}
		return nil
	})
	if n := gets.Load() - taking; n != 0 {
		t.Errorf("%d reads of the fence for %d renewals, want none", n, updates.Load())
	}
	notLost(t, lost, "")
}

// TestRenewalAfterAnotherWrite: when the Lease was written by someone else
// since the guard's last renewal, the renewal's write conflicts; it then
// reads the Lease, and renews it if the fence is still this replica's.
func TestRenewalAfterAnotherWrite(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	direct := newDirect(t)
	lost := make(chan error, 1)
	const renew = 100 * time.Millisecond
	g := newFenceGuard(direct, clock.RealClock{}, ns, fencePrefix+"-x", "a", 2*time.Second, renew,
		func(err error) { lost <- err })
	if !g.TryAcquire(ctx) {
		t.Fatal("the free fence was not taken")
	}
	t.Cleanup(func() { g.Release(ctx) })
	key := client.ObjectKey{Namespace: ns, Name: fencePrefix + "-x"}
	touched := &coordinationv1.Lease{}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := direct.Get(ctx, key, touched); err != nil {
			return err
		}
		touched.Labels = map[string]string{"touched": "yes"}
		return direct.Update(ctx, touched)
	}); err != nil {
		t.Fatal(err)
	}
	environment.Eventually(t, 20*renew, "the fence renewed after the other write", func() error {
		lease := &coordinationv1.Lease{}
		if err := direct.Get(ctx, key, lease); err != nil {
			return err
		}
		if !lease.Spec.RenewTime.After(touched.Spec.RenewTime.Time) || lease.Labels["touched"] != "yes" {
			return fmt.Errorf("renewed last at %v, labels %v", lease.Spec.RenewTime, lease.Labels)
		}
		return nil
	})
	notLost(t, lost, " to a write that left it this replica's")
}

// notLost fails the test if lost has had a loss reported, for why.
func notLost(t *testing.T, lost <-chan error, why string) {
	t.Helper()
	select {
	case err := <-lost:
		t.Fatalf("the fence was lost%s: %v", why, err)
	default:
	}
}

// TestSlowRenewalsKeepTheFence: renewals that the API server answers
// late, but within the fence's duration, keep the fence, as upstream's
// did: on a saturated API server a renewal bounded by the fence's expiry
// instead failed whenever it started late in the fence's life.
func TestSlowRenewalsKeepTheFence(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	const duration, renew, late = 3 * time.Second, 500 * time.Millisecond, 2 * time.Second
	var mu sync.Mutex
	renewals := 0
	leases := interceptor.NewClient(newDirect(t), interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			select {
			case <-time.After(late):
			case <-ctx.Done():
				return ctx.Err()
			}
			if err := c.Update(ctx, obj, opts...); err != nil {
				return err
			}
			mu.Lock()
			renewals++
			mu.Unlock()
			return nil
		},
	})
	var lost atomic.Value
	g := newFenceGuard(leases, clock.RealClock{}, ns, fencePrefix+"-x", "a", duration, renew, func(err error) { lost.Store(err) })
	if !g.TryAcquire(ctx) { // a Create, not delayed
		t.Fatal("the free fence was not taken")
	}
	t.Cleanup(func() { g.Release(ctx) })
	environment.Eventually(t, 5*late, "three renewals answered late", func() error {
		if err := lost.Load(); err != nil {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if renewals < 3 {
			return fmt.Errorf("%d renewals", renewals)
		}
		return nil
	})
	if err := lost.Load(); err != nil {
		t.Fatalf("the fence was given up, its renewals %v late within a %v duration: %v", late, duration, err)
	}
}

// TestFencesTakenTogetherRenewApart: fences taken at once are first
// renewed at different points of the period, so that their renewals do not
// reach the API server together for ever after.
func TestFencesTakenTogetherRenewApart(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	var mu sync.Mutex
	renewed := map[string]time.Time{} // the first renewal of each fence
	leases := interceptor.NewClient(newDirect(t), interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			mu.Lock()
			if _, ok := renewed[obj.GetName()]; !ok {
				renewed[obj.GetName()] = time.Now()
			}
			mu.Unlock()
			return c.Update(ctx, obj, opts...)
		},
	})
	const fences, renew = 30, time.Second
	taken := map[string]time.Time{}
	for i := range fences {
		name := fmt.Sprintf("%s-%d", fencePrefix, i)
		g := newFenceGuard(leases, clock.RealClock{}, ns, name, "a", 4*renew, renew, nil)
		// Before the take: its period counts from its send.
		taken[name] = time.Now()
		if !g.TryAcquire(ctx) {
			t.Fatalf("the free fence %s was not taken", name)
		}
		t.Cleanup(func() { g.Release(ctx) })
	}
	environment.Eventually(t, 3*renew, "every fence renewed", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(renewed) < fences {
			return fmt.Errorf("%d of %d renewed", len(renewed), fences)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	var shortest, longest time.Duration
	for name, at := range renewed {
		after := at.Sub(taken[name])
		if shortest == 0 || after < shortest {
			shortest = after
		}
		longest = max(longest, after)
	}
	// Spread evenly over half the period, the first renewals of 30 fences
	// all come within a fifth of it of each other with a chance below 10⁻⁹.
	if spread := longest - shortest; spread < renew/5 || shortest < renew/2-50*time.Millisecond || longest > renew+time.Second {
		t.Errorf("%d fences taken together were first renewed between %v and %v after their takes, want spread over (%v, %v)",
			fences, shortest, longest, renew/2, renew)
	}
}

// TestFirstRenewalCountsFromTheTakesSend: a take answered late is first
// renewed within a period of its send, when its tenure began, not of its
// answer: the tenure of a fence taken on a slow API server would otherwise
// end before its first renewal is answered.
func TestFirstRenewalCountsFromTheTakesSend(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	const renew, late = 2 * time.Second, 1500 * time.Millisecond
	var mu sync.Mutex
	var firstRenewal, answered time.Time
	leases := interceptor.NewClient(newDirect(t), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			time.Sleep(late) // the take, answered late
			err := c.Create(ctx, obj, opts...)
			mu.Lock()
			answered = time.Now()
			mu.Unlock()
			return err
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			mu.Lock()
			if firstRenewal.IsZero() {
				firstRenewal = time.Now()
			}
			mu.Unlock()
			return c.Update(ctx, obj, opts...)
		},
	})
	g := newFenceGuard(leases, clock.RealClock{}, ns, fencePrefix+"-late", "a", 4*renew, renew, nil)
	if !g.TryAcquire(ctx) {
		t.Fatal("the free fence was not taken")
	}
	t.Cleanup(func() { g.Release(ctx) })
	lease := &coordinationv1.Lease{}
	if err := space.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: fencePrefix + "-late"}, lease); err != nil {
		t.Fatal(err)
	}
	sent := lease.Spec.RenewTime.Time
	environment.Eventually(t, 3*renew, "the fence renewed", func() error {
		mu.Lock()
		defer mu.Unlock()
		if firstRenewal.IsZero() {
			return errors.New("not yet")
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	// Within the period from the send, or, when the take was answered
	// after the point drawn in it, within a quarter period of the answer;
	// 400 ms more for the renewal to be scheduled and sent on a busy
	// machine. Counted from the answer, it would come at least half a
	// period after the answer.
	due := sent.Add(renew)
	if answered.Add(renew / 4).After(due) {
		due = answered.Add(renew / 4)
	}
	due = due.Add(400 * time.Millisecond)
	if firstRenewal.After(due) {
		t.Errorf("the take sent at %s and answered %v later was first renewed %v after its send, want by %v",
			sent.Format(time.StampMicro), answered.Sub(sent), firstRenewal.Sub(sent), due.Sub(sent))
	}
}

// TestCoordinatorForgetsTheGuardsOfSpacesGone: spaces disengaged while
// takes of their fences are in flight, one waiting for a slot and one
// whose write then fails, leave no fence guard behind. The release at the
// disengagement skipped the guard while a take was in flight, and the take
// that ended after it only set the gone engagement's next try: a guard
// stayed for every such space, for ever.
func TestCoordinatorForgetsTheGuardsOfSpacesGone(t *testing.T) {
	ns := newNamespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	const slow, waiting = multicluster.ClusterName("kcp#root:slow"), multicluster.ClusterName("kcp#root:waiting")
	if FenceKey(slow) == FenceKey(waiting) {
		t.Fatalf("%s and %s share a slot: pick spaces of two", slow, waiting)
	}
	sent, answer := make(chan struct{}), make(chan struct{})
	direct := newDirect(t)
	leases := interceptor.NewClient(direct, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if obj.GetName() != leaseOf(fencePrefix, FenceKey(slow)) {
				return c.Create(ctx, obj, opts...)
			}
			close(sent)
			<-answer
			return apierrors.NewAlreadyExists(coordinationv1.Resource("leases"), obj.GetName())
		},
	})
	c := newCoordinator(leases, direct, ns, "a", time.Minute, 15*time.Second)
	c.takes = make(chan struct{}, 1) // the slow take holds the only slot
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Runnable().Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	slowCtx, disengageSlow := context.WithCancel(ctx)
	if err := c.Engage(slowCtx, slow, nil); err != nil {
		t.Fatal(err)
	}
	<-sent
	waitingCtx, disengageWaiting := context.WithCancel(ctx)
	if err := c.Engage(waitingCtx, waiting, nil); err != nil {
		t.Fatal(err)
	}
	environment.Eventually(t, 10*time.Second, "the second take waiting for a slot", func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if f := c.fences[FenceKey(waiting)]; f == nil || f.taking == 0 {
			return errors.New("not taking yet")
		}
		return nil
	})
	disengageWaiting()
	disengageSlow()
	environment.Eventually(t, 10*time.Second, "both spaces gone and the waiting one's release done", func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.engaged) > 0 {
			return fmt.Errorf("%d spaces engaged", len(c.engaged))
		}
		if f := c.fences[FenceKey(waiting)]; f != nil && f.releasing > 0 {
			return errors.New("the waiting space's fence still being released")
		}
		return nil
	})
	close(answer)
	environment.Eventually(t, 10*time.Second, "no fence guard left", func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.fences) > 0 {
			return fmt.Errorf("guards left: %v", slices.Collect(maps.Keys(c.fences)))
		}
		return nil
	})
}
