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

// Package metrics defines the StagedBindingPolicy controller's Prometheus
// metrics (the Runner's space gauges live in controllers/spaces, the kubeconfig
// Secret gauge in providers/kubeconfig). Every series
// carries a `space` label; per-policy series also carry `policy` (and, for
// the active stage, `stage`), so their number is bounded by the number of
// StagedBindingPolicies and their stages. A space's series are deleted when
// the space is disengaged, a policy's when the policy is deleted.
//
// The metrics are registered with controller-runtime's registry and served
// on the manager's metrics endpoint. docs/metrics.md documents each one.
package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// Label names.
const (
	LabelSpace  = "space"
	LabelPolicy = "policy"
	LabelStage  = "stage"
	LabelPhase  = "phase"
	LabelResult = "result"
)

// Results of a condition evaluation.
const (
	ResultTrue  = "true"
	ResultFalse = "false"
	ResultError = "error"
)

var (
	policies = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stager_policies",
		Help: "StagedBindingPolicies per space by rollout phase (Pending, Progressing, Completed, Blocked, Suspended, Stalled, AwaitingApproval).",
	}, []string{LabelSpace, LabelPhase})

	policyPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stager_policy_phase",
		Help: "Info metric: 1 for the current rollout phase of each policy.",
	}, []string{LabelSpace, LabelPolicy, LabelPhase})

	activeStage = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stager_policy_active_stage",
		Help: "Info metric: 1 for the active stage of each policy, labelled with the stage's name.",
	}, []string{LabelSpace, LabelPolicy, LabelStage})

	activeStageIndex = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stager_policy_active_stage_index",
		Help: "Zero-based index of each policy's active stage in its spec.",
	}, []string{LabelSpace, LabelPolicy})

	stageCount = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stager_policy_stages",
		Help: "Number of stages in each policy's spec.",
	}, []string{LabelSpace, LabelPolicy})

	activeStageStart = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stager_policy_active_stage_start_time_seconds",
		Help: "Unix time at which each policy's active stage started; time() minus it is the time spent in the stage.",
	}, []string{LabelSpace, LabelPolicy})

	progressDeadline = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stager_policy_progress_deadline_time_seconds",
		Help: "Unix time at which each policy's active stage passes its progressDeadline (its startTime plus progressDeadline plus the time suspended); absent for a stage without one, a done stage and a suspended rollout.",
	}, []string{LabelSpace, LabelPolicy})
	awaitingApproval = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stager_policy_awaiting_approval_since_seconds",
		Help: "Unix time since which each policy's active stage awaits approval (its approvalRequestedTime); absent when it does not await approval.",
	}, []string{LabelSpace, LabelPolicy})
	deletionStart = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stager_policy_deletion_start_time_seconds",
		Help: "Unix time at which each policy being deleted was asked to go (its deletionTimestamp); time() minus it is how long the deletion has waited, normally for the finalizers of its BindingPolicies.",
	}, []string{LabelSpace, LabelPolicy})

	transitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stager_stage_transitions_total",
		Help: "Stages completed, by the stage that completed.",
	}, []string{LabelSpace, LabelPolicy, LabelStage})

	stageDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "stager_stage_duration_seconds",
		Help:    "Time from a stage's start to its completion.",
		Buckets: []float64{5, 15, 30, 60, 120, 300, 600, 1800, 3600, 3 * 3600, 12 * 3600, 24 * 3600},
	}, []string{LabelSpace})

	evaluations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stager_condition_evaluations_total",
		Help: "Evaluations of stage conditions, by result (true, false, error).",
	}, []string{LabelSpace, LabelResult})

	evaluationLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "stager_condition_evaluation_duration_seconds",
		Help:    "Time to evaluate a stage condition on one CombinedStatus.",
		Buckets: prometheus.ExponentialBuckets(1e-6, 4, 10),
	}, []string{LabelSpace})

	reconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stager_reconcile_errors_total",
		Help: "Reconciles of a space that ended in an error.",
	}, []string{LabelSpace})
)

// collectors are every metric of the StagedBindingPolicy controller.
var collectors = []prometheus.Collector{policies, policyPhase, activeStage, activeStageIndex, stageCount, activeStageStart,
	progressDeadline, awaitingApproval, deletionStart, transitions, stageDuration, evaluations, evaluationLatency, reconcileErrors}

func init() {
	ctrlmetrics.Registry.MustRegister(collectors...)
}

// Collectors returns the controller's metrics, registered with
// controller-runtime's registry.
func Collectors() []prometheus.Collector {
	return collectors
}

// Space records the metrics of one space.
type Space struct {
	name string

	mu     sync.Mutex
	phases map[string]v1alpha1.RolloutPhase // by policy
	stages map[string]string                // active stage by policy
}

// NewSpace returns the recorder of a space's metrics.
func NewSpace(name string) *Space {
	return &Space{name: name, phases: map[string]v1alpha1.RolloutPhase{}, stages: map[string]string{}}
}

