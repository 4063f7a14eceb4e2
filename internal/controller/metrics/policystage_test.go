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
	"maps"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// policyStageHistograms returns the per-policy stage duration histograms
// of the test's space, by "policy/stage".
func policyStageHistograms(t *testing.T) map[string]*dto.Histogram {
	const space = "stage-duration-test"
	t.Helper()
	out := map[string]*dto.Histogram{}
	for _, m := range gatherFamily(t, PolicyStageDurationName) {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels[LabelSpace] == space {
			out[labels[LabelPolicy]+"/"+labels[LabelStage]] = m.GetHistogram()
		}
	}
	return out
}

// gatherFamily returns the metrics of the family named name in
// controller-runtime's registry, as a scrape sees them.
func gatherFamily(t *testing.T, name string) []*dto.Metric {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering the metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()
		}
	}
	return nil
}

// TestPolicyStageDuration checks the per-policy stage duration histogram:
// its series exist at zero from PolicyStages on, StageDone observes the
// stage's own series, and a deleted policy's and a disengaged space's
// series go, leaving the space's other policies'.
func TestPolicyStageDuration(t *testing.T) {
	s := NewSpace("stage-duration-test")
	s.PolicyStages("web", []string{"dev", "test", "prod"})
	s.PolicyStages("api", []string{"dev"})
	got := policyStageHistograms(t)
	if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, []string{"api/dev", "web/dev", "web/prod", "web/test"}) {
		t.Fatalf("series %v, want one per stage of each policy", keys)
	}
	for key, h := range got {
		if h.GetSampleCount() != 0 {
			t.Errorf("%s has %d samples before any stage is done, want 0", key, h.GetSampleCount())
		}
		if len(h.GetBucket()) != len(PolicyStageBuckets) {
			t.Errorf("%s has %d buckets, want %d", key, len(h.GetBucket()), len(PolicyStageBuckets))
		}
	}

	s.StageDone("web", "test", 20*time.Minute)
	s.StageDone("web", "test", 40*time.Minute)
	s.PolicyStages("web", []string{"dev", "test", "prod"}) // again: keeps what was observed
	got = policyStageHistograms(t)
	if h := got["web/test"]; h.GetSampleCount() != 2 || h.GetSampleSum() != 3600 {
		t.Errorf("web/test has %d samples summing to %v s, want 2 summing to 3600", h.GetSampleCount(), h.GetSampleSum())
	}
	if h := got["web/prod"]; h.GetSampleCount() != 0 {
		t.Errorf("web/prod has %d samples, want 0", h.GetSampleCount())
	}

	s.PolicyDeleted("web")
	if keys := slices.Sorted(maps.Keys(policyStageHistograms(t))); !slices.Equal(keys, []string{"api/dev"}) {
		t.Errorf("series after web's deletion %v, want api's only", keys)
	}
	SpaceDisengaged("stage-duration-test")
	if n := len(policyStageHistograms(t)); n != 0 {
		t.Errorf("%d series after the space's disengagement, want 0", n)
	}
}
