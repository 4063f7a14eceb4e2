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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/freeze"
)

// ---------------------------------------------------------------------------
// Rule 6c: a RolloutFreeze holds starts (docs/proposals/freezes.md)
// ---------------------------------------------------------------------------

// frozenFor is a decision of a freeze "xmas" holding stages (every stage
// when none is named) for a day.
func frozenFor(stages ...string) *freeze.Decision {
	if len(stages) == 0 {
		stages = nil
	}
	return &freeze.Decision{RecheckAfter: 24 * time.Hour, Holds: []freeze.Hold{{Freeze: "xmas", Reason: freeze.ReasonFreezeActive,
		Message: "code freeze", Until: now.Add(24 * time.Hour), Stages: stages}}}
}

// frozenCondition returns the Frozen condition of status, or nil.
func frozenCondition(status *v1alpha1.StagedBindingPolicyStatus) *metav1.Condition {
	if status == nil {
		return nil
	}
	return meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionFrozen)
}

// TestPlanFreezeHoldsTheStart checks rule 6c where rules 7 to 9 would
// start the first stage: nothing starts, the rollout keeps what it runs,
// Frozen names the freeze, its end and its reason, its Event comes once,
// and the run is due again when the freeze ends.
func TestPlanFreezeHoldsTheStart(t *testing.T) {
	engine := newEngine(t)
	situations := []struct {
		name string
		snap func() *Snapshot
	}{
		{"a policy not started", func() *Snapshot { return notStarted("v2").Snapshot }},
		{"a revisionless policy not started", func() *Snapshot { return notStarted("").Snapshot }},
		{"a completed rollout given a new revision", func() *Snapshot { return completedAt("v2").Snapshot }},
		{"a rollout midway given a new revision", func() *Snapshot { return midway("v2").Snapshot }},
		{"a completed rollout restarted", func() *Snapshot { return completedAt("v1").with(restart).Snapshot }},
	}
	for _, sit := range situations {
		t.Run(sit.name, func(t *testing.T) {
			snap := sit.snap()
			snap.Freeze = frozenFor()
			before := snap.Policy.Status.DeepCopy()
			action := Plan(snap, engine)
			for range 3 {
				if action.Status != nil {
					st := action.Status
					if st.UpdateRevision != before.UpdateRevision || st.RestartedAt != before.RestartedAt ||
						before.ActiveStage == "" && st.ActiveStage != "" {
						t.Fatalf("frozen, yet %s starts: stage %q->%q, revision %q->%q", action.Why,
							before.ActiveStage, st.ActiveStage, before.UpdateRevision, st.UpdateRevision)
					}
				}
				if action.Type == ActionUpdateStatus {
					break
				}
				if action.Type == ActionCreateBindingPolicy && action.BindingPolicy.Name == "web.stage.dev" && before.ActiveStage == "" {
					t.Fatalf("frozen, yet it places dev: %s", action.Why)
				}
				// A running rollout may have another change to make first.
				snap = placedOrApplied(snap, action)
				action = Plan(snap, engine)
			}
			c := frozenCondition(action.Status)
			if c == nil || c.Status != metav1.ConditionTrue || c.Reason != freeze.ReasonFreezeActive {
				t.Fatalf("Frozen = %+v, want True FreezeActive (action %s: %s)", c, action.Type, action.Why)
			}
			if want := `stage "dev" does not start: frozen by xmas until 2026-03-02 12:00 UTC: code freeze`; c.Message != want {
				t.Errorf("message %q, want %q", c.Message, want)
			}
			if got := eventKeys(action.Events); !slices.Contains(got, "Normal/Frozen") {
				t.Errorf("events %v, want a Frozen one", got)
			}
			if action.RequeueAfter <= 0 || action.RequeueAfter > 24*time.Hour {
				t.Errorf("requeue after %s, want at most the freeze's end (24h)", action.RequeueAfter)
			}
			again := Plan(applied(snap, action), engine)
			if slices.Contains(eventKeys(again.Events), "Normal/Frozen") {
				t.Errorf("the Frozen Event comes again: %v", again.Events)
			}
			if again.Status != nil && frozenCondition(again.Status) == nil {
				t.Errorf("the next run drops the Frozen condition: %s", again.Why)
			}
		})
	}
}

