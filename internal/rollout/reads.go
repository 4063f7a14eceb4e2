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
)

// ReadSet is what the reconciler reads around a policy, besides the
// policy's own BindingPolicies and StageApprovals, for the Snapshot Plan
// decides on: Plan needs nothing else, and each read it does not need
// costs every run of every policy of the space.
type ReadSet struct {
	// Bindings says to read the Binding of each of the policy's
	// BindingPolicies (Snapshot.Bindings).
	Bindings bool
	// AbortStatuses says to read, with them, the CombinedStatuses of each
	// (Snapshot.AbortStatuses).
	AbortStatuses bool
	// Active names the BindingPolicy read as Snapshot.ActiveBindingPolicy,
	// whose Binding and CombinedStatuses are read too: the active stage's,
	// or its census for a stage placed in batches. It is "" when the
	// snapshot ends at the policy's own objects (the rollout has not
	// started, or the policy is being deleted); the fields below are then
	// empty.
	Active string
	// Next names the BindingPolicy read as Snapshot.NextBindingPolicy: the
	// stage after the active one's, "" for the last stage.
	Next string
	// ClusterStatuses names the BindingPolicies, among those given, whose
	// CombinedStatuses are read (Snapshot.ClusterStatuses): those that
	// place one cluster of the active stage (PlacesActiveCluster).
	ClusterStatuses []string
	// Analyses are the analyses whose queries are due
	// (Snapshot.Measurements, DueAnalyses).
	Analyses []v1alpha1.Analysis
	// Watched names the BindingPolicies of the done stages whose
	// regression check is due, whose Bindings and CombinedStatuses are
	// read (Snapshot.WatchedBindings and WatchedStatuses, RegressionReads).
	Watched []string
}

// Reads says what the reconciler reads for a snapshot of policy at now,
// bps being the policy's BindingPolicies as read.
func Reads(policy *v1alpha1.StagedBindingPolicy, bps []ksv1alpha1.BindingPolicy, now metav1.Time) ReadSet {
	var reads ReadSet
	if policy.DeletionTimestamp != nil {
		return reads // deletion only deletes what the policy owns
	}
	if ReadsBindings(policy, bps) {
		reads.Bindings = true
		reads.AbortStatuses = Aborting(policy)
	}
	active, started, _ := ActiveStage(policy)
	if !started {
		return reads
	}
	reads.Active = v1alpha1.ActivePlacement(policy.Name, policy.Spec.Stages[active], policy.Status.UpdateRevision).String()
	if active+1 < len(policy.Spec.Stages) {
		reads.Next = v1alpha1.StagePlacement(policy.Name, policy.Spec.Stages[active+1].Name).At(policy.Status.UpdateRevision).String()
	}
	for i := range bps {
		if PlacesActiveCluster(policy, &bps[i]) {
			reads.ClusterStatuses = append(reads.ClusterStatuses, bps[i].Name)
		}
	}
	reads.Analyses = DueAnalyses(policy, now)
	reads.Watched = RegressionReads(policy, bps, now)
	return reads
}
