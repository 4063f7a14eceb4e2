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
// metrics (the Runner's space gauges live in internal/controller/spaces, the kubeconfig
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
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// Label names.
const (
	LabelSpace    = "space"
	LabelPolicy   = "policy"
	LabelStage    = "stage"
	LabelPhase    = "phase"
	LabelResult   = "result"
	LabelRevision = "revision"
	LabelState    = "state"
	LabelAnalysis = "analysis"
	LabelReason   = "reason"
)

// Results of an analysis query.
const (
	QueryAnswered    = "answered"
	QueryFailed      = "failed"
	QueryRefused     = "refused"
	QueryRateLimited = "rate_limited"
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
		Help: "StagedBindingPolicies per space by rollout phase (Pending, Progressing, Completed, Blocked, Suspended, Stalled, AwaitingApproval, Aborted).",
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

	stageRevision = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stager_stage_revision",
		Help: "Info metric: 1 for each revision each stage of a policy with spec.revision runs: the one its record keeps and, for the active stage, the one being rolled out.",
	}, []string{LabelSpace, LabelPolicy, LabelStage, LabelRevision})

	stageClusters = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stager_stage_clusters",
		Help: "Clusters of each stage placed in batches (maxConcurrency), by state (ToApply, Progressing, Succeeded, Failed, TimedOut), as the stage's record last counted them.",
	}, []string{LabelSpace, LabelPolicy, LabelStage, LabelState})

	stageAnalyses = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stager_stage_analysis_measurements",
		Help: "Measurements of each analysis of each stage, by verdict (Successful, Failed, Inconclusive), as the stage's record counts them.",
	}, []string{LabelSpace, LabelPolicy, LabelStage, LabelAnalysis, LabelPhase})

	analysisQueries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stager_analysis_queries_total",
		Help: "Queries of analyses, by result (answered; failed: the provider could not be reached, or answered an error, too slowly or too much; refused: the provider does not exist, does not serve the space, or its address or Secrets are refused; rate_limited: over the space's bound, not sent, taken again).",
	}, []string{LabelSpace, LabelResult})

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

	fenceLapsedWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stager_fence_lapsed_writes_total",
		Help: "Changes to a space that a sharded replica did not make, or does not know it made, because its tenure of the space's fence ended first.",
	}, []string{LabelSpace})

	celWorkerStops = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stager_cel_worker_stops_total",
		Help: "Worker processes of CEL evaluations that ended during an evaluation, by reason: timeout (killed at the deadline), memory (out of the memory a worker may use), exited (anything else).",
	}, []string{LabelReason})
)

// collectors are every metric of the StagedBindingPolicy controller.
var collectors = []prometheus.Collector{policies, policyPhase, activeStage, activeStageIndex, stageCount, activeStageStart,
	progressDeadline, awaitingApproval, deletionStart, stageRevision, stageClusters, stageAnalyses, transitions, stageDuration, evaluations,
	evaluationLatency, analysisQueries, reconcileErrors, fenceLapsedWrites, celWorkerStops}

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

	mu sync.Mutex
	// recorded is what Policy last recorded of each policy.
	recorded map[string]policySeries
	// phases counts the policies of recorded by phase.
	phases map[v1alpha1.RolloutPhase]int
}

// policySeries are the values of a policy's series; an unset gauge has no
// series.
type policySeries struct {
	phase            v1alpha1.RolloutPhase
	stages           int
	activeStage      string
	deletionStart    gauge
	activeStageIndex gauge
	activeStageStart gauge
	progressDeadline gauge
	awaitingApproval gauge
	// stageRevisions are the revisions the stages run, "<stage>=<revision>"
	// joined by spaces: a string, so that the series stay comparable.
	stageRevisions string
	// stageClusters are the counts of the clusters of the stages placed in
	// batches, "<stage>/<state>=<count>" joined by spaces.
	stageClusters string
	// stageAnalyses are the counts of the measurements of the stages'
	// analyses, "<stage>/<analysis>/<phase>=<count>" joined by spaces.
	stageAnalyses string
}

