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
	"math"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// kcpLike are space names whose sanitized forms collide or make no valid
// Lease name.
var kcpLike = []multicluster.ClusterName{"kcp#root:a-b", "kcp#root:a:b", multicluster.ClusterName("kcp#root:" + strings.Repeat("x", 240))}

// TestFenceKeys: every space's fence is a valid Lease name, one of Slots
// slots, the same each time.
func TestFenceKeys(t *testing.T) {
	slots := map[multicluster.ClusterName]bool{}
	for i := range 10 * Slots {
		slots[FenceKey(multicluster.ClusterName(fmt.Sprintf("kcp#root:wds%d", i)))] = true
	}
	for _, name := range kcpLike {
		slots[FenceKey(name)] = true
		key := FenceKey(name)
		if errs := validation.IsDNS1123Subdomain("workload-stager-shard-" + string(key)); len(errs) > 0 {
			t.Errorf("the fence of %q would be named %q: %v", name, key, errs)
		}
		if FenceKey(name) != key {
			t.Errorf("the fence key of %q is not stable", name)
		}
	}
	for key := range slots {
		var k int
		if _, err := fmt.Sscanf(string(key), "slot-%d", &k); err != nil || k < 0 || k >= Slots || string(key) != fmt.Sprintf("slot-%d", k) {
			t.Errorf("fence key %q is not one of slot-0 to slot-%d", key, Slots-1)
		}
	}
	if len(slots) != Slots {
		t.Errorf("%d spaces fall into %d slots, want all %d", 10*Slots+len(kcpLike), len(slots), Slots)
	}
}

// recorder is a multicluster.Aware that records the spaces engaged with it.
type recorder struct {
	mu    sync.Mutex
	names []multicluster.ClusterName
}

func (r *recorder) Engage(_ context.Context, name multicluster.ClusterName, _ cluster.Cluster) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names = append(r.names, name)
	return nil
}

