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

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// ---------------------------------------------------------------------------
// Rule 17: advancing to the next stage
// ---------------------------------------------------------------------------

func TestPlanAdvances(t *testing.T) {
	engine := newEngine(t)

	tests := []struct {
		name     string
		snap     *Snapshot
		from, to string
	}{
		{name: "seed condition with root obj",
			snap: at("dev").bound().reporting(deployment, "1").Snapshot,
			from: "dev", to: "test"},
		{name: "seed condition with root combinedStatus",
			snap: at("dev", stageWith("dev", deploymentsFilter, seedConditionCS), stage("test")).
				bound().reporting(deployment, "1").Snapshot,
			from: "dev", to: "test"},
		{name: "filter selects deployments, a failing configmap does not matter",
			snap: at("dev").bound().reporting(deployment, "1").reporting(configMap, "0").reporting(namespaceObj, "0").Snapshot,
			from: "dev", to: "test"},
		{name: "no filter, every object passes",
			snap: at("dev", stageWith("dev", "", seedCondition), stage("test")).bound().
				reporting(deployment, "1").reporting(configMap, "1").reporting(namespaceObj, "1").Snapshot,
			from: "dev", to: "test"},
		{name: "cluster-scoped object selected and passing",
			snap: at("dev", stageWith("dev", `downsyncClause.namespace == ''`, seedCondition), stage("test")).bound().
				reporting(deployment, "0").reporting(namespaceObj, "1").Snapshot,
			from: "dev", to: "test"},
		{name: "stage without condition, once its Binding is observed",
			snap: at("dev", stageWith("dev", "", ""), stage("test")).bound().Snapshot,
			from: "dev", to: "test"},
		{name: "stage without condition but with a filter selecting nothing",
			snap: at("dev", stageWith("dev", `downsyncClause.resource == 'statefulsets'`, ""), stage("test")).bound().Snapshot,
			from: "dev", to: "test"},
		{name: "middle stage to the final one, earlier BindingPolicy still there",
			snap: at("test").bound().reporting(deployment, "1").alsoBP(ownedBP(newPolicy(), "dev", "bp-dev")).Snapshot,
			from: "test", to: "prod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.snap.Policy.Status.DeepCopy()
			// The next stage is placed first, marked as handed over from
			// this start of the stage that is done.
			handover := Plan(tt.snap, engine)
			if handover.Type != ActionCreateBindingPolicy || handover.BindingPolicy.Name != "web.stage."+tt.to {
				t.Fatalf("Plan() = %s (%s), want CreateBindingPolicy web.stage.%s", handover.Type, handover.Why, tt.to)
			}
			if mark, want := handover.BindingPolicy.Annotations[v1alpha1.HandedOverFromAnnotation], SealedMark(tt.snap.Policy.UID, tt.from, earlier.Time); mark != want {
				t.Errorf("%s = %q, want %q", v1alpha1.HandedOverFromAnnotation, mark, want)
			}
			if handover.Status != nil || len(handover.Events) != 0 {
				t.Errorf("the handover writes a status or Events: %+v", handover)
			}
			// Then the status records the advance.
			placedSnap := placed(tt.snap, handover.BindingPolicy)
			got := Plan(placedSnap, engine)
			if got.Type != ActionUpdateStatus {
				t.Fatalf("Plan() = %s (%s), want UpdateStatus", got.Type, got.Why)
			}
			if got.BindingPolicy != nil {
				t.Errorf("Plan() names BindingPolicy %s", got.BindingPolicy.Name)
			}
			s := got.Status
			if s.ActiveStage != tt.to || s.Phase != v1alpha1.RolloutProgressing {
				t.Fatalf("activeStage/phase = %s/%s, want %s/Progressing", s.ActiveStage, s.Phase, tt.to)
			}
			if len(s.Stages) != len(tt.snap.Policy.Spec.Stages) {
				t.Fatalf("%d stage records, want %d", len(s.Stages), len(tt.snap.Policy.Spec.Stages))
			}
			reachedTo := false
			for i, r := range s.Stages {
				old := before.Stages[i]
				switch {
				case r.Name == tt.from:
					if r.Phase != v1alpha1.StageSucceeded || !timeEqual(r.CompletionTime, now) || !timeEqual(r.StartTime, earlier) ||
						r.BindingPolicy != "web.stage."+tt.from || r.Message == "" {
						t.Errorf("record of %s = %+v, want Succeeded at %v, started %v, with a message", r.Name, r, now, earlier)
					}
				case r.Name == tt.to:
					reachedTo = true
					if r.Phase != v1alpha1.StageActive || !timeEqual(r.StartTime, now) || r.CompletionTime != nil ||
						r.BindingPolicy != "web.stage."+tt.to {
						t.Errorf("record of %s = %+v, want Active since %v", r.Name, r, now)
					}
				case !reachedTo:
					if !equality.Semantic.DeepEqual(r, old) {
						t.Errorf("record of earlier stage %s changed:\n%s", r.Name, diff.Diff(old, r))
					}
				default:
					if r.Phase != v1alpha1.StagePending || r.StartTime != nil {
						t.Errorf("record of later stage %s = %+v, want Pending", r.Name, r)
					}
				}
			}
			// The next stage is placed already: the status says what its
			// first run would, waiting for KubeStellar's resolution.
			if c := condition(t, s, v1alpha1.ConditionProgressing); c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonWaitingForBinding {
				t.Errorf("Progressing = %s/%s, want True/%s", c.Status, c.Reason, v1alpha1.ReasonWaitingForBinding)
			}
			if c := condition(t, s, v1alpha1.ConditionReady); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "web.stage."+tt.to) {
				t.Errorf("Ready = %s %q, want True naming web.stage.%s", c.Status, c.Message, tt.to)
			}
			if keys := eventKeys(got.Events); !slices.Equal(keys, []string{"Normal/StageSucceeded", "Normal/StageStarted"}) {
				t.Fatalf("events = %v, want [Normal/StageSucceeded Normal/StageStarted]", keys)
			}
			if !strings.Contains(got.Events[0].Note, `"`+tt.from+`"`) || !strings.Contains(got.Events[1].Note, `"`+tt.to+`"`) {
				t.Errorf("event notes %q / %q do not name %s / %s", got.Events[0].Note, got.Events[1].Note, tt.from, tt.to)
			}

			// The next run, on the status as written, has nothing to add
			// until KubeStellar resolves the next stage, and keeps the
			// previous stage placed meanwhile.
			again := replan(t, placedSnap, engine, got)
			if again.Type != ActionNone {
				t.Errorf("after advancing, Plan() = %s (%s), want None: the advance said it all", again.Type, again.Why)
			}
		})
	}
}