// gauge is the value of a series, or no series when not set.
type gauge struct {
	set   bool
	value float64
}

// at returns the gauge of a value.
func at(value float64) gauge { return gauge{set: true, value: value} }

// phasesCounted are the phases stager_policies counts, each at 0 from the
// first policy on.
var phasesCounted = []v1alpha1.RolloutPhase{v1alpha1.RolloutPending, v1alpha1.RolloutProgressing, v1alpha1.RolloutCompleted,
	v1alpha1.RolloutBlocked, v1alpha1.RolloutSuspended, v1alpha1.RolloutStalled, v1alpha1.RolloutAwaitingApproval, v1alpha1.RolloutAborted}

// NewSpace returns the recorder of a space's metrics.
func NewSpace(name string) *Space {
	return &Space{name: name, recorded: map[string]policySeries{}, phases: map[v1alpha1.RolloutPhase]int{}}
}

// SpaceEngaged creates the space's counters and histograms at zero, so that
// rate() and increase() see the first evaluation, error or completed stage as
// an increase, and a space without errors shows 0 rather than no data.
func SpaceEngaged(space string) {
	for _, result := range []string{ResultTrue, ResultFalse, ResultError} {
		evaluations.WithLabelValues(space, result)
	}
	reconcileErrors.WithLabelValues(space)
	fenceLapsedWrites.WithLabelValues(space)
	for _, result := range []string{QueryAnswered, QueryFailed, QueryRefused, QueryRateLimited} {
		analysisQueries.WithLabelValues(space, result)
	}
	stageDuration.WithLabelValues(space)
	evaluationLatency.WithLabelValues(space)
}

// SpaceDisengaged deletes every series of the space.
func SpaceDisengaged(space string) {
	labels := prometheus.Labels{LabelSpace: space}
	for _, vec := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{policies, policyPhase, activeStage, activeStageIndex, stageCount, activeStageStart, progressDeadline, awaitingApproval, deletionStart, stageRevision,
		stageClusters, stageAnalyses, transitions, stageDuration,
		evaluations, evaluationLatency, analysisQueries, reconcileErrors, fenceLapsedWrites} {
		vec.DeletePartialMatch(labels)
	}
}

// seriesOf returns the values of a policy's series as its status says.
func seriesOf(policy *v1alpha1.StagedBindingPolicy) policySeries {
	series := policySeries{phase: policy.Status.Phase, stages: len(policy.Spec.Stages), activeStage: policy.Status.ActiveStage}
	if series.phase == "" {
		series.phase = v1alpha1.RolloutPending
	}
	if policy.DeletionTimestamp != nil {
		series.deletionStart = at(float64(policy.DeletionTimestamp.Unix()))
	}
	series.stageRevisions = stageRevisionsOf(policy)
	series.stageClusters = stageClustersOf(policy)
	series.stageAnalyses = stageAnalysesOf(policy)
	if series.activeStage == "" {
		return series
	}
	for i, st := range policy.Status.Stages {
		if st.Name != series.activeStage {
			continue
		}
		series.activeStageIndex = at(float64(i))
		if st.StartTime != nil {
			series.activeStageStart = at(float64(st.StartTime.Unix()))
		}
		if st.ApprovalRequestedTime != nil && st.Phase == v1alpha1.StageAwaitingApproval {
			series.awaitingApproval = at(float64(st.ApprovalRequestedTime.Unix()))
		}
		if st.ProgressDeadlineTime != nil && st.Phase == v1alpha1.StageActive && series.phase != v1alpha1.RolloutSuspended {
			series.progressDeadline = at(float64(st.ProgressDeadlineTime.Unix()))
		}
	}
	return series
}

