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
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// This file holds the moves of a rollout from stage to stage that Plan's
// rules make by writing the status: a start, a restart, entering a stage,
// the advance from a done stage, and a suspension.

// startRollout makes the first stage active, either because the rollout has
// not started or because the recorded active stage is gone from the spec.
//
// Plan's rule 9: a rollout that has not started, or whose active stage was
// removed from the spec, starts at the first stage; a stage it reaches that
// needs approval awaits it.
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
		approval := v1alpha1.StagePlacement(policy.Name, stage.Name).String()
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

// restartRollout starts the rollout again from its first stage for a new
// value of the restartedAt annotation, and records the value handled.
//
// Plan's rule 7: a new value of the restartedAt annotation restarts the
// rollout from its first stage, make-before-break (rule 18 takes the old
// stage away); a value longer than the status can record blocks the rollout
// where it is, with a Warning Event, until the annotation changes. A
// rollout with no active stage whose spec names a new revision starts that
// revision, as rule 8 would (startRevision): restarted at status's update
// revision, a policy never started would place the whole downsync (""),
// every revision's objects, which no wave released.
func restartRollout(policy *v1alpha1.StagedBindingPolicy, value string, now metav1.Time) Action {
	var action Action
	if policy.Status.ActiveStage == "" && policy.Spec.SpecRevision() != policy.Status.UpdateRevision {
		action = startRevision(policy, now)
	} else {
		action = startRollout(policy, false, now)
	}
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

// suspended holds a rollout where it is: no stage starts and nothing placed
// changes; the status says Suspended, with a Normal Event when it begins.
//
// Plan's rule 6: a suspended rollout (spec.suspend) stays where it is,
// changing nothing placed, and says so; resumed, it goes on from there
// (Resumed).
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
