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

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
	"github.com/kubestellar/workload-stager/internal/wave"
)

// ---------------------------------------------------------------------------
// Rule 6a: the wave's gate (docs/proposals/waves.md, "Entering Plan")
// ---------------------------------------------------------------------------

// heldBy is a decision of a wave holding the policy in its second step.
func heldBy(reason string, recheck time.Duration) *wave.Decision {
	return &wave.Decision{Wave: "regions", Step: "eu", StepIndex: 1, Steps: 3, Reason: reason,
		Message: "wave regions step 2/3 (eu): " + reason + " (the gate's message)", RecheckAfter: recheck}
}

// releasedBy is a decision of a wave releasing the policy in its second
// step (WaveReleased).
func releasedBy() *wave.Decision {
	return &wave.Decision{Released: true, Wave: "regions", Step: "eu", StepIndex: 1, Steps: 3, Reason: wave.ReasonReleased,
		Message: "wave regions step 2/3 (eu): revision v2 completed in every space of the 1 earlier steps"}
}

// heldReasons are the reasons a wave holds for, with the wait each gives.
var heldReasons = []struct {
	reason  string
	recheck time.Duration
}{
	{wave.ReasonConflict, 0},
	{wave.ReasonNeedsRevision, 0},
	{wave.ReasonEarlierStepFailed, 0},
	{wave.ReasonEarlierSpaceDown, 0},
	{wave.ReasonWaitingForEarlierSteps, 0},
	{wave.ReasonSoaking, 17 * time.Minute},
}

// notStarted is a new policy, at spec.revision v2 (none when revision is "").
func notStarted(revision string) fixture {
	p := newPolicy()
	if revision != "" {
		p.Spec.Revision = &v1alpha1.Revision{Name: revision}
	}
	return fixture{newSnapshot(p)}
}

// completedAt is a rollout completed at revision v1 everywhere, its spec
// naming revision (a new one when not v1).
func completedAt(revision string) fixture {
	f := revisioned(v1alpha1.PlacementReplace, "prod", "v1", "v1", keepsAll("v1"))
	f.Policy.Spec.Revision.Name = revision
	f.Policy.Status.Phase = v1alpha1.RolloutCompleted
	for i := range f.Policy.Status.Stages {
		f.Policy.Status.Stages[i].Phase = v1alpha1.StageSucceeded
		f.Policy.Status.Stages[i].CompletionTime = ptr.To(earlier)
	}
	return f
}

// midway is a rollout of v1 in its test stage, its spec naming revision.
func midway(revision string) fixture {
	f := revisioned(v1alpha1.PlacementReplace, "test", "v0", "v1", map[string]string{"test": "v0", "prod": "v0"})
	f.Policy.Spec.Revision.Name = revision
	return f
}

// applied returns the snapshot as it is once the action's status is written,
// a minute later.
func applied(snap *Snapshot, action Action) *Snapshot {
	next := *snap
	next.Policy = snap.Policy.DeepCopy()
	if action.Status != nil {
		next.Policy.Status = *action.Status.DeepCopy()
	}
	next.Now = metav1.NewTime(snap.Now.Add(time.Minute))
	if next.Policy.Status.ActiveStage != snap.Policy.Status.ActiveStage {
		resync(&next)
	}
	return &next
}

