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
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// This file holds the builders of the status Plan writes: the summary
// (phase and conditions), the stage records, the bounds on messages, and
// rule 19, which brings the status of a stage that goes on up to date.

// progressingReason is the reason of the status's Progressing condition, or "".
func progressingReason(status *v1alpha1.StagedBindingPolicyStatus) string {
	if c := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionProgressing); c != nil {
		return c.Reason
	}
	return ""
}

// setStarting sets the summary of a rollout whose active stage has just
// started: its BindingPolicy is being created, and the Progressing
// condition has the given reason and message.
func setStarting(status *v1alpha1.StagedBindingPolicyStatus, policy *v1alpha1.StagedBindingPolicy, stage v1alpha1.Stage,
	reason, message string, now metav1.Time) {
	setSummary(status, policy, v1alpha1.RolloutProgressing,
		metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonBindingPolicyPending,
			Message: fmt.Sprintf("creating BindingPolicy %s", v1alpha1.ActivePlacement(policy.Name, stage, status.UpdateRevision).String())},
		metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: reason, Message: message},
		now)
}

// setAwaiting sets the summary of a rollout whose active stage awaits
// approval, the Progressing condition saying message.
func setAwaiting(status *v1alpha1.StagedBindingPolicyStatus, policy *v1alpha1.StagedBindingPolicy, stage v1alpha1.Stage,
	message string, now metav1.Time) {
	setSummary(status, policy, v1alpha1.RolloutAwaitingApproval,
		metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonAwaitingApproval,
			Message: fmt.Sprintf("BindingPolicy %s is created once stage %q is approved",
				v1alpha1.StagePlacement(policy.Name, stage.Name).At(status.UpdateRevision).String(), stage.Name)},
		metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAwaitingApproval, Message: message},
		now)
}

// awaitingApproval says what a stage awaiting approval waits for.
func awaitingApproval(approval string) string {
	return fmt.Sprintf("waiting for approval: set the Approved condition of StageApproval %s to True, "+
		"with its observedGeneration the StageApproval's generation", approval)
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
			r.BindingPolicy = v1alpha1.ActivePlacement(policy.Name, stage, policy.Status.UpdateRevision).String()
			r.StartTime = ptr.To(now)
			if had && old.Phase != v1alpha1.StagePending {
				r = old // a stage already reached keeps its record
				r.Name = stage.Name
				if r.Phase != v1alpha1.StageAwaitingApproval && r.BindingPolicy == "" {
					r.BindingPolicy = v1alpha1.ActivePlacement(policy.Name, stage, policy.Status.UpdateRevision).String()
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

// progressAction is Plan's rule 19: it brings the status up to date for a
// stage that goes on (a done last stage completes the rollout): the
// progress deadline (computed before rule 18, which does not read it), the
// condition met since, the analyses' records, a batched stage's clusters
// (b), and Events for a stalled stage, a completed rollout, a failed
// cluster and an evaluation error, each once. The next run is due after
// requeue at the latest.
func progressAction(snap *Snapshot, active int, result assessment, b *batches, an analyses,
	metSince, deadline *metav1.Time, requeue time.Duration) Action {
	policy := snap.Policy
	stage := policy.Spec.Stages[active]
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
