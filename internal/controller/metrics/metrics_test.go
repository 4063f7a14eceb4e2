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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

func policyAt(name, stage string, phase v1alpha1.RolloutPhase, index int) *v1alpha1.StagedBindingPolicy {
	p := &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, s := range []string{"dev", "test", "prod"} {
		p.Spec.Stages = append(p.Spec.Stages, v1alpha1.Stage{Name: s})
	}
	p.Status.ActiveStage, p.Status.Phase = stage, phase
	start := metav1.NewTime(time.Unix(1000, 0))
	for i, s := range p.Spec.Stages {
		st := v1alpha1.StageStatus{Name: s.Name, Phase: v1alpha1.StagePending}
		if i == index {
			st.Phase, st.StartTime = v1alpha1.StageActive, &start
		}
		p.Status.Stages = append(p.Status.Stages, st)
	}
	return p
}

// fakeCache stands for a space's cache: the policies a test puts in it.
type fakeCache struct {
	mu       sync.Mutex
	policies map[string]*v1alpha1.StagedBindingPolicy
}

// serveFake serves the gauges of space from a fakeCache until the test ends.
func serveFake(t *testing.T, space string) *fakeCache {
	t.Helper()
	c := &fakeCache{policies: map[string]*v1alpha1.StagedBindingPolicy{}}
	t.Cleanup(ServePolicies(space, func(context.Context) ([]v1alpha1.StagedBindingPolicy, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		var out []v1alpha1.StagedBindingPolicy
		for _, p := range c.policies {
			out = append(out, *p.DeepCopy())
		}
		return out, nil
	}))
	return c
}

func (c *fakeCache) set(p *v1alpha1.StagedBindingPolicy) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.policies[p.Name] = p.DeepCopy()
}

func (c *fakeCache) delete(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.policies, name)
}

