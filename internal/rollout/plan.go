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
	"strings"
	"time"
	"unicode/utf8"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

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
	// RequeueAfter, when positive, is when Plan's decision changes with time
	// alone (a threshold is crossed): the next run is due then at the latest.
	RequeueAfter time.Duration
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
// make decides; the order is the order of what matters most):
//  1. a policy being deleted loses its BindingPolicies, then its
//     StageApprovals, then its finalizer, saying in its Deleting condition
//     what holds them meanwhile, and past the deletion warning threshold
//     that the deletion is blocked;
//  2. a policy gets the finalizer before anything is placed;
//  3. a spec without stages blocks the rollout (NoStages);
//  4. spec.abort, or a failed stage whose onFailure is Abort (until
//     spec.revision names another revision or the rollout is restarted),
//     puts every stage that keeps a revision back on
//     status.currentRevision, make-before-break: the status records it,
//     the StageApprovals are brought in line with the aborted spec (an
//     approval given before counts no more), the current revision's
//     BindingPolicies are created, and once KubeStellar has resolved them
//     the others are deleted, a stage's once its condition holds on the
//     current revision there (at once for a stage without one); without a
//     current revision spec.abort holds the rollout where it is, while a
//     failed stage's abort places the last stage done before it again
//     (every earlier one under Accumulate) and then withdraws the rest
//     (revision.go, analysis.go); a target's name taken by an object the
//     policy does not own is reported as in rule 13, the rollout staying
//     Aborted, and the abort's message comes back once it is placed;
//  5. expressions that do not compile, or whose estimated cost is too high,
//     and a maxConcurrency below 1 or maxFailures below 0, block the
//     rollout, changing nothing placed;
//  6. a suspended rollout (spec.suspend) stays where it is, changing nothing
//     placed, and says so; resumed, it goes on from there (Resumed); so
//     does a rollout a failed stage holds (onFailure Hold, or an analysis
//     inconclusive past its limit) until its spec or restartedAt changes,
//     when the failure is cleared and the stage's analyses start over;
//  7. a new value of the restartedAt annotation restarts the rollout from its
//     first stage, make-before-break (rule 18 takes the old stage away); a
//     value longer than the status can record blocks the rollout where it
//     is, with a Warning Event, until the annotation changes;
//  8. a revision in the spec other than status.updateRevision starts the
//     rollout of that revision from the first stage (RevisionStarted, or
//     RevisionSuperseded for one in flight); each stage's record keeps the
//     revision it runs until the rollout reaches it (revision.go);
//  9. a rollout that has not started, or whose active stage was removed from
//     the spec, starts at the first stage; a stage it reaches that needs
//     approval awaits it;
//  10. StageApprovals no stage asks for are deleted, then every stage from
//     the active one on whose approval is Required and that has not started
//     gets one StageApproval in line with the policy (approval.go);
//  11. an approved, active stage whose spec would place anything else
//     (cluster selectors, downsync) awaits approval again, its
//     BindingPolicy left as approved; a stage approved before its record
//     named what it placed (approvedPlacement) gets that record from its
//     BindingPolicies when they place what the spec does, and otherwise
//     awaits approval again;
//  12. a stage awaiting approval places nothing until it is approved (a
//     StageApproval of its name that the policy does not own blocks the
//     rollout, StageApprovalConflict); a gate reached binds until it is
//     approved or the rollout restarts, even if its approval is set to None;
//  13. the active stage's BindingPolicy (for a stage placed in batches,
//     its census, which lists its clusters and places nothing): a name
//     taken by an object the policy does not own blocks the rollout
//     (BindingPolicyConflict); one gone after the stage handed over records
//     the advance (rule 15) instead of placing the done stage again; one
//     being deleted is waited for; otherwise it is created, or brought in
//     line with the spec;
//  14. with placement Accumulate, every earlier stage's BindingPolicy (at
//     the update revision) is kept in place and in line with the spec; so
//     is, for every stage from the active one on, the BindingPolicy of
//     the revision its record keeps (revision.go); a name taken by an
//     object the policy does not own blocks the rollout as in rule 13;
//  15. the stage is assessed (its condition over the CombinedStatuses its
//     filter keeps; for a stage placed in batches, over each placed
//     cluster's own, a cluster not done past its progressDeadline, or
//     whose failureCondition holds, being Failed or TimedOut), then
//     soaked; its analyses record the snapshot's measurements, each judged
//     by its conditions; a stage that handed over to the next one records
//     the advance, taking the handover's mark as its record (handover.go);
//     a stage whose failureCondition holds, or whose analysis failed or
//     was inconclusive past its limit, or (with onFailure Abort) a stage
//     placed in batches over its failure budget, fails: the status records
//     the failure, which rule 4 or 6 then acts on (analysis.go); a stage
//     whose analyses still run is not done, and its next measurement
//     requeues it;
//  16. a stage placed in batches (maxConcurrency) brings its clusters'
//     BindingPolicies in line with the spec, then places the next cluster
//     its census names, by name, through a BindingPolicy of its own,
//     sealed (PlacedAnnotation): at once while the batch fills, else once
//     no placed cluster is Progressing and that has soaked; a cluster
//     counts as placed only under the seal of this process, dated in the
//     stage's current run, or when the
//     stage's record names it, and one the policy owns otherwise is taken
//     over, sealed, when the order reaches it; a name taken by an object
//     the policy does not own blocks the rollout (BindingPolicyConflict);
//     more failures than maxFailures allow, or one in
//     the canary batch, stall the rollout (FailureBudgetExceeded) and
//     place nothing more; the stage is done once every cluster is placed
//     and none is Progressing, one at least Succeeded (batches.go);
//  17. a handover to a next stage that has needed approval since is
//     withdrawn: that stage's BindingPolicy is deleted; a done stage that is
//     not the last hands over: the next stage's BindingPolicy is created
//     first, marked; where it cannot be (the next stage needs approval, a
//     BindingPolicy of its name exists, the next stage is placed in
//     batches, or the active stage's start is not recorded), the status
//     records the advance first;
//  18. BindingPolicies of stages no longer active are deleted once the
//     active stage's Binding places the workload on a cluster
//     (make-before-break), except the earlier stages' under Accumulate and
//     those of the revision each stage from the active one on keeps: the
//     active stage's until it is done on the update revision, which its
//     record then keeps, and the later stages' until the rollout reaches
//     them; another revision of such a stage goes only once KubeStellar has
//     resolved the one it keeps, and an earlier stage's per-cluster ones
//     under Accumulate once its own is resolved; a stage placed in batches
//     keeps its clusters' BindingPolicies, and one that places all its
//     clusters at once until every cluster has its own;
//  19. the status is brought up to date (a done last stage completes the
//     rollout): the progress deadline (computed before rule 18, which does
//     not read it), the condition met since, a batched stage's clusters,
//     and Events for a stalled stage, a completed rollout, a failed
//     cluster and an evaluation error, each once.
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
	action := plan(snap, engine, cfg)
	if action.Status != nil {
		if !snap.Policy.Spec.Suspend {
			endSuspension(action.Status, snap.Policy.Status.ActiveStage, snap.Now)
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
	if failHolds(policy) {
		return held(policy, snap.Now)
	}
	if policy.Status.Failure != nil {
		return releaseFailure(policy, snap.Now)
	}

	if want := policy.Annotations[v1alpha1.RestartedAtAnnotation]; want != "" && want != policy.Status.RestartedAt {
		if len(want) > v1alpha1.MaxRestartedAtLength {
			msg := fmt.Sprintf("annotation %s is %d bytes, longer than the %d the status can record: set a shorter value (a timestamp) to restart the rollout",
				v1alpha1.RestartedAtAnnotation, len(want), v1alpha1.MaxRestartedAtLength)
			status := blockedStatus(policy, v1alpha1.ReasonInvalidAnnotation, msg, snap.Now)
			return statusAction(policy, status, Event{Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonInvalidAnnotation, Note: msg},
				"the restartedAt annotation is too long")
		}
		return restartRollout(policy, want, snap.Now)
	}
	if policy.Spec.SpecRevision() != policy.Status.UpdateRevision {
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
		return approvalGate(snap, active)
	}
	desired := DesiredBindingPolicy(policy, stage)
	if stage.Batched() {
		desired = CensusBindingPolicy(policy, stage)
	}

	current := snap.ActiveBindingPolicy
	switch {
	case current != nil && !OwnedBy(current, policy):
		return bindingPolicyConflict(snap, current.Name, "the active stage's BindingPolicy name is taken")
	case (current == nil || current.DeletionTimestamp != nil) && HandedOver(policy, snap.NextBindingPolicy, active):
		// The stage was done and handed over; its BindingPolicy went
		// before the status said so. Record the advance rather than
		// place the done stage again.
		return recordHandover(snap, active, assessment{})
	case current == nil:
		return createBindingPolicy(snap, desired, fmt.Sprintf("stage %q has no BindingPolicy yet", stage.Name))
	case current.DeletionTimestamp != nil:
		return Action{Type: ActionNone, Why: fmt.Sprintf("BindingPolicy %s is being deleted; waiting to recreate it", current.Name)}
	case !BindingPolicyInSync(current, desired):
		return Action{Type: ActionUpdateBindingPolicy, BindingPolicy: inLineWith(current, desired),
			Why: fmt.Sprintf("BindingPolicy %s differs from the spec of stage %q", current.Name, stage.Name)}
	}

	if action, ok := accumulate(snap, active); ok {
		return action
	}
	if action, ok := keepRevisions(snap, active); ok {
		return action
	}

	// The analyses have a budget of their own: the condition's evaluations
	// cannot leave them none, which would make them inconclusive.
	an := assessAnalyses(snap, active, programs[active].analyses, engine.NewBudget())
	budget := engine.NewBudget()
	if stage.Batched() {
		b := assessBatches(snap, active, cfg.clock, programs[active], current, budget)
		action := planAfterAssessment(snap, active, current, b.assessment, &b, an)
		action.Evaluations = b.evaluations
		return action
	}
	result := assessStage(cfg.clock, programs[active], current, snap.Binding, snap.CombinedStatuses, budget)
	action := planAfterAssessment(snap, active, current, result, nil, an)
	action.Evaluations = result.evaluations
	return action
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
func planAfterAssessment(snap *Snapshot, active int, current *ksv1alpha1.BindingPolicy, result assessment, b *batches, an analyses) Action {
	policy := snap.Policy
	stage := policy.Spec.Stages[active]
	final := active == len(policy.Spec.Stages)-1
	var soakFrom *metav1.Time
	if b != nil {
		soakFrom = b.latestPlaced
	}
	result, metSince, soakLeft := soak(policy, active, result, snap.Now, soakFrom)
	if HandedOver(policy, snap.NextBindingPolicy, active) {
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
	if b != nil {
		if action, ok := placeBatch(snap, active, *b, result.satisfied); ok {
			return action
		}
	}
	result = an.gate(result)
	if result.satisfied && !final {
		// The handover's write is not the status: the analyses' last
		// measurements are recorded first.
		if next, ok := handover(snap, active); ok && !an.changed {
			return createBindingPolicy(snap, next,
				fmt.Sprintf("stage %q is done: placing stage %q before the status records it", stage.Name, policy.Spec.Stages[active+1].Name))
		}
		return withAnalyses(withClusters(advance(policy, active, result, snap.Now), policy, active, b), policy, active, an)
	}
	result, deadline, deadlineLeft := progressDeadline(policy, active, result, snap.Now)
	requeue := Earliest(Earliest(soakLeft, deadlineLeft), an.nextIn)
	if b != nil {
		requeue = Earliest(requeue, b.deadlineLeft)
	}

	if result.bindingObserved && result.placed {
		for i := range snap.BindingPolicies {
			bp := &snap.BindingPolicies[i]
			if bp.Name != current.Name && bp.DeletionTimestamp == nil && OwnedBy(bp, policy) && !accumulated(policy, active, bp) &&
				!kept(policy, active, bp) && !waitsForKept(snap, active, bp) &&
				!batchPlaced(policy, active, b, bp) && !keptForBatches(policy, active, b, bp) &&
				!waitsForStageWide(snap, active, bp) {
				return Action{Type: ActionDeleteBindingPolicy, BindingPolicy: bp,
					Why: fmt.Sprintf("BindingPolicy %s belongs to a stage that is no longer active", bp.Name)}
			}
		}
	}

	status := progressStatus(policy, active, result, snap.Now)
	if status.Stages[active].Phase == v1alpha1.StageActive {
		status.Stages[active].ConditionMetTime = metSince
		status.Stages[active].ProgressDeadlineTime = deadline
	}
	if an.records != nil {
		status.Stages[active].Analyses = an.records
	}
	if len(stage.Analysis) > 0 && result.placed && status.Stages[active].Phase == v1alpha1.StageActive && status.Stages[active].PlacedTime == nil {
		status.Stages[active].PlacedTime = ptr.To(snap.Now)
		for _, a := range stage.Analysis {
			requeue = Earliest(requeue, measureIn(a, nil, snap.Now.Time, snap.Now))
		}
	}
	var events []Event
	if b != nil && b.clusters != nil {
		status.Stages[active].Clusters = b.clusters
		events = append(events, newlyFailed(policy.Status.StageNamed(stage.Name), stage.Name, b.clusters)...)
	}
	if result.stalled && status.Phase == v1alpha1.RolloutStalled && progressingReason(&policy.Status) != result.reason {
		events = append(events, Event{Type: corev1.EventTypeWarning, Reason: result.reason,
			Note: fmt.Sprintf("stage %q: %s", stage.Name, result.message)})
	}
	if recordSucceeded(status, active) && !recordSucceeded(&policy.Status, active) {
		events = append(events, Event{Type: corev1.EventTypeNormal, Reason: v1alpha1.ReasonRolloutCompleted,
			Note: fmt.Sprintf("final stage %q is done: %s", stage.Name, result.message)})
	}
	if result.evaluationError && !sameCondition(policy.Status.Conditions, status.Conditions, v1alpha1.ConditionProgressing) {
		events = append(events, Event{Type: corev1.EventTypeWarning, Reason: result.reason,
			Note: fmt.Sprintf("stage %q: %s", stage.Name, result.message)})
	}
	if action := statusAction(policy, status, Event{}, "the status is out of date"); action.Type != ActionNone {
		action.Events = events
		action.RequeueAfter = requeue
		return action
	}
	return Action{Type: ActionNone, Why: result.message, RequeueAfter: requeue}
}

// progressDeadline applies the stage's progressDeadline to its assessment:
// a stage not done by startTime + progressDeadline + the time the rollout
// was suspended meanwhile is stalled. It returns the assessment, the
// deadline (nil when the stage has none or is done), and how long until it
// passes (0 when it has passed or there is none).
func progressDeadline(policy *v1alpha1.StagedBindingPolicy, active int, result assessment, now metav1.Time) (assessment, *metav1.Time, time.Duration) {
	stage := policy.Spec.Stages[active]
	record := policy.Status.StageNamed(stage.Name)
	if stage.ProgressDeadline == nil || stage.ProgressDeadline.Duration <= 0 || stage.Batched() || result.satisfied || result.evaluationError ||
		record == nil || record.Phase != v1alpha1.StageActive || record.StartTime == nil {
		return result, nil, 0
	}
	deadline := metav1.NewTime(record.StartTime.Add(stage.ProgressDeadline.Duration + suspendedFor(&policy.Status, record, now)))
	if now.Before(&deadline) {
		// Now is truncated to the second: a second more is past the deadline.
		return result, &deadline, deadline.Sub(now.Time) + time.Second
	}
	result.stalled = true
	result.reason = v1alpha1.ReasonProgressDeadlineExceeded
	result.message = fmt.Sprintf("past its progressDeadline %s (at %s): %s",
		stage.ProgressDeadline.Duration, deadline.UTC().Format(time.RFC3339), result.message)
	return result, &deadline, 0
}

// suspendedFor is how long the rollout has been suspended while the stage
// of record was active: what the record says, plus the suspension going on.
func suspendedFor(status *v1alpha1.StagedBindingPolicyStatus, record *v1alpha1.StageStatus, now metav1.Time) time.Duration {
	var d time.Duration
	if record.SuspendedDuration != nil {
		d = record.SuspendedDuration.Duration
	}
	if status.SuspendedTime != nil && now.After(status.SuspendedTime.Time) {
		d += now.Sub(status.SuspendedTime.Time)
	}
	return d
}

// endSuspension, on the first status written after a rollout is resumed,
// adds the time it was suspended to the suspendedDuration of the stage that
// was active meanwhile (suspendedIn), also when this write records it done,
// and clears suspendedTime: a stage entered by this write was not suspended.
func endSuspension(status *v1alpha1.StagedBindingPolicyStatus, suspendedIn string, now metav1.Time) {
	if status.SuspendedTime == nil {
		return
	}
	if record := status.StageNamed(suspendedIn); record != nil &&
		(record.Phase == v1alpha1.StageActive || record.Phase == v1alpha1.StageSucceeded) {
		record.SuspendedDuration = &metav1.Duration{Duration: suspendedFor(status, record, now)}
	}
	status.SuspendedTime = nil
}

// Earliest returns the shorter of two waits, ignoring one that is not positive.
func Earliest(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// progressingReason is the reason of the status's Progressing condition, or "".
func progressingReason(status *v1alpha1.StagedBindingPolicyStatus) string {
	if c := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionProgressing); c != nil {
		return c.Reason
	}
	return ""
}

// accumulate keeps, with spec.placement Accumulate, the BindingPolicy of
// every stage before the active one in place and in line with the spec (one
// change at a time), so that the end state covers every stage's clusters. It
// reports whether it has a change to make.
func accumulate(snap *Snapshot, active int) (Action, bool) {
	policy := snap.Policy
	if policy.Spec.Placement != v1alpha1.PlacementAccumulate {
		return Action{}, false
	}
	for _, stage := range policy.Spec.Stages[:active] {
		if action, ok := keepPlaced(snap, DesiredBindingPolicy(policy, stage),
			fmt.Sprintf("placement Accumulate keeps stage %q placed", stage.Name),
			fmt.Sprintf("accumulated stage %q", stage.Name)); ok {
			return action, true
		}
	}
	return Action{}, false
}

// keepPlaced creates desired when there is no BindingPolicy of its name, and
// brings one the policy owns in line with it, saying why (created) or of
// what it differs from the spec (of); a foreign object blocks the rollout
// (createBindingPolicy), a departing one of the policy's is left to go. It
// reports whether it has a change to make.
func keepPlaced(snap *Snapshot, desired *ksv1alpha1.BindingPolicy, created, of string) (Action, bool) {
	current := findBindingPolicy(snap.BindingPolicies, desired.Name)
	switch {
	case current == nil || !OwnedBy(current, snap.Policy):
		return createBindingPolicy(snap, desired, created), true
	case current.DeletionTimestamp != nil:
		return Action{}, false
	case !BindingPolicyInSync(current, desired):
		return Action{Type: ActionUpdateBindingPolicy, BindingPolicy: inLineWith(current, desired),
			Why: fmt.Sprintf("BindingPolicy %s differs from the spec of %s", current.Name, of)}, true
	}
	return Action{}, false
}

// accumulated reports whether a BindingPolicy is one that placement
// Accumulate keeps: that of a stage before the active one.
func accumulated(policy *v1alpha1.StagedBindingPolicy, active int, bp *ksv1alpha1.BindingPolicy) bool {
	if policy.Spec.Placement != v1alpha1.PlacementAccumulate {
		return false
	}
	for _, stage := range policy.Spec.Stages[:active] {
		if bp.Name == policy.StageBindingPolicyName(stage.Name) {
			return true
		}
	}
	return false
}

// soak applies the stage's soakDuration to its assessment: a stage whose
// condition holds is done only once it has held for soakDuration since it
// was first seen to (the stage record's ConditionMetTime, or now; for a
// stage placed in batches, not before from, when its last cluster was
// placed). It returns the assessment, when the condition started holding
// (nil when it does not hold), and how long until the stage is done (0
// when not soaking).
func soak(policy *v1alpha1.StagedBindingPolicy, active int, result assessment, now metav1.Time, from *metav1.Time) (assessment, *metav1.Time, time.Duration) {
	stage := policy.Spec.Stages[active]
	if !result.satisfied || stage.SoakDuration == nil || stage.SoakDuration.Duration <= 0 {
		return result, nil, 0
	}
	since := now
	for _, r := range policy.Status.Stages {
		if r.Name == stage.Name && r.ConditionMetTime != nil && (from == nil || !r.ConditionMetTime.Before(from)) {
			since = *r.ConditionMetTime
		}
	}
	doneAt := since.Add(stage.SoakDuration.Duration)
	if !now.Time.Before(doneAt) {
		result.message = fmt.Sprintf("%s; it held for soakDuration %s", result.message, stage.SoakDuration.Duration)
		return result, &since, 0
	}
	result.satisfied = false
	result.reason = v1alpha1.ReasonSoaking
	result.message = fmt.Sprintf("%s since %s; the stage is done at %s unless it stops holding (soakDuration %s)",
		result.message, since.UTC().Format(time.RFC3339), doneAt.UTC().Format(time.RFC3339), stage.SoakDuration.Duration)
	return result, &since, doneAt.Sub(now.Time)
}

// planDeletion removes what the policy placed, then lets it go. While
// BindingPolicies it deleted are held by finalizers (KubeStellar's, which its
// controller-manager removes), the Deleting condition names them and the
// time the deletion began; past the threshold it says DeletionBlocked, once
// with a Warning Event.
func planDeletion(snap *Snapshot, cfg planConfig) Action {
	policy := snap.Policy
	var held []*ksv1alpha1.BindingPolicy
	for i := range snap.BindingPolicies {
		bp := &snap.BindingPolicies[i]
		if !OwnedBy(bp, policy) {
			continue
		}
		if bp.DeletionTimestamp != nil {
			held = append(held, bp)
			continue
		}
		return Action{Type: ActionDeleteBindingPolicy, BindingPolicy: bp,
			Why: fmt.Sprintf("the policy is being deleted and BindingPolicy %s is still there", bp.Name)}
	}
	for i := range snap.Approvals {
		if a := &snap.Approvals[i]; OwnedBy(a, policy) && a.DeletionTimestamp == nil {
			return Action{Type: ActionDeleteStageApproval, StageApproval: a,
				Why: fmt.Sprintf("the policy is being deleted and StageApproval %s is still there", a.Name)}
		}
	}
	if len(held) > 0 {
		if !hasFinalizer(policy) {
			// Someone released the policy by hand: nothing of ours waits.
			return Action{Type: ActionNone, Why: "the policy is being deleted without the stager's finalizer"}
		}
		return deletionBlocked(snap, held, cfg)
	}
	if hasFinalizer(policy) {
		return Action{Type: ActionRemoveFinalizer, Why: "nothing the policy placed is left"}
	}
	return Action{Type: ActionNone, Why: "the policy is being deleted"}
}

// deletionBlocked reports a deletion that waits for the finalizers of held,
// the policy's BindingPolicies being deleted.
func deletionBlocked(snap *Snapshot, held []*ksv1alpha1.BindingPolicy, cfg planConfig) Action {
	policy := snap.Policy
	since := policy.DeletionTimestamp
	holders := make([]string, 0, len(held))
	for _, bp := range held {
		finalizers := "no finalizer left"
		if len(bp.Finalizers) > 0 {
			finalizers = "finalizers " + strings.Join(bp.Finalizers, ", ")
		}
		holders = append(holders, fmt.Sprintf("BindingPolicy %s (%s)", bp.Name, finalizers))
	}
	message := fmt.Sprintf("deletion waits since %s for %s to go",
		since.UTC().Format(time.RFC3339), nameSome(holders))
	waited := snap.Now.Sub(since.Time)
	blocked := waited >= cfg.deletionWarningAfter
	reason := v1alpha1.ReasonWaitingForFinalizers
	if blocked {
		reason = v1alpha1.ReasonDeletionBlocked
		message = fmt.Sprintf("%s; it has waited more than %s: KubeStellar's controller-manager removes its finalizer "+
			"once it has let go of a BindingPolicy. Is it running? (see the README to release the policy by hand)",
			message, cfg.deletionWarningAfter)
	}

	status := policy.Status.DeepCopy()
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: v1alpha1.ConditionDeleting, Status: metav1.ConditionTrue,
		Reason: reason, Message: cutMessage(message, MaxConditionMessage), ObservedGeneration: policy.Generation,
		LastTransitionTime: *since})
	why := "waiting for the policy's BindingPolicies to go away"
	var requeue time.Duration
	if !blocked {
		// Now is truncated to the second: a second more is past the threshold.
		requeue = cfg.deletionWarningAfter - waited + time.Second
	}
	action := statusAction(policy, status, Event{}, why)
	action.RequeueAfter = requeue
	if action.Type == ActionUpdateStatus && blocked &&
		!sameCondition(policy.Status.Conditions, status.Conditions, v1alpha1.ConditionDeleting) {
		action.Events = []Event{{Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonDeletionBlocked, Note: message}}
	}
	return action
}

// startRollout makes the first stage active, either because the rollout has
// not started or because the recorded active stage is gone from the spec.
func startRollout(policy *v1alpha1.StagedBindingPolicy, reset bool, now metav1.Time) Action {
	first := policy.Spec.Stages[0]
	status := policy.Status.DeepCopy()
	revisions := keptRevisions(status)
	status.Stages = nil // a fresh start forgets the records of an earlier rollout, but the revisions the stages keep
	status.Failure = nil
	events := []Event{enterStage(policy, status, 0, now, v1alpha1.ReasonBindingPolicyPending, "")}
	restoreRevisions(status, revisions)
	why := "the rollout has not started"
	if reset {
		note := fmt.Sprintf("active stage %q is no longer in the spec; restarting the rollout from stage %q",
			policy.Status.ActiveStage, first.Name)
		events = append([]Event{{Type: corev1.EventTypeWarning, Reason: v1alpha1.EventReasonActiveStageReset, Note: note}}, events...)
		why = note
	}
	return Action{Type: ActionUpdateStatus, Status: status, Events: events, Why: why}
}

// enterStage makes the stage with the given index the active stage of
// status as the rollout reaches it: Active, its BindingPolicy to be created,
// or AwaitingApproval when its approval is Required. It sets the summary:
// the Progressing condition has the given reason (AwaitingApproval for a
// stage awaiting approval) and says done before the stage's own news. It
// returns the Event of the stage's start or of its request for approval.
func enterStage(policy *v1alpha1.StagedBindingPolicy, status *v1alpha1.StagedBindingPolicyStatus, index int, now metav1.Time,
	reason, done string) Event {
	stage := policy.Spec.Stages[index]
	status.ActiveStage = stage.Name
	status.Stages = stageRecords(policy, status.Stages, index, now)
	record := &status.Stages[index]
	if stage.Approval == v1alpha1.ApprovalRequired {
		approval := v1alpha1.StageApprovalName(policy.Name, stage.Name)
		record.Phase, record.StartTime, record.BindingPolicy = v1alpha1.StageAwaitingApproval, nil, ""
		record.Approval, record.ApprovalRequestedTime = approval, ptr.To(now)
		record.Message = awaitingApproval(approval)
		setAwaiting(status, policy, stage, done+fmt.Sprintf("stage %q: %s", stage.Name, record.Message), now)
		return Event{Type: corev1.EventTypeNormal, Reason: v1alpha1.EventReasonApprovalRequested,
			Note: fmt.Sprintf("stage %q waits for approval: approve StageApproval %s", stage.Name, approval)}
	}
	record.Message = "creating the stage's BindingPolicy"
	setStarting(status, policy, stage, reason, done+fmt.Sprintf("stage %q started", stage.Name), now)
	return Event{Type: corev1.EventTypeNormal, Reason: v1alpha1.EventReasonStageStarted, Note: fmt.Sprintf("stage %q started", stage.Name)}
}

// setStarting sets the summary of a rollout whose active stage has just
// started: its BindingPolicy is being created, and the Progressing
// condition has the given reason and message.
func setStarting(status *v1alpha1.StagedBindingPolicyStatus, policy *v1alpha1.StagedBindingPolicy, stage v1alpha1.Stage,
	reason, message string, now metav1.Time) {
	setSummary(status, policy, v1alpha1.RolloutProgressing,
		metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonBindingPolicyPending,
			Message: fmt.Sprintf("creating BindingPolicy %s", startedBindingPolicyName(policy, stage, status.UpdateRevision))},
		metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: reason, Message: message},
		now)
}

