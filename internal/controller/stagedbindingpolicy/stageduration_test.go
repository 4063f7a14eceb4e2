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

package stagedbindingpolicy

import (
	"maps"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/controller/metrics"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// policyStageSamples returns the sample count and sum (in seconds) of
// stager_policy_stage_duration_seconds of each stage of space's policy.
func policyStageSamples(t *testing.T, space, policy string) map[string][2]float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering the metrics: %v", err)
	}
	out := map[string][2]float64{}
	for _, f := range families {
		if f.GetName() != metrics.PolicyStageDurationName {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels[metrics.LabelSpace] == space && labels[metrics.LabelPolicy] == policy {
				out[labels[metrics.LabelStage]] = [2]float64{float64(m.GetHistogram().GetSampleCount()), m.GetHistogram().GetSampleSum()}
			}
		}
	}
	return out
}

// TestReportRecordsPolicyStageDurations: the status write that starts a
// rollout creates the per-policy duration series of each of its stages at
// zero; the one that completes a stage observes how long it was active
// less its suspended time, as status.history records it; a promoted
// stage and a write that completes nothing observe nothing.
func TestReportRecordsPolicyStageDurations(t *testing.T) {
	const space = "report-durations"
	r := &Reconciler{Space: space, Recorder: events.NewFakeRecorder(10), Metrics: metrics.NewSpace(space)}
	t.Cleanup(func() { metrics.SpaceDisengaged(space) })
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return ptr.To(metav1.NewTime(start.Add(d))) }
	policy := &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	// recorded is status.history's entry of the rollout, with the stage
	// durations it records.
	recorded := func(stages ...v1alpha1.StageHistory) []v1alpha1.RevisionHistory {
		return []v1alpha1.RevisionHistory{{Revision: "v2", Outcome: v1alpha1.OutcomeProgressing, StartTime: *at(0), Stages: stages}}
	}
	status := func(history []v1alpha1.RevisionHistory, stages ...v1alpha1.StageStatus) rollout.Action {
		return rollout.Action{Type: rollout.ActionUpdateStatus, Status: &v1alpha1.StagedBindingPolicyStatus{Stages: stages, History: history}}
	}
	pending := func(name string) v1alpha1.StageStatus {
		return v1alpha1.StageStatus{Name: name, Phase: v1alpha1.StagePending}
	}

	started := status(recorded(), v1alpha1.StageStatus{Name: "dev", Phase: v1alpha1.StageActive, StartTime: at(0)}, pending("test"), pending("prod"))
	r.report(policy, &v1alpha1.StagedBindingPolicyStatus{}, started)
	if got, want := policyStageSamples(t, space, "web"), map[string][2]float64{"dev": {}, "test": {}, "prod": {}}; !maps.Equal(got, want) {
		t.Fatalf("after the rollout's start: %v, want every stage at zero", got)
	}

	devRecord := v1alpha1.StageHistory{Name: "dev", StartTime: *at(0), CompletionTime: *at(30 * time.Minute),
		SuspendedDuration: &metav1.Duration{Duration: 10 * time.Minute}}
	devDone := status(recorded(devRecord), v1alpha1.StageStatus{Name: "dev", Phase: v1alpha1.StageSucceeded, StartTime: at(0), CompletionTime: at(30 * time.Minute),
		SuspendedDuration: &metav1.Duration{Duration: 10 * time.Minute}},
		v1alpha1.StageStatus{Name: "test", Phase: v1alpha1.StageActive, StartTime: at(30 * time.Minute)}, pending("prod"))
	r.report(policy, started.Status, devDone)
	r.report(policy, devDone.Status, devDone) // a write that completes nothing
	testPromoted := status(recorded(devRecord), devDone.Status.Stages[0],
		v1alpha1.StageStatus{Name: "test", Phase: v1alpha1.StageSucceeded, StartTime: at(30 * time.Minute), CompletionTime: at(31 * time.Minute),
			Promotion: &v1alpha1.StagePromotion{}},
		v1alpha1.StageStatus{Name: "prod", Phase: v1alpha1.StageActive, StartTime: at(31 * time.Minute)})
	r.report(policy, devDone.Status, testPromoted)
	want := map[string][2]float64{"dev": {1, 20 * 60}, "test": {}, "prod": {}}
	if got := policyStageSamples(t, space, "web"); !maps.Equal(got, want) {
		t.Errorf("after dev completed and test was promoted: %v, want %v", got, want)
	}

	// A stage done that status.history leaves out (done before the
	// rollout started, say) is no duration the forecast learns.
	early := v1alpha1.StageStatus{Name: "prod", Phase: v1alpha1.StageSucceeded, StartTime: at(-time.Hour), CompletionTime: at(32 * time.Minute)}
	prodDone := status(recorded(devRecord), devDone.Status.Stages[0], testPromoted.Status.Stages[1], early)
	r.report(policy, testPromoted.Status, prodDone)
	if got := policyStageSamples(t, space, "web"); !maps.Equal(got, want) {
		t.Errorf("after a stage done that the history leaves out: %v, want %v", got, want)
	}
}

// TestRecordedStages: the stage durations a write adds to status.history,
// each once, per rollout (revision and start).
func TestRecordedStages(t *testing.T) {
	at := func(m int) metav1.Time { return metav1.NewTime(time.Date(2026, 3, 1, 12, m, 0, 0, time.UTC)) }
	dev := v1alpha1.StageHistory{Name: "dev", StartTime: at(0), CompletionTime: at(10)}
	test := v1alpha1.StageHistory{Name: "test", StartTime: at(10), CompletionTime: at(20)}
	entry := func(revision string, start int, stages ...v1alpha1.StageHistory) v1alpha1.RevisionHistory {
		return v1alpha1.RevisionHistory{Revision: revision, StartTime: at(start), Stages: stages}
	}
	for _, tt := range []struct {
		name          string
		before, after []v1alpha1.RevisionHistory
		want          []string
	}{
		{name: "nothing recorded", want: nil},
		{name: "a stage added", before: []v1alpha1.RevisionHistory{entry("v2", 0, dev)},
			after: []v1alpha1.RevisionHistory{entry("v2", 0, dev, test)}, want: []string{"test"}},
		{name: "the same again", before: []v1alpha1.RevisionHistory{entry("v2", 0, dev)},
			after: []v1alpha1.RevisionHistory{entry("v2", 0, dev)}, want: nil},
		{name: "a new rollout of the revision records dev again", before: []v1alpha1.RevisionHistory{entry("v2", 0, dev)},
			after: []v1alpha1.RevisionHistory{entry("v2", 0, dev), entry("v2", 30, dev)}, want: []string{"dev"}},
		{name: "an entry the bound dropped records nothing", before: []v1alpha1.RevisionHistory{entry("v1", 0, dev), entry("v2", 30, dev)},
			after: []v1alpha1.RevisionHistory{entry("v2", 30, dev)}, want: nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, st := range RecordedStages(&v1alpha1.StagedBindingPolicyStatus{History: tt.before}, &v1alpha1.StagedBindingPolicyStatus{History: tt.after}) {
				got = append(got, st.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("recorded %v, want %v", got, tt.want)
			}
		})
	}
}
