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

package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// TestThreeStageRollout walks a dev -> test -> prod rollout in one space: each
// stage waits while its WECs do not report the Deployment available, moves on
// when they do (a ConfigMap that never becomes available is filtered out),
// and the rollout ends with only the prod BindingPolicy placed on the prod
// clusters.
func TestThreeStageRollout(t *testing.T) {
	s := suite.wds1
	const name = "rollout"
	createWorkload(t, s, name)
	create(t, s, newPolicy(name, name))

	policies(s).WaitForActiveStage(t, name, "dev")
	waitForBindingPolicies(t, s, name, "dev")
	policies(s).WaitForCondition(t, name, v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonConditionNotMet)
	if got, want := destinations(t, s, v1alpha1.StagePlacement(name, "dev").String()), []string{"dev1", "dev2"}; !slices.Equal(got, want) {
		t.Fatalf("dev Binding destinations = %v, want %v", got, want)
	}
	environment.Consistently(t, 2*time.Second, "the policy staying in dev while dev is not available", func() error {
		if p := policies(s).Get(t, name); p.Status.ActiveStage != "dev" {
			return fmt.Errorf("active stage is %q", p.Status.ActiveStage)
		}
		return nil
	})

	s.openGate(name, "dev")
	policy := policies(s).WaitForActiveStage(t, name, "test")
	waitForBindingPolicies(t, s, name, "test")
	if got, want := destinations(t, s, v1alpha1.StagePlacement(name, "test").String()), []string{"test1"}; !slices.Equal(got, want) {
		t.Fatalf("test Binding destinations = %v, want %v", got, want)
	}
	dev := policy.Status.Stages[0]
	if dev.Phase != v1alpha1.StageSucceeded || dev.CompletionTime == nil || dev.StartTime == nil {
		t.Fatalf("dev stage record = %+v, want Succeeded with start and completion times", dev)
	}
	if !strings.Contains(dev.Message, "condition holds for all 1 object(s)") {
		t.Fatalf("dev stage message = %q, want it to say the condition held for the 1 filtered object", dev.Message)
	}

	s.openGate(name, "test")
	policies(s).WaitForActiveStage(t, name, "prod")
	policy = policies(s).WaitForCondition(t, name, v1alpha1.ConditionCompleted, metav1.ConditionTrue, v1alpha1.ReasonRolloutCompleted)
	waitForBindingPolicies(t, s, name, "prod")
	if got, want := destinations(t, s, v1alpha1.StagePlacement(name, "prod").String()), []string{"prod1", "prod2"}; !slices.Equal(got, want) {
		t.Fatalf("prod Binding destinations = %v, want %v", got, want)
	}
	if policy.Status.Phase != v1alpha1.RolloutCompleted {
		t.Fatalf("phase = %q, want Completed", policy.Status.Phase)
	}
	for i, want := range []v1alpha1.StagePhase{v1alpha1.StageSucceeded, v1alpha1.StageSucceeded, v1alpha1.StageSucceeded} {
		if got := policy.Status.Stages[i].Phase; got != want {
			t.Fatalf("stage %d phase = %q, want %q (%s)", i, got, want, policytest.Describe(policy))
		}
	}
	if policy.Status.ObservedGeneration != policy.Generation {
		t.Fatalf("observedGeneration = %d, want %d", policy.Status.ObservedGeneration, policy.Generation)
	}

	// The rollout's metrics: the active stage, two completed stages, condition evaluations.
	labels := map[string]string{"space": s.Name, "policy": name}
	waitFor(t, "the metrics of the completed rollout", func() error {
		if v, ok := metricValue(t, "stager_policy_active_stage", map[string]string{"space": s.Name, "policy": name, "stage": "prod"}); !ok || v != 1 {
			return fmt.Errorf("stager_policy_active_stage{stage=prod} = %v (present %t)", v, ok)
		}
		if v, _ := metricValue(t, "stager_policy_active_stage_index", labels); v != 2 {
			return fmt.Errorf("stager_policy_active_stage_index = %v, want 2", v)
		}
		for _, stage := range []string{"dev", "test"} {
			if v, _ := metricValue(t, "stager_stage_transitions_total", map[string]string{"space": s.Name, "policy": name, "stage": stage}); v != 1 {
				return fmt.Errorf("stager_stage_transitions_total{stage=%s} = %v, want 1", stage, v)
			}
		}
		if v, _ := metricValue(t, "stager_condition_evaluations_total", map[string]string{"space": s.Name, "result": "true"}); v < 2 {
			return fmt.Errorf("stager_condition_evaluations_total{result=true} = %v, want at least 2", v)
		}
		return nil
	})
	if n := series(t, map[string]string{"space": s.Name, "policy": name, "stage": "dev"}); n != 2 {
		t.Fatalf("%d series for the dev stage, want only its transition counter and its duration histogram (no stale active-stage series)", n)
	}

	waitFor(t, "one StageStarted Event per stage", func() error {
		counts := policies(s).EventCounts(t, policy)
		for _, stage := range []string{"dev", "test", "prod"} {
			if n := counts[fmt.Sprintf("StageStarted/stage %q started", stage)]; n != 1 {
				return fmt.Errorf("%d StageStarted Events for %s; all: %v", n, stage, counts)
			}
		}
		return nil
	})
}

