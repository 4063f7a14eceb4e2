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
	"maps"
	"slices"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
)

// ActionType names the single change a run makes.
type ActionType string

// The changes a run can make.
const (
	// ActionNone makes no change: the policy waits for something else to happen.
	ActionNone ActionType = "None"
	// ActionAddFinalizer adds the cleanup finalizer to the policy.
	ActionAddFinalizer ActionType = "AddFinalizer"
	// ActionRemoveFinalizer removes the cleanup finalizer once nothing is left behind.
	ActionRemoveFinalizer ActionType = "RemoveFinalizer"
	// ActionCreateBindingPolicy creates the active stage's BindingPolicy.
	ActionCreateBindingPolicy ActionType = "CreateBindingPolicy"
	// ActionUpdateBindingPolicy brings the active stage's BindingPolicy in line with the spec.
	ActionUpdateBindingPolicy ActionType = "UpdateBindingPolicy"
	// ActionDeleteBindingPolicy deletes a BindingPolicy of a stage that is no longer active.
	ActionDeleteBindingPolicy ActionType = "DeleteBindingPolicy"
	// ActionCreateStageApproval creates the StageApproval of a stage whose approval is Required.
	ActionCreateStageApproval ActionType = "CreateStageApproval"
	// ActionUpdateStageApproval brings a StageApproval's spec in line with
	// the policy's, which makes an approval given before count no more.
	ActionUpdateStageApproval ActionType = "UpdateStageApproval"
	// ActionDeleteStageApproval deletes a StageApproval no stage asks for.
	ActionDeleteStageApproval ActionType = "DeleteStageApproval"
	// ActionUpdateStatus writes the policy's status, which is where the
	// rollout's state lives: moving to the next stage is a status update.
	ActionUpdateStatus ActionType = "UpdateStatus"
)

// Event is a Kubernetes Event to emit on the policy once its Action succeeded.
type Event struct {
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type string
	// Reason is a short CamelCase reason.
	Reason string
	// Note is the human-readable message.
	Note string
}

// Action is the single change Plan chose.
type Action struct {
	// Type says what to do.
	Type ActionType
	// BindingPolicy is the object to create, update or delete.
	BindingPolicy *ksv1alpha1.BindingPolicy
	// StageApproval is the StageApproval to create, update or delete.
	StageApproval *v1alpha1.StageApproval
	// Status is the status to write, for ActionUpdateStatus.
	Status *v1alpha1.StagedBindingPolicyStatus
	// Events are emitted once the change is made.
	Events []Event
	// Why says in words why this change is the next one, for logs.
	Why string
	// Evaluations are the condition evaluations Plan made, for metrics.
	Evaluations []Evaluation
	// RegressionChecks are the checks of done stages Plan made (rule 15b), for metrics.
	RegressionChecks []RegressionCheck
	// RequeueAfter, when positive, is when Plan's decision changes with time
	// alone (a threshold is crossed): the next run is due then at the latest.
	RequeueAfter time.Duration

	// Announces is the change whose Events a status write records before
	// it is made (rule 20, announceFirst); empty for the write's own.
	Announces ActionType
}

// Bounds on what Plan writes. The API server rejects a condition message of
// more than 32 KiB, and with it the whole status update, and an Event note of
// more than 1 KiB: every message Plan writes is cut to these bounds, so the
// status always lands and every Event is recorded.
const (
	// MaxConditionMessage is the most bytes of a condition or stage message.
	MaxConditionMessage = 4096
	// MaxEventNote is the most bytes of an Event note.
	MaxEventNote = 1023
)

// DefaultDeletionWarningAfter is how long a policy's deletion may wait for
// its BindingPolicies' finalizers before Plan calls it blocked and warns.
const DefaultDeletionWarningAfter = 5 * time.Minute

// PlanOption tunes Plan.
type PlanOption func(*planConfig)

