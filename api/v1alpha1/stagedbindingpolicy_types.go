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

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Well-known names the controller puts on the objects it manages.
const (
	// PolicyLabel is set on every BindingPolicy generated for a StagedBindingPolicy
	// and holds the StagedBindingPolicy's name.
	PolicyLabel = "community.kubestellar.io/staged-binding-policy"

	// StageLabel is set on every generated BindingPolicy and holds the stage's name.
	StageLabel = "community.kubestellar.io/stage"

	// CleanupFinalizer makes the controller delete the generated BindingPolicies
	// before a StagedBindingPolicy goes away, even where no garbage collector runs.
	CleanupFinalizer = "community.kubestellar.io/cleanup-binding-policies"

	// RestartedAtAnnotation, set or changed on a StagedBindingPolicy (to a
	// timestamp, say), restarts its rollout from the first stage, once per
	// new value; status.restartedAt records the value handled.
	RestartedAtAnnotation = "community.kubestellar.io/restartedAt"
	// MaxRestartedAtLength is the longest value of RestartedAtAnnotation the
	// status can record.
	MaxRestartedAtLength = 256

	// HandedOverFromAnnotation is set on the BindingPolicy that starts a
	// stage when the stage before it is done, and holds that stage's name and
	// start time and the stager's seal of them ("<stage>@<RFC 3339
	// time>/<seal>"), which only the process that wrote it accepts. The BindingPolicy is created
	// before the status records the advance, so that the next stage is placed
	// one write sooner; until the status has caught up, the annotation is
	// the record that the stage was done.
	HandedOverFromAnnotation = "community.kubestellar.io/handed-over-from"

	// PlacedAnnotation is set on the BindingPolicy that places one cluster
	// of a stage placed in batches when the stager places it, and holds the
	// time and the stager's seal of it, of the policy's UID, the stage, the
	// revision and the cluster ("<RFC 3339 time>/<seal>"). Such a
	// BindingPolicy counts as placed only with a seal of the running stager,
	// or when the stage's record names its cluster: one that merely carries
	// the policy's owner reference (which anyone who can read the policy can
	// write) is taken over when the stage's order reaches its cluster.
	PlacedAnnotation = "community.kubestellar.io/placed"

	// RevisionLabel is set on every BindingPolicy generated for a policy
	// with spec.revision and holds the revision the BindingPolicy places.
	RevisionLabel = "community.kubestellar.io/revision"

	// Unrevisioned is the revision a stage record keeps for the placement of
	// a policy without spec.revision (its BindingPolicy
	// "<policy>.stage.<stage>"), once spec.revision is added: that
	// placement stays until the rollout of the revision reaches the stage.
	// It is not a DNS label, so no revision of the spec can take the name.
	Unrevisioned = "-"

	// ClusterLabel is set on every BindingPolicy that places one cluster of
	// a stage placed in batches (maxConcurrency) and holds the cluster's name.
	ClusterLabel = "community.kubestellar.io/cluster"

	// DefaultClusterNameLabelKey is the ManagedCluster label that holds the
	// cluster's name when spec.clusterNameLabelKey is not set: KubeStellar's
	// getting-started labels every cluster name=<cluster> (OCM sets no such
	// label on a ManagedCluster).
	DefaultClusterNameLabelKey = "name"

	// MaxClusterStates is the most clusters a stage record names in
	// status.stages[].clusters.clusters; the counts cover every cluster.
	MaxClusterStates = 100

	// DefaultRevisionLabelKey is the label that carries a workload object's
	// revision when spec.revision.labelKey is not set: the recommended
	// Kubernetes label for an application's version.
	DefaultRevisionLabelKey = "app.kubernetes.io/version"
)

// StagedBindingPolicy places a KubeStellar workload stage by stage: it keeps
// one BindingPolicy for its active stage and moves to the next stage when the
// active stage's condition holds for the CombinedStatus of every selected
// workload object.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=sbp,categories=kubestellar
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Active Stage",type=string,JSONPath=`.status.activeStage`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.updateRevision`
// +kubebuilder:printcolumn:name="Current Revision",type=string,priority=1,JSONPath=`.status.currentRevision`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Progressing")].reason`
// +kubebuilder:printcolumn:name="Stage Started",type=date,JSONPath=`.status.stages[?(@.phase=="Active")].startTime`
// +kubebuilder:printcolumn:name="Awaiting Approval",type=date,JSONPath=`.status.stages[?(@.phase=="AwaitingApproval")].approvalRequestedTime`
// +kubebuilder:printcolumn:name="Condition Met",type=date,priority=1,JSONPath=`.status.stages[?(@.phase=="Active")].conditionMetTime`
// +kubebuilder:printcolumn:name="Deadline",type=string,priority=1,JSONPath=`.status.stages[?(@.phase=="Active")].progressDeadlineTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="the policy name must be at most 63 characters: it is the value of the community.kubestellar.io/staged-binding-policy label of the generated BindingPolicies"
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !(self.metadata.name == 'stage' || self.metadata.name.startsWith('stage.') || self.metadata.name.endsWith('.stage') || self.metadata.name.contains('.stage.'))",optionalOldSelf=true,message="the policy name may not have stage as a dot-separated part: in the names of the policy's BindingPolicies and StageApprovals, the first such part ends the policy's name"
type StagedBindingPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says what to place and the stages to place it through.
	Spec StagedBindingPolicySpec `json:"spec"`

	// Status reports where the rollout is.
	// +optional
	Status StagedBindingPolicyStatus `json:"status,omitempty"`
}

