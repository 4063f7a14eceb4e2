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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/freeze"
)

// This file holds Plan's rule 6c, the hold of a RolloutFreeze
// (docs/proposals/freezes.md): the freezes' Decision is an input of the
// snapshot (Snapshot.Freeze), and Plan only keeps a frozen stage, or a
// batch of it, from starting. A stage already started finishes, an
// abort is never frozen (rule 4 comes first), and suspension and
// resumption are left as they are (rule 6 comes first).

// frozenMark is what rule 6c held in one run of Plan: the hold and the
// stage it kept from starting. Plan gives each run's copy of the snapshot
// one (Snapshot.frozen), so that the Frozen condition is set only by a
// run that held something, and left as it is by one that returned
// before reaching the start it would hold.
type frozenMark struct {
	hold  *freeze.Hold
	stage string
}

// freezeHolds reports whether a freeze keeps stage i from starting, and
// marks the run as held by it.
func freezeHolds(snap *Snapshot, i int) bool {
	if snap.Freeze == nil || i < 0 || i >= len(snap.Policy.Spec.Stages) {
		return false
	}
	name := snap.Policy.Spec.Stages[i].Name
	h := snap.Freeze.For(name)
	if h == nil {
		return false
	}
	if snap.frozen != nil && snap.frozen.hold == nil {
		snap.frozen.hold, snap.frozen.stage = h, name
	}
	return true
}

// startsFirstStage reports whether rules 7 to 9 would start the policy's
// first stage: a new restartedAt (not too long to record), a new spec
// revision the wave does not hold, or a rollout not started (or whose
// active stage left the spec).
func startsFirstStage(snap *Snapshot) bool {
	policy := snap.Policy
	want := policy.Annotations[v1alpha1.RestartedAtAnnotation]
	restart := want != "" && want != policy.Status.RestartedAt && len(want) <= v1alpha1.MaxRestartedAtLength
	_, started, _ := ActiveStage(policy)
	return restart || policy.Spec.SpecRevision() != policy.Status.UpdateRevision && !snap.waveHolds || !started
}

// freezeGate is Plan's rule 6c at the rollout's start: where rules 7 to 9
// would start the first stage (a restart, a new revision, a rollout not
// started) and a freeze holds it, nothing starts. A rollout not started
// waits, Pending (the Frozen condition, set by freezeAfter, says why); a
// rollout that runs a revision goes on with it through the rules after
// this one, which do not restart it nor start the new revision while
// snap.startFrozen says so. It reports whether it has a change to make.
func freezeGate(snap *Snapshot) (Action, bool) {
	if !snap.startFrozen {
		return Action{}, false
	}
	freezeHolds(snap, 0)
	policy := snap.Policy
	if _, started, _ := ActiveStage(policy); started {
		return Action{}, false
	}
	status := policy.Status.DeepCopy()
	if status.Phase == "" {
		status.Phase = v1alpha1.RolloutPending
	}
	status.ObservedGeneration = policy.Generation
	action := statusAction(policy, status, Event{}, "a freeze holds the rollout's start")
	action.Why = fmt.Sprintf("a freeze holds the start of stage %q", policy.Spec.Stages[0].Name)
	return action, true
}

// advanceFrozen is Plan's rule 6c at the end of a stage: a done stage
// (satisfied) that is not the last does not hand over to the next stage,
// nor record the advance, while a freeze holds the next stage; it stays
// active and done, and hands over once the freeze ends.
func advanceFrozen(snap *Snapshot, active int, satisfied bool) bool {
	return satisfied && active < len(snap.Policy.Spec.Stages)-1 && freezeHolds(snap, active+1)
}

// batchFrozen is Plan's rule 6c within a stage placed in batches: the
// first cluster of a batch is not placed while a freeze holds the stage;
// a batch already started fills.
func batchFrozen(snap *Snapshot, active int) bool {
	return freezeHolds(snap, active)
}

// approvalFrozen is Plan's rule 6c at an approval gate: an approved stage
// that would start (the action of rule 12 makes it Active) waits, still
// AwaitingApproval and approved, while a freeze holds it.
func approvalFrozen(snap *Snapshot, active int, action Action) Action {
	if action.Status == nil {
		return action
	}
	record := action.Status.StageNamed(snap.Policy.Spec.Stages[active].Name)
	if record == nil || record.Phase != v1alpha1.StageActive || !freezeHolds(snap, active) {
		return action
	}
	return Action{Type: ActionNone, Why: fmt.Sprintf("stage %q is approved, and a freeze holds its start", record.Name)}
}

