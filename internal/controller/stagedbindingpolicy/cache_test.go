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
	"testing"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout/rollouttest"
)

// TestStripBindingKeepsWhatTheControllerReads checks that a cached Binding
// loses its status and managedFields and keeps its metadata and spec.
func TestStripBindingKeepsWhatTheControllerReads(t *testing.T) {
	p := rollouttest.NewPolicy()
	b := rollouttest.BindingFor(rollouttest.OwnedBP(p, "dev", ""))
	b.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubestellar"}}
	b.Status = ksv1alpha1.BindingStatus{ObservedGeneration: 3, Errors: []string{"some error"},
		Conditions: []ksv1alpha1.BindingPolicyCondition{{Type: "Synced", Status: "True"}}}
	want := b.DeepCopy()
	want.ManagedFields, want.Status = nil, ksv1alpha1.BindingStatus{}

	got, err := stripBinding(b)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("stripBinding = %+v, want %+v", got, want)
	}
}

// TestCacheSelectsGeneratedBindingPolicies checks the label selection of
// BindingPolicies: labelled as any policy's, whatever the value.
func TestCacheSelectsGeneratedBindingPolicies(t *testing.T) {
	var sel cache.ByObject
	for obj, by := range CacheByObject() {
		if _, ok := obj.(*ksv1alpha1.BindingPolicy); ok {
			sel = by
		}
	}
	for _, c := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{v1alpha1.PolicyLabel: "p"}, true},
		{map[string]string{v1alpha1.PolicyLabel: ""}, true},
		{map[string]string{"app": "p"}, false},
		{nil, false},
	} {
		if got := sel.Label != nil && sel.Label.Matches(labels.Set(c.labels)); got != c.want {
			t.Errorf("labels %v selected %t, want %t", c.labels, got, c.want)
		}
	}
}