// planConfig is what the PlanOptions set.
type planConfig struct {
	deletionWarningAfter time.Duration
	clock                clock.PassiveClock
	key                  HandoverKey
}

// WithClock sets the clock that times each evaluation of a condition (the
// Evaluations of the Action); by default the real clock. Plan decides by
// Snapshot.Now, never by this clock.
func WithClock(c clock.PassiveClock) PlanOption {
	return func(cfg *planConfig) {
		if c != nil {
			cfg.clock = c
		}
	}
}

// WithHandoverKey sets the key that seals the handover marks and the
// placements of clusters Plan writes, and under which it takes those it
// reads as its own (HandoverKey); by default the zero key, which anyone
// can forge: the controller always passes its process's key.
func WithHandoverKey(k HandoverKey) PlanOption {
	return func(cfg *planConfig) {
		cfg.key = k
	}
}

// WithDeletionWarningAfter sets how long a policy's deletion may wait for its
// BindingPolicies' finalizers before the Deleting condition says
// DeletionBlocked and a Warning Event is emitted; zero or less keeps
// DefaultDeletionWarningAfter.
func WithDeletionWarningAfter(d time.Duration) PlanOption {
	return func(c *planConfig) {
		if d > 0 {
			c.deletionWarningAfter = d
		}
	}
}

