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
	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/freeze"
	"github.com/kubestellar/workload-stager/internal/wave"
)

// Snapshot is what Plan knows about one StagedBindingPolicy: the policy and
// the objects around its active stage, read at one moment.
type Snapshot struct {
	// Policy is the StagedBindingPolicy.
	Policy *v1alpha1.StagedBindingPolicy

	// BindingPolicies are the BindingPolicies labelled as generated for
	// Policy and, for an active stage placed in batches, those named as the
	// BindingPolicy of one of its clusters (whatever their labels). Plan
	// only acts on those that Policy owns.
	BindingPolicies []ksv1alpha1.BindingPolicy

	// Approvals are the StageApprovals labelled as the policy's. Plan only
	// acts on those that Policy owns.
	Approvals []v1alpha1.StageApproval

	// ActiveBindingPolicy is the BindingPolicy with the active stage's name,
	// whoever made it, or nil when there is none.
	ActiveBindingPolicy *ksv1alpha1.BindingPolicy

	// NextBindingPolicy is the BindingPolicy with the name of the stage
	// after the active one, whoever made it, or nil when there is none (or
	// the active stage is the last). The active stage hands over to the next
	// by creating it (see handover).
	NextBindingPolicy *ksv1alpha1.BindingPolicy

	// Binding is KubeStellar's Binding named after the active stage's
	// BindingPolicy, or nil when there is none.
	Binding *ksv1alpha1.Binding

	// Bindings are KubeStellar's Bindings of the policy's BindingPolicies
	// (BindingPolicies), read only where Reads says Plan needs them:
	// a revision's placement goes only once the one that replaces it is
	// resolved.
	Bindings []ksv1alpha1.Binding

	// AbortStatuses are the CombinedStatuses of the policy's BindingPolicies
	// other than the active stage's, read only while the rollout is being
	// aborted (Aborting):
	// abort takes a stage's newer revision away once the current one is
	// healthy there.
	AbortStatuses []ksv1alpha1.CombinedStatus

	// CombinedStatuses are the CombinedStatuses that KubeStellar labelled with
	// the active stage's BindingPolicy name.
	CombinedStatuses []ksv1alpha1.CombinedStatus

	// ClusterStatuses are, for an active stage placed in batches, the
	// CombinedStatuses of the BindingPolicies that place its clusters one
	// by one (PlacesActiveCluster).
	ClusterStatuses []ksv1alpha1.CombinedStatus

	// WatchedBindings and WatchedStatuses are the Bindings and the
	// CombinedStatuses of the BindingPolicies of the done stages whose
	// regression check is due (RegressionReads), read only then.
	WatchedBindings []ksv1alpha1.Binding
	WatchedStatuses []ksv1alpha1.CombinedStatus

	// Measurements are the answers to the queries of the analyses that
	// DueAnalyses said were due, taken just before the snapshot.
	Measurements []Measurement

	// WatchedMeasurements are the answers to the queries of the analyses
	// of the done stages that a plan of this snapshot checked for
	// regressions (RegressionAnalyses), one per analysis, taken after
	// that plan; Plan judges them for the checks only (rule 15b).
	WatchedMeasurements []Measurement

	// Wave is the decision of the RolloutWaves of the hosting cluster on
	// the revision the spec names (wave.GateAll, with the reconciler's
	// clock), or nil when no wave orders the policy. Plan consults it only
	// where a revision would start (rule 6a, waveGate).
	Wave *wave.Decision

	// Freeze is the decision of the RolloutFreezes of the hosting cluster
	// on the policy at Now (freeze.Decide, with the reconciler's clock),
	// or nil when no freeze selects it. Plan consults it only where a
	// stage or a batch would start (rule 6c, freeze.go).
	Freeze *freeze.Decision

	// Now is the time of the snapshot, used for the times recorded in status.
	Now metav1.Time

	// Announced are the sequence numbers of the policy's pending Events
	// (status.pendingEvents) that the API server took, or refused as
	// such: Plan clears them (rule 20, announce). Nil: none yet.
	Announced map[int64]bool

	// Delivered are the sequence numbers of the policy's pending Events
	// whose notifications are settled: delivered to, or given up by, every
	// destination of spec.notifications that wants them (rule 20a). The
	// value is "" when each delivered, else why some were given up. Nil:
	// none settled.
	Delivered map[int64]string

	// key is the HandoverKey Plan was given (WithHandoverKey), set by Plan
	// on its copy of the snapshot.
	key HandoverKey

	// waveHolds is whether the wave holds the revision the policy would
	// start (holdsRevision), set by Plan on its copy of the snapshot: the
	// one answer for every rule of the run.
	waveHolds bool

	// startFrozen is whether a freeze holds the first stage where rules 7
	// to 9 would start it, and frozen what rule 6c held in this run, both
	// set by Plan on its copy of the snapshot (freeze.go).
	startFrozen bool
	frozen      *frozenMark

	// windows are the stages' change windows at Now (rule 6b), set by
	// Plan on its copy of the snapshot, with the stage a rule held.
	windows *windowRun
}

// ActiveStage returns the index of the stage the policy is in, whether the
// rollout has started at all, and whether the recorded active stage no longer
// exists in the spec (in which case the rollout restarts from the first stage).
func ActiveStage(policy *v1alpha1.StagedBindingPolicy) (index int, started, reset bool) {
	if policy.Status.ActiveStage == "" {
		return 0, false, false
	}
	if i := stageIndex(policy, policy.Status.ActiveStage); i >= 0 {
		return i, true, false
	}
	return 0, false, true
}

// OwnedBy reports whether obj has an owner reference to owner.
func OwnedBy(obj, owner metav1.Object) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == owner.GetUID() {
			return true
		}
	}
	return false
}