// TestPlanWaveHolds checks rule 6a for every reason a wave holds, on a
// policy not started and on one whose spec names a new revision: nothing
// starts, the stages and revisions stay as they are, WaitingForWave says
// why with the gate's message, its Events come once, and the next run is
// due at RecheckAfter; written, the hold changes nothing more.
func TestPlanWaveHolds(t *testing.T) {
	engine := newEngine(t)
	situations := []struct {
		name string
		snap func() *Snapshot
	}{
		{"a policy not started", func() *Snapshot { return notStarted("v2").Snapshot }},
		{"a revisionless policy not started", func() *Snapshot { return notStarted("").Snapshot }},
		{"a completed rollout given a new revision", func() *Snapshot { return completedAt("v2").Snapshot }},
		{"a rollout midway given a new revision", func() *Snapshot { return midway("v2").Snapshot }},
	}
	for _, sit := range situations {
		for _, h := range heldReasons {
			t.Run(sit.name+"/"+h.reason, func(t *testing.T) {
				snap := sit.snap()
				snap.Wave = heldBy(h.reason, h.recheck)
				before := snap.Policy.Status.DeepCopy()
				action := Plan(snap, engine)
				if action.Type != ActionUpdateStatus {
					t.Fatalf("action %s (%s), want the hold written in status", action.Type, action.Why)
				}
				st := action.Status
				if st.ActiveStage != before.ActiveStage || st.UpdateRevision != before.UpdateRevision ||
					!equality.Semantic.DeepEqual(st.Stages, before.Stages) {
					t.Errorf("held, yet the status moves: stage %q->%q, update revision %q->%q, stages %v -> %v",
						before.ActiveStage, st.ActiveStage, before.UpdateRevision, st.UpdateRevision, before.Stages, st.Stages)
				}
				c := condition(t, st, v1alpha1.ConditionWaitingForWave)
				if c.Status != metav1.ConditionTrue || c.Reason != h.reason || !strings.Contains(c.Message, snap.Wave.Message) {
					t.Errorf("WaitingForWave %s/%s %q, want True/%s with the gate's message", c.Status, c.Reason, c.Message, h.reason)
				}
				want := []string{"Normal/" + v1alpha1.EventReasonWaitingForWave}
				if h.reason == wave.ReasonEarlierStepFailed {
					want = append(want, "Warning/"+v1alpha1.EventReasonWaveRevisionGivenUp)
				}
				if got := eventKeys(action.Events); !slices.Equal(got, want) {
					t.Errorf("events %v, want %v", got, want)
				}
				if action.RequeueAfter != h.recheck {
					t.Errorf("requeue after %v, want the decision's %v", action.RequeueAfter, h.recheck)
				}

				// Written, the hold stays: no event again, no start.
				next := applied(snap, action)
				again := Plan(next, engine)
				if len(again.Events) > 0 && slices.ContainsFunc(again.Events, func(e Event) bool {
					return strings.Contains(e.Reason, "Wave") || e.Reason == v1alpha1.EventReasonRevisionStarted
				}) {
					t.Errorf("the next run emits %v again", eventKeys(again.Events))
				}
				if again.Status != nil && (again.Status.UpdateRevision != before.UpdateRevision ||
					before.ActiveStage == "" && again.Status.ActiveStage != "") {
					t.Errorf("the next run starts: update revision %q, stage %q (%s)", again.Status.UpdateRevision, again.Status.ActiveStage, again.Why)
				}
				if again.Status != nil && meta.FindStatusCondition(again.Status.Conditions, v1alpha1.ConditionWaitingForWave) == nil {
					t.Errorf("the next run (%s) drops WaitingForWave while held", again.Why)
				}
				if before.ActiveStage == "" && (again.Type != ActionNone || again.RequeueAfter != h.recheck) {
					t.Errorf("a held policy not started: next run %s (%s) requeued after %v, want None after %v",
						again.Type, again.Why, again.RequeueAfter, h.recheck)
				}
			})
		}
	}
}

// TestPlanWaveReleasesAfterHeld checks that a held revision starts once
// the wave releases it, or no wave orders the policy any more: the same
// start as without a wave, WaitingForWave gone and WaveReleased once.
func TestPlanWaveReleasesAfterHeld(t *testing.T) {
	engine := newEngine(t)
	for _, sit := range []struct {
		name string
		snap func() *Snapshot
	}{
		{"a policy not started", func() *Snapshot { return notStarted("v2").Snapshot }},
		{"a completed rollout given a new revision", func() *Snapshot { return completedAt("v2").Snapshot }},
	} {
		for _, release := range []*wave.Decision{releasedBy(), nil} {
			name := sit.name + "/no wave"
			if release != nil {
				name = sit.name + "/" + release.Reason
			}
			t.Run(name, func(t *testing.T) {
				snap := sit.snap()
				snap.Wave = heldBy(wave.ReasonWaitingForEarlierSteps, 0)
				next := applied(snap, Plan(snap, engine))
				next.Wave = release
				action := Plan(next, engine)

				free := applied(snap, Action{})
				free.Policy.Status = *snap.Policy.Status.DeepCopy()
				free.Wave = nil
				want := Plan(free, engine)
				if action.Type != ActionUpdateStatus || action.Status.UpdateRevision != "v2" || action.Status.ActiveStage != "dev" {
					t.Fatalf("released: %s (%s), want the rollout of v2 started in dev", action.Type, action.Why)
				}
				if c := meta.FindStatusCondition(action.Status.Conditions, v1alpha1.ConditionWaitingForWave); c != nil {
					t.Errorf("released, yet WaitingForWave stays: %+v", *c)
				}
				wantEvents := append(eventKeys(want.Events), "Normal/"+v1alpha1.EventReasonWaveReleased)
				if got := eventKeys(action.Events); !slices.Equal(got, wantEvents) {
					t.Errorf("events %v, want %v", got, wantEvents)
				}
				if !equality.Semantic.DeepEqual(action.Status.Stages, want.Status.Stages) {
					t.Errorf("released start %v differs from the start without a wave %v", action.Status.Stages, want.Status.Stages)
				}
				after := Plan(applied(next, action), engine)
				if slices.Contains(eventKeys(after.Events), "Normal/"+v1alpha1.EventReasonWaveReleased) {
					t.Errorf("WaveReleased again on the next run (%s)", after.Why)
				}
			})
		}
	}
}