// startedBindingPolicyName is the name of the BindingPolicy a stage that
// starts creates first, at the given update revision: its census for a
// stage placed in batches.
func startedBindingPolicyName(policy *v1alpha1.StagedBindingPolicy, stage v1alpha1.Stage, revision string) string {
	if stage.Batched() {
		return v1alpha1.CensusBindingPolicyName(policy.Name, stage.Name)
	}
	return v1alpha1.RevisionBindingPolicyName(policy.Name, stage.Name, revision)
}

// setAwaiting sets the summary of a rollout whose active stage awaits
// approval, the Progressing condition saying message.
func setAwaiting(status *v1alpha1.StagedBindingPolicyStatus, policy *v1alpha1.StagedBindingPolicy, stage v1alpha1.Stage,
	message string, now metav1.Time) {
	setSummary(status, policy, v1alpha1.RolloutAwaitingApproval,
		metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonAwaitingApproval,
			Message: fmt.Sprintf("BindingPolicy %s is created once stage %q is approved",
				v1alpha1.RevisionBindingPolicyName(policy.Name, stage.Name, status.UpdateRevision), stage.Name)},
		metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAwaitingApproval, Message: message},
		now)
}

// awaitingApproval says what a stage awaiting approval waits for.
func awaitingApproval(approval string) string {
	return fmt.Sprintf("waiting for approval: set the Approved condition of StageApproval %s to True, "+
		"with its observedGeneration the StageApproval's generation", approval)
}