// TestInvalidExpressionIsReportedAndRecovers checks that an expression that
// does not compile blocks the rollout with a status naming the stage and the
// expression, places nothing, and that fixing the spec resumes the rollout.
func TestInvalidExpressionIsReportedAndRecovers(t *testing.T) {
	s := suite.wds2
	const name = "invalid-expression"
	createWorkload(t, s, name)
	policy := newPolicy(name, name)
	policy.Spec.Stages[0].Condition = "obj.results.exists(r, r.name == "
	create(t, s, policy)

	policy = policies(s).WaitForCondition(t, name, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonInvalidExpression)
	msg := conditionOf(policy, v1alpha1.ConditionReady).Message
	if !strings.Contains(msg, `stage "dev"`) || !strings.Contains(msg, "obj.results.exists(r, r.name == ") {
		t.Fatalf("Ready message %q does not name the stage and the expression", msg)
	}
	if policy.Status.Phase != v1alpha1.RolloutBlocked {
		t.Fatalf("phase = %q, want Blocked", policy.Status.Phase)
	}
	if got := bindingPolicies(t, s, name); len(got) != 0 {
		t.Fatalf("a blocked policy placed BindingPolicies %v", got)
	}

	updateObject(t, s, name, func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Stages[0].Condition = policytest.Available })
	policies(s).WaitForCondition(t, name, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonBindingPolicyInSync)
	waitForBindingPolicies(t, s, name, "dev")
	s.openGate(name, "dev")
	policies(s).WaitForActiveStage(t, name, "test")
}

// TestEvaluationErrorIsReported checks that a condition that compiles but
// fails on the CombinedStatus is reported and blocks only that policy.
func TestEvaluationErrorIsReported(t *testing.T) {
	s := suite.wds2
	const name = "evaluation-error"
	createWorkload(t, s, name)
	policy := newPolicy(name, name)
	policy.Spec.Stages[0].Condition = "obj.results[0].rows[0].columns[0].missing == 'x'"
	create(t, s, policy)

	policy = policies(s).WaitForCondition(t, name, v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonEvaluationError)
	if msg := conditionOf(policy, v1alpha1.ConditionProgressing).Message; !strings.Contains(msg, `stage "dev"`) || !strings.Contains(msg, "missing") {
		t.Fatalf("Progressing message %q does not name the stage and the failure", msg)
	}
	if msg := conditionOf(policy, v1alpha1.ConditionProgressing).Message; strings.Count(msg, `stage "dev"`) != 1 {
		t.Fatalf("Progressing message %q does not name the stage exactly once", msg)
	}
	if policy.Status.ActiveStage != "dev" {
		t.Fatalf("active stage = %q, want dev", policy.Status.ActiveStage)
	}
}