// placed returns a copy of the snapshot in which bp, as Plan asked to
// create it, exists.
func placed(snap *Snapshot, bp *ksv1alpha1.BindingPolicy) *Snapshot {
	next := *snap
	created := bp.DeepCopy()
	created.UID = types.UID("bp-" + created.Labels[v1alpha1.StageLabel])
	next.BindingPolicies = append(slices.Clone(snap.BindingPolicies), *created)
	resync(&next)
	return &next
}

// ---------------------------------------------------------------------------
// Rule 18: make-before-break
// ---------------------------------------------------------------------------

func TestPlanMakeBeforeBreak(t *testing.T) {
	engine := newEngine(t)
	p := newPolicy()
	// test is the policy just moved to stage test, with dev's BindingPolicy still there.
	test := func() fixture { return at("test").alsoBP(ownedBP(p, "dev", "bp-dev")) }

	tests := []struct {
		name       string
		snap       *Snapshot
		want       ActionType
		wantDelete string
	}{
		{name: "next Binding missing",
			snap: test().Snapshot,
			want: ActionUpdateStatus},
		{name: "next Binding of an older BindingPolicy of the same name",
			snap: test().bound().with(func(s *Snapshot) { s.Binding.OwnerReferences[0].UID = "bp-test-older" }).Snapshot,
			want: ActionUpdateStatus},
		{name: "next BindingPolicy generation not yet observed",
			snap: test().bound().with(func(s *Snapshot) { s.ActiveBindingPolicy.Generation = 2 }).Snapshot,
			want: ActionUpdateStatus},
		{name: "next Binding observed, status not yet",
			snap: test().bound().Snapshot,
			want: ActionDeleteBindingPolicy, wantDelete: "web.stage.dev"},
		{name: "next Binding observed, condition not met",
			snap: test().bound().reporting(deployment, "0").Snapshot,
			want: ActionDeleteBindingPolicy, wantDelete: "web.stage.dev"},
		{name: "next Binding observed but placing nowhere: the previous stage stays placed",
			snap: test().bound().placingNowhere().Snapshot,
			want: ActionUpdateStatus},
		{name: "next Binding observed, previous BindingPolicy already being deleted",
			snap: at("test").alsoBP(beingDeleted(ownedBP(p, "dev", "bp-dev"))).bound().Snapshot,
			want: ActionUpdateStatus},
		{name: "next Binding observed, the other BindingPolicy is not ours",
			snap: at("test").alsoBP(foreignBP(p, "dev", "bp-dev")).bound().Snapshot,
			want: ActionUpdateStatus},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.snap, engine)
			if got.Type != tt.want {
				t.Fatalf("Plan() = %s (%s), want %s", got.Type, got.Why, tt.want)
			}
			switch got.Type {
			case ActionDeleteBindingPolicy:
				if got.BindingPolicy == nil || got.BindingPolicy.Name != tt.wantDelete || got.BindingPolicy.UID != "bp-dev" {
					t.Errorf("Plan() deletes %v, want %s (UID bp-dev)", got.BindingPolicy, tt.wantDelete)
				}
			case ActionUpdateStatus:
				if got.Status.ActiveStage != "test" {
					t.Errorf("activeStage = %s, want test", got.Status.ActiveStage)
				}
				if again := replan(t, tt.snap, engine, got); again.Type != ActionNone {
					t.Errorf("with the status written, Plan() = %s (%s), want None: the previous BindingPolicy stays", again.Type, again.Why)
				}
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Rule 19: the final stage
// ---------------------------------------------------------------------------

func TestPlanFinalStage(t *testing.T) {
	engine := newEngine(t)
	p := newPolicy()

	// The final stage's condition holds while test's BindingPolicy is still
	// there: it goes first, even on the final stage.
	snap := at("prod").alsoBP(ownedBP(p, "test", "bp-test")).bound().reporting(deployment, "1").Snapshot
	got := Plan(snap, engine)
	if got.Type != ActionDeleteBindingPolicy || got.BindingPolicy.Name != "web.stage.test" {
		t.Fatalf("Plan() = %s (%s), want DeleteBindingPolicy web.stage.test", got.Type, got.Why)
	}
	snap.BindingPolicies = slices.DeleteFunc(snap.BindingPolicies, func(bp ksv1alpha1.BindingPolicy) bool { return bp.Name == "web.stage.test" })

	got = Plan(snap, engine)
	if got.Type != ActionUpdateStatus {
		t.Fatalf("Plan() = %s (%s), want UpdateStatus", got.Type, got.Why)
	}
	s := got.Status
	if s.Phase != v1alpha1.RolloutCompleted || s.ActiveStage != "prod" {
		t.Errorf("phase/activeStage = %s/%s, want Completed/prod", s.Phase, s.ActiveStage)
	}
	if c := condition(t, s, v1alpha1.ConditionCompleted); c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonRolloutCompleted {
		t.Errorf("Completed = %s/%s, want True/%s", c.Status, c.Reason, v1alpha1.ReasonRolloutCompleted)
	}
	if c := condition(t, s, v1alpha1.ConditionProgressing); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonRolloutCompleted {
		t.Errorf("Progressing = %s/%s, want False/%s", c.Status, c.Reason, v1alpha1.ReasonRolloutCompleted)
	}
	if c := condition(t, s, v1alpha1.ConditionReady); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %s, want True: the final stage stays placed", c.Status)
	}
	prod := s.Stages[2]
	if prod.Name != "prod" || prod.Phase != v1alpha1.StageSucceeded || !timeEqual(prod.CompletionTime, now) || !timeEqual(prod.StartTime, earlier) {
		t.Errorf("record of prod = %+v, want Succeeded at %v", prod, now)
	}
	if keys := eventKeys(got.Events); !slices.Equal(keys, []string{"Normal/RolloutCompleted"}) {
		t.Errorf("events = %v, want [Normal/RolloutCompleted]", keys)
	}

	// Once Completed, nothing changes: not again, not when the condition
	// stops holding, not when the CombinedStatus goes away; prod stays placed.
	completed := *snap
	completed.Policy = snap.Policy.DeepCopy()
	completed.Policy.Status = *s.DeepCopy()
	for _, tc := range []struct {
		name   string
		change func(*Snapshot)
	}{
		{"again", func(*Snapshot) {}},
		{"a day later", func(s *Snapshot) { s.Now = metav1.NewTime(now.Add(24 * time.Hour)) }},
		{"condition no longer holds", func(s *Snapshot) {
			s.CombinedStatuses = []ksv1alpha1.CombinedStatus{combinedStatus(s.ActiveBindingPolicy, deployment, "0")}
		}},
		{"CombinedStatus gone", func(s *Snapshot) { s.CombinedStatuses = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := completed
			next.Policy = completed.Policy.DeepCopy()
			next.CombinedStatuses = slices.Clone(completed.CombinedStatuses)
			tc.change(&next)
			again := Plan(&next, engine)
			if again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("Plan() = %s %v with events %v (%s), want None", again.Type, again.BindingPolicy, eventKeys(again.Events), again.Why)
			}
		})
	}

	// A new generation of the spec changes the status, which stays Completed
	// without announcing the completion again.
	t.Run("new spec generation", func(t *testing.T) {
		next := completed
		next.Policy = completed.Policy.DeepCopy()
		next.Policy.Generation++
		again := Plan(&next, engine)
		if again.Type != ActionUpdateStatus {
			t.Fatalf("Plan() = %s (%s), want UpdateStatus", again.Type, again.Why)
		}
		if again.Status.Phase != v1alpha1.RolloutCompleted || again.Status.ObservedGeneration != testGeneration+1 {
			t.Errorf("phase/observedGeneration = %s/%d, want Completed/%d", again.Status.Phase, again.Status.ObservedGeneration, testGeneration+1)
		}
		if len(again.Events) != 0 {
			t.Errorf("events = %v, want none", eventKeys(again.Events))
		}
	})
}

