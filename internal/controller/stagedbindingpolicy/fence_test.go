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

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/controller/metrics"
)

// heldUntil is a fence held until a fixed time.
type heldUntil time.Time

func (h heldUntil) HeldUntil() time.Time { return time.Time(h) }

// counterOfSpace returns the value of the counter name for space.
func counterOfSpace(t *testing.T, name, space string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering the metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == metrics.LabelSpace && l.GetValue() == space {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
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
	r.Space = "fence-lapsed"
	r.Metrics = metrics.NewSpace(r.Space)
	p := createPolicy(t, "fence-lapsed")
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}}

	for _, lapsed := range []time.Time{{}, now, now.Add(-time.Second)} {
		r.Fence = heldUntil(lapsed)
		result, err := r.Reconcile(ctx, req)
		if err != nil {
			t.Fatalf("Reconcile with the fence held until %v: %v", lapsed, err)
		}
		if result.RequeueAfter <= 0 || result.RequeueAfter > FenceRetry {
			t.Errorf("held until %v: result = %+v, want a requeue within %v", lapsed, result, FenceRetry)
		}
		if got := getPolicy(t, p.Name); len(got.Finalizers) != 0 {
			t.Fatalf("held until %v (the clock shows %v): the run wrote the finalizers %v", lapsed, now, got.Finalizers)
		}
	}
	if got := counterOfSpace(t, "stager_fence_lapsed_writes_total", r.Space); got != 3 {
		t.Errorf("stager_fence_lapsed_writes_total = %v, want 3", got)
	}

	r.Fence = heldUntil(now.Add(time.Minute))
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
	r.Fence = heldUntil(now.Add(3 * time.Second))
	var deadline time.Time
	direct, err := client.NewWithWatch(testSpace.Config, client.Options{Scheme: testSpace.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
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