// Plan chooses the single next change for the policy of the snapshot. It is a
// pure function of the snapshot (the engine only compiles and evaluates), so
// every decision of the controller can be table-tested.
//
// The rules, in the order Plan applies them (the first that has a change to
// make decides; the order is the order of what matters most); each rule's
// detail is on its function:
//  1. a policy being deleted lets go of what it placed, then of its finalizer (planDeletion);
//  2. a policy gets the finalizer before anything is placed;
//  3. a spec without stages blocks the rollout (NoStages);
//  4. spec.abort, or a failed stage that aborts, puts the stages back on the current revision (planAbort);
//     4a. a promotion requested while the rollout aborts is ignored and consumed, PromotionIgnored (promotionWhileAborting);
//  5. expressions that do not compile or cost too much, and invalid batches, block the rollout (compileStages, invalidBatches);
//  6. a suspended rollout, or one a failed stage holds, stays where it is (suspended, held, releaseFailure);
//     a promotion pending for the failed stage releases its failure unless the next stage's start is held
//     (promotionReleasesFailure);
//     a failure of the revision the rollout runs stays while the wave holds the spec's new revision
//     that would release it (waveKeepsFailure), or while a freeze or the first stage's change windows hold the
//     start that would release it (heldStartKeepsFailure);
//     6a. a revision the policy's wave has not released (Snapshot.Wave) does not start, where rules 7 to 9
//     would start one (a new spec revision, or a rollout not started): the first stage stays where it is,
//     the rollout keeps what it runs, WaitingForWave says why, and the run is due again at the
//     decision's RecheckAfter; released, the condition goes and WaveReleased says so (waveGate, waveAfter);
//     status.wave keeps the policy's wave, step and position and whether the wave holds the spec's revision
//     (Held) or not (Released), none when no wave orders it, written with the run's status write, or alone
//     when the run makes none (waveStatus, waveAfter);
//     6b. a stage's change window that does not parse, names an unknown time zone or never opens blocks the
//     rollout (InvalidWindow); a stage with windows starts (rules 7 to 9 into the first stage, rule 17 into
//     the next, rule 12 once approved) and a stage placed in batches starts its next batch (rule 16) only
//     while one of its windows is open at Snapshot.Now: else it waits, what is placed stays, a stage that
//     started goes on and an abort (rule 4) is never held; status.window and the WaitingForWindow condition
//     (with its Event, once per opening) say which stage waits and when its window opens, and the run is due
//     again then (windowGate, holdsAdvance, windowHolds, windowAfter);
//     6c. a stage a RolloutFreeze holds (Snapshot.Freeze) does not start: not the first stage where rules 7 to 9
//     would start it (a rollout not started waits; one running goes on with what it runs), not the next stage
//     of a done stage (rules 15 and 17 neither hand over nor advance), not an approved stage (rule 12), not
//     a stage's next batch (rule 16; a batch started fills); a stage started finishes, an abort (rule 4) and
//     a suspension (rule 6) are never frozen; Frozen says which freeze, until when and why, with an Event
//     once, the run is due again at the decision's RecheckAfter, and the condition goes, with an Unfrozen
//     Event, once nothing the policy would start is frozen (freezeGate, advanceFrozen, approvalFrozen,
//     batchFrozen, freezeAfter);
//  7. a new restartedAt annotation restarts the rollout from its first stage; a rollout with no active
//     stage whose spec names a new revision starts that revision instead, as rule 8 would (restartRollout);
//  8. a new spec revision starts its rollout from the first stage (startRevision);
//  9. a rollout not started, or whose active stage is gone, starts at the first stage (startRollout);
//  10. StageApprovals are kept one per stage that asks for one, in line with the policy (approvalRequests);
//  11. an approved stage whose placement changed awaits approval again (approvedPlacementChanged);
//  12. a stage awaiting approval places nothing until it is approved (approvalGate);
//  13. the active stage's BindingPolicy, or its census, is placed and in line with the spec (placeStages, desiredPlacement, activePlacement);
//  14. the accumulated stages' and the kept revisions' BindingPolicies are placed and in line (placeStages, accumulated, keptRevisionPlacements);
//     15a. a pending spec.promotion of the active stage (or full), placed and not awaiting approval, treats it as
//     done without its condition, soak, analyses or batches, records who, when, why and the gates skipped, and
//     advances (Promoted); full goes on with each stage of the rollout it was taken in, not past a new revision,
//     a restart or a fresh start after an abort; one that cannot apply, or requested no later than the last one
//     taken (an old request written back), is consumed, PromotionIgnored; one whose
//     next stage a change window or a freeze holds stays pending until it may start (promote, startHeldAfter);
//  15. the stage is assessed, soaked and its analyses judged; a failed stage's failure is recorded (planAfterAssessment);
//     a web analysis's measurement is judged on its JSON answer (Measurement.Answer) as a query's is on its
//     values, with the same limits, dryRun and onFailure (judge), but only its conclusive measurements count
//     towards its count: an answer saying wait (Inconclusive) never passes it (analysisPhase);
//     15b. a done stage whose regressionWatch is due (an interval after its last check, by Snapshot.Now) is judged
//     over its placement's CombinedStatuses within the space's budget, and with regressionWatch.analyses on one
//     measurement of each analysis not dryRun (Snapshot.WatchedMeasurements: Failed regresses, Inconclusive or
//     none leaves no verdict; never recorded in the stage's analyses), applied to the Action the other rules chose,
//     with its status write or alone when it makes none: found unhealthy, it records regressed, StageRegressed says
//     so (Warning Event once), and with onRegression Abort a rollout in flight records status.failure
//     (StageRegressed), which rule 4 (or 6, without a current revision) acts on; found healthy again, it recovers;
//     an inconclusive check changes no verdict; the run is due again at the next check (regressionAfter);
//  16. a stage placed in batches places its next cluster or stops at its failure budget (clusterPlacements, assessBatches);
//     a batch done is not the stage done: one whose next batch a window (6b) or a freeze (6c) holds waits,
//     neither completing nor handing over (planAfterAssessment);
//  17. a done stage hands over to the next, or withdraws a handover the next stage's approval forbids (handover, withdrawnHandover);
//  18. BindingPolicies no Placement holds are deleted once their waits are over, make-before-break (deleteSurplus, heldPlacements, surplusWaits);
//  19. the status is brought up to date, with its Events, each once (progressAction).
//     19a. every status write keeps status.history: a rollout that starts gets a Progressing entry
//     (superseding the one before), which ends Completed (Promoted when a stage was promoted) or Aborted with
//     the write's phase, lists who approved and who promoted its stages and when each stage it did (not
//     promoted) started and was done, and the oldest entries go beyond ten (keepHistory, stagesDone).
//  20. every Event is announced through status.pendingEvents: a status write records its Events there, an
//     Event-bearing change that is not a status write (a batch's BindingPolicy) is preceded by a status write
//     that records them, a run with nothing else to write clears the entries the reconciler posted
//     (Snapshot.Announced), and the oldest go beyond MaxPendingEvents, counted in status.droppedEvents (announce).
//     20a. an entry that a subscription of spec.notifications wants is cleared only once posted and its
//     notifications settled (Snapshot.Delivered); one given up on is cleared with a NotificationFailed
//     Warning Event, recorded by the same write (announce, clearable).
//
// Rules 13, 14, 16 and 17 write the Placements of desiredPlacement, each
// BindingPolicy with the Reason it is kept, through one diff
// (diffPlacement): 13 and 14 before the assessment, 16 and 17 after it;
// rule 18 deletes its surplus.
//
// Every BindingPolicy Plan creates (rules 4, 13, 14, 16, 17) goes through
// createBindingPolicy, which blocks the rollout (BindingPolicyConflict)
// instead when the snapshot shows its name taken by an object the policy
// does not own (TestPlanReportsEveryTakenName walks every kind).
//
// Every message of the Action is bounded (MaxConditionMessage, MaxEventNote).
// Timers are computed from times in the snapshot (Now and the objects'
// timestamps), never from memory, so a restarted controller decides alike.
func Plan(snap *Snapshot, engine *expression.Engine, opts ...PlanOption) Action {
	cfg := planConfig{deletionWarningAfter: DefaultDeletionWarningAfter, clock: clock.RealClock{}}
	for _, o := range opts {
		o(&cfg)
	}
	keyed := *snap
	keyed.key = cfg.key
	keyed.waveHolds = holdsRevision(&keyed)
	keyed.windows = newWindowRun(keyed.Policy, keyed.Now.Time)
	keyed.startFrozen, keyed.frozen = startsFirstStage(&keyed) && keyed.Freeze.For(firstStage(keyed.Policy)) != nil, &frozenMark{}
	snap = &keyed
	action := plan(snap, engine, cfg)
	announceFirst(snap, &action)
	waveAfter(snap, &action)
	windowAfter(snap, &action)
	freezeAfter(snap, &action)
	regressionAfter(snap, engine, cfg, &action)
	if action.Status != nil {
		if !snap.Policy.Spec.Suspend {
			endSuspension(action.Status, snap.Policy.Status.ActiveStage, snap.Now)
		}
		if snap.Policy.DeletionTimestamp == nil {
			keepHistory(&snap.Policy.Status, action.Status, snap.Now)
		}
		boundStatus(action.Status)
		if snap.Policy.Status.Phase == v1alpha1.RolloutSuspended && action.Status.Phase != v1alpha1.RolloutSuspended && !snap.Policy.Spec.Suspend {
			action.Events = append(action.Events, Event{Type: corev1.EventTypeNormal, Reason: v1alpha1.EventReasonResumed,
				Note: "spec.suspend is off: the rollout goes on"})
		}
	}
	for i := range action.Events {
		action.Events[i].Note = cutMessage(action.Events[i].Note, MaxEventNote)
	}
	announce(snap, &action)
	return action
}

