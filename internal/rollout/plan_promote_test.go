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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// ---------------------------------------------------------------------------
// Rule 15a: break-glass promotion (spec.promotion)
// ---------------------------------------------------------------------------

// promotion is a request of stage (full when stage is ""), by alice.
func promotion(stage string) *v1alpha1.Promotion {
	return &v1alpha1.Promotion{Stage: stage, Full: stage == "", Reason: "the metrics backend is down; verified by hand",
		RequestedBy: "alice", RequestedAt: earlier}
}

// requesting sets spec.promotion.
func requesting(p *v1alpha1.Promotion) func(*Snapshot) {
	return func(s *Snapshot) { s.Policy.Spec.Promotion = p }
}

// promoted reports whether action promoted a stage: it has a Promoted
// Warning Event.
func promoted(action Action) bool {
	return slices.Contains(eventKeys(action.Events), "Warning/"+v1alpha1.EventReasonPromoted)
}

// batchedDev is a policy at its first stage dev, placed in batches, its
// census resolved and no cluster placed yet.
func batchedDev(dev v1alpha1.Stage) fixture {
	p := atStage(newPolicy(dev, stage("test")), "dev")
	census := resolvedAs(CensusBindingPolicy(p, dev), "bp-census", muchEarlier)
	f := fixture{newSnapshot(p, census)}
	f.ActiveBindingPolicy = census.DeepCopy()
	return f
}

func TestPlanPromotes(t *testing.T) {
	engine := newEngine(t)
	soaked := stage("dev")
	soaked.SoakDuration = &metav1.Duration{Duration: time.Hour}
	trial := errorRate(3)
	trial.Name, trial.DryRun = "trial", true
	soaked.Analysis = []v1alpha1.Analysis{errorRate(3), trial}
	fleet := fleetStage(func(s *v1alpha1.Stage) { s.MaxConcurrency = ptr.To(intstr.FromInt32(1)) })
	fleet.Name = "dev"
	tests := []struct {
		name        string
		snap        *Snapshot
		wantActive  string
		wantPhase   v1alpha1.RolloutPhase
		wantSkipped []string
		wantEvents  []string
	}{
		{name: "the active stage, its condition unmet, advances",
			snap:       at("dev").bound().reporting(deployment, "0").with(requesting(promotion("dev"))).Snapshot,
			wantActive: "test", wantPhase: v1alpha1.RolloutProgressing, wantSkipped: []string{"Condition"},
			wantEvents: []string{"Warning/Promoted", "Normal/StageSucceeded", "Normal/StageStarted"}},
		{name: "the active stage before its Binding is resolved",
			snap:       at("dev").with(requesting(promotion("dev"))).Snapshot,
			wantActive: "test", wantPhase: v1alpha1.RolloutProgressing, wantSkipped: []string{"Condition"},
			wantEvents: []string{"Warning/Promoted", "Normal/StageSucceeded", "Normal/StageStarted"}},
		{name: "full promotes the active stage",
			snap:       at("dev").bound().with(requesting(promotion(""))).Snapshot,
			wantActive: "test", wantPhase: v1alpha1.RolloutProgressing, wantSkipped: []string{"Condition"},
			wantEvents: []string{"Warning/Promoted", "Normal/StageSucceeded", "Normal/StageStarted"}},
		{name: "the final stage completes the rollout",
			snap:       at("prod").bound().reporting(deployment, "0").with(requesting(promotion("prod"))).Snapshot,
			wantActive: "prod", wantPhase: v1alpha1.RolloutCompleted, wantSkipped: []string{"Condition"},
			wantEvents: []string{"Warning/Promoted", "Normal/RolloutCompleted"}},
		{name: "soak and analyses are named, a dry run is no gate",
			snap:       at("dev", soaked, stage("test")).bound().reporting(deployment, "1").with(requesting(promotion("dev"))).Snapshot,
			wantActive: "test", wantPhase: v1alpha1.RolloutProgressing, wantSkipped: []string{"Condition", "Soak", "Analysis:error-rate"},
			wantEvents: []string{"Warning/Promoted", "Normal/StageSucceeded", "Normal/StageStarted"}},
		{name: "a stage placed in batches is done where it stands",
			snap:       batchedDev(fleet).with(requesting(promotion("dev"))).Snapshot,
			wantActive: "test", wantPhase: v1alpha1.RolloutProgressing, wantSkipped: []string{"Condition", "Batches"},
			wantEvents: []string{"Warning/Promoted", "Normal/StageSucceeded", "Normal/StageStarted"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			action := Plan(tt.snap, engine)
			if action.Type != ActionUpdateStatus {
				t.Fatalf("action %s (%s), want the promotion's status write", action.Type, action.Why)
			}
			if got := eventKeys(action.Events); !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events %v, want %v", got, tt.wantEvents)
			}
			if action.Status.ActiveStage != tt.wantActive || action.Status.Phase != tt.wantPhase {
				t.Errorf("active %q phase %s, want %q %s", action.Status.ActiveStage, action.Status.Phase, tt.wantActive, tt.wantPhase)
			}
			from := tt.snap.Policy.Status.ActiveStage
			record := action.Status.StageNamed(from)
			if record.Phase != v1alpha1.StageSucceeded || record.CompletionTime == nil {
				t.Errorf("stage %q is %s, want Succeeded with its completion time", from, record.Phase)
			}
			req := tt.snap.Policy.Spec.Promotion
			want := &v1alpha1.StagePromotion{By: "alice", Time: now, RequestedAt: req.RequestedAt, Reason: req.Reason, Full: req.Full, Skipped: tt.wantSkipped}
			if got := record.Promotion; got == nil || got.By != want.By || !got.Time.Equal(&want.Time) || !got.RequestedAt.Equal(&want.RequestedAt) ||
				got.Reason != want.Reason || got.Full != want.Full || !slices.Equal(got.Skipped, want.Skipped) {
				t.Errorf("stage record's promotion %+v, want %+v", got, want)
			}
			last := action.Status.LastPromotion
			if last == nil || last.Outcome != v1alpha1.PromotionApplied || last.Digest != PromotionDigest(req) || last.RequestedBy != "alice" {
				t.Errorf("lastPromotion %+v, want the request Applied", last)
			}
			if note := action.Events[0].Note; !strings.Contains(note, "alice") || !strings.Contains(note, req.Reason) ||
				!strings.Contains(note, strings.Join(tt.wantSkipped, ", ")) {
				t.Errorf("Promoted note %q does not say who, why and what was skipped", note)
			}
			// Taken once: the same request does not promote the next stage.
			if !req.Full && tt.wantPhase != v1alpha1.RolloutCompleted {
				if next := replan(t, tt.snap, engine, action); promoted(next) {
					t.Errorf("the same request promoted again: %s (%s)", next.Type, next.Why)
				}
			}
		})
	}
}

