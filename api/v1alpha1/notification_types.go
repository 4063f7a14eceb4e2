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

// MaxNotifications is the most subscriptions spec.notifications holds.
const MaxNotifications = 4

// Notification subscribes a notification destination of the stager's
// hosting cluster to some of the policy's rollout events. Each wanted
// event is posted to the destination at least once, across crashes,
// while status.pendingEvents holds it (docs/proposals/notifications.md).
type Notification struct {
	// Destination is the name of a notification destination of the hosting
	// cluster that lets the policy's space subscribe.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Destination string `json:"destination"`

	// Events are the rollout events posted to the destination.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	// +listType=set
	Events []NotificationEvent `json:"events"`
}

// NotificationEvent is a kind of rollout event a policy may subscribe to;
// each stands for the Event reasons of NotificationReasons.
// +kubebuilder:validation:Enum=StageStarted;StageSucceeded;AwaitingApproval;Approved;Stalled;Failed;Aborted;Completed;Promoted;WaveReleased
type NotificationEvent string

// The rollout events a policy may subscribe to.
const (
	NotifyStageStarted     NotificationEvent = "StageStarted"
	NotifyStageSucceeded   NotificationEvent = "StageSucceeded"
	NotifyAwaitingApproval NotificationEvent = "AwaitingApproval"
	NotifyApproved         NotificationEvent = "Approved"
	NotifyStalled          NotificationEvent = "Stalled"
	NotifyFailed           NotificationEvent = "Failed"
	NotifyAborted          NotificationEvent = "Aborted"
	NotifyCompleted        NotificationEvent = "Completed"
	NotifyPromoted         NotificationEvent = "Promoted"
	NotifyWaveReleased     NotificationEvent = "WaveReleased"
)

// NotificationReasons maps each rollout event to the reasons of the Events
// the stager records for it: a subscription wants a pending Event whose
// reason is listed under one of its events.
var NotificationReasons = map[NotificationEvent][]string{
	NotifyStageStarted:     {EventReasonStageStarted},
	NotifyStageSucceeded:   {EventReasonStageSucceeded},
	NotifyAwaitingApproval: {EventReasonApprovalRequested},
	NotifyApproved:         {EventReasonStageApproved},
	NotifyStalled:          {ReasonProgressDeadlineExceeded, ReasonFailureBudgetExceeded},
	NotifyFailed:           {EventReasonClusterFailed, ReasonAnalysisFailed, ReasonFailureConditionMet, ReasonStageRegressed},
	NotifyAborted:          {ReasonRolloutAborted},
	NotifyCompleted:        {ReasonRolloutCompleted},
	NotifyPromoted:         {EventReasonPromoted},
	NotifyWaveReleased:     {EventReasonWaveReleased},
}

// NotificationEventOf is the rollout event an Event's reason stands for,
// or "" when no subscription can want it.
func NotificationEventOf(reason string) NotificationEvent {
	for event, reasons := range NotificationReasons {
		for _, r := range reasons {
			if r == reason {
				return event
			}
		}
	}
	return ""
}

// Wants reports whether the subscription wants Events of that reason.
func (n *Notification) Wants(reason string) bool {
	event := NotificationEventOf(reason)
	if event == "" {
		return false
	}
	for _, e := range n.Events {
		if e == event {
			return true
		}
	}
	return false
}