// plan is Plan before its messages are bounded.
func plan(snap *Snapshot, engine *expression.Engine, cfg planConfig) Action {
	policy := snap.Policy

	if policy.DeletionTimestamp != nil {
		return planDeletion(snap, cfg)
	}
	if !hasFinalizer(policy) {
		return Action{Type: ActionAddFinalizer, Why: "the policy needs its cleanup finalizer before anything is placed"}
	}

	if len(policy.Spec.Stages) == 0 { // the CRD requires a stage; an old or hand-made object may lack one
		status := blockedStatus(policy, v1alpha1.ReasonNoStages, "the spec has no stage", snap.Now)
		return statusAction(policy, status, Event{Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonNoStages, Note: "the spec has no stage"},
			"the spec has no stage")
	}
	if action, ok := promotionWhileAborting(snap); ok {
		return action
	}
	if Aborting(policy) {
		return planAbort(snap, engine, cfg)
	}
	programs, reason, compileErr := compileStages(engine, policy.Spec.Stages)
	if compileErr != nil {
		failures := errorList(compileErr)
		status := blockedStatus(policy, reason, compileFailures(failures, MaxConditionMessage), snap.Now)
		return statusAction(policy, status,
			Event{Type: corev1.EventTypeWarning, Reason: reason, Note: compileFailures(failures, MaxEventNote)},
			"an expression does not compile")
	}

	if msg := invalidBatches(policy.Spec.Stages); msg != "" {
		status := blockedStatus(policy, v1alpha1.ReasonInvalidBatches, msg, snap.Now)
		return statusAction(policy, status, Event{Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonInvalidBatches, Note: msg},
			"a stage's batches are invalid")
	}

	if policy.Spec.Suspend {
		return suspended(policy, snap.Now)
	}
	if failHolds(policy) && !promotionReleasesFailure(snap) || waveKeepsFailure(snap) || heldStartKeepsFailure(snap) {
		return held(policy, snap.Now)
	}
	if policy.Status.Failure != nil {
		return releaseFailure(policy, snap.Now)
	}

	if action, ok := waveGate(snap); ok {
		return action
	}
	if action, ok := windowGate(snap); ok {
		return action
	}
	if action, ok := freezeGate(snap); ok {
		return action
	}
	if want := policy.Annotations[v1alpha1.RestartedAtAnnotation]; want != "" && want != policy.Status.RestartedAt && !snap.startHeld() && !snap.startFrozen {
		if len(want) > v1alpha1.MaxRestartedAtLength {
			msg := fmt.Sprintf("annotation %s is %d bytes, longer than the %d the status can record: set a shorter value (a timestamp) to restart the rollout",
				v1alpha1.RestartedAtAnnotation, len(want), v1alpha1.MaxRestartedAtLength)
			status := blockedStatus(policy, v1alpha1.ReasonInvalidAnnotation, msg, snap.Now)
			return statusAction(policy, status, Event{Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonInvalidAnnotation, Note: msg},
				"the restartedAt annotation is too long")
		}
		return restartRollout(policy, want, snap.Now)
	}
	if policy.Spec.SpecRevision() != policy.Status.UpdateRevision && !snap.waveHolds && !snap.startHeld() && !snap.startFrozen {
		return startRevision(policy, snap.Now)
	}

	active, started, reset := ActiveStage(policy)
	if !started {
		return startRollout(policy, reset, snap.Now)
	}
	if action, ok := approvalRequests(snap, active); ok {
		return action
	}
	if action, ok := approvedPlacementChanged(snap, active); ok {
		return action
	}
	stage := policy.Spec.Stages[active]
	if record := policy.Status.StageNamed(stage.Name); record != nil && record.Phase == v1alpha1.StageAwaitingApproval {
		return approvalFrozen(snap, active, approvalGate(snap, active))
	}
	current := snap.ActiveBindingPolicy
	want := desiredPlacement(snap, active)
	if action, ok := placeStages(snap, active, want.stages); ok {
		return action
	}
	if action, ok := promote(snap, active); ok {
		return action
	}

	// The analyses have a budget of their own: the condition's evaluations
	// cannot leave them none, which would make them inconclusive.
	an := assessAnalyses(snap, active, programs[active].analyses, engine.NewBudget())
	budget := engine.NewBudget()
	if want.batched() {
		b := assessBatches(snap, active, cfg.clock, programs[active], current, budget)
		action := planAfterAssessment(snap, want, b.assessment, &b, an)
		action.Evaluations = b.evaluations
		return action
	}
	result := assessStage(cfg.clock, programs[active], current, snap.Binding, snap.CombinedStatuses, budget)
	action := planAfterAssessment(snap, want, result, nil, an)
	action.Evaluations = result.evaluations
	return action
}

