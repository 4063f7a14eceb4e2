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
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// TestReconcileReportsSquattersTheCacheDoesNotHold runs the reconciler on a
// cache narrowed as a space's (NarrowCache), which never holds a
// BindingPolicy without the stager's labels: such an object under a name
// the stager must create, for a batched stage's cluster, an earlier stage
// kept under Accumulate or an abort's target, blocks the rollout with
// BindingPolicyConflict naming it and a Warning Event, within a few runs,
// instead of a create refused every second.
func TestReconcileReportsSquattersTheCacheDoesNotHold(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()

	tests := []struct {
		name string
		// squatted makes a policy that must create a BindingPolicy, and
		// returns the policy and that BindingPolicy's name.
		squatted func(t *testing.T) (*v1alpha1.StagedBindingPolicy, string)
	}{
		{name: "a batched stage's cluster", squatted: func(t *testing.T) (*v1alpha1.StagedBindingPolicy, string) {
			p := batchedAtProd(t, "narrow-squat-batched", "store-a", "store-b")
			return p, v1alpha1.StagePlacement(p.Name, "prod").On("store-a").String()
		}},
		{name: "an earlier stage under Accumulate", squatted: func(t *testing.T) (*v1alpha1.StagedBindingPolicy, string) {
			p := createPolicy(t, "narrow-squat-accumulate", v1alpha1.CleanupFinalizer)
			p.Spec.Placement = v1alpha1.PlacementAccumulate
			if err := testSpace.Client.Update(ctx, p); err != nil {
				t.Fatalf("setting placement Accumulate: %v", err)
			}
			startPolicy(t, p, "test")
			return p, v1alpha1.StagePlacement(p.Name, "dev").At(p.Status.UpdateRevision).String()
		}},
		{name: "an abort's target", squatted: func(t *testing.T) (*v1alpha1.StagedBindingPolicy, string) {
			p := createPolicy(t, "narrow-squat-abort", v1alpha1.CleanupFinalizer)
			p.Spec.Revision, p.Spec.Abort = &v1alpha1.Revision{Name: "v2"}, true
			if err := testSpace.Client.Update(ctx, p); err != nil {
				t.Fatalf("aborting revision v2: %v", err)
			}
			p.Status = v1alpha1.StagedBindingPolicyStatus{Phase: v1alpha1.RolloutAborted, CurrentRevision: "v1", UpdateRevision: "v2",
				Stages: []v1alpha1.StageStatus{
					{Name: "dev", Phase: v1alpha1.StagePending, Revision: "v1"},
					{Name: "test", Phase: v1alpha1.StagePending},
					{Name: "prod", Phase: v1alpha1.StagePending},
				}}
			if err := testSpace.Client.Status().Update(ctx, p); err != nil {
				t.Fatalf("recording the abort: %v", err)
			}
			return p, v1alpha1.StagePlacement(p.Name, "dev").At("v1").String()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, name := tt.squatted(t)
			createForeignBP(t, name)
			r := newTestReconciler(t, time.Now())
			r.Client, r.APIReader, r.IndexedCache = selectedClient(t), testSpace.Client, true

			var ready *metav1.Condition
			for run := 1; run <= 4; run++ {
				if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}}); err != nil {
					t.Fatalf("run %d: Reconcile: %v", run, err)
				}
				if ready = meta.FindStatusCondition(getPolicy(t, p.Name).Status.Conditions, v1alpha1.ConditionReady); ready != nil &&
					ready.Reason == v1alpha1.ReasonBindingPolicyConflict {
					break
				}
			}
			if ready == nil || ready.Reason != v1alpha1.ReasonBindingPolicyConflict || !strings.Contains(ready.Message, name) {
				t.Fatalf("after 4 runs: Ready %+v; want BindingPolicyConflict naming %s", ready, name)
			}
			recorder := r.Recorder.(*events.FakeRecorder)
			conflicts := 0
			for len(recorder.Events) > 0 {
				if e := <-recorder.Events; strings.Contains(e, "Warning") && strings.Contains(e, v1alpha1.ReasonBindingPolicyConflict) {
					conflicts++
				}
			}
			if conflicts != 1 {
				t.Errorf("%d Warning BindingPolicyConflict Events, want one", conflicts)
			}
		})
	}
}
