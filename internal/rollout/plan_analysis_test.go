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
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
)

// ---------------------------------------------------------------------------
// Rules 6 and 15: analyses, failureCondition and onFailure
// ---------------------------------------------------------------------------

// errorRate is an analysis passing while every value is below 0.05.
func errorRate(count int32) v1alpha1.Analysis {
	return v1alpha1.Analysis{Name: "error-rate", Provider: "prom", Query: `vector(0)`, Count: count,
		Interval: &metav1.Duration{Duration: 30 * time.Second}, SuccessCondition: `result.size() > 0 && result.all(v, v < 0.05)`}
}

// analysed is the default stages with test analysed by a, onFailure set.
func analysed(onFailure v1alpha1.FailureAction, a ...v1alpha1.Analysis) []v1alpha1.Stage {
	test := stage("test")
	test.Analysis, test.OnFailure = a, onFailure
	return []v1alpha1.Stage{stage("dev"), test, stage("prod")}
}

// measured adds a measurement of test's analysis error-rate taken at t.
func measured(t metav1.Time, values ...float64) func(*Snapshot) {
	return func(s *Snapshot) {
		s.Measurements = append(s.Measurements, Measurement{Stage: "test", Analysis: "error-rate", Time: t, Values: values})
	}
}

// unreachable adds a measurement of test's analysis error-rate that got no answer.
func unreachable(t metav1.Time) func(*Snapshot) {
	return func(s *Snapshot) {
		s.Measurements = append(s.Measurements, Measurement{Stage: "test", Analysis: "error-rate", Time: t, Error: "connection refused"})
	}
}

// healthyTest is the policy at test, placed since earlier, whose
// condition holds.
func healthyTest(stages []v1alpha1.Stage) fixture {
	f := at("test", stages...).bound().reporting(deployment, "1")
	f.Policy.Status.StageNamed("test").PlacedTime = ptr.To(earlier)
	return f
}

// errorRateRecord returns test's record of its analysis error-rate.
func errorRateRecord(t *testing.T, status *v1alpha1.StagedBindingPolicyStatus) v1alpha1.AnalysisStatus {
	t.Helper()
	r := status.StageNamed("test").AnalysisNamed("error-rate")
	if r == nil {
		t.Fatalf("stage test has no record of analysis error-rate: %+v", status.StageNamed("test"))
	}
	return *r
}

