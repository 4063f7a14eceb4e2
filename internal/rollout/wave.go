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
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/wave"
)

// This file holds Plan's rule 6a, the gate of a RolloutWave
// (docs/proposals/waves.md): the wave's Decision is an input of the
// snapshot, and Plan only keeps a revision it holds from starting.

// startsRevision reports whether the next rollout of the policy would
// start a revision: the spec names one other than the update revision, or
// the rollout has not started (rules 7 to 9 would start it). A rollout
// whose active stage left the spec has started: restarting it goes on with
// the revision it runs.
func startsRevision(policy *v1alpha1.StagedBindingPolicy) bool {
	_, started, reset := ActiveStage(policy)
	return policy.Spec.SpecRevision() != policy.Status.UpdateRevision || !started && !reset
}

// holdsRevision reports whether the snapshot's wave holds the revision the
// policy would start. Plan asks it once a run (Snapshot.waveHolds).
func holdsRevision(snap *Snapshot) bool {
	return snap.Wave != nil && !snap.Wave.Released && startsRevision(snap.Policy)
}

// waveKeepsFailure reports whether the policy's failure record, which
// the spec's new revision would release (rule 6), is of the revision the
// rollout runs while the wave holds that new revision: released, the
// rollout would go on with the failed revision, fail again and be
// released again, for ever. A new restartedAt still releases it.
//
// Plan's rule 6: a failure of the revision the rollout runs stays while
// the wave holds the spec's new revision that would release it.
func waveKeepsFailure(snap *Snapshot) bool {
	policy := snap.Policy
	f := policy.Status.Failure
	restart := policy.Annotations[v1alpha1.RestartedAtAnnotation]
	return f != nil && snap.waveHolds && f.Revision == policy.Status.UpdateRevision &&
		(restart == "" || restart == f.RestartedAt)
}

// heldStartKeepsFailure is waveKeepsFailure for the other holds of a
// start: the policy's failure record of the revision the rollout runs,
// which the spec's new revision or a new restartedAt would release
// (rule 6), stays while a freeze (rule 6c) or the first stage's change
// windows (rule 6b) hold that start. Released, the rollout would go on
// with the failed revision, fail again and be released again, for ever.
//
// Plan's rule 6: a failure of the revision the rollout runs stays while a
// freeze or a change window holds the start that would release it.
func heldStartKeepsFailure(snap *Snapshot) bool {
	policy := snap.Policy
	f := policy.Status.Failure
	return f != nil && f.Revision == policy.Status.UpdateRevision && (snap.startFrozen || windowHoldsStart(snap))
}

// heldPrefix opens the WaitingForWave message: it names the revision held,
// which is how a later run knows whether this revision was held already,
// and so emits the wave's Events once per revision from the API alone.
func heldPrefix(revision string) string {
	return fmt.Sprintf("revision %s is held: ", describeRevision(revision))
}

// waveGate is Plan's rule 6a: a revision the policy's wave has not
// released does not start. The first stage stays where it is and the
// rollout keeps what it runs; the WaitingForWave condition (True, the
// gate's reason, its message after the revision held) says why, with a
// WaitingForWave Event when the revision is first held and a
// WaveRevisionGivenUp Warning when an earlier step gave it up, each once
// per revision. A rollout not started then waits, requeued at the
// decision's RecheckAfter (and by the reconciler on every change of a
// wave); a rollout that runs a revision goes on with it through the rules
// after this one, which keep the condition, as rules 7 to 9 do not start
// the held one. It reports whether it has a change to make.
func waveGate(snap *Snapshot) (Action, bool) {
	if !snap.waveHolds {
		return Action{}, false
	}
	policy, d := snap.Policy, snap.Wave
	revision := policy.Spec.SpecRevision()
	prefix := heldPrefix(revision)
	status := policy.Status.DeepCopy()
	status.Wave = waveStatus(snap)
	if status.Phase == "" {
		status.Phase = v1alpha1.RolloutPending
	}
	status.ObservedGeneration = policy.Generation
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: v1alpha1.ConditionWaitingForWave, Status: metav1.ConditionTrue,
		ObservedGeneration: policy.Generation, LastTransitionTime: snap.Now, Reason: d.Reason, Message: prefix + d.Message})
	boundStatus(status)
	why := fmt.Sprintf("wave %s holds revision %s: %s", d.Wave, describeRevision(revision), d.Reason)
	if equality.Semantic.DeepEqual(&policy.Status, status) {
		if _, started, reset := ActiveStage(policy); started || reset {
			return Action{}, false // it keeps running what it runs
		}
		return Action{Type: ActionNone, Why: why, RequeueAfter: d.RecheckAfter}, true
	}
	previous := meta.FindStatusCondition(policy.Status.Conditions, v1alpha1.ConditionWaitingForWave)
	heldBefore := previous != nil && previous.Status == metav1.ConditionTrue && strings.HasPrefix(previous.Message, prefix)
	var events []Event
	if !heldBefore {
		events = append(events, Event{Type: corev1.EventTypeNormal, Reason: v1alpha1.EventReasonWaitingForWave, Note: prefix + d.Message})
	}
	if d.Reason == wave.ReasonEarlierStepFailed && (!heldBefore || previous.Reason != wave.ReasonEarlierStepFailed) {
		events = append(events, Event{Type: corev1.EventTypeWarning, Reason: v1alpha1.EventReasonWaveRevisionGivenUp, Note: d.Message})
	}
	return Action{Type: ActionUpdateStatus, Status: status, Events: events, Why: why, RequeueAfter: d.RecheckAfter}, true
}

