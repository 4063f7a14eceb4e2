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
	"slices"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout/rollouttest"
)

// TestStripCachedKeepsWhatTheControllerReads checks that a cached Binding
// loses its status and managedFields and keeps its metadata and spec.
func TestStripCachedKeepsWhatTheControllerReads(t *testing.T) {
	p := rollouttest.NewPolicy()
	b := rollouttest.BindingFor(rollouttest.OwnedBP(p, "dev", ""))
	b.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubestellar"}}
	b.Status = ksv1alpha1.BindingStatus{ObservedGeneration: 3, Errors: []string{"some error"},
		Conditions: []ksv1alpha1.BindingPolicyCondition{{Type: "Synced", Status: "True"}}}
	want := b.DeepCopy()
	want.ManagedFields, want.Status = nil, ksv1alpha1.BindingStatus{}

	got, err := stripCached(b)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("stripCached = %+v, want %+v", got, want)
	}
}

// TestNarrowCacheSelectsGeneratedBindingPolicies checks that the informers
// NarrowCache builds list and watch BindingPolicies labelled as any
// policy's, beside any selector of their own, and every other kind as
// asked.
func TestNarrowCacheSelectsGeneratedBindingPolicies(t *testing.T) {
	var asked []string
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			asked = append(asked, "list "+opts.LabelSelector)
			return &ksv1alpha1.BindingPolicyList{}, nil
		},
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			asked = append(asked, "watch "+opts.LabelSelector)
			return watch.NewFake(), nil
		},
	}
	var built []toolscache.ListerWatcher
	o := NarrowCache(cache.Options{NewInformer: func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
		built = append(built, lw)
		return toolscache.NewSharedIndexInformer(lw, obj, resync, idx)
	}})
	o.NewInformer(lw, &ksv1alpha1.BindingPolicy{}, 0, nil)
	o.NewInformer(lw, &ksv1alpha1.Binding{}, 0, nil)
	for _, sel := range []string{"", "a=b"} {
		for _, b := range built {
			w := toolscache.ToListerWatcherWithContext(b)
			if _, err := w.ListWithContext(t.Context(), metav1.ListOptions{LabelSelector: sel}); err != nil {
				t.Fatal(err)
			}
			if _, err := w.WatchWithContext(t.Context(), metav1.ListOptions{LabelSelector: sel}); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := []string{
		"list " + v1alpha1.PolicyLabel, "watch " + v1alpha1.PolicyLabel, "list ", "watch ",
		"list a=b," + v1alpha1.PolicyLabel, "watch a=b," + v1alpha1.PolicyLabel, "list a=b", "watch a=b",
	}
	if !slices.Equal(asked, want) {
		t.Errorf("the API server was asked %q, want %q", asked, want)
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
		if got := generatedSelector.Matches(labels.Set(c.labels)); got != c.want {
			t.Errorf("labels %v selected %t, want %t", c.labels, got, c.want)
		}
	}
}
