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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// This file holds Plan's rules for stages whose approval is Required: the
// StageApprovals that ask for approval, and the gate that holds such a stage
// until its StageApproval approves the current rollout.

// needsApproval reports whether the stage with the given index needs an
// approval to start: its approval is Required, or it is the active stage
// and has asked for one in this rollout (it awaits it, or was started by
// one). A gate the rollout has reached binds until it is approved or the
// rollout restarts, whatever its approval says by then: setting it to None
// does not open it.
func needsApproval(policy *v1alpha1.StagedBindingPolicy, index, active int) bool {
	stage := policy.Spec.Stages[index]
	if stage.Approval == v1alpha1.ApprovalRequired {
		return true
	}
	record := policy.Status.StageNamed(stage.Name)
	return index == active && record != nil && record.Approval != "" &&
		(record.Phase == v1alpha1.StageAwaitingApproval || record.Phase == v1alpha1.StageActive && approvedThroughStageApproval(record))
}

// approvedThroughStageApproval reports whether an active stage's record
// says a StageApproval started it: it names what was approved, or, written
// by a stager from before approvedPlacement, when.
func approvedThroughStageApproval(record *v1alpha1.StageStatus) bool {
	return record.ApprovedPlacement != "" || record.ApprovedTime != nil
}

// approvalRequests keeps one StageApproval, in line with the policy, for
// every stage from the active one on whose approval is Required and which
// has not started yet, so that a stage can be approved before the rollout
// reaches it; and deletes the policy's StageApprovals that no stage of the
// spec asks for. It reports whether it has a change to make (one at a time).
//
// Plan's rule 10: StageApprovals no stage asks for are deleted, then every
// stage from the active one on whose approval is Required and that has not
// started gets one StageApproval in line with the policy.
func approvalRequests(snap *Snapshot, active int) (Action, bool) {
	policy := snap.Policy
	for i := range snap.Approvals {
		a := &snap.Approvals[i]
		if !OwnedBy(a, policy) || a.DeletionTimestamp != nil {
			continue
		}
		if index := stageIndex(policy, a.Spec.Stage); index < 0 || !needsApproval(policy, index, active) ||
			a.Name != v1alpha1.StagePlacement(policy.Name, a.Spec.Stage).String() {
			return Action{Type: ActionDeleteStageApproval, StageApproval: a,
				Why: fmt.Sprintf("no stage of the spec asks for StageApproval %s any more", a.Name)}, true
		}
	}
	// The spec digest: it is worked out only for a policy
	// with a gate ahead, not on every run of every policy.
	digest := ""
	for i := active; i < len(policy.Spec.Stages); i++ {
		stage := policy.Spec.Stages[i]
		if !needsApproval(policy, i, active) {
			continue
		}
		if record := policy.Status.StageNamed(stage.Name); i == active && record != nil &&
			record.Phase != v1alpha1.StageAwaitingApproval && record.Phase != v1alpha1.StagePending {
			continue // the stage has passed its gate: its approval is a record now
		}
		if digest == "" {
			digest = specDigest(policy)
		}
		desired := desiredApproval(policy, stage, digest)
		current := findApproval(snap.Approvals, desired.Name)
		switch {
		case current == nil:
			return Action{Type: ActionCreateStageApproval, StageApproval: desired,
				Why: fmt.Sprintf("stage %q needs approval", stage.Name)}, true
		case !OwnedBy(current, policy) || current.DeletionTimestamp != nil:
			continue // the gate reports a foreign one; a departing one is created again once gone
		case current.Spec.SpecDigest != desired.Spec.SpecDigest,
			current.Labels[v1alpha1.PolicyLabel] != policy.Name || current.Labels[v1alpha1.StageLabel] != stage.Name:
			updated := current.DeepCopy()
			updated.Labels = MergeLabels(updated.Labels, desired.Labels)
			updated.OwnerReferences = desired.OwnerReferences
			updated.Spec = desired.Spec
			return Action{Type: ActionUpdateStageApproval, StageApproval: updated,
				Why: fmt.Sprintf("StageApproval %s is of an earlier rollout: an approval given before no longer counts", current.Name)}, true
		}
	}
	return Action{}, false
}