func TestDueAnalyses(t *testing.T) {
	delayed := errorRate(3)
	delayed.InitialDelay = &metav1.Duration{Duration: 2 * time.Hour}
	withRecord := func(r v1alpha1.AnalysisStatus) func(*v1alpha1.StagedBindingPolicy) {
		return func(p *v1alpha1.StagedBindingPolicy) {
			p.Status.StageNamed("test").Analyses = []v1alpha1.AnalysisStatus{r}
		}
	}
	running := func(last time.Duration) v1alpha1.AnalysisStatus {
		return v1alpha1.AnalysisStatus{Name: "error-rate", Phase: v1alpha1.AnalysisRunning, Successful: 1,
			Measurements: []v1alpha1.Measurement{{Time: metav1.NewTime(now.Add(-last)), Phase: v1alpha1.MeasurementSuccessful}}}
	}
	for _, tc := range []struct {
		name   string
		a      v1alpha1.Analysis
		change func(*v1alpha1.StagedBindingPolicy)
		want   bool
	}{
		{name: "first measurement at the stage's start", a: errorRate(3), want: true},
		{name: "not before the initialDelay", a: delayed},
		{name: "the next one not before the interval", a: errorRate(3), change: withRecord(running(10 * time.Second))},
		{name: "the next one past the interval", a: errorRate(3), change: withRecord(running(30 * time.Second)), want: true},
		{name: "none once the analysis has ended", a: errorRate(3), change: withRecord(v1alpha1.AnalysisStatus{Name: "error-rate", Phase: v1alpha1.AnalysisSuccessful})},
		{name: "none while suspended", a: errorRate(3), change: func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Suspend = true }},
		{name: "none while aborted", a: errorRate(3), change: func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Abort = true }},
		{name: "none while a failure holds the rollout", a: errorRate(3), change: func(p *v1alpha1.StagedBindingPolicy) {
			p.Status.Failure = &v1alpha1.RolloutFailure{Stage: "test", Action: v1alpha1.FailureHold, SpecDigest: specDigest(p)}
		}},
		{name: "none for a stage awaiting approval", a: errorRate(3), change: func(p *v1alpha1.StagedBindingPolicy) {
			p.Status.StageNamed("test").Phase = v1alpha1.StageAwaitingApproval
		}},
	} {
		p := atStage(newPolicy(analysed(v1alpha1.FailureHold, tc.a)...), "test")
		p.Status.StageNamed("test").PlacedTime = ptr.To(earlier)
		if tc.change != nil {
			tc.change(p)
		}
		if got := len(DueAnalyses(p, now)) == 1; got != tc.want {
			t.Errorf("%s: due %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPlanAnalyses(t *testing.T) {
	engine := newEngine(t)

	t.Run("a successful analysis lets the stage advance, recording its measurement", func(t *testing.T) {
		action := planThrough(healthyTest(analysed(v1alpha1.FailureHold, errorRate(1))).with(measured(now, 0.01)).Snapshot, engine)
		if action.Type != ActionUpdateStatus || action.Status.ActiveStage != "prod" {
			t.Fatalf("action %s (%s), want the advance to prod recorded (not the handover: the measurement goes first)", action.Type, action.Why)
		}
		r := errorRateRecord(t, action.Status)
		if r.Phase != v1alpha1.AnalysisSuccessful || r.Successful != 1 || len(r.Measurements) != 1 || r.Measurements[0].Value != "[0.01]" {
			t.Errorf("record %+v, want Successful with the measurement [0.01]", r)
		}
	})

	t.Run("analyses not started hold a stage without a condition", func(t *testing.T) {
		stages := analysed(v1alpha1.FailureHold, errorRate(1))
		stages[1].Condition = ""
		action := planThrough(at("test", stages...).bound().Snapshot, engine)
		if action.Type != ActionUpdateStatus || action.Status.ActiveStage != "test" || action.Status.StageNamed("test").PlacedTime == nil {
			t.Fatalf("action %s (%s), want test to stay active, its placement recorded", action.Type, action.Why)
		}
		if c := condition(t, action.Status, v1alpha1.ConditionProgressing); c.Reason != v1alpha1.ReasonAnalysisRunning {
			t.Errorf("Progressing %+v, want AnalysisRunning", c)
		}
	})

	t.Run("a running analysis holds a stage whose condition holds", func(t *testing.T) {
		action := planThrough(healthyTest(analysed(v1alpha1.FailureHold, errorRate(3))).with(measured(now, 0.01)).Snapshot, engine)
		if action.Type != ActionUpdateStatus || action.Status.ActiveStage != "test" {
			t.Fatalf("action %s (%s), want test to stay active", action.Type, action.Why)
		}
		if c := condition(t, action.Status, v1alpha1.ConditionProgressing); c.Reason != v1alpha1.ReasonAnalysisRunning || !strings.Contains(c.Message, "error-rate (1 of 3)") {
			t.Errorf("Progressing %+v, want AnalysisRunning naming error-rate (1 of 3)", c)
		}
		if action.RequeueAfter <= 0 || action.RequeueAfter > 30*time.Second {
			t.Errorf("requeue after %s, want by the next measurement, 30s on", action.RequeueAfter)
		}
	})

	t.Run("a measurement counts once, and not before the stage started", func(t *testing.T) {
		f := healthyTest(analysed(v1alpha1.FailureHold, errorRate(3))).with(measured(now, 0.01))
		first := planThrough(f.Snapshot, engine)
		f.Policy.Status = *first.Status
		again := planThrough(f.with(measured(muchEarlier, 0.01)).Snapshot, engine)
		if again.Type == ActionUpdateStatus {
			if r := errorRateRecord(t, again.Status); r.Taken() != 1 {
				t.Errorf("record %+v after the same and an earlier measurement again, want 1 taken", r)
			}
		}
	})

	t.Run("a failed analysis with onFailure Hold stalls the rollout where it is", func(t *testing.T) {
		action := planThrough(healthyTest(analysed(v1alpha1.FailureHold, errorRate(3))).with(measured(now, 0.5)).Snapshot, engine)
		if action.Type != ActionUpdateStatus || action.Status.Failure == nil || action.Status.Phase != v1alpha1.RolloutStalled {
			t.Fatalf("action %s (%s), want the failure recorded and the rollout Stalled", action.Type, action.Why)
		}
		f := action.Status.Failure
		if f.Stage != "test" || f.Reason != v1alpha1.ReasonAnalysisFailed || f.Action != v1alpha1.FailureHold || f.SpecDigest != specDigest(healthyTest(nil).Policy) && f.SpecDigest == "" {
			t.Errorf("failure %+v, want test, AnalysisFailed, Hold, with the spec's digest", f)
		}
		if got := eventKeys(action.Events); !slices.Equal(got, []string{"Warning/" + v1alpha1.ReasonAnalysisFailed}) {
			t.Errorf("events %v, want one Warning AnalysisFailed", got)
		}
		if r := errorRateRecord(t, action.Status); r.Phase != v1alpha1.AnalysisFailed || r.Measurements[0].Value != "[0.5]" {
			t.Errorf("record %+v, want Failed with the value [0.5]", r)
		}
	})

	t.Run("failures within the failureLimit do not fail the analysis", func(t *testing.T) {
		tolerant := errorRate(3)
		tolerant.FailureLimit = 1
		action := planThrough(healthyTest(analysed(v1alpha1.FailureHold, tolerant)).with(measured(now, 0.5)).Snapshot, engine)
		if action.Type != ActionUpdateStatus || action.Status.Failure != nil {
			t.Fatalf("action %s (%s), want the measurement recorded and no failure", action.Type, action.Why)
		}
		if r := errorRateRecord(t, action.Status); r.Phase != v1alpha1.AnalysisRunning || r.Failed != 1 {
			t.Errorf("record %+v, want Running with 1 failed", r)
		}
	})

	t.Run("a provider that does not answer is inconclusive, which holds even with onFailure Abort", func(t *testing.T) {
		action := planThrough(healthyTest(analysed(v1alpha1.FailureAbort, errorRate(3))).with(unreachable(now)).Snapshot, engine)
		if action.Type != ActionUpdateStatus || action.Status.Failure == nil {
			t.Fatalf("action %s (%s), want the failure recorded", action.Type, action.Why)
		}
		if f := action.Status.Failure; f.Reason != v1alpha1.ReasonAnalysisInconclusive || f.Action != v1alpha1.FailureHold {
			t.Errorf("failure %+v, want AnalysisInconclusive, Hold", f)
		}
		r := errorRateRecord(t, action.Status)
		if r.Phase != v1alpha1.AnalysisInconclusive || r.Successful != 0 || r.Measurements[0].Message != "connection refused" {
			t.Errorf("record %+v, want Inconclusive saying why, never successful", r)
		}
	})

	t.Run("neither condition holding is inconclusive, within the inconclusiveLimit", func(t *testing.T) {
		both := errorRate(3)
		both.FailureCondition, both.InconclusiveLimit = `result.all(v, v > 0.2)`, 1
		action := planThrough(healthyTest(analysed(v1alpha1.FailureHold, both)).with(measured(now, 0.1)).Snapshot, engine)
		if action.Type != ActionUpdateStatus || action.Status.Failure != nil {
			t.Fatalf("action %s (%s), want the measurement recorded and no failure", action.Type, action.Why)
		}
		if r := errorRateRecord(t, action.Status); r.Inconclusive != 1 || r.Phase != v1alpha1.AnalysisRunning {
			t.Errorf("record %+v, want Running with 1 inconclusive", r)
		}
	})

	t.Run("an evaluation error is inconclusive", func(t *testing.T) {
		indexing := errorRate(1)
		indexing.SuccessCondition = `result[0] < 0.05`
		action := planThrough(healthyTest(analysed(v1alpha1.FailureHold, indexing)).with(measured(now)).Snapshot, engine)
		if action.Status == nil || action.Status.Failure == nil || action.Status.Failure.Reason != v1alpha1.ReasonAnalysisInconclusive {
			t.Fatalf("action %s (%s), want the rollout held as inconclusive", action.Type, action.Why)
		}
	})

	t.Run("a dry run is recorded and never gates", func(t *testing.T) {
		dry := errorRate(3)
		dry.DryRun = true
		action := planThrough(healthyTest(analysed(v1alpha1.FailureAbort, dry)).with(measured(now, 0.9)).Snapshot, engine)
		if action.Type != ActionUpdateStatus || action.Status.ActiveStage != "prod" || action.Status.Failure != nil {
			t.Fatalf("action %s (%s), want the advance to prod", action.Type, action.Why)
		}
		if r := errorRateRecord(t, action.Status); !r.DryRun || r.Failed != 1 {
			t.Errorf("record %+v, want the dry run's failed measurement kept", r)
		}
	})

	t.Run("an analysis condition that does not compile blocks the rollout", func(t *testing.T) {
		broken := errorRate(1)
		broken.SuccessCondition = `result.nope(`
		action := planThrough(healthyTest(analysed(v1alpha1.FailureHold, broken)).Snapshot, engine)
		if action.Status == nil || action.Status.Phase != v1alpha1.RolloutBlocked {
			t.Fatalf("action %s (%s), want the rollout Blocked", action.Type, action.Why)
		}
	})
}

func TestPlanFailureCondition(t *testing.T) {
	engine := newEngine(t)
	stages := analysed(v1alpha1.FailureHold)
	stages[1].FailureCondition = `obj.results.exists(r, r.rows.exists(row, row.columns.exists(c, c.type == 'Number' && c.float == '0')))`

	action := planThrough(at("test", stages...).bound().reporting(deployment, "0").Snapshot, engine)
	if action.Type != ActionUpdateStatus || action.Status.Failure == nil || action.Status.Failure.Reason != v1alpha1.ReasonFailureConditionMet {
		t.Fatalf("action %s (%s), want the failure recorded as FailureConditionMet", action.Type, action.Why)
	}
	if !strings.Contains(action.Status.Failure.Message, "deployments.apps web/nginx") {
		t.Errorf("failure message %q, want it to name the object", action.Status.Failure.Message)
	}
	if action := planThrough(at("test", stages...).bound().reporting(deployment, "1").Snapshot, engine); action.Type != ActionCreateBindingPolicy ||
		action.BindingPolicy.Name != "web.stage.prod" {
		t.Errorf("a healthy object: action %s (%s), want the handover to prod", action.Type, action.Why)
	}
}

func TestPlanHeld(t *testing.T) {
	engine := newEngine(t)
	held := func() fixture {
		f := healthyTest(analysed(v1alpha1.FailureHold, errorRate(3))).with(measured(now, 0.5))
		f.Policy.Status = *Plan(f.Snapshot, engine).Status
		f.Measurements = nil
		return f
	}
	t.Run("a held rollout stays, changing nothing placed, and takes no measurement", func(t *testing.T) {
		f := held()
		if action := planThrough(f.Snapshot, engine); action.Type != ActionNone {
			t.Errorf("action %s (%s), want none", action.Type, action.Why)
		}
		if due := DueAnalyses(f.Policy, now); len(due) != 0 {
			t.Errorf("due %v while held", due)
		}
	})
	for name, change := range map[string]func(*v1alpha1.StagedBindingPolicy){
		"a new spec": func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Placement = v1alpha1.PlacementAccumulate },
		"a new restart": func(p *v1alpha1.StagedBindingPolicy) {
			p.Annotations = map[string]string{v1alpha1.RestartedAtAnnotation: "now"}
		},
	} {
		t.Run(name+" releases it", func(t *testing.T) {
			f := held()
			change(f.Policy)
			action := planThrough(f.Snapshot, engine)
			if action.Type != ActionUpdateStatus || action.Status.Failure != nil || len(action.Status.StageNamed("test").Analyses) != 0 {
				t.Fatalf("action %s (%s), want the failure and the stage's analyses cleared", action.Type, action.Why)
			}
			if name == "a new restart" {
				if next := replan(t, f.Snapshot, engine, action); next.Type != ActionUpdateStatus || next.Status.ActiveStage != "dev" {
					t.Errorf("then: action %s (%s), want the restart from dev", next.Type, next.Why)
				}
			}
		})
	}
}

func TestPlanOnFailureAbort(t *testing.T) {
	engine := newEngine(t)
	failed := func(f fixture) fixture {
		f = f.with(measured(now, 0.5))
		action := planThrough(f.Snapshot, engine)
		if action.Status == nil || action.Status.Failure == nil || action.Status.Failure.Action != v1alpha1.FailureAbort {
			t.Fatalf("action %s (%s), want the failure recorded with Abort", action.Type, action.Why)
		}
		f.Policy.Status = *action.Status
		f.Measurements = nil
		return f
	}

	t.Run("without a revision, the failed stage goes and the last good one comes back", func(t *testing.T) {
		f := failed(healthyTest(analysed(v1alpha1.FailureAbort, errorRate(1))))
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionUpdateStatus || action.Status.Phase != v1alpha1.RolloutAborted || action.Status.ActiveStage != "" {
			t.Fatalf("action %s (%s), want the abort recorded", action.Type, action.Why)
		}
		if got := eventKeys(action.Events); !slices.Equal(got, []string{"Warning/" + v1alpha1.ReasonRolloutAborted}) {
			t.Errorf("events %v, want one Warning RolloutAborted", got)
		}
		if r := action.Status.StageNamed("dev"); r.Phase != v1alpha1.StageSucceeded {
			t.Errorf("dev's record %+v, want it still Succeeded", r)
		}
		if c := condition(t, action.Status, v1alpha1.ConditionProgressing); !strings.Contains(c.Message, `stages [dev] stay placed`) {
			t.Errorf("Progressing %q, want it to say dev stays", c.Message)
		}
		f.Policy.Status = *action.Status
		action = planThrough(f.Snapshot, engine)
		if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.dev" {
			t.Fatalf("action %s (%s), want web.stage.dev placed again first", action.Type, action.Why)
		}
		dev := ownedBP(f.Policy, "dev", types.UID("bp-dev"))
		f = f.alsoBP(dev)
		if action := planThrough(f.Snapshot, engine); action.Type != ActionNone {
			t.Fatalf("action %s (%s), want to wait until dev's BindingPolicy is resolved", action.Type, action.Why)
		}
		f.Bindings = append(f.Bindings, *bindingFor(dev))
		action = planThrough(f.Snapshot, engine)
		if action.Type != ActionDeleteBindingPolicy || action.BindingPolicy.Name != "web.stage.test" {
			t.Fatalf("action %s (%s), want web.stage.test taken away", action.Type, action.Why)
		}
	})

	t.Run("a failed first stage is withdrawn with nothing kept", func(t *testing.T) {
		stages := analysed(v1alpha1.FailureAbort, errorRate(1))
		stages[0], stages[1] = stages[1], stages[0]
		f := at("test", stages...).bound().reporting(deployment, "1").with(measured(now, 0.5))
		f.Policy.Status.StageNamed("test").PlacedTime = ptr.To(earlier)
		f.Policy.Status = *Plan(f.Snapshot, engine).Status
		f.Measurements = nil
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionUpdateStatus || !strings.Contains(condition(t, action.Status, v1alpha1.ConditionProgressing).Message, "none stays placed") {
			t.Fatalf("action %s (%s), want the abort recorded with nothing kept", action.Type, action.Why)
		}
		f.Policy.Status = *action.Status
		if action := planThrough(f.Snapshot, engine); action.Type != ActionDeleteBindingPolicy || action.BindingPolicy.Name != "web.stage.test" {
			t.Fatalf("action %s (%s), want web.stage.test taken away", action.Type, action.Why)
		}
	})

	t.Run("with a current revision, every stage goes back to it, as spec.abort does", func(t *testing.T) {
		f := revisioned(v1alpha1.PlacementReplace, "test", "v1", "v2", map[string]string{"dev": "v2", "test": "v1", "prod": "v1"}).bound()
		f.Policy.Spec.Stages = analysed(v1alpha1.FailureAbort, errorRate(1))
		f.CombinedStatuses = append(f.CombinedStatuses, combinedStatus(f.ActiveBindingPolicy, deployment, "1"))
		f.Policy.Status.StageNamed("test").PlacedTime = ptr.To(earlier)
		f = failed(f)
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionUpdateStatus || action.Status.Phase != v1alpha1.RolloutAborted {
			t.Fatalf("action %s (%s), want the abort recorded", action.Type, action.Why)
		}
		if got := recordRevisions(action.Status); !slices.Equal(got, []string{"dev=v1", "test=v1", "prod=v1"}) {
			t.Errorf("records keep %v, want every stage back on v1", got)
		}
		if c := condition(t, action.Status, v1alpha1.ConditionProgressing); !strings.Contains(c.Message, `stage "test" failed`) {
			t.Errorf("Progressing %q, want it to say test failed", c.Message)
		}
		f.Policy.Status = *action.Status
		if action := planThrough(f.Snapshot, engine); action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.dev.v1" {
			t.Errorf("action %s (%s), want web.stage.dev.v1 placed again", action.Type, action.Why)
		}
		t.Run("and stays aborted until a new revision", func(t *testing.T) {
			f.Policy.Generation++
			if action := planThrough(f.Snapshot, engine); action.Type != ActionCreateBindingPolicy {
				t.Errorf("a new spec of the same revision: action %s (%s), want the abort to go on", action.Type, action.Why)
			}
			f.Policy.Spec.Revision.Name = "v3"
			action := planThrough(f.Snapshot, engine)
			if action.Type != ActionUpdateStatus || action.Status.Failure != nil {
				t.Fatalf("a new revision: action %s (%s), want the failure released", action.Type, action.Why)
			}
			f.Policy.Status = *action.Status
			if action := planThrough(f.Snapshot, engine); action.Type != ActionUpdateStatus || action.Status.UpdateRevision != "v3" {
				t.Errorf("then: action %s (%s), want v3's rollout started", action.Type, action.Why)
			}
		})
	})
}