// TestCoordinatorServesEverySpace runs the coordinator as the stager does,
// alone, over spaces whose sanitized names collide or are too
// long for a Lease name: every space is served under its own name, and
// its slot's fence Lease exists, held by the replica.
func TestCoordinatorServesEverySpace(t *testing.T) {
	ns := newNamespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := newCoordinator(space.Client, space.Client, ns, "alone", 3*time.Second, time.Second)
	engaged := &recorder{}
	c.AddAware(engaged)
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Runnable().Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	for _, name := range kcpLike {
		if err := c.Engage(ctx, name, nil); err != nil {
			t.Fatal(err)
		}
	}
	environment.Eventually(t, 20*time.Second, "every space served under its own name", func() error {
		engaged.mu.Lock()
		defer engaged.mu.Unlock()
		for _, name := range kcpLike {
			if !slices.Contains(engaged.names, name) {
				return fmt.Errorf("served so far: %q", engaged.names)
			}
		}
		return nil
	})
	leases := &coordinationv1.LeaseList{}
	if err := space.Client.List(ctx, leases, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, l := range leases.Items {
		if strings.HasPrefix(l.Name, "workload-stager-shard-") && ptr.Deref(l.Spec.HolderIdentity, "") == "alone" {
			held[l.Name] = true
		}
	}
	for _, name := range kcpLike {
		if !held[leaseOf(fencePrefix, FenceKey(name))] {
			t.Errorf("the fence of %q is not held: held %v", name, held)
		}
	}
}

// TestSilent: a renewal says nothing about the fence's holder unless the
// API server answered it with something other than being too busy.
func TestSilent(t *testing.T) {
	gr := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("%w: %q", errHeldByAnother, "b"), false},
		{apierrors.NewConflict(gr, "f", errors.New("changed")), false},
		{apierrors.NewNotFound(gr, "f"), false},
		{apierrors.NewForbidden(gr, "f", errors.New("no")), false},
		{apierrors.NewBadRequest("no"), false},
		{fmt.Errorf("%w within 1m0s: %w", errNotAnswered, context.Canceled), true},
		{fmt.Errorf("writing the fence: %w", context.DeadlineExceeded), true},
		{&url.Error{Op: "Put", URL: "https://api.example/leases", Err: io.ErrUnexpectedEOF}, true},
		{apierrors.NewTooManyRequests("busy", 1), true},
		{apierrors.NewTimeoutError("slow", 1), true},
		{apierrors.NewServerTimeout(gr, "update", 1), true},
		{apierrors.NewInternalError(errors.New("etcd")), true},
		{apierrors.NewServiceUnavailable("starting"), true},
	} {
		if got := silent(tc.err); got != tc.want {
			t.Errorf("silent(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// timings records the renewals a fence guard times, by result.
type timings struct {
	mu   sync.Mutex
	took map[string][]time.Duration
}

func (r *timings) observe(result string, took time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.took == nil {
		r.took = map[string][]time.Duration{}
	}
	r.took[result] = append(r.took[result], took)
}

// of returns the times of the renewals timed with result.
func (r *timings) of(result string) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.took[result])
}

// TestRenewalsAreTimed: every renewal of a fence is timed, under renewed
// while it keeps the fence and under failed once another holder has it;
// the timings go to stager_fence_renewal_duration_seconds.
func TestRenewalsAreTimed(t *testing.T) {
	ns := newNamespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lost := make(chan error, 1)
	g := newFenceGuard(space.Client, clock.RealClock{}, ns, "workload-stager-shard-timed", "me", 3*time.Second, time.Second,
		func(err error) { lost <- err })
	timed := &timings{}
	g.observe = timed.observe
	if !g.TryAcquire(ctx) {
		t.Fatal("the fence was not taken")
	}
	defer g.Release(ctx)
	environment.Eventually(t, 20*time.Second, "two renewals timed as renewed", func() error {
		if n := len(timed.of(renewalRenewed)); n < 2 {
			return fmt.Errorf("%d renewals timed as renewed", n)
		}
		return nil
	})
	for _, took := range timed.of(renewalRenewed) {
		if took <= 0 {
			t.Errorf("a renewal timed as taking %s", took)
		}
	}
	if n := len(timed.of(renewalFailed)); n != 0 {
		t.Errorf("%d renewals timed as failed while the fence was held", n)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease := &coordinationv1.Lease{}
		if err := space.Client.Get(ctx, g.key, lease); err != nil {
			return err
		}
		lease.Spec.HolderIdentity = ptr.To("other")
		lease.Spec.LeaseDurationSeconds = ptr.To[int32](60)
		lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		return space.Client.Update(ctx, lease)
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-lost:
		if !errors.Is(err, errHeldByAnother) {
			t.Errorf("the fence was given up for %v, want %v", err, errHeldByAnother)
		}
	case <-ctx.Done():
		t.Fatal("the fence taken by another holder was not given up")
	}
	if n := len(timed.of(renewalFailed)); n != 1 {
		t.Errorf("%d renewals timed as failed, want 1", n)
	}

	var before dto.Metric
	if err := renewalDuration.WithLabelValues(renewalFailed).(prometheus.Metric).Write(&before); err != nil {
		t.Fatal(err)
	}
	observeRenewal(renewalFailed, 2*time.Second)
	var after dto.Metric
	if err := renewalDuration.WithLabelValues(renewalFailed).(prometheus.Metric).Write(&after); err != nil {
		t.Fatal(err)
	}
	if n := after.GetHistogram().GetSampleCount() - before.GetHistogram().GetSampleCount(); n < 1 {
		t.Errorf("a timed renewal added %d samples to the histogram", n)
	}
}

// TestForgedFencesDoNotHoldForEver: a fence Lease written once, renewed a
// century ahead by a replica that does not exist, kept its space from every
// replica for ever, as each believed the renewal. A replica counts such a
// renewal from when it first read it, so the space is served once the
// fence's duration has passed.
func TestForgedFencesDoNotHoldForEver(t *testing.T) {
	ns := newNamespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	const name = multicluster.ClusterName("kcp#root:forged")
	ahead := metav1.NewMicroTime(time.Now().Add(100 * 365 * 24 * time.Hour))
	forged := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: leaseOf(fencePrefix, FenceKey(name))},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("ghost"), LeaseDurationSeconds: ptr.To[int32](3),
			AcquireTime: &ahead, RenewTime: &ahead},
	}
	if err := space.Client.Create(ctx, forged); err != nil {
		t.Fatal(err)
	}
	c := newCoordinator(space.Client, space.Client, ns, "alone", 3*time.Second, time.Second)
	engaged := &recorder{}
	c.AddAware(engaged)
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Runnable().Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if err := c.Engage(ctx, name, nil); err != nil {
		t.Fatal(err)
	}
	// The fence's 3 s from the first read, the probes and the takes.
	environment.Eventually(t, 20*time.Second, "the space of the forged fence served", func() error {
		engaged.mu.Lock()
		defer engaged.mu.Unlock()
		if !slices.Contains(engaged.names, name) {
			return errors.New("not served")
		}
		return nil
	})
	lease := &coordinationv1.Lease{}
	if err := space.Client.Get(ctx, client.ObjectKeyFromObject(forged), lease); err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h == nil || *h != "alone" {
		t.Errorf("the fence's holder is %v, want alone", h)
	}
}

