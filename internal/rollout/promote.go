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
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// This file holds Plan's rule 15a, the break-glass promotion
// (spec.promotion, docs/proposals/promote.md): a request a release manager
// wrote, which admission checked, is taken once; it treats the active stage
// as done without its condition, soak, analyses or batches, never without
// its approval.

// PromotionDigest identifies a promotion request: any change to
// spec.promotion is a new request.
func PromotionDigest(p *v1alpha1.Promotion) string {
	raw, err := json.Marshal(p)
	if err != nil { // plain data always marshals; were it not to, the error's text is the digest
		raw = []byte(err.Error())
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16])
}

// pendingPromotion returns spec.promotion when the stager has not taken it
// yet (status.lastPromotion has another digest), else nil.
func pendingPromotion(policy *v1alpha1.StagedBindingPolicy) *v1alpha1.Promotion {
	p := policy.Spec.Promotion
	if p == nil {
		return nil
	}
	if last := policy.Status.LastPromotion; last != nil && last.Digest == PromotionDigest(p) {
		return nil
	}
	return p
}

// fullPromotionInEffect reports whether spec.promotion is a full promotion
// the stager applied to the rollout that still runs: same request, same
// update revision, no restart since, and a stage of the rollout records
// its promotion. A fresh start from the first stage (rule 9, after an
// abort or with the active stage gone from the spec) forgets the records
// of the rollout before it, and with them the full promotion.
func fullPromotionInEffect(policy *v1alpha1.StagedBindingPolicy) bool {
	p, last := policy.Spec.Promotion, policy.Status.LastPromotion
	return p != nil && p.Full && last != nil && last.Digest == PromotionDigest(p) && last.Outcome == v1alpha1.PromotionApplied &&
		last.Revision == policy.Status.UpdateRevision && last.RestartedAt == policy.Status.RestartedAt &&
		slices.ContainsFunc(policy.Status.Stages, func(r v1alpha1.StageStatus) bool { return promotedBy(r.Promotion, p) })
}

// promotedBy reports whether a stage's promotion record is request p's.
func promotedBy(record *v1alpha1.StagePromotion, p *v1alpha1.Promotion) bool {
	return record != nil && record.Full == p.Full && record.By == p.RequestedBy && record.Reason == p.Reason &&
		record.RequestedAt.Equal(&p.RequestedAt)
}

// promotionReleasesFailure reports whether a pending promotion would
// promote the stage whose failure holds the rollout: the failure is
// released (rule 6) so that rule 15a can promote it. Not while the next
// stage's start is held (a window, a freeze): rule 15a keeps the request
// pending until then, and a failure released meanwhile would be found
// again by the assessment, and released again, for ever.
func promotionReleasesFailure(snap *Snapshot) bool {
	policy := snap.Policy
	p, f := pendingPromotion(policy), policy.Status.Failure
	if p == nil || f == nil || f.Stage != policy.Status.ActiveStage ||
		!p.Full && p.Stage != f.Stage || p.Revision != "" && p.Revision != policy.Status.UpdateRevision {
		return false
	}
	active := stageIndex(policy, f.Stage)
	return active >= 0 && !startHeldAfter(snap, active)
}

// promotionWhileAborting sets a pending promotion aside while the rollout
// aborts or stays aborted: there is no stage to promote, and a request
// kept for later would fire by surprise once the rollout goes on.
//
// Plan's rule 4a: a promotion requested while the rollout aborts is
// ignored and consumed (PromotionIgnored), the abort going on after.
func promotionWhileAborting(snap *Snapshot) (Action, bool) {
	if !Aborting(snap.Policy) || pendingPromotion(snap.Policy) == nil {
		return Action{}, false
	}
	return ignorePromotion(snap, "the rollout is aborting or aborted: there is no stage to promote"), true
}

