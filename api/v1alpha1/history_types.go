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
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bounds on status.history (docs/proposals/history.md).
const (
	// MaxHistory is the most entries status.history keeps: the oldest goes
	// when a newer rollout starts.
	MaxHistory = 10
	// MaxHistoryUsers is the most user names an entry's approvedBy or
	// promotedBy lists.
	MaxHistoryUsers = 32
	// MaxHistoryUser is the most bytes of one user name in an entry, the
	// bound of a StageApproval's status.approvedBy.
	MaxHistoryUser = 256
)

// RolloutOutcome is how one rollout of a revision ended, or that it runs.
// +kubebuilder:validation:Enum=Progressing;Completed;Aborted;Superseded;Promoted
type RolloutOutcome string

// The outcomes of a rollout in status.history.
const (
	// OutcomeProgressing: the rollout runs; only the newest entry, that of
	// status.updateRevision, can be Progressing.
	OutcomeProgressing RolloutOutcome = "Progressing"
	// OutcomeCompleted: the final stage was done on the revision, which
	// became status.currentRevision.
	OutcomeCompleted RolloutOutcome = "Completed"
	// OutcomeAborted: spec.abort, or a failed stage's onFailure Abort,
	// withdrew the revision.
	OutcomeAborted RolloutOutcome = "Aborted"
	// OutcomeSuperseded: a newer revision, or a restart, started before the
	// rollout completed.
	OutcomeSuperseded RolloutOutcome = "Superseded"
	// OutcomePromoted: the rollout completed with a stage promoted (break-glass
	// promote) rather than done on its condition.
	OutcomePromoted RolloutOutcome = "Promoted"
)

// RevisionHistory is the record of one rollout of a revision, in
// status.history.
type RevisionHistory struct {
	// Revision is the revision rolled out (spec.revision.name), or "-" for
	// the placement of a policy that had revisions and no longer names one.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Revision string `json:"revision"`

	// Outcome is Progressing while the rollout runs, then how it ended.
	Outcome RolloutOutcome `json:"outcome"`

	// StartTime is when the rollout started (the status write that started
	// it).
	StartTime metav1.Time `json:"startTime"`

	// EndTime is when the rollout ended; unset while it is Progressing.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`

	// ApprovedBy are the users who approved a stage of the rollout (the
	// stage records' approvedBy), in the order the stages were approved,
	// each once.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=256
	// +listType=atomic
	// +optional
	ApprovedBy []string `json:"approvedBy,omitempty"`

	// PromotedBy are the users who promoted a stage of the rollout
	// (break-glass promote), each once.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=256
	// +listType=atomic
	// +optional
	PromotedBy []string `json:"promotedBy,omitempty"`
}

// Ended reports whether the rollout of the entry has ended.
func (h *RevisionHistory) Ended() bool {
	return h.Outcome != OutcomeProgressing
}

// LastCompleted returns the newest entry of history whose outcome is
// Completed (or Promoted: it completed too) and whose revision is none of
// except, or nil.
func LastCompleted(history []RevisionHistory, except ...string) *RevisionHistory {
	for i := len(history) - 1; i >= 0; i-- {
		h := &history[i]
		if (h.Outcome == OutcomeCompleted || h.Outcome == OutcomePromoted) && !slices.Contains(except, h.Revision) {
			return h
		}
	}
	return nil
}
