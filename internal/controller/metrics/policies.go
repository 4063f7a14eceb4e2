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

package metrics

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// The per-policy gauges: pure functions of a policy's object, computed at
// scrape time from the space's cache (policyCollector).
var (
	policiesDesc = prometheus.NewDesc("stager_policies",
		"StagedBindingPolicies per space by rollout phase (Pending, Progressing, Completed, Blocked, Suspended, Stalled, AwaitingApproval, Aborted).",
		[]string{LabelSpace, LabelPhase}, nil)
	policyPhaseDesc = prometheus.NewDesc("stager_policy_phase",
		"Info metric: 1 for the current rollout phase of each policy.",
		[]string{LabelSpace, LabelPolicy, LabelPhase}, nil)
	activeStageDesc = prometheus.NewDesc("stager_policy_active_stage",
		"Info metric: 1 for the active stage of each policy, labelled with the stage's name.",
		[]string{LabelSpace, LabelPolicy, LabelStage}, nil)
	activeStageIndexDesc = prometheus.NewDesc("stager_policy_active_stage_index",
		"Zero-based index of each policy's active stage in its spec.",
		[]string{LabelSpace, LabelPolicy}, nil)
	stageCountDesc = prometheus.NewDesc("stager_policy_stages",
		"Number of stages in each policy's spec.",
		[]string{LabelSpace, LabelPolicy}, nil)
	activeStageStartDesc = prometheus.NewDesc("stager_policy_active_stage_start_time_seconds",
		"Unix time at which each policy's active stage started; time() minus it is the time spent in the stage.",
		[]string{LabelSpace, LabelPolicy}, nil)
	progressDeadlineDesc = prometheus.NewDesc("stager_policy_progress_deadline_time_seconds",
		"Unix time at which each policy's active stage passes its progressDeadline (its startTime plus progressDeadline plus the time suspended); absent for a stage without one, a done stage and a suspended rollout.",
		[]string{LabelSpace, LabelPolicy}, nil)
	awaitingApprovalDesc = prometheus.NewDesc("stager_policy_awaiting_approval_since_seconds",
		"Unix time since which each policy's active stage awaits approval (its approvalRequestedTime); absent when it does not await approval.",
		[]string{LabelSpace, LabelPolicy}, nil)
	deletionStartDesc = prometheus.NewDesc("stager_policy_deletion_start_time_seconds",
		"Unix time at which each policy being deleted was asked to go (its deletionTimestamp); time() minus it is how long the deletion has waited, normally for the finalizers of its BindingPolicies.",
		[]string{LabelSpace, LabelPolicy}, nil)
	stageRevisionDesc = prometheus.NewDesc("stager_stage_revision",
		"Info metric: 1 for each revision each stage of a policy with spec.revision runs: the one its record keeps and, for the active stage, the one being rolled out.",
		[]string{LabelSpace, LabelPolicy, LabelStage, LabelRevision}, nil)
	stageClustersDesc = prometheus.NewDesc("stager_stage_clusters",
		"Clusters of each stage placed in batches (maxConcurrency), by state (ToApply, Progressing, Succeeded, Failed, TimedOut), as the stage's record last counted them.",
		[]string{LabelSpace, LabelPolicy, LabelStage, LabelState}, nil)
	stageAnalysesDesc = prometheus.NewDesc("stager_stage_analysis_measurements",
		"Measurements of each analysis of each stage, by verdict (Successful, Failed, Inconclusive), as the stage's record counts them.",
		[]string{LabelSpace, LabelPolicy, LabelStage, LabelAnalysis, LabelPhase}, nil)
)

// stageRegressedDesc is the regression watch's gauge (docs/proposals/regression.md).
var stageRegressedDesc = prometheus.NewDesc("stager_stage_regressed",
	"1 for each done stage whose regressionWatch found it unhealthy (its record's regressed), 0 for one it last found healthy; absent for a stage not checked.",
	[]string{LabelSpace, LabelPolicy, LabelStage}, nil)

// policyDescs are the gauges the policyCollector emits.
var policyDescs = []*prometheus.Desc{policiesDesc, policyPhaseDesc, activeStageDesc, activeStageIndexDesc, stageCountDesc,
	activeStageStartDesc, progressDeadlineDesc, awaitingApprovalDesc, deletionStartDesc, stageRevisionDesc, stageClustersDesc, stageAnalysesDesc,
	waitingDesc, nextWindowDesc, stageRegressedDesc}

// PolicyLister lists a space's StagedBindingPolicies, from its cache: it
// runs at every scrape, so it must not ask the space's API server. The
// policies it returns are read, never changed.
type PolicyLister func(ctx context.Context) ([]v1alpha1.StagedBindingPolicy, error)

// errNotSynced reports a cache that does not hold the space's policies yet.
var errNotSynced = errors.New("the StagedBindingPolicies' cache has not synced yet")