// TestPlanWaveLeavesRunningRevision checks that a revision started is
// never touched by the gate: whatever the wave decides, Plan makes the
// change it makes without a wave, but for status.wave, which says the
// wave's step and that it does not hold the revision the policy runs.
func TestPlanWaveLeavesRunningRevision(t *testing.T) {
	engine := newEngine(t)
	running := map[string]func() *Snapshot{
		"completed at its revision":    func() *Snapshot { return completedAt("v1").Snapshot },
		"midway through its revision":  func() *Snapshot { return midway("v1").Snapshot },
		"resolved in its second stage": func() *Snapshot { return at("test").bound().reporting(deployment, "0").Snapshot },
		"done in its first stage":      func() *Snapshot { return at("dev").bound().reporting(deployment, "1").Snapshot },
	}
	for name, snap := range running {
		for _, h := range heldReasons {
			t.Run(name+"/"+h.reason, func(t *testing.T) {
				free := Plan(snap(), engine)
				gated := snap()
				gated.Wave = heldBy(h.reason, h.recheck)
				got := Plan(gated, engine)
				// Evaluations are timed by the real clock.
				got.Evaluations, free.Evaluations = nil, nil
				if got.Status != nil {
					want := &v1alpha1.WaveStatus{Name: "regions", Step: "eu", Position: "2/3", State: v1alpha1.WaveReleased,
						Revision: gated.Policy.Spec.SpecRevision()}
					if !equality.Semantic.DeepEqual(got.Status.Wave, want) {
						t.Errorf("status.wave %+v, want %+v", deref(got.Status.Wave), *want)
					}
					got.Status.Wave = nil
				}
				if !equality.Semantic.DeepEqual(got, free) {
					t.Errorf("the wave touches a running revision:\n got %s (%s) %v\nwant %s (%s) %v",
						got.Type, got.Why, eventKeys(got.Events), free.Type, free.Why, eventKeys(free.Events))
				}
			})
		}
	}
}

// TestPlanWaveFirstStepAndNotOrdered checks that a policy the wave
// releases without waiting (first step, not ordered) starts as it does
// without a wave, with no wave condition or Event; in the first step,
// status.wave says so.
func TestPlanWaveFirstStepAndNotOrdered(t *testing.T) {
	engine := newEngine(t)
	for _, d := range []*wave.Decision{
		{Released: true, Wave: "regions", Step: "canary", StepIndex: 0, Steps: 3, Reason: wave.ReasonFirstStep},
		{Released: true, StepIndex: -1, Reason: wave.ReasonNotOrdered},
	} {
		t.Run(d.Reason, func(t *testing.T) {
			free := Plan(notStarted("v2").Snapshot, engine)
			snap := notStarted("v2").Snapshot
			snap.Wave = d
			got := Plan(snap, engine)
			if d.Wave != "" && got.Status != nil {
				want := &v1alpha1.WaveStatus{Name: "regions", Step: "canary", Position: "1/3", State: v1alpha1.WaveReleased, Revision: "v2"}
				if !equality.Semantic.DeepEqual(got.Status.Wave, want) {
					t.Errorf("status.wave %+v, want %+v", deref(got.Status.Wave), *want)
				}
				got.Status.Wave = nil
			}
			if !equality.Semantic.DeepEqual(got, free) {
				t.Errorf("released at once: %s (%s) %v, want as without a wave: %s (%s) %v",
					got.Type, got.Why, eventKeys(got.Events), free.Type, free.Why, eventKeys(free.Events))
			}
		})
	}
}