// frozenMessage is the Frozen condition's message for a hold of stage.
func frozenMessage(stage string, h *freeze.Hold) string {
	return fmt.Sprintf("stage %q does not start: %s", stage, h.Describe())
}

// stillFrozen reports whether a freeze still holds what the policy would
// start next, for a run that returned before reaching it: the first
// stage where rules 7 to 9 would start it, else the stage after the
// active one, or the active one (its next batch). A policy being
// deleted, aborted or suspended is not frozen.
func stillFrozen(snap *Snapshot) bool {
	policy := snap.Policy
	if snap.Freeze == nil || policy.DeletionTimestamp != nil || Aborting(policy) || policy.Spec.Suspend {
		return false
	}
	check := func(i int) bool {
		return i >= 0 && i < len(policy.Spec.Stages) && snap.Freeze.For(policy.Spec.Stages[i].Name) != nil
	}
	if snap.startFrozen {
		return true
	}
	active, started, _ := ActiveStage(policy)
	return started && (check(active+1) || policy.Spec.Stages[active].Batched() && check(active))
}

// freezeAfter finishes an action of Plan for rule 6c: a run that held a
// start (frozenMark) sets the Frozen condition (True, the hold's reason,
// the stage, the freeze, its end and its reason), with a Frozen Event
// when the message is new, and is due again when the hold may end
// (Decision.RecheckAfter); the condition goes, with an Unfrozen Event,
// once no freeze holds what the policy would start (stillFrozen). The
// change rides on the action's status write, or on one of its own when
// the action makes no change, else waits for the next run's.
func freezeAfter(snap *Snapshot, action *Action) {
	policy := snap.Policy
	prev := meta.FindStatusCondition(policy.Status.Conditions, v1alpha1.ConditionFrozen)
	var mark frozenMark
	if snap.frozen != nil {
		mark = *snap.frozen
	}
	if mark.hold == nil {
		if prev == nil || stillFrozen(snap) {
			return
		}
		if !ownStatus(policy, action, "no freeze holds the rollout any more") {
			return
		}
		meta.RemoveStatusCondition(&action.Status.Conditions, v1alpha1.ConditionFrozen)
		action.Events = append(action.Events, Event{Type: corev1.EventTypeNormal, Reason: v1alpha1.EventReasonUnfrozen,
			Note: "no freeze holds the rollout any more: what it held starts"})
		return
	}
	action.RequeueAfter = Earliest(action.RequeueAfter, snap.Freeze.RecheckAfter)
	cond := metav1.Condition{Type: v1alpha1.ConditionFrozen, Status: metav1.ConditionTrue, ObservedGeneration: policy.Generation,
		LastTransitionTime: snap.Now, Reason: mark.hold.Reason, Message: cutMessage(frozenMessage(mark.stage, mark.hold), MaxConditionMessage)}
	if prev != nil && prev.Status == cond.Status && prev.Reason == cond.Reason && prev.Message == cond.Message &&
		prev.ObservedGeneration == cond.ObservedGeneration && action.Status == nil {
		return
	}
	if !ownStatus(policy, action, fmt.Sprintf("a freeze holds stage %q", mark.stage)) {
		return
	}
	meta.SetStatusCondition(&action.Status.Conditions, cond)
	if prev == nil || prev.Status != metav1.ConditionTrue || prev.Message != cond.Message {
		action.Events = append(action.Events, Event{Type: corev1.EventTypeNormal, Reason: v1alpha1.EventReasonFrozen, Note: cond.Message})
	}
}

// ownStatus gives action a status to write when it has none and makes no
// other change (a write of the policy's status as it is, which the
// caller changes); it reports whether the action has a status to change.
// An action that makes another change leaves it to the next run.
func ownStatus(policy *v1alpha1.StagedBindingPolicy, action *Action, why string) bool {
	if action.Status != nil {
		return true
	}
	if action.Type != ActionNone {
		return false
	}
	action.Type, action.Status, action.Why = ActionUpdateStatus, policy.Status.DeepCopy(), why
	return true
}

// firstStage is the name of the policy's first stage, "" for none.
func firstStage(policy *v1alpha1.StagedBindingPolicy) string {
	if len(policy.Spec.Stages) == 0 {
		return ""
	}
	return policy.Spec.Stages[0].Name
}