// restartRollout starts the rollout again from its first stage for a new
// value of the restartedAt annotation, and records the value handled.
func restartRollout(policy *v1alpha1.StagedBindingPolicy, value string, now metav1.Time) Action {
	action := startRollout(policy, false, now)
	action.Status.RestartedAt = value
	note := fmt.Sprintf("annotation %s=%q: restarting the rollout from stage %q", v1alpha1.RestartedAtAnnotation, value, policy.Spec.Stages[0].Name)
	if policy.Status.ActiveStage == "" {
		note = fmt.Sprintf("annotation %s=%q: starting the rollout from stage %q", v1alpha1.RestartedAtAnnotation, value, policy.Spec.Stages[0].Name)
	}
	action.Events = append([]Event{{Type: corev1.EventTypeNormal, Reason: v1alpha1.EventReasonRestarted, Note: note}}, action.Events...)
	action.Why = note
	return action
}

// advance records the active stage as done and makes the next one active.
func advance(policy *v1alpha1.StagedBindingPolicy, active int, result assessment, now metav1.Time) Action {
	done := policy.Spec.Stages[active]
	status := policy.Status.DeepCopy()
	status.Stages = stageRecords(policy, status.Stages, active, now)
	status.Stages[active].CompletionTime = ptr.To(now)
	status.Stages[active].Message = result.message
	status.Stages[active].Revision = doneRevision(policy, status, active)
	entered := enterStage(policy, status, active+1, now, v1alpha1.ReasonStageAdvanced, fmt.Sprintf("stage %q is done; ", done.Name))
	return Action{Type: ActionUpdateStatus, Status: status,
		Events: []Event{
			{Type: corev1.EventTypeNormal, Reason: v1alpha1.EventReasonStageSucceeded, Note: fmt.Sprintf("stage %q is done: %s", done.Name, result.message)},
			entered,
		},
		Why: fmt.Sprintf("stage %q is done", done.Name)}
}

