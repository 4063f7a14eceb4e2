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

// RolloutFreeze stops the StagedBindingPolicies it selects from starting
// a stage, or a batch of a stage, while one of its ranges or schedules is
// on: a code freeze over the holidays, or every weekend. A stage already
// started finishes; an abort, a suspension and a resumption are never
// frozen. It lives in the stager's hosting cluster and is the platform
// team's: no policy author, who writes in one WDS, can create, change or
// lift a freeze (docs/proposals/freezes.md).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=freeze,categories=kubestellar
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.spec.reason`
// +kubebuilder:printcolumn:name="Spaces",type=string,JSONPath=`.spec.spaces`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="the freeze name must be at most 63 characters: the policies' Frozen condition names it"
type RolloutFreeze struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says when the freeze is on, and what it freezes.
	Spec RolloutFreezeSpec `json:"spec"`
}

// RolloutFreezeSpec says when a freeze is on and which policies it holds.
// It is on during any of its ranges and any of its schedules' windows.
//
// +kubebuilder:validation:XValidation:rule="(has(self.ranges) && size(self.ranges) > 0) || (has(self.schedules) && size(self.schedules) > 0)",message="a freeze needs a range or a schedule: without either it is never on"
type RolloutFreezeSpec struct {
	// Ranges are absolute periods, from start (included) to end (excluded).
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	Ranges []FreezeRange `json:"ranges,omitempty"`

	// Schedules are recurring periods: each starts when its cron schedule
	// fires and lasts its duration.
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	Schedules []FreezeSchedule `json:"schedules,omitempty"`

	// Spaces names the spaces frozen, as the stager names them in its logs
	// and metrics (wds1, kubeconfig#wds1, kcp#root:org:wds1), as a
	// RolloutWave's steps do. Empty freezes every space the stager serves:
	// a platform-wide freeze is the common case.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	// +listType=set
	// +optional
	Spaces []string `json:"spaces,omitempty"`

	// Policies names the StagedBindingPolicies frozen in those spaces.
	// Empty freezes every policy of the spaces.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	Policies []string `json:"policies,omitempty"`

	// Stages names the stages frozen, in every selected policy that has
	// them: a freeze of prod lets dev and test go on. Empty freezes every
	// stage.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	// +optional
	Stages []string `json:"stages,omitempty"`

	// Reason is shown to the policies' users in their Frozen condition
	// and Event: why the platform team froze rollouts.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Reason string `json:"reason,omitempty"`
}

// FreezeRange is an absolute period of a freeze.
//
// +kubebuilder:validation:XValidation:rule="timestamp(self.end) > timestamp(self.start)",message="end must be after start"
type FreezeRange struct {
	// Start is when the freeze starts.
	Start metav1.Time `json:"start"`
	// End is when it ends.
	End metav1.Time `json:"end"`
}

// FreezeSchedule is a recurring period of a freeze: from each time its
// cron schedule fires, in its time zone, for its duration.
type FreezeSchedule struct {
	// Schedule is a standard five-field cron schedule (minute hour
	// day-of-month month day-of-week), or @yearly, @monthly, @weekly,
	// @daily or @hourly, read by github.com/robfig/cron/v3. "@every" and a
	// time zone in the schedule (CRON_TZ=, TZ=) are refused: the time
	// zone is timeZone's.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[0-9A-Za-z*/,?-]+( [0-9A-Za-z*/,?-]+){4})$`
	Schedule string `json:"schedule"`

	// Duration is how long each period lasts from the time the schedule
	// fires, as elapsed time (a period over a change of daylight saving
	// time ends as many hours later). At least 1m and at most 8784h (366
	// days).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('8784h')",message="duration must be between 1m and 8784h (366 days)"
	Duration metav1.Duration `json:"duration"`

	// TimeZone is the IANA time zone the schedule is read in (Europe/Berlin,
	// America/New_York); default UTC. A zone the stager does not know
	// freezes what the freeze selects, and says so, until it is fixed.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$`
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
}

// RolloutFreezeList is a list of RolloutFreezes.
//
// +kubebuilder:object:root=true
type RolloutFreezeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RolloutFreeze `json:"items"`
}