// scraped gathers controller-runtime's registry, as a scrape does, and
// returns the series of metric that belong to space: each value under its
// other labels, "name=value" joined by commas in the order of their names.
func scraped(t *testing.T, metric, space string) map[string]float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering the metrics: %v", err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			mine := false
			for _, l := range m.GetLabel() {
				if l.GetName() == LabelSpace {
					mine = l.GetValue() == space
					continue
				}
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			if mine {
				out[strings.Join(labels, ",")] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// TestPolicySeries checks the gauges of a space's policies, computed at
// scrape time, as the policies change in the cache and leave it.
func TestPolicySeries(t *testing.T) {
	c := serveFake(t, "metrics-test")
	s := NewSpace("metrics-test")
	t.Cleanup(func() { SpaceDisengaged("metrics-test") })

	c.set(policyAt("a", "dev", v1alpha1.RolloutProgressing, 0))
	c.set(policyAt("b", "", "", -1))
	counts := scraped(t, "stager_policies", "metrics-test")
	if counts["phase=Progressing"] != 1 || counts["phase=Pending"] != 1 || len(counts) != len(phasesCounted) {
		t.Fatalf("policies by phase %v, want 1 Progressing, 1 Pending and every other phase at 0", counts)
	}
	if got := scraped(t, "stager_policy_active_stage_start_time_seconds", "metrics-test"); !maps.Equal(got, map[string]float64{"policy=a": 1000}) {
		t.Fatalf("active stage start %v, want a at 1000", got)
	}

	// Moving to the next stage replaces the active-stage series.
	c.set(policyAt("a", "test", v1alpha1.RolloutProgressing, 1))
	if got := scraped(t, "stager_policy_active_stage", "metrics-test"); !maps.Equal(got, map[string]float64{"policy=a,stage=test": 1}) {
		t.Fatalf("active stage series %v, want a's test only", got)
	}
	if got := scraped(t, "stager_policy_active_stage_index", "metrics-test"); got["policy=a"] != 1 {
		t.Fatalf("active stage index %v, want a at 1", got)
	}
	// A phase change replaces the phase series.
	c.set(policyAt("a", "test", v1alpha1.RolloutBlocked, 1))
	if got := scraped(t, "stager_policy_phase", "metrics-test"); !maps.Equal(got, map[string]float64{"phase=Blocked,policy=a": 1, "phase=Pending,policy=b": 1}) {
		t.Fatalf("phase series %v, want a Blocked and b Pending", got)
	}
	s.StageCompleted("a", "dev", 90*time.Second)
	s.Evaluation(ResultTrue, time.Millisecond)
	s.Evaluation(ResultError, time.Millisecond)
	if got := testutil.ToFloat64(evaluations.WithLabelValues("metrics-test", ResultError)); got != 1 {
		t.Fatalf("error evaluations = %v, want 1", got)
	}

	// A deleted policy's counters go with PolicyDeleted, its gauges with
	// the cache; the phase counts follow.
	s.PolicyDeleted("a")
	if n := testutil.CollectAndCount(transitions); n != 0 {
		t.Fatalf("%d transition series after deletion, want 0", n)
	}
	c.delete("a")
	if got := scraped(t, "stager_policies", "metrics-test"); got["phase=Blocked"] != 0 || got["phase=Pending"] != 1 {
		t.Fatalf("policies by phase %v after deletion, want Blocked 0 and Pending 1", got)
	}

	// An engaged space's counters exist from the start, at zero.
	SpaceEngaged("metrics-fresh")
	for name, vec := range map[string]prometheus.Collector{"evaluations": evaluations, "reconcileErrors": reconcileErrors,
		"stageDuration": stageDuration, "evaluationLatency": evaluationLatency} {
		values := valuesOf(t, vec, "metrics-fresh")
		want := map[string]int{"evaluations": 3, "reconcileErrors": 1, "stageDuration": 1, "evaluationLatency": 1}[name]
		if len(values) != want {
			t.Errorf("%d %s series for a fresh space, want %d", len(values), name, want)
		}
		for _, v := range values {
			if v != 0 {
				t.Errorf("a fresh space's %s counter is %v, want 0", name, v)
			}
		}
	}
	SpaceDisengaged("metrics-fresh")

	// A disengaged space's counters all go.
	SpaceEngaged("metrics-test")
	SpaceDisengaged("metrics-test")
	if n := testutil.CollectAndCount(evaluations); n != 0 {
		t.Errorf("%d evaluations series after disengagement, want 0", n)
	}
}

// TestDeletedPolicyHasNoSeriesAtNextScrape checks that a policy with every
// kind of gauge has none at the scrape after it left the cache, with no
// call for it (neither PolicyDeleted nor a janitor's), while the space's
// other policy keeps its own.
func TestDeletedPolicyHasNoSeriesAtNextScrape(t *testing.T) {
	c := serveFake(t, "gone-test")
	p := policyAt("a", "prod", v1alpha1.RolloutProgressing, 2)
	deleted := metav1.NewTime(time.Unix(5000, 0))
	p.DeletionTimestamp = &deleted
	p.Status.UpdateRevision = "v2"
	p.Status.Stages[2].ProgressDeadlineTime = &metav1.Time{Time: time.Unix(7000, 0)}
	p.Status.Stages[2].Clusters = &v1alpha1.StageClusters{Total: 2, Placed: 1}
	p.Status.Stages[2].Analyses = []v1alpha1.AnalysisStatus{{Name: "errors", Successful: 1}}
	c.set(p)
	c.set(policyAt("b", "dev", v1alpha1.RolloutProgressing, 0))
	perPolicy := []string{"stager_policy_phase", "stager_policy_active_stage", "stager_policy_active_stage_index", "stager_policy_stages",
		"stager_policy_active_stage_start_time_seconds", "stager_policy_progress_deadline_time_seconds", "stager_policy_deletion_start_time_seconds",
		"stager_stage_revision", "stager_stage_clusters", "stager_stage_analysis_measurements"}
	of := func(policy string) (names []string) {
		for _, metric := range perPolicy {
			for labels := range scraped(t, metric, "gone-test") {
				if slices.Contains(strings.Split(labels, ","), "policy="+policy) {
					names = append(names, metric+"{"+labels+"}")
				}
			}
		}
		slices.Sort(names)
		return names
	}
	for _, metric := range perPolicy {
		if !slices.ContainsFunc(of("a"), func(series string) bool { return strings.HasPrefix(series, metric+"{") }) {
			t.Fatalf("a has no %s series before its deletion", metric)
		}
	}
	c.delete("a")
	if got := of("a"); len(got) != 0 {
		t.Fatalf("a, gone from the cache, still has %d series: %v", len(got), got)
	}
	if got := of("b"); len(got) == 0 {
		t.Fatal("b lost its series with a's deletion")
	}
	c.delete("b")
	if got := of("b"); len(got) != 0 {
		t.Fatalf("b, gone from the cache, still has %d series: %v", len(got), got)
	}
	if got := scraped(t, "stager_policies", "gone-test"); len(got) != len(phasesCounted) || slices.ContainsFunc(slices.Collect(maps.Values(got)), func(v float64) bool { return v != 0 }) {
		t.Fatalf("policies by phase %v in a space without policies, want every phase at 0", got)
	}
}

// TestServePoliciesReplacedAndStopped checks that a space's gauges go
// when its registration stops, and that the stop of a replaced
// registration leaves its successor's alone: the controller a space has
// next may start before the previous one's stop runs.
func TestServePoliciesReplacedAndStopped(t *testing.T) {
	first := serveFake(t, "replaced-test")
	first.set(policyAt("old", "dev", v1alpha1.RolloutProgressing, 0))
	list := func(context.Context) ([]v1alpha1.StagedBindingPolicy, error) {
		return []v1alpha1.StagedBindingPolicy{*policyAt("new", "dev", v1alpha1.RolloutProgressing, 0)}, nil
	}
	stopFirst := ServePolicies("replaced-test", list)
	stopSecond := ServePolicies("replaced-test", list)
	stopFirst()
	if got := scraped(t, "stager_policy_stages", "replaced-test"); !maps.Equal(got, map[string]float64{"policy=new": 3}) {
		t.Fatalf("series %v after the replaced registration stopped, want new's", got)
	}
	stopSecond()
	for _, metric := range []string{"stager_policies", "stager_policy_stages"} {
		if got := scraped(t, metric, "replaced-test"); len(got) != 0 {
			t.Fatalf("%s series %v once the space's registration stopped, want none", metric, got)
		}
	}
}

// TestUnlistedSpaceHasNoSeries checks that a space whose listing fails (its
// cache has not synced) has no gauges in the scrape, and does not fail it.
func TestUnlistedSpaceHasNoSeries(t *testing.T) {
	t.Cleanup(ServePolicies("unlisted-test", func(context.Context) ([]v1alpha1.StagedBindingPolicy, error) {
		return nil, errNotSynced
	}))
	if got := scraped(t, "stager_policies", "unlisted-test"); len(got) != 0 {
		t.Fatalf("series %v for a space not listed, want none", got)
	}
}

// valuesOf returns the values (a histogram's sample count) of a collector's
// series for a space, without creating any series.
func valuesOf(t *testing.T, c prometheus.Collector, space string) []float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 100)
	c.Collect(ch)
	close(ch)
	var values []float64
	for m := range ch {
		pb := &dto.Metric{}
		if err := m.Write(pb); err != nil {
			t.Fatal(err)
		}
		for _, l := range pb.GetLabel() {
			if l.GetName() == LabelSpace && l.GetValue() == space {
				values = append(values, pb.GetCounter().GetValue()+float64(pb.GetHistogram().GetSampleCount()))
			}
		}
	}
	return values
}