func TestFailuresOfBatchedStages(t *testing.T) {
	engine := newEngine(t)
	t.Run("over the budget with onFailure Abort the stage fails", func(t *testing.T) {
		prod := fleetStage(func(s *v1alpha1.Stage) {
			s.MaxFailures = ptr.To(intstr.FromInt32(1))
			s.OnFailure = v1alpha1.FailureAbort
		})
		f := batched(prod).on("store-a", minutesAgo(30), "0").on("store-b", minutesAgo(30), "1").
			on("store-c", minutesAgo(15), "0").on("store-d", minutesAgo(15), "1")
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionUpdateStatus || action.Status.Failure == nil ||
			action.Status.Failure.Reason != v1alpha1.ReasonFailureBudgetExceeded || action.Status.Failure.Action != v1alpha1.FailureAbort {
			t.Fatalf("action %s (%s), want the failure recorded with Abort", action.Type, action.Why)
		}
		if got := clusterRecord(t, action); got.Failed != 2 {
			t.Errorf("clusters %+v, want the 2 failures counted", got)
		}
	})
	t.Run("a cluster whose failureCondition holds fails before its deadline", func(t *testing.T) {
		prod := fleetStage(func(s *v1alpha1.Stage) {
			s.MaxFailures = ptr.To(intstr.FromInt32(1))
			s.FailureCondition = `obj.results.exists(r, r.rows.exists(row, row.columns.exists(c, c.type == 'Number' && c.float == '0')))`
		})
		f := batched(prod).on("store-a", minutesAgo(1), "0").on("store-b", minutesAgo(1), "1")
		// Were store-a Progressing, its batch would wait for it.
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.on.store-c" {
			t.Fatalf("action %s (%s), want store-c placed, store-a failed within the budget", action.Type, action.Why)
		}
		prod.FailureCondition = ""
		f.Policy.Spec.Stages[2] = prod
		if action := planThrough(f.Snapshot, engine); action.Type == ActionCreateBindingPolicy {
			t.Errorf("without the failureCondition: action %s (%s), want the batch to wait for store-a", action.Type, action.Why)
		}
	})
}

