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
	"strings"
	"sync"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout"
	"github.com/kubestellar/workload-stager/internal/rollout/rollouttest"
)

// queriesSeen stands for the MetricProviders: it records each query as
// rendered, and answers value.
type queriesSeen struct {
	value   float64
	mu      sync.Mutex
	queries []string
}

func (q *queriesSeen) Query(_ context.Context, _, _, query string) ([]float64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queries = append(q.queries, query)
	return []float64{q.value}, nil
}

// TestPlanRunMeasuresDoneStageAnalysesOnlyWhenDue runs the reconciler's
// planning of one step (plan, measure the regression checks' analyses,
// plan again) on a policy dev → prod under Accumulate, prod rolling out,
// dev done with a regressionWatch that runs its analyses (interval 5m),
// minute by minute through a quarter of an hour, every status write
// applied: dev's analysis is queried once per check (3), with dev's
// clusters, never its dryRun one, and a failing answer regresses dev
// naming the analysis.
func TestPlanRunMeasuresDoneStageAnalysesOnlyWhenDue(t *testing.T) {
	dev := rollouttest.Stage("dev")
	dev.RegressionWatch = &v1alpha1.RegressionWatch{Analyses: true}
	dev.Analysis = []v1alpha1.Analysis{
		{Name: "errors", Provider: "prom", Query: `errors{stage="{{stage}}",cluster=~"{{clusters}}"}`, SuccessCondition: `result.all(v, v < 0.05)`},
		{Name: "latency", Provider: "prom", Query: "latency", SuccessCondition: "false", DryRun: true},
	}
	p := rollouttest.AtStage(rollouttest.NewPolicy(dev, rollouttest.Stage("prod")), "prod")
	p.Spec.Placement = v1alpha1.PlacementAccumulate
	devBP, prodBP := rollouttest.OwnedBP(p, "dev", "bp-dev"), rollouttest.OwnedBP(p, "prod", "bp-prod")
	devBP.Spec = rollout.DesiredBindingPolicy(p, dev).Spec
	prodBP.Spec = rollout.DesiredBindingPolicy(p, p.Spec.Stages[1]).Spec
	devBinding, prodBinding := rollouttest.BindingFor(devBP), rollouttest.BindingFor(prodBP)
	devBinding.Spec.Destinations = []ksv1alpha1.Destination{{ClusterId: "dev-1"}}
	devStatus := rollouttest.CombinedStatus(devBP, rollouttest.Deployment, "1")

	q := &queriesSeen{value: 0.01}
	r := &Reconciler{Space: "measure-watched", Measurer: q, Recorder: events.NewFakeRecorder(100), Engine: rollouttest.NewEngine(t)}
	start := rollouttest.Now.Time
	checks := 0
	var last rollout.Action
	for minute := range 15 {
		now := metav1.NewTime(start.Add(time.Duration(minute) * time.Minute))
		snap := &rollout.Snapshot{Policy: p.DeepCopy(), Now: now,
			BindingPolicies: []ksv1alpha1.BindingPolicy{*devBP, *prodBP}, ActiveBindingPolicy: prodBP.DeepCopy(), Binding: prodBinding.DeepCopy(),
			CombinedStatuses: []ksv1alpha1.CombinedStatus{rollouttest.CombinedStatus(prodBP, rollouttest.Deployment, "0")}}
		if reads := rollout.Reads(snap.Policy, snap.BindingPolicies, now); slices.Contains(reads.Watched, devBP.Name) {
			snap.WatchedBindings = []ksv1alpha1.Binding{*devBinding.DeepCopy()}
			snap.WatchedStatuses = []ksv1alpha1.CombinedStatus{devStatus}
		}
		if minute == 10 {
			q.value = 0.5 // dev's error rate is up at the third check
		}
		action, err := r.planRun(t.Context(), snap)
		if err != nil {
			t.Fatalf("planRun: %v", err)
		}
		checks += len(action.RegressionChecks)
		if action.Status != nil {
			p.Status = *action.Status.DeepCopy()
		}
		last = action
	}
	want := `errors{stage="dev",cluster=~"dev-1"}`
	if len(q.queries) != 3 || checks != 3 {
		t.Fatalf("%d checks, queries %q; want 3 of each (at 0, 5 and 10 minutes)", checks, q.queries)
	}
	for _, got := range q.queries {
		if got != want {
			t.Errorf("query %q, want %q (dev's analysis, with dev's clusters; never the dryRun one)", got, want)
		}
	}
	record := p.Status.StageNamed("dev")
	if record.Regressed == nil || !strings.Contains(record.Regressed.Message, `analysis "errors" failed with [0.5]`) {
		t.Errorf("dev's record = %+v (last action %s: %s), want regressed, naming analysis errors", record, last.Type, last.Why)
	}
	if len(record.Analyses) != 0 {
		t.Errorf("dev's analyses record = %+v, want none: a check's measurements are not recorded there", record.Analyses)
	}
}