// CachedPolicies lists the StagedBindingPolicies of a space's cache, once it
// has synced: an unsynced cache would block the scrape until it syncs.
func CachedPolicies(c cache.Cache) PolicyLister {
	return func(ctx context.Context) ([]v1alpha1.StagedBindingPolicy, error) {
		informer, err := c.GetInformer(ctx, &v1alpha1.StagedBindingPolicy{}, cache.BlockUntilSynced(false))
		if err != nil {
			return nil, fmt.Errorf("getting the StagedBindingPolicies' informer: %w", err)
		}
		if !informer.HasSynced() {
			return nil, errNotSynced
		}
		var list v1alpha1.StagedBindingPolicyList
		// The scrape only reads them: no copy of every policy per scrape.
		if err := c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing the StagedBindingPolicies: %w", err)
		}
		return list.Items, nil
	}
}

// listTimeout bounds one space's listing in a scrape.
const listTimeout = 5 * time.Second

// policyCollector emits the per-policy gauges of every served space at
// scrape time, from what its PolicyLister returns (Argo Rollouts' way): a
// policy gone from the cache has no series at the next scrape, and there
// is no per-run bookkeeping to keep in line.
type policyCollector struct {
	mu     sync.Mutex
	spaces map[string]*servedSpace
}

// servedSpace is one registration of a space (ServePolicies).
type servedSpace struct {
	list PolicyLister
}

// servedPolicies is the collector of every space's gauges, registered with
// controller-runtime's registry.
var servedPolicies = &policyCollector{spaces: map[string]*servedSpace{}}

// ServePolicies has the gauges of space's policies computed at every scrape
// from list, until stop is called. A later call for the same space replaces
// this one, and this one's stop then does nothing: a space's controller
// registers as it starts, and its successor may start before stop runs.
func ServePolicies(space string, list PolicyLister) (stop func()) {
	return servedPolicies.serve(space, list)
}

func (c *policyCollector) serve(space string, list PolicyLister) func() {
	entry := &servedSpace{list: list}
	c.mu.Lock()
	c.spaces[space] = entry
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.spaces[space] == entry {
			delete(c.spaces, space)
		}
	}
}

// Describe sends the gauges' descriptions.
func (c *policyCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range policyDescs {
		ch <- d
	}
}

// Collect lists every served space's policies and sends their gauges. A
// space whose listing fails (its cache has not synced) has none in this
// scrape.
func (c *policyCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	spaces := make(map[string]PolicyLister, len(c.spaces))
	for name, s := range c.spaces {
		spaces[name] = s.list
	}
	c.mu.Unlock()
	for space, list := range spaces {
		ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
		items, err := list(ctx)
		cancel()
		if err != nil {
			if !errors.Is(err, errNotSynced) {
				ctrllog.Log.WithName("metrics").Error(err, "Could not list a space's policies for their gauges", "space", space)
			}
			continue
		}
		collectSpace(ch, space, items)
	}
}

// collectSpace sends the gauges of one space's policies: every phase of
// stager_policies, at 0 where no policy is in it, and each policy's series.
func collectSpace(ch chan<- prometheus.Metric, space string, items []v1alpha1.StagedBindingPolicy) {
	phases := make(map[v1alpha1.RolloutPhase]int, len(phasesCounted))
	for _, p := range phasesCounted {
		phases[p] = 0
	}
	for i := range items {
		series := seriesOf(&items[i])
		phases[series.phase]++
		series.collect(ch, space, items[i].Name)
	}
	for phase, n := range phases {
		send(ch, policiesDesc, float64(n), space, string(phase))
	}
}

// collect sends the series of one policy.
func (s policySeries) collect(ch chan<- prometheus.Metric, space, policy string) {
	send(ch, policyPhaseDesc, 1, space, policy, string(s.phase))
	send(ch, stageCountDesc, float64(s.stages), space, policy)
	if s.activeStage != "" {
		send(ch, activeStageDesc, 1, space, policy, s.activeStage)
	}
	for _, g := range []struct {
		desc *prometheus.Desc
		gauge
	}{
		{deletionStartDesc, s.deletionStart}, {activeStageIndexDesc, s.activeStageIndex}, {activeStageStartDesc, s.activeStageStart},
		{progressDeadlineDesc, s.progressDeadline}, {awaitingApprovalDesc, s.awaitingApproval}, {nextWindowDesc, s.nextWindow},
	} {
		if g.set {
			send(ch, g.desc, g.value, space, policy)
		}
	}
	for _, family := range []struct {
		desc   *prometheus.Desc
		values []labelled
	}{{stageRevisionDesc, s.stageRevisions}, {stageClustersDesc, s.stageClusters}, {stageAnalysesDesc, s.stageAnalyses}, {waitingDesc, s.waiting},
		{stageRegressedDesc, s.stageRegressed}} {
		for _, v := range lastOfEach(family.values) {
			send(ch, family.desc, v.value, append([]string{space, policy}, v.labels...)...)
		}
	}
}