// TestDeletionStartSeries checks that a policy being deleted exports its
// deletionTimestamp, and that the series goes with the policy.
func TestDeletionStartSeries(t *testing.T) {
	s := serveFake(t, "deletion-test")

	p := policyAt("a", "dev", v1alpha1.RolloutProgressing, 0)
	s.set(p)
	if n := len(scraped(t, "stager_policy_deletion_start_time_seconds", "deletion-test")); n != 0 {
		t.Fatalf("%d deletion series for a policy that is not being deleted, want 0", n)
	}
	deleted := metav1.NewTime(time.Unix(5000, 0))
	p.DeletionTimestamp = &deleted
	s.set(p)
	if got := scraped(t, "stager_policy_deletion_start_time_seconds", "deletion-test")["policy=a"]; got != 5000 {
		t.Fatalf("deletion start = %v, want 5000", got)
	}
	s.delete("a")
	if n := len(scraped(t, "stager_policy_deletion_start_time_seconds", "deletion-test")); n != 0 {
		t.Fatalf("%d deletion series after the policy went, want 0", n)
	}
}

// TestProgressDeadlineSeries checks that the active stage's progress
// deadline is exported while the stage is active and the rollout not
// suspended, that the phase counts include Stalled, and that the series goes
// with the stage and with the policy.
func TestProgressDeadlineSeries(t *testing.T) {
	s := serveFake(t, "deadline-test")

	p := policyAt("a", "dev", v1alpha1.RolloutStalled, 0)
	p.Status.Stages[0].ProgressDeadlineTime = &metav1.Time{Time: time.Unix(7000, 0)}
	s.set(p)
	if got := scraped(t, "stager_policy_progress_deadline_time_seconds", "deadline-test")["policy=a"]; got != 7000 {
		t.Fatalf("progress deadline = %v, want 7000", got)
	}
	if got := scraped(t, "stager_policies", "deadline-test")["phase=Stalled"]; got != 1 {
		t.Fatalf("Stalled policies = %v, want 1", got)
	}

	p.Status.Phase = v1alpha1.RolloutSuspended // the deadline moves on resume: no stale series meanwhile
	s.set(p)
	if n := len(scraped(t, "stager_policy_progress_deadline_time_seconds", "deadline-test")); n != 0 {
		t.Fatalf("%d progress deadline series while suspended, want 0", n)
	}
	if got := scraped(t, "stager_policies", "deadline-test")["phase=Stalled"]; got != 0 {
		t.Fatalf("Stalled policies = %v once suspended, want 0", got)
	}

	p.Status.Phase = v1alpha1.RolloutProgressing
	s.set(p)
	next := policyAt("a", "test", v1alpha1.RolloutProgressing, 1) // test has no deadline
	s.set(next)
	if n := len(scraped(t, "stager_policy_progress_deadline_time_seconds", "deadline-test")); n != 0 {
		t.Fatalf("%d progress deadline series once the stage is done, want 0", n)
	}
	s.set(p)
	s.delete("a")
	if n := len(scraped(t, "stager_policy_progress_deadline_time_seconds", "deadline-test")); n != 0 {
		t.Fatalf("%d progress deadline series after the policy went, want 0", n)
	}
}