// StagedBindingPolicySpec is the desired rollout.
// +kubebuilder:validation:XValidation:rule="has(self.placement) && self.placement == 'Accumulate' || self.stages.all(s, !has(s.regressionWatch) || s.name == self.stages[size(self.stages) - 1].name)",message="regressionWatch on a stage before the last needs placement Accumulate: under Replace the stage gives its placement up when the next stage is placed, and nothing of it is left to watch"
type StagedBindingPolicySpec struct {
	// Downsync selects the workload objects to place, exactly as in a
	// KubeStellar BindingPolicy. It applies to every stage.
	// +optional
	Downsync []ksv1alpha1.DownsyncPolicyClause `json:"downsync,omitempty"`

	// Suspend, when true, starts no new stage: the rollout stays where it
	// is, with what it placed, and its phase is Suspended. Setting it back to
	// false resumes the rollout where it stopped. Deleting a suspended
	// policy still removes what it placed.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Placement says what becomes of a stage's placement once the next stage
	// starts. Replace (the default) takes it away once the next stage is
	// placed (make-before-break), so only the active stage's clusters hold
	// the workload. Accumulate keeps it, so the end state covers every
	// stage's clusters. Changing it mid-rollout: to Accumulate places every
	// earlier stage again; to Replace takes the earlier stages away once the
	// active one is placed.
	// +kubebuilder:validation:Enum=Replace;Accumulate
	// +optional
	Placement Placement `json:"placement,omitempty"`

	// Revision, when set, rolls out one revision of the workload at a time,
	// stage by stage. A revision is a set of workload objects side by side
	// with the previous one's (web-v1 and web-v2, say), each labelled with
	// its revision under labelKey; objects without that label belong to
	// every revision. Setting a new name starts the rollout of that
	// revision from the first stage: each stage that holds the previous
	// revision keeps it until the rollout reaches it, then runs both until
	// the stage is done on the new one alone, whose condition is judged on
	// the new revision's objects only.
	// +optional
	Revision *Revision `json:"revision,omitempty"`

	// Abort, when true, puts every stage that has moved to the revision
	// being rolled out back on status.currentRevision, the revision of the
	// last completed rollout, make-before-break: that revision is placed
	// again before the newer one is taken away. The rollout then stays
	// Aborted, and no new revision starts, until abort is set back to
	// false, which rolls out spec.revision again from the first stage.
	// Without a previous revision, abort holds the rollout where it is.
	// +optional
	Abort bool `json:"abort,omitempty"`

	// ClusterNameLabelKey is the label every cluster (its ManagedCluster in
	// the ITS) carries with its own name: a stage placed in batches
	// (maxConcurrency) places one cluster by adding it to the stage's
	// clusterSelectors. Default: name, as KubeStellar's getting-started
	// labels its clusters.
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	// +optional
	ClusterNameLabelKey string `json:"clusterNameLabelKey,omitempty"`

	// Stages are placed one after the other, in this order.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	Stages []Stage `json:"stages"`

	// Promotion is a release manager's break-glass request to treat the
	// active stage, or every stage left, as done without its condition,
	// soak or analyses (never without its approval); see Promotion.
	// +optional
	Promotion *Promotion `json:"promotion,omitempty"`

	// Notifications subscribe notification destinations of the hosting
	// cluster to the rollout's events, at most 4, one per destination;
	// see Notification.
	// +kubebuilder:validation:MaxItems=4
	// +listType=map
	// +listMapKey=destination
	// +optional
	Notifications []Notification `json:"notifications,omitempty"`
}

// Revision names the revision of the workload to roll out.
type Revision struct {
	// LabelKey is the key of the label that says which revision a workload
	// object belongs to. Default: app.kubernetes.io/version.
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	// +optional
	LabelKey string `json:"labelKey,omitempty"`

	// Name is the revision to roll out: the value of labelKey on its
	// objects. It is a DNS label, as it becomes part of the names of the
	// revision's BindingPolicies, and not "on", which there comes before a
	// cluster's name (a policy that had it already may keep it).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self != 'on' || oldSelf.hasValue() && oldSelf.value() == self",optionalOldSelf=true,message="a revision may not be named on: in the names of a stage's BindingPolicies it comes before a cluster's name"
	Name string `json:"name"`
}

// NameLabelKey returns the label that carries a cluster's name:
// spec.clusterNameLabelKey, or DefaultClusterNameLabelKey.
func (s *StagedBindingPolicySpec) NameLabelKey() string {
	if s.ClusterNameLabelKey == "" {
		return DefaultClusterNameLabelKey
	}
	return s.ClusterNameLabelKey
}

// RevisionLabelKey returns the label key that carries the revision of a
// workload object: r.LabelKey, or DefaultRevisionLabelKey.
func (r *Revision) RevisionLabelKey() string {
	if r == nil || r.LabelKey == "" {
		return DefaultRevisionLabelKey
	}
	return r.LabelKey
}

// Placement is what becomes of a stage's placement once the next stage starts.
type Placement string

// The placements.
const (
	// PlacementReplace takes a stage's placement away once the next stage is placed.
	PlacementReplace Placement = "Replace"
	// PlacementAccumulate keeps every earlier stage's placement.
	PlacementAccumulate Placement = "Accumulate"
)

