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

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/analysis"
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
	r := &Reconciler{Space: "kubeconfig#wds1", Measurer: providers}

	got := r.measure(context.Background(), policy, &rollout.Snapshot{Now: placed}, rollout.DueAnalyses(policy, placed))
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