// failsOnZero is a failureCondition that holds when a Deployment reports
// 0 available.
const failsOnZero = `obj.results.exists(r, r.rows.exists(row, row.columns.exists(c, c.type == 'Number' && c.float == '0')))`

// TestAnalysisValuesAreBoundedAsTheCRD keeps a measurement's values within the CRD's bound.
func TestAnalysisValuesAreBoundedAsTheCRD(t *testing.T) {
	t.Run("a value is bounded as the CRD bounds it", func(t *testing.T) {
		for _, n := range []int{100, 200, 1000} {
			for _, v := range []float64{1, 0.5, 0.123456789012345, 12345.678} {
				values := slices.Repeat([]float64{v}, n)
				if s := formatValues(values); len(s) > v1alpha1.MaxMeasurementValue || !strings.HasSuffix(s, "more]") {
					t.Errorf("%d values of %g: %d bytes (at most %d), ending %q", n, v, len(s), v1alpha1.MaxMeasurementValue, s[len(s)-12:])
				}
			}
		}
	})
}

// TestAnalysisFailureStaysHeldUntilReleased checks that neither a dropped restartedAt
// annotation nor a suspension releases a failed stage.
func TestAnalysisFailureStaysHeldUntilReleased(t *testing.T) {
	engine := newEngine(t)

	t.Run("a restartedAt annotation dropped after a restart does not release the failure", func(t *testing.T) {
		for _, onFailure := range []v1alpha1.FailureAction{v1alpha1.FailureHold, v1alpha1.FailureAbort} {
			stages := analysed(onFailure)
			stages[1].FailureCondition = failsOnZero
			f := at("test", stages...).bound().reporting(deployment, "0")
			f.Policy.Status.RestartedAt = "t1"
			writes := 0
			for range 6 {
				action := planThrough(f.Snapshot, engine)
				if action.Type != ActionUpdateStatus {
					break
				}
				writes++
				f.Policy.Status = *action.Status
			}
			if writes > 3 {
				t.Errorf("onFailure %s: %d status writes in a row, want the failure to settle", onFailure, writes)
			}
		}
	})

	t.Run("suspending and resuming a held rollout keeps it held", func(t *testing.T) {
		f := healthyTest(analysed(v1alpha1.FailureHold, errorRate(3))).with(measured(now, 0.5))
		f.Policy.Status = *Plan(f.Snapshot, engine).Status
		f.Measurements = nil
		f.Policy.Spec.Suspend, f.Policy.Generation = true, f.Policy.Generation+1
		f.Policy.Status = *Plan(f.Snapshot, engine).Status
		f.Policy.Spec.Suspend, f.Policy.Generation = false, f.Policy.Generation+1
		if action := planThrough(f.Snapshot, engine); action.Status != nil && action.Status.Failure == nil {
			t.Errorf("suspend and resume released the hold: %s", action.Why)
		}
	})
}