// atRevision is a policy rolling revision rev out, at dev, whose
// BindingPolicy is placed.
func atRevision(rev string) fixture {
	p := atStage(newPolicy(), "dev")
	p.Spec.Revision = &v1alpha1.Revision{Name: rev}
	p.Status.UpdateRevision = rev
	bp := DesiredBindingPolicy(p, p.Spec.Stages[0])
	bp.UID = "bp-dev"
	return fixture{newSnapshot(p, bp)}
}

func TestPlanPromotionIgnored(t *testing.T) {
	engine := newEngine(t)
	completed := func(s *Snapshot) {
		r := s.Policy.Status.StageNamed("prod")
		r.Phase, r.CompletionTime = v1alpha1.StageSucceeded, ptr.To(earlier)
		s.Policy.Status.Phase = v1alpha1.RolloutCompleted
	}
	forV1 := promotion("dev")
	forV1.Revision = "v1"
	// tookAt records that a later request (B) was taken at requestedAt:
	// spec.promotion set back to an earlier one (A), as a stale manifest
	// applied again would, is not a new request.
	tookAt := func(requestedAt metav1.Time) func(*Snapshot) {
		return func(s *Snapshot) {
			b := promotion("dev")
			b.Reason, b.RequestedAt = "a later request", requestedAt
			s.Policy.Status.LastPromotion = &v1alpha1.LastPromotion{Digest: PromotionDigest(b), RequestedBy: b.RequestedBy,
				RequestedAt: requestedAt, Outcome: v1alpha1.PromotionApplied}
		}
	}
	tests := []struct {
		name, want string
		snap       *Snapshot
	}{
		{name: "a stage that is not the active one", want: `stage "prod" is not the active stage`,
			snap: at("dev").bound().with(requesting(promotion("prod"))).Snapshot},
		{name: "a stage done already", want: `stage "dev" is not the active stage`,
			snap: at("test").bound().with(requesting(promotion("dev"))).Snapshot},
		{name: "a complete rollout", want: "the rollout is complete",
			snap: at("prod").bound().reporting(deployment, "1").with(completed).with(requesting(promotion(""))).Snapshot},
		{name: "a request for another revision", want: `made for revision "v1"`,
			snap: atRevision("v2").with(requesting(forV1)).Snapshot},
		{name: "a request older than the last one taken", want: "not after the last request taken",
			snap: at("dev").bound().with(tookAt(now)).with(requesting(promotion("dev"))).Snapshot},
		{name: "a request as old as the last one taken", want: "not after the last request taken",
			snap: at("dev").bound().with(tookAt(earlier)).with(requesting(promotion("dev"))).Snapshot},
		{name: "an aborting rollout", want: "aborting",
			snap: at("dev").bound().with(func(s *Snapshot) { s.Policy.Spec.Abort = true }).with(requesting(promotion("dev"))).Snapshot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			action := Plan(tt.snap, engine)
			if action.Type != ActionUpdateStatus || !slices.Equal(eventKeys(action.Events), []string{"Warning/PromotionIgnored"}) {
				t.Fatalf("action %s (%s) events %v, want a status write with one PromotionIgnored", action.Type, action.Why, eventKeys(action.Events))
			}
			if !strings.Contains(action.Events[0].Note, tt.want) {
				t.Errorf("note %q does not say %q", action.Events[0].Note, tt.want)
			}
			last := action.Status.LastPromotion
			if last == nil || last.Outcome != v1alpha1.PromotionIgnored || last.Digest != PromotionDigest(tt.snap.Policy.Spec.Promotion) {
				t.Errorf("lastPromotion %+v, want the request Ignored", last)
			}
			before := tt.snap.Policy.Status
			if action.Status.ActiveStage != before.ActiveStage || action.Status.Phase != before.Phase {
				t.Errorf("the ignored request moved the rollout: %q %s, was %q %s", action.Status.ActiveStage, action.Status.Phase,
					before.ActiveStage, before.Phase)
			}
			for _, r := range action.Status.Stages {
				if r.Promotion != nil {
					t.Errorf("stage %q recorded as promoted", r.Name)
				}
			}
			// Consumed: it never fires later.
			if next := replan(t, tt.snap, engine, action); promoted(next) || slices.Contains(eventKeys(next.Events), "Warning/PromotionIgnored") {
				t.Errorf("the consumed request acted again: %s (%s)", next.Type, next.Why)
			}
		})
	}
}