// TestDeletionLeavesNothingBehind deletes a policy in the middle of a rollout:
// the finalizer removes every BindingPolicy it placed before it goes.
func TestDeletionLeavesNothingBehind(t *testing.T) {
	s := suite.wds1
	const name = "deletion"
	createWorkload(t, s, name)
	create(t, s, newPolicy(name, name))
	policies(s).WaitForActiveStage(t, name, "dev")
	waitForBindingPolicies(t, s, name, "dev")
	if got := policies(s).Get(t, name).Finalizers; !slices.Contains(got, v1alpha1.CleanupFinalizer) {
		t.Fatalf("finalizers = %v, want %s", got, v1alpha1.CleanupFinalizer)
	}
	s.openGate(name, "dev")
	policies(s).WaitForActiveStage(t, name, "test")
	waitForBindingPolicies(t, s, name, "test")

	policies(s).Delete(t, name)
	if got := bindingPolicies(t, s, name); len(got) != 0 {
		t.Fatalf("BindingPolicies left behind: %v", got)
	}
	waitFor(t, "the deleted policy's metric series to vanish", func() error {
		if n := series(t, map[string]string{"space": s.Name, "policy": name}); n != 0 {
			return fmt.Errorf("%d series left", n)
		}
		return nil
	})
}

// TestSpecChangeUpdatesBindingPolicy changes the active stage's clusters and
// checks that the BindingPolicy, and so the Binding, follow.
func TestSpecChangeUpdatesBindingPolicy(t *testing.T) {
	s := suite.wds1
	const name = "spec-change"
	createWorkload(t, s, name)
	create(t, s, newPolicy(name, name))
	policies(s).WaitForActiveStage(t, name, "dev")
	bp := v1alpha1.StagePlacement(name, "dev").String()
	waitForDestinations(t, s, bp, "the dev Binding", "dev1", "dev2")

	updateObject(t, s, name, func(p *v1alpha1.StagedBindingPolicy) {
		p.Spec.Stages[0].ClusterSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"env": "test"}}}
	})
	waitForDestinations(t, s, bp, "the dev Binding to follow the new clusterSelectors", "test1")
	waitFor(t, "observedGeneration to catch up", func() error {
		p := policies(s).Get(t, name)
		if p.Status.ObservedGeneration != p.Generation {
			return fmt.Errorf("observedGeneration %d, generation %d", p.Status.ObservedGeneration, p.Generation)
		}
		return nil
	})
}

// TestRemovedActiveStageRestartsRollout removes the active stage from the
// spec: the rollout starts again from the first stage, with a Warning Event.
func TestRemovedActiveStageRestartsRollout(t *testing.T) {
	s := suite.wds2
	const name = "removed-stage"
	createWorkload(t, s, name)
	create(t, s, newPolicy(name, name))
	policies(s).WaitForActiveStage(t, name, "dev")
	s.openGate(name, "dev")
	policies(s).WaitForActiveStage(t, name, "test")

	updateObject(t, s, name, func(p *v1alpha1.StagedBindingPolicy) {
		p.Spec.Stages = []v1alpha1.Stage{p.Spec.Stages[0], p.Spec.Stages[2]}
	})
	// dev's gate is open, so the restarted rollout goes through dev again and on to prod.
	policy := policies(s).WaitForActiveStage(t, name, "prod")
	waitForBindingPolicies(t, s, name, "prod")
	waitFor(t, "the ActiveStageReset Event", func() error {
		for reason, n := range policies(s).EventCounts(t, policy) {
			if strings.HasPrefix(reason, "ActiveStageReset/") && n == 1 {
				return nil
			}
		}
		return fmt.Errorf("no ActiveStageReset Event: %v", policies(s).EventCounts(t, policy))
	})
}

func conditionOf(policy *v1alpha1.StagedBindingPolicy, conditionType string) metav1.Condition {
	for _, c := range policy.Status.Conditions {
		if c.Type == conditionType {
			return c
		}
	}
	return metav1.Condition{}
}
