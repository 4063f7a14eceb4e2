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

package kubestellar

import (
	"slices"
	"testing"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
)

func ptr[T any](v T) *T { return &v }

func TestTestObject(t *testing.T) {
	deploy := workloadObject{
		id: objectID{
			GVK:        schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
			Resource:   "deployments",
			ObjectName: objectName{Namespace: "team", Name: "web"},
		},
		labels: map[string]string{"app": "web"},
	}
	namespace := workloadObject{
		id: objectID{
			GVK:        schema.GroupVersionKind{Version: "v1", Kind: "Namespace"},
			Resource:   "namespaces",
			ObjectName: objectName{Name: "team"},
		},
	}
	nsLabels := func(name string) (map[string]string, bool) {
		if name == "team" {
			return map[string]string{"tier": "gold"}, true
		}
		return nil, false
	}
	clause := func(test ksv1alpha1.DownsyncObjectTest, collectors ...string) ksv1alpha1.DownsyncPolicyClause {
		return ksv1alpha1.DownsyncPolicyClause{DownsyncObjectTest: test,
			DownsyncModulation: ksv1alpha1.DownsyncModulation{StatusCollectors: collectors}}
	}
	sel := func(kv ...string) metav1.LabelSelector {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return metav1.LabelSelector{MatchLabels: m}
	}
	cases := []struct {
		name    string
		obj     workloadObject
		clauses []ksv1alpha1.DownsyncPolicyClause
		want    bool
	}{
		{"no clauses", deploy, nil, false},
		{"nil apiGroup matches any group", deploy, []ksv1alpha1.DownsyncPolicyClause{clause(ksv1alpha1.DownsyncObjectTest{ObjectNames: []string{"web"}})}, true},
		{"wrong apiGroup", deploy, []ksv1alpha1.DownsyncPolicyClause{clause(ksv1alpha1.DownsyncObjectTest{APIGroup: ptr("")})}, false},
		{"core group", namespace, []ksv1alpha1.DownsyncPolicyClause{clause(ksv1alpha1.DownsyncObjectTest{APIGroup: ptr(""), Resources: []string{"namespaces"}})}, true},
		{"resource wildcard", deploy, []ksv1alpha1.DownsyncPolicyClause{clause(ksv1alpha1.DownsyncObjectTest{Resources: []string{"*"}})}, true},
		{"wrong resource", deploy, []ksv1alpha1.DownsyncPolicyClause{clause(ksv1alpha1.DownsyncObjectTest{Resources: []string{"configmaps"}})}, false},
		{"namespace listed", deploy, []ksv1alpha1.DownsyncPolicyClause{clause(ksv1alpha1.DownsyncObjectTest{Namespaces: []string{"x", "team"}})}, true},
		{"namespace not listed", deploy, []ksv1alpha1.DownsyncPolicyClause{clause(ksv1alpha1.DownsyncObjectTest{Namespaces: []string{"x"}})}, false},
		{"cluster-scoped needs namespace wildcard", namespace, []ksv1alpha1.DownsyncPolicyClause{clause(ksv1alpha1.DownsyncObjectTest{Namespaces: []string{"team"}})}, false},
		{"cluster-scoped with namespace wildcard", namespace, []ksv1alpha1.DownsyncPolicyClause{clause(ksv1alpha1.DownsyncObjectTest{Namespaces: []string{"*"}})}, true},
		{"name wildcard", deploy, []ksv1alpha1.DownsyncPolicyClause{clause(ksv1alpha1.DownsyncObjectTest{ObjectNames: []string{"*"}})}, true},
		{"wrong name", deploy, []ksv1alpha1.DownsyncPolicyClause{clause(ksv1alpha1.DownsyncObjectTest{ObjectNames: []string{"db"}})}, false},
		{"object selector any", deploy, []ksv1alpha1.DownsyncPolicyClause{clause(ksv1alpha1.DownsyncObjectTest{ObjectSelectors: []metav1.LabelSelector{sel("app", "db"), sel("app", "web")}})}, true},
		{"object selector none", deploy, []ksv1alpha1.DownsyncPolicyClause{clause(ksv1alpha1.DownsyncObjectTest{ObjectSelectors: []metav1.LabelSelector{sel("app", "db")}})}, false},
		{"namespace selector matches", deploy, []ksv1alpha1.DownsyncPolicyClause{clause(ksv1alpha1.DownsyncObjectTest{NamespaceSelectors: []metav1.LabelSelector{sel("tier", "gold")}})}, true},
		{"namespace selector misses", deploy, []ksv1alpha1.DownsyncPolicyClause{clause(ksv1alpha1.DownsyncObjectTest{NamespaceSelectors: []metav1.LabelSelector{sel("tier", "tin")}})}, false},
		{"namespace selector on cluster-scoped", namespace, []ksv1alpha1.DownsyncPolicyClause{clause(ksv1alpha1.DownsyncObjectTest{NamespaceSelectors: []metav1.LabelSelector{sel("tier", "gold")}})}, false},
		{"empty namespace selector matches cluster-scoped", namespace, []ksv1alpha1.DownsyncPolicyClause{clause(ksv1alpha1.DownsyncObjectTest{NamespaceSelectors: []metav1.LabelSelector{sel("tier", "tin"), {}}})}, true},
		{"one of several clauses", deploy, []ksv1alpha1.DownsyncPolicyClause{
			clause(ksv1alpha1.DownsyncObjectTest{ObjectNames: []string{"db"}}),
			clause(ksv1alpha1.DownsyncObjectTest{ObjectNames: []string{"web"}}),
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := testObject(tc.obj, tc.clauses, nsLabels)
			if got != tc.want {
				t.Errorf("testObject = %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("modulation merged from matching clauses only", func(t *testing.T) {
		clauses := []ksv1alpha1.DownsyncPolicyClause{
			{DownsyncObjectTest: ksv1alpha1.DownsyncObjectTest{ObjectNames: []string{"web"}},
				DownsyncModulation: ksv1alpha1.DownsyncModulation{StatusCollectors: []string{"b", "a"}}},
			{DownsyncObjectTest: ksv1alpha1.DownsyncObjectTest{APIGroup: ptr("apps")},
				DownsyncModulation: ksv1alpha1.DownsyncModulation{CreateOnly: true, StatusCollectors: []string{"c", "a"}, WantSingletonReportedState: true}},
			{DownsyncObjectTest: ksv1alpha1.DownsyncObjectTest{ObjectNames: []string{"db"}},
				DownsyncModulation: ksv1alpha1.DownsyncModulation{StatusCollectors: []string{"z"}, WantMultiWECReportedState: true}},
		}
		matched, mod := testObject(deploy, clauses, nsLabels)
		if !matched {
			t.Fatal("not matched")
		}
		ext := mod.toExternal()
		want := ksv1alpha1.DownsyncModulation{CreateOnly: true, StatusCollectors: []string{"a", "b", "c"}, WantSingletonReportedState: true}
		if ext.CreateOnly != want.CreateOnly || !slices.Equal(ext.StatusCollectors, want.StatusCollectors) ||
			ext.WantSingletonReportedState != want.WantSingletonReportedState || ext.WantMultiWECReportedState != want.WantMultiWECReportedState {
			t.Errorf("modulation = %+v, want %+v", ext, want)
		}
	})
}

func TestSelectClusters(t *testing.T) {
	clusters := []Cluster{
		{Name: "a", Labels: map[string]string{"stage": "dev"}},
		{Name: "b", Labels: map[string]string{"stage": "prod"}},
		{Name: "c"},
	}
	cases := []struct {
		name      string
		selectors []metav1.LabelSelector
		want      []string
	}{
		{"no selectors select nothing", nil, []string{}},
		{"empty selector selects all", []metav1.LabelSelector{{}}, []string{"a", "b", "c"}},
		{"any selector", []metav1.LabelSelector{{MatchLabels: map[string]string{"stage": "dev"}}, {MatchLabels: map[string]string{"stage": "prod"}}}, []string{"a", "b"}},
		{"expressions", []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "stage", Operator: metav1.LabelSelectorOpDoesNotExist}}}}, []string{"c"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := selectClusters(tc.selectors, clusters)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(sets.List(got), tc.want) {
				t.Errorf("selectClusters = %v, want %v", sets.List(got), tc.want)
			}
		})
	}
	if _, err := selectClusters([]metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Bogus"}}}}, clusters); err == nil {
		t.Error("invalid selector: no error")
	}
}
