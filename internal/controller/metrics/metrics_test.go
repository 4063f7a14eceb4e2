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
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

func TestPolicySeries(t *testing.T) {
	s := NewSpace("metrics-test")
	t.Cleanup(func() { SpaceDisengaged("metrics-test") })

	s.Policy(policyAt("a", "dev", v1alpha1.RolloutProgressing, 0))
	s.Policy(policyAt("b", "", "", -1))
	if got := testutil.ToFloat64(policies.WithLabelValues("metrics-test", "Progressing")); got != 1 {
		t.Fatalf("Progressing policies = %v, want 1", got)
	}
	if got := testutil.ToFloat64(policies.WithLabelValues("metrics-test", "Pending")); got != 1 {
		t.Fatalf("Pending policies = %v, want 1", got)
	}
	if got := testutil.ToFloat64(activeStageStart.WithLabelValues("metrics-test", "a")); got != 1000 {
		t.Fatalf("active stage start = %v, want 1000", got)
	}

	// Moving to the next stage replaces the active-stage series.
	s.Policy(policyAt("a", "test", v1alpha1.RolloutProgressing, 1))
	if n := testutil.CollectAndCount(activeStage); n != 1 {
		t.Fatalf("%d active-stage series, want 1", n)
	}
	if got := testutil.ToFloat64(activeStageIndex.WithLabelValues("metrics-test", "a")); got != 1 {
		t.Fatalf("active stage index = %v, want 1", got)
	}
	// A phase change replaces the phase series.
	s.Policy(policyAt("a", "test", v1alpha1.RolloutBlocked, 1))
	if got := testutil.ToFloat64(policyPhase.WithLabelValues("metrics-test", "a", "Blocked")); got != 1 {
		t.Fatalf("stager_policy_phase{phase=Blocked} = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(policyPhase); n != 2 { // a Blocked, b Pending
		t.Fatalf("%d phase series, want 2", n)
	}
	s.StageCompleted("a", "dev", 90*time.Second)
	s.Evaluation(ResultTrue, time.Millisecond)
	s.Evaluation(ResultError, time.Millisecond)
	if got := testutil.ToFloat64(evaluations.WithLabelValues("metrics-test", ResultError)); got != 1 {
		t.Fatalf("error evaluations = %v, want 1", got)
	}

	// A deleted policy's series go; the phase counts follow.
	s.PolicyDeleted("a")
	if n := testutil.CollectAndCount(transitions); n != 0 {
		t.Fatalf("%d transition series after deletion, want 0", n)
	}
	if got := testutil.ToFloat64(policies.WithLabelValues("metrics-test", "Progressing")); got != 0 {
		t.Fatalf("Progressing policies = %v after deletion, want 0", got)
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

	// A disengaged space's series all go.
	SpaceEngaged("metrics-test")
	SpaceDisengaged("metrics-test")
	for name, n := range map[string]int{
		"policies": testutil.CollectAndCount(policies), "evaluations": testutil.CollectAndCount(evaluations),
		"stageCount": testutil.CollectAndCount(stageCount),
	} {
		if n != 0 {
			t.Errorf("%d %s series after disengagement, want 0", n, name)
		}
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
	s := NewSpace("deletion-test")
	t.Cleanup(func() { SpaceDisengaged("deletion-test") })

	p := policyAt("a", "dev", v1alpha1.RolloutProgressing, 0)
	s.Policy(p)
	if n := testutil.CollectAndCount(deletionStart); n != 0 {
		t.Fatalf("%d deletion series for a policy that is not being deleted, want 0", n)
	}
	deleted := metav1.NewTime(time.Unix(5000, 0))
	p.DeletionTimestamp = &deleted
	s.Policy(p)
	if got := testutil.ToFloat64(deletionStart.WithLabelValues("deletion-test", "a")); got != 5000 {
		t.Fatalf("deletion start = %v, want 5000", got)
	}
	s.PolicyDeleted("a")
	if n := testutil.CollectAndCount(deletionStart); n != 0 {
		t.Fatalf("%d deletion series after the policy went, want 0", n)
	}
}

// TestProgressDeadlineSeries checks that the active stage's progress
// deadline is exported while the stage is active and the rollout not
// suspended, that the phase counts include Stalled, and that the series goes
// with the stage and with the policy.
func TestProgressDeadlineSeries(t *testing.T) {
	s := NewSpace("deadline-test")
	t.Cleanup(func() { SpaceDisengaged("deadline-test") })

	p := policyAt("a", "dev", v1alpha1.RolloutStalled, 0)
	p.Status.Stages[0].ProgressDeadlineTime = &metav1.Time{Time: time.Unix(7000, 0)}
	s.Policy(p)
	if got := testutil.ToFloat64(progressDeadline.WithLabelValues("deadline-test", "a")); got != 7000 {
		t.Fatalf("progress deadline = %v, want 7000", got)
	}
	if got := testutil.ToFloat64(policies.WithLabelValues("deadline-test", "Stalled")); got != 1 {
		t.Fatalf("Stalled policies = %v, want 1", got)
	}

	p.Status.Phase = v1alpha1.RolloutSuspended // the deadline moves on resume: no stale series meanwhile
	s.Policy(p)
	if n := testutil.CollectAndCount(progressDeadline); n != 0 {
		t.Fatalf("%d progress deadline series while suspended, want 0", n)
	}
	if got := testutil.ToFloat64(policies.WithLabelValues("deadline-test", "Stalled")); got != 0 {
		t.Fatalf("Stalled policies = %v once suspended, want 0", got)
	}

	p.Status.Phase = v1alpha1.RolloutProgressing
	s.Policy(p)
	next := policyAt("a", "test", v1alpha1.RolloutProgressing, 1) // test has no deadline
	s.Policy(next)
	if n := testutil.CollectAndCount(progressDeadline); n != 0 {
		t.Fatalf("%d progress deadline series once the stage is done, want 0", n)
	}
	s.Policy(p)
	s.PolicyDeleted("a")
	if n := testutil.CollectAndCount(progressDeadline); n != 0 {
		t.Fatalf("%d progress deadline series after the policy went, want 0", n)
	}
}

// TestAwaitingApprovalSeries checks that a policy whose active stage awaits
// approval exports since when, counted in the AwaitingApproval phase, and
// that the series goes once the stage starts.
func TestAwaitingApprovalSeries(t *testing.T) {
	s := NewSpace("approval-test")
	t.Cleanup(func() { SpaceDisengaged("approval-test") })

	p := policyAt("a", "test", v1alpha1.RolloutAwaitingApproval, 1)
	p.Status.Stages[1].Phase, p.Status.Stages[1].StartTime = v1alpha1.StageAwaitingApproval, nil
	p.Status.Stages[1].ApprovalRequestedTime = &metav1.Time{Time: time.Unix(9000, 0)}
	s.Policy(p)
	if got := testutil.ToFloat64(awaitingApproval.WithLabelValues("approval-test", "a")); got != 9000 {
		t.Fatalf("awaiting approval since = %v, want 9000", got)
	}
	if got := testutil.ToFloat64(policies.WithLabelValues("approval-test", "AwaitingApproval")); got != 1 {
		t.Fatalf("AwaitingApproval policies = %v, want 1", got)
	}
	p.Status.Phase, p.Status.Stages[1].Phase = v1alpha1.RolloutProgressing, v1alpha1.StageActive
	s.Policy(p)
	if n := testutil.CollectAndCount(awaitingApproval); n != 0 {
		t.Fatalf("%d awaiting-approval series once the stage started, want 0", n)
	}
}

// TestStageAwaitingApprovalHasNoStart checks that a policy whose rollout
// moves on to a stage awaiting approval, which has not started, exports no
// start time for it, rather than the start of the stage before.
func TestStageAwaitingApprovalHasNoStart(t *testing.T) {
	s := NewSpace("approval-start-test")
	t.Cleanup(func() { SpaceDisengaged("approval-start-test") })

	s.Policy(policyAt("a", "dev", v1alpha1.RolloutProgressing, 0))
	p := policyAt("a", "test", v1alpha1.RolloutAwaitingApproval, 1)
	p.Status.Stages[1].Phase, p.Status.Stages[1].StartTime = v1alpha1.StageAwaitingApproval, nil
	p.Status.Stages[1].ApprovalRequestedTime = &metav1.Time{Time: time.Unix(9000, 0)}
	s.Policy(p)
	if n := testutil.CollectAndCount(activeStageStart); n != 0 {
		t.Fatalf("%d active stage start series for a stage awaiting approval, want 0", n)
	}
	if got := testutil.ToFloat64(activeStageIndex.WithLabelValues("approval-start-test", "a")); got != 1 {
		t.Fatalf("active stage index = %v, want 1", got)
	}
}

// BenchmarkSpacePolicy records, from as many goroutines as there are
// workers, the policies of one space whose status has not changed since
// their last record: what most runs of the reconciler record.
func BenchmarkSpacePolicy(b *testing.B) {
	s := NewSpace("bench")
	b.Cleanup(func() { SpaceDisengaged("bench") })
	policies := make([]*v1alpha1.StagedBindingPolicy, 100)
	for i := range policies {
		policies[i] = policyAt(fmt.Sprintf("p%03d", i), "dev", v1alpha1.RolloutProgressing, 0)
		s.Policy(policies[i])
	}
	b.SetParallelism(5) // 10 workers on 2 CPUs
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			s.Policy(policies[i%len(policies)])
		}
	})
}