// placedOrApplied is the snapshot once a change is made: a status
// written, or a BindingPolicy placed.
func placedOrApplied(snap *Snapshot, action Action) *Snapshot {
	if action.Type == ActionCreateBindingPolicy || action.Type == ActionUpdateBindingPolicy {
		return placed(snap, action.BindingPolicy)
	}
	return applied(snap, action)
}

// TestPlanFreezeHoldsTheNextStage checks rule 6c at a done stage: a
// freeze of the next stage keeps it from being handed over to or
// advanced into, the done stage stays active, and once the freeze ends
// the handover goes on and Frozen goes with an Unfrozen Event. A freeze
// of another stage holds nothing.
func TestPlanFreezeHoldsTheNextStage(t *testing.T) {
	engine := newEngine(t)
	done := func() *Snapshot { return at("dev").bound().reporting(deployment, "1").Snapshot }

	t.Run("a freeze of prod lets dev hand over to test", func(t *testing.T) {
		snap := done()
		snap.Freeze = frozenFor("prod")
		action := Plan(snap, engine)
		if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.test" {
			t.Fatalf("action %s (%s), want test handed over to", action.Type, action.Why)
		}
	})

	snap := done()
	snap.Freeze = frozenFor("test")
	action := Plan(snap, engine)
	if action.Type != ActionUpdateStatus {
		t.Fatalf("action %s (%s), want the hold written", action.Type, action.Why)
	}
	if action.Status.ActiveStage != "dev" || action.Status.StageNamed("dev").Phase != v1alpha1.StageActive {
		t.Errorf("active stage %q (%s), want dev, still active", action.Status.ActiveStage, action.Status.StageNamed("dev").Phase)
	}
	if c := frozenCondition(action.Status); c == nil || !strings.Contains(c.Message, `stage "test" does not start: frozen by xmas`) {
		t.Errorf("Frozen = %+v", c)
	}
	held := applied(snap, action)
	if again := Plan(held, engine); again.Type != ActionNone {
		t.Errorf("held and written, the next run does %s (%s), want nothing", again.Type, again.Why)
	} else if again.RequeueAfter <= 0 || again.RequeueAfter > 24*time.Hour {
		t.Errorf("requeue after %s, want at most the freeze's end", again.RequeueAfter)
	}

	// The freeze ends.
	held.Freeze = nil
	handover := Plan(held, engine)
	if handover.Type != ActionCreateBindingPolicy || handover.BindingPolicy.Name != "web.stage.test" {
		t.Fatalf("unfrozen: action %s (%s), want test handed over to", handover.Type, handover.Why)
	}
	advance := Plan(placed(held, handover.BindingPolicy), engine)
	if advance.Type != ActionUpdateStatus || advance.Status.ActiveStage != "test" {
		t.Fatalf("unfrozen: action %s (%s), want the advance to test recorded", advance.Type, advance.Why)
	}
	if c := frozenCondition(advance.Status); c != nil {
		t.Errorf("unfrozen, Frozen stays: %+v", c)
	}
	if got := eventKeys(advance.Events); !slices.Contains(got, "Normal/Unfrozen") {
		t.Errorf("events %v, want an Unfrozen one", got)
	}
}

// TestPlanFreezeHoldsTheNextBatch checks rule 6c within a stage placed in
// batches: a freeze keeps a new batch, the first one too, from starting,
// and lets a batch started fill.
func TestPlanFreezeHoldsTheNextBatch(t *testing.T) {
	engine := newEngine(t)
	prod := fleetStage(nil)
	tests := []struct {
		name      string
		f         fixture
		wantPlace string // the cluster placed, "" for none
	}{
		{"the first batch", batched(prod), ""},
		{"a batch started fills", batched(prod).on("store-a", now, ""), "store-b"},
		{"a done batch does not start the next", batched(prod).on("store-a", minutesAgo(2), "1").on("store-b", minutesAgo(2), "1"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.f.Freeze = frozenFor("prod")
			action := Plan(tt.f.Snapshot, engine)
			placing := ""
			if action.Type == ActionCreateBindingPolicy {
				placing = strings.TrimPrefix(action.BindingPolicy.Name, "web.stage.prod.on.")
			}
			if placing != tt.wantPlace {
				t.Fatalf("action %s (%s) places %q, want %q", action.Type, action.Why, placing, tt.wantPlace)
			}
			if tt.wantPlace == "" {
				if c := frozenCondition(action.Status); c == nil || c.Status != metav1.ConditionTrue {
					t.Errorf("action %s (%s): Frozen = %+v, want True", action.Type, action.Why, c)
				}
				// A batch done is not the stage done.
				if r := action.Status.StageNamed("prod"); r == nil || r.Phase != v1alpha1.StageActive || action.Status.Phase == v1alpha1.RolloutCompleted {
					t.Errorf("action %s (%s): rollout %s, prod %+v, want prod active", action.Type, action.Why, action.Status.Phase, r)
				}
			}
		})
	}
}