// Stage is one step of a rollout: where to place the workload and when that
// step is done.
// +kubebuilder:validation:XValidation:rule="!has(self.soakDuration) || has(self.condition) && self.condition.size() > 0",message="soakDuration needs a condition to soak"
// +kubebuilder:validation:XValidation:rule="!has(self.progressDeadline) || !has(self.soakDuration) || duration(self.progressDeadline) > duration(self.soakDuration)",message="progressDeadline must be longer than soakDuration: the stage could never be done in time"
// +kubebuilder:validation:XValidation:rule="!has(self.maxFailures) || has(self.maxConcurrency)",message="maxFailures needs maxConcurrency: failures are counted per cluster of a stage placed in batches"
// +kubebuilder:validation:XValidation:rule="!has(self.canary) || has(self.maxConcurrency)",message="canary needs maxConcurrency: it is the stage's first batch"
// +kubebuilder:validation:XValidation:rule="!has(self.maxFailures) || has(self.progressDeadline)",message="maxFailures needs progressDeadline: a cluster counts as failed once it is not done past its progressDeadline"
// +kubebuilder:validation:XValidation:rule="!has(self.regressionWatch) || has(self.regressionWatch.analyses) && self.regressionWatch.analyses && has(self.analysis) && self.analysis.size() > 0 || (has(self.regressionWatch.judge) && self.regressionWatch.judge == 'FailureCondition' ? has(self.failureCondition) && self.failureCondition.size() > 0 : has(self.condition) && self.condition.size() > 0 || has(self.failureCondition) && self.failureCondition.size() > 0)",message="regressionWatch needs something to judge: a condition or a failureCondition (with judge FailureCondition a failureCondition), or analyses true and the stage's analysis"
// +kubebuilder:validation:XValidation:rule="!has(self.regressionWatch) || !has(self.regressionWatch.analyses) || !self.regressionWatch.analyses || has(self.analysis) && self.analysis.size() > 0",message="regressionWatch.analyses needs the stage's analysis to run"
type Stage struct {
	// Name identifies the stage. It is a DNS label and unique in the policy.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// ClusterSelectors select the clusters of this stage, exactly as in a
	// KubeStellar BindingPolicy: a cluster is selected when it matches any of them.
	// +kubebuilder:validation:MinItems=1
	ClusterSelectors []metav1.LabelSelector `json:"clusterSelectors"`

	// Filter is a CEL expression over each workload object clause of the
	// stage's Binding, with root `downsyncClause` (group, version, resource,
	// namespace, name, ...). Only objects it is true for are checked by
	// Condition. No filter means every object.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Filter string `json:"filter,omitempty"`

	// Condition is a CEL expression over the CombinedStatus of each filtered
	// object, with root `obj` (also available as `combinedStatus`). The stage
	// is done when it is true for every filtered object. A stage without a
	// condition is done as soon as its Binding is in place.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Condition string `json:"condition,omitempty"`

	// SoakDuration is how long the condition must keep holding, from when it
	// is first seen to hold, before the stage is done; if it stops holding
	// meanwhile, the clock starts again. At most a week; it needs a condition.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('168h')",message="soakDuration must be between 0s and 168h"
	// +optional
	SoakDuration *metav1.Duration `json:"soakDuration,omitempty"`

	// ProgressDeadline is the most time the stage may take from its start
	// to being done, not counting the time the rollout is suspended (nor,
	// as the stage starts once approved, the time it awaits approval). Past
	// it the rollout's phase is Stalled and its Progressing condition says
	// ProgressDeadlineExceeded, with a Warning Event; the rollout keeps
	// waiting, and goes on by itself if the condition later holds. Between
	// 1s and 168h; longer than soakDuration.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('168h')",message="progressDeadline must be between 1s and 168h"
	// +optional
	ProgressDeadline *metav1.Duration `json:"progressDeadline,omitempty"`

	// MaxConcurrency, when set, places the stage's clusters in batches of at
	// most this many: a number, or a percentage of the stage's clusters
	// (rounded up, at least one). The clusters go in the order of their
	// names, each through a BindingPolicy of its own; the next batch is
	// placed once every cluster placed so far is done (the condition holds
	// on its CombinedStatuses, for soakDuration) or has failed within
	// maxFailures. The stage is done once every cluster is. With it,
	// progressDeadline is each cluster's, from when it is placed. Unset
	// places every cluster at once, through one BindingPolicy.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:Pattern=`^(100|[1-9][0-9]?)%$`
	// +optional
	MaxConcurrency *intstr.IntOrString `json:"maxConcurrency,omitempty"`

	// MaxFailures is how many of the stage's clusters may fail before the
	// rollout stops: a number, or a percentage of the stage's clusters
	// (rounded down). A cluster fails when it is not done past its
	// progressDeadline: Failed when its condition does not hold, TimedOut
	// when KubeStellar has not reported on it. Within the budget the
	// rollout goes on without it; over it the rollout is Stalled
	// (FailureBudgetExceeded) and places no more clusters, and goes on by
	// itself if failed clusters recover. Default 0. Needs maxConcurrency and
	// progressDeadline.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +optional
	MaxFailures *intstr.IntOrString `json:"maxFailures,omitempty"`

	// Canary makes the first batch this many clusters, none of which may
	// fail (OCM's mandatory decision group): a failure among them stalls
	// the rollout whatever maxFailures allows. Needs maxConcurrency.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Canary *int32 `json:"canary,omitempty"`

	// Approval Required holds the stage before it starts (its BindingPolicy
	// is not created) until a person approves it through the StageApproval
	// the stager creates for it, named like the stage's BindingPolicy. An
	// approval counts for the policy's current spec and restartedAt only.
	// None (the default) starts the stage as soon as the one before is done.
	// +kubebuilder:validation:Enum=None;Required
	// +optional
	Approval Approval `json:"approval,omitempty"`

	// Analysis measures what the workload does while the stage is active,
	// through PromQL queries to the MetricProviders the platform team
	// declared in the stager's hosting cluster. The stage is done only once
	// its condition holds and every analysis that is not a dryRun has
	// succeeded; a failed analysis fails the stage (see onFailure), one
	// inconclusive past its inconclusiveLimit holds the rollout for a person.
	// +kubebuilder:validation:MaxItems=4
	// +listType=map
	// +listMapKey=name
	// +optional
	Analysis []Analysis `json:"analysis,omitempty"`

	// FailureCondition is a CEL expression over the CombinedStatus of each
	// filtered object, with root `obj`, like condition: the stage fails as
	// soon as it is true for any of them (see onFailure).
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	FailureCondition string `json:"failureCondition,omitempty"`

	// OnFailure is what a failed stage (its failureCondition holds, or an
	// analysis failed) does to the rollout. Hold (the default) stalls it
	// where it is, with what it placed, until the spec changes or the
	// rollout is restarted. Abort withdraws what the rollout moved: with
	// spec.revision and a current revision, every stage goes back to
	// status.currentRevision, as spec.abort does, until spec.revision names
	// another revision or the rollout is restarted; without, the failed
	// stage's placement is taken away and the last stage that was done
	// placed again (every earlier stage under Accumulate).
	// +kubebuilder:validation:Enum=Hold;Abort
	// +optional
	OnFailure FailureAction `json:"onFailure,omitempty"`

	// Windows, when set, are the only times the stage may start (and,
	// placed in batches, start its next batch): outside all of them it
	// waits (WaitingForWindow). A stage that started finishes whatever
	// the windows say; an abort is never held. At most 8.
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	Windows []ChangeWindow `json:"windows,omitempty"`
	// RegressionWatch keeps judging the stage once it is done, on a slow
	// interval: a stage found unhealthy sets the StageRegressed condition,
	// and with onRegression Abort aborts the rollout still in flight.
	// +optional
	RegressionWatch *RegressionWatch `json:"regressionWatch,omitempty"`
}

// FailureAction is what a failed stage does to the rollout.
type FailureAction string

// The failure actions.
const (
	// FailureHold stalls the rollout where it is.
	FailureHold FailureAction = "Hold"
	// FailureAbort withdraws what the rollout moved.
	FailureAbort FailureAction = "Abort"
)

// Analysis is a PromQL query, or a web request, measured while a stage is
// active, and how its measurements judge the stage, after Argo Rollouts'
// AnalysisTemplate metrics (and its web provider).
// +kubebuilder:validation:XValidation:rule="has(self.successCondition) || has(self.failureCondition)",message="an analysis needs a successCondition or a failureCondition"
// +kubebuilder:validation:XValidation:rule="has(self.query) != has(self.web)",message="an analysis needs exactly one of query and web"
type Analysis struct {
	// Name identifies the analysis in the stage. It is a DNS label.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Provider is the name of the MetricProvider, in the stager's hosting
	// cluster, to query. A policy cannot give an address of its own.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Provider string `json:"provider"`

	// Query is the PromQL instant query. These placeholders are replaced
	// before it is sent: {{space}}, {{policy}}, {{stage}}, {{revision}}
	// (the revision being rolled out, empty without spec.revision) and
	// {{clusters}} (the names of the clusters the stage's Binding places
	// the workload on, as a regular expression that matches exactly them,
	// e.g. `cluster=~"{{clusters}}"`); each value is escaped for a PromQL
	// string. It needs a provider with spec.prometheus.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Query string `json:"query,omitempty"`

	// Web is a GET request to a provider with spec.web (an external gate),
	// instead of a query: its JSON answer is the conditions' `result`.
	// +optional
	Web *WebRequest `json:"web,omitempty"`

	// InitialDelay is how long after the stage's Binding first places the
	// workload the first measurement is taken. At most 24h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('24h')",message="initialDelay must be between 0s and 24h"
	// +optional
	InitialDelay *metav1.Duration `json:"initialDelay,omitempty"`

	// Interval is the time between two measurements. Default 30s; between
	// 1s and 24h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="interval must be between 1s and 24h"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Count is how many measurements the analysis takes; it succeeds once
	// it has taken them all within failureLimit and inconclusiveLimit.
	// Default 1.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Count int32 `json:"count,omitempty"`

	// SuccessCondition is a CEL expression over the query's result, with
	// root `result`: the list of the sample values of the answer (one for a
	// scalar), as doubles, e.g. `result.size() > 0 && result.all(v, v <
	// 0.01)`; for a web analysis, the JSON answer (objects are maps, numbers
	// ints when whole, else doubles), e.g. `result.state == 'approved'`. A
	// measurement is Successful when it is true (and the
	// failureCondition, if any, false), Failed when it is false and there is
	// no failureCondition.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	SuccessCondition string `json:"successCondition,omitempty"`

	// FailureCondition is a CEL expression over `result`, like
	// successCondition: a measurement is Failed when it is true. With both
	// conditions, a measurement for which neither holds is Inconclusive.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	FailureCondition string `json:"failureCondition,omitempty"`

	// FailureLimit is how many Failed measurements the analysis tolerates;
	// one more fails it. Default 0.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	FailureLimit int32 `json:"failureLimit,omitempty"`

	// InconclusiveLimit is how many Inconclusive measurements the analysis
	// tolerates; one more holds the rollout for a person. A measurement is
	// Inconclusive when the provider cannot be reached, answers with an
	// error, too slowly or too much, or the conditions cannot be evaluated.
	// Default 0.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	InconclusiveLimit int32 `json:"inconclusiveLimit,omitempty"`

	// DryRun records the analysis's measurements without letting them gate
	// or fail the stage.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
}