// TestPlanPromotionWaits: a request that cannot apply yet is kept, not
// consumed: an approval gate, a suspension.
func TestPlanPromotionWaits(t *testing.T) {
	engine := newEngine(t)
	tests := []struct {
		name string
		snap *Snapshot
	}{
		{name: "a stage awaiting approval is not promoted",
			snap: awaitingAt().with(requesting(promotion("test"))).Snapshot},
		{name: "full does not pass an approval gate",
			snap: awaitingAt().with(withApprovals(testUnapproved)).with(requesting(promotion(""))).Snapshot},
		{name: "a suspended rollout waits",
			snap: at("dev").bound().with(suspend).with(requesting(promotion("dev"))).Snapshot},
		{name: "the active stage's BindingPolicy is created first",
			snap: fixture{newSnapshot(atStage(newPolicy(), "dev"))}.with(requesting(promotion("dev"))).Snapshot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			action := Plan(tt.snap, engine)
			if promoted(action) || slices.Contains(eventKeys(action.Events), "Warning/PromotionIgnored") {
				t.Fatalf("action %s (%s) took the request", action.Type, action.Why)
			}
			if action.Status != nil && action.Status.LastPromotion != nil {
				t.Errorf("the request was consumed: %+v", action.Status.LastPromotion)
			}
			if action.Status != nil && action.Status.ActiveStage != tt.snap.Policy.Status.ActiveStage {
				t.Errorf("the active stage moved to %q", action.Status.ActiveStage)
			}
		})
	}
}