// placeStages is Plan's rules 13 and 14, one diff (diffPlacement) over
// the stages' Placements of desiredPlacement, in this order: the active
// stage's (activePlacement), the accumulated stages' (accumulated) and the
// kept revisions' (keptRevisionPlacements). The active stage's
// BindingPolicy gone, or going, after the stage handed over records the
// advance (rule 15) instead of placing the done stage again. It reports
// whether it has a change to make.
func placeStages(snap *Snapshot, active int, stages []Placement) (Action, bool) {
	current := snap.ActiveBindingPolicy
	if (current == nil || OwnedBy(current, snap.Policy) && current.DeletionTimestamp != nil) &&
		snap.key.HandedOver(snap.Policy, snap.NextBindingPolicy, active) {
		// The stage was done and handed over; its BindingPolicy went
		// before the status said so.
		return recordHandover(snap, active, assessment{}), true
	}
	return diffPlacement(snap, stages)
}

// activePlacement is Plan's rule 13: the active stage's BindingPolicy at
// the update revision, or, for a stage placed in batches, its census,
// which lists its clusters and places nothing. A name taken by an object
// the policy does not own blocks the rollout (BindingPolicyConflict); one
// being deleted is waited for (diffPlacement).
func activePlacement(policy *v1alpha1.StagedBindingPolicy, active int) Placement {
	stage := policy.Spec.Stages[active]
	if stage.Batched() {
		return Placement{BP: CensusBindingPolicy(policy, stage), Reason: ReasonCensus, Revision: policy.Status.UpdateRevision}
	}
	return Placement{BP: DesiredBindingPolicy(policy, stage), Reason: ReasonActive, Revision: policy.Status.UpdateRevision}
}