// Bounds of a web request.
const (
	// MaxWebPath is the most bytes of a web request's path.
	MaxWebPath = 1024
	// MaxWebParams is the most query parameters of a web request.
	MaxWebParams = 16
	// MaxWebParamValue is the most bytes of a query parameter's value.
	MaxWebParamValue = 1024
)

// WebRequest is the GET request of a web analysis: a path under the web
// provider's address and query parameters. A policy cannot change the
// scheme, host or method: the path is relative, has no "..", query or
// fragment, and each placeholder's value is escaped as one path segment or
// one parameter value.
type WebRequest struct {
	// Path is appended to the provider's address. These placeholders are
	// replaced, each value escaped as a path segment: {{space}},
	// {{policy}}, {{stage}} and {{revision}}. Empty: the address itself.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._~!$&'()*+,;=:@%{}/-]*$`
	// +kubebuilder:validation:XValidation:rule="!self.split('/').exists(s, s == '..' || s == '.')",message="path may have no . or .. segment"
	// +optional
	Path string `json:"path,omitempty"`

	// Params are the query parameters, by name, at most 16. Their values
	// may hold the placeholders of path and {{clusters}} (the names of the
	// clusters the stage's Binding places the workload on, joined by
	// commas); each value is escaped as a query value.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.size() >= 1 && k.size() <= 63 && self[k].size() <= 1024)",message="a parameter's name is 1 to 63 bytes, its value at most 1024"
	// +optional
	Params map[string]string `json:"params,omitempty"`
}

// MeasurementCount returns how many measurements the analysis takes: Count,
// or 1.
func (a *Analysis) MeasurementCount() int32 {
	return max(a.Count, 1)
}

// DefaultAnalysisInterval is the time between two measurements of an
// analysis that sets no interval.
const DefaultAnalysisInterval = 30 * time.Second

// MeasurementInterval returns the time between two measurements: Interval,
// or DefaultAnalysisInterval.
func (a *Analysis) MeasurementInterval() time.Duration {
	if a.Interval == nil || a.Interval.Duration <= 0 {
		return DefaultAnalysisInterval
	}
	return a.Interval.Duration
}

// Approval says whether a stage waits for a person's approval to start.
type Approval string

// The approvals.
const (
	// ApprovalNone starts the stage without approval.
	ApprovalNone Approval = "None"
	// ApprovalRequired starts the stage once its StageApproval is approved.
	ApprovalRequired Approval = "Required"
)

// RolloutPhase summarises a StagedBindingPolicy's rollout.
// +kubebuilder:validation:Enum=Pending;Progressing;Completed;Blocked;Suspended;Stalled;AwaitingApproval;Aborted
type RolloutPhase string

// The phases of a rollout.
const (
	// RolloutPending means nothing has been placed yet.
	RolloutPending RolloutPhase = "Pending"
	// RolloutProgressing means a stage is placed and the rollout goes on.
	RolloutProgressing RolloutPhase = "Progressing"
	// RolloutCompleted means the final stage is placed and its condition holds.
	RolloutCompleted RolloutPhase = "Completed"
	// RolloutBlocked means an error in the spec stops the rollout until it is fixed.
	RolloutBlocked RolloutPhase = "Blocked"
	// RolloutSuspended means spec.suspend holds the rollout where it is.
	RolloutSuspended RolloutPhase = "Suspended"
	// RolloutStalled means the active stage is past its progressDeadline; the
	// rollout keeps waiting and goes on if the stage's condition later holds.
	RolloutStalled RolloutPhase = "Stalled"
	// RolloutAwaitingApproval means the next stage waits for its StageApproval.
	RolloutAwaitingApproval RolloutPhase = "AwaitingApproval"
	// RolloutAborted means spec.abort put the stages that had moved back on
	// the current revision (or holds a rollout with none where it is).
	RolloutAborted RolloutPhase = "Aborted"
)

// Batched reports whether the stage places its clusters in batches.
func (s *Stage) Batched() bool {
	return s.MaxConcurrency != nil
}

// StagePhase is where one stage is in the rollout.
// +kubebuilder:validation:Enum=Pending;AwaitingApproval;Active;Succeeded;Skipped
type StagePhase string

// The phases of a stage.
const (
	// StagePending means the stage has not been reached yet.
	StagePending StagePhase = "Pending"
	// StageAwaitingApproval means the rollout has reached the stage, which
	// waits for its StageApproval before its BindingPolicy is created.
	StageAwaitingApproval StagePhase = "AwaitingApproval"
	// StageActive means the stage's BindingPolicy is placed and its condition is awaited.
	StageActive StagePhase = "Active"
	// StageSucceeded means the stage's condition held.
	StageSucceeded StagePhase = "Succeeded"
	// StageSkipped means the stage was added to the spec before the active
	// stage, after the rollout had passed that point: it never ran.
	StageSkipped StagePhase = "Skipped"
)

// Condition types of a StagedBindingPolicy.
const (
	// ConditionReady is true when the active stage's BindingPolicy is in place
	// and matches the spec, and every expression of the spec compiles.
	ConditionReady = "Ready"
	// ConditionProgressing is true while the rollout moves on towards its final stage.
	ConditionProgressing = "Progressing"
	// ConditionCompleted is true when the final stage is placed and its condition holds.
	ConditionCompleted = "Completed"
	// ConditionDeleting is true while a policy being deleted waits for its
	// BindingPolicies to go; its message names the BindingPolicies and the
	// finalizers that hold them, and since when the deletion waits.
	ConditionDeleting = "Deleting"
	// ConditionWaitingForWave is True while a RolloutWave of the hosting
	// cluster holds the revision the spec names: it does not start until
	// the wave releases it. Its reason is the wave's (internal/wave):
	// WaveConflict, WaveNeedsRevision, EarlierStepFailed,
	// EarlierSpaceNotReporting, WaitingForEarlierSteps or WaveSoaking; its
	// message names the revision held and the earlier spaces with their
	// policy's phase and revision only. It is removed once the revision
	// is released (or no longer asked for).
	ConditionWaitingForWave = "WaitingForWave"
)

