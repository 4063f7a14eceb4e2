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
	"time"

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
	// MaxHistoryStages is the most stages an entry records: the most
	// stages a policy's spec lists.
	MaxHistoryStages = 32
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

	// Stages are the stages the rollout did, each once, in the order they
	// were done, with when each started and was done: the durations a
	// completion forecast (internal/forecast) learns from. A stage done by
	// a promotion is not listed: it was not done by its gates.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Stages []StageHistory `json:"stages,omitempty"`
}

// StageHistory is when one stage of a rollout in status.history started
// and was done.
type StageHistory struct {
	// Name is the stage's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// StartTime is when the stage became active (the stage record's
	// startTime): after its approval, if it needed one.
	StartTime metav1.Time `json:"startTime"`

	// CompletionTime is when the stage was done (the stage record's
	// completionTime).
	CompletionTime metav1.Time `json:"completionTime"`

	// SuspendedDuration is how long the rollout was suspended while the
	// stage was active (the stage record's suspendedDuration).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +optional
	SuspendedDuration *metav1.Duration `json:"suspendedDuration,omitempty"`

	// Batches is how many batches the stage's clusters made, for a stage
	// placed in batches (maxConcurrency); 0 for one placed at once.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Batches int32 `json:"batches,omitempty"`
}

// Duration is how long the stage took, less the time the rollout was
// suspended while it was active; never below 0.
func (s *StageHistory) Duration() time.Duration {
	d := s.CompletionTime.Sub(s.StartTime.Time)
	if s.SuspendedDuration != nil {
		d -= s.SuspendedDuration.Duration
	}
	return max(d, 0)
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
