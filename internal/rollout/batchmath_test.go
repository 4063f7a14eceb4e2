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

package rollout

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// TestTallyBatches table-tests the arithmetic of batches, apart from the
// clusters' conditions and deadlines: given the states of the clusters
// placed, in placement order, what the stage does next.
func TestTallyBatches(t *testing.T) {
	const (
		P = v1alpha1.ClusterProgressing
		S = v1alpha1.ClusterSucceeded
		F = v1alpha1.ClusterFailed
		T = v1alpha1.ClusterTimedOut
	)
	// two clusters at a time, one may fail.
	pairs := v1alpha1.Stage{Name: "prod", MaxConcurrency: ptr.To(intstr.FromInt32(2)), MaxFailures: ptr.To(intstr.FromInt32(1))}
	canary := pairs
	canary.Canary = ptr.To[int32](1)
	tests := []struct {
		name   string
		stage  v1alpha1.Stage
		total  int
		states []v1alpha1.ClusterState
		want   batchStep
		// wantBatch is the batch being placed or awaited, of wantBatches.
		wantBatch, wantBatches int
		wantFilling            bool
	}{
		{name: "nothing placed: the first cluster at once", stage: pairs, total: 5,
			want: stepFill, wantBatch: 1, wantBatches: 3},
		{name: "a batch half placed: the next at once", stage: pairs, total: 5, states: []v1alpha1.ClusterState{P},
			want: stepFill, wantBatch: 1, wantBatches: 3, wantFilling: true},
		{name: "a batch placed, progressing: wait", stage: pairs, total: 5, states: []v1alpha1.ClusterState{S, P},
			want: stepWait, wantBatch: 1, wantBatches: 3},
		{name: "a batch placed and done: the next batch once soaked", stage: pairs, total: 5, states: []v1alpha1.ClusterState{S, S},
			want: stepBatchDone, wantBatch: 1, wantBatches: 3},
		{name: "a failure within the budget does not stop the batches", stage: pairs, total: 5, states: []v1alpha1.ClusterState{S, F},
			want: stepBatchDone, wantBatch: 1, wantBatches: 3},
		{name: "the second batch half placed", stage: pairs, total: 5, states: []v1alpha1.ClusterState{S, S, P},
			want: stepFill, wantBatch: 2, wantBatches: 3, wantFilling: true},
		{name: "more failures than maxFailures: stop", stage: pairs, total: 5, states: []v1alpha1.ClusterState{F, T},
			want: stepBudgetExceeded, wantBatch: 1, wantBatches: 3},
		{name: "every cluster placed and done, within the budget: done", stage: pairs, total: 5, states: []v1alpha1.ClusterState{S, S, F, S, S},
			want: stepDone, wantBatch: 3, wantBatches: 3},
		{name: "every cluster placed, one progressing: wait", stage: pairs, total: 5, states: []v1alpha1.ClusterState{S, S, S, S, P},
			want: stepWait, wantBatch: 3, wantBatches: 3},
		{name: "every cluster failed within the budget, none succeeded", stage: pairs, total: 1, states: []v1alpha1.ClusterState{F},
			want: stepNoneSucceeded, wantBatch: 1, wantBatches: 1},
		{name: "the canary batch may not fail", stage: canary, total: 5, states: []v1alpha1.ClusterState{F},
			want: stepCanaryFailed, wantBatch: 1, wantBatches: 3},
		{name: "a failure after the canary batch counts against the budget only", stage: canary, total: 5, states: []v1alpha1.ClusterState{S, F},
			want: stepFill, wantBatch: 2, wantBatches: 3, wantFilling: true},
		{name: "the canary done: the next batch once soaked", stage: canary, total: 5, states: []v1alpha1.ClusterState{S},
			want: stepBatchDone, wantBatch: 1, wantBatches: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tallyBatches(tc.stage, tc.total, tc.states)
			if got.step != tc.want || got.batch != tc.wantBatch || got.batches != tc.wantBatches || got.filling != tc.wantFilling {
				t.Errorf("tally = %+v, want step %d, batch %d of %d, filling %t", got, tc.want, tc.wantBatch, tc.wantBatches, tc.wantFilling)
			}
		})
	}
}

// TestTallyBatchesInvariants checks the tally over random stages and
// states: the counts add up, the stage places more only with clusters
// left and within its budget, and is done only when every cluster is
// placed, none progressing, one at least succeeded.
func TestTallyBatchesInvariants(t *testing.T) {
	states := []v1alpha1.ClusterState{v1alpha1.ClusterProgressing, v1alpha1.ClusterSucceeded, v1alpha1.ClusterFailed, v1alpha1.ClusterTimedOut}
	rapid.Check(t, func(t *rapid.T) {
		total := rapid.IntRange(1, 40).Draw(t, "total")
		stage := v1alpha1.Stage{Name: "prod", MaxConcurrency: ptr.To(intstr.FromInt(rapid.IntRange(1, 10).Draw(t, "maxConcurrency"))),
			MaxFailures: ptr.To(intstr.FromInt(rapid.IntRange(0, 5).Draw(t, "maxFailures")))}
		if rapid.Bool().Draw(t, "canary") {
			stage.Canary = ptr.To(int32(rapid.IntRange(1, 5).Draw(t, "canarySize")))
		}
		placed := rapid.SliceOfN(rapid.SampledFrom(states), 0, total).Draw(t, "states")
		got := tallyBatches(stage, total, placed)
		first, _, allowed := batchSizes(stage, total)

		if got.placed != len(placed) || got.succeeded+got.failed+got.timedOut+got.progressing != got.placed || got.total != total {
			t.Fatalf("counts do not add up: %+v", got)
		}
		if got.batch < 1 || got.batch > got.batches {
			t.Fatalf("batch %d of %d", got.batch, got.batches)
		}
		failures := got.failed + got.timedOut
		canaryFailed := stage.Canary != nil && slices.ContainsFunc(placed[:min(first, len(placed))], func(s v1alpha1.ClusterState) bool {
			return s == v1alpha1.ClusterFailed || s == v1alpha1.ClusterTimedOut
		})
		switch got.step {
		case stepCanaryFailed:
			if !canaryFailed {
				t.Fatalf("canary failed with no canary cluster failed: %+v", got)
			}
		case stepBudgetExceeded:
			if canaryFailed || failures <= allowed {
				t.Fatalf("budget exceeded with %d failures of %d allowed: %+v", failures, allowed, got)
			}
		case stepFill, stepBatchDone:
			if canaryFailed || failures > allowed || got.placed >= total {
				t.Fatalf("places more past its budget or with no cluster left: %+v", got)
			}
			if got.step == stepBatchDone && got.progressing > 0 {
				t.Fatalf("batch done with clusters progressing: %+v", got)
			}
		case stepDone, stepNoneSucceeded:
			if canaryFailed || failures > allowed || got.placed != total || got.progressing > 0 {
				t.Fatalf("done with clusters left, progressing or past the budget: %+v", got)
			}
			if (got.step == stepDone) != (got.succeeded > 0) {
				t.Fatalf("done without a success, or not done with one: %+v", got)
			}
		case stepWait:
			if got.progressing == 0 {
				t.Fatalf("waits with nothing progressing: %+v", got)
			}
		}
	})
}