// Condition reasons of a StagedBindingPolicy.
const (
	// ReasonBindingPolicyInSync means the active stage's BindingPolicy matches the spec.
	ReasonBindingPolicyInSync = "BindingPolicyInSync"
	// ReasonBindingPolicyPending means the active stage's BindingPolicy is being created or updated.
	ReasonBindingPolicyPending = "BindingPolicyPending"
	// ReasonInvalidExpression means a filter or condition does not compile.
	ReasonInvalidExpression = "InvalidExpression"
	// ReasonBindingPolicyConflict means a BindingPolicy with the active stage's
	// name exists and belongs to someone else.
	ReasonBindingPolicyConflict = "BindingPolicyConflict"
	// ReasonExpressionTooCostly means a filter or condition costs too much: its
	// estimated worst-case cost is above the limit, or an evaluation was
	// stopped by the cost limit, the evaluation timeout or the per-reconcile
	// budget. The message says which.
	ReasonExpressionTooCostly = "ExpressionTooCostly"
	// ReasonEvaluationError means a filter or condition failed while being evaluated.
	ReasonEvaluationError = "EvaluationError"
	// ReasonWaitingForBinding means KubeStellar has not yet resolved the active
	// stage's BindingPolicy into a Binding.
	ReasonWaitingForBinding = "WaitingForBinding"
	// ReasonWaitingForStatus means a filtered object has no CombinedStatus yet.
	ReasonWaitingForStatus = "WaitingForStatus"
	// ReasonConditionNotMet means the active stage's condition is false for some object.
	ReasonConditionNotMet = "ConditionNotMet"
	// ReasonNoClustersSelected means the stage's Binding has no destination:
	// its clusterSelectors select no cluster, so the stage waits.
	ReasonNoClustersSelected = "NoClustersSelected"
	// ReasonNoObjectsSelected means the stage's filter selects no workload object,
	// so its condition cannot hold.
	ReasonNoObjectsSelected = "NoObjectsSelected"
	// ReasonStageAdvanced means the rollout just moved to the next stage.
	ReasonStageAdvanced = "StageAdvanced"
	// ReasonRolloutCompleted means the final stage is placed and its condition holds.
	ReasonRolloutCompleted = "RolloutCompleted"
	// ReasonStagesRemaining means the final stage has not been reached yet.
	ReasonStagesRemaining = "StagesRemaining"
	// ReasonFinalConditionNotMet means the final stage is active and its condition does not hold yet.
	ReasonFinalConditionNotMet = "FinalConditionNotMet"
	// ReasonNoStages means the spec lists no stage.
	ReasonNoStages = "NoStages"
	// ReasonInvalidAnnotation means an annotation of the policy asks for
	// something the stager cannot do (a restartedAt value too long to
	// record).
	ReasonInvalidAnnotation = "InvalidAnnotation"
	// ReasonApprovedPlacementChanged means the spec would change what an
	// approved, active stage places: the stage awaits approval again.
	ReasonApprovedPlacementChanged = "ApprovedPlacementChanged"
	// ReasonSuspended means spec.suspend holds the rollout where it is.
	ReasonSuspended = "Suspended"
	// ReasonRolloutAborted means spec.abort holds the rollout: the stages
	// that had moved are back on the current revision, or going back.
	ReasonRolloutAborted = "RolloutAborted"
	// ReasonFailureBudgetExceeded means more clusters of the active stage
	// failed than its maxFailures allows, or a cluster of its canary batch
	// failed: the rollout places no more clusters. The message names them.
	ReasonFailureBudgetExceeded = "FailureBudgetExceeded"
	// ReasonClusterNotPlaceable means a cluster of the active stage, placed
	// in batches, cannot have a BindingPolicy of its own: its name is no
	// DNS label, or the BindingPolicy's name would be longer than a label
	// value, which KubeStellar puts it in. The rollout is blocked.
	ReasonClusterNotPlaceable = "ClusterNotPlaceable"
	// ReasonInvalidBatches means a stage's maxConcurrency is a number below
	// 1 or its maxFailures one below 0 (the CRD checks the percentages
	// only: a rule on a number-or-string costs more than kcp admits).
	ReasonInvalidBatches = "InvalidBatches"
	// ReasonBatchInProgress means the active stage, placed in batches,
	// waits for the clusters placed so far before it places the next batch.
	ReasonBatchInProgress = "BatchInProgress"
	// ReasonAnalysisRunning means the active stage waits for its analyses
	// to take their measurements.
	ReasonAnalysisRunning = "AnalysisRunning"
	// ReasonAnalysisFailed means an analysis of the active stage took more
	// failed measurements than its failureLimit allows.
	ReasonAnalysisFailed = "AnalysisFailed"
	// ReasonAnalysisInconclusive means an analysis of the active stage took
	// more inconclusive measurements than its inconclusiveLimit allows.
	ReasonAnalysisInconclusive = "AnalysisInconclusive"
	// ReasonFailureConditionMet means the active stage's failureCondition
	// holds for a filtered object.
	ReasonFailureConditionMet = "FailureConditionMet"
	// ReasonRolloutHeld means a failed stage holds the rollout (onFailure
	// Hold) until the spec changes or the rollout is restarted.
	ReasonRolloutHeld = "RolloutHeld"
	// ReasonSoaking means the active stage's condition holds and must keep
	// holding for the stage's soakDuration.
	ReasonSoaking = "Soaking"
	// ReasonProgressDeadlineExceeded means the active stage is not done past
	// its progressDeadline; the message says what it still waits for.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonAwaitingApproval means the active stage waits for its
	// StageApproval before it starts.
	ReasonAwaitingApproval = "AwaitingApproval"
	// ReasonStageApprovalConflict means a StageApproval with the stage's
	// name exists and belongs to someone else.
	ReasonStageApprovalConflict = "StageApprovalConflict"
	// ReasonWaitingForFinalizers means a policy being deleted waits for the
	// finalizers of its BindingPolicies (KubeStellar's, normally) to be removed.
	ReasonWaitingForFinalizers = "WaitingForFinalizers"
	// ReasonDeletionBlocked means a policy's deletion has waited for the
	// finalizers of its BindingPolicies longer than the stager's threshold:
	// most often KubeStellar's controller-manager is not running.
	ReasonDeletionBlocked = "DeletionBlocked"
)

