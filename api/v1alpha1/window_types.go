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

// Bounds of a stage's change windows (docs/proposals/windows.md).
const (
	// MaxWindows is the most change windows a stage may have.
	MaxWindows = 8
	// MaxWindowSchedule is the most bytes of a window's schedule.
	MaxWindowSchedule = 128
	// MaxWindowTimeZone is the most bytes of a window's time zone.
	MaxWindowTimeZone = 64
)

// ChangeWindow is a recurring time in which a stage may start (and a
// stage placed in batches may start its next batch): it opens at each
// time its cron schedule fires, in its time zone, and stays open for its
// duration.
type ChangeWindow struct {
	// Schedule is when the window opens: a standard cron schedule of five
	// fields (minute hour day-of-month month day-of-week), or a descriptor
	// (@yearly, @monthly, @weekly, @daily, @hourly). No seconds field, no
	// @every, no TZ= prefix (timeZone says the zone). A schedule the
	// stager cannot parse, or that never fires in the next five years,
	// blocks the policy (InvalidWindow).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Schedule string `json:"schedule"`

	// Duration is how long the window stays open each time it opens:
	// between 1m and 168h (a week, the longest gap of a weekly schedule).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('168h')",message="duration must be between 1m and 168h"
	Duration metav1.Duration `json:"duration"`

	// TimeZone is the IANA name of the zone the schedule is read in, such
	// as Europe/Berlin; UTC when unset. The stager carries its own copy of
	// the time zone database. A name it does not know blocks the policy
	// (InvalidWindow).
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+)*$`
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
}

// WindowStatus says which stage waits for its change window, and when
// that window opens next.
type WindowStatus struct {
	// Stage is the name of the stage that waits to start (or to start its
	// next batch).
	// +kubebuilder:validation:MaxLength=63
	Stage string `json:"stage"`

	// OpensAt is when the stage's next window opens.
	OpensAt metav1.Time `json:"opensAt"`

	// TimeZone is the time zone of the window that opens next, in which
	// the stager shows OpensAt.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
}

const (
	// ConditionWaitingForWindow is True while a stage that would start
	// (or start its next batch) waits because none of its change windows
	// is open; the message names the stage, when its next window opens in
	// the window's time zone, and how long that was from when the
	// condition was written. It is removed once the stage starts.
	ConditionWaitingForWindow = "WaitingForWindow"

	// ReasonWaitingForWindow is the reason of the WaitingForWindow
	// condition, and of its Event, emitted once per opening waited for.
	ReasonWaitingForWindow = "WaitingForWindow"

	// ReasonInvalidWindow means a stage's change window cannot be used: its
	// schedule does not parse or never fires, or its time zone is unknown.
	// The rollout is blocked, with a Warning Event, until the spec is fixed.
	ReasonInvalidWindow = "InvalidWindow"
)
