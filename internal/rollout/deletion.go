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
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// This file holds Plan's rule 1: a policy being deleted lets go of what it
// placed, then of its finalizer.

// planDeletion removes what the policy placed, then lets it go. While
// BindingPolicies it deleted are held by finalizers (KubeStellar's, which its
// controller-manager removes), the Deleting condition names them and the
// time the deletion began; past the threshold it says DeletionBlocked, once
// with a Warning Event.
//
// Plan's rule 1: a policy being deleted loses its BindingPolicies, then its
// StageApprovals, then its finalizer, saying in its Deleting condition what
// holds them meanwhile, and past the deletion warning threshold that the
// deletion is blocked.
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