// TestAwaitingApprovalSeries checks that a policy whose active stage awaits
// approval exports since when, counted in the AwaitingApproval phase, and
// that the series goes once the stage starts.
func TestAwaitingApprovalSeries(t *testing.T) {
	s := serveFake(t, "approval-test")

	p := policyAt("a", "test", v1alpha1.RolloutAwaitingApproval, 1)
	p.Status.Stages[1].Phase, p.Status.Stages[1].StartTime = v1alpha1.StageAwaitingApproval, nil
	p.Status.Stages[1].ApprovalRequestedTime = &metav1.Time{Time: time.Unix(9000, 0)}
	s.set(p)
	if got := scraped(t, "stager_policy_awaiting_approval_since_seconds", "approval-test")["policy=a"]; got != 9000 {
		t.Fatalf("awaiting approval since = %v, want 9000", got)
	}
	if got := scraped(t, "stager_policies", "approval-test")["phase=AwaitingApproval"]; got != 1 {
		t.Fatalf("AwaitingApproval policies = %v, want 1", got)
	}
	p.Status.Phase, p.Status.Stages[1].Phase = v1alpha1.RolloutProgressing, v1alpha1.StageActive
	s.set(p)
	if n := len(scraped(t, "stager_policy_awaiting_approval_since_seconds", "approval-test")); n != 0 {
		t.Fatalf("%d awaiting-approval series once the stage started, want 0", n)
	}
}

// TestStageAwaitingApprovalHasNoStart checks that a policy whose rollout
// moves on to a stage awaiting approval, which has not started, exports no
// start time for it, rather than the start of the stage before.
func TestStageAwaitingApprovalHasNoStart(t *testing.T) {
	s := serveFake(t, "approval-start-test")

	s.set(policyAt("a", "dev", v1alpha1.RolloutProgressing, 0))
	p := policyAt("a", "test", v1alpha1.RolloutAwaitingApproval, 1)
	p.Status.Stages[1].Phase, p.Status.Stages[1].StartTime = v1alpha1.StageAwaitingApproval, nil
	p.Status.Stages[1].ApprovalRequestedTime = &metav1.Time{Time: time.Unix(9000, 0)}
	s.set(p)
	if n := len(scraped(t, "stager_policy_active_stage_start_time_seconds", "approval-start-test")); n != 0 {
		t.Fatalf("%d active stage start series for a stage awaiting approval, want 0", n)
	}
	if got := scraped(t, "stager_policy_active_stage_index", "approval-start-test")["policy=a"]; got != 1 {
		t.Fatalf("active stage index = %v, want 1", got)
	}
}