// keptInBatches is a rollout of revision r3 at stage dev whose final
// stage, prod, placed in batches, ran r2 and keeps it: its record says
// so, and only its clusters' own BindingPolicies at r2 place it.
func keptInBatches() fixture {
	prod := fleetStage(nil)
	p := atStage(newPolicy(stage("dev"), stage("test"), prod), "dev")
	p.Spec.Revision = &v1alpha1.Revision{Name: "r3"}
	p.Status.UpdateRevision, p.Status.CurrentRevision = "r3", "r2"
	p.Status.StageNamed("dev").BindingPolicy = "web.stage.dev.r3"
	record := p.Status.StageNamed("prod")
	record.Phase, record.Revision, record.StartTime, record.CompletionTime = v1alpha1.StageSucceeded, "r2", ptr.To(muchEarlier), ptr.To(earlier)
	ran := p.DeepCopy()
	ran.Status.UpdateRevision = "r2"
	own := resolvedAs(ClusterBindingPolicy(ran, prod, "store-a"), "bp-store-a", muchEarlier)
	own.Annotations = map[string]string{v1alpha1.PlacedAnnotation: SealedPlacement(p.UID, prod.Name, "r2", "store-a", muchEarlier.Time)}
	return fixture{newSnapshot(p, revisionBP(p, "dev", "r3"), own)}.bound().reporting(deployment, "0")
}

// accumulatedInBatches is a rollout under Accumulate at stage test whose
// first stage, dev, was placed in batches: only its clusters' own
// BindingPolicies place it.
func accumulatedInBatches() fixture {
	dev := fleetStage(func(s *v1alpha1.Stage) { s.Name = "dev"; s.ClusterSelectors[0].MatchLabels["stage"] = "dev" })
	f := at("test", dev, stage("test"), stage("prod")).bound().reporting(deployment, "0").
		with(func(s *Snapshot) { s.Policy.Spec.Placement = v1alpha1.PlacementAccumulate })
	return f.alsoBP(resolvedAs(ClusterBindingPolicy(f.Policy, dev, "store-a"), "bp-store-a", muchEarlier))
}

// TestPlanFreezeKeepsWhatStagesRun checks that rule 6c holds no
// placement of rule 14 (docs/proposals/freezes.md): the BindingPolicy of
// the revision a later stage keeps, or of a stage done under Accumulate,
// is what the stage runs, not a start, and is placed as without a
// freeze, whether the stage's own clusters' BindingPolicies placed it
// (it had batches) or someone deleted it.
func TestPlanFreezeKeepsWhatStagesRun(t *testing.T) {
	engine := newEngine(t)
	tests := []struct {
		name   string
		frozen []string // the stages frozen, none for every stage
		snap   func() *Snapshot
		want   string // the BindingPolicy placed
	}{
		{"a batched stage's kept revision", nil, func() *Snapshot { return keptInBatches().Snapshot }, "web.stage.prod.r2"},
		{"a batched stage's kept revision, that stage frozen", []string{"prod"}, func() *Snapshot { return keptInBatches().Snapshot }, "web.stage.prod.r2"},
		{"a batched stage done under Accumulate", []string{"dev"}, func() *Snapshot { return accumulatedInBatches().Snapshot }, "web.stage.dev"},
		{"a kept revision deleted by someone", nil, func() *Snapshot {
			f := revisioned(v1alpha1.PlacementAccumulate, "dev", "v1", "v2", keepsAll("v1")).bound().reporting(deployment, "0")
			f.BindingPolicies = slices.DeleteFunc(f.BindingPolicies, func(bp ksv1alpha1.BindingPolicy) bool { return bp.Name == "web.stage.test.v1" })
			return f.Snapshot
		}, "web.stage.test.v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := tt.snap()
			snap.Freeze = frozenFor(tt.frozen...)
			action := Plan(snap, engine)
			if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != tt.want {
				t.Fatalf("frozen: action %s (%s), want %s placed", action.Type, action.Why, tt.want)
			}
			if unfrozen := Plan(tt.snap(), engine); !equality.Semantic.DeepEqual(action, unfrozen) {
				t.Errorf("frozen: %s (%s)\nwant as unfrozen: %s (%s)", action.Type, action.Why, unfrozen.Type, unfrozen.Why)
			}
		})
	}
}