// Reasons of the Events that mark a rollout's steps (the other Events carry
// the condition reasons above).
const (
	// EventReasonStageStarted marks a stage's start: its BindingPolicy is created.
	EventReasonStageStarted = "StageStarted"
	// EventReasonStageSucceeded marks a stage whose condition holds for every
	// filtered object.
	EventReasonStageSucceeded = "StageSucceeded"
	// EventReasonActiveStageReset marks a rollout restarted because its active
	// stage was removed from the spec.
	EventReasonActiveStageReset = "ActiveStageReset"
	// EventReasonSuspended marks a rollout held by spec.suspend.
	EventReasonSuspended = "Suspended"
	// EventReasonResumed marks a suspended rollout going on again.
	EventReasonResumed = "Resumed"
	// EventReasonRestarted marks a rollout restarted from its first stage by
	// a new value of the restartedAt annotation.
	EventReasonRestarted = "RolloutRestarted"
	// EventReasonApprovalRequested marks a rollout reaching a stage that
	// waits for its StageApproval.
	EventReasonApprovalRequested = "ApprovalRequested"
	// EventReasonRevisionStarted marks the start of the rollout of a new
	// revision (spec.revision) from the first stage.
	EventReasonRevisionStarted = "RevisionStarted"
	// EventReasonRevisionSuperseded marks a new revision arriving while
	// another was being rolled out: the newer one starts from the first
	// stage, and the stages keep what they run until it reaches them.
	EventReasonRevisionSuperseded = "RevisionSuperseded"
	// EventReasonBatchStarted marks the start of a batch of a stage placed
	// in batches: its first cluster's BindingPolicy is created.
	EventReasonBatchStarted = "BatchStarted"
	// EventReasonClusterFailed marks a cluster of a stage placed in batches
	// that failed (or timed out) within the stage's maxFailures.
	EventReasonClusterFailed = "ClusterFailed"
	// EventReasonStageApproved marks a stage approved through its StageApproval.
	EventReasonStageApproved = "StageApproved"
	// EventReasonWaitingForWave marks a revision a RolloutWave holds, once
	// when it is first held.
	EventReasonWaitingForWave = "WaitingForWave"
	// EventReasonWaveReleased marks a revision a RolloutWave held and has
	// now released: its rollout starts.
	EventReasonWaveReleased = "WaveReleased"
	// EventReasonNotificationFailed means a notification of one of the
	// policy's Events was given up: a destination of spec.notifications
	// refused it, or did not take it within the stager's bound of
	// attempts and time. The note names the Event and the destination.
	EventReasonNotificationFailed = "NotificationFailed"
	// EventReasonWaveRevisionGivenUp (Warning) marks a revision that an
	// earlier step of the policy's RolloutWave gave up: it never starts
	// here; a new revision is the way on.
	EventReasonWaveRevisionGivenUp = "WaveRevisionGivenUp"
)

// StagedBindingPolicyStatus reports where a rollout is. All the rollout's
// state lives here, so a restarted controller resumes exactly where it was.
type StagedBindingPolicyStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ActiveStage is the name of the stage whose BindingPolicy is placed.
	// +optional
	ActiveStage string `json:"activeStage,omitempty"`

	// RestartedAt is the value of the community.kubestellar.io/restartedAt
	// annotation the current rollout started from.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	RestartedAt string `json:"restartedAt,omitempty"`

	// Phase summarises the rollout.
	// +optional
	Phase RolloutPhase `json:"phase,omitempty"`

	// CurrentRevision is the revision of the last completed rollout: what
	// every stage ran then, and what abort goes back to.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`

	// UpdateRevision is the revision being rolled out (spec.revision.name,
	// once the rollout of it has started).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`

	// SuspendedTime is when spec.suspend began to hold the rollout; it is
	// cleared when the rollout resumes, and the time suspended is added to
	// the active stage's suspendedDuration.
	// +optional
	SuspendedTime *metav1.Time `json:"suspendedTime,omitempty"`

	// Conditions are Ready, Progressing and Completed, and Deleting while a
	// deletion waits for the finalizers of the policy's BindingPolicies.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Failure records the stage whose failure holds or aborted the rollout
	// (its onFailure); it is cleared when the rollout goes on.
	// +optional
	Failure *RolloutFailure `json:"failure,omitempty"`

	// Stages has one record per stage of the spec, in the same order.
	// +listType=map
	// +listMapKey=name
	// +optional
	Stages []StageStatus `json:"stages,omitempty"`

	// Wave is the policy's place in the wave that orders it in its
	// space (docs/proposals/waves.md), and whether the wave holds the
	// revision the spec names; absent when no wave orders the policy. It
	// says nothing of other spaces: the WaitingForWave condition says what
	// a held revision waits for.
	// +optional
	Wave *WaveStatus `json:"wave,omitempty"`

	// History are the last rollouts of the policy's revisions, oldest
	// first, at most 10: each revision's start and end, outcome and who
	// approved it (docs/proposals/history.md). A policy that never had
	// spec.revision records none.
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	// +optional
	History []RevisionHistory `json:"history,omitempty"`
	// LastPromotion is the spec.promotion request the stager took last,
	// applied or ignored: the same request is never taken twice.
	// +optional
	LastPromotion *LastPromotion `json:"lastPromotion,omitempty"`
	// Window names the stage that waits for its change window and when
	// that window opens next; absent when no stage waits for one.
	// +optional
	Window *WindowStatus `json:"window,omitempty"`
	// PendingEvents are the Events the stager has recorded and not yet
	// known to be posted, oldest first, at most MaxPendingEvents: written
	// with the change they announce, posted after the write and again by
	// a restarted stager, cleared once posted
	// (docs/proposals/announcements.md).
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	PendingEvents []PendingEvent `json:"pendingEvents,omitempty"`
	// EventSequence is the sequence number of the last Event recorded in
	// PendingEvents.
	// +optional
	EventSequence int64 `json:"eventSequence,omitempty"`
	// DroppedEvents counts the pending Events dropped unposted, the
	// oldest first, because more than MaxPendingEvents were pending.
	// +optional
	DroppedEvents int64 `json:"droppedEvents,omitempty"`
}

// MaxPendingEvents is the most Events status.pendingEvents holds.
const MaxPendingEvents = 32

// PendingEvent is an Event recorded in the status with the change it
// announces, posted from that record.
type PendingEvent struct {
	// Sequence numbers the policy's Events in the order they were
	// recorded.
	Sequence int64 `json:"sequence"`
	// Type is Normal or Warning.
	// +kubebuilder:validation:Enum=Normal;Warning
	Type string `json:"type"`
	// Reason is the Event's reason.
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason"`
	// Action is the change that the Event announces.
	// +kubebuilder:validation:MaxLength=128
	Action string `json:"action"`
	// Note is the Event's note.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Note string `json:"note,omitempty"`
	// Time is when the change was recorded.
	Time metav1.Time `json:"time"`
}

// WaveState is whether a wave holds a policy's revision.
// +kubebuilder:validation:Enum=Held;Released
type WaveState string