// bindingPolicyConflict blocks the rollout because the BindingPolicy the
// policy needs next, name, exists and is not the policy's: a Warning Event
// once, and the status saying so until the name is free. An aborted
// rollout stays Aborted, so that rule 4 does not record the abort again.
func bindingPolicyConflict(snap *Snapshot, name, why string) Action {
	msg := fmt.Sprintf("BindingPolicy %s already exists and does not belong to this policy; rename or delete it", name)
	status := blockedStatus(snap.Policy, v1alpha1.ReasonBindingPolicyConflict, msg, snap.Now)
	if Aborting(snap.Policy) && snap.Policy.Status.Phase == v1alpha1.RolloutAborted {
		status.Phase = v1alpha1.RolloutAborted
	}
	return statusAction(snap.Policy, status, Event{Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonBindingPolicyConflict, Note: msg}, why)
}

// createBindingPolicy is every create of a BindingPolicy that Plan makes
// (rules 4, 13, 14, 16, 17): desired, saying why, unless the snapshot
// shows an object the policy does not own under its name, which blocks the
// rollout instead (bindingPolicyConflict) until the name is free.
func createBindingPolicy(snap *Snapshot, desired *ksv1alpha1.BindingPolicy, why string) Action {
	if nameTaken(snap, desired.Name) {
		return bindingPolicyConflict(snap, desired.Name, why+": the name is taken")
	}
	return Action{Type: ActionCreateBindingPolicy, BindingPolicy: desired, Why: why}
}

// nameTaken reports whether the snapshot shows a BindingPolicy named name
// that the policy does not own, among those it read by name or listed.
func nameTaken(snap *Snapshot, name string) bool {
	for _, bp := range []*ksv1alpha1.BindingPolicy{snap.ActiveBindingPolicy, snap.NextBindingPolicy, findBindingPolicy(snap.BindingPolicies, name)} {
		if bp != nil && bp.Name == name && !OwnedBy(bp, snap.Policy) {
			return true
		}
	}
	return false
}