// progressStatus is the status of a policy whose active stage's BindingPolicy
// is in line with the spec.
func progressStatus(policy *v1alpha1.StagedBindingPolicy, active int, result assessment, now metav1.Time) *v1alpha1.StagedBindingPolicyStatus {
	stage := policy.Spec.Stages[active]
	final := active == len(policy.Spec.Stages)-1
	status := policy.Status.DeepCopy()
	status.Stages = stageRecords(policy, status.Stages, active, now)
	record := &status.Stages[active]
	completed := final && (result.satisfied || record.Phase == v1alpha1.StageSucceeded)
	if final && result.satisfied && record.Phase != v1alpha1.StageSucceeded {
		record.Phase = v1alpha1.StageSucceeded
		record.CompletionTime = ptr.To(now)
	}
	if completed {
		record.Revision = doneRevision(policy, status, active)
		status.CurrentRevision = placedRevision(status)
	}
	if !completed || result.satisfied {
		record.Message = result.message
	}

	ready := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonBindingPolicyInSync,
		Message: fmt.Sprintf("BindingPolicy %s places stage %q", record.BindingPolicy, stage.Name)}
	progressing := metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: result.reason,
		Message: fmt.Sprintf("stage %q: %s", stage.Name, result.message)}
	phase := v1alpha1.RolloutProgressing
	switch {
	case completed:
		phase = v1alpha1.RolloutCompleted
		progressing.Status, progressing.Reason = metav1.ConditionFalse, v1alpha1.ReasonRolloutCompleted
		progressing.Message = fmt.Sprintf("final stage %q is done", stage.Name)
	case result.evaluationError:
		phase = v1alpha1.RolloutBlocked
		progressing.Status = metav1.ConditionFalse
	case result.stalled:
		phase = v1alpha1.RolloutStalled
		progressing.Status = metav1.ConditionFalse
	}
	setSummary(status, policy, phase, ready, progressing, now)
	return status
}

