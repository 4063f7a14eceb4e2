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

// eventReasons are the reasons the stager gives its Events and
// conditions: every Reason* and EventReason* constant of this package
// (TestEventReasonsAreTheConstants checks that none is left out).
var eventReasons = func() map[string]bool {
	m := map[string]bool{}
	for _, r := range []string{
		EventReasonActiveStageReset,
		EventReasonApprovalRequested,
		EventReasonBatchStarted,
		EventReasonClusterFailed,
		EventReasonFrozen,
		EventReasonNotificationFailed,
		EventReasonPromoted,
		EventReasonPromotionIgnored,
		EventReasonRegressionCheckInconclusive,
		EventReasonRestarted,
		EventReasonResumed,
		EventReasonRevisionStarted,
		EventReasonRevisionSuperseded,
		EventReasonStageApproved,
		EventReasonStageRecovered,
		EventReasonStageStarted,
		EventReasonStageSucceeded,
		EventReasonSuspended,
		EventReasonUnfrozen,
		EventReasonWaitingForWave,
		EventReasonWaveReleased,
		EventReasonWaveRevisionGivenUp,
		ReasonAnalysisFailed,
		ReasonAnalysisInconclusive,
		ReasonAnalysisRunning,
		ReasonApprovedPlacementChanged,
		ReasonAwaitingApproval,
		ReasonBatchInProgress,
		ReasonBindingPolicyConflict,
		ReasonBindingPolicyInSync,
		ReasonBindingPolicyPending,
		ReasonClusterNotPlaceable,
		ReasonConditionNotMet,
		ReasonDeletionBlocked,
		ReasonEvaluationError,
		ReasonExpressionTooCostly,
		ReasonFailureBudgetExceeded,
		ReasonFailureConditionMet,
		ReasonFinalConditionNotMet,
		ReasonInvalidAnnotation,
		ReasonInvalidBatches,
		ReasonInvalidExpression,
		ReasonInvalidWindow,
		ReasonNoClustersSelected,
		ReasonNoObjectsSelected,
		ReasonNoStages,
		ReasonProgressDeadlineExceeded,
		ReasonPromoted,
		ReasonRolloutAborted,
		ReasonRolloutCompleted,
		ReasonRolloutHeld,
		ReasonSoaking,
		ReasonStageAdvanced,
		ReasonStageApprovalConflict,
		ReasonStageRegressed,
		ReasonStagesRemaining,
		ReasonSuspended,
		ReasonWaitingForBinding,
		ReasonWaitingForFinalizers,
		ReasonWaitingForStatus,
		ReasonWaitingForWindow,
	} {
		m[r] = true
	}
	return m
}()

// IsEventReason reports whether reason is one the stager gives its
// Events. An entry of status.pendingEvents with any other reason was not
// written by the stager: it is neither posted nor notified, and metrics
// name it Other, so that whoever may write the status cannot make the
// stager speak for them or grow a metric without bound.
func IsEventReason(reason string) bool { return eventReasons[reason] }