// planAfterAssessment chooses the change once the active stage's
// BindingPolicy is in line with the spec and the stage has been assessed;
// b is the assessment of a stage placed in batches, else nil; an that of
// its analyses.
//
// Plan's rule 15: the stage is assessed (its condition over the
// CombinedStatuses its filter keeps; for a stage placed in batches, over
// each placed cluster's own, a cluster not done past its progressDeadline,
// or whose failureCondition holds, being Failed or TimedOut), then soaked;
// its analyses record the snapshot's measurements, each judged by its
// conditions; a stage that handed over to the next one records the advance,
// taking the handover's mark as its record (handover.go); a stage whose
// failureCondition holds, or whose analysis failed or was inconclusive past
// its limit, or (with onFailure Abort) a stage placed in batches over its
// failure budget, fails: the status records the failure, which rule 4 or 6
// then acts on (analysis.go); a stage whose analyses still run is not done,
// and its next measurement requeues it. Rules 16 to 19 follow from here:
// rules 16 and 17 are one diff over the Placements the assessment adds to
// want, the active stage's desiredPlacement; rule 18 deletes its surplus.
func planAfterAssessment(snap *Snapshot, want *placements, result assessment, b *batches, an analyses) Action {
	policy, active := snap.Policy, want.active
	stage := policy.Spec.Stages[active]
	final := active == len(policy.Spec.Stages)-1
	var soakFrom *metav1.Time
	if b != nil {
		soakFrom = b.latestPlaced
	}
	result, metSince, soakLeft := soak(policy, active, result, snap.Now, soakFrom)
	if snap.key.HandedOver(policy, snap.NextBindingPolicy, active) {
		return withClusters(recordHandover(snap, active, result), policy, active, b)
	}
	if bp, ok := withdrawnHandover(snap, active); ok {
		return Action{Type: ActionDeleteBindingPolicy, BindingPolicy: bp,
			Why: fmt.Sprintf("stage %q needs approval since BindingPolicy %s was created for it", policy.Spec.Stages[active+1].Name, bp.Name)}
	}
	switch {
	case result.failed:
		return withClusters(failStage(snap, active, an, v1alpha1.ReasonFailureConditionMet, result.message), policy, active, b)
	case an.failed != nil:
		return withClusters(failStage(snap, active, an, v1alpha1.ReasonAnalysisFailed, describeAnalysis(an.failed)), policy, active, b)
	case an.inconclusive != nil:
		return withClusters(failStage(snap, active, an, v1alpha1.ReasonAnalysisInconclusive, describeAnalysis(an.inconclusive)), policy, active, b)
	case b != nil && result.reason == v1alpha1.ReasonFailureBudgetExceeded && stage.OnFailure == v1alpha1.FailureAbort:
		return withClusters(failStage(snap, active, an, v1alpha1.ReasonFailureBudgetExceeded, result.message), policy, active, b)
	}
	gated := an.gate(result)
	if b != nil && gated.satisfied && gated.reason == v1alpha1.ReasonBatchInProgress {
		// A batch done (soaked, above) lets rule 16 start the next
		// batch; it is not the stage done, when a window or a freeze
		// holds that batch.
		gated.satisfied = false
	}
	// The handover's write is not the status: the analyses' last
	// measurements are recorded first.
	windowWaits := holdsAdvance(snap, active, gated.satisfied)
	frozen := advanceFrozen(snap, active, gated.satisfied)
	waits := windowWaits || frozen
	want.assess(assessed{b: b, soaked: result.satisfied, done: gated.satisfied && !final && !an.changed && !waits})
	if action, ok := diffPlacement(snap, want.assessed); ok {
		return action
	}
	result = gated
	if result.satisfied && !final && !waits {
		return withAnalyses(withClusters(advance(policy, active, result, snap.Now), policy, active, b), policy, active, an)
	}
	result, deadline, deadlineLeft := progressDeadline(policy, active, result, snap.Now)
	requeue := Earliest(Earliest(soakLeft, deadlineLeft), an.nextIn)
	if b != nil {
		requeue = Earliest(requeue, b.deadlineLeft)
	}

	if result.bindingObserved && result.placed {
		if action, ok := deleteSurplus(want.surplus()); ok {
			return action
		}
	}

	return progressAction(snap, active, result, b, an, metSince, deadline, requeue)
}

