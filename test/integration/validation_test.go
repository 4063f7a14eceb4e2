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

package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// TestCRDValidation checks that the API server rejects invalid specs with a
// message that says what is wrong, before the controller ever sees them.
func TestCRDValidation(t *testing.T) {
	s := suite.wds1
	stage := func(name string) v1alpha1.Stage {
		st := policytest.Stage("dev", "", "")
		st.Name = name
		return st
	}
	soaking := func(name, condition, soak string) v1alpha1.Stage {
		st := stage(name)
		st.Condition = condition
		d, err := time.ParseDuration(soak)
		if err != nil {
			t.Fatal(err)
		}
		st.SoakDuration = &metav1.Duration{Duration: d}
		return st
	}
	deadlined := func(name, soak, deadline string) v1alpha1.Stage {
		st := stage(name)
		if soak != "" {
			st = soaking(name, policytest.Available, soak)
		}
		d, err := time.ParseDuration(deadline)
		if err != nil {
			t.Fatal(err)
		}
		st.ProgressDeadline = &metav1.Duration{Duration: d}
		return st
	}
	batched := func(name string, maxConcurrency, maxFailures *intstr.IntOrString, canary *int32) v1alpha1.Stage {
		st := deadlined(name, "", "10m")
		st.MaxConcurrency, st.MaxFailures, st.Canary = maxConcurrency, maxFailures, canary
		return st
	}
	analysed := func(name string, a v1alpha1.Analysis) v1alpha1.Stage {
		st := stage(name)
		a.Name, a.Provider, a.SuccessCondition = "gate", "change", "true"
		st.Analysis = []v1alpha1.Analysis{a}
		return st
	}
	num, pct := intstr.FromInt32, intstr.FromString
	tests := []struct {
		name     string
		policy   string
		stages   []v1alpha1.Stage
		revision *v1alpha1.Revision
		nameKey  string
		want     string
	}{
		{name: "no stages", policy: "no-stages", stages: nil, want: "spec.stages"},
		{name: "duplicate stage names", policy: "duplicate", stages: []v1alpha1.Stage{stage("dev"), stage("dev")}, want: "Duplicate value"},
		{name: "stage name not a DNS label", policy: "bad-name", stages: []v1alpha1.Stage{stage("Dev_1")}, want: "spec.stages[0].name"},
		{name: "stage name too long", policy: "long-name", stages: []v1alpha1.Stage{stage(strings.Repeat("a", 64))}, want: "spec.stages[0].name"},
		{name: "no clusterSelectors", policy: "no-selectors", stages: []v1alpha1.Stage{{Name: "dev"}}, want: "clusterSelectors"},
		{name: "soakDuration without a condition", policy: "soak-no-condition",
			stages: []v1alpha1.Stage{soaking("dev", "", "10m")}, want: "soakDuration needs a condition to soak"},
		{name: "soakDuration over a week", policy: "soak-too-long",
			stages: []v1alpha1.Stage{soaking("dev", policytest.Available, "169h")}, want: "soakDuration must be between 0s and 168h"},
		{name: "progressDeadline of zero", policy: "deadline-zero",
			stages: []v1alpha1.Stage{deadlined("dev", "", "0s")}, want: "progressDeadline must be between 1s and 168h"},
		{name: "progressDeadline over a week", policy: "deadline-too-long",
			stages: []v1alpha1.Stage{deadlined("dev", "", "169h")}, want: "progressDeadline must be between 1s and 168h"},
		{name: "progressDeadline no longer than soakDuration", policy: "deadline-before-soak",
			stages: []v1alpha1.Stage{deadlined("dev", "10m", "10m")}, want: "progressDeadline must be longer than soakDuration"},
		{name: "policy name longer than a label value", policy: strings.Repeat("p", 64), stages: []v1alpha1.Stage{stage("dev")},
			want: "must be at most 63 characters"},
		{name: "revision name not a DNS label", policy: "bad-revision", stages: []v1alpha1.Stage{stage("dev")},
			revision: &v1alpha1.Revision{Name: "V2!"}, want: "spec.revision.name"},
		{name: "revision without a name", policy: "no-revision-name", stages: []v1alpha1.Stage{stage("dev")},
			revision: &v1alpha1.Revision{}, want: "spec.revision.name"},
		{name: "revision name too long", policy: "long-revision", stages: []v1alpha1.Stage{stage("dev")},
			revision: &v1alpha1.Revision{Name: strings.Repeat("v", 64)}, want: "spec.revision.name"},
		{name: "revision labelKey not a label key", policy: "bad-label-key", stages: []v1alpha1.Stage{stage("dev")},
			revision: &v1alpha1.Revision{Name: "v2", LabelKey: "a b"}, want: "spec.revision.labelKey"},
		{name: "maxConcurrency of 0%", policy: "concurrency-zero-percent",
			stages: []v1alpha1.Stage{batched("dev", ptr.To(pct("0%")), nil, nil)}, want: "spec.stages[0].maxConcurrency"},
		{name: "maxConcurrency over 100%", policy: "concurrency-over",
			stages: []v1alpha1.Stage{batched("dev", ptr.To(pct("150%")), nil, nil)}, want: "spec.stages[0].maxConcurrency"},
		{name: "maxConcurrency not a number", policy: "concurrency-word",
			stages: []v1alpha1.Stage{batched("dev", ptr.To(pct("two")), nil, nil)}, want: "spec.stages[0].maxConcurrency"},
		{name: "maxFailures over 100%", policy: "failures-over",
			stages: []v1alpha1.Stage{batched("dev", ptr.To(num(2)), ptr.To(pct("101%")), nil)}, want: "spec.stages[0].maxFailures"},
		{name: "maxFailures without maxConcurrency", policy: "failures-unbatched",
			stages: []v1alpha1.Stage{batched("dev", nil, ptr.To(num(1)), nil)}, want: "maxFailures needs maxConcurrency"},
		{name: "maxFailures without progressDeadline", policy: "failures-no-deadline",
			stages: []v1alpha1.Stage{{Name: "dev", ClusterSelectors: stage("dev").ClusterSelectors,
				MaxConcurrency: ptr.To(num(2)), MaxFailures: ptr.To(num(1))}}, want: "maxFailures needs progressDeadline"},
		{name: "canary without maxConcurrency", policy: "canary-unbatched",
			stages: []v1alpha1.Stage{batched("dev", nil, nil, ptr.To[int32](1))}, want: "canary needs maxConcurrency"},
		{name: "canary of zero", policy: "canary-zero",
			stages: []v1alpha1.Stage{batched("dev", ptr.To(num(2)), nil, ptr.To[int32](0))}, want: "spec.stages[0].canary"},
		{name: "an analysis with a query and web", policy: "query-and-web",
			stages: []v1alpha1.Stage{analysed("dev", v1alpha1.Analysis{Query: "up", Web: &v1alpha1.WebRequest{Path: "x"}})},
			want:   "an analysis needs exactly one of query and web"},
		{name: "an analysis with neither query nor web", policy: "no-query-no-web",
			stages: []v1alpha1.Stage{analysed("dev", v1alpha1.Analysis{})}, want: "an analysis needs exactly one of query and web"},
		{name: "a web path with a .. segment", policy: "web-dotdot",
			stages: []v1alpha1.Stage{analysed("dev", v1alpha1.Analysis{Web: &v1alpha1.WebRequest{Path: "a/../b"}})}, want: "path may have no . or .. segment"},
		{name: "a web path with a query", policy: "web-query",
			stages: []v1alpha1.Stage{analysed("dev", v1alpha1.Analysis{Web: &v1alpha1.WebRequest{Path: "a?b=1"}})}, want: "spec.stages[0].analysis[0].web.path"},
		{name: "too many web params", policy: "web-params",
			stages: []v1alpha1.Stage{analysed("dev", v1alpha1.Analysis{Web: &v1alpha1.WebRequest{Params: func() map[string]string {
				m := map[string]string{}
				for i := range 17 {
					m[fmt.Sprint("p", i)] = "v"
				}
				return m
			}()}})}, want: "spec.stages[0].analysis[0].web.params"},
		{name: "clusterNameLabelKey not a label key", policy: "bad-name-key", stages: []v1alpha1.Stage{stage("dev")},
			nameKey: "a b", want: "spec.clusterNameLabelKey"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy := &v1alpha1.StagedBindingPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: tt.policy},
				Spec:       v1alpha1.StagedBindingPolicySpec{Stages: tt.stages, Revision: tt.revision, ClusterNameLabelKey: tt.nameKey},
			}
			err := s.Client.Create(suite.ctx, policy)
			if err == nil {
				t.Fatalf("the API server accepted an invalid policy")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not mention %q", err, tt.want)
			}
		})
	}

	// A deadline longer than the soak is accepted, as is a revision with a
	// label key of its own, and batches by number and by percentage.
	fine := &v1alpha1.StagedBindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deadline-after-soak"},
		Spec: v1alpha1.StagedBindingPolicySpec{Suspend: true, ClusterNameLabelKey: "example.com/cluster-name",
			Stages: []v1alpha1.Stage{deadlined("dev", "10m", "11m"),
				// A path like an address is a path under the provider's
				// (TestWebGateRequests).
				analysed("web-host", v1alpha1.Analysis{Web: &v1alpha1.WebRequest{Path: "https://evil.example/x"}}),
				analysed("web", v1alpha1.Analysis{Web: &v1alpha1.WebRequest{Path: "tickets/{{policy}}/{{stage}}",
					Params: map[string]string{"revision": "{{revision}}", "clusters": "{{clusters}}"}}}),
				batched("test", ptr.To(num(1)), ptr.To(num(0)), ptr.To[int32](1)),
				batched("prod", ptr.To(pct("100%")), ptr.To(pct("0%")), nil),
				batched("edge", ptr.To(pct("25%")), ptr.To(pct("10%")), nil)},
			Revision: &v1alpha1.Revision{Name: "v2-" + strings.Repeat("a", 60), LabelKey: "example.com/release"}},
	}
	if err := s.Client.Create(suite.ctx, fine); err != nil {
		t.Fatalf("a valid progressDeadline, revision or batching was rejected: %v", err)
	}
	policies(s).Delete(t, fine.Name)

	// A valid policy with the longest allowed names is accepted and placed.
	ok := &v1alpha1.StagedBindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("p", 63)},
		Spec:       v1alpha1.StagedBindingPolicySpec{Stages: []v1alpha1.Stage{stage(strings.Repeat("s", 63))}},
	}
	if err := s.Client.Create(suite.ctx, ok); err != nil {
		t.Fatalf("a valid policy was rejected: %v", err)
	}
	waitForBindingPolicies(t, s, ok.Name, ok.Spec.Stages[0].Name)
	policies(s).Delete(t, ok.Name)
}