// TestPlanWaveEventsOncePerRevision checks that WaitingForWave and
// WaveRevisionGivenUp come once per revision held, known from the
// condition as written: a change of reason for the same revision is
// written without them, a new revision held brings them again.
func TestPlanWaveEventsOncePerRevision(t *testing.T) {
	engine := newEngine(t)
	snap := completedAt("v2").Snapshot
	snap.Wave = heldBy(wave.ReasonWaitingForEarlierSteps, 0)
	first := Plan(snap, engine)
	next := applied(snap, first)

	next.Wave = heldBy(wave.ReasonSoaking, time.Minute)
	soaking := Plan(next, engine)
	if soaking.Type != ActionUpdateStatus || len(soaking.Events) > 0 {
		t.Errorf("same revision, now soaking: %s %v, want the condition written without an Event", soaking.Type, eventKeys(soaking.Events))
	}
	next = applied(next, soaking)

	next.Wave = heldBy(wave.ReasonEarlierStepFailed, 0)
	failed := Plan(next, engine)
	if got := eventKeys(failed.Events); !slices.Equal(got, []string{"Warning/" + v1alpha1.EventReasonWaveRevisionGivenUp}) {
		t.Errorf("v2 given up while held: events %v, want the Warning alone", got)
	}
	next = applied(next, failed)
	if again := Plan(next, engine); slices.Contains(eventKeys(again.Events), "Warning/"+v1alpha1.EventReasonWaveRevisionGivenUp) {
		t.Errorf("the Warning again for the same revision (%s)", again.Why)
	}

	next.Policy.Spec.Revision.Name = "v3"
	next.Wave = heldBy(wave.ReasonWaitingForEarlierSteps, 0)
	v3 := Plan(next, engine)
	if got := eventKeys(v3.Events); !slices.Equal(got, []string{"Normal/" + v1alpha1.EventReasonWaitingForWave}) {
		t.Errorf("v3 held: events %v, want WaitingForWave once more", got)
	}
	if v3.Status == nil || !strings.Contains(condition(t, v3.Status, v1alpha1.ConditionWaitingForWave).Message, `"v3"`) {
		t.Errorf("v3 held: the condition does not name v3")
	}
}

// TestPlanWaveHoldsARestartNotStarted checks that the restartedAt
// annotation does not start a rollout the wave holds: a restart of a
// policy not started is a start.
func TestPlanWaveHoldsARestartNotStarted(t *testing.T) {
	engine := newEngine(t)
	snap := notStarted("v2").with(restart).Snapshot
	snap.Wave = heldBy(wave.ReasonWaitingForEarlierSteps, 0)
	action := Plan(snap, engine)
	if action.Status == nil || action.Status.ActiveStage != "" || action.Status.RestartedAt != "" {
		t.Fatalf("a held policy not started restarts: %s (%s)", action.Type, action.Why)
	}
}

// TestPlanWaveRestartNotStartedStartsTheSpecRevision checks that a
// restartedAt annotation on a policy not started, once nothing holds it,
// starts the spec's revision, as rule 8 would, and not status's
// updateRevision "", which places the whole downsync, every revision's
// objects: should the wave hold the spec's revision again before rule 8
// moves the rollout to it, the rollout goes on with "" and its WECs run
// revisions the wave never released (found by TestPlanStateMachine).
func TestPlanWaveRestartNotStartedStartsTheSpecRevision(t *testing.T) {
	engine := newEngine(t)
	tests := []struct {
		name string
		wave *wave.Decision
	}{
		{"released by the wave", releasedBy()},
		{"in the wave's first step", &wave.Decision{Released: true, Wave: "regions", Step: "canary", StepIndex: 0, Steps: 3, Reason: wave.ReasonFirstStep}},
		{"no wave", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := notStarted("v2").with(restart).Snapshot
			snap.Wave = tt.wave
			action := Plan(snap, engine)
			if action.Status == nil {
				t.Fatalf("restart of a policy not started: %s (%s), want a start", action.Type, action.Why)
			}
			if st := action.Status; st.ActiveStage != "dev" || st.UpdateRevision != "v2" || st.RestartedAt != restartedAt {
				t.Fatalf("restart of a policy not started (%s): stage %q, update revision %q, restartedAt %q; want v2 started in dev, the restart recorded",
					action.Why, st.ActiveStage, st.UpdateRevision, st.RestartedAt)
			}
			// The wave holds v2 again: the rollout goes on with what
			// it started, v2, and nothing else.
			next := applied(snap, action)
			next.Wave = heldBy(wave.ReasonEarlierSpaceDown, 0)
			for range 3 {
				a := Plan(next, engine)
				if a.BindingPolicy != nil && a.Type != ActionDeleteBindingPolicy &&
					a.BindingPolicy.Name != v1alpha1.StagePlacement(snap.Policy.Name, "dev").At("v2").String() {
					t.Fatalf("%s BindingPolicy %s (%s), want only dev's at v2", a.Type, a.BindingPolicy.Name, a.Why)
				}
				next = applied(next, a)
			}
		})
	}
}