// approvalGate decides for an active stage awaiting approval: it starts once
// its StageApproval approves the current rollout (or once its approval is no
// longer Required), and waits, saying so, until then.
//
// Plan's rule 12: a stage awaiting approval places nothing until it is
// approved (a StageApproval of its name that the policy does not own blocks
// the rollout, StageApprovalConflict); a gate reached binds until it is
// approved or the rollout restarts, even if its approval is set to None.
func approvalGate(snap *Snapshot, active int) Action {
	policy := snap.Policy
	stage := policy.Spec.Stages[active]
	if !needsApproval(policy, active, active) {
		if action, ok := windowHoldsApproved(snap, active); ok { // rule 6b
			return action
		}
		return startApprovedStage(policy, active, nil, snap.Now)
	}
	name := v1alpha1.StagePlacement(policy.Name, stage.Name).String()
	approval := findApproval(snap.Approvals, name)
	switch {
	case approval != nil && !OwnedBy(approval, policy):
		msg := fmt.Sprintf("StageApproval %s already exists and does not belong to this policy; rename or delete it", name)
		status := blockedStatus(policy, v1alpha1.ReasonStageApprovalConflict, msg, snap.Now)
		return statusAction(policy, status, Event{Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonStageApprovalConflict, Note: msg},
			"the stage's StageApproval name is taken")
	case approval == nil || approval.DeletionTimestamp != nil || approval.Spec.SpecDigest != specDigest(policy):
		return awaitApproval(policy, active, fmt.Sprintf("waiting for StageApproval %s to be created", name), snap.Now)
	case approval.Approved() == nil:
		msg := awaitingApproval(name)
		if c := meta.FindStatusCondition(approval.Status.Conditions, v1alpha1.ConditionApproved); c != nil &&
			c.Status == metav1.ConditionTrue && c.ObservedGeneration != approval.Generation {
			msg = fmt.Sprintf("StageApproval %s was approved at its generation %d, for an earlier rollout; it is at generation %d "+
				"since the policy changed: approve it again", name, c.ObservedGeneration, approval.Generation)
		}
		return awaitApproval(policy, active, msg, snap.Now)
	}
	if action, ok := windowHoldsApproved(snap, active); ok { // rule 6b
		return action
	}
	return startApprovedStage(policy, active, approval, snap.Now)
}

// approvedPlacementChanged takes an active stage that was started by an
// approval back to AwaitingApproval when the spec would change what it
// places (record.ApprovedPlacement): the approval was for what the stage
// placed then, so its BindingPolicy stays as it was approved until an
// approval of the new rollout starts the stage again. It reports false when
// nothing it places has changed.
//
// A record written by a stager from before approvedPlacement names no
// placement: what the stage's BindingPolicies place is then taken as the
// one approved, and recorded, when it is what the spec places; else (the
// spec changed since, or there is nothing to read it from) the stage
// awaits approval again, as for a change.
//
// Plan's rule 11: an approved, active stage whose spec would place anything
// else (cluster selectors, downsync) awaits approval again, its
// BindingPolicy left as approved; a stage approved before its record named
// what it placed (approvedPlacement) gets that record from its
// BindingPolicies when they place what the spec does, and otherwise awaits
// approval again.
func approvedPlacementChanged(snap *Snapshot, active int) (Action, bool) {
	policy := snap.Policy
	stage := policy.Spec.Stages[active]
	record := policy.Status.StageNamed(stage.Name)
	if record == nil || record.Phase != v1alpha1.StageActive || !approvedThroughStageApproval(record) {
		return Action{}, false
	}
	digest := placementDigest(policy, stage)
	name := v1alpha1.StagePlacement(policy.Name, stage.Name).String()
	msg := fmt.Sprintf("the spec changes what the stage places since %s approved it: its BindingPolicy stays as approved until StageApproval %s approves the change",
		orSomeone(record.ApprovedBy), name)
	switch {
	case record.ApprovedPlacement == digest:
		return Action{}, false
	case record.ApprovedPlacement == "" && placedAsSpecified(snap, active):
		status := policy.Status.DeepCopy()
		status.StageNamed(stage.Name).ApprovedPlacement = digest
		return Action{Type: ActionUpdateStatus, Status: status,
			Why: fmt.Sprintf("stage %q was approved before its record named what it placed: recording what its BindingPolicy places", stage.Name)}, true
	case record.ApprovedPlacement == "":
		msg = fmt.Sprintf("%s approved the stage before the stager recorded what an approval places, and its BindingPolicy does not place what the spec does: "+
			"it stays as it is until StageApproval %s approves the spec", orSomeone(record.ApprovedBy), name)
	}
	status := policy.Status.DeepCopy()
	status.Stages = stageRecords(policy, status.Stages, active, snap.Now)
	r := &status.Stages[active]
	r.Phase, r.Approval, r.ApprovalRequestedTime = v1alpha1.StageAwaitingApproval, name, ptr.To(snap.Now)
	r.ApprovedBy, r.ApprovedTime, r.ApprovedPlacement = "", nil, ""
	r.ConditionMetTime, r.ProgressDeadlineTime = nil, nil
	r.Message = msg
	setAwaiting(status, policy, stage, fmt.Sprintf("stage %q: %s", stage.Name, msg), snap.Now)
	return Action{Type: ActionUpdateStatus, Status: status,
		Events: []Event{{Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonApprovedPlacementChanged, Note: fmt.Sprintf("stage %q: %s", stage.Name, msg)}},
		Why:    fmt.Sprintf("stage %q: %s", stage.Name, msg)}, true
}