// TestPlanFreezeHoldsAnApprovedStage: an approved stage waits, still
// AwaitingApproval, while it is frozen, and starts once unfrozen.
func TestPlanFreezeHoldsAnApprovedStage(t *testing.T) {
	engine := newEngine(t)
	snap := awaitingAt().with(withApprovals(approvedBy("test", "alice"))).Snapshot
	snap.Freeze = frozenFor("test")
	action := Plan(snap, engine)
	if action.Status == nil || action.Status.StageNamed("test").Phase != v1alpha1.StageAwaitingApproval {
		t.Fatalf("action %s (%s), want test still awaiting approval", action.Type, action.Why)
	}
	if c := frozenCondition(action.Status); c == nil {
		t.Errorf("no Frozen condition")
	}
	snap.Freeze = nil
	if action := Plan(snap, engine); action.Status == nil || action.Status.StageNamed("test").Phase != v1alpha1.StageActive {
		t.Fatalf("unfrozen: action %s (%s), want test started", action.Type, action.Why)
	}
}

// TestPlanFreezeNeverHoldsAnAbortOrASuspension: with a freeze of every
// stage, an aborted, a suspended or a resumed rollout does what it does
// without one, and says nothing of a freeze.
func TestPlanFreezeNeverHoldsAnAbortOrASuspension(t *testing.T) {
	engine := newEngine(t)
	tests := []struct {
		name string
		snap func() *Snapshot
	}{
		{"an abort midway", func() *Snapshot {
			f := midway("v1")
			f.Policy.Spec.Abort = true
			return f.Snapshot
		}},
		{"an abort given a new revision", func() *Snapshot {
			f := midway("v2")
			f.Policy.Spec.Abort = true
			return f.Snapshot
		}},
		{"a suspension", func() *Snapshot { return at("dev").bound().reporting(deployment, "1").with(suspend).Snapshot }},
		{"a suspension of a policy not started", func() *Snapshot { return notStarted("v2").with(suspend).Snapshot }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frozen := tt.snap()
			frozen.Freeze = frozenFor()
			got, want := Plan(frozen, engine), Plan(tt.snap(), engine)
			if !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("frozen: %s (%s)\nwant as unfrozen: %s (%s)", got.Type, got.Why, want.Type, want.Why)
			}
		})
	}
}

// TestPlanFreezeSaysWhyABrokenFreezeHolds: an invalid freeze, and
// freezes that cannot be read, hold with their reason and message.
func TestPlanFreezeSaysWhyABrokenFreezeHolds(t *testing.T) {
	engine := newEngine(t)
	for _, h := range []freeze.Hold{
		{Freeze: "typo", Reason: freeze.ReasonFreezeInvalid, Message: `schedule 1 ("0 0 * * *"): unknown time zone "Europe/Berln"`},
		{Reason: freeze.ReasonFreezesUnreadable, Message: "the stager cannot read the hosting cluster's RolloutFreezes: no stage starts until it can"},
	} {
		t.Run(h.Reason, func(t *testing.T) {
			snap := notStarted("v2").Snapshot
			snap.Freeze = &freeze.Decision{Holds: []freeze.Hold{h}, RecheckAfter: 10 * time.Second}
			action := Plan(snap, engine)
			c := frozenCondition(action.Status)
			if c == nil || c.Reason != h.Reason || !strings.Contains(c.Message, h.Message) {
				t.Fatalf("Frozen = %+v, want %s with %q", c, h.Reason, h.Message)
			}
			if action.Status.ActiveStage != "" {
				t.Errorf("stage %q started", action.Status.ActiveStage)
			}
		})
	}
}