// promote is Plan's rule 15a. With the active stage placed and in line
// (rules 13 and 14) and not awaiting approval (rule 12 comes first, so an
// approval gate is never skipped), a pending spec.promotion naming the
// active stage, or full, treats the stage as done without its condition,
// soak, analyses or batches: it advances (the last stage completes the
// rollout), its record says who, when, why and which gates it skipped,
// status.lastPromotion takes the request, and a Warning Event Promoted
// says so. A full promotion taken goes on promoting each stage of the same
// rollout as it becomes active (and approved), not those of a rollout
// started afresh after an abort (fullPromotionInEffect). A request that cannot apply
// (another stage than the active one, a complete rollout, another
// revision, a request no later than the last one taken) is ignored and
// consumed with a Warning Event PromotionIgnored, so that it never fires
// later by surprise. It reports whether it has a
// change to make.
func promote(snap *Snapshot, active int) (Action, bool) {
	policy := snap.Policy
	stage := policy.Spec.Stages[active]
	record := policy.Status.StageNamed(stage.Name)
	if record == nil || record.Phase != v1alpha1.StageActive {
		if p := pendingPromotion(policy); p != nil && record != nil && record.Phase == v1alpha1.StageSucceeded {
			return ignorePromotion(snap, "the rollout is complete: there is no stage to promote"), true
		}
		return Action{}, false
	}
	if startHeldAfter(snap, active) {
		// A promotion skips the stage's own gates, not the next stage's
		// start: it stays pending until the window opens or the freeze ends.
		return Action{}, false
	}
	p := pendingPromotion(policy)
	if p == nil {
		if fullPromotionInEffect(policy) && record.Promotion == nil {
			return promoteStage(snap, active, policy.Spec.Promotion), true
		}
		return Action{}, false
	}
	switch {
	case staleRequest(policy, p):
		last := policy.Status.LastPromotion
		return ignorePromotion(snap, fmt.Sprintf("it was requested at %s, not after the last request taken (requested at %s): "+
			"a request is taken once; request again to promote", p.RequestedAt.UTC().Format(time.RFC3339), last.RequestedAt.UTC().Format(time.RFC3339))), true
	case p.Revision != "" && p.Revision != policy.Status.UpdateRevision:
		return ignorePromotion(snap, fmt.Sprintf("the request was made for revision %s and the rollout runs revision %s",
			describeRevision(p.Revision), describeRevision(policy.Status.UpdateRevision))), true
	case !p.Full && p.Stage != stage.Name:
		return ignorePromotion(snap, fmt.Sprintf("stage %q is not the active stage (stage %q is)", p.Stage, stage.Name)), true
	}
	return promoteStage(snap, active, p), true
}

// staleRequest reports whether p, pending, was requested no later than the
// last request taken: an earlier request written back (a stale manifest
// applied again, an edit reverted) is not a new one, though its digest
// differs from the last.
func staleRequest(policy *v1alpha1.StagedBindingPolicy, p *v1alpha1.Promotion) bool {
	last := policy.Status.LastPromotion
	return last != nil && !last.RequestedAt.IsZero() && !p.RequestedAt.After(last.RequestedAt.Time)
}

