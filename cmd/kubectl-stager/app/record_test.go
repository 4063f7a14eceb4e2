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
	"sigs.k8s.io/yaml"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// TestSelectedStatusesLeavesSecretsOut checks that record writes the
// CombinedStatuses of the objects the stage's filter selects, stripped of
// what the gates do not read, and never a Secret's, whose results may
// hold its data.
func TestSelectedStatusesLeavesSecretsOut(t *testing.T) {
	engine, err := expression.NewEngine()
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	const secretValue = "c2VjcmV0LXZhbHVlLW9mLWdhdGV0ZXN0"
	bp := &ksv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web.stage.dev", UID: "u1", Generation: 1}}
	bp.Status.ObservedGeneration = 1
	binding := &ksv1alpha1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web.stage.dev",
		OwnerReferences: []metav1.OwnerReference{{Kind: "BindingPolicy", Name: bp.Name, UID: bp.UID}}}}
	binding.Spec.Destinations = []ksv1alpha1.Destination{{ClusterId: "dev1"}}
	status := func(group, resource, name, value string) ksv1alpha1.CombinedStatus {
		return ksv1alpha1.CombinedStatus{
			ObjectMeta: metav1.ObjectMeta{Name: name + ".u1", Namespace: "web", ResourceVersion: "7", UID: "cs-uid",
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubestellar"}},
				Labels: map[string]string{rollout.StatusLabelAPIGroup: group, rollout.StatusLabelResource: resource,
					rollout.StatusLabelNamespace: "web", rollout.StatusLabelName: name, rollout.StatusLabelBindingPolicy: bp.Name,
					"other": "x"}},
			Results: []ksv1alpha1.NamedStatusCombination{{Name: "c", ColumnNames: []string{"v"},
				Rows: []ksv1alpha1.StatusCombinationRow{{Columns: []ksv1alpha1.Value{{Type: ksv1alpha1.TypeString, String: &value}}}}}},
		}
	}
	var statuses []ksv1alpha1.CombinedStatus
	for _, o := range []struct{ group, resource, name, value string }{
		{"apps", "deployments", "web", "ok"}, {"", "configmaps", "web-config", "ok"}, {"", "secrets", "web-token", secretValue},
	} {
		binding.Spec.Workload.NamespaceScope = append(binding.Spec.Workload.NamespaceScope, ksv1alpha1.NamespaceScopeDownsyncClause{
			NamespaceScopeDownsyncObject: ksv1alpha1.NamespaceScopeDownsyncObject{
				GroupVersionResource: metav1.GroupVersionResource{Group: o.group, Version: "v1", Resource: o.resource},
				Namespace:            "web", Name: o.name}})
		statuses = append(statuses, status(o.group, o.resource, o.name, o.value))
	}
	objs := stageObjects{bindingPolicy: bp, binding: binding, statuses: statuses}
	for _, tc := range []struct {
		filter string
		want   []string
		left   []string
	}{
		{"", []string{"web.u1", "web-config.u1"}, []string{"secrets web/web-token"}},
		{"downsyncClause.resource == 'deployments'", []string{"web.u1"}, nil},
		{"downsyncClause.resource == 'secrets'", nil, []string{"secrets web/web-token"}},
	} {
		stage := &v1alpha1.Stage{Name: "dev", Filter: tc.filter, Condition: "obj.results.size() > 0"}
		got, left := selectedStatuses(engine, stage, objs)
		var names []string
		for _, cs := range got {
			names = append(names, cs.Name)
			data, err := yaml.Marshal(cs)
			if err != nil {
				t.Fatal(err)
			}
			for _, gone := range []string{"resourceVersion", "uid", "managedFields", "other", secretValue} {
				if strings.Contains(string(data), gone) {
					t.Errorf("filter %q: the recorded %s holds %q:\n%s", tc.filter, cs.Name, gone, data)
				}
			}
		}
		if strings.Join(names, ",") != strings.Join(tc.want, ",") || strings.Join(left, ",") != strings.Join(tc.left, ",") {
			t.Errorf("filter %q: recorded %v, left out %v; want %v, %v", tc.filter, names, left, tc.want, tc.left)
		}
	}
}
