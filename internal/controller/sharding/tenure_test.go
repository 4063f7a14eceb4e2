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
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	"sigs.k8s.io/multicluster-runtime/pkg/util/sanitize"

	"github.com/kubestellar/workload-stager/test/framework/environment"
)

const fencePrefix = "workload-stager-shard"

// fenceOf returns the fence Lease of space, held by holder and renewed at
// renewed, for duration seconds.
func fenceOf(space multicluster.ClusterName, holder string, renewed time.Time, duration int32) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: fencePrefix + "-" + sanitize.DNS1123(string(FenceKey(space)))},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(holder),
			RenewTime:            ptr.To(metav1.NewMicroTime(renewed)),
			LeaseDurationSeconds: ptr.To(duration),
		},
	}
}

func TestTenuresFollowTheFenceWrites(t *testing.T) {
	const space = multicluster.ClusterName("kcp#root:a-b")
	renewed := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	later := renewed.Add(10 * time.Second)
	refused := errors.New("refused")
	type write struct {
		lease *coordinationv1.Lease
		err   error
	}
	for _, tc := range []struct {
		name   string
		writes []write
		want   time.Time
	}{
		{"never written", nil, time.Time{}},
		{"taken: three quarters of 20 s", []write{{fenceOf(space, "a", renewed, 20), nil}}, renewed.Add(15 * time.Second)},
		{"renewed", []write{{fenceOf(space, "a", renewed, 20), nil}, {fenceOf(space, "a", later, 20), nil}}, later.Add(15 * time.Second)},
		{"a failed renewal leaves the tenure as it was", []write{{fenceOf(space, "a", renewed, 20), nil}, {fenceOf(space, "a", later, 20), refused}}, renewed.Add(15 * time.Second)},
		{"a renewal of an older time does not shorten it", []write{{fenceOf(space, "a", later, 20), nil}, {fenceOf(space, "a", renewed, 20), nil}}, later.Add(15 * time.Second)},
		{"released", []write{{fenceOf(space, "a", renewed, 20), nil}, {fenceOf(space, "", renewed, 20), nil}}, time.Time{}},
		{"a failed release ends it too", []write{{fenceOf(space, "a", renewed, 20), nil}, {fenceOf(space, "", renewed, 20), refused}}, time.Time{}},
		{"another holder's write", []write{{fenceOf(space, "a", renewed, 20), nil}, {fenceOf(space, "b", later, 20), nil}}, time.Time{}},
		{"another space's fence", []write{{fenceOf("kcp#root:a:b", "a", renewed, 20), nil}}, time.Time{}},
		{"a peer Lease", []write{{func() *coordinationv1.Lease {
			l := fenceOf(space, "a", renewed, 20)
			l.Name = "workload-stager-peer-a"
			return l
		}(), nil}}, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tenures := NewTenures(fencePrefix, "a", logr.Discard())
			// At the first renewal: a tenure that has lapsed by the clock
			// is forgotten.
			tenures.clock = clocktesting.NewFakeClock(renewed)
			for _, w := range tc.writes {
				var during time.Time
				err := tenures.write(w.lease, func() error {
					during = tenures.Of(space).HeldUntil()
					return w.err
				})
				if !errors.Is(err, w.err) {
					t.Fatalf("write returned %v, want %v", err, w.err)
				}
				if w.lease.Spec.HolderIdentity != nil && *w.lease.Spec.HolderIdentity == "" && !during.IsZero() {
					t.Errorf("the tenure lasted until %v while the release was sent", during)
				}
			}
			if got := tenures.Of(space).HeldUntil(); !got.Equal(tc.want) {
				t.Errorf("held until %v, want %v", got, tc.want)
			}
		})
	}
}

// recorded counts the fences the tenures keep a record of.
func (t *Tenures) recorded() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.fences)
}

// stalling is a client whose Lease updates wait while it is stalled, as on
// an API server too busy to answer them.
type stalling struct {
	client.WithWatch
	mu      sync.Mutex
	stalled chan struct{} // closed to let the waiting updates through; nil when not stalled
}