// TestPlanWaveKeepsAFailureOfTheRunningRevision checks that a failure of
// the revision a rollout runs, which the spec's new revision would
// release (onFailure Abort, rule 4), stays recorded while the wave holds
// that revision: released, the rollout goes on with the failed revision,
// whose stage fails again, and the two writes alternate for ever (found
// by TestPlanStateMachine). Once the wave releases the new revision, the
// failure goes and the new revision starts.
func TestPlanWaveKeepsAFailureOfTheRunningRevision(t *testing.T) {
	engine := newEngine(t)
	failed := map[string]func() *Snapshot{
		"completed at v1": func() *Snapshot { return completedAt("v2").Snapshot },
		"midway with v1":  func() *Snapshot { return midway("v2").Snapshot },
	}
	for name, snap := range failed {
		fail := func(s *Snapshot) *Snapshot {
			stage := s.Policy.Status.ActiveStage
			if stage == "" {
				stage = s.Policy.Spec.Stages[len(s.Policy.Spec.Stages)-1].Name
			}
			s.Policy.Status.Failure = &v1alpha1.RolloutFailure{Stage: stage, Reason: v1alpha1.ReasonFailureConditionMet,
				Action: v1alpha1.FailureAbort, Revision: s.Policy.Status.UpdateRevision, SpecDigest: specDigest(s.Policy), Time: earlier}
			return s
		}
		for _, h := range heldReasons {
			t.Run(name+"/"+h.reason, func(t *testing.T) {
				s := fail(snap())
				s.Wave = heldBy(h.reason, h.recheck)
				action := Plan(s, engine)
				if action.Status != nil && action.Status.Failure == nil {
					t.Errorf("the failure of v1 is released while the wave holds v2: %s (%s)", action.Type, action.Why)
				}
				if action.Status != nil {
					if msg := condition(t, action.Status, v1alpha1.ConditionProgressing).Message; !strings.Contains(msg, `wave releases revision "v2"`) {
						t.Errorf("held: Progressing says %q, not that the wave's v2 releases it", msg)
					}
				}
			})
		}
		t.Run(name+"/released", func(t *testing.T) {
			s := fail(snap())
			s.Wave = releasedBy()
			action := Plan(s, engine)
			if action.Status == nil || action.Status.Failure != nil {
				t.Errorf("the wave released v2 and the failure of v1 stays: %s (%s)", action.Type, action.Why)
			}
		})
	}
}

// BenchmarkPlanAdvanceInAWave is BenchmarkPlanAdvance with the policy in a
// wave's first step, released: what rule 6a adds to every run of an
// ordered policy.
func BenchmarkPlanAdvanceInAWave(b *testing.B) {
	engine, err := expression.NewEngine()
	if err != nil {
		b.Fatal(err)
	}
	snap := at("dev").bound().reporting(deployment, "1").Snapshot
	snap.CombinedStatuses[0].UID, snap.CombinedStatuses[0].ResourceVersion = "cs-dev", "1"
	snap.Wave = &wave.Decision{Released: true, Wave: "regions", Step: "canary", StepIndex: 0, Steps: 3, Reason: wave.ReasonFirstStep}
	if action := Plan(snap, engine); action.Type == ActionNone {
		b.Fatalf("the snapshot plans nothing: %s", describe(action))
	}
	b.ReportAllocs()
	for b.Loop() {
		Plan(snap, engine)
	}
}