// suspended holds a rollout where it is: no stage starts and nothing placed
// changes; the status says Suspended, with a Normal Event when it begins.
func suspended(policy *v1alpha1.StagedBindingPolicy, now metav1.Time) Action {
	message := "spec.suspend holds the rollout before its first stage: nothing is placed until it is resumed"
	if policy.Status.ActiveStage != "" {
		message = fmt.Sprintf("spec.suspend holds the rollout in stage %q: no stage starts and nothing placed changes until it is resumed", policy.Status.ActiveStage)
	}
	status := policy.Status.DeepCopy()
	if status.SuspendedTime == nil {
		status.SuspendedTime = ptr.To(now)
	}
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonSuspended, Message: message}
	if current := meta.FindStatusCondition(policy.Status.Conditions, v1alpha1.ConditionReady); current != nil && policy.Status.ActiveStage != "" {
		ready = *current // what is placed stays as it was
	}
	setSummary(status, policy, v1alpha1.RolloutSuspended, ready,
		metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonSuspended, Message: message},
		now)
	if equality.Semantic.DeepEqual(&policy.Status, status) {
		return Action{Type: ActionNone, Why: "the rollout is suspended"}
	}
	action := Action{Type: ActionUpdateStatus, Status: status, Why: "the rollout is suspended"}
	if policy.Status.Phase != v1alpha1.RolloutSuspended {
		action.Events = []Event{{Type: corev1.EventTypeNormal, Reason: v1alpha1.EventReasonSuspended, Note: message}}
	}
	return action
}

