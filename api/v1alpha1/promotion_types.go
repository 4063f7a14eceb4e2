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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Promotion is a release manager's break-glass request (spec.promotion):
// the active stage, or with full every stage left, is treated as done
// without its condition, soak, analyses or batches. Approval gates are
// never skipped. The stager applies each request once (status.lastPromotion
// records the one it took); any change of it is a new request. The
// admission policy workload-stager-promotion requires requestedBy to be
// the requester's own user name and the requester to hold the verb
// promote on the policy (docs/security.md).
//
// +kubebuilder:validation:XValidation:rule="has(self.stage) != (has(self.full) && self.full)",message="set exactly one of stage and full"
// +kubebuilder:validation:XValidation:rule="bytes(self.reason).size() <= 256",message="reason must be at most 256 bytes"
type Promotion struct {
	// Stage names the stage to promote; it must be the active one when the
	// stager takes the request, or the request is ignored (PromotionIgnored).
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Stage string `json:"stage,omitempty"`

	// Full promotes the active stage and every later one as it becomes
	// active, until the rollout completes or another rollout starts (a new
	// revision, a restart).
	// +optional
	Full bool `json:"full,omitempty"`

	// Reason says why the gates are skipped; it is recorded and in the
	// Promoted Event.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Reason string `json:"reason"`

	// RequestedBy is the user name of who asks: the admission policy
	// requires it to be the requester's own.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	RequestedBy string `json:"requestedBy"`

	// RequestedAt is when the request was made.
	RequestedAt metav1.Time `json:"requestedAt"`

	// Revision, when set, is the status.updateRevision the request was
	// made for: a request for another revision is ignored
	// (PromotionIgnored), so that one made for an earlier rollout does not
	// fire on a later one. kubectl stager promote sets it.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Revision string `json:"revision,omitempty"`
}

// StagePromotion records a stage promoted past its gates
// (status.stages[].promotion).
type StagePromotion struct {
	// By is who asked (spec.promotion.requestedBy, which admission checked).
	// +kubebuilder:validation:MaxLength=256
	By string `json:"by"`

	// Time is when the stager promoted the stage.
	Time metav1.Time `json:"time"`

	// RequestedAt is when the promotion was asked for.
	RequestedAt metav1.Time `json:"requestedAt"`

	// Reason is the request's reason.
	// +kubebuilder:validation:MaxLength=256
	Reason string `json:"reason"`

	// Full is true when the request promoted every stage left.
	// +optional
	Full bool `json:"full,omitempty"`

	// Skipped names the gates the stage had that the promotion did not
	// wait for: Condition (its condition or failureCondition), Soak,
	// Analysis:<name> for each analysis, Batches (a stage placed in
	// batches, done where it stood).
	// +kubebuilder:validation:MaxItems=40
	// +optional
	Skipped []string `json:"skipped,omitempty"`
}

// PromotionOutcome says what the stager did with a promotion request.
type PromotionOutcome string

// What the stager does with a promotion request.
const (
	// PromotionApplied: the request promoted the active stage (and with
	// full goes on promoting the stages of the same rollout).
	PromotionApplied PromotionOutcome = "Applied"
	// PromotionIgnored: the request could not apply (its stage was not
	// the active one, the rollout was aborting or complete, it was made
	// for another revision) and was set aside, never to apply later.
	PromotionIgnored PromotionOutcome = "Ignored"
)

// LastPromotion is the promotion request the stager took last
// (status.lastPromotion): a spec.promotion of the same digest is never
// taken again.
type LastPromotion struct {
	// Digest identifies the request: a digest of spec.promotion.
	// +kubebuilder:validation:MaxLength=64
	Digest string `json:"digest"`

	// RequestedBy and RequestedAt are the request's.
	// +kubebuilder:validation:MaxLength=256
	RequestedBy string      `json:"requestedBy"`
	RequestedAt metav1.Time `json:"requestedAt"`

	// Outcome is Applied or Ignored.
	// +kubebuilder:validation:Enum=Applied;Ignored
	Outcome PromotionOutcome `json:"outcome"`

	// Time is when the stager took it.
	Time metav1.Time `json:"time"`

	// Revision and RestartedAt are status.updateRevision and
	// status.restartedAt when the request was taken: a full promotion goes
	// on while they stay.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Revision string `json:"revision,omitempty"`
	// +kubebuilder:validation:MaxLength=256
	// +optional
	RestartedAt string `json:"restartedAt,omitempty"`

	// Message says what was done, or why the request was ignored.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Message string `json:"message,omitempty"`
}

// Reasons of the Events of a promotion.
const (
	// EventReasonPromoted (Warning) marks a stage promoted past its gates.
	EventReasonPromoted = "Promoted"
	// EventReasonPromotionIgnored (Warning) marks a promotion request set
	// aside: it will not apply later.
	EventReasonPromotionIgnored = "PromotionIgnored"
	// ReasonPromoted is the Progressing reason of a stage promoted.
	ReasonPromoted = "Promoted"
)

// Names of the gates a promotion skips (StagePromotion.Skipped).
const (
	GateCondition = "Condition"
	GateSoak      = "Soak"
	GateBatches   = "Batches"
	// GateAnalysisPrefix comes before an analysis's name.
	GateAnalysisPrefix = "Analysis:"
)
