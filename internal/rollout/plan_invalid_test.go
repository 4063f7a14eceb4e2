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
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
)

// ---------------------------------------------------------------------------
// Rule 5: expressions that do not compile
// ---------------------------------------------------------------------------

func TestPlanInvalidExpression(t *testing.T) {
	engine := newEngine(t)
	const (
		badFilter    = `downsyncClause.resourc == 'deployments'` // no such field
		badCondition = `obj.results.exists(r, r.name ==)`        // syntax error
		notBool      = `obj.results.size()`
	)

	tests := []struct {
		name string
		snap *Snapshot
		// wantNamed are substrings the Ready message must contain.
		wantNamed []string
	}{
		{name: "filter of the first stage, rollout not started",
			snap:      newSnapshot(newPolicy(stageWith("dev", badFilter, seedCondition), stage("test"), stage("prod"))),
			wantNamed: []string{`stage "dev"`, badFilter}},
		{name: "condition of a later stage, BindingPolicy missing",
			snap:      newSnapshot(atStage(newPolicy(stage("dev"), stage("test"), stageWith("prod", "", badCondition)), "dev")),
			wantNamed: []string{`stage "prod"`, badCondition}},
		{name: "condition of a later stage, would otherwise advance",
			snap: at("dev", stage("dev"), stage("test"), stageWith("prod", "", badCondition)).
				bound().reporting(deployment, "1").Snapshot,
			wantNamed: []string{`stage "prod"`, badCondition}},
		{name: "would otherwise delete the previous stage's BindingPolicy",
			snap: at("test", stage("dev"), stage("test"), stageWith("prod", deploymentsFilter, notBool)).
				bound().alsoBP(ownedBP(newPolicy(), "dev", "bp-dev")).Snapshot,
			wantNamed: []string{`stage "prod"`, notBool, "bool"}},
		{name: "two stages broken, both named",
			snap: at("test", stageWith("dev", badFilter, ""), stage("test"), stageWith("prod", "", badCondition)).
				with(func(s *Snapshot) { s.ActiveBindingPolicy.Spec.ClusterSelectors = nil }).Snapshot,
			wantNamed: []string{`stage "dev"`, badFilter, `stage "prod"`, badCondition}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.snap.Policy.Status.DeepCopy()
			got := Plan(tt.snap, engine)
			if got.Type != ActionUpdateStatus {
				t.Fatalf("Plan() = %s (%s), want UpdateStatus", got.Type, got.Why)
			}
			if got.BindingPolicy != nil {
				t.Errorf("Plan() names BindingPolicy %s; nothing may be created, updated or deleted", got.BindingPolicy.Name)
			}
			s := got.Status
			if s.Phase != v1alpha1.RolloutBlocked {
				t.Errorf("phase = %q, want Blocked", s.Phase)
			}
			if s.ActiveStage != before.ActiveStage || !equality.Semantic.DeepEqual(s.Stages, before.Stages) {
				t.Errorf("active stage / records changed:\n%s", diff.Diff(before.Stages, s.Stages))
			}
			ready := condition(t, s, v1alpha1.ConditionReady)
			if ready.Status != metav1.ConditionFalse || ready.Reason != v1alpha1.ReasonInvalidExpression {
				t.Errorf("Ready = %s/%s, want False/%s", ready.Status, ready.Reason, v1alpha1.ReasonInvalidExpression)
			}
			for _, sub := range tt.wantNamed {
				if !strings.Contains(ready.Message, sub) {
					t.Errorf("Ready message %q does not contain %q", ready.Message, sub)
				}
			}
			if p := condition(t, s, v1alpha1.ConditionProgressing); p.Status != metav1.ConditionFalse || p.Reason != v1alpha1.ReasonInvalidExpression {
				t.Errorf("Progressing = %s/%s, want False/%s", p.Status, p.Reason, v1alpha1.ReasonInvalidExpression)
			}
			if keys := eventKeys(got.Events); !slices.Equal(keys, []string{"Warning/InvalidExpression"}) {
				t.Errorf("events = %v, want [Warning/InvalidExpression]", keys)
			}

			again := replan(t, tt.snap, engine, got)
			if again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("with the Blocked status written, Plan() = %s with events %v (%s), want None without events",
					again.Type, eventKeys(again.Events), again.Why)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Rule 3: a spec without stages
// ---------------------------------------------------------------------------

// planNoPanic is Plan, failing the test instead of crashing the binary when
// Plan panics.
func planNoPanic(t *testing.T, snap *Snapshot, engine *expression.Engine) (action Action) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("Plan() panicked: %v", r)
		}
	}()
	return Plan(snap, engine)
}