// send sends one series. Label values come from the API server's JSON,
// valid UTF-8; one that is not is left out rather than failing the scrape.
func send(ch chan<- prometheus.Metric, desc *prometheus.Desc, value float64, labels ...string) {
	m, err := prometheus.NewConstMetric(desc, prometheus.GaugeValue, value, labels...)
	if err != nil {
		ctrllog.Log.WithName("metrics").V(1).Info("Series left out", "metric", desc.String(), "error", err.Error())
		return
	}
	ch <- m
}

// labelled is the value of a series under its labels past space and policy.
type labelled struct {
	labels []string
	value  float64
}

// lastOfEach keeps, of the values with the same labels, the last one: a
// status that names a stage (or an analysis) twice would otherwise send two
// series with the same labels, which fails the whole scrape.
func lastOfEach(values []labelled) []labelled {
	if len(values) < 2 {
		return values
	}
	at := make(map[string]int, len(values))
	out := make([]labelled, 0, len(values))
	for _, v := range values {
		key := strings.Join(v.labels, "\xff")
		if i, ok := at[key]; ok {
			out[i].value = v.value
			continue
		}
		at[key] = len(out)
		out = append(out, v)
	}
	return slices.Clip(out)
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
	// stageRevisions are the revisions the stages run: stage, revision.
	stageRevisions []labelled
	// stageClusters are the counts of the clusters of the stages placed in
	// batches: stage, state.
	stageClusters []labelled
	// stageAnalyses are the counts of the measurements of the stages'
	// analyses: stage, analysis, phase.
	stageAnalyses []labelled
	// waiting are what the policy waits for: reason (waiting.go).
	waiting []labelled
	// nextWindow is when the window a stage waits for opens.
	nextWindow gauge
	// stageRegressed are the verdicts of the stages' regression checks: stage.
	stageRegressed []labelled
}

// gauge is the value of a series, or no series when not set.
type gauge struct {
	set   bool
	value float64
}

// at returns the gauge of a value.
func at(value float64) gauge { return gauge{set: true, value: value} }

// phasesCounted are the phases stager_policies counts, each with a series,
// at 0 when no policy is in it.
var phasesCounted = []v1alpha1.RolloutPhase{v1alpha1.RolloutPending, v1alpha1.RolloutProgressing, v1alpha1.RolloutCompleted,
	v1alpha1.RolloutBlocked, v1alpha1.RolloutSuspended, v1alpha1.RolloutStalled, v1alpha1.RolloutAwaitingApproval, v1alpha1.RolloutAborted}

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
	series.waiting, series.nextWindow = waitingOf(policy)
	series.stageRegressed = stageRegressedOf(policy)
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

// stageRevisionsOf returns the revisions the stages of a policy run, in the
// order of the status.
func stageRevisionsOf(policy *v1alpha1.StagedBindingPolicy) []labelled {
	var out []labelled
	for _, r := range policy.Status.Stages {
		if r.Revision != "" {
			out = append(out, labelled{labels: []string{r.Name, r.Revision}, value: 1})
		}
		if r.Phase == v1alpha1.StageActive && policy.Status.UpdateRevision != "" && r.Revision != policy.Status.UpdateRevision {
			out = append(out, labelled{labels: []string{r.Name, policy.Status.UpdateRevision}, value: 1})
		}
	}
	return out
}

// stageClustersOf returns the counts of the clusters of every stage placed
// in batches, in the order of the status.
func stageClustersOf(policy *v1alpha1.StagedBindingPolicy) []labelled {
	var out []labelled
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
			out = append(out, labelled{labels: []string{r.Name, string(n.state)}, value: float64(max(n.count, 0))})
		}
	}
	return out
}

// stageAnalysesOf returns the counts of the measurements of every analysis
// of every stage, in the order of the status.
func stageAnalysesOf(policy *v1alpha1.StagedBindingPolicy) []labelled {
	var out []labelled
	for _, r := range policy.Status.Stages {
		for _, a := range r.Analyses {
			for _, n := range []struct {
				phase v1alpha1.MeasurementPhase
				count int32
			}{{v1alpha1.MeasurementSuccessful, a.Successful}, {v1alpha1.MeasurementFailed, a.Failed}, {v1alpha1.MeasurementInconclusive, a.Inconclusive}} {
				out = append(out, labelled{labels: []string{r.Name, a.Name, string(n.phase)}, value: float64(max(n.count, 0))})
			}
		}
	}
	return out
}

// stageRegressedOf returns 1 for every stage whose record says regressed,
// 0 for every other stage a regression check has judged, in the order of
// the status.
func stageRegressedOf(policy *v1alpha1.StagedBindingPolicy) []labelled {
	var out []labelled
	for _, r := range policy.Status.Stages {
		switch {
		case r.Regressed != nil:
			out = append(out, labelled{labels: []string{r.Name}, value: 1})
		case r.LastRegressionCheckTime != nil:
			out = append(out, labelled{labels: []string{r.Name}, value: 0})
		}
	}
	return out
}
