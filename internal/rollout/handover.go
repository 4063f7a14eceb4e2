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
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// This file holds Plan's rules for the handover from a done stage to the
// next: the next stage's BindingPolicy is created first, marked, and the
// status records the advance after it, taking the marked BindingPolicy as
// the record that the stage was done, whatever its condition says by then
// and across a restart of the stager.

// handover returns the Placement of the stage after the active one
// (ReasonHandedOver), its BindingPolicy marked as handed over from the
// active stage (HandedOverFromAnnotation),
// when the active stage is done and the next one starts without approval:
// it is created before the status records the advance, which puts one
// write, not two, between the CombinedStatus that completes a stage and the
// next stage's placement. It reports false when the advance is recorded
// first, as the next stage is entered: the next stage awaits approval
// (nothing is placed before it is approved), a BindingPolicy of its name
// exists already (left from an earlier rollout, or someone else's: entering
// the stage brings it in line, or reports the conflict), or the active
// stage's start is not recorded.
//
// Plan's rule 17: a done stage that is not the last hands over: the next
// stage's BindingPolicy is created first, marked; where it cannot be (the
// next stage needs approval, a BindingPolicy of its name exists, the next
// stage is placed in batches, or the active stage's start is not recorded),
// the status records the advance first.
func handover(snap *Snapshot, active int) (Placement, bool) {
	policy := snap.Policy
	token, ok := handoverToken(snap.key, policy, active)
	next := policy.Spec.Stages[active+1]
	if !ok || next.Approval == v1alpha1.ApprovalRequired || next.Batched() || snap.NextBindingPolicy != nil {
		return Placement{}, false
	}
	bp := DesiredBindingPolicy(policy, next)
	bp.Annotations = map[string]string{v1alpha1.HandedOverFromAnnotation: token}
	return Placement{BP: bp, Reason: ReasonHandedOver, Revision: policy.Status.UpdateRevision, Marked: true}, true
}

// HandedOver reports whether next, the BindingPolicy of the stage after the
// active one (nil when there is none), exists, owned by the policy, with
// the mark handover puts on it for this very start of the active stage: the
// stage was done and the next one placed, and only the status has yet to
// say so. A BindingPolicy of the next stage left from an earlier rollout (a
// restart keeps the old stages' BindingPolicies until the first one places)
// bears another start time, or no mark, and records nothing. Start times
// are whole seconds: only a rollout restarted within the very second in
// which its stage started and handed over would take the old mark for its
// own.
func (k HandoverKey) HandedOver(policy *v1alpha1.StagedBindingPolicy, next *ksv1alpha1.BindingPolicy, active int) bool {
	return markedForThisStart(k, policy, next, active) && policy.Spec.Stages[active+1].Approval != v1alpha1.ApprovalRequired
}

// withdrawnHandover returns the BindingPolicy the active stage handed over
// to a next stage whose approval has become Required since: nothing is
// placed before a stage is approved, so it is deleted, and the advance is
// then recorded first, as the gate asks, by the rules that follow.
//
// Plan's rule 17: a handover to a next stage that has needed approval since
// is withdrawn: that stage's BindingPolicy is deleted.
func withdrawnHandover(snap *Snapshot, active int) (*ksv1alpha1.BindingPolicy, bool) {
	if !markedForThisStart(snap.key, snap.Policy, snap.NextBindingPolicy, active) || snap.Policy.Spec.Stages[active+1].Approval != v1alpha1.ApprovalRequired {
		return nil, false
	}
	return snap.NextBindingPolicy, true
}

// markedForThisStart reports whether next, the BindingPolicy of the stage
// after the active one (nil when there is none), exists, owned by the
// policy and not being deleted, with the mark handover puts on it for the
// active stage's current start, sealed under key.
func markedForThisStart(key HandoverKey, policy *v1alpha1.StagedBindingPolicy, next *ksv1alpha1.BindingPolicy, active int) bool {
	if active+1 >= len(policy.Spec.Stages) {
		return false
	}
	token, ok := handoverToken(key, policy, active)
	return ok && next != nil && next.DeletionTimestamp == nil && OwnedBy(next, policy) &&
		hmac.Equal([]byte(next.Annotations[v1alpha1.HandedOverFromAnnotation]), []byte(token))
}

// HandoverKey seals the marks Plan writes (HandedOverFromAnnotation), and
// the placements of a batched stage's clusters (PlacedAnnotation). A mark
// is the record that a stage was done, and what it names (the policy's UID,
// the stage, its start) is readable by whoever can read the policy: whoever
// can also create BindingPolicies could otherwise mark one and have a stage
// recorded done without its condition. The stager makes one key per
// process at start (NewHandoverKey) and passes it to Plan (WithHandoverKey)
// and its event handlers, so a mark written before a restart of the stager
// (or by another replica) is not taken as a record: that stage is assessed
// again, and the next stage's BindingPolicy is taken away while it is not
// done (docs/security.md). The zero HandoverKey seals under an empty
// secret, which anyone can forge: it is what Plan uses without
// WithHandoverKey, for tests, and the controller never runs with it.
type HandoverKey struct {
	secret []byte
}

