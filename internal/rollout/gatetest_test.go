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
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// planVerdict is what a Plan of a snapshot whose active stage is dev says
// of dev's gates, read from its action as `kubectl stager record` reads it
// from the status: the failure, a blocking reason, the advance, or what
// the stage waits for.
func planVerdict(action Action) (GateOutcome, string, string, error) {
	switch action.Type {
	case ActionCreateBindingPolicy:
		if action.BindingPolicy != nil && action.BindingPolicy.Labels[v1alpha1.StageLabel] == "prod" {
			return GateDone, "", "", nil // the handover: dev is done
		}
	case ActionUpdateStatus:
		status := action.Status
		if f := status.Failure; f != nil && f.Stage == "dev" {
			if f.Reason == v1alpha1.ReasonAnalysisInconclusive {
				return GateInconclusive, f.Reason, f.Message, nil
			}
			return GateFailed, f.Reason, f.Message, nil
		}
		progressing := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionProgressing)
		if progressing == nil {
			break
		}
		if slices.Contains([]string{v1alpha1.ReasonInvalidExpression, v1alpha1.ReasonExpressionTooCostly, v1alpha1.ReasonEvaluationError},
			progressing.Reason) {
			return GateBlocked, progressing.Reason, progressing.Message, nil
		}
		if record := status.StageNamed("dev"); record != nil && record.Phase == v1alpha1.StageActive && status.ActiveStage == "dev" {
			return GateNotDone, progressing.Reason, record.Message, nil
		}
		if record := status.StageNamed("dev"); record != nil && record.Phase == v1alpha1.StageSucceeded {
			return GateDone, v1alpha1.ReasonStageAdvanced, record.Message, nil
		}
	}
	return "", "", "", fmt.Errorf("no verdict on dev in %s: %s", action.Type, action.Why)
}

// TestJudgeGatesAgreesWithPlan checks, on random stages (filters,
// conditions and failureConditions that select, hold, fail, do not
// compile or fail to evaluate) and random placements and statuses, that
// JudgeGates says of the active stage what Plan writes of it: the same
// outcome and reason, and a message that Plan's contains (Plan prefixes
// a blocking one with the stage).
func TestJudgeGatesAgreesWithPlan(t *testing.T) {
	engine := newEngine(t)
	seen := map[GateOutcome]int{}
	defer func() { t.Logf("outcomes: %v", seen) }()
	failing := `obj.results.exists(r, r.rows.exists(row, row.columns.exists(c, c.float == '-1')))`
	rapid.Check(t, func(rt *rapid.T) {
		dev := stageWith("dev",
			rapid.SampledFrom([]string{"", deploymentsFilter, "downsyncClause.resource == 'nothing'", "downsyncClause.nosuch("}).Draw(rt, "filter"),
			rapid.SampledFrom([]string{"", seedCondition, "obj.nosuch(", "obj.results[5].name == 'x'"}).Draw(rt, "condition"))
		dev.FailureCondition = rapid.SampledFrom([]string{"", failing}).Draw(rt, "failureCondition")
		var answers map[string][]GateAnswer
		if rapid.Bool().Draw(rt, "analysis") {
			a := v1alpha1.Analysis{Name: "error-rate", Provider: "prom", Query: "q", Count: rapid.Int32Range(1, 2).Draw(rt, "count"),
				SuccessCondition: "result.size() > 0 && result.all(v, v < 0.01)",
				FailureCondition: rapid.SampledFrom([]string{"", "result.exists(v, v >= 0.05)"}).Draw(rt, "analysis failure"),
				FailureLimit:     rapid.Int32Range(0, 1).Draw(rt, "failureLimit"), DryRun: rapid.IntRange(0, 5).Draw(rt, "dryRun") == 0}
			dev.Analysis = []v1alpha1.Analysis{a}
			answers = map[string][]GateAnswer{}
			for i, n := 0, rapid.IntRange(0, 3).Draw(rt, "answers"); i < n; i++ {
				ans := GateAnswer{Time: earlier.Add(time.Duration(i+1) * time.Second)}
				if v := rapid.SampledFrom([]float64{0.001, 0.03, 0.07, -1}).Draw(rt, "value"); v >= 0 {
					ans.Values = []float64{v}
				} else {
					ans.Error = "connection refused"
				}
				answers[a.Name] = append(answers[a.Name], ans)
			}
		}
		f := at("dev", dev, stage("prod"))
		if answers != nil {
			f.Policy.Status.StageNamed("dev").PlacedTime = ptr.To(earlier)
			for _, ans := range answers["error-rate"] {
				f.Measurements = append(f.Measurements, Measurement{Stage: "dev", Analysis: "error-rate", Time: metav1.NewTime(ans.Time),
					Values: ans.Values, Error: ans.Error})
			}
		}
		if rapid.Bool().Draw(rt, "bound") {
			f = f.bound()
			if rapid.IntRange(0, 9).Draw(rt, "nowhere") == 0 {
				f = f.placingNowhere()
			}
			for _, o := range []workloadObject{deployment, configMap, namespaceObj} {
				if count := rapid.SampledFrom([]string{"", "0", "1", "-1"}).Draw(rt, "count "+o.Name); count != "" {
					f = f.reporting(o, count)
				}
			}
		}
		outcome, reason, message, err := planVerdict(Plan(f.Snapshot, engine))
		if err != nil {
			rt.Fatal(err)
		}
		seen[outcome]++
		v, err := JudgeGates(engine, f.Policy, "dev", f.Binding, f.CombinedStatuses, answers, "unused", f.Now.Time)
		if err != nil {
			rt.Fatal(err)
		}
		if v.Outcome != outcome || v.Reason != reason && reason != "" || !containsOrEqual(message, v.Message) {
			rt.Fatalf("Plan: %s %s: %q\nJudgeGates: %s %s: %q", outcome, reason, message, v.Outcome, v.Reason, v.Message)
		}
	})
}

// containsOrEqual reports whether planned holds judged (a blocking
// message is prefixed), or is empty (a handover writes no message).
func containsOrEqual(planned, judged string) bool {
	return planned == "" || planned == judged || len(planned) > len(judged) && planned[len(planned)-len(judged):] == judged
}

// TestJudgeGatesRefusesBatchedStage checks that a stage placed in batches,
// whose gates Plan judges per cluster (rule 15), is refused rather than
// judged as one placement.
func TestJudgeGatesRefusesBatchedStage(t *testing.T) {
	dev := stageWith("dev", "", seedCondition)
	dev.MaxConcurrency = ptr.To(intstr.FromInt32(1))
	f := at("dev", dev, stage("prod")).bound().reporting(deployment, "1")
	_, err := JudgeGates(newEngine(t), f.Policy, "dev", f.Binding, f.CombinedStatuses, nil, "unused", f.Now.Time)
	if err == nil || err.Error() != `stage "dev" of `+testPolicyName+` is placed in batches: gate tests do not judge a batched stage` {
		t.Errorf("error %v", err)
	}
}