func newStalling(c client.WithWatch) *stalling {
	s := &stalling{}
	s.WithWatch = interceptor.NewClient(c, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			s.mu.Lock()
			wait := s.stalled
			s.mu.Unlock()
			if wait != nil {
				select {
				case <-wait:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return c.Update(ctx, obj, opts...)
		},
	})
	return s
}

func (s *stalling) stall() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalled = make(chan struct{})
}

func (s *stalling) resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.stalled)
	s.stalled = nil
}

// serving is a multicluster.Aware that keeps the context the space was
// last engaged with.
type serving struct {
	mu  sync.Mutex
	ctx context.Context
}

func (s *serving) Engage(ctx context.Context, _ multicluster.ClusterName, _ cluster.Cluster) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ctx = ctx
	return nil
}

func (s *serving) current() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctx
}

// TestTenureEndsWhileRenewalsStall runs the coordinator as the
// stager does, with the fence Leases' client stalling, as a saturated API
// server does: the tenure ends before the fence expires, while the
// coordinator still serves the space; the coordinator serves on past the
// expiry, its renewals unanswered and its tenure ended; and once another
// replica has taken the expired fence, the next renewal answered shows it
// (the fence's read, which is not stalled, or the write's conflict), and
// the coordinator gives the space up and does not take the fence back.
func TestTenureEndsWhileRenewalsStall(t *testing.T) {
	ns := newNamespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	direct := newDirect(t)
	slow := newStalling(direct)
	tenures := NewTenures(fencePrefix, "a", logr.Discard())
	leases := tenures.Client(slow)
	const duration, renew = 4 * time.Second, time.Second
	c := newCoordinator(leases, direct, ns, "a", duration, renew)
	served := &serving{}
	c.AddAware(served)
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Runnable().Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	const name = multicluster.ClusterName("kcp#root:wds031")
	if err := c.Engage(ctx, name, nil); err != nil {
		t.Fatal(err)
	}
	tenure := tenures.Of(name)

	var first time.Time
	environment.Eventually(t, 20*time.Second, "the space served and its tenure renewed", func() error {
		if served.current() == nil {
			return errors.New("not served yet")
		}
		if first.IsZero() {
			first = tenure.HeldUntil()
			return fmt.Errorf("held until %v", first)
		}
		if !tenure.HeldUntil().After(first) {
			return fmt.Errorf("held until %v, not renewed since", first)
		}
		return nil
	})

	slow.stall()
	resumed := false
	defer func() {
		if !resumed {
			slow.resume()
		}
	}()
	lease := &coordinationv1.Lease{}
	key := types.NamespacedName{Namespace: ns, Name: fenceOf(name, "", time.Time{}, 0).Name}
	environment.Eventually(t, 2*duration, "the tenure ended while the coordinator still serves", func() error {
		if err := direct.Get(ctx, key, lease); err != nil {
			return err
		}
		expires := lease.Spec.RenewTime.Add(time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second)
		switch now := time.Now(); {
		case now.Before(tenure.HeldUntil()):
			return fmt.Errorf("held until %v", tenure.HeldUntil())
		case !now.Before(expires):
			return fmt.Errorf("the fence expired at %v, and the tenure had not ended by then", expires)
		case served.current().Err() != nil:
			return errors.New("the coordinator stopped serving the space before its tenure ended")
		}
		return nil
	})
	// Unanswered, each renewal is given up after the fence's duration and
	// the next one sent; the space is served on, its tenure ended.
	expires := lease.Spec.RenewTime.Add(duration)
	environment.Consistently(t, time.Until(expires.Add(duration)), "the space served past its fence's expiry, its tenure ended", func() error {
		if served.current().Err() != nil {
			return errors.New("the coordinator stopped serving the space, though no answer said the fence was lost")
		}
		if until := tenure.HeldUntil(); time.Now().Before(until) {
			return fmt.Errorf("the tenure is held until %v, its renewals unanswered", until)
		}
		return nil
	})

	// Another replica takes the expired fence, for long enough that this
	// coordinator cannot take it back, and keeps it once the stalled
	// requests are answered.
	if err := direct.Get(ctx, key, lease); err != nil {
		t.Fatal(err)
	}
	lease.Spec.HolderIdentity = ptr.To("b")
	lease.Spec.RenewTime = ptr.To(metav1.NowMicro())
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(3600))
	if err := direct.Update(ctx, lease); err != nil {
		t.Fatalf("taking the expired fence as b: %v", err)
	}
	slow.resume()
	resumed = true
	environment.Eventually(t, 2*duration, "a gives the space up, b's holding answered", func() error {
		if served.current().Err() == nil {
			return errors.New("still served")
		}
		return nil
	})
	environment.Consistently(t, 2*renew, "b holds the fence and a does not serve the space", func() error {
		if err := direct.Get(ctx, key, lease); err != nil {
			return err
		}
		if holder := ptr.Deref(lease.Spec.HolderIdentity, ""); holder != "b" {
			return fmt.Errorf("the fence is held by %q", holder)
		}
		if served.current().Err() == nil {
			return errors.New("a serves the space again")
		}
		if until := tenure.HeldUntil(); time.Now().Before(until) {
			return fmt.Errorf("a holds a tenure again, until %v", until)
		}
		return nil
	})
}