// SpaceEngaged creates the space's counters and histograms at zero, so that
// rate() and increase() see the first evaluation, error or completed stage as
// an increase, and a space without errors shows 0 rather than no data.
func SpaceEngaged(space string) {
	for _, result := range []string{ResultTrue, ResultFalse, ResultError} {
		evaluations.WithLabelValues(space, result)
	}
	reconcileErrors.WithLabelValues(space)
	stageDuration.WithLabelValues(space)
	evaluationLatency.WithLabelValues(space)
}

// SpaceDisengaged deletes every series of the space.
func SpaceDisengaged(space string) {
	labels := prometheus.Labels{LabelSpace: space}
	for _, vec := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{policies, policyPhase, activeStage, activeStageIndex, stageCount, activeStageStart, progressDeadline, awaitingApproval, deletionStart, transitions, stageDuration,
		evaluations, evaluationLatency, reconcileErrors} {
		vec.DeletePartialMatch(labels)
	}
}

// Policy records the state of a policy as its status says.
func (s *Space) Policy(policy *v1alpha1.StagedBindingPolicy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	phase := policy.Status.Phase
	if phase == "" {
		phase = v1alpha1.RolloutPending
	}
	if previous, ok := s.phases[policy.Name]; ok && previous != phase {
		policyPhase.DeleteLabelValues(s.name, policy.Name, string(previous))
	}
	s.phases[policy.Name] = phase
	policyPhase.WithLabelValues(s.name, policy.Name, string(phase)).Set(1)
	s.refreshPhasesLocked()

	stageCount.WithLabelValues(s.name, policy.Name).Set(float64(len(policy.Spec.Stages)))
	if policy.DeletionTimestamp != nil {
		deletionStart.WithLabelValues(s.name, policy.Name).Set(float64(policy.DeletionTimestamp.Unix()))
	} else {
		deletionStart.DeleteLabelValues(s.name, policy.Name)
	}
	active := policy.Status.ActiveStage
	if previous, ok := s.stages[policy.Name]; ok && previous != active {
		activeStage.DeleteLabelValues(s.name, policy.Name, previous)
	}
	progressDeadline.DeleteLabelValues(s.name, policy.Name)
	awaitingApproval.DeleteLabelValues(s.name, policy.Name)
	if active == "" {
		delete(s.stages, policy.Name)
		activeStageIndex.DeleteLabelValues(s.name, policy.Name)
		activeStageStart.DeleteLabelValues(s.name, policy.Name)
		return
	}
	s.stages[policy.Name] = active
	activeStage.WithLabelValues(s.name, policy.Name, active).Set(1)
	for i, st := range policy.Status.Stages {
		if st.Name != active {
			continue
		}
		activeStageIndex.WithLabelValues(s.name, policy.Name).Set(float64(i))
		if st.StartTime != nil {
			activeStageStart.WithLabelValues(s.name, policy.Name).Set(float64(st.StartTime.Unix()))
		}
		if st.ApprovalRequestedTime != nil && st.Phase == v1alpha1.StageAwaitingApproval {
			awaitingApproval.WithLabelValues(s.name, policy.Name).Set(float64(st.ApprovalRequestedTime.Unix()))
		}
		if st.ProgressDeadlineTime != nil && st.Phase == v1alpha1.StageActive && phase != v1alpha1.RolloutSuspended {
			progressDeadline.WithLabelValues(s.name, policy.Name).Set(float64(st.ProgressDeadlineTime.Unix()))
		}
	}
}

// PolicyDeleted deletes the series of a policy.
func (s *Space) PolicyDeleted(policy string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.phases, policy)
	delete(s.stages, policy)
	s.refreshPhasesLocked()
	labels := prometheus.Labels{LabelSpace: s.name, LabelPolicy: policy}
	for _, vec := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{policyPhase, activeStage, activeStageIndex, stageCount, activeStageStart, progressDeadline, awaitingApproval, deletionStart, transitions} {
		vec.DeletePartialMatch(labels)
	}
}

// refreshPhasesLocked sets the per-phase policy counts of the space.
func (s *Space) refreshPhasesLocked() {
	counts := map[v1alpha1.RolloutPhase]int{
		v1alpha1.RolloutPending: 0, v1alpha1.RolloutProgressing: 0, v1alpha1.RolloutCompleted: 0, v1alpha1.RolloutBlocked: 0,
		v1alpha1.RolloutSuspended: 0, v1alpha1.RolloutStalled: 0, v1alpha1.RolloutAwaitingApproval: 0,
	}
	for _, phase := range s.phases {
		counts[phase]++
	}
	for phase, n := range counts {
		policies.WithLabelValues(s.name, string(phase)).Set(float64(n))
	}
}

// StageCompleted records that a stage of a policy completed after the given time.
func (s *Space) StageCompleted(policy, stage string, took time.Duration) {
	transitions.WithLabelValues(s.name, policy, stage).Inc()
	stageDuration.WithLabelValues(s.name).Observe(took.Seconds())
}

// Evaluation records one condition evaluation.
func (s *Space) Evaluation(result string, took time.Duration) {
	evaluations.WithLabelValues(s.name, result).Inc()
	evaluationLatency.WithLabelValues(s.name).Observe(took.Seconds())
}

// ReconcileError records a reconcile that failed.
func (s *Space) ReconcileError() {
	reconcileErrors.WithLabelValues(s.name).Inc()
}