// TestAnalysisAbortWithdrawsToStagesThatWereDone checks what an Abort places back, and
// that it is recorded after a spec.abort that held the rollout.
func TestAnalysisAbortWithdrawsToStagesThatWereDone(t *testing.T) {
	engine := newEngine(t)

	t.Run("the withdraw places only stages that were done, even once the failed stage is gone", func(t *testing.T) {
		f := healthyTest(analysed(v1alpha1.FailureAbort, errorRate(1))).with(measured(now, 0.5))
		f.Policy.Status = *Plan(f.Snapshot, engine).Status
		f.Measurements = nil
		f.Policy.Status = *Plan(f.Snapshot, engine).Status
		f.Policy.Spec.Stages = []v1alpha1.Stage{f.Policy.Spec.Stages[0], f.Policy.Spec.Stages[2]}
		f.Policy.Generation++
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.dev" {
			t.Errorf("action %s (%s), want dev, the stage done before, placed again", action.Type, action.Why)
		}
	})

	t.Run("the withdraw is recorded after a spec.abort that held the rollout", func(t *testing.T) {
		stages := analysed(v1alpha1.FailureAbort)
		stages[1].FailureCondition = failsOnZero
		f := at("test", stages...).bound().reporting(deployment, "0")
		f.Policy.Spec.Abort = true
		f.Policy.Status = *Plan(f.Snapshot, engine).Status
		f.Policy.Spec.Abort, f.Policy.Generation = false, f.Policy.Generation+1
		failed := planThrough(f.Snapshot, engine)
		if failed.Status == nil || failed.Status.Failure == nil {
			t.Fatalf("action %s (%s), want the failure recorded", failed.Type, failed.Why)
		}
		f.Policy.Status = *failed.Status
		if action := planThrough(f.Snapshot, engine); action.Type != ActionUpdateStatus || action.Status.ActiveStage != "" {
			t.Errorf("action %s (%s), want the withdraw recorded first", action.Type, action.Why)
		}
	})
}