// blockedStatus is the status of a policy whose spec stops the rollout.
func blockedStatus(policy *v1alpha1.StagedBindingPolicy, reason, message string, now metav1.Time) *v1alpha1.StagedBindingPolicyStatus {
	status := policy.Status.DeepCopy()
	setSummary(status, policy, v1alpha1.RolloutBlocked,
		metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: message},
		metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: reason, Message: message},
		now)
	return status
}

// setSummary sets the phase, the observed generation and the three conditions;
// Completed follows from the stage records.
func setSummary(status *v1alpha1.StagedBindingPolicyStatus, policy *v1alpha1.StagedBindingPolicy,
	phase v1alpha1.RolloutPhase, ready, progressing metav1.Condition, now metav1.Time) {
	status.Phase = phase
	status.ObservedGeneration = policy.Generation

	completed := metav1.Condition{Type: v1alpha1.ConditionCompleted, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonStagesRemaining}
	last := len(policy.Spec.Stages) - 1
	switch {
	case phase == v1alpha1.RolloutCompleted:
		completed.Status, completed.Reason = metav1.ConditionTrue, v1alpha1.ReasonRolloutCompleted
		completed.Message = fmt.Sprintf("final stage %q is done", policy.Spec.Stages[last].Name)
	case status.ActiveStage == "":
		completed.Message = "the rollout has not started"
	default:
		completed.Message = fmt.Sprintf("stage %q of %d is active", status.ActiveStage, len(policy.Spec.Stages))
		if last >= 0 && status.ActiveStage == policy.Spec.Stages[last].Name {
			completed.Reason = v1alpha1.ReasonFinalConditionNotMet
			completed.Message = fmt.Sprintf("final stage %q is active and not done yet", status.ActiveStage)
		}
	}
	for _, c := range []metav1.Condition{ready, progressing, completed} {
		c.ObservedGeneration = policy.Generation
		c.LastTransitionTime = now
		meta.SetStatusCondition(&status.Conditions, c)
	}
	boundStatus(status)
}

