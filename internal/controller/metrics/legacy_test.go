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
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// legacyVecs are the gauges of a legacySpace.
type legacyVecs struct {
	policies, policyPhase, activeStage, activeStageIndex, stageCount, activeStageStart, progressDeadline,
	awaitingApproval, deletionStart, stageRevision, stageClusters, stageAnalyses *prometheus.GaugeVec
}

// newLegacySpace returns the bookkeeping of space, its gauges registered with reg.
func newLegacySpace(name string, reg prometheus.Registerer) *legacySpace {
	v := legacyVecs{
		policies: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stager_policies",
			Help: "StagedBindingPolicies per space by rollout phase (Pending, Progressing, Completed, Blocked, Suspended, Stalled, AwaitingApproval, Aborted).",
		}, []string{LabelSpace, LabelPhase}),
		policyPhase: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stager_policy_phase",
			Help: "Info metric: 1 for the current rollout phase of each policy.",
		}, []string{LabelSpace, LabelPolicy, LabelPhase}),
		activeStage: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stager_policy_active_stage",
			Help: "Info metric: 1 for the active stage of each policy, labelled with the stage's name.",
		}, []string{LabelSpace, LabelPolicy, LabelStage}),
		activeStageIndex: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stager_policy_active_stage_index",
			Help: "Zero-based index of each policy's active stage in its spec.",
		}, []string{LabelSpace, LabelPolicy}),
		stageCount: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stager_policy_stages",
			Help: "Number of stages in each policy's spec.",
		}, []string{LabelSpace, LabelPolicy}),
		activeStageStart: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stager_policy_active_stage_start_time_seconds",
			Help: "Unix time at which each policy's active stage started; time() minus it is the time spent in the stage.",
		}, []string{LabelSpace, LabelPolicy}),
		progressDeadline: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stager_policy_progress_deadline_time_seconds",
			Help: "Unix time at which each policy's active stage passes its progressDeadline (its startTime plus progressDeadline plus the time suspended); absent for a stage without one, a done stage and a suspended rollout.",
		}, []string{LabelSpace, LabelPolicy}),
		awaitingApproval: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stager_policy_awaiting_approval_since_seconds",
			Help: "Unix time since which each policy's active stage awaits approval (its approvalRequestedTime); absent when it does not await approval.",
		}, []string{LabelSpace, LabelPolicy}),
		deletionStart: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stager_policy_deletion_start_time_seconds",
			Help: "Unix time at which each policy being deleted was asked to go (its deletionTimestamp); time() minus it is how long the deletion has waited, normally for the finalizers of its BindingPolicies.",
		}, []string{LabelSpace, LabelPolicy}),
		stageRevision: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stager_stage_revision",
			Help: "Info metric: 1 for each revision each stage of a policy with spec.revision runs: the one its record keeps and, for the active stage, the one being rolled out.",
		}, []string{LabelSpace, LabelPolicy, LabelStage, LabelRevision}),
		stageClusters: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stager_stage_clusters",
			Help: "Clusters of each stage placed in batches (maxConcurrency), by state (ToApply, Progressing, Succeeded, Failed, TimedOut), as the stage's record last counted them.",
		}, []string{LabelSpace, LabelPolicy, LabelStage, LabelState}),
		stageAnalyses: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stager_stage_analysis_measurements",
			Help: "Measurements of each analysis of each stage, by verdict (Successful, Failed, Inconclusive), as the stage's record counts them.",
		}, []string{LabelSpace, LabelPolicy, LabelStage, LabelAnalysis, LabelPhase}),
	}
	reg.MustRegister(v.policies, v.policyPhase, v.activeStage, v.activeStageIndex, v.stageCount, v.activeStageStart, v.progressDeadline,
		v.awaitingApproval, v.deletionStart, v.stageRevision, v.stageClusters, v.stageAnalyses)
	return &legacySpace{name: name, vecs: v, recorded: map[string]legacySeries{}, phases: map[v1alpha1.RolloutPhase]int{}}
}