// accumulated is Plan's rule 14 under placement Accumulate: the
// BindingPolicy of every stage before the active one, at the update
// revision, is kept placed and in line with the spec, so that the end
// state covers every stage's clusters (keptRevisionPlacements does the
// same for the revisions the stages keep). One being deleted is let go.
func accumulated(policy *v1alpha1.StagedBindingPolicy, active int) []Placement {
	if policy.Spec.Placement != v1alpha1.PlacementAccumulate {
		return nil
	}
	want := make([]Placement, 0, active)
	for _, stage := range policy.Spec.Stages[:active] {
		want = append(want, Placement{BP: DesiredBindingPolicy(policy, stage), Reason: ReasonAccumulated, Revision: policy.Status.UpdateRevision})
	}
	return want
}

// deleteSurplus is Plan's rule 18, make-before-break: once the active
// stage's Binding places the workload on a cluster, it deletes the first
// BindingPolicy of the policy that no Placement of desiredPlacement names
// (surplus) and whose waits are over (surplusWaits). Placed or held are
// the active stage's, the earlier stages' under Accumulate, those of the
// revision each stage from the active one on keeps, and the clusters' own
// of a stage placed in batches (heldPlacements). It reports whether it has
// a change to make.
func deleteSurplus(surplus []Surplus) (Action, bool) {
	gone, _ := firstGone(surplus)
	if gone == nil {
		return Action{}, false
	}
	return Action{Type: ActionDeleteBindingPolicy, BindingPolicy: gone.BP,
		Why: fmt.Sprintf("BindingPolicy %s belongs to a stage that is no longer active", gone.BP.Name)}, true
}

// DesiredBindingPolicy is the BindingPolicy of one stage of the policy at
// the revision being rolled out (status.updateRevision).
func DesiredBindingPolicy(policy *v1alpha1.StagedBindingPolicy, stage v1alpha1.Stage) *ksv1alpha1.BindingPolicy {
	return RevisionBindingPolicy(policy, stage, policy.Status.UpdateRevision)
}

// BindingPolicyInSync reports whether an existing BindingPolicy carries the
// desired labels, owner and spec.
func BindingPolicyInSync(current, desired *ksv1alpha1.BindingPolicy) bool {
	for k, v := range desired.Labels {
		if current.Labels[k] != v {
			return false
		}
	}
	return equality.Semantic.DeepEqual(current.OwnerReferences, desired.OwnerReferences) &&
		equality.Semantic.DeepEqual(current.Spec, desired.Spec)
}

// inLineWith returns current brought in line with desired: its labels,
// owner and spec, keeping whatever else others put on it.
func inLineWith(current, desired *ksv1alpha1.BindingPolicy) *ksv1alpha1.BindingPolicy {
	updated := current.DeepCopy()
	updated.Labels = MergeLabels(updated.Labels, desired.Labels)
	updated.OwnerReferences = desired.OwnerReferences
	updated.Spec = desired.Spec
	return updated
}

// MergeLabels returns current's labels with desired's set over them.
func MergeLabels(current, desired map[string]string) map[string]string {
	merged := make(map[string]string, len(current)+len(desired))
	maps.Copy(merged, current)
	maps.Copy(merged, desired)
	return merged
}

func hasFinalizer(policy *v1alpha1.StagedBindingPolicy) bool {
	return slices.Contains(policy.Finalizers, v1alpha1.CleanupFinalizer)
}