// ---------------------------------------------------------------------------
// Rule 19: RolloutCompleted is announced once
// ---------------------------------------------------------------------------

func TestPlanRolloutCompletedOnce(t *testing.T) {
	engine := newEngine(t)
	const (
		badFilter    = `downsyncClause.resourc == 'deployments'`
		badCondition = `obj.results.exists(r, r.name ==)`
	)

	tests := []struct {
		name string
		// block interrupts the completed rollout.
		block      func(*Snapshot)
		specChange bool
		wantReason string
	}{
		{name: "invalid condition added to the final stage",
			block:      func(s *Snapshot) { s.Policy.Spec.Stages[2].Condition = badCondition; s.Policy.Generation++ },
			specChange: true, wantReason: v1alpha1.ReasonInvalidExpression},
		{name: "invalid filter added to an earlier stage",
			block:      func(s *Snapshot) { s.Policy.Spec.Stages[0].Filter = badFilter; s.Policy.Generation++ },
			specChange: true, wantReason: v1alpha1.ReasonInvalidExpression},
		{name: "final stage's BindingPolicy name taken",
			block:      func(s *Snapshot) { s.ActiveBindingPolicy = foreignBP(s.Policy, "prod", "bp-foreign") },
			wantReason: v1alpha1.ReasonBindingPolicyConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The final stage completes: announced once.
			completed := at("prod").bound().reporting(deployment, "1").Snapshot
			got := Plan(completed, engine)
			if got.Type != ActionUpdateStatus || got.Status.Phase != v1alpha1.RolloutCompleted {
				t.Fatalf("Plan() = %s (%s), want UpdateStatus to Completed", got.Type, got.Why)
			}
			if keys := eventKeys(got.Events); !slices.Equal(keys, []string{"Normal/RolloutCompleted"}) {
				t.Fatalf("events = %v, want [Normal/RolloutCompleted]", keys)
			}
			completed.Policy.Status = *got.Status

			// Something blocks it: the final stage's record stays Succeeded.
			blocked := cloneSnapshot(completed)
			blocked.Now = metav1.NewTime(now.Add(time.Minute))
			tt.block(blocked)
			got = Plan(blocked, engine)
			if got.Type != ActionUpdateStatus || got.Status.Phase != v1alpha1.RolloutBlocked {
				t.Fatalf("blocked: Plan() = %s (%s), want UpdateStatus to Blocked", got.Type, got.Why)
			}
			if c := condition(t, got.Status, v1alpha1.ConditionProgressing); c.Reason != tt.wantReason {
				t.Errorf("blocked: Progressing reason = %s, want %s", c.Reason, tt.wantReason)
			}
			if keys := eventKeys(got.Events); !slices.Equal(keys, []string{"Warning/" + tt.wantReason}) {
				t.Errorf("blocked: events = %v, want [Warning/%s]", keys, tt.wantReason)
			}
			if r := got.Status.Stages[2]; r.Phase != v1alpha1.StageSucceeded || !timeEqual(r.CompletionTime, now) {
				t.Errorf("blocked: record of prod = %+v, want Succeeded at %v", r, now)
			}

			// Fixed: Completed again, without a second announcement.
			fixed := cloneSnapshot(completed)
			fixed.Now = metav1.NewTime(now.Add(2 * time.Minute))
			fixed.Policy.Generation = blocked.Policy.Generation
			if tt.specChange {
				fixed.Policy.Generation++
			}
			fixed.Policy.Status = *got.Status
			got = Plan(fixed, engine)
			if got.Type != ActionUpdateStatus {
				t.Fatalf("fixed: Plan() = %s (%s), want UpdateStatus", got.Type, got.Why)
			}
			s := got.Status
			if s.Phase != v1alpha1.RolloutCompleted || s.ActiveStage != "prod" || s.ObservedGeneration != fixed.Policy.Generation {
				t.Errorf("fixed: phase/activeStage/observedGeneration = %s/%s/%d, want Completed/prod/%d",
					s.Phase, s.ActiveStage, s.ObservedGeneration, fixed.Policy.Generation)
			}
			if c := condition(t, s, v1alpha1.ConditionCompleted); c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonRolloutCompleted {
				t.Errorf("fixed: Completed = %s/%s, want True/%s", c.Status, c.Reason, v1alpha1.ReasonRolloutCompleted)
			}
			if r := s.Stages[2]; r.Phase != v1alpha1.StageSucceeded || !timeEqual(r.CompletionTime, now) || !timeEqual(r.StartTime, earlier) {
				t.Errorf("fixed: record of prod = %+v, want Succeeded at %v as first recorded", r, now)
			}
			if len(got.Events) != 0 {
				t.Errorf("fixed: events = %v, want none: the completion was announced already", eventKeys(got.Events))
			}
			if again := replan(t, fixed, engine, got); again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("fixed, status written: Plan() = %s with events %v (%s), want None without events",
					again.Type, eventKeys(again.Events), again.Why)
			}
		})
	}
}