// legacySpace is the per-run bookkeeping of the policy gauges that the
// policyCollector replaced, kept to check that the collector exports what it
// did: the reconciler recorded each policy it ran on (Policy) and its
// deletion (PolicyDeleted).
type legacySpace struct {
	name string
	vecs legacyVecs

	mu sync.Mutex
	// recorded is what Policy last recorded of each policy.
	recorded map[string]legacySeries
	// phases counts the policies of recorded by phase.
	phases map[v1alpha1.RolloutPhase]int
}

// legacySeries are the values of a policy's series; an unset gauge has no
// series.
type legacySeries struct {
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

// legacySeriesOf returns the values of a policy's series as its status says.
func legacySeriesOf(policy *v1alpha1.StagedBindingPolicy) legacySeries {
	series := legacySeries{phase: policy.Status.Phase, stages: len(policy.Spec.Stages), activeStage: policy.Status.ActiveStage}
	if series.phase == "" {
		series.phase = v1alpha1.RolloutPending
	}
	if policy.DeletionTimestamp != nil {
		series.deletionStart = at(float64(policy.DeletionTimestamp.Unix()))
	}
	series.stageRevisions = legacyStageRevisionsOf(policy)
	series.stageClusters = legacyStageClustersOf(policy)
	series.stageAnalyses = legacyStageAnalysesOf(policy)
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

// legacyStageRevisionsOf returns the revisions the stages of a policy run,
// "<stage>=<revision>" joined by spaces, in the order of the status.
func legacyStageRevisionsOf(policy *v1alpha1.StagedBindingPolicy) string {
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

// legacyStageClustersOf returns the counts of the clusters of every stage
// placed in batches, "<stage>/<state>=<count>" joined by spaces, in the
// order of the status.
func legacyStageClustersOf(policy *v1alpha1.StagedBindingPolicy) string {
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

// legacyStageAnalysesOf returns the counts of the measurements of every
// analysis of every stage, "<stage>/<analysis>/<phase>=<count>" joined by
// spaces, in the order of the status.
func legacyStageAnalysesOf(policy *v1alpha1.StagedBindingPolicy) string {
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
func (s *legacySpace) Policy(policy *v1alpha1.StagedBindingPolicy) {
	series := legacySeriesOf(policy)
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
			s.vecs.policyPhase.DeleteLabelValues(s.name, name, string(before.phase))
			s.countPhaseLocked(before.phase, -1)
		}
		s.vecs.policyPhase.WithLabelValues(s.name, name, string(series.phase)).Set(1)
		s.countPhaseLocked(series.phase, 1)
	}
	if !known || before.stages != series.stages {
		s.vecs.stageCount.WithLabelValues(s.name, name).Set(float64(series.stages))
	}
	if !known || before.activeStage != series.activeStage {
		if known && before.activeStage != "" {
			s.vecs.activeStage.DeleteLabelValues(s.name, name, before.activeStage)
		}
		if series.activeStage != "" {
			s.vecs.activeStage.WithLabelValues(s.name, name, series.activeStage).Set(1)
		}
	}
	if !known || before.stageRevisions != series.stageRevisions {
		if known && before.stageRevisions != "" {
			s.vecs.stageRevision.DeletePartialMatch(prometheus.Labels{LabelSpace: s.name, LabelPolicy: name})
		}
		for _, pair := range strings.Fields(series.stageRevisions) {
			stage, revision, _ := strings.Cut(pair, "=")
			s.vecs.stageRevision.WithLabelValues(s.name, name, stage, revision).Set(1)
		}
	}
	if !known || before.stageClusters != series.stageClusters {
		if known && before.stageClusters != "" {
			s.vecs.stageClusters.DeletePartialMatch(prometheus.Labels{LabelSpace: s.name, LabelPolicy: name})
		}
		for _, pair := range strings.Fields(series.stageClusters) {
			key, count, _ := strings.Cut(pair, "=")
			stage, state, _ := strings.Cut(key, "/")
			n, _ := strconv.Atoi(count)
			s.vecs.stageClusters.WithLabelValues(s.name, name, stage, state).Set(float64(n))
		}
	}
	if !known || before.stageAnalyses != series.stageAnalyses {
		if known && before.stageAnalyses != "" {
			s.vecs.stageAnalyses.DeletePartialMatch(prometheus.Labels{LabelSpace: s.name, LabelPolicy: name})
		}
		for _, pair := range strings.Fields(series.stageAnalyses) {
			key, count, _ := strings.Cut(pair, "=")
			parts := strings.SplitN(key, "/", 3)
			n, _ := strconv.Atoi(count)
			s.vecs.stageAnalyses.WithLabelValues(s.name, name, parts[0], parts[1], parts[2]).Set(float64(n))
		}
	}
	for _, g := range []struct {
		vec            *prometheus.GaugeVec
		before, series gauge
	}{
		{s.vecs.deletionStart, before.deletionStart, series.deletionStart},
		{s.vecs.activeStageIndex, before.activeStageIndex, series.activeStageIndex},
		{s.vecs.activeStageStart, before.activeStageStart, series.activeStageStart},
		{s.vecs.progressDeadline, before.progressDeadline, series.progressDeadline},
		{s.vecs.awaitingApproval, before.awaitingApproval, series.awaitingApproval},
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
func (s *legacySpace) countPhaseLocked(phase v1alpha1.RolloutPhase, delta int) {
	if len(s.phases) == 0 {
		for _, p := range phasesCounted {
			s.phases[p] = 0
			s.vecs.policies.WithLabelValues(s.name, string(p)).Set(0)
		}
	}
	s.phases[phase] += delta
	s.vecs.policies.WithLabelValues(s.name, string(phase)).Set(float64(s.phases[phase]))
}

// PolicyDeleted deletes the series of a policy.
func (s *legacySpace) PolicyDeleted(policy string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if before, known := s.recorded[policy]; known {
		delete(s.recorded, policy)
		s.countPhaseLocked(before.phase, -1)
	}
	labels := prometheus.Labels{LabelSpace: s.name, LabelPolicy: policy}
	for _, vec := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{s.vecs.policyPhase, s.vecs.activeStage, s.vecs.activeStageIndex, s.vecs.stageCount, s.vecs.activeStageStart, s.vecs.progressDeadline,
		s.vecs.awaitingApproval, s.vecs.deletionStart, s.vecs.stageRevision, s.vecs.stageClusters, s.vecs.stageAnalyses} {
		vec.DeletePartialMatch(labels)
	}
}

// TestCollectorMatchesPerRunBookkeeping checks, over random sequences of
// policies put in a space's cache and deleted from it, that every scrape
// of the policyCollector exports the same metrics (names, help, types,
// labels and values) as the per-run bookkeeping it replaced after it
// recorded the same changes. The policies' stage and analysis names are
// DNS labels, as the API's validation makes them: the bookkeeping kept
// its series as strings split on spaces, "=" and "/".
func TestCollectorMatchesPerRunBookkeeping(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const space = "legacy"
		before := prometheus.NewPedanticRegistry()
		legacy := newLegacySpace(space, before)
		cached := map[string]v1alpha1.StagedBindingPolicy{}
		collector := &policyCollector{spaces: map[string]*servedSpace{}}
		collector.serve(space, func(context.Context) ([]v1alpha1.StagedBindingPolicy, error) {
			return slices.Collect(maps.Values(cached)), nil
		})
		after := prometheus.NewPedanticRegistry()
		after.MustRegister(collector)

		for step := range rapid.IntRange(1, 12).Draw(t, "steps") {
			name := rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "policy")
			if step > 0 && rapid.IntRange(0, 3).Draw(t, "delete") == 0 {
				delete(cached, name)
				legacy.PolicyDeleted(name)
			} else {
				p := randomPolicy(t, name)
				cached[name] = *p
				legacy.Policy(p)
			}
			if want, got := exported(t, before), exported(t, after); !slices.Equal(got, want) {
				t.Fatalf("after step %d the collector exports\n%s\nthe bookkeeping\n%s", step, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	})
}

// newerThanBookkeeping are gauges added after the bookkeeping was
// replaced, which it never had: waiting_test.go tests them.
var newerThanBookkeeping = []string{"stager_policy_waiting", "stager_policy_next_window_time_seconds"}

// exported renders every series a registry serves, with its family's help
// and type, one string each.
func exported(t *rapid.T, g prometheus.Gatherer) []string {
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	var out []string
	for _, f := range families {
		if slices.Contains(newerThanBookkeeping, f.GetName()) {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			out = append(out, fmt.Sprintf("%s{%s} %g (%s, %q)", f.GetName(), strings.Join(labels, ","), m.GetGauge().GetValue(), f.GetType(), f.GetHelp()))
		}
	}
	slices.Sort(out)
	return out
}

// randomPolicy draws a policy named name with any status the stager can
// write, and some it cannot: stages and analyses named twice, negative
// counts, phases that do not go together.
func randomPolicy(t *rapid.T, name string) *v1alpha1.StagedBindingPolicy {
	stageNames := rapid.SampledFrom([]string{"dev", "test", "prod", "edge"})
	revisions := rapid.SampledFrom([]string{"", "v1", "v2"})
	times := rapid.SampledFrom([]*metav1.Time{nil, {Time: time.Unix(1000, 0)}, {Time: time.Unix(2000, 0)}})
	counts := rapid.Int32Range(-1, 4)
	p := &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, DeletionTimestamp: times.Draw(t, "deletion")}}
	for range rapid.IntRange(0, 4).Draw(t, "stages") {
		p.Spec.Stages = append(p.Spec.Stages, v1alpha1.Stage{Name: stageNames.Draw(t, "stage")})
	}
	p.Status.Phase = rapid.SampledFrom(append([]v1alpha1.RolloutPhase{""}, phasesCounted...)).Draw(t, "phase")
	p.Status.ActiveStage = rapid.SampledFrom([]string{"", "dev", "test", "prod", "edge"}).Draw(t, "activeStage")
	p.Status.UpdateRevision = revisions.Draw(t, "updateRevision")
	for range rapid.IntRange(0, 4).Draw(t, "records") {
		r := v1alpha1.StageStatus{
			Name:                  stageNames.Draw(t, "record"),
			Phase:                 rapid.SampledFrom([]v1alpha1.StagePhase{v1alpha1.StagePending, v1alpha1.StageAwaitingApproval, v1alpha1.StageActive, v1alpha1.StageSucceeded}).Draw(t, "stagePhase"),
			Revision:              revisions.Draw(t, "revision"),
			StartTime:             times.Draw(t, "start"),
			ApprovalRequestedTime: times.Draw(t, "approvalRequested"),
			ProgressDeadlineTime:  times.Draw(t, "progressDeadline"),
		}
		if rapid.Bool().Draw(t, "batches") {
			r.Clusters = &v1alpha1.StageClusters{Total: counts.Draw(t, "total"), Placed: counts.Draw(t, "placed"),
				Succeeded: counts.Draw(t, "succeeded"), Failed: counts.Draw(t, "failed"), TimedOut: counts.Draw(t, "timedOut")}
		}
		for range rapid.IntRange(0, 2).Draw(t, "analyses") {
			r.Analyses = append(r.Analyses, v1alpha1.AnalysisStatus{Name: rapid.SampledFrom([]string{"errors", "latency"}).Draw(t, "analysis"),
				Successful: counts.Draw(t, "successful"), Failed: counts.Draw(t, "failedMeasurements"), Inconclusive: counts.Draw(t, "inconclusive")})
		}
		p.Status.Stages = append(p.Status.Stages, r)
	}
	return p
}