// The states of a policy in a wave.
const (
	// WaveHeld: the wave keeps the revision the spec names from starting.
	WaveHeld WaveState = "Held"
	// WaveReleased: the wave does not hold the revision the spec names; it
	// let it start, or it ran already when the wave came to order it.
	WaveReleased WaveState = "Released"
)

// MaxWavePosition is the most bytes of a WaveStatus's position: "16/16"
// for a wave's 16 steps at most, with room for a later bound of 999.
const MaxWavePosition = 7

// WaveStatus is a policy's place in the wave (of the hosting cluster)
// that orders it.
type WaveStatus struct {
	// Name is the wave's name; empty while the stager cannot tell which
	// wave orders the policy (two waves do, or the hosting cluster's waves
	// cannot be read), which holds the revision.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Name string `json:"name,omitempty"`

	// Step is the name of the wave's step that holds the policy's space.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Step string `json:"step,omitempty"`

	// Position is the step's place among the wave's steps, 1-based: "2/3".
	// +kubebuilder:validation:MaxLength=7
	// +kubebuilder:validation:Pattern=`^[0-9]{1,3}/[0-9]{1,3}$`
	// +optional
	Position string `json:"position,omitempty"`

	// State is Held while the wave keeps the revision the spec names from
	// starting (the WaitingForWave condition says why), else Released.
	State WaveState `json:"state"`

	// Revision is the revision the wave holds (Held) or released
	// (Released): spec.revision.name; empty for a policy without one.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Revision string `json:"revision,omitempty"`
}

// StageStatus is the record of one stage.
type StageStatus struct {
	// Name is the stage's name.
	Name string `json:"name"`

	// Phase is Pending, AwaitingApproval, Active, Succeeded or Skipped.
	Phase StagePhase `json:"phase"`

	// Revision is the revision the stage runs and keeps while the rollout
	// is elsewhere, for a policy with spec.revision: the update revision
	// once the stage is done on it, else the revision it ran before ("-"
	// for the placement the policy made before it had spec.revision). An
	// active stage also runs the update revision until it is done.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Revision string `json:"revision,omitempty"`

	// StartTime is when the stage became active.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// ConditionMetTime is when the stage's condition was last seen to start
	// holding, while the stage soaks (soakDuration); it is cleared when the
	// condition stops holding.
	// +optional
	ConditionMetTime *metav1.Time `json:"conditionMetTime,omitempty"`

	// PlacedTime is when the stage's Binding was first seen to place the
	// workload, for a stage with analyses: their initialDelay counts from it.
	// +optional
	PlacedTime *metav1.Time `json:"placedTime,omitempty"`

	// CompletionTime is when the stage was done: its condition held (for
	// soakDuration, when given).
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Approval is the name of the stage's StageApproval, for a stage whose
	// approval is Required.
	// +optional
	Approval string `json:"approval,omitempty"`

	// ApprovalRequestedTime is when the rollout reached the stage and began
	// to wait for its approval.
	// +optional
	ApprovalRequestedTime *metav1.Time `json:"approvalRequestedTime,omitempty"`

	// ApprovedTime is when the stage was approved (the lastTransitionTime of
	// its StageApproval's Approved condition).
	// +optional
	ApprovedTime *metav1.Time `json:"approvedTime,omitempty"`

	// ApprovedBy is who approved the stage, as its StageApproval says.
	// +optional
	ApprovedBy string `json:"approvedBy,omitempty"`

	// ApprovedPlacement is a digest of what the stage placed when it was
	// approved (its BindingPolicy's spec: cluster selectors and downsync).
	// While the stage is active, a spec that would place anything else
	// takes it back to AwaitingApproval, its BindingPolicy left as approved.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	ApprovedPlacement string `json:"approvedPlacement,omitempty"`

	// SuspendedDuration is how long the rollout was suspended while the
	// stage was active: it does not count against the stage's progressDeadline.
	// +optional
	SuspendedDuration *metav1.Duration `json:"suspendedDuration,omitempty"`

	// ProgressDeadlineTime is when the stage's progressDeadline passes:
	// startTime plus progressDeadline plus suspendedDuration.
	// +optional
	ProgressDeadlineTime *metav1.Time `json:"progressDeadlineTime,omitempty"`

	// BindingPolicy is the name of the BindingPolicy generated for the stage.
	// +optional
	BindingPolicy string `json:"bindingPolicy,omitempty"`

	// Clusters is where each cluster of a stage placed in batches
	// (maxConcurrency) is, as last assessed while the stage was active.
	// +optional
	Clusters *StageClusters `json:"clusters,omitempty"`

	// Analyses are the records of the stage's analyses while it is active,
	// and as they ended once it is done.
	// +kubebuilder:validation:MaxItems=4
	// +listType=map
	// +listMapKey=name
	// +optional
	Analyses []AnalysisStatus `json:"analyses,omitempty"`

	// Message says in words what the stage waits for, or what it did.
	// +optional
	Message string `json:"message,omitempty"`

	// Promotion records who promoted the stage past its gates, when, why
	// and which gates it skipped; absent for a stage done by its gates.
	// +optional
	Promotion *StagePromotion `json:"promotion,omitempty"`
	// LastRegressionCheckTime is when the stage's regressionWatch last
	// judged it, once done; the next check is due an interval later.
	// +optional
	LastRegressionCheckTime *metav1.Time `json:"lastRegressionCheckTime,omitempty"`

	// Regressed records that the stage's regressionWatch found it
	// unhealthy once done; cleared when a check finds it healthy again.
	// +optional
	Regressed *StageRegression `json:"regressed,omitempty"`
}

// ClusterState is where one cluster of a stage placed in batches is, as
// OCM's rollout strategies name it.
// +kubebuilder:validation:Enum=ToApply;Progressing;Succeeded;Failed;TimedOut
type ClusterState string

// The states of a cluster.
const (
	// ClusterToApply means the cluster is selected and not placed yet.
	ClusterToApply ClusterState = "ToApply"
	// ClusterProgressing means the cluster is placed and not done yet.
	ClusterProgressing ClusterState = "Progressing"
	// ClusterSucceeded means the stage's condition holds on the cluster.
	ClusterSucceeded ClusterState = "Succeeded"
	// ClusterFailed means the condition does not hold on the cluster past
	// its progressDeadline.
	ClusterFailed ClusterState = "Failed"
	// ClusterTimedOut means KubeStellar has not reported on the cluster
	// (no Binding or CombinedStatus) past its progressDeadline.
	ClusterTimedOut ClusterState = "TimedOut"
)