// boundStatus cuts every condition and stage message to MaxConditionMessage.
// Cutting is idempotent, so a status Plan computes again compares equal to
// the one it wrote.
func boundStatus(status *v1alpha1.StagedBindingPolicyStatus) {
	for i := range status.Conditions {
		status.Conditions[i].Message = cutMessage(status.Conditions[i].Message, MaxConditionMessage)
	}
	for i := range status.Stages {
		status.Stages[i].Message = cutMessage(status.Stages[i].Message, MaxConditionMessage)
	}
}

// cutMessage returns msg when it has at most limit bytes, and otherwise its
// beginning, cut at a rune boundary, with a note of how much was cut, in
// limit bytes at most.
func cutMessage(msg string, limit int) string {
	if len(msg) <= limit {
		return msg
	}
	tail := fmt.Sprintf("… (%d bytes cut)", len(msg)) // at most the bytes cut, so the result fits
	n := limit - len(tail)
	for n > 0 && !utf8.RuneStart(msg[n]) {
		n--
	}
	return msg[:max(n, 0)] + tail
}

// errorList returns the messages of the errors an errors.Join holds, or of err alone.
func errorList(err error) []string {
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []string{err.Error()}
	}
	var list []string
	for _, e := range joined.Unwrap() {
		list = append(list, e.Error())
	}
	return list
}

