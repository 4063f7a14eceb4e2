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

package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StageApproval asks for, and records, the approval of one stage of a
// StagedBindingPolicy's rollout. The stager creates one for every stage
// whose approval is Required, named like the stage's BindingPolicy, and owns
// its spec. An approver approves through the status subresource alone, so
// approving needs no write access to the policy: it sets the Approved
// condition to True with observedGeneration equal to the StageApproval's
// metadata.generation, and status.approvedBy to its own user name.
//
// An approval counts only for the rollout it was given for: when the
// policy's spec (other than spec.suspend) or its restartedAt annotation
// changes, the stager updates spec.specDigest, which moves
// metadata.generation on, and an Approved condition observed at an older
// generation no longer counts.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=sbpa,categories=kubestellar
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Policy",type=string,JSONPath=`.spec.policy`
// +kubebuilder:printcolumn:name="Stage",type=string,JSONPath=`.spec.stage`
// +kubebuilder:printcolumn:name="Approved",type=string,JSONPath=`.status.conditions[?(@.type=="Approved")].status`
// +kubebuilder:printcolumn:name="Approved By",type=string,JSONPath=`.status.approvedBy`
// +kubebuilder:printcolumn:name="Spec Digest",type=string,JSONPath=`.spec.specDigest`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type StageApproval struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which stage of which rollout the approval is for; the stager writes it.
	Spec StageApprovalSpec `json:"spec"`

	// Status holds the approval; the approver writes it.
	// +optional
	Status StageApprovalStatus `json:"status,omitempty"`
}

// StageApprovalSpec names the stage and the rollout an approval is for.
type StageApprovalSpec struct {
	// Policy is the name of the StagedBindingPolicy.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="policy is immutable"
	Policy string `json:"policy"`

	// Stage is the name of the stage.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="stage is immutable"
	Stage string `json:"stage"`

	// PolicyGeneration is the policy's metadata.generation when the stager
	// asked for this approval.
	// +optional
	PolicyGeneration int64 `json:"policyGeneration,omitempty"`

	// SpecDigest identifies the rollout the approval is for: a digest of the
	// policy's spec (but spec.suspend) and its restartedAt annotation. It is
	// not the policy's spec.revision, which names a version of the workload.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	SpecDigest string `json:"specDigest,omitempty"`
}

// StageApprovalStatus is the approver's answer.
type StageApprovalStatus struct {
	// Conditions holds Approved: True approves the stage, when its
	// observedGeneration is the StageApproval's metadata.generation.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ApprovedBy is who approved. Where the workload-stager-approvals
	// ValidatingAdmissionPolicy is installed (config/approval, the space
	// chart), the API server accepts only the approver's own user name.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	ApprovedBy string `json:"approvedBy,omitempty"`

	// ApprovedSpecDigest is the spec.specDigest the approver approved. An
	// Approved condition counts only while it is empty or spec.specDigest;
	// the admission policy accepts only the current spec.specDigest here.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	ApprovedSpecDigest string `json:"approvedSpecDigest,omitempty"`
}

// ConditionApproved is the condition type an approver sets on a StageApproval.
const ConditionApproved = "Approved"

// Approved returns the Approved condition when it approves the current
// generation of the StageApproval, and nil otherwise.
func (a *StageApproval) Approved() *metav1.Condition {
	c := meta.FindStatusCondition(a.Status.Conditions, ConditionApproved)
	if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != a.Generation ||
		a.Status.ApprovedSpecDigest != "" && a.Status.ApprovedSpecDigest != a.Spec.SpecDigest {
		return nil
	}
	return c
}

// SetApproved approves the current generation and revision of the
// StageApproval as by, at the given time: the Approved condition True,
// observed at its metadata.generation, status.approvedBy and
// status.approvedSpecDigest. It only changes the object; write it through the
// status subresource, conditional on its resourceVersion, so that it
// approves nothing newer than what was read.
func (a *StageApproval) SetApproved(by string, at metav1.Time) {
	meta.SetStatusCondition(&a.Status.Conditions, metav1.Condition{Type: ConditionApproved, Status: metav1.ConditionTrue,
		Reason: "Approved", Message: "approved by " + by, ObservedGeneration: a.Generation, LastTransitionTime: at})
	a.Status.ApprovedBy = by
	a.Status.ApprovedSpecDigest = a.Spec.SpecDigest
}

// StageApprovalList is a list of StageApprovals.
//
// +kubebuilder:object:root=true
type StageApprovalList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the approvals.
	Items []StageApproval `json:"items"`
}