// StageClusters counts the clusters of a stage placed in batches by state,
// and names some of them.
type StageClusters struct {
	// Total is how many clusters the stage selects.
	Total int32 `json:"total"`
	// Placed is how many of them are placed: every state but ToApply.
	Placed int32 `json:"placed"`
	// Succeeded is how many are done.
	Succeeded int32 `json:"succeeded"`
	// Failed is how many failed: their condition does not hold past their
	// progressDeadline.
	Failed int32 `json:"failed"`
	// TimedOut is how many timed out: KubeStellar has not reported on them
	// past their progressDeadline.
	TimedOut int32 `json:"timedOut"`
	// Batch is the batch being placed or awaited, from 1, of Batches.
	Batch int32 `json:"batch"`
	// Batches is how many batches the stage's clusters make.
	Batches int32 `json:"batches"`
	// Clusters names the placed clusters and their state: the failed and
	// timed out first, then the progressing, then the succeeded, each by
	// name, at most MaxClusterStates.
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Clusters []ClusterStatus `json:"clusters,omitempty"`
}

// Progressing is how many placed clusters are neither done nor failed.
func (c *StageClusters) Progressing() int32 {
	return max(c.Placed-c.Succeeded-c.Failed-c.TimedOut, 0)
}

// ToApply is how many selected clusters are not placed yet.
func (c *StageClusters) ToApply() int32 {
	return max(c.Total-c.Placed, 0)
}

// ClusterStatus is the state of one cluster of a stage placed in batches.
type ClusterStatus struct {
	// Name is the cluster's name.
	Name string `json:"name"`
	// State is where the cluster is.
	State ClusterState `json:"state"`
}

// AnalysisPhase is where one analysis of a stage is.
// +kubebuilder:validation:Enum=Running;Successful;Failed;Inconclusive
type AnalysisPhase string

// The phases of an analysis.
const (
	// AnalysisRunning means the analysis has measurements left to take.
	AnalysisRunning AnalysisPhase = "Running"
	// AnalysisSuccessful means the analysis took all its measurements
	// within its failureLimit and inconclusiveLimit.
	AnalysisSuccessful AnalysisPhase = "Successful"
	// AnalysisFailed means more measurements failed than failureLimit allows.
	AnalysisFailed AnalysisPhase = "Failed"
	// AnalysisInconclusive means more measurements were inconclusive than
	// inconclusiveLimit allows.
	AnalysisInconclusive AnalysisPhase = "Inconclusive"
)

// MeasurementPhase is the verdict of one measurement.
// +kubebuilder:validation:Enum=Successful;Failed;Inconclusive
type MeasurementPhase string

// The verdicts of a measurement.
const (
	// MeasurementSuccessful means the successCondition held (and the
	// failureCondition did not).
	MeasurementSuccessful MeasurementPhase = "Successful"
	// MeasurementFailed means the failureCondition held, or the
	// successCondition did not and there is no failureCondition.
	MeasurementFailed MeasurementPhase = "Failed"
	// MeasurementInconclusive means the query or the conditions gave no
	// verdict: the provider could not be reached or answered an error, or
	// an evaluation failed, or neither condition held.
	MeasurementInconclusive MeasurementPhase = "Inconclusive"
)

// Bounds of an analysis record.
const (
	// MaxMeasurements is how many of its latest measurements an analysis
	// record keeps; its counts cover every measurement.
	MaxMeasurements = 3
	// MaxMeasurementValue is the most bytes of a measurement's value.
	MaxMeasurementValue = 256
	// MaxMeasurementMessage is the most bytes of a measurement's message.
	MaxMeasurementMessage = 512
)

// AnalysisStatus is the record of one analysis of a stage.
type AnalysisStatus struct {
	// Name is the analysis's name.
	Name string `json:"name"`
	// Phase is Running, Successful, Failed or Inconclusive.
	Phase AnalysisPhase `json:"phase"`
	// DryRun says the analysis does not gate the stage.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
	// Successful is how many measurements succeeded.
	Successful int32 `json:"successful"`
	// Failed is how many measurements failed.
	Failed int32 `json:"failed"`
	// Inconclusive is how many measurements were inconclusive.
	Inconclusive int32 `json:"inconclusive"`
	// Measurements are the latest measurements, oldest first, at most
	// MaxMeasurements.
	// +kubebuilder:validation:MaxItems=3
	// +optional
	Measurements []Measurement `json:"measurements,omitempty"`
}

// Taken is how many measurements the analysis has taken.
func (a *AnalysisStatus) Taken() int32 {
	return a.Successful + a.Failed + a.Inconclusive
}

// Measurement is one measurement of an analysis.
type Measurement struct {
	// Time is when the query was sent.
	Time metav1.Time `json:"time"`
	// Phase is the measurement's verdict.
	Phase MeasurementPhase `json:"phase"`
	// Value is the query's result, as the conditions saw it.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Value string `json:"value,omitempty"`
	// Message says why the measurement is inconclusive.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Message string `json:"message,omitempty"`
}

// RolloutFailure records the stage whose failure stopped the rollout.
type RolloutFailure struct {
	// Stage is the stage that failed.
	Stage string `json:"stage"`
	// Reason is AnalysisFailed, AnalysisInconclusive or FailureConditionMet.
	Reason string `json:"reason"`
	// Action is what the failure did: Hold or Abort.
	Action FailureAction `json:"action"`
	// Message says what failed.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Message string `json:"message,omitempty"`
	// Time is when the stage failed.
	Time metav1.Time `json:"time"`
	// SpecDigest identifies the spec (but spec.suspend) and the restartedAt
	// annotation when the stage failed, as a StageApproval's spec.specDigest
	// does: a hold lasts until they change.
	// +kubebuilder:validation:MaxLength=64
	SpecDigest string `json:"specDigest"`
	// Revision is the revision that was being rolled out (status.updateRevision).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Revision string `json:"revision,omitempty"`
	// RestartedAt is the restartedAt annotation's value when the stage
	// failed: another value restarts the rollout.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	RestartedAt string `json:"restartedAt,omitempty"`
}

// SpecRevision returns the revision the spec asks to roll out:
// spec.revision.name, or "" when the policy has no spec.revision.
func (s *StagedBindingPolicySpec) SpecRevision() string {
	if s.Revision == nil {
		return ""
	}
	return s.Revision.Name
}

// StageNamed returns the stage of the spec with the given name, or nil.
func (s *StagedBindingPolicySpec) StageNamed(name string) *Stage {
	for i := range s.Stages {
		if s.Stages[i].Name == name {
			return &s.Stages[i]
		}
	}
	return nil
}

// StageNamed returns the record of the stage with the given name, or nil.
func (s *StagedBindingPolicyStatus) StageNamed(name string) *StageStatus {
	for i := range s.Stages {
		if s.Stages[i].Name == name {
			return &s.Stages[i]
		}
	}
	return nil
}

// AnalysisNamed returns the record of the analysis with the given name,
// or nil.
func (s *StageStatus) AnalysisNamed(name string) *AnalysisStatus {
	if s == nil {
		return nil
	}
	for i := range s.Analyses {
		if s.Analyses[i].Name == name {
			return &s.Analyses[i]
		}
	}
	return nil
}

// StagedBindingPolicyList is a list of StagedBindingPolicies.
//
// +kubebuilder:object:root=true
type StagedBindingPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the policies.
	Items []StagedBindingPolicy `json:"items"`
}