// FuzzFenceExpiry checks the belief in another holder's fence over any
// renew time and duration a Lease's writer may choose, read first at
// first by a replica whose fences last own: the fence is expired a
// duration plus maxBelievedFence (or own, if longer) after that read at
// the latest; a fence renewed within the skew allowed, for no longer than
// that cap, expires exactly when its Lease says, so the rule costs an
// honest holder nothing; once expired, it stays expired; and a holder
// whose clock runs far ahead keeps its fence while it renews.
func FuzzFenceExpiry(f *testing.F) {
	f.Add(int64(100*365*24*3600), int32(3), uint16(3), uint32(1)) // a century ahead
	f.Add(int64(0), int32(math.MaxInt32), uint16(20), uint32(7))  // for 68 years
	f.Add(int64(-2), int32(20), uint16(20), uint32(5))            // honest
	f.Add(int64(25), int32(20), uint16(20), uint32(5))            // a clock 25 s ahead
	f.Add(int64(-400), int32(600), uint16(60), uint32(30))        // longer than the cap
	f.Fuzz(func(t *testing.T, aheadSeconds int64, seconds int32, ownSeconds uint16, stepSeconds uint32) {
		const twoCenturies = 200 * 365 * 24 * 3600
		own := time.Duration(max(ownSeconds, 1)) * time.Second
		step := time.Duration(stepSeconds%3600+1) * time.Second
		guard := func() *fenceGuard { return newFenceGuard(nil, clock.RealClock{}, "ns", "f", "me", own, own/4, nil) }
		first := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
		renewed := first.Add(time.Duration(aheadSeconds%twoCenturies) * time.Second)
		lease := &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("ghost"),
			RenewTime: &metav1.MicroTime{Time: renewed}, LeaseDurationSeconds: ptr.To(seconds)}}
		capped := max(own, maxBelievedFence)
		bound := first.Add(own + capped)

		g := guard()
		wasExpired := false
		for at := first; !at.After(bound.Add(step)); at = at.Add(step) {
			got := g.expired(lease, at)
			if wasExpired && !got {
				t.Fatalf("renewed at %s for %d s: expired, then not at %s", renewed, seconds, at)
			}
			wasExpired = got
		}
		if !g.expired(lease, bound.Add(time.Nanosecond)) {
			t.Errorf("renewed at %s for %d s, read first at %s: not expired at %s", renewed, seconds, first, bound.Add(time.Nanosecond))
		}

		lasts := time.Duration(seconds) * time.Second
		if !renewed.After(first.Add(own)) && lasts <= capped {
			ends := renewed.Add(lasts)
			for _, at := range []time.Time{first, first.Add(step), ends.Add(-time.Nanosecond), ends, ends.Add(time.Nanosecond)} {
				if at.Before(first) {
					continue
				}
				if got, want := guard().expired(lease, at), at.After(ends); got != want {
					t.Errorf("renewed at %s for %d s, read at %s: expired = %v, want %v", renewed, seconds, at, got, want)
				}
			}
		}

		if seconds > 0 {
			g := guard()
			for i := range 10 {
				at := first.Add(time.Duration(i) * step)
				ahead := lease.DeepCopy()
				ahead.Spec.RenewTime = &metav1.MicroTime{Time: at.Add(100 * 365 * 24 * time.Hour)}
				if g.expired(ahead, at) {
					t.Fatalf("a holder renewing a century ahead every %s lost its %d s fence at its renewal %d", step, seconds, i)
				}
			}
		}
	})
}
