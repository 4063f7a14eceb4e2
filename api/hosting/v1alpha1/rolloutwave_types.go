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

// RolloutWave orders the rollouts of a revision across whole spaces: the
// StagedBindingPolicies it names, in the spaces of a later step, start a
// revision only once that revision is Completed, by the policy of the same
// name, in every space of the earlier steps, and the step's soak has
// passed. It lives in the stager's hosting cluster and is the platform
// team's: no policy author, who writes in one WDS, can create, change or
// speed up a wave (docs/proposals/waves.md).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=wave,categories=kubestellar
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Steps",type=string,JSONPath=`.spec.steps[*].name`
// +kubebuilder:printcolumn:name="Policies",type=string,JSONPath=`.spec.policies`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="the wave name must be at most 63 characters: it is a label value of the stager_wave_step metric and of kubectl stager's output"
type RolloutWave struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which policies are ordered, and through which spaces.
	Spec RolloutWaveSpec `json:"spec"`

	// Status reports, per space of the wave, where its ordered policies
	// are. The replica serving a space writes that space's entry, and
	// only that one (server-side apply, one field manager per space).
	// +optional
	Status RolloutWaveStatus `json:"status,omitempty"`
}

// RolloutWaveSpec orders the rollouts of some policies across spaces.
//
// +kubebuilder:validation:XValidation:rule="self.steps.all(s, s.spaces.all(n, self.steps.exists_one(t, n in t.spaces)))",message="a space may be in one step only: its policies cannot both wait for a step and be waited for by it"
// +kubebuilder:validation:XValidation:rule="self.steps.map(s, s.spaces.size()).sum() <= 64",message="a wave holds at most 64 spaces in all its steps"
type RolloutWaveSpec struct {
	// Policies are the names of the StagedBindingPolicies the wave
	// orders. A policy of one of these names, in a space of a step, waits
	// for the policies of the same name in the spaces of the earlier
	// steps; other policies are not ordered. Names, not a label: a label
	// would let a policy author add a policy to the wave, and so read the
	// phase and revision of the same-named policies of earlier spaces.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +listType=set
	Policies []string `json:"policies"`

	// Steps are taken one after the other, in this order: a space of step
	// n starts a revision once every space of steps 1..n-1 has completed
	// it. The spaces of one step do not wait for each other.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	Steps []WaveStep `json:"steps"`

	// ReportStaleAfter is how long a space's report may go unrenewed
	// before the space counts as down: its later steps are then held, and
	// say so, until it reports again. Reports are renewed every third of
	// it while the space is served. Default 2m; at least 30s.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('30s')",message="reportStaleAfter must be at least 30s: reports are renewed every third of it"
	// +optional
	ReportStaleAfter *metav1.Duration `json:"reportStaleAfter,omitempty"`
}

// DefaultReportStaleAfter is a wave's spec.reportStaleAfter when unset.
const DefaultReportStaleAfter = 2 * time.Minute

// WaveStep is one step of a wave: spaces whose ordered policies roll a
// revision out together, after those of the earlier steps.
//
// +kubebuilder:validation:XValidation:rule="!has(self.soakDuration) || duration(self.soakDuration) >= duration('0s')",message="soakDuration may not be negative"
type WaveStep struct {
	// Name names the step in status, messages and metrics.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Spaces names the step's spaces as the stager names them in its logs
	// and metrics (wds1, kubeconfig#wds1, kcp#root:org:wds1), as a
	// MetricProvider's spec.spaces does. Names, not a selector: a space
	// joining or leaving a step changes who waits for whom, so it is the
	// platform team's explicit edit; a space named here that the stager
	// does not serve holds the later steps, and says so.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	// +listType=set
	Spaces []string `json:"spaces"`

	// SoakDuration is how long this step waits, after the last space of
	// the earlier steps completed the revision, before its policies start
	// it. Default: none. It has no effect on the first step.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +optional
	SoakDuration *metav1.Duration `json:"soakDuration,omitempty"`
}

// RolloutWaveStatus is what the stager's replicas report of a wave.
type RolloutWaveStatus struct {
	// Spaces has one report per space of the wave that a replica serves
	// or served. Each is written by the replica serving that space, under
	// the space's own field manager, so that replicas never overwrite each
	// other's reports, and one that takes over a space takes over its report.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=space
	// +optional
	Spaces []WaveSpaceReport `json:"spaces,omitempty"`
}

// WaveSpaceReport is where the ordered policies of one space are.
type WaveSpaceReport struct {
	// Space is the space's name, as in the spec's steps.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Space string `json:"space"`

	// Engaged is false when the replica that served the space let it go
	// (its Secret or ControlPlane gone, its API server unreachable): its
	// later steps are held at once, without waiting for the report to go stale.
	Engaged bool `json:"engaged"`

	// HeartbeatTime is when the serving replica last renewed the report;
	// one older than the wave's reportStaleAfter counts as a space down.
	HeartbeatTime metav1.Time `json:"heartbeatTime"`

	// Policies has one entry per ordered policy that exists in the space.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +optional
	Policies []WavePolicyReport `json:"policies,omitempty"`
}

// WavePolicyReport is where one ordered policy of one space is: its phase
// and revision names, and nothing else of the space.
type WavePolicyReport struct {
	// Name is the policy's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// Phase is the policy's status.phase.
	// +kubebuilder:validation:Enum=Pending;Progressing;Completed;Blocked;Suspended;Stalled;AwaitingApproval;Aborted
	// +optional
	Phase string `json:"phase,omitempty"`

	// Revision is the policy's status.updateRevision: the revision being
	// rolled out, or last rolled out.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Revision string `json:"revision,omitempty"`

	// CurrentRevision is the policy's status.currentRevision: the revision
	// of its last completed rollout. A revision is completed in the space
	// when it is this one.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`

	// CompletedTime is when the policy completed CurrentRevision: the
	// lastTransitionTime of its Completed condition. The soak of the next
	// step counts from the latest of these.
	// +optional
	CompletedTime *metav1.Time `json:"completedTime,omitempty"`

	// FailedRevisions are the revisions the policy gave up in this space
	// (Aborted, or Stalled past a deadline or over a failure budget): no
	// later step starts them, even once this space completes them on a
	// second try, since what completed is not what failed. A new revision
	// name is the way on. The oldest beyond 16 are forgotten.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	// +optional
	FailedRevisions []string `json:"failedRevisions,omitempty"`
}

// StaleAfter returns spec.reportStaleAfter, or DefaultReportStaleAfter.
func (s *RolloutWaveSpec) StaleAfter() time.Duration {
	if s.ReportStaleAfter == nil {
		return DefaultReportStaleAfter
	}
	return s.ReportStaleAfter.Duration
}

// RolloutWaveList is a list of RolloutWaves.
//
// +kubebuilder:object:root=true
type RolloutWaveList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the waves.
	Items []RolloutWave `json:"items"`
}
