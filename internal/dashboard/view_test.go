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

package dashboard

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// TestEventViewsCountAndAgeSeries: the stager posts its Events through the
// events.k8s.io API, which the core API shows with count 0 and, once an
// Event repeats, a series. The page shows how often each happened and when
// it last did, as kubectl does.
func TestEventViewsCountAndAgeSeries(t *testing.T) {
	now := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) metav1.MicroTime { return metav1.NewMicroTime(now.Add(-ago)) }
	events := []corev1.Event{
		{Reason: "Once", EventTime: at(time.Hour)},
		{Reason: "Repeated", EventTime: at(2 * time.Hour), Series: &corev1.EventSeries{Count: 3, LastObservedTime: at(time.Minute)}},
		{Reason: "Legacy", Count: 5, LastTimestamp: metav1.NewTime(now.Add(-30 * time.Minute))},
	}
	want := map[string]eventView{
		"Once":     {Age: "60m", Reason: "Once", Count: 1},
		"Repeated": {Age: "60s", Reason: "Repeated", Count: 3},
		"Legacy":   {Age: "30m", Reason: "Legacy", Count: 5},
	}
	got := eventViews(events, now)
	if len(got) != len(want) {
		t.Fatalf("%d views, want %d", len(got), len(want))
	}
	if got[0].Reason != "Repeated" {
		t.Errorf("first view %q, want the latest, Repeated", got[0].Reason)
	}
	for _, v := range got {
		if w := want[v.Reason]; v != w {
			t.Errorf("view %+v, want %+v", v, w)
		}
	}
}

// TestOfferedVerbsFitTheRolloutsState: each state gets the actions that
// would change something, and restart always.
func TestOfferedVerbsFitTheRolloutsState(t *testing.T) {
	policy := func(change func(*v1alpha1.StagedBindingPolicy)) *v1alpha1.StagedBindingPolicy {
		p := &v1alpha1.StagedBindingPolicy{Status: v1alpha1.StagedBindingPolicyStatus{Phase: v1alpha1.RolloutProgressing, ActiveStage: "dev",
			Stages: []v1alpha1.StageStatus{{Name: "dev", Phase: v1alpha1.StageActive}}}}
		change(p)
		return p
	}
	for _, tc := range []struct {
		name string
		p    *v1alpha1.StagedBindingPolicy
		want []string
	}{
		{"progressing", policy(func(*v1alpha1.StagedBindingPolicy) {}), []string{"suspend", "abort", "restart", "promote"}},
		{"awaiting approval", policy(func(p *v1alpha1.StagedBindingPolicy) {
			p.Status.Phase, p.Status.Stages[0].Phase = v1alpha1.RolloutAwaitingApproval, v1alpha1.StageAwaitingApproval
		}), []string{"approve", "suspend", "abort", "restart", "promote"}},
		{"suspended", policy(func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Suspend = true }), []string{"resume", "abort", "restart", "promote"}},
		{"aborted", policy(func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Abort, p.Status.Phase = true, v1alpha1.RolloutAborted }),
			[]string{"suspend", "retry", "restart"}},
		{"completed", policy(func(p *v1alpha1.StagedBindingPolicy) {
			p.Status.Phase, p.Status.Stages[0].Phase = v1alpha1.RolloutCompleted, v1alpha1.StageSucceeded
		}), []string{"suspend", "restart"}},
	} {
		if got := offeredVerbs(tc.p); !slices.Equal(got, tc.want) {
			t.Errorf("%s: offered %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestClustersShownByState: a stage placed in batches shows its counts,
// names its failed and timed-out clusters on the card, and the policy's
// page lists every named cluster of every such stage, in the stages'
// order; a stage judged as a whole has no cluster record and shows none.
func TestClustersShownByState(t *testing.T) {
	p := &v1alpha1.StagedBindingPolicy{
		Spec: v1alpha1.StagedBindingPolicySpec{Stages: []v1alpha1.Stage{{Name: "dev"}, {Name: "prod"}, {Name: "edge"}}},
		Status: v1alpha1.StagedBindingPolicyStatus{ActiveStage: "edge", Stages: []v1alpha1.StageStatus{
			{Name: "edge", Phase: v1alpha1.StageActive, Clusters: &v1alpha1.StageClusters{Total: 5, Placed: 4, Succeeded: 1, Failed: 1, TimedOut: 1,
				Batch: 2, Batches: 3, Clusters: []v1alpha1.ClusterStatus{
					{Name: "e2", State: v1alpha1.ClusterFailed}, {Name: "e4", State: v1alpha1.ClusterTimedOut},
					{Name: "e3", State: v1alpha1.ClusterProgressing}, {Name: "e1", State: v1alpha1.ClusterSucceeded}}}},
			{Name: "dev", Phase: v1alpha1.StageSucceeded},
			{Name: "prod", Phase: v1alpha1.StageSucceeded, Clusters: &v1alpha1.StageClusters{Total: 1, Placed: 1, Succeeded: 1,
				Batch: 1, Batches: 1, Clusters: []v1alpha1.ClusterStatus{{Name: "p1", State: v1alpha1.ClusterSucceeded}}}},
		}},
	}
	v := viewOf("", p, time.Now())
	dev, prod, edge := v.Stages[0], v.Stages[1], v.Stages[2]
	if dev.Total != 0 || dev.FailedClusters != "" {
		t.Errorf("dev, judged as a whole, shows clusters: %+v", dev)
	}
	if prod.Total != 1 || prod.Succeeded != 1 || prod.FailedClusters != "" {
		t.Errorf("prod: %+v", prod)
	}
	if edge.Succeeded != 1 || edge.Progressing != 1 || edge.Failed != 2 || edge.ToApply != 1 || edge.Batch != "batch 2 of 3" ||
		edge.FailedClusters != "e2, e4 (timed out)" {
		t.Errorf("edge: %+v", edge)
	}
	want := []clusterRow{{"prod", "p1", v1alpha1.ClusterSucceeded}, {"edge", "e2", v1alpha1.ClusterFailed},
		{"edge", "e4", v1alpha1.ClusterTimedOut}, {"edge", "e3", v1alpha1.ClusterProgressing}, {"edge", "e1", v1alpha1.ClusterSucceeded}}
	if got := clusterRows(p); !slices.Equal(got, want) {
		t.Errorf("the policy's page lists %v, want %v", got, want)
	}
}