// stageRevisionsOf returns the revisions the stages of a policy run,
// "<stage>=<revision>" joined by spaces, in the order of the status.
func stageRevisionsOf(policy *v1alpha1.StagedBindingPolicy) string {
	var pairs []string
	for _, r := range policy.Status.Stages {
		if r.Revision != "" {
			pairs = append(pairs, r.Name+"="+r.Revision)
		}
		if r.Phase == v1alpha1.StageActive && policy.Status.UpdateRevision != "" && r.Revision != policy.Status.UpdateRevision {
			pairs = append(pairs, r.Name+"="+policy.Status.UpdateRevision)
		}
	}
	return strings.Join(pairs, " ")
}

// stageClustersOf returns the counts of the clusters of every stage
// placed in batches, "<stage>/<state>=<count>" joined by spaces, in the
// order of the status.
func stageClustersOf(policy *v1alpha1.StagedBindingPolicy) string {
	var pairs []string
	for _, r := range policy.Status.Stages {
		c := r.Clusters
		if c == nil {
			continue
		}
		for _, n := range []struct {
			state v1alpha1.ClusterState
			count int32
		}{
			{v1alpha1.ClusterToApply, c.ToApply()}, {v1alpha1.ClusterProgressing, c.Progressing()},
			{v1alpha1.ClusterSucceeded, c.Succeeded}, {v1alpha1.ClusterFailed, c.Failed}, {v1alpha1.ClusterTimedOut, c.TimedOut},
		} {
			pairs = append(pairs, fmt.Sprintf("%s/%s=%d", r.Name, n.state, max(n.count, 0)))
		}
	}
	return strings.Join(pairs, " ")
}

// stageAnalysesOf returns the counts of the measurements of every
// analysis of every stage, "<stage>/<analysis>/<phase>=<count>" joined by
// spaces, in the order of the status.
func stageAnalysesOf(policy *v1alpha1.StagedBindingPolicy) string {
	var pairs []string
	for _, r := range policy.Status.Stages {
		for _, a := range r.Analyses {
			for _, n := range []struct {
				phase v1alpha1.MeasurementPhase
				count int32
			}{{v1alpha1.MeasurementSuccessful, a.Successful}, {v1alpha1.MeasurementFailed, a.Failed}, {v1alpha1.MeasurementInconclusive, a.Inconclusive}} {
				pairs = append(pairs, fmt.Sprintf("%s/%s/%s=%d", r.Name, a.Name, n.phase, max(n.count, 0)))
			}
		}
	}
	return strings.Join(pairs, " ")
}