// placedAsSpecified reports whether the active stage's BindingPolicies,
// the policy's, place what the spec says: its BindingPolicy, or for a
// stage placed in batches its census and the BindingPolicies of its
// clusters (one at least, every one).
func placedAsSpecified(snap *Snapshot, active int) bool {
	policy := snap.Policy
	stage := policy.Spec.Stages[active]
	inLine := func(current, desired *ksv1alpha1.BindingPolicy) bool {
		return current != nil && current.DeletionTimestamp == nil && OwnedBy(current, policy) && BindingPolicyInSync(current, desired)
	}
	if !stage.Batched() {
		return inLine(snap.ActiveBindingPolicy, DesiredBindingPolicy(policy, stage))
	}
	if !inLine(snap.ActiveBindingPolicy, CensusBindingPolicy(policy, stage)) {
		return false
	}
	placed := false
	for i := range snap.BindingPolicies {
		bp := &snap.BindingPolicies[i]
		if OwnedBy(bp, policy) && placesCluster(policy, stage.Name, bp) {
			if !inLine(bp, ClusterBindingPolicy(policy, stage, bp.Labels[v1alpha1.ClusterLabel])) {
				return false
			}
			placed = true
		}
	}
	return placed
}

// orSomeone is an approver's name, or words for one who gave none.
func orSomeone(by string) string {
	if by == "" {
		return "someone who did not give status.approvedBy"
	}
	return by
}

// stageIndex returns the index of the stage of the spec with the given
// name, or -1.
func stageIndex(policy *v1alpha1.StagedBindingPolicy, name string) int {
	return slices.IndexFunc(policy.Spec.Stages, func(s v1alpha1.Stage) bool { return s.Name == name })
}

// awaitApproval is the status of a rollout whose active stage awaits
// approval, with message saying what for.
func awaitApproval(policy *v1alpha1.StagedBindingPolicy, active int, message string, now metav1.Time) Action {
	stage := policy.Spec.Stages[active]
	status := policy.Status.DeepCopy()
	status.Stages = stageRecords(policy, status.Stages, active, now)
	record := &status.Stages[active]
	if record.ApprovalRequestedTime == nil {
		record.ApprovalRequestedTime = ptr.To(now)
	}
	record.Approval = v1alpha1.StagePlacement(policy.Name, stage.Name).String()
	record.Message = message
	setAwaiting(status, policy, stage, fmt.Sprintf("stage %q: %s", stage.Name, message), now)
	return statusAction(policy, status, Event{}, fmt.Sprintf("stage %q awaits approval", stage.Name))
}

