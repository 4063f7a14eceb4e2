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
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/analysis"
	"github.com/kubestellar/workload-stager/internal/controller/metrics"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// providerAnswers stands for the MetricProviders (analysis.Providers, whose
// own tests use a real API server and TLS servers): it answers each
// analysis's provider with the error it is given, and records the spaces
// it is asked for.
type providerAnswers struct {
	errs   map[string]error
	mu     sync.Mutex
	spaces []string
}

func (p *providerAnswers) Query(_ context.Context, space, provider, _ string) ([]float64, error) {
	p.mu.Lock()
	p.spaces = append(p.spaces, space)
	p.mu.Unlock()
	if err := p.errs[provider]; err != nil {
		return nil, err
	}
	return []float64{1}, nil
}

// TestMeasureSkipsRateLimitedQueries: a query over the space's bound is no
// measurement (Plan records none, the analysis stays due), while a refusal
// is an inconclusive one whose message is the error's text for the space,
// not its detail for the log; every query is asked for the reconciler's
// space.
func TestMeasureSkipsRateLimitedQueries(t *testing.T) {
	refusal := &analysis.Error{Provider: "refused", Reason: analysis.ReasonCredentialsRefused, Message: "a Secret it names is unusable",
		Err: errors.New("secret stager/kubeconfig-wds1 is not labelled")}
	providers := &providerAnswers{errs: map[string]error{
		"limited": &analysis.Error{Provider: "limited", Reason: analysis.ReasonRateLimited, Message: "over the bound"},
		"refused": refusal,
	}}
	placed := metav1.NewTime(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC))
	policy := &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	policy.Spec.Stages = []v1alpha1.Stage{{Name: "dev", Analysis: []v1alpha1.Analysis{
		{Name: "answered", Provider: "prom", Query: "vector(1)", SuccessCondition: "true"},
		{Name: "limited", Provider: "limited", Query: "vector(1)", SuccessCondition: "true"},
		{Name: "refused", Provider: "refused", Query: "vector(1)", SuccessCondition: "true"},
	}}}
	policy.Status.ActiveStage = "dev"
	policy.Status.Stages = []v1alpha1.StageStatus{{Name: "dev", Phase: v1alpha1.StageActive, PlacedTime: &placed}}
	r := &Reconciler{Space: "kubeconfig#wds1", Measurer: providers, Recorder: events.NewFakeRecorder(10)}

	got := r.measure(context.Background(), policy, policy.Status.ActiveStage, nil, placed, rollout.DueAnalyses(policy, placed))
	if len(got) != 2 || got[0].Analysis != "answered" || got[1].Analysis != "refused" {
		t.Fatalf("measurements %+v, want answered and refused only (limited is no measurement)", got)
	}
	if got[0].Error != "" || len(got[0].Values) != 1 {
		t.Errorf("answered: %+v", got[0])
	}
	if got[1].Error != refusal.Error() || strings.Contains(got[1].Error, "kubeconfig-wds1") {
		t.Errorf("refused's message %q, want the space's text %q, without the Secret", got[1].Error, refusal.Error())
	}
	for _, space := range providers.spaces {
		if space != r.Space {
			t.Errorf("a query was asked for space %q, want the reconciler's %q", space, r.Space)
		}
	}
	if len(providers.spaces) != 3 {
		t.Errorf("%d queries, want 3", len(providers.spaces))
	}
}

// refusedQueries returns stager_analysis_queries_total{space, result="refused"}.
func refusedQueries(t *testing.T, space string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering the metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() != "stager_analysis_queries_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels[metrics.LabelSpace] == space && labels["result"] == metrics.QueryRefused {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestMeasureWarnsOfRefusedCredentials: a query refused because a Secret
// its MetricProvider names is not labelled as a provider credential raises
// a Warning Event on the policy that names the provider and not the Secret,
// once: not again while the analysis's latest measurement says so already;
// and every such query counts as refused in stager_analysis_queries_total.
func TestMeasureWarnsOfRefusedCredentials(t *testing.T) {
	refusal := &analysis.Error{Provider: "prom", Reason: analysis.ReasonCredentialsRefused,
		Message: "a Secret it names is missing, not labelled as a credential, or unusable",
		Err:     errors.New("bearer token: secret stager/prom-token is not labelled")}
	placed := metav1.NewTime(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC))
	policy := &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	policy.Spec.Stages = []v1alpha1.Stage{{Name: "dev", Analysis: []v1alpha1.Analysis{
		{Name: "error-rate", Provider: "prom", Query: "vector(1)", SuccessCondition: "true", Interval: &metav1.Duration{Duration: time.Minute}},
	}}}
	policy.Status.ActiveStage = "dev"
	policy.Status.Stages = []v1alpha1.StageStatus{{Name: "dev", Phase: v1alpha1.StageActive, PlacedTime: &placed}}
	space := "kubeconfig#credentials-refused"
	recorder := events.NewFakeRecorder(10)
	r := &Reconciler{Space: space, Measurer: &providerAnswers{errs: map[string]error{"prom": refusal}},
		Recorder: recorder, Metrics: metrics.NewSpace(space)}

	if got := r.measure(context.Background(), policy, policy.Status.ActiveStage, nil, placed, rollout.DueAnalyses(policy, placed)); len(got) != 1 || got[0].Error != refusal.Error() {
		t.Fatalf("measurements %+v, want the refusal", got)
	}
	if len(recorder.Events) != 1 {
		t.Fatalf("%d Events, want one", len(recorder.Events))
	}
	if e := <-recorder.Events; !strings.HasPrefix(e, "Warning "+string(analysis.ReasonCredentialsRefused)) ||
		!strings.Contains(e, `"prom"`) || strings.Contains(e, "prom-token") {
		t.Errorf("Event %q, want a Warning CredentialsRefused naming MetricProvider prom and not its Secret", e)
	}
	if got := refusedQueries(t, space); got != 1 {
		t.Errorf("refused queries %v, want 1", got)
	}

	// The status records it: the next measurement's refusal is not news.
	policy.Status.Stages[0].Analyses = []v1alpha1.AnalysisStatus{{Name: "error-rate", Phase: v1alpha1.AnalysisRunning, Inconclusive: 1,
		Measurements: []v1alpha1.Measurement{{Time: placed, Phase: v1alpha1.MeasurementInconclusive, Message: refusal.Error()}}}}
	later := metav1.NewTime(placed.Add(time.Minute))
	r.measure(context.Background(), policy, policy.Status.ActiveStage, nil, later, rollout.DueAnalyses(policy, later))
	if len(recorder.Events) != 0 {
		t.Errorf("again: Event %q, want none while the status says so", <-recorder.Events)
	}
	if got := refusedQueries(t, space); got != 2 {
		t.Errorf("refused queries %v, want 2", got)
	}
}
