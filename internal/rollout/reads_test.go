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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// TestReads table-tests what the reconciler reads for a policy's snapshot:
// one function says it, from the policy and its BindingPolicies.
func TestReads(t *testing.T) {
	analysed := func(s *Snapshot) {
		s.Policy.Spec.Stages[0].Analysis = []v1alpha1.Analysis{{Name: "errors", Provider: "prom", Query: "q",
			SuccessCondition: "true", Interval: &metav1.Duration{Duration: time.Minute}}}
		r := s.Policy.Status.StageNamed("dev")
		r.PlacedTime = ptr.To(minutesAgo(10))
	}
	tests := []struct {
		name string
		snap *Snapshot
		want ReadSet
		// wantAnalyses names the analyses due.
		wantAnalyses []string
	}{
		{name: "not started: the policy's own objects only",
			snap: fixture{newSnapshot(newPolicy())}.Snapshot,
			want: ReadSet{}},
		{name: "active dev: its BindingPolicy, and test's for the handover",
			snap: at("dev").Snapshot,
			want: ReadSet{Active: "web.stage.dev", Next: "web.stage.test"}},
		{name: "last stage: no next",
			snap: at("prod").Snapshot,
			want: ReadSet{Active: "web.stage.prod"}},
		{name: "aborted: every Binding and every CombinedStatus",
			snap: at("dev").with(func(s *Snapshot) { s.Policy.Spec.Abort = true }).Snapshot,
			want: ReadSet{Bindings: true, AbortStatuses: true, Active: "web.stage.dev", Next: "web.stage.test"}},
		{name: "being deleted: nothing around the policy",
			snap: at("dev").with(func(s *Snapshot) {
				s.Policy.Spec.Abort = true
				s.Policy.DeletionTimestamp = ptr.To(minutesAgo(1))
			}).Snapshot,
			want: ReadSet{}},
		{name: "batched: the census, every Binding, the clusters' statuses",
			snap: batched(fleetStage(nil)).on("store-a", minutesAgo(2), "1").on("store-b", minutesAgo(1), "0").Snapshot,
			want: ReadSet{Bindings: true, Active: v1alpha1.StageCensus("web", "prod").String(),
				ClusterStatuses: []string{"web.stage.prod.on.store-a", "web.stage.prod.on.store-b"}}},
		{name: "an analysis due: its query",
			snap: at("dev").with(analysed).Snapshot,
			want: ReadSet{Active: "web.stage.dev", Next: "web.stage.test"}, wantAnalyses: []string{"errors"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Reads(tc.snap.Policy, tc.snap.BindingPolicies, now)
			names := make([]string, 0, len(got.Analyses))
			for _, a := range got.Analyses {
				names = append(names, a.Name)
			}
			if got.Bindings != tc.want.Bindings || got.AbortStatuses != tc.want.AbortStatuses || got.Active != tc.want.Active ||
				got.Next != tc.want.Next || !slices.Equal(got.ClusterStatuses, tc.want.ClusterStatuses) ||
				!slices.Equal(names, tc.wantAnalyses) {
				t.Errorf("Reads = %+v (analyses %v), want %+v", got, names, tc.want)
			}
		})
	}
}