// startApprovedStage starts an active stage that awaited approval, recording
// who approved it and when from approval (nil when its approval is no longer
// Required).
func startApprovedStage(policy *v1alpha1.StagedBindingPolicy, active int, approval *v1alpha1.StageApproval, now metav1.Time) Action {
	stage := policy.Spec.Stages[active]
	status := policy.Status.DeepCopy()
	status.Stages = stageRecords(policy, status.Stages, active, now)
	record := &status.Stages[active]
	record.Phase, record.StartTime = v1alpha1.StageActive, ptr.To(now)
	// The analyses of an earlier approval judged another placement.
	record.Analyses, record.PlacedTime = nil, nil
	record.BindingPolicy = v1alpha1.ActivePlacement(policy.Name, stage, policy.Status.UpdateRevision).String()
	record.Message = "creating the stage's BindingPolicy"
	var events []Event
	news := fmt.Sprintf("stage %q started: its approval is no longer required", stage.Name)
	if approval != nil {
		approved := approval.Approved()
		record.ApprovedTime, record.ApprovedBy = ptr.To(approved.LastTransitionTime), approval.Status.ApprovedBy
		record.ApprovedPlacement = placementDigest(policy, stage)
		by := orSomeone(approval.Status.ApprovedBy)
		news = fmt.Sprintf("stage %q started: approved by %s at %s", stage.Name, by, approved.LastTransitionTime.UTC().Format(time.RFC3339))
		events = append(events, Event{Type: corev1.EventTypeNormal, Reason: v1alpha1.EventReasonStageApproved,
			Note: fmt.Sprintf("StageApproval %s approves stage %q (approved by %s)", approval.Name, stage.Name, by)})
	}
	setStarting(status, policy, stage, v1alpha1.ReasonBindingPolicyPending, news, now)
	events = append(events, Event{Type: corev1.EventTypeNormal, Reason: v1alpha1.EventReasonStageStarted, Note: news})
	return Action{Type: ActionUpdateStatus, Status: status, Events: events, Why: news}
}

// desiredApproval is the StageApproval of one stage of the policy, for the
// rollout of the given spec digest.
func desiredApproval(policy *v1alpha1.StagedBindingPolicy, stage v1alpha1.Stage, digest string) *v1alpha1.StageApproval {
	return &v1alpha1.StageApproval{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "StageApproval"},
		ObjectMeta: metav1.ObjectMeta{
			Name: v1alpha1.StagePlacement(policy.Name, stage.Name).String(),
			Labels: map[string]string{
				v1alpha1.PolicyLabel: policy.Name,
				v1alpha1.StageLabel:  stage.Name,
			},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(policy, v1alpha1.GroupVersion.WithKind("StagedBindingPolicy"))},
		},
		Spec: v1alpha1.StageApprovalSpec{Policy: policy.Name, Stage: stage.Name, PolicyGeneration: policy.Generation, SpecDigest: digest},
	}
}

// specDigest identifies the policy's current rollout for its
// approvals: a digest of its spec, but spec.suspend (suspending and resuming
// keeps approvals) and spec.promotion, and of its restartedAt annotation.
func specDigest(policy *v1alpha1.StagedBindingPolicy) string {
	spec := policy.Spec.DeepCopy()
	spec.Suspend = false
	spec.Promotion = nil // a promotion is no change of the rollout: approvals and a held failure stay
	raw, err := json.Marshal(struct {
		Spec        *v1alpha1.StagedBindingPolicySpec `json:"spec"`
		RestartedAt string                            `json:"restartedAt"`
	}{spec, policy.Annotations[v1alpha1.RestartedAtAnnotation]})
	if err != nil { // a spec of plain data always marshals; were it not to, no approval would count
		raw = []byte(err.Error())
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16])
}

// placementDigest identifies what a stage of the policy places: the spec of
// its BindingPolicy (the stage's cluster selectors, the policy's downsync).
func placementDigest(policy *v1alpha1.StagedBindingPolicy, stage v1alpha1.Stage) string {
	raw, err := json.Marshal(DesiredBindingPolicy(policy, stage).Spec)
	if err != nil { // plain data always marshals; were it not to, the stage would await approval again
		raw = []byte(err.Error())
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16])
}

// findApproval returns the StageApproval with the given name, or nil.
func findApproval(approvals []v1alpha1.StageApproval, name string) *v1alpha1.StageApproval {
	for i := range approvals {
		if approvals[i].Name == name {
			return &approvals[i]
		}
	}
	return nil
}