// Policy records the state of a policy as its status says. It changes only
// the series whose values changed since the policy's last record: most runs
// change none, and every change takes a lock that the metrics of every
// space share.
func (s *Space) Policy(policy *v1alpha1.StagedBindingPolicy) {
	series := seriesOf(policy)
	s.mu.Lock()
	defer s.mu.Unlock()
	before, known := s.recorded[policy.Name]
	if known && before == series {
		return
	}
	s.recorded[policy.Name] = series
	name := policy.Name
	if !known || before.phase != series.phase {
		if known {
			policyPhase.DeleteLabelValues(s.name, name, string(before.phase))
			s.countPhaseLocked(before.phase, -1)
		}
		policyPhase.WithLabelValues(s.name, name, string(series.phase)).Set(1)
		s.countPhaseLocked(series.phase, 1)
	}
	if !known || before.stages != series.stages {
		stageCount.WithLabelValues(s.name, name).Set(float64(series.stages))
	}
	if !known || before.activeStage != series.activeStage {
		if known && before.activeStage != "" {
			activeStage.DeleteLabelValues(s.name, name, before.activeStage)
		}
		if series.activeStage != "" {
			activeStage.WithLabelValues(s.name, name, series.activeStage).Set(1)
		}
	}
	if !known || before.stageRevisions != series.stageRevisions {
		if known && before.stageRevisions != "" {
			stageRevision.DeletePartialMatch(prometheus.Labels{LabelSpace: s.name, LabelPolicy: name})
		}
		for _, pair := range strings.Fields(series.stageRevisions) {
			stage, revision, _ := strings.Cut(pair, "=")
			stageRevision.WithLabelValues(s.name, name, stage, revision).Set(1)
		}
	}
	if !known || before.stageClusters != series.stageClusters {
		if known && before.stageClusters != "" {
			stageClusters.DeletePartialMatch(prometheus.Labels{LabelSpace: s.name, LabelPolicy: name})
		}
		for _, pair := range strings.Fields(series.stageClusters) {
			key, count, _ := strings.Cut(pair, "=")
			stage, state, _ := strings.Cut(key, "/")
			n, _ := strconv.Atoi(count)
			stageClusters.WithLabelValues(s.name, name, stage, state).Set(float64(n))
		}
	}
	if !known || before.stageAnalyses != series.stageAnalyses {
		if known && before.stageAnalyses != "" {
			stageAnalyses.DeletePartialMatch(prometheus.Labels{LabelSpace: s.name, LabelPolicy: name})
		}
		for _, pair := range strings.Fields(series.stageAnalyses) {
			key, count, _ := strings.Cut(pair, "=")
			parts := strings.SplitN(key, "/", 3)
			n, _ := strconv.Atoi(count)
			stageAnalyses.WithLabelValues(s.name, name, parts[0], parts[1], parts[2]).Set(float64(n))
		}
	}
	for _, g := range []struct {
		vec            *prometheus.GaugeVec
		before, series gauge
	}{
		{deletionStart, before.deletionStart, series.deletionStart},
		{activeStageIndex, before.activeStageIndex, series.activeStageIndex},
		{activeStageStart, before.activeStageStart, series.activeStageStart},
		{progressDeadline, before.progressDeadline, series.progressDeadline},
		{awaitingApproval, before.awaitingApproval, series.awaitingApproval},
	} {
		switch {
		case known && g.before == g.series:
		case g.series.set:
			g.vec.WithLabelValues(s.name, name).Set(g.series.value)
		case !known || g.before.set:
			g.vec.DeleteLabelValues(s.name, name)
		}
	}
}

// countPhaseLocked adds delta to the policies of a phase. The first count
// sets every phase's series, at 0 where no policy is in it.
func (s *Space) countPhaseLocked(phase v1alpha1.RolloutPhase, delta int) {
	if len(s.phases) == 0 {
		for _, p := range phasesCounted {
			s.phases[p] = 0
			policies.WithLabelValues(s.name, string(p)).Set(0)
		}
	}
	s.phases[phase] += delta
	policies.WithLabelValues(s.name, string(phase)).Set(float64(s.phases[phase]))
}

// PolicyDeleted deletes the series of a policy.
func (s *Space) PolicyDeleted(policy string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if before, known := s.recorded[policy]; known {
		delete(s.recorded, policy)
		s.countPhaseLocked(before.phase, -1)
	}
	labels := prometheus.Labels{LabelSpace: s.name, LabelPolicy: policy}
	for _, vec := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{policyPhase, activeStage, activeStageIndex, stageCount, activeStageStart, progressDeadline, awaitingApproval, deletionStart,
		stageRevision, stageClusters, stageAnalyses, transitions} {
		vec.DeletePartialMatch(labels)
	}
}

// AnalysisQuery records one query of an analysis by its result:
// QueryAnswered, QueryFailed, QueryRefused or QueryRateLimited.
func (s *Space) AnalysisQuery(result string) {
	analysisQueries.WithLabelValues(s.name, result).Inc()
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

// FenceLapsed records a change not made, or not known to be, because the
// replica's tenure of the space's fence ended first.
func (s *Space) FenceLapsed() {
	fenceLapsedWrites.WithLabelValues(s.name).Inc()
}

// CELWorkerStopped records a CEL evaluation's worker process that ended
// during an evaluation, for why ("timeout", "memory" or "exited"). The
// workers serve every space, so the series has no space label.
func CELWorkerStopped(why string) {
	celWorkerStops.WithLabelValues(why).Inc()
}

// ReconcileError records a reconcile that failed.
func (s *Space) ReconcileError() {
	reconcileErrors.WithLabelValues(s.name).Inc()
}