// promoteStage promotes the active stage for request p.
func promoteStage(snap *Snapshot, active int, p *v1alpha1.Promotion) Action {
	policy := snap.Policy
	stage := policy.Spec.Stages[active]
	skipped := skippedGates(stage)
	gates := "none"
	if len(skipped) > 0 {
		gates = strings.Join(skipped, ", ")
	}
	message := fmt.Sprintf("promoted by %s (requested at %s): %s; skipped gates: %s",
		p.RequestedBy, p.RequestedAt.UTC().Format(time.RFC3339), p.Reason, gates)
	result := assessment{bindingObserved: true, placed: true, satisfied: true, reason: v1alpha1.ReasonPromoted, message: message}
	var action Action
	if active == len(policy.Spec.Stages)-1 {
		action = Action{Type: ActionUpdateStatus, Status: progressStatus(policy, active, result, snap.Now)}
		action.Events = []Event{{Type: corev1.EventTypeNormal, Reason: v1alpha1.ReasonRolloutCompleted,
			Note: fmt.Sprintf("final stage %q is done: %s", stage.Name, message)}}
	} else {
		action = advance(policy, active, result, snap.Now)
	}
	status := action.Status
	status.Stages[active].Promotion = &v1alpha1.StagePromotion{By: p.RequestedBy, Time: snap.Now, RequestedAt: p.RequestedAt,
		Reason: p.Reason, Full: p.Full, Skipped: skipped}
	if pendingPromotion(policy) != nil {
		status.LastPromotion = lastPromotion(policy, v1alpha1.PromotionApplied, fmt.Sprintf("stage %q %s", stage.Name, message), snap.Now)
	}
	note := fmt.Sprintf("stage %q %s", stage.Name, message)
	if p.Full {
		note += " (full: every later stage is promoted as it becomes active; approvals still gate)"
	}
	action.Events = append([]Event{{Type: corev1.EventTypeWarning, Reason: v1alpha1.EventReasonPromoted, Note: note}}, action.Events...)
	action.Why = fmt.Sprintf("stage %q is promoted by %s", stage.Name, p.RequestedBy)
	return action
}

// ignorePromotion takes the pending request without applying it, saying why.
func ignorePromotion(snap *Snapshot, why string) Action {
	policy := snap.Policy
	p := policy.Spec.Promotion
	note := fmt.Sprintf("promotion requested by %s at %s is ignored: %s", p.RequestedBy, p.RequestedAt.UTC().Format(time.RFC3339), why)
	status := policy.Status.DeepCopy()
	status.LastPromotion = lastPromotion(policy, v1alpha1.PromotionIgnored, note, snap.Now)
	return Action{Type: ActionUpdateStatus, Status: status,
		Events: []Event{{Type: corev1.EventTypeWarning, Reason: v1alpha1.EventReasonPromotionIgnored, Note: note}},
		Why:    note}
}

// lastPromotion is the record of spec.promotion taken now with outcome.
func lastPromotion(policy *v1alpha1.StagedBindingPolicy, outcome v1alpha1.PromotionOutcome, message string, now metav1.Time) *v1alpha1.LastPromotion {
	p := policy.Spec.Promotion
	return &v1alpha1.LastPromotion{Digest: PromotionDigest(p), RequestedBy: p.RequestedBy, RequestedAt: p.RequestedAt,
		Outcome: outcome, Time: now, Revision: policy.Status.UpdateRevision, RestartedAt: policy.Status.RestartedAt,
		Message: cutMessage(message, MaxConditionMessage)}
}

// skippedGates names the gates of stage that a promotion does not wait
// for (v1alpha1.StagePromotion.Skipped).
func skippedGates(stage v1alpha1.Stage) []string {
	var gates []string
	if stage.Condition != "" || stage.FailureCondition != "" {
		gates = append(gates, v1alpha1.GateCondition)
	}
	if stage.SoakDuration != nil && stage.SoakDuration.Duration > 0 {
		gates = append(gates, v1alpha1.GateSoak)
	}
	for _, a := range stage.Analysis {
		if !a.DryRun {
			gates = append(gates, v1alpha1.GateAnalysisPrefix+a.Name)
		}
	}
	if stage.Batched() {
		gates = append(gates, v1alpha1.GateBatches)
	}
	return gates
}

// startHeldAfter reports whether the stage after the active one may not
// start now, by its change windows (rule 6b) or a freeze (rule 6c).
func startHeldAfter(snap *Snapshot, active int) bool {
	if active >= len(snap.Policy.Spec.Stages)-1 {
		return false
	}
	window := holdsAdvance(snap, active, true)
	frozen := advanceFrozen(snap, active, true)
	return window || frozen
}