// NewHandoverKey returns a key of 32 random bytes.
func NewHandoverKey() (HandoverKey, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return HandoverKey{}, fmt.Errorf("reading the handover key: %w", err)
	}
	return HandoverKey{secret: secret}, nil
}

// IsZero reports whether k is the zero HandoverKey, which seals nothing a
// forger could not.
func (k HandoverKey) IsZero() bool {
	return len(k.secret) == 0
}

// handoverToken is the value of HandedOverFromAnnotation for the active
// stage's current start: its name and start time, and the seal of those
// and the policy's UID ("<stage>@<RFC 3339 time>/<seal>"). It reports false
// when the status records no start of the active stage.
func handoverToken(key HandoverKey, policy *v1alpha1.StagedBindingPolicy, active int) (string, bool) {
	stage := policy.Spec.Stages[active]
	record := policy.Status.StageNamed(stage.Name)
	if record == nil || record.Phase != v1alpha1.StageActive || record.StartTime == nil {
		return "", false
	}
	return key.Mark(policy.UID, stage.Name, record.StartTime.Time), true
}

// Mark is the mark, sealed under k, of the stage of the policy with the
// given UID, for its start at start.
func (k HandoverKey) Mark(policy types.UID, stage string, start time.Time) string {
	mark := stage + "@" + start.UTC().Format(time.RFC3339)
	return mark + "/" + k.seal(string(policy)+"/"+mark)
}

// seal is the HMAC-SHA256 of msg under k, base64url.
func (k HandoverKey) seal(msg string) string {
	mac := hmac.New(sha256.New, k.secret)
	mac.Write([]byte(msg))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// recordHandover records the advance from the active stage, handed over
// already, as advance does, in a status that says of the next stage what
// its own first run would: its BindingPolicy is there, waiting for
// KubeStellar to resolve it (with its progress deadline, if it has one).
// The advance and the next stage's first news are one status write, dated
// when the next stage's BindingPolicy was created (handedOverAt).
func recordHandover(snap *Snapshot, active int, result assessment) Action {
	policy := snap.Policy
	action := advance(policy, active, handedOverAssessment(policy, active, result), handedOverAt(snap, active))
	entered := policy.DeepCopy()
	entered.Status = *action.Status
	next := active + 1
	// A suspension that ends with this write was the done stage's (see
	// endSuspension), and the next stage starts now (handedOverAt): it
	// does not move the next stage's deadline.
	unsuspended := entered.DeepCopy()
	unsuspended.Status.SuspendedTime = nil
	waiting, deadline, _ := progressDeadline(unsuspended, next, waitingForBinding(snap.NextBindingPolicy), snap.Now)
	status := progressStatus(entered, next, waiting, snap.Now)
	if status.Stages[next].Phase == v1alpha1.StageActive {
		status.Stages[next].ProgressDeadlineTime = deadline
	}
	action.Status = status
	if waiting.stalled {
		// The record came past the next stage's deadline (the stager was
		// down): warned of once, here, as the stage's own run would.
		action.Events = append(action.Events, Event{Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonProgressDeadlineExceeded,
			Note: fmt.Sprintf("stage %q: %s", policy.Spec.Stages[next].Name, waiting.message)})
	}
	action.Why = fmt.Sprintf("stage %q is done and stage %q placed: recording the advance", policy.Spec.Stages[active].Name,
		policy.Spec.Stages[next].Name)
	return action
}

// handedOverAt is when the active stage was handed over: the creation of
// the next stage's BindingPolicy, as its API server recorded it, which is
// when the stage was done and the next one started, however long the
// record took to follow. It is now instead
//   - when the rollout has been suspended since (the record ends the
//     suspension, charged to the done stage: the next stage starts now,
//     and its deadline runs from now);
//   - when that time is not between the stage being done (its start, the
//     time its condition was first met, that time plus its soakDuration)
//     and now: the space's clock and the stager's disagree.
func handedOverAt(snap *Snapshot, active int) metav1.Time {
	policy := snap.Policy
	if policy.Status.SuspendedTime != nil {
		return snap.Now
	}
	stage := policy.Spec.Stages[active]
	record := policy.Status.StageNamed(stage.Name)
	done := *record.StartTime
	if met := record.ConditionMetTime; met != nil {
		if stage.SoakDuration != nil {
			met = ptr.To(metav1.NewTime(met.Add(stage.SoakDuration.Duration)))
		}
		if done.Before(met) {
			done = *met
		}
	}
	created := snap.NextBindingPolicy.CreationTimestamp
	if created.Before(&done) || snap.Now.Before(&created) {
		return snap.Now
	}
	return created
}

// handedOverAssessment is the assessment an advance records for a stage
// handed over already: the assessment itself when the stage is still done,
// else what was true when its successor was placed.
func handedOverAssessment(policy *v1alpha1.StagedBindingPolicy, active int, result assessment) assessment {
	if result.satisfied {
		return result
	}
	next := policy.Spec.Stages[active+1]
	result.message = fmt.Sprintf("the stage was done when BindingPolicy %s of stage %q was created",
		v1alpha1.StagePlacement(policy.Name, next.Name).At(policy.Status.UpdateRevision).String(), next.Name)
	return result
}