// TestAnalysisMeasurementsCountOnceFromPlacement checks when a measurement is due and
// that it counts once, from the stage's placement, within a budget of the
// analyses' own.
func TestAnalysisMeasurementsCountOnceFromPlacement(t *testing.T) {
	engine := newEngine(t)

	t.Run("no measurement is due, nor counts, before the stage is placed", func(t *testing.T) {
		p := atStage(newPolicy(analysed(v1alpha1.FailureAbort, errorRate(1))...), "test")
		if due := DueAnalyses(p, now); len(due) != 0 {
			t.Errorf("due %v before the stage's Binding placed anything", due)
		}
		f := fixture{newSnapshot(p, ownedBP(p, "test", types.UID("bp-test")))}.with(measured(now))
		if action := planThrough(f.Snapshot, engine); action.Status != nil && (action.Status.Failure != nil || len(action.Status.StageNamed("test").Analyses) > 0) {
			t.Errorf("a measurement before the placement was recorded: %+v", action.Status.StageNamed("test"))
		}
		placed := at("test", analysed(v1alpha1.FailureAbort, errorRate(1))...).bound()
		action := planThrough(placed.Snapshot, engine)
		if action.Status == nil || !timeEqual(action.Status.StageNamed("test").PlacedTime, now) || action.RequeueAfter != time.Second {
			t.Fatalf("action %s (%s), want placedTime recorded now and a requeue in 1s", action.Type, action.Why)
		}
	})

	t.Run("a stage approved again starts its analyses over", func(t *testing.T) {
		p := atStage(newPolicy(analysed(v1alpha1.FailureHold, errorRate(1))...), "test")
		r := p.Status.StageNamed("test")
		r.PlacedTime = ptr.To(muchEarlier)
		r.Analyses = []v1alpha1.AnalysisStatus{{Name: "error-rate", Phase: v1alpha1.AnalysisSuccessful, Successful: 1}}
		r.Phase = v1alpha1.StageAwaitingApproval
		if got := startApprovedStage(p, 1, nil, now).Status.StageNamed("test"); len(got.Analyses) != 0 || got.PlacedTime != nil {
			t.Errorf("record %+v, want no analyses and no placedTime", got)
		}
	})

	t.Run("a measurement's time counts to the second, as the status keeps it", func(t *testing.T) {
		f := healthyTest(analysed(v1alpha1.FailureHold, errorRate(3))).with(measured(metav1.NewTime(now.Add(700*time.Millisecond)), 0.01))
		first := planThrough(f.Snapshot, engine)
		f.Policy.Status = *first.Status
		if again := planThrough(f.Snapshot, engine); again.Status != nil {
			if r := errorRateRecord(t, again.Status); r.Taken() != 1 {
				t.Errorf("the same measurement counted %d times", r.Taken())
			}
		}
	})

	t.Run("the condition's evaluations leave the analyses a budget of their own", func(t *testing.T) {
		poor, err := expression.NewEngine(expression.WithBudget(1, time.Second))
		if err != nil {
			t.Fatal(err)
		}
		f := healthyTest(analysed(v1alpha1.FailureHold, errorRate(3))).with(measured(now, 0.01))
		action := planThrough(f.Snapshot, poor)
		if action.Status == nil {
			t.Fatalf("action %s (%s), want the measurement recorded", action.Type, action.Why)
		}
		if r := errorRateRecord(t, action.Status); r.Successful != 1 {
			t.Errorf("record %+v, want the measurement Successful: the condition spent its own budget only", r)
		}
	})
}

// TestAnalysisHoldDoesNotCountAgainstTheDeadline checks that a held failure's time is
// not charged to the stage's progressDeadline.
func TestAnalysisHoldDoesNotCountAgainstTheDeadline(t *testing.T) {
	engine := newEngine(t)

	t.Run("the time held does not count against the deadline", func(t *testing.T) {
		stages := analysed(v1alpha1.FailureHold, errorRate(3))
		stages[1].ProgressDeadline = &metav1.Duration{Duration: 2 * time.Hour}
		f := healthyTest(stages).with(measured(now, 0.5))
		f.Policy.Status = *Plan(f.Snapshot, engine).Status
		f.Measurements = nil
		f.Policy.Spec.Placement = v1alpha1.PlacementAccumulate
		f.Now = metav1.NewTime(now.Add(time.Hour))
		action := planThrough(f.Snapshot, engine)
		r := action.Status.StageNamed("test")
		if r.SuspendedDuration == nil || r.SuspendedDuration.Duration != time.Hour || r.PlacedTime != nil {
			t.Errorf("record %+v, want the hour held in suspendedDuration and the analyses to start over", r)
		}
	})
}