// BenchmarkCollectSpace scrapes the gauges of one space of 1000
// policies, each in its third stage with clusters placed in batches and an
// analysis: the work every scrape does for such a space, per policy.
func BenchmarkCollectSpace(b *testing.B) {
	items := make([]v1alpha1.StagedBindingPolicy, 1000)
	for i := range items {
		p := policyAt(fmt.Sprintf("p%04d", i), "prod", v1alpha1.RolloutProgressing, 2)
		p.Status.Stages[2].Clusters = &v1alpha1.StageClusters{Total: 5, Placed: 4, Succeeded: 2, Failed: 1}
		p.Status.Stages[2].Analyses = []v1alpha1.AnalysisStatus{{Name: "errors", Successful: 2}}
		items[i] = *p
	}
	ch := make(chan prometheus.Metric, 1024)
	go func() {
		for range ch {
		}
	}()
	b.ReportAllocs()
	for b.Loop() {
		collectSpace(ch, "bench", items)
	}
	close(ch)
}

// TestStageRevisionSeries checks that every stage exports the revisions it
// runs: the one its record keeps and, while active, the one being rolled
// out; a move of the rollout replaces the series, and the policy's deletion
// removes them.
func TestStageRevisionSeries(t *testing.T) {
	s := serveFake(t, "revision-test")
	revisions := func() []string {
		return collected(t, "stager_stage_revision", "revision-test", func(labels map[string]string, _ float64) string {
			return labels[LabelStage] + "=" + labels[LabelRevision]
		})
	}

	for _, step := range []struct {
		stage string
		index int
		keeps []string
		want  []string
	}{
		{"test", 1, []string{"v2", "v1", "v1"}, []string{"dev=v2", "prod=v1", "test=v1", "test=v2"}},
		{"prod", 2, []string{"v2", "v2", "v1"}, []string{"dev=v2", "prod=v1", "prod=v2", "test=v2"}}, // after the advance
	} {
		p := policyAt("a", step.stage, v1alpha1.RolloutProgressing, step.index)
		p.Status.CurrentRevision, p.Status.UpdateRevision = "v1", "v2"
		for i, rev := range step.keeps {
			p.Status.Stages[i].Revision = rev
		}
		s.set(p)
		if got := revisions(); !slices.Equal(got, step.want) {
			t.Errorf("at %s, series %v, want %v", step.stage, got, step.want)
		}
	}
	s.delete("a")
	if got := revisions(); len(got) != 0 {
		t.Errorf("after the deletion, series %v, want none", got)
	}
}

// TestStageClustersSeries checks that a stage placed in batches exports
// its clusters by state as its record counts them, a new count replaces
// the series, and the policy's deletion removes them.
func TestStageClustersSeries(t *testing.T) {
	s := serveFake(t, "clusters-test")
	counts := func() []string {
		return collected(t, "stager_stage_clusters", "clusters-test", func(labels map[string]string, value float64) string {
			return fmt.Sprintf("%s/%s=%g", labels[LabelStage], labels[LabelState], value)
		})
	}

	p := policyAt("a", "prod", v1alpha1.RolloutProgressing, 2)
	s.set(p)
	if got := counts(); len(got) != 0 {
		t.Errorf("a policy without batches exports %v", got)
	}
	p.Status.Stages[2].Clusters = &v1alpha1.StageClusters{Total: 5, Placed: 4, Succeeded: 2, Failed: 1}
	s.set(p)
	want := []string{"prod/Failed=1", "prod/Progressing=1", "prod/Succeeded=2", "prod/TimedOut=0", "prod/ToApply=1"}
	if got := counts(); !slices.Equal(got, want) {
		t.Errorf("series %v, want %v", got, want)
	}
	p = p.DeepCopy()
	p.Status.Stages[2].Clusters = &v1alpha1.StageClusters{Total: 5, Placed: 5, Succeeded: 4, TimedOut: 1}
	s.set(p)
	want = []string{"prod/Failed=0", "prod/Progressing=0", "prod/Succeeded=4", "prod/TimedOut=1", "prod/ToApply=0"}
	if got := counts(); !slices.Equal(got, want) {
		t.Errorf("after a new count, series %v, want %v", got, want)
	}
	s.delete("a")
	if got := counts(); len(got) != 0 {
		t.Errorf("after the deletion, series %v, want none", got)
	}
}

