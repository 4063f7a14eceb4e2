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

package stagedbindingpolicy

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/controller/metrics"
	"github.com/kubestellar/workload-stager/internal/controller/sharding"
)

// directClient returns a client of the test space without a cache.
func directClient(t *testing.T) client.WithWatch {
	t.Helper()
	direct, err := client.NewWithWatch(testSpace.Config, client.Options{Scheme: testSpace.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return direct
}

// fenceFor returns the tenure, as sharding.Tenures records it, of a space
// whose fence this replica wrote through the tenures' client, renewed at
// renewed for seconds, in a Lease of the test space.
func fenceFor(t *testing.T, space string, renewed time.Time, seconds int32) (*sharding.Tenures, *coordinationv1.Lease) {
	t.Helper()
	direct := directClient(t)
	tenures := sharding.NewTenures("fence", "a", logr.Discard())
	name := multicluster.ClusterName(space)
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "fence-" + string(sharding.FenceKey(name))},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("a"),
			RenewTime:            ptr.To(metav1.NewMicroTime(renewed)),
			LeaseDurationSeconds: ptr.To(seconds),
		},
	}
	if err := tenures.Client(direct).Create(t.Context(), lease); err != nil {
		t.Fatalf("taking the fence of %s: %v", space, err)
	}
	return tenures, lease
}

// counterOfSpace returns the value of the counter name for space.
func counterOfSpace(t *testing.T, name, space string) float64 {
	t.Helper()
	return counterSum(t, name, metrics.LabelSpace, space)
}

// counterSum returns the sum of the series of the counter name whose label
// is value.
func counterSum(t *testing.T, name, label, value string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering the metrics: %v", err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// TestReconcileWritesNothingOnceTheFenceLapsed: a replica whose tenure of
// the space's fence has ended by its clock makes no change, counts the
// refused change, and tries again soon; while it holds the fence, the same
// run writes.
func TestReconcileWritesNothingOnceTheFenceLapsed(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	now := time.Now()
	r := newTestReconciler(t, now)
	r.Space = objectName("space", "fence-lapsed")
	r.Metrics = metrics.NewSpace(r.Space)
	// Renewed 20 s ago for 20 s: the tenure ended 5 s ago.
	tenures, lease := fenceFor(t, r.Space, now.Add(-20*time.Second), 20)
	r.Fence = tenures.Of(multicluster.ClusterName(r.Space))
	p := createPolicy(t, "fence-lapsed")
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}}
	refusedBefore := counterOfSpace(t, "stager_fence_lapsed_writes_total", r.Space)

	result, err := r.Reconcile(ctx, req)
	if err != nil {
		t.Fatalf("Reconcile after the tenure ended: %v", err)
	}
	if result.RequeueAfter <= 0 || result.RequeueAfter > FenceRetry {
		t.Errorf("result = %+v, want a requeue within %v", result, FenceRetry)
	}
	if got := getPolicy(t, p.Name); len(got.Finalizers) != 0 {
		t.Fatalf("the tenure ended at %v, the clock shows %v, and the run wrote the finalizers %v",
			tenures.Of(multicluster.ClusterName(r.Space)).HeldUntil(), now, got.Finalizers)
	}
	if got := counterOfSpace(t, "stager_fence_lapsed_writes_total", r.Space) - refusedBefore; got != 1 {
		t.Errorf("stager_fence_lapsed_writes_total rose by %v, want 1", got)
	}

	// Renewed now: the same run writes.
	lease.Spec.RenewTime = ptr.To(metav1.NewMicroTime(now))
	direct := directClient(t)
	if err := tenures.Client(direct).Update(ctx, lease); err != nil {
		t.Fatalf("renewing the fence: %v", err)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatalf("Reconcile while the fence is held: %v", err)
	}
	if got := getPolicy(t, p.Name); !slices.Equal(got.Finalizers, []string{v1alpha1.CleanupFinalizer}) {
		t.Errorf("while the fence is held, finalizers = %v, want [%s]", got.Finalizers, v1alpha1.CleanupFinalizer)
	}
}

// TestReconcileWriteEndsWithTheTenure: the requests of a change made while
// the fence is held end when the tenure does, by the reconciler's clock:
// the time left by that clock bounds them.
func TestReconcileWriteEndsWithTheTenure(t *testing.T) {
	needsAPIServer(t)
	now := time.Now()
	r := newTestReconciler(t, now)
	r.Space = objectName("space", "fence-deadline")
	// Renewed now for 4 s: the tenure ends in 3 s by the reconciler's clock.
	tenures, _ := fenceFor(t, r.Space, now, 4)
	r.Fence = tenures.Of(multicluster.ClusterName(r.Space))
	var deadline time.Time
	direct := directClient(t)
	r.Client = interceptor.NewClient(direct, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			deadline, _ = ctx.Deadline()
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	p := createPolicy(t, "fence-deadline")
	started := time.Now()
	if _, err := r.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	ended := time.Now()
	// The reconciler's clock stands still 3 s before the tenure ends.
	if deadline.Before(started.Add(3*time.Second)) || deadline.After(ended.Add(3*time.Second)) {
		t.Errorf("the finalizer's patch had the deadline %v, want 3 s after the run, between %v and %v",
			deadline, started.Add(3*time.Second), ended.Add(3*time.Second))
	}
}

// TestReconcileLapsedDuringTheWrite: a change whose tenure ends while the
// API server has not answered it is reported as lapsed, not as an error,
// and holds back the fence's release, since it may still land.
func TestReconcileLapsedDuringTheWrite(t *testing.T) {
	needsAPIServer(t)
	now := time.Now()
	r := newTestReconciler(t, now)
	r.Space = objectName("space", "fence-midwrite")
	tenures, lease := fenceFor(t, r.Space, now, 4)
	r.Fence = tenures.Of(multicluster.ClusterName(r.Space))
	direct := directClient(t)
	// An API server that does not answer the write before the tenure ends.
	r.Client = interceptor.NewClient(direct, interceptor.Funcs{
		Patch: func(ctx context.Context, _ client.WithWatch, _ client.Object, _ client.Patch, _ ...client.PatchOption) error {
			<-ctx.Done()
			return ctx.Err()
		},
	})
	p := createPolicy(t, "fence-midwrite")
	result, err := r.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
	if err != nil || result.RequeueAfter != FenceRetry {
		t.Errorf("Reconcile = %+v, %v; want a requeue after %v and no error", result, err, FenceRetry)
	}
	lease.Spec.HolderIdentity = ptr.To("")
	if err := tenures.Client(direct).Update(t.Context(), lease); err == nil {
		t.Error("the fence was released while a write to its space may still land")
	}
}