// compileFailures says which expressions do not compile in at most limit
// bytes: as many failures as fit, whole, then how many more there are.
func compileFailures(failures []string, limit int) string {
	if len(failures) == 1 {
		return cutMessage(failures[0], limit)
	}
	head := fmt.Sprintf("%d expressions do not compile: ", len(failures))
	msg := head
	for i, f := range failures {
		next := msg + f
		if i > 0 {
			next = msg + "; " + f
		}
		tail := ""
		if rest := len(failures) - i - 1; rest > 0 {
			tail = fmt.Sprintf("; and %d more", rest)
		}
		if len(next)+len(tail) > limit {
			more := fmt.Sprintf("; and %d more", len(failures)-i)
			if i == 0 { // not even the first fits whole: cut it
				more = fmt.Sprintf("; and %d more", len(failures)-1)
				return head + cutMessage(f, limit-len(head)-len(more)) + more
			}
			return msg + more
		}
		msg = next
	}
	return msg
}

// stageRecords returns one record per spec stage, keeping what the previous
// records say of earlier stages: stages before active are Succeeded, the
// active stage is Active (or stays Succeeded), later stages are Pending.
func stageRecords(policy *v1alpha1.StagedBindingPolicy, previous []v1alpha1.StageStatus, active int, now metav1.Time) []v1alpha1.StageStatus {
	byName := make(map[string]v1alpha1.StageStatus, len(previous))
	for _, r := range previous {
		byName[r.Name] = r
	}
	records := make([]v1alpha1.StageStatus, len(policy.Spec.Stages))
	for i, stage := range policy.Spec.Stages {
		old, had := byName[stage.Name]
		r := v1alpha1.StageStatus{Name: stage.Name, Phase: v1alpha1.StagePending, Revision: old.Revision}
		switch {
		case i < active:
			r = old
			r.Name = stage.Name
			if !had || old.Phase == v1alpha1.StagePending || old.Phase == v1alpha1.StageSkipped || old.Phase == v1alpha1.StageAwaitingApproval {
				r.Phase = v1alpha1.StageSkipped
			} else {
				r.Phase = v1alpha1.StageSucceeded
			}
		case i == active:
			r.Phase = v1alpha1.StageActive
			r.BindingPolicy = StageBindingPolicyName(policy, stage)
			r.StartTime = ptr.To(now)
			if had && old.Phase != v1alpha1.StagePending {
				r = old // a stage already reached keeps its record
				r.Name = stage.Name
				if r.Phase != v1alpha1.StageAwaitingApproval && r.BindingPolicy == "" {
					r.BindingPolicy = StageBindingPolicyName(policy, stage)
				}
			}
		}
		records[i] = r
	}
	return records
}

// recordSucceeded reports whether the record of the stage with the given
// index is Succeeded in status.
func recordSucceeded(status *v1alpha1.StagedBindingPolicyStatus, index int) bool {
	return index < len(status.Stages) && status.Stages[index].Phase == v1alpha1.StageSucceeded
}

// statusAction writes status when it differs from the policy's current status.
func statusAction(policy *v1alpha1.StagedBindingPolicy, status *v1alpha1.StagedBindingPolicyStatus, event Event, why string) Action {
	if equality.Semantic.DeepEqual(&policy.Status, status) {
		return Action{Type: ActionNone, Why: why}
	}
	action := Action{Type: ActionUpdateStatus, Status: status, Why: why}
	if event.Reason != "" && !sameCondition(policy.Status.Conditions, status.Conditions, v1alpha1.ConditionReady) {
		action.Events = []Event{event}
	}
	return action
}

// sameCondition reports whether a condition type has the same status, reason
// and message in both lists, so that warnings are emitted once per change.
func sameCondition(before, after []metav1.Condition, conditionType string) bool {
	b, a := meta.FindStatusCondition(before, conditionType), meta.FindStatusCondition(after, conditionType)
	if b == nil || a == nil {
		return b == a
	}
	return b.Status == a.Status && b.Reason == a.Reason && b.Message == a.Message
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