// TestPlanFullPromotion: full promotes each stage as it becomes active,
// waits at an approval gate until the stage is approved (the promotion
// keeps the approval valid), and completes the rollout.
func TestPlanFullPromotion(t *testing.T) {
	engine := newEngine(t)
	snap := fixture{newSnapshot(atStage(newPolicy(gated()...), "dev"))}.with(requesting(promotion(""))).Snapshot
	snap.Policy.Status.StageNamed("test").ApprovalRequestedTime = nil
	var promotedStages []string
	for step := 0; step < 30 && snap.Policy.Status.Phase != v1alpha1.RolloutCompleted; step++ {
		action := Plan(snap, engine)
		if promoted(action) {
			promotedStages = append(promotedStages, snap.Policy.Status.ActiveStage)
		}
		if r := snap.Policy.Status.StageNamed("test"); r.Phase == v1alpha1.StageAwaitingApproval && promoted(action) {
			t.Fatalf("step %d: the stage awaiting approval was promoted", step)
		}
		switch action.Type {
		case ActionUpdateStatus:
			snap.Policy.Status = *action.Status
		case ActionCreateBindingPolicy:
			bp := action.BindingPolicy.DeepCopy()
			bp.UID = types.UID("bp-" + bp.Name)
			snap.BindingPolicies = append(snap.BindingPolicies, *bp)
		case ActionCreateStageApproval:
			a := action.StageApproval.DeepCopy()
			a.Generation, a.UID = 1, "approval"
			snap.Approvals = append(snap.Approvals, *a)
		case ActionDeleteBindingPolicy:
			snap.BindingPolicies = slices.DeleteFunc(snap.BindingPolicies, func(bp ksv1alpha1.BindingPolicy) bool { return bp.Name == action.BindingPolicy.Name })
		case ActionNone:
			// Only the approval is missing: approve it now.
			if r := snap.Policy.Status.StageNamed("test"); r.Phase != v1alpha1.StageAwaitingApproval || len(snap.Approvals) != 1 {
				t.Fatalf("step %d: stuck: %s", step, action.Why)
			}
			snap.Approvals[0] = approved(snap.Approvals[0], 1, "bob")
		default:
			t.Fatalf("step %d: unexpected %s (%s)", step, action.Type, action.Why)
		}
		resync(snap)
		snap.Now = metav1.NewTime(snap.Now.Add(time.Minute))
	}
	if snap.Policy.Status.Phase != v1alpha1.RolloutCompleted {
		t.Fatalf("the rollout did not complete: %s %q", snap.Policy.Status.Phase, snap.Policy.Status.ActiveStage)
	}
	if want := []string{"dev", "test", "prod"}; !slices.Equal(promotedStages, want) {
		t.Errorf("promoted %v, want %v", promotedStages, want)
	}
	if r := snap.Policy.Status.StageNamed("test"); r.ApprovedBy != "bob" || r.Promotion == nil {
		t.Errorf("test's record %+v: want approved by bob and promoted", r)
	}
}

// TestPlanPromotionReleasesAHeldFailure: a request for the failed stage
// releases its failure, then promotes it; the failure is not released by
// a request that names another stage.
func TestPlanPromotionReleasesAHeldFailure(t *testing.T) {
	engine := newEngine(t)
	held := func() fixture {
		f := healthyTest(analysed(v1alpha1.FailureHold, errorRate(3))).with(measured(now, 0.5))
		f.Policy.Status = *Plan(f.Snapshot, engine).Status
		f.Measurements = nil
		if f.Policy.Status.Failure == nil {
			t.Fatal("the fixture's stage did not fail")
		}
		return f
	}
	f := held().with(requesting(promotion("test")))
	release := Plan(f.Snapshot, engine)
	if release.Type != ActionUpdateStatus || release.Status.Failure != nil {
		t.Fatalf("action %s (%s), want the failure released", release.Type, release.Why)
	}
	if next := replan(t, f.Snapshot, engine, release); !promoted(next) || next.Status.ActiveStage != "prod" {
		t.Errorf("then %s (%s), want test promoted", next.Type, next.Why)
	}
	other := held().with(requesting(promotion("prod")))
	if action := Plan(other.Snapshot, engine); action.Type != ActionNone {
		t.Errorf("a request for another stage: %s (%s), want the rollout held", action.Type, action.Why)
	}
	// prod frozen: the promotion waits for prod's start (rule 15a), so it
	// releases nothing meanwhile; released, the failure would be found
	// again and released again, for ever (found by TestPlanStateMachine).
	frozen := held().with(requesting(promotion("test")))
	frozen.Freeze = frozenFor("prod")
	if action := Plan(frozen.Snapshot, engine); promoted(action) || action.Status != nil && action.Status.Failure == nil {
		t.Errorf("prod frozen: %s (%s), want the failure kept while the promotion waits", action.Type, action.Why)
	}
}

