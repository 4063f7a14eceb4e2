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
// StagedBindingPolicies and their stages. The gauges of a space's policies
// are computed at scrape time from its cache (ServePolicies), so a deleted
// policy's go by themselves; the series of the counters and histograms are
// deleted when the space is disengaged, a policy's when it is deleted.
//
// The metrics are registered with controller-runtime's registry and served
// on the manager's metrics endpoint. docs/metrics.md documents each one.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
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

	regressionChecks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stager_regression_checks_total",
		Help: "Checks of done stages by their regressionWatch, by result (healthy; regressed; inconclusive: an evaluation failed or ran out of the space's budget, or an object is not reported on).",
	}, []string{LabelSpace, LabelResult})

	celWorkerStops = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stager_cel_worker_stops_total",
		Help: "Worker processes of CEL evaluations that ended during an evaluation, by reason: timeout (killed at the deadline), memory (out of the memory a worker may use), exited (anything else).",
	}, []string{LabelReason})
)

// collectors are every metric of the StagedBindingPolicy controller.
var collectors = []prometheus.Collector{servedPolicies, transitions, stageDuration, evaluations,
	evaluationLatency, analysisQueries, reconcileErrors, fenceLapsedWrites, celWorkerStops, regressionChecks}

func init() {
	ctrlmetrics.Registry.MustRegister(collectors...)
}

// Collectors returns the controller's metrics, registered with
// controller-runtime's registry.
func Collectors() []prometheus.Collector {
	return collectors
}

// Space records the event-driven metrics of one space: its counters and
// histograms. The per-policy gauges are computed at scrape time from the
// space's cache (ServePolicies).
type Space struct {
	name string
}

// NewSpace returns the recorder of a space's metrics.
func NewSpace(name string) *Space {
	return &Space{name: name}
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
	for _, result := range []string{RegressionHealthy, RegressionRegressed, RegressionInconclusive} {
		regressionChecks.WithLabelValues(space, result)
	}
}

// SpaceDisengaged deletes every series of the space's counters and
// histograms. Its gauges go with its controller (ServePolicies).
func SpaceDisengaged(space string) {
	labels := prometheus.Labels{LabelSpace: space}
	for _, vec := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{transitions, stageDuration, evaluations, evaluationLatency, analysisQueries, reconcileErrors, fenceLapsedWrites, promotions, regressionChecks,
		policyStageDuration, announcements} {
		vec.DeletePartialMatch(labels)
	}
}

// PolicyDeleted deletes the series of a policy's counters: its gauges go
// from the next scrape on by themselves, as the policy leaves the cache.
func (s *Space) PolicyDeleted(policy string) {
	transitions.DeletePartialMatch(prometheus.Labels{LabelSpace: s.name, LabelPolicy: policy})
	promotions.DeletePartialMatch(prometheus.Labels{LabelSpace: s.name, LabelPolicy: policy})
	policyStageDuration.DeletePartialMatch(prometheus.Labels{LabelSpace: s.name, LabelPolicy: policy})
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

// Results of a regression check (rollout.RegressionCheck).
const (
	RegressionHealthy      = "healthy"
	RegressionRegressed    = "regressed"
	RegressionInconclusive = "inconclusive"
)

// RegressionCheck records one check of a done stage by its result:
// RegressionHealthy, RegressionRegressed or RegressionInconclusive.
func (s *Space) RegressionCheck(result string) {
	regressionChecks.WithLabelValues(s.name, result).Inc()
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
