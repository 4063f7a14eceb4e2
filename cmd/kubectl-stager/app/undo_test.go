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

package app

import (
	"strings"
	"testing"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// TestUndoTarget checks which revision undo picks, or why it refuses,
// for each shape of history.
func TestUndoTarget(t *testing.T) {
	entry := func(rev string, outcome v1alpha1.RolloutOutcome) v1alpha1.RevisionHistory {
		return v1alpha1.RevisionHistory{Revision: rev, Outcome: outcome}
	}
	policy := func(spec, update string, history ...v1alpha1.RevisionHistory) *v1alpha1.StagedBindingPolicy {
		p := &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
		if spec != "" {
			p.Spec.Revision = &v1alpha1.Revision{Name: spec}
		}
		p.Status.UpdateRevision, p.Status.History = update, history
		return p
	}
	tests := []struct {
		name    string
		policy  *v1alpha1.StagedBindingPolicy
		to      string
		want    string
		refusal string
	}{
		{name: "the newest completed other than the one rolled out",
			policy: policy("v3", "v3", entry("v1", v1alpha1.OutcomeCompleted), entry("v2", v1alpha1.OutcomeCompleted), entry("v3", v1alpha1.OutcomeCompleted)),
			want:   "v2"},
		{name: "aborted and superseded rollouts are skipped",
			policy: policy("v4", "v4", entry("v1", v1alpha1.OutcomeCompleted), entry("v2", v1alpha1.OutcomeAborted),
				entry("v3", v1alpha1.OutcomeSuperseded), entry("v4", v1alpha1.OutcomeProgressing)),
			want: "v1"},
		{name: "a promoted rollout completed",
			policy: policy("v3", "v3", entry("v1", v1alpha1.OutcomeCompleted), entry("v2", v1alpha1.OutcomePromoted), entry("v3", v1alpha1.OutcomeProgressing)),
			want:   "v2"},
		{name: "the revision the spec names, not yet started, is skipped too",
			policy: policy("v2", "v3", entry("v1", v1alpha1.OutcomeCompleted), entry("v2", v1alpha1.OutcomeCompleted), entry("v3", v1alpha1.OutcomeCompleted)),
			want:   "v1"},
		{name: "a named revision completed earlier",
			policy: policy("v3", "v3", entry("v1", v1alpha1.OutcomeCompleted), entry("v2", v1alpha1.OutcomeCompleted), entry("v3", v1alpha1.OutcomeProgressing)),
			to:     "v1", want: "v1"},
		{name: "a named revision that only aborted",
			policy: policy("v3", "v3", entry("v1", v1alpha1.OutcomeCompleted), entry("v2", v1alpha1.OutcomeAborted)),
			to:     "v2", refusal: `revision "v2" is not Completed in the history of web (completed: v1)`},
		{name: "nothing completed but the one rolled out",
			policy:  policy("v1", "v1", entry("v1", v1alpha1.OutcomeCompleted)),
			refusal: `web has no completed revision other than "v1" in its history (completed: v1)`},
		{name: "no history",
			policy:  policy("v1", "v1"),
			refusal: `(completed: <none>)`},
		{name: "the placement from before spec.revision",
			policy: policy("v2", "v2", entry(v1alpha1.Unrevisioned, v1alpha1.OutcomeCompleted)),
			to:     v1alpha1.Unrevisioned, refusal: "remove spec.revision to roll it out again"},
		{name: "the revision the spec names",
			policy: policy("v2", "v2", entry("v2", v1alpha1.OutcomeCompleted)),
			to:     "v2", refusal: `names "v2" already`},
		{name: "a policy without spec.revision",
			policy: policy("", ""), refusal: "has no spec.revision"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := undoTarget(tt.policy, tt.to)
			switch {
			case tt.refusal == "" && (err != nil || got != tt.want):
				t.Errorf("undoTarget = %q, %v; want %q", got, err, tt.want)
			case tt.refusal != "" && (err == nil || !strings.Contains(err.Error(), tt.refusal)):
				t.Errorf("undoTarget = %q, %v; want a refusal saying %q", got, err, tt.refusal)
			}
		})
	}
}

// TestMatchingResources checks which listable resources a downsync
// clause's apiGroup and resources name.
func TestMatchingResources(t *testing.T) {
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: []string{"get", "list"}},
			{Name: "pods/log", Kind: "Pod", Namespaced: true, Verbs: []string{"get"}},
			{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: []string{"create"}},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: []string{"list"}},
		}},
	}
	names := func(rs []resource) string {
		out := make([]string, 0, len(rs))
		for _, r := range rs {
			out = append(out, r.gvr.GroupResource().String())
		}
		return strings.Join(out, " ")
	}
	for _, tt := range []struct {
		name string
		test ksv1alpha1.DownsyncObjectTest
		want string
	}{
		{"no group, no resources: every listable one, no subresource", ksv1alpha1.DownsyncObjectTest{}, "configmaps deployments.apps"},
		{"resources *", ksv1alpha1.DownsyncObjectTest{Resources: []string{"*"}}, "configmaps deployments.apps"},
		{"the core group", ksv1alpha1.DownsyncObjectTest{APIGroup: ptr.To("")}, "configmaps"},
		{"a named resource of a group", ksv1alpha1.DownsyncObjectTest{APIGroup: ptr.To("apps"), Resources: []string{"deployments"}}, "deployments.apps"},
		{"a resource of another group", ksv1alpha1.DownsyncObjectTest{APIGroup: ptr.To("apps"), Resources: []string{"configmaps"}}, ""},
		{"a resource that cannot be listed", ksv1alpha1.DownsyncObjectTest{Resources: []string{"bindings"}}, ""},
	} {
		if got := names(matchingResources(lists, tt.test)); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestKept checks the rest of a clause on an object its selector
// selects: object names and namespaces, as KubeStellar reads them.
func TestKept(t *testing.T) {
	namespaced := resource{namespaced: true}
	for _, tt := range []struct {
		name      string
		r         resource
		namespace string
		test      ksv1alpha1.DownsyncObjectTest
		want      bool
	}{
		{"no criteria", namespaced, "web", ksv1alpha1.DownsyncObjectTest{}, true},
		{"a named object", namespaced, "web", ksv1alpha1.DownsyncObjectTest{ObjectNames: []string{"web-v1"}}, true},
		{"another name", namespaced, "web", ksv1alpha1.DownsyncObjectTest{ObjectNames: []string{"api"}}, false},
		{"its namespace", namespaced, "web", ksv1alpha1.DownsyncObjectTest{Namespaces: []string{"web"}}, true},
		{"another namespace", namespaced, "web", ksv1alpha1.DownsyncObjectTest{Namespaces: []string{"api"}}, false},
		{"a cluster-scoped object and named namespaces", resource{}, "", ksv1alpha1.DownsyncObjectTest{Namespaces: []string{"web"}}, false},
		{"a cluster-scoped object and namespaces *", resource{}, "", ksv1alpha1.DownsyncObjectTest{Namespaces: []string{"*"}}, true},
		{"a cluster-scoped object and the empty namespace selector", resource{}, "",
			ksv1alpha1.DownsyncObjectTest{NamespaceSelectors: []metav1.LabelSelector{{}}}, true},
		{"a cluster-scoped object and a namespace selector", resource{}, "",
			ksv1alpha1.DownsyncObjectTest{NamespaceSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"team": "a"}}}}, false},
	} {
		got, err := kept(t.Context(), nil, tt.r, tt.namespace, "web-v1", tt.test, nil)
		if err != nil || got != tt.want {
			t.Errorf("%s: %t, %v; want %t", tt.name, got, err, tt.want)
		}
	}
}