// TestStageRevisionSeries checks that every stage exports the revisions it
// runs: the one its record keeps and, while active, the one being rolled
// out; a move of the rollout replaces the series, and the policy's deletion
// removes them.
func TestStageRevisionSeries(t *testing.T) {
	s := NewSpace("revision-test")
	t.Cleanup(func() { SpaceDisengaged("revision-test") })
	revisions := func() []string {
		return collected(t, stageRevision, "revision-test", func(labels map[string]string, _ float64) string {
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
		s.Policy(p)
		if got := revisions(); !slices.Equal(got, step.want) {
			t.Errorf("at %s, series %v, want %v", step.stage, got, step.want)
		}
	}
	s.PolicyDeleted("a")
	if got := revisions(); len(got) != 0 {
		t.Errorf("after the deletion, series %v, want none", got)
	}
}

// TestStageClustersSeries checks that a stage placed in batches exports
// its clusters by state as its record counts them, a new count replaces
// the series, and the policy's deletion removes them.
func TestStageClustersSeries(t *testing.T) {
	s := NewSpace("clusters-test")
	t.Cleanup(func() { SpaceDisengaged("clusters-test") })
	counts := func() []string {
		return collected(t, stageClusters, "clusters-test", func(labels map[string]string, value float64) string {
			return fmt.Sprintf("%s/%s=%g", labels[LabelStage], labels[LabelState], value)
		})
	}

	p := policyAt("a", "prod", v1alpha1.RolloutProgressing, 2)
	s.Policy(p)
	if got := counts(); len(got) != 0 {
		t.Errorf("a policy without batches exports %v", got)
	}
	p.Status.Stages[2].Clusters = &v1alpha1.StageClusters{Total: 5, Placed: 4, Succeeded: 2, Failed: 1}
	s.Policy(p)
	want := []string{"prod/Failed=1", "prod/Progressing=1", "prod/Succeeded=2", "prod/TimedOut=0", "prod/ToApply=1"}
	if got := counts(); !slices.Equal(got, want) {
		t.Errorf("series %v, want %v", got, want)
	}
	p = p.DeepCopy()
	p.Status.Stages[2].Clusters = &v1alpha1.StageClusters{Total: 5, Placed: 5, Succeeded: 4, TimedOut: 1}
	s.Policy(p)
	want = []string{"prod/Failed=0", "prod/Progressing=0", "prod/Succeeded=4", "prod/TimedOut=1", "prod/ToApply=0"}
	if got := counts(); !slices.Equal(got, want) {
		t.Errorf("after a new count, series %v, want %v", got, want)
	}
	s.PolicyDeleted("a")
	if got := counts(); len(got) != 0 {
		t.Errorf("after the deletion, series %v, want none", got)
	}
}

// TestStageAnalysesSeries checks that each analysis of a stage exports
// its measurements by verdict as its record counts them, and that the
// policy's deletion removes them.
func TestStageAnalysesSeries(t *testing.T) {
	s := NewSpace("analyses-test")
	t.Cleanup(func() { SpaceDisengaged("analyses-test") })
	counts := func() []string {
		return collected(t, stageAnalyses, "analyses-test", func(labels map[string]string, value float64) string {
			return fmt.Sprintf("%s/%s/%s=%g", labels[LabelStage], labels[LabelAnalysis], labels[LabelPhase], value)
		})
	}
	p := policyAt("a", "prod", v1alpha1.RolloutProgressing, 2)
	p.Status.Stages[2].Analyses = []v1alpha1.AnalysisStatus{{Name: "errors", Phase: v1alpha1.AnalysisRunning, Successful: 2, Inconclusive: 1}}
	s.Policy(p)
	want := []string{"prod/errors/Failed=0", "prod/errors/Inconclusive=1", "prod/errors/Successful=2"}
	if got := counts(); !slices.Equal(got, want) {
		t.Errorf("series %v, want %v", got, want)
	}
	p = p.DeepCopy()
	p.Status.Stages[2].Analyses[0].Failed = 1
	s.Policy(p)
	want = []string{"prod/errors/Failed=1", "prod/errors/Inconclusive=1", "prod/errors/Successful=2"}
	if got := counts(); !slices.Equal(got, want) {
		t.Errorf("after a failed measurement, series %v, want %v", got, want)
	}
	s.PolicyDeleted("a")
	if got := counts(); len(got) != 0 {
		t.Errorf("after the deletion, series %v, want none", got)
	}
}

// collected renders, sorted, the series of a gauge collector that belong to
// a space, each by render from its labels and value.
func collected(t *testing.T, c prometheus.Collector, space string, render func(labels map[string]string, value float64) string) []string {
	t.Helper()
	var got []string
	ch := make(chan prometheus.Metric, 64)
	go func() { c.Collect(ch); close(ch) }()
	for m := range ch {
		var out dto.Metric
		if err := m.Write(&out); err != nil {
			t.Fatal(err)
		}
		labels := map[string]string{}
		for _, l := range out.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels[LabelSpace] == space {
			got = append(got, render(labels, out.GetGauge().GetValue()))
		}
	}
	slices.Sort(got)
	return got
}