func TestPlanNoStages(t *testing.T) {
	engine := newEngine(t)
	// noStages drops the stages of the spec, as a hand-made object or one
	// written before the CRD required a stage may.
	noStages := func(p *v1alpha1.StagedBindingPolicy) *v1alpha1.StagedBindingPolicy {
		p.Spec.Stages = nil
		return p
	}
	emptyStages := func(p *v1alpha1.StagedBindingPolicy) *v1alpha1.StagedBindingPolicy {
		p.Spec.Stages = []v1alpha1.Stage{}
		return p
	}
	p := newPolicy()

	tests := []struct {
		name   string
		snap   *Snapshot
		want   ActionType
		wantBP string // the BindingPolicy to delete
	}{
		{name: "rollout not started",
			snap: newSnapshot(noStages(newPolicy())),
			want: ActionUpdateStatus},
		{name: "empty list, rollout not started",
			snap: newSnapshot(emptyStages(newPolicy())),
			want: ActionUpdateStatus},
		{name: "stages removed mid-rollout: BindingPolicies stay",
			snap: newSnapshot(noStages(atStage(newPolicy(), "test")), ownedBP(p, "dev", "bp-dev"), ownedBP(p, "test", "bp-test")),
			want: ActionUpdateStatus},
		{name: "stages removed from the final stage",
			snap: newSnapshot(emptyStages(atStage(newPolicy(), "prod")), ownedBP(p, "prod", "bp-prod")),
			want: ActionUpdateStatus},
		{name: "finalizer missing comes first",
			snap: newSnapshot(func() *v1alpha1.StagedBindingPolicy { q := noStages(newPolicy()); q.Finalizers = nil; return q }()),
			want: ActionAddFinalizer},
		{name: "being deleted: the BindingPolicies still go",
			snap: newSnapshot(func() *v1alpha1.StagedBindingPolicy {
				q := noStages(atStage(newPolicy(), "test"))
				q.DeletionTimestamp = ptr.To(earlier)
				return q
			}(), ownedBP(p, "test", "bp-test")),
			want: ActionDeleteBindingPolicy, wantBP: "web.stage.test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.snap.Policy.Status.DeepCopy()
			got := planNoPanic(t, tt.snap, engine)
			if got.Type != tt.want {
				t.Fatalf("Plan() = %s (%s), want %s", got.Type, got.Why, tt.want)
			}
			if tt.want == ActionDeleteBindingPolicy {
				if got.BindingPolicy == nil || got.BindingPolicy.Name != tt.wantBP {
					t.Errorf("Plan() deletes %v, want %s", got.BindingPolicy, tt.wantBP)
				}
				return
			}
			if got.BindingPolicy != nil {
				t.Errorf("Plan() names BindingPolicy %s; nothing may be created, updated or deleted", got.BindingPolicy.Name)
			}
			if tt.want != ActionUpdateStatus {
				return
			}
			s := got.Status
			if s.Phase != v1alpha1.RolloutBlocked || s.ObservedGeneration != testGeneration {
				t.Errorf("phase/observedGeneration = %s/%d, want Blocked/%d", s.Phase, s.ObservedGeneration, testGeneration)
			}
			if s.ActiveStage != before.ActiveStage || !equality.Semantic.DeepEqual(s.Stages, before.Stages) {
				t.Errorf("active stage / records changed:\n%s", diff.Diff(before, s))
			}
			for _, ct := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionProgressing} {
				if c := condition(t, s, ct); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonNoStages {
					t.Errorf("%s = %s/%s, want False/%s", ct, c.Status, c.Reason, v1alpha1.ReasonNoStages)
				}
			}
			if c := condition(t, s, v1alpha1.ConditionCompleted); c.Status != metav1.ConditionFalse {
				t.Errorf("Completed = %s, want False", c.Status)
			}
			if keys := eventKeys(got.Events); !slices.Equal(keys, []string{"Warning/NoStages"}) {
				t.Errorf("events = %v, want [Warning/NoStages]", keys)
			}

			next := cloneSnapshot(tt.snap)
			next.Policy.Status = *s.DeepCopy()
			next.Now = metav1.NewTime(now.Add(time.Minute))
			if again := planNoPanic(t, next, engine); again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("with the Blocked status written, Plan() = %s with events %v (%s), want None without events",
					again.Type, eventKeys(again.Events), again.Why)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Rule 5: too costly expressions block the rollout with ExpressionTooCostly
// ---------------------------------------------------------------------------

func TestPlanTooCostlyExpressions(t *testing.T) {
	const (
		// hostileCondition is rejected by the compile-time estimate.
		hostileCondition = `obj.results.exists(r, lists.range(300000).map(i, 'x').size() == 0)`
		// costlyCondition passes the estimate and exceeds the runtime cost limit.
		costlyCondition = `lists.range(100000).map(i, 'x').size() == 0`
	)
	tinyBudget, err := expression.NewEngine(expression.WithBudget(1, time.Minute))
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	instant, err := expression.NewEngine(expression.WithEvalTimeout(time.Nanosecond))
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	// cel-go charges replace by the bytes of its result: building
	// superLinear's strings costs 1.13 M, which this limit leaves room for.
	unestimated, err := expression.NewEngine(expression.WithEstimatedCostLimit(math.MaxUint64), expression.WithCostLimit(1_500_000))
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	// A call whose worst case is above the cost limit on its own: refused
	// before it runs (an indexOf of a long string and substring).
	bigString := `'aaaaaaaaaa'` + strings.Repeat(`.replace('a', 'aaaaaaaaaa')`, 5)
	substring := `'aaaaaaaaaa'` + strings.Repeat(`.replace('a', 'aaaaaaaaaa')`, 3)
	superLinear := bigString + `.indexOf(` + substring + ` + 'b') >= 0`
	tests := []struct {
		name        string
		engine      *expression.Engine
		snap        *Snapshot
		wantMessage string
	}{
		{name: "condition rejected at compile time", engine: newEngine(t),
			snap:        at("dev", stageWith("dev", "", hostileCondition), stage("test")).bound().reporting(deployment, "1").Snapshot,
			wantMessage: "estimated worst-case cost"},
		{name: "filter rejected at compile time", engine: newEngine(t),
			snap:        at("dev", stageWith("dev", `downsyncClause.name.replace('', downsyncClause.name).replace('', downsyncClause.name) == ''`, seedCondition), stage("test")).bound().Snapshot,
			wantMessage: "estimated worst-case cost"},
		{name: "condition stopped by the runtime cost limit", engine: newEngine(t),
			snap:        at("dev", stageWith("dev", deploymentsFilter, costlyCondition), stage("test")).bound().reporting(deployment, "1").Snapshot,
			wantMessage: "cost limit exceeded"},
		{name: "condition stopped by the evaluation timeout", engine: instant,
			snap:        at("dev", stageWith("dev", deploymentsFilter, `lists.range(1000).all(i, i >= 0)`), stage("test")).bound().reporting(deployment, "1").Snapshot,
			wantMessage: "timed out"},
		{name: "a super-linear call refused before it runs", engine: unestimated,
			snap:        at("dev", stageWith("dev", deploymentsFilter, superLinear), stage("test")).bound().reporting(deployment, "1").Snapshot,
			wantMessage: "it was not run"},
		{name: "per-reconcile budget spent", engine: tinyBudget,
			snap: at("dev", stageWith("dev", "", seedCondition), stage("test")).bound().
				reporting(deployment, "1").reporting(configMap, "1").reporting(namespaceObj, "1").Snapshot,
			wantMessage: "budget"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.snap, tt.engine)
			if got.Type != ActionUpdateStatus {
				t.Fatalf("Plan() = %s (%s), want UpdateStatus", got.Type, got.Why)
			}
			if got.Status.Phase != v1alpha1.RolloutBlocked {
				t.Errorf("phase = %s, want Blocked", got.Status.Phase)
			}
			c := condition(t, got.Status, v1alpha1.ConditionProgressing)
			if c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonExpressionTooCostly {
				t.Errorf("Progressing = %s/%s, want False/%s", c.Status, c.Reason, v1alpha1.ReasonExpressionTooCostly)
			}
			if !strings.Contains(c.Message, tt.wantMessage) || !strings.Contains(c.Message, `stage "dev"`) {
				t.Errorf("Progressing message %q does not name the stage and say %q", c.Message, tt.wantMessage)
			}
			if !strings.Contains(c.Message, `condition "`) && !strings.Contains(c.Message, `filter "`) {
				t.Errorf("Progressing message %q does not quote the expression", c.Message)
			}
			if tt.wantMessage != "estimated worst-case cost" && !strings.Contains(c.Message, "(on the CombinedStatus of ") {
				t.Errorf("Progressing message %q does not name the object the evaluation was stopped on", c.Message)
			}
			if ready := condition(t, got.Status, v1alpha1.ConditionReady); tt.wantMessage == "estimated worst-case cost" &&
				(ready.Reason != v1alpha1.ReasonExpressionTooCostly || !strings.Contains(ready.Message, tt.wantMessage)) {
				t.Errorf("Ready = %s %q, want %s saying %q", ready.Reason, ready.Message, v1alpha1.ReasonExpressionTooCostly, tt.wantMessage)
			}
			if keys := eventKeys(got.Events); !slices.Equal(keys, []string{"Warning/" + v1alpha1.ReasonExpressionTooCostly}) {
				t.Errorf("events = %v, want [Warning/%s]", keys, v1alpha1.ReasonExpressionTooCostly)
			}
			if again := replan(t, tt.snap, tt.engine, got); again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("with the status written, Plan() = %s with events %v (%s), want None without events",
					again.Type, eventKeys(again.Events), again.Why)
			}
		})
	}
}

// TestPlanInvalidAndTooCostly checks that an expression that does not compile
// wins over one that is too costly: the reason is InvalidExpression, and the
// message names both.
func TestPlanInvalidAndTooCostly(t *testing.T) {
	engine := newEngine(t)
	snap := at("dev", stageWith("dev", "", `obj.results.exists(r, lists.range(300000).map(i, 'x').size() == 0)`),
		stageWith("test", "", `obj.results.exists(r, r.name ==)`)).bound().Snapshot
	got := Plan(snap, engine)
	if got.Type != ActionUpdateStatus {
		t.Fatalf("Plan() = %s (%s), want UpdateStatus", got.Type, got.Why)
	}
	c := condition(t, got.Status, v1alpha1.ConditionReady)
	if c.Reason != v1alpha1.ReasonInvalidExpression {
		t.Errorf("Ready reason = %s, want %s", c.Reason, v1alpha1.ReasonInvalidExpression)
	}
	if !strings.Contains(c.Message, "estimated worst-case cost") || !strings.Contains(c.Message, "compile error") {
		t.Errorf("Ready message %q does not name both failures", c.Message)
	}
}
