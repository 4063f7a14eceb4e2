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
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
)

// ---------------------------------------------------------------------------
// Rules 15 and 18: waiting, and what the status says about it
// ---------------------------------------------------------------------------

func TestPlanWaiting(t *testing.T) {
	engine := newEngine(t)
	dev := func() fixture { return at("dev") }

	tests := []struct {
		name       string
		snap       *Snapshot
		wantReason string   // of the Progressing condition
		wantMsg    []string // substrings of the active stage's message
		wantPhase  v1alpha1.RolloutPhase
		wantEvents []string
		// wantCompletedReason is the Completed condition's reason.
		wantCompletedReason string
	}{
		{name: "no Binding",
			snap:       dev().Snapshot,
			wantReason: v1alpha1.ReasonWaitingForBinding, wantMsg: []string{"web.stage.dev"}},
		{name: "Binding of an older BindingPolicy of the same name",
			snap: dev().bound().with(func(s *Snapshot) { s.Binding.OwnerReferences[0].UID = "bp-dev-older" }).
				reporting(deployment, "1").Snapshot,
			wantReason: v1alpha1.ReasonWaitingForBinding, wantMsg: []string{"web.stage.dev"}},
		{name: "Binding without owner",
			snap:       dev().bound().with(func(s *Snapshot) { s.Binding.OwnerReferences = nil }).Snapshot,
			wantReason: v1alpha1.ReasonWaitingForBinding, wantMsg: []string{"web.stage.dev"}},
		{name: "BindingPolicy generation not yet observed",
			snap: dev().bound().reporting(deployment, "1").with(func(s *Snapshot) {
				s.ActiveBindingPolicy.Generation = 2
			}).Snapshot,
			wantReason: v1alpha1.ReasonWaitingForBinding, wantMsg: []string{"generation 2", "generation 1"}},
		{name: "CombinedStatus missing",
			snap:       dev().bound().Snapshot,
			wantReason: v1alpha1.ReasonWaitingForStatus, wantMsg: []string{"0 of 1", "deployments.apps web/nginx"}},
		{name: "CombinedStatus of an older BindingPolicy of the same name does not count",
			snap: dev().bound().with(func(s *Snapshot) {
				older := s.ActiveBindingPolicy.DeepCopy()
				older.UID = "bp-dev-older"
				s.CombinedStatuses = append(s.CombinedStatuses, combinedStatus(older, deployment, "1"))
			}).Snapshot,
			wantReason: v1alpha1.ReasonWaitingForStatus, wantMsg: []string{"deployments.apps web/nginx"}},
		{name: "CombinedStatus of another object does not count",
			snap:       dev().bound().reporting(configMap, "1").Snapshot,
			wantReason: v1alpha1.ReasonWaitingForStatus, wantMsg: []string{"deployments.apps web/nginx"}},
		{name: "condition false",
			snap:       dev().bound().reporting(deployment, "0").reporting(configMap, "1").Snapshot,
			wantReason: v1alpha1.ReasonConditionNotMet, wantMsg: []string{"0 of 1", "deployments.apps web/nginx"}},
		{name: "condition false for the configmap when there is no filter",
			snap: at("dev", stageWith("dev", "", seedCondition), stage("test")).bound().
				reporting(deployment, "1").reporting(configMap, "0").reporting(namespaceObj, "1").Snapshot,
			wantReason: v1alpha1.ReasonConditionNotMet, wantMsg: []string{"2 of 3", "configmaps web/settings"}},
		{name: "cluster-scoped object without CombinedStatus",
			snap: at("dev", stageWith("dev", `downsyncClause.namespace == ''`, seedCondition), stage("test")).bound().
				reporting(deployment, "1").Snapshot,
			wantReason: v1alpha1.ReasonWaitingForStatus, wantMsg: []string{"0 of 1", "namespaces web"}},
		{name: "filter selects nothing",
			snap: at("dev", stageWith("dev", `downsyncClause.resource == 'statefulsets'`, seedCondition), stage("test")).
				bound().reporting(deployment, "1").Snapshot,
			wantReason: v1alpha1.ReasonNoObjectsSelected, wantMsg: []string{"web.stage.dev"}},
		{name: "Binding with no objects",
			snap: at("dev", stageWith("dev", "", seedCondition), stage("test")).
				with(func(s *Snapshot) {
					s.Binding = bindingFor(s.ActiveBindingPolicy)
					s.Binding.Spec.Workload = ksv1alpha1.DownsyncObjectClauses{}
				}).Snapshot,
			wantReason: v1alpha1.ReasonNoObjectsSelected, wantMsg: []string{"web.stage.dev"}},
		{name: "condition fails to evaluate",
			snap: at("dev", stageWith("dev", deploymentsFilter, `obj.results[3].name == 'deployments-aggregator'`), stage("test")).
				bound().reporting(deployment, "1").Snapshot,
			wantReason: v1alpha1.ReasonEvaluationError, wantPhase: v1alpha1.RolloutBlocked,
			wantMsg:    []string{`condition "obj.results[3]`, "deployments.apps web/nginx"},
			wantEvents: []string{"Warning/EvaluationError"}},
		{name: "filter fails to evaluate",
			snap: at("dev", stageWith("dev", `int(downsyncClause.name) > 0`, seedCondition), stage("test")).
				bound().reporting(deployment, "1").Snapshot,
			wantReason: v1alpha1.ReasonEvaluationError, wantPhase: v1alpha1.RolloutBlocked,
			wantMsg:    []string{`filter "int(downsyncClause.name) > 0"`, "(on deployments.apps web/nginx)"},
			wantEvents: []string{"Warning/EvaluationError"}},
		{name: "final stage condition false",
			snap:       at("prod").bound().reporting(deployment, "0").Snapshot,
			wantReason: v1alpha1.ReasonConditionNotMet, wantMsg: []string{"deployments.apps web/nginx"},
			wantCompletedReason: v1alpha1.ReasonFinalConditionNotMet},
		// A Binding observed with no destination places nothing: the stage
		// waits, even where its condition would hold or it has none.
		{name: "Binding places on no cluster, condition would hold",
			snap:       dev().bound().placingNowhere().reporting(deployment, "1").Snapshot,
			wantReason: v1alpha1.ReasonNoClustersSelected, wantMsg: []string{"web.stage.dev", "no cluster"}},
		{name: "Binding places on no cluster (empty list), condition would hold",
			snap: dev().bound().reporting(deployment, "1").with(func(s *Snapshot) {
				s.Binding.Spec.Destinations = []ksv1alpha1.Destination{}
			}).Snapshot,
			wantReason: v1alpha1.ReasonNoClustersSelected, wantMsg: []string{"web.stage.dev", "no cluster"}},
		{name: "Binding places on no cluster, stage without condition",
			snap:       at("dev", stageWith("dev", "", ""), stage("test")).bound().placingNowhere().Snapshot,
			wantReason: v1alpha1.ReasonNoClustersSelected, wantMsg: []string{"web.stage.dev", "no cluster"}},
		{name: "final stage, Binding places on no cluster, condition would hold",
			snap:       at("prod").bound().placingNowhere().reporting(deployment, "1").Snapshot,
			wantReason: v1alpha1.ReasonNoClustersSelected, wantMsg: []string{"web.stage.prod", "no cluster"},
			wantCompletedReason: v1alpha1.ReasonFinalConditionNotMet},
		{name: "final stage without condition, Binding places on no cluster",
			snap:       at("prod", stage("dev"), stage("test"), stageWith("prod", "", "")).bound().placingNowhere().Snapshot,
			wantReason: v1alpha1.ReasonNoClustersSelected, wantMsg: []string{"web.stage.prod", "no cluster"},
			wantCompletedReason: v1alpha1.ReasonFinalConditionNotMet},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			active := tt.snap.Policy.Status.ActiveStage
			got := Plan(tt.snap, engine)
			if got.Type != ActionUpdateStatus {
				t.Fatalf("Plan() = %s (%s), want UpdateStatus", got.Type, got.Why)
			}
			s := got.Status
			wantPhase := tt.wantPhase
			if wantPhase == "" {
				wantPhase = v1alpha1.RolloutProgressing
			}
			if s.Phase != wantPhase || s.ActiveStage != active {
				t.Errorf("phase/activeStage = %s/%s, want %s/%s", s.Phase, s.ActiveStage, wantPhase, active)
			}
			progressing := condition(t, s, v1alpha1.ConditionProgressing)
			if progressing.Reason != tt.wantReason {
				t.Errorf("Progressing reason = %s (%q), want %s", progressing.Reason, progressing.Message, tt.wantReason)
			}
			wantStatus := metav1.ConditionTrue
			if wantPhase == v1alpha1.RolloutBlocked {
				wantStatus = metav1.ConditionFalse
			}
			if progressing.Status != wantStatus {
				t.Errorf("Progressing status = %s, want %s", progressing.Status, wantStatus)
			}
			if ready := condition(t, s, v1alpha1.ConditionReady); ready.Status != metav1.ConditionTrue || ready.Reason != v1alpha1.ReasonBindingPolicyInSync {
				t.Errorf("Ready = %s/%s, want True/%s", ready.Status, ready.Reason, v1alpha1.ReasonBindingPolicyInSync)
			}
			wantCompleted := tt.wantCompletedReason
			if wantCompleted == "" {
				wantCompleted = v1alpha1.ReasonStagesRemaining
			}
			if c := condition(t, s, v1alpha1.ConditionCompleted); c.Status != metav1.ConditionFalse || c.Reason != wantCompleted {
				t.Errorf("Completed = %s/%s, want False/%s", c.Status, c.Reason, wantCompleted)
			}
			var record *v1alpha1.StageStatus
			for i := range s.Stages {
				if s.Stages[i].Name == active {
					record = &s.Stages[i]
				}
			}
			if record == nil || record.Phase != v1alpha1.StageActive || !timeEqual(record.StartTime, earlier) || record.CompletionTime != nil {
				t.Fatalf("record of %s = %+v, want Active since %v", active, record, earlier)
			}
			for _, sub := range tt.wantMsg {
				if !strings.Contains(record.Message, sub) {
					t.Errorf("stage message %q does not contain %q", record.Message, sub)
				}
			}
			if !strings.Contains(progressing.Message, record.Message) {
				t.Errorf("Progressing message %q does not carry the stage message %q", progressing.Message, record.Message)
			}
			if n := strings.Count(progressing.Message, fmt.Sprintf("stage %q", active)); n != 1 {
				t.Errorf("Progressing message %q names stage %q %d times, want once", progressing.Message, active, n)
			}
			if keys := eventKeys(got.Events); !slices.Equal(keys, tt.wantEvents) {
				t.Errorf("events = %v, want %v", keys, tt.wantEvents)
			}

			// Written once, the same state makes no further change.
			again := replan(t, tt.snap, engine, got)
			if again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("with the status written, Plan() = %s with events %v (%s), want None without events",
					again.Type, eventKeys(again.Events), again.Why)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Rule 19: EvaluationError is announced once per change of Progressing
// ---------------------------------------------------------------------------

func TestPlanEvaluationErrorEvent(t *testing.T) {
	engine := newEngine(t)
	const (
		failingCondition = `obj.results[3].name == 'deployments-aggregator'` // index out of range
		failingFilter    = `int(downsyncClause.name) > 0`                    // "nginx" is no int
		badCondition     = `obj.results.exists(r, r.name ==)`
	)
	// failing is dev with a condition that fails to evaluate on the deployment.
	failing := func() fixture {
		return at("dev", stageWith("dev", deploymentsFilter, failingCondition), stage("test")).bound().reporting(deployment, "1")
	}

	tests := []struct {
		name string
		// prior is planned first; the status it writes is the status of snap's policy.
		prior         *Snapshot
		snap          *Snapshot
		newGeneration bool
		want          ActionType
		wantEvents    []string
	}{
		{name: "after waiting for status",
			prior: at("dev", stage("dev"), stage("test")).bound().Snapshot,
			snap:  failing().Snapshot, newGeneration: true,
			want: ActionUpdateStatus, wantEvents: []string{"Warning/EvaluationError"}},
		{name: "after an invalid expression: already Blocked",
			prior: at("dev", stageWith("dev", deploymentsFilter, badCondition), stage("test")).bound().reporting(deployment, "1").Snapshot,
			snap:  failing().Snapshot, newGeneration: true,
			want: ActionUpdateStatus, wantEvents: []string{"Warning/EvaluationError"}},
		{name: "after a BindingPolicy name conflict: already Blocked",
			prior: failing().with(func(s *Snapshot) { s.ActiveBindingPolicy = foreignBP(s.Policy, "dev", "bp-foreign") }).Snapshot,
			snap:  failing().Snapshot,
			want:  ActionUpdateStatus, wantEvents: []string{"Warning/EvaluationError"}},
		{name: "after another evaluation error: already Blocked",
			prior: at("dev", stageWith("dev", failingFilter, failingCondition), stage("test")).bound().reporting(deployment, "1").Snapshot,
			snap:  failing().Snapshot, newGeneration: true,
			want: ActionUpdateStatus, wantEvents: []string{"Warning/EvaluationError"}},
		{name: "same evaluation error, new spec generation",
			prior: failing().Snapshot,
			snap:  failing().Snapshot, newGeneration: true,
			want: ActionUpdateStatus},
		{name: "same evaluation error, planned again",
			prior: failing().Snapshot,
			snap:  failing().Snapshot,
			want:  ActionNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prior := Plan(tt.prior, engine)
			if prior.Type != ActionUpdateStatus {
				t.Fatalf("prior: Plan() = %s (%s), want UpdateStatus", prior.Type, prior.Why)
			}
			tt.snap.Policy.Status = *prior.Status.DeepCopy()
			if tt.newGeneration {
				tt.snap.Policy.Generation++
			}
			tt.snap.Now = metav1.NewTime(now.Add(time.Minute))

			got := Plan(tt.snap, engine)
			if got.Type != tt.want {
				t.Fatalf("Plan() = %s (%s), want %s", got.Type, got.Why, tt.want)
			}
			if keys := eventKeys(got.Events); !slices.Equal(keys, tt.wantEvents) {
				t.Errorf("events = %v, want %v", keys, tt.wantEvents)
			}
			for _, e := range got.Events {
				if !strings.Contains(e.Note, `stage "dev"`) || !strings.Contains(e.Note, "deployments.apps web/nginx") {
					t.Errorf("event note %q does not name the stage and the object", e.Note)
				}
			}
			if got.Type != ActionUpdateStatus {
				return
			}
			s := got.Status
			if s.Phase != v1alpha1.RolloutBlocked || s.ActiveStage != "dev" {
				t.Errorf("phase/activeStage = %s/%s, want Blocked/dev", s.Phase, s.ActiveStage)
			}
			if c := condition(t, s, v1alpha1.ConditionProgressing); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonEvaluationError {
				t.Errorf("Progressing = %s/%s, want False/%s", c.Status, c.Reason, v1alpha1.ReasonEvaluationError)
			}
			if again := replan(t, tt.snap, engine, got); again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("with the status written, Plan() = %s with events %v (%s), want None without events",
					again.Type, eventKeys(again.Events), again.Why)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Rule 15: soak
// ---------------------------------------------------------------------------

// soakingFor returns the dev stage, over the Deployments with the seed's
// condition, and soakDuration d.
func soakingFor(d time.Duration) v1alpha1.Stage {
	s := stageWith("dev", deploymentsFilter, seedCondition)
	s.SoakDuration = &metav1.Duration{Duration: d}
	return s
}

// metSince sets when the dev stage's condition started holding.
func metSince(t metav1.Time) func(*Snapshot) {
	return func(s *Snapshot) {
		s.Policy.Status.Stages = stageRecords(s.Policy, s.Policy.Status.Stages, 0, earlier)
		s.Policy.Status.Stages[0].ConditionMetTime = ptr.To(t)
	}
}

func TestPlanSoak(t *testing.T) {
	engine := newEngine(t)
	soak := soakingFor(10 * time.Minute)
	holding := func() fixture { return at("dev", soak, stage("test")).bound().reporting(deployment, "1") }

	t.Run("the condition holds for the first time: the clock starts", func(t *testing.T) {
		snap := holding().Snapshot
		action := Plan(snap, engine)
		if action.Type != ActionUpdateStatus || action.Status.ActiveStage != "dev" {
			t.Fatalf("action %s (%s) in stage %q, want a status update in dev", action.Type, action.Why, action.Status.ActiveStage)
		}
		if got := action.Status.Stages[0].ConditionMetTime; !timeEqual(got, now) {
			t.Errorf("conditionMetTime %v, want %v", got, now)
		}
		if c := condition(t, action.Status, v1alpha1.ConditionProgressing); c.Reason != v1alpha1.ReasonSoaking || !strings.Contains(c.Message, "2026-03-01T12:10:00Z") {
			t.Errorf("Progressing %s: %q, want Soaking naming when it is done", c.Reason, c.Message)
		}
		if action.RequeueAfter != 10*time.Minute {
			t.Errorf("requeue after %s, want 10m", action.RequeueAfter)
		}
		// A minute later nothing changes but the time left.
		again := replan(t, snap, engine, action)
		if again.Type != ActionNone || again.RequeueAfter != 9*time.Minute {
			t.Errorf("a minute later: %s (%s) requeue %s, want None, requeue 9m", again.Type, again.Why, again.RequeueAfter)
		}
	})
	t.Run("held for the whole soak: the next stage starts", func(t *testing.T) {
		snap := holding().with(metSince(metav1.NewTime(now.Add(-10 * time.Minute)))).Snapshot
		handover := Plan(snap, engine)
		if handover.Type != ActionCreateBindingPolicy || handover.BindingPolicy.Name != "web.stage.test" {
			t.Fatalf("action %s (%s), want test placed", handover.Type, handover.Why)
		}
		action := Plan(placed(snap, handover.BindingPolicy), engine)
		if action.Type != ActionUpdateStatus || action.Status.ActiveStage != "test" {
			t.Fatalf("action %s (%s) to stage %q, want test to start", action.Type, action.Why, action.Status.ActiveStage)
		}
		if !strings.Contains(action.Status.Stages[0].Message, "soakDuration 10m0s") {
			t.Errorf("dev's message %q does not say it soaked", action.Status.Stages[0].Message)
		}
		// dev's record keeps when its condition started holding.
		if got := action.Status.Stages[0].ConditionMetTime; !timeEqual(got, metav1.NewTime(now.Add(-10*time.Minute))) {
			t.Errorf("dev's conditionMetTime %v once done, want it kept", got)
		}
	})
	t.Run("held for part of the soak: it waits for the rest", func(t *testing.T) {
		snap := holding().with(metSince(metav1.NewTime(now.Add(-4 * time.Minute)))).Snapshot
		action := Plan(snap, engine)
		if action.Status != nil && action.Status.ActiveStage != "dev" {
			t.Fatalf("action %s moved to %q before the soak ended", action.Type, action.Status.ActiveStage)
		}
		if action.RequeueAfter != 6*time.Minute {
			t.Errorf("requeue after %s, want 6m", action.RequeueAfter)
		}
		if action.Status != nil && !timeEqual(action.Status.Stages[0].ConditionMetTime, metav1.NewTime(now.Add(-4*time.Minute))) {
			t.Errorf("conditionMetTime moved to %v", action.Status.Stages[0].ConditionMetTime)
		}
	})
	t.Run("the condition stops holding: the clock is cleared", func(t *testing.T) {
		snap := at("dev", soak, stage("test")).bound().reporting(deployment, "0").with(metSince(metav1.NewTime(now.Add(-4 * time.Minute)))).Snapshot
		action := Plan(snap, engine)
		if action.Type != ActionUpdateStatus || action.Status.Stages[0].ConditionMetTime != nil || action.Status.ActiveStage != "dev" {
			t.Fatalf("action %s (%s): want the status to clear conditionMetTime and stay in dev", action.Type, action.Why)
		}
		if action.RequeueAfter != 0 {
			t.Errorf("requeue after %s, want none for the soak", action.RequeueAfter)
		}
	})
	t.Run("a final stage completes only after its soak", func(t *testing.T) {
		final := soakingFor(5 * time.Minute)
		f := at("dev", final).bound().reporting(deployment, "1")
		action := Plan(f.Snapshot, engine)
		if action.Status == nil || action.Status.Phase == v1alpha1.RolloutCompleted {
			t.Fatalf("action %s (%s): completed before the soak", action.Type, action.Why)
		}
		done := Plan(at("dev", final).bound().reporting(deployment, "1").with(metSince(metav1.NewTime(now.Add(-5*time.Minute)))).Snapshot, engine)
		if done.Status == nil || done.Status.Phase != v1alpha1.RolloutCompleted {
			t.Fatalf("action %s (%s): want Completed after the soak", done.Type, done.Why)
		}
	})
}

// ---------------------------------------------------------------------------
// Rule 19: progress deadline
// ---------------------------------------------------------------------------

// deadlined returns dev with the seed's condition and a progressDeadline.
func deadlined(name, condition string, d time.Duration) v1alpha1.Stage {
	s := stageWith(name, deploymentsFilter, condition)
	s.ProgressDeadline = &metav1.Duration{Duration: d}
	return s
}

// suspendedWhileActive records that the rollout was suspended for d while the
// active stage was active.
func suspendedWhileActive(d time.Duration) func(*Snapshot) {
	return func(s *Snapshot) {
		s.Policy.Status.Stages[slices.IndexFunc(s.Policy.Status.Stages, func(r v1alpha1.StageStatus) bool {
			return r.Name == s.Policy.Status.ActiveStage
		})].SuspendedDuration = &metav1.Duration{Duration: d}
	}
}

// resumedAfter records a suspension that began d ago and has just been
// lifted: status still says Suspended, the spec no longer does.
func resumedAfter(d time.Duration) func(*Snapshot) {
	return func(s *Snapshot) {
		s.Policy.Status.Phase = v1alpha1.RolloutSuspended
		s.Policy.Status.SuspendedTime = ptr.To(metav1.NewTime(now.Add(-d)))
	}
}

// alreadyStalled records that the rollout is already Stalled.
func alreadyStalled(s *Snapshot) {
	s.Policy.Status.Phase = v1alpha1.RolloutStalled
	meta.SetStatusCondition(&s.Policy.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionProgressing,
		Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonProgressDeadlineExceeded, Message: "earlier"})
}

// TestPlanProgressDeadline checks the stage deadline: counted from the
// stage's start (an hour before now in these fixtures), not counting the
// time suspended; past it the rollout is Stalled with one Warning Event; it
// recovers by itself when the condition holds.
func TestPlanProgressDeadline(t *testing.T) {
	engine := newEngine(t)
	dev := func(d time.Duration) v1alpha1.Stage { return deadlined("dev", seedCondition, d) }
	tests := []struct {
		name         string
		snap         *Snapshot
		wantStage    string // the active stage after the action
		wantPhase    v1alpha1.RolloutPhase
		wantReason   string // of Progressing
		wantEvents   []string
		wantDeadline *metav1.Time // of the active stage's record
		wantRequeue  time.Duration
		wantMsg      string // substring of Progressing's message
	}{
		{name: "within the deadline: waits, requeued for when it passes",
			snap:      at("dev", dev(2*time.Hour), stage("test")).bound().reporting(deployment, "0").Snapshot,
			wantStage: "dev", wantPhase: v1alpha1.RolloutProgressing, wantReason: v1alpha1.ReasonConditionNotMet,
			wantDeadline: ptr.To(metav1.NewTime(now.Add(time.Hour))), wantRequeue: time.Hour + time.Second},
		{name: "past the deadline: Stalled, with a Warning Event",
			snap:      at("dev", dev(30*time.Minute), stage("test")).bound().reporting(deployment, "0").Snapshot,
			wantStage: "dev", wantPhase: v1alpha1.RolloutStalled, wantReason: v1alpha1.ReasonProgressDeadlineExceeded,
			wantEvents: []string{"Warning/ProgressDeadlineExceeded"}, wantDeadline: ptr.To(metav1.NewTime(now.Add(-30 * time.Minute))),
			wantMsg: "past its progressDeadline 30m0s (at 2026-03-01T11:30:00Z): "},
		{name: "past the deadline waiting for the Binding: Stalled too",
			snap:      at("dev", dev(30*time.Minute), stage("test")).Snapshot,
			wantStage: "dev", wantPhase: v1alpha1.RolloutStalled, wantReason: v1alpha1.ReasonProgressDeadlineExceeded,
			wantEvents: []string{"Warning/ProgressDeadlineExceeded"}, wantDeadline: ptr.To(metav1.NewTime(now.Add(-30 * time.Minute))),
			wantMsg: "to resolve BindingPolicy web.stage.dev into a Binding"},
		{name: "already Stalled: no second Event",
			snap:      at("dev", dev(30*time.Minute), stage("test")).bound().reporting(deployment, "0").with(alreadyStalled).Snapshot,
			wantStage: "dev", wantPhase: v1alpha1.RolloutStalled, wantReason: v1alpha1.ReasonProgressDeadlineExceeded,
			wantDeadline: ptr.To(metav1.NewTime(now.Add(-30 * time.Minute)))},
		{name: "Stalled, then the condition holds: the rollout goes on",
			snap:      at("dev", dev(30*time.Minute), stage("test")).bound().reporting(deployment, "1").with(alreadyStalled).Snapshot,
			wantStage: "test", wantPhase: v1alpha1.RolloutProgressing, wantReason: v1alpha1.ReasonWaitingForBinding,
			wantEvents: []string{"Normal/StageSucceeded", "Normal/StageStarted"}},
		{name: "time suspended does not count",
			snap:      at("dev", dev(30*time.Minute), stage("test")).bound().reporting(deployment, "0").with(suspendedWhileActive(45 * time.Minute)).Snapshot,
			wantStage: "dev", wantPhase: v1alpha1.RolloutProgressing, wantReason: v1alpha1.ReasonConditionNotMet,
			wantDeadline: ptr.To(metav1.NewTime(now.Add(15 * time.Minute))), wantRequeue: 15*time.Minute + time.Second},
		{name: "just resumed: the suspension is added to the stage's record",
			snap:      at("dev", dev(30*time.Minute), stage("test")).bound().reporting(deployment, "0").with(resumedAfter(45 * time.Minute)).Snapshot,
			wantStage: "dev", wantPhase: v1alpha1.RolloutProgressing, wantReason: v1alpha1.ReasonConditionNotMet,
			wantEvents:   []string{"Normal/Resumed"},
			wantDeadline: ptr.To(metav1.NewTime(now.Add(15 * time.Minute))), wantRequeue: 15*time.Minute + time.Second},
		{name: "final stage past the deadline: Stalled, not Completed",
			snap:      at("dev", dev(30*time.Minute)).bound().reporting(deployment, "0").Snapshot,
			wantStage: "dev", wantPhase: v1alpha1.RolloutStalled, wantReason: v1alpha1.ReasonProgressDeadlineExceeded,
			wantEvents: []string{"Warning/ProgressDeadlineExceeded"}, wantDeadline: ptr.To(metav1.NewTime(now.Add(-30 * time.Minute)))},
		{name: "an evaluation error past the deadline: Blocked, as without one",
			snap:      at("dev", deadlined("dev", `obj.results[3].name == 'x'`, 30*time.Minute), stage("test")).bound().reporting(deployment, "1").Snapshot,
			wantStage: "dev", wantPhase: v1alpha1.RolloutBlocked, wantReason: v1alpha1.ReasonEvaluationError,
			wantEvents: []string{"Warning/EvaluationError"}},
		{name: "soaking past the deadline: Stalled, the soak goes on",
			snap: at("dev", func() v1alpha1.Stage {
				s := dev(30 * time.Minute)
				s.SoakDuration = &metav1.Duration{Duration: 20 * time.Minute}
				return s
			}(), stage("test")).bound().reporting(deployment, "1").with(metSince(metav1.NewTime(now.Add(-10 * time.Minute)))).Snapshot,
			wantStage: "dev", wantPhase: v1alpha1.RolloutStalled, wantReason: v1alpha1.ReasonProgressDeadlineExceeded,
			wantEvents: []string{"Warning/ProgressDeadlineExceeded"}, wantDeadline: ptr.To(metav1.NewTime(now.Add(-30 * time.Minute))),
			wantRequeue: 10 * time.Minute, wantMsg: "unless it stops holding"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := tt.snap
			action := Plan(snap, engine)
			if action.Type == ActionCreateBindingPolicy && tt.wantStage != snap.Policy.Status.ActiveStage {
				snap = placed(snap, action.BindingPolicy) // the next stage is placed before the status says so
				action = Plan(snap, engine)
			}
			if action.Type != ActionUpdateStatus {
				t.Fatalf("action %s (%s), want UpdateStatus", action.Type, action.Why)
			}
			st := action.Status
			if st.ActiveStage != tt.wantStage || st.Phase != tt.wantPhase {
				t.Errorf("stage %q phase %s, want %q %s", st.ActiveStage, st.Phase, tt.wantStage, tt.wantPhase)
			}
			c := condition(t, st, v1alpha1.ConditionProgressing)
			if c.Reason != tt.wantReason || !strings.Contains(c.Message, tt.wantMsg) {
				t.Errorf("Progressing %s %q, want %s naming %q", c.Reason, c.Message, tt.wantReason, tt.wantMsg)
			}
			if tt.wantPhase == v1alpha1.RolloutStalled && c.Status != metav1.ConditionFalse {
				t.Errorf("Progressing is %s while Stalled, want False", c.Status)
			}
			if got := eventKeys(action.Events); !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events %v, want %v", got, tt.wantEvents)
			}
			if st.SuspendedTime != nil {
				t.Errorf("suspendedTime %v left after resuming", st.SuspendedTime)
			}
			if action.RequeueAfter != tt.wantRequeue {
				t.Errorf("requeue after %s, want %s", action.RequeueAfter, tt.wantRequeue)
			}
			record := st.StageNamed(st.ActiveStage)
			if got := record.ProgressDeadlineTime; (got == nil) != (tt.wantDeadline == nil) || got != nil && !got.Equal(tt.wantDeadline) {
				t.Errorf("progressDeadlineTime %v, want %v", got, tt.wantDeadline)
			}
			if tt.wantPhase == v1alpha1.RolloutStalled || tt.wantRequeue > 0 {
				// Planned again a minute later, nothing new happens: no second
				// Event, and the deadline stays where it is.
				again := replan(t, tt.snap, engine, action)
				if len(again.Events) > 0 {
					t.Errorf("planned again: events %v", eventKeys(again.Events))
				}
				if again.Status != nil && !again.Status.StageNamed(st.ActiveStage).ProgressDeadlineTime.Equal(record.ProgressDeadlineTime) {
					t.Errorf("planned again: the deadline moved to %v", again.Status.StageNamed(st.ActiveStage).ProgressDeadlineTime)
				}
			}
		})
	}
}

// TestPlanSuspensionStopsTheDeadlineClock suspends a stage with a deadline
// for longer than the deadline and resumes it: the stage is not stalled
// until the deadline plus the time suspended has passed.
func TestPlanSuspensionStopsTheDeadlineClock(t *testing.T) {
	engine := newEngine(t)
	snap := at("dev", deadlined("dev", seedCondition, 90*time.Minute), stage("test")).bound().reporting(deployment, "0").with(suspend).Snapshot
	held := Plan(snap, engine)
	if held.Status == nil || !timeEqual(held.Status.SuspendedTime, now) {
		t.Fatalf("suspending: %s (%s), want suspendedTime %v", held.Type, held.Why, now)
	}
	// Resumed two hours later: the stage has been active for three hours,
	// two of them suspended, so 30 minutes of its 90 are left.
	resumed := cloneSnapshot(snap)
	resumed.Policy.Status = *held.Status.DeepCopy()
	resumed.Policy.Spec.Suspend = false
	resumed.Now = metav1.NewTime(now.Add(2 * time.Hour))
	action := Plan(resumed, engine)
	if action.Type != ActionUpdateStatus || action.Status.Phase != v1alpha1.RolloutProgressing {
		t.Fatalf("resumed: %s (%s) phase %v, want Progressing", action.Type, action.Why, action.Status)
	}
	record := action.Status.StageNamed("dev")
	if record.SuspendedDuration == nil || record.SuspendedDuration.Duration != 2*time.Hour {
		t.Errorf("suspendedDuration %v, want 2h", record.SuspendedDuration)
	}
	if want := metav1.NewTime(now.Add(30 * time.Minute).Add(2 * time.Hour)); !timeEqual(record.ProgressDeadlineTime, want) {
		t.Errorf("progressDeadlineTime %v, want %v", record.ProgressDeadlineTime, want)
	}
	if action.RequeueAfter != 30*time.Minute+time.Second {
		t.Errorf("requeue after %s, want 30m1s", action.RequeueAfter)
	}
	// Once written, the suspension stays counted.
	later := cloneSnapshot(resumed)
	later.Policy.Status = *action.Status.DeepCopy()
	later.Now = metav1.NewTime(resumed.Now.Add(31 * time.Minute))
	if stalled := Plan(later, engine); stalled.Status == nil || stalled.Status.Phase != v1alpha1.RolloutStalled {
		t.Errorf("31 minutes after resuming: %s (%s), want Stalled", stalled.Type, stalled.Why)
	}
}

// BenchmarkPlanAdvance plans the run that hands a stage without an approval
// gate over to the next: the run a CombinedStatus queues first.
func BenchmarkPlanAdvance(b *testing.B) {
	engine, err := expression.NewEngine()
	if err != nil {
		b.Fatal(err)
	}
	snap := at("dev").bound().reporting(deployment, "1").Snapshot
	// As read from the cache: the engine converts a CombinedStatus once per
	// UID and resourceVersion.
	snap.CombinedStatuses[0].UID, snap.CombinedStatuses[0].ResourceVersion = "cs-dev", "1"
	if action := Plan(snap, engine); action.Type == ActionNone {
		b.Fatalf("the snapshot plans nothing: %s", describe(action))
	}
	b.ReportAllocs()
	for b.Loop() {
		Plan(snap, engine)
	}
}