// TestTenureReleaseWaitsForWrites: a release ends the tenure at once, is
// sent only once the writes in flight have returned, and is not sent when
// one of them ended unanswered, until the fence is taken again.
func TestTenureReleaseWaitsForWrites(t *testing.T) {
	const space = multicluster.ClusterName("kcp#root:wds031")
	now := time.Now()
	tenures := NewTenures(fencePrefix, "a", logr.Discard())
	take := func() {
		t.Helper()
		if err := tenures.write(fenceOf(space, "a", now, 20), func() error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	take()
	tenure := tenures.Of(space)
	_, done, err := tenure.Hold(context.Background(), now)
	if err != nil {
		t.Fatalf("Hold while the fence is held: %v", err)
	}
	var mu sync.Mutex
	writeReturned := false
	released := make(chan error, 1)
	go func() {
		released <- tenures.write(fenceOf(space, "", now, 20), func() error {
			mu.Lock()
			defer mu.Unlock()
			if !writeReturned {
				return errors.New("the release was sent while a write was in flight")
			}
			return nil
		})
	}()
	environment.Eventually(t, 5*time.Second, "the tenure ended by the release", func() error {
		if until := tenure.HeldUntil(); !until.IsZero() {
			return fmt.Errorf("held until %v", until)
		}
		return nil
	})
	if _, _, err := tenure.Hold(context.Background(), now); err == nil {
		t.Error("a write started after the release began")
	}
	time.Sleep(100 * time.Millisecond) // room for a release that does not wait to be sent
	mu.Lock()
	writeReturned = true
	mu.Unlock()
	done(nil)
	if err := <-released; err != nil {
		t.Fatalf("release: %v", err)
	}

	// A write that ends without an answer may land yet: no release until
	// the fence, as renewed when the write began, expires; taking the
	// fence again does not change that.
	clock := clocktesting.NewFakeClock(now)
	tenures.clock = clock
	take()
	_, done, err = tenure.Hold(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	done(fmt.Errorf("patching: %w", context.DeadlineExceeded))
	sent := false
	if err := tenures.write(fenceOf(space, "", now, 20), func() error { sent = true; return nil }); err == nil || sent {
		t.Errorf("the release after an unanswered write returned %v, sent: %v; want it refused and not sent", err, sent)
	}
	take()
	clock.SetTime(now.Add(20*time.Second - time.Millisecond))
	if err := tenures.write(fenceOf(space, "", now, 20), func() error { sent = true; return nil }); err == nil || sent {
		t.Errorf("the release of the fence taken again returned %v, sent: %v; want it refused until the fence expires", err, sent)
	}
	clock.SetTime(now.Add(20 * time.Second))
	if err := tenures.write(fenceOf(space, "", now, 20), func() error { return nil }); err != nil {
		t.Errorf("the release once the fence would have expired: %v", err)
	}
	if n := tenures.recorded(); n != 0 {
		t.Errorf("%d fences recorded after the only one was released", n)
	}
}

// TestUnanswered: a write counts as answered only when it succeeded or
// the API server refused it.
func TestUnanswered(t *testing.T) {
	gr := schema.GroupResource{Group: "control.kubestellar.io", Resource: "bindingpolicies"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{apierrors.NewConflict(gr, "p", errors.New("changed")), false},
		{apierrors.NewNotFound(gr, "p"), false},
		{apierrors.NewForbidden(gr, "p", errors.New("no")), false},
		{fmt.Errorf("patching: %w", context.DeadlineExceeded), true},
		{context.Canceled, true},
		{io.ErrUnexpectedEOF, true},
		{apierrors.NewTimeoutError("slow", 1), true},
		{apierrors.NewServerTimeout(gr, "update", 1), true},
		{apierrors.NewInternalError(errors.New("etcd")), true},
	} {
		if got := unanswered(tc.err); got != tc.want {
			t.Errorf("unanswered(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestTenureRenewalAnsweredAfterARelease: a renewal sent before a release
// and answered after it does not start the tenure again, whether the
// release was sent or held back by a write that went unanswered.
func TestTenureRenewalAnsweredAfterARelease(t *testing.T) {
	for _, unanswered := range []bool{false, true} {
		t.Run(fmt.Sprintf("unanswered=%v", unanswered), func(t *testing.T) {
			testRenewalAnsweredAfterARelease(t, unanswered)
		})
	}
}

func testRenewalAnsweredAfterARelease(t *testing.T, unanswered bool) {
	const space = multicluster.ClusterName("kcp#root:wds031")
	now := time.Now()
	tenures := NewTenures(fencePrefix, "a", logr.Discard())
	if err := tenures.write(fenceOf(space, "a", now, 20), func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if unanswered {
		_, done, err := tenures.Of(space).Hold(context.Background(), now)
		if err != nil {
			t.Fatal(err)
		}
		done(context.DeadlineExceeded)
	}
	err := tenures.write(fenceOf(space, "a", now.Add(5*time.Second), 20), func() error {
		released := tenures.write(fenceOf(space, "", now, 20), func() error { return nil })
		if (released != nil) != unanswered {
			t.Errorf("the release returned %v", released)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if until := tenures.Of(space).HeldUntil(); !until.IsZero() {
		t.Errorf("released, and held until %v", until)
	}
}

// TestTenuresForgetFencesNoLongerHeld runs random sequences of fence
// writes (takes and renewals that succeed, conflict, already exist or go
// unanswered, some with other steps happening while they are in flight),
// writes to the spaces answered or not, releases, reads of another holder
// and clock steps, over three spaces. Once no write is in flight and the
// clock has passed every unanswered write's window, the tenures keep a
// record of exactly the fences whose tenure is in force, each unchanged:
// a record of anything else would stay for ever once its space has gone.
// Every space is quiet then (Tenure.Quiet), and none ever is while a
// write to it is in flight.
func TestTenuresForgetFencesNoLongerHeld(t *testing.T) {
	spaces := []multicluster.ClusterName{"kcp#root:wds001", "kcp#root:wds002", "kcp#root:wds003"}
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "x", errors.New("changed"))
	exists := apierrors.NewAlreadyExists(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "x")
	rapid.Check(t, func(rt *rapid.T) {
		start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
		clock := clocktesting.NewFakeClock(start)
		tenures := NewTenures(fencePrefix, "a", logr.Discard())
		tenures.clock = clock
		h := &tenureHarness{rt: rt, tenures: tenures, clock: clock, spaces: spaces,
			sendErrs: []error{nil, conflict, exists, context.DeadlineExceeded}, holds: map[multicluster.ClusterName][]func(error){}}
		steps := rapid.IntRange(1, 40).Draw(rt, "steps")
		for range steps {
			h.step(true)
		}
		h.settle()
	})
}

// tenureHarness drives one random sequence of TestTenuresForgetFencesNoLongerHeld.
type tenureHarness struct {
	rt       *rapid.T
	tenures  *Tenures
	clock    *clocktesting.FakeClock
	spaces   []multicluster.ClusterName
	sendErrs []error
	// holds are the writes to each space in flight: their done funcs.
	holds map[multicluster.ClusterName][]func(error)
}

// step draws one step and takes it; nest allows a fence write whose send
// takes another step while it is in flight.
func (h *tenureHarness) step(nest bool) {
	space := rapid.SampledFrom(h.spaces).Draw(h.rt, "space")
	lease := leaseOf(fencePrefix, FenceKey(space))
	now := h.clock.Now()
	switch rapid.IntRange(0, 6).Draw(h.rt, "step") {
	case 0: // a take or renewal
		renewed := now.Add(time.Duration(rapid.IntRange(-2000, 2000).Draw(h.rt, "renewedMs")) * time.Millisecond)
		seconds := int32(rapid.IntRange(4, 20).Draw(h.rt, "seconds"))
		sendErr := rapid.SampledFrom(h.sendErrs).Draw(h.rt, "sendErr")
		inner := nest && rapid.Bool().Draw(h.rt, "nested")
		_ = h.tenures.write(fenceOf(space, "a", renewed, seconds), func() error {
			if inner {
				h.step(false)
			}
			return sendErr
		})
	case 1: // a write to the space starts
		if _, done, err := h.tenures.Of(space).Hold(context.Background(), now); err == nil {
			h.holds[space] = append(h.holds[space], done)
		}
	case 2: // a write to the space ends
		if n := len(h.holds[space]); n > 0 {
			i := rapid.IntRange(0, n-1).Draw(h.rt, "hold")
			h.answer(space, i)
		}
	case 3: // a release, once the space's writes have ended (it waits for them)
		if len(h.holds[space]) == 0 {
			refused := rapid.Bool().Draw(h.rt, "releaseRefused")
			_ = h.tenures.write(fenceOf(space, "", now, 20), func() error {
				if refused {
					return errors.New("refused")
				}
				return nil
			})
		}
	case 4: // the fence read with another holder
		h.tenures.lost(lease)
	case 5:
		h.clock.SetTime(now.Add(time.Duration(rapid.IntRange(0, 30000).Draw(h.rt, "stepMs")) * time.Millisecond))
	case 6: // a space with a write in flight is not quiet
		if err := h.quietNow(space); len(h.holds[space]) > 0 && err == nil {
			h.rt.Errorf("%s is quiet with %d write(s) in flight", space, len(h.holds[space]))
		}
	}
}

// quietNow returns what the space's Quiet returns at once: nil when it is
// quiet, else its context's end.
func (h *tenureHarness) quietNow(space multicluster.ClusterName) error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return h.tenures.Of(space).Quiet(ctx)
}

// answer ends the space's i-th write in flight, answered or not.
func (h *tenureHarness) answer(space multicluster.ClusterName, i int) {
	done := h.holds[space][i]
	h.holds[space] = append(h.holds[space][:i], h.holds[space][i+1:]...)
	if rapid.Bool().Draw(h.rt, "unanswered") {
		done(fmt.Errorf("patching: %w", context.DeadlineExceeded))
	} else {
		done(nil)
	}
}

// settle ends every write in flight, moves the clock to the end of the
// last unanswered window, and checks what the tenures remember.
func (h *tenureHarness) settle() {
	for _, space := range h.spaces {
		for len(h.holds[space]) > 0 {
			h.answer(space, 0)
		}
	}
	h.tenures.mu.Lock()
	last := h.clock.Now()
	for _, f := range h.tenures.fences {
		if f.unansweredUntil.After(last) {
			last = f.unansweredUntil
		}
	}
	held := map[string]time.Time{}
	for lease, f := range h.tenures.fences {
		if last.Before(f.until) {
			held[lease] = f.until
		}
	}
	h.tenures.mu.Unlock()
	h.clock.SetTime(last)
	for _, space := range h.spaces {
		if err := h.quietNow(space); err != nil {
			h.rt.Errorf("%s not quiet at %v, no write in flight and every unanswered window past: %v", space, last, err)
		}
		lease := leaseOf(fencePrefix, FenceKey(space))
		if got := h.tenures.Of(space).HeldUntil(); !got.Equal(held[lease]) && last.Before(held[lease]) {
			h.rt.Errorf("the tenure of %s is held until %v, want %v unchanged", space, got, held[lease])
		}
	}
	h.tenures.mu.Lock()
	defer h.tenures.mu.Unlock()
	for lease, f := range h.tenures.fences {
		if _, ok := held[lease]; !ok {
			h.rt.Errorf("%s still recorded at %v, its tenure not in force: %+v", lease, last, *f)
		}
	}
}