// TestStageAnalysesSeries checks that each analysis of a stage exports
// its measurements by verdict as its record counts them, and that the
// policy's deletion removes them.
func TestStageAnalysesSeries(t *testing.T) {
	s := serveFake(t, "analyses-test")
	counts := func() []string {
		return collected(t, "stager_stage_analysis_measurements", "analyses-test", func(labels map[string]string, value float64) string {
			return fmt.Sprintf("%s/%s/%s=%g", labels[LabelStage], labels[LabelAnalysis], labels[LabelPhase], value)
		})
	}
	p := policyAt("a", "prod", v1alpha1.RolloutProgressing, 2)
	p.Status.Stages[2].Analyses = []v1alpha1.AnalysisStatus{{Name: "errors", Phase: v1alpha1.AnalysisRunning, Successful: 2, Inconclusive: 1}}
	s.set(p)
	want := []string{"prod/errors/Failed=0", "prod/errors/Inconclusive=1", "prod/errors/Successful=2"}
	if got := counts(); !slices.Equal(got, want) {
		t.Errorf("series %v, want %v", got, want)
	}
	p = p.DeepCopy()
	p.Status.Stages[2].Analyses[0].Failed = 1
	s.set(p)
	want = []string{"prod/errors/Failed=1", "prod/errors/Inconclusive=1", "prod/errors/Successful=2"}
	if got := counts(); !slices.Equal(got, want) {
		t.Errorf("after a failed measurement, series %v, want %v", got, want)
	}
	s.delete("a")
	if got := counts(); len(got) != 0 {
		t.Errorf("after the deletion, series %v, want none", got)
	}
}

// collected renders, sorted, the scraped series of a gauge that belong to
// a space, each by render from its labels and value.
func collected(t *testing.T, metric, space string, render func(labels map[string]string, value float64) string) []string {
	t.Helper()
	var got []string
	for key, value := range scraped(t, metric, space) {
		labels := map[string]string{}
		for _, pair := range strings.Split(key, ",") {
			name, v, _ := strings.Cut(pair, "=")
			labels[name] = v
		}
		got = append(got, render(labels, value))
	}
	slices.Sort(got)
	return got
}

// TestStageRegressedSeries checks that a stage exports 1 while its record
// says regressed, 0 once a regression check found it healthy, nothing
// before any check, and nothing once the policy is gone.
func TestStageRegressedSeries(t *testing.T) {
	s := serveFake(t, "regressed-test")
	series := func() []string {
		return collected(t, "stager_stage_regressed", "regressed-test", func(labels map[string]string, value float64) string {
			return fmt.Sprintf("%s/%s=%g", labels[LabelPolicy], labels[LabelStage], value)
		})
	}
	p := policyAt("a", "prod", v1alpha1.RolloutProgressing, 2)
	s.set(p)
	if got := series(); len(got) != 0 {
		t.Errorf("a policy without checks exports %v", got)
	}
	p = p.DeepCopy()
	checked := metav1.NewTime(time.Unix(6000, 0))
	p.Status.Stages[0].LastRegressionCheckTime = &checked
	p.Status.Stages[1].LastRegressionCheckTime = &checked
	p.Status.Stages[1].Regressed = &v1alpha1.StageRegression{Time: checked, Message: "stage \"test\" regressed"}
	s.set(p)
	if got, want := series(), []string{"a/dev=0", "a/test=1"}; !slices.Equal(got, want) {
		t.Errorf("series %v, want %v", got, want)
	}
	s.delete("a")
	if got := series(); len(got) != 0 {
		t.Errorf("after the deletion, series %v, want none", got)
	}
}