// TestPlanNewPromotionRequest: a new request (another requestedAt) of the
// same stage after one was taken is a new request.
func TestPlanNewPromotionRequest(t *testing.T) {
	engine := newEngine(t)
	f := at("test").bound().with(requesting(promotion("test")))
	old := promotion("dev")
	f.Policy.Status.LastPromotion = &v1alpha1.LastPromotion{Digest: PromotionDigest(old), Outcome: v1alpha1.PromotionApplied}
	if action := Plan(f.Snapshot, engine); !promoted(action) {
		t.Fatalf("action %s (%s), want test promoted", action.Type, action.Why)
	}
	f.Policy.Status.LastPromotion.Digest = PromotionDigest(promotion("test"))
	if action := Plan(f.Snapshot, engine); promoted(action) {
		t.Errorf("the request taken already promoted test: %s", action.Why)
	}
	again := promotion("test")
	again.RequestedAt = now
	f.Policy.Spec.Promotion = again
	if action := Plan(f.Snapshot, engine); !promoted(action) {
		t.Errorf("a new request (new requestedAt): %s (%s), want test promoted", action.Type, action.Why)
	}
}

// TestPromotionKeepsApprovals: writing spec.promotion is no change of the
// rollout: an approval given stays valid.
func TestPromotionKeepsApprovals(t *testing.T) {
	p := newPolicy(gated()...)
	before := specDigest(p)
	p.Spec.Promotion = promotion("")
	if after := specDigest(p); after != before {
		t.Errorf("spec.promotion changes the approvals' spec digest: %s, was %s", after, before)
	}
}

// TestPlanFullPromotionEndsWithItsRollout: a full promotion taken in a
// rollout that was then aborted does not promote the stages of the
// rollout started afresh after the abort (same revision, no restart):
// that is another rollout, whose gates apply.
func TestPlanFullPromotionEndsWithItsRollout(t *testing.T) {
	engine := newEngine(t)
	full := promotion("")
	f := at("dev").bound().with(requesting(full))
	// full promoted dev, then spec.abort came and went: no stage active,
	// the records Pending, dev's keeping its promotion (planAbort).
	st := &f.Policy.Status
	st.LastPromotion = &v1alpha1.LastPromotion{Digest: PromotionDigest(full), RequestedBy: full.RequestedBy, RequestedAt: full.RequestedAt,
		Outcome: v1alpha1.PromotionApplied, Time: earlier, Revision: st.UpdateRevision, RestartedAt: st.RestartedAt}
	for i := range st.Stages {
		st.Stages[i].Phase = v1alpha1.StagePending
	}
	st.StageNamed("dev").Promotion = &v1alpha1.StagePromotion{By: full.RequestedBy, Time: earlier, RequestedAt: full.RequestedAt,
		Reason: full.Reason, Full: true}
	st.ActiveStage, st.Phase = "", v1alpha1.RolloutAborted
	resync(f.Snapshot)

	start := Plan(f.Snapshot, engine)
	if start.Type != ActionUpdateStatus || start.Status.ActiveStage != "dev" || promoted(start) {
		t.Fatalf("action %s (%s), want the rollout started at dev", start.Type, start.Why)
	}
	if next := replan(t, f.Snapshot, engine, start); promoted(next) {
		t.Errorf("the full promotion of the aborted rollout promoted dev again: %s (%s)", next.Type, next.Why)
	}
}