// maxWaveName is the most bytes of a name in status.wave (the CRD's).
const maxWaveName = 63

// maxWaveSteps is the most steps status.wave's position can count (the
// CRD's pattern: three digits); a wave has 16 at most.
const maxWaveSteps = 999

// waveStatus is the policy's place in its wave, for status.wave: the
// wave, step and position of the snapshot's decision, Held while the wave
// holds the revision the spec would start, else Released, with that
// revision; nil when no wave orders the policy (Snapshot.Wave nil). A
// decision that names no wave (two waves order the policy, or the waves
// cannot be read) and holds nothing keeps what status says, as it cannot
// tell where the policy is. It takes nothing of the decision's reason,
// message or recheck time, which tell of other spaces and of the clock,
// so it changes only with the wave's spec and the policy's revision.
func waveStatus(snap *Snapshot) *v1alpha1.WaveStatus {
	d := snap.Wave
	switch {
	case d == nil:
		return nil
	case d.Wave == "" && !snap.waveHolds:
		return snap.Policy.Status.Wave
	}
	ws := &v1alpha1.WaveStatus{State: v1alpha1.WaveReleased, Revision: snap.Policy.Spec.SpecRevision()}
	if snap.waveHolds {
		ws.State = v1alpha1.WaveHeld
	}
	if d.Wave == "" {
		return ws
	}
	ws.Name, ws.Step = cutName(d.Wave), cutName(d.Step)
	if d.StepIndex >= 0 && d.StepIndex < d.Steps && d.Steps <= maxWaveSteps {
		ws.Position = fmt.Sprintf("%d/%d", d.StepIndex+1, d.Steps)
	}
	return ws
}

// cutName cuts a name of a wave or step to maxWaveName bytes; the wave's
// CRD keeps them shorter, so this only keeps a status write from failing.
func cutName(name string) string {
	if len(name) <= maxWaveName {
		return name
	}
	return strings.ToValidUTF8(name[:maxWaveName], "")
}

// waveAfter finishes an action of Plan for the wave: while the wave holds
// a revision the next run is due at RecheckAfter at the latest; status.wave
// is brought in line with the decision (waveStatus) and, once the wave no
// longer holds (released, or no wave orders the policy, or the spec no
// longer asks for a revision to start), a WaitingForWave condition left in
// status goes, with the action's status write, or a write of its own
// when the action makes none, and a start that it held says WaveReleased.
func waveAfter(snap *Snapshot, action *Action) {
	policy := snap.Policy
	if snap.waveHolds {
		action.RequeueAfter = Earliest(action.RequeueAfter, snap.Wave.RecheckAfter)
	}
	want := waveStatus(snap)
	held := !snap.waveHolds && meta.FindStatusCondition(policy.Status.Conditions, v1alpha1.ConditionWaitingForWave) != nil
	if action.Status == nil {
		switch {
		case !held && equality.Semantic.DeepEqual(policy.Status.Wave, want):
			return
		case action.Type != ActionNone:
			return // the next status write brings it in line
		case held:
			action.Why = "no wave holds a revision of the policy any more"
		default:
			action.Why = "the policy's place in its wave changed"
		}
		action.Type, action.Status = ActionUpdateStatus, policy.Status.DeepCopy()
	}
	action.Status.Wave = want
	if !held {
		return
	}
	meta.RemoveStatusCondition(&action.Status.Conditions, v1alpha1.ConditionWaitingForWave)
	started := action.Status.UpdateRevision != policy.Status.UpdateRevision ||
		policy.Status.ActiveStage == "" && action.Status.ActiveStage != ""
	if !started {
		return
	}
	note := fmt.Sprintf("no wave holds revision %s any more: its rollout starts", describeRevision(action.Status.UpdateRevision))
	if d := snap.Wave; d != nil && d.Wave != "" {
		note = fmt.Sprintf("wave %s released revision %s (%s): its rollout starts", d.Wave, describeRevision(action.Status.UpdateRevision), d.Reason)
		if d.Message != "" {
			note += ": " + d.Message
		}
	}
	action.Events = append(action.Events, Event{Type: corev1.EventTypeNormal, Reason: v1alpha1.EventReasonWaveReleased, Note: note})
}
