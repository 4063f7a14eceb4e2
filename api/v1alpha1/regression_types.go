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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RegressionWatch keeps judging a stage once it is done, on a slow
// interval, over the CombinedStatuses of the placement it keeps
// (docs/proposals/regression.md). Only a stage that keeps its placement
// once done can regress: every stage under placement Accumulate, and the
// final stage of a completed rollout.
// +kubebuilder:validation:XValidation:rule="!has(self.interval) || duration(self.interval) >= duration('1m') && duration(self.interval) <= duration('24h')",message="regressionWatch.interval must be between 1m and 24h"
type RegressionWatch struct {
	// Interval is the time between two checks of the done stage, the
	// first one interval after the stage was done. Default 5m; between 1m
	// and 24h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Judge is what a check judges. Condition (the default): the
	// stage regressed when its condition no longer holds for a filtered
	// object, or its failureCondition holds for one, as while it was
	// active. FailureCondition: only when its failureCondition holds for
	// one (which the stage must have).
	// +kubebuilder:validation:Enum=Condition;FailureCondition
	// +optional
	Judge RegressionCondition `json:"judge,omitempty"`

	// Analyses, when true, runs the stage's analyses at each check too:
	// one measurement of each (not dryRun) analysis per check, not its
	// count or interval, judged by its successCondition and
	// failureCondition. A Failed measurement is a regression; an
	// Inconclusive one (or none, the query over the space's bound) makes
	// the check inconclusive. The measurements are not recorded in the
	// stage's analyses; a regression's message names the analysis.
	// +optional
	Analyses bool `json:"analyses,omitempty"`

	// OnRegression is what a regression does to a rollout still in
	// flight (a later stage not done yet). None (the default) only
	// reports it. Abort aborts the rollout as a failed stage with
	// onFailure Abort does (status.failure says StageRegressed): back to
	// status.currentRevision, or, without one, held where it is, as
	// spec.abort holds it. A completed rollout is only reported on.
	// +kubebuilder:validation:Enum=None;Abort
	// +optional
	OnRegression RegressionAction `json:"onRegression,omitempty"`
}

// RegressionCondition is what a regression check judges.
type RegressionCondition string

// The regression conditions.
const (
	// RegressionOnCondition: the stage's condition no longer holds, or its
	// failureCondition holds.
	RegressionOnCondition RegressionCondition = "Condition"
	// RegressionOnFailureCondition: the stage's failureCondition holds.
	RegressionOnFailureCondition RegressionCondition = "FailureCondition"
)

// RegressionAction is what a regression does to a rollout in flight.
type RegressionAction string

// The regression actions.
const (
	// RegressionNone only reports the regression.
	RegressionNone RegressionAction = "None"
	// RegressionAbort aborts a rollout in flight.
	RegressionAbort RegressionAction = "Abort"
)

// DefaultRegressionInterval is the time between two checks of a
// regression watch that sets no interval.
const DefaultRegressionInterval = 5 * time.Minute

// MinRegressionInterval is the shortest interval of a regression watch;
// Plan never checks a stage more often, whatever the object says.
const MinRegressionInterval = time.Minute

// CheckInterval returns the time between two checks: Interval, or
// DefaultRegressionInterval; never less than MinRegressionInterval.
func (w *RegressionWatch) CheckInterval() time.Duration {
	if w == nil || w.Interval == nil {
		return DefaultRegressionInterval
	}
	return max(w.Interval.Duration, MinRegressionInterval)
}

// RunsAnalyses reports whether a check runs the stage's analyses too.
func (w *RegressionWatch) RunsAnalyses() bool {
	return w != nil && w.Analyses
}

// OnFailureConditionOnly reports whether a check judges the stage's
// failureCondition alone.
func (w *RegressionWatch) OnFailureConditionOnly() bool {
	return w != nil && w.Judge == RegressionOnFailureCondition
}

// StageRegression records that a done stage was found unhealthy.
type StageRegression struct {
	// Time is when the check found the stage unhealthy, first.
	Time metav1.Time `json:"time"`
	// Message says what failed.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Message string `json:"message,omitempty"`
}

// ConditionStageRegressed is True while a done stage's regression watch
// finds it unhealthy; its message names the stages and what failed. It is
// removed once they recover, or the rollout leaves them.
const ConditionStageRegressed = "StageRegressed"

// Reasons of the regression watch's condition, failure and Events.
const (
	// ReasonStageRegressed means a done stage's regression watch found it
	// unhealthy; as status.failure's reason, the regression aborted the
	// rollout (onRegression Abort).
	ReasonStageRegressed = "StageRegressed"
	// EventReasonStageRecovered marks a regressed stage found healthy again.
	EventReasonStageRecovered = "StageRecovered"
	// EventReasonRegressionCheckInconclusive (Warning) marks a check that
	// gave no verdict: an evaluation failed or ran out of the space's
	// budget, or KubeStellar has not reported on an object.
	EventReasonRegressionCheckInconclusive = "RegressionCheckInconclusive"
)
