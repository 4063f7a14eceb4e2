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
	"fmt"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// NarrowCache returns o narrowed to what the controller reads of a space
// (docs/security.md, "What one space's cache holds"):
//
//   - BindingPolicies: only those labelled v1alpha1.PolicyLabel, which every
//     BindingPolicy the stager generates carries. Whoever may write
//     BindingPolicies in a WDS decides how many there are and how large;
//     the others never reach the stager's process. A foreign one whose name
//     the stager wants is read straight from the API server
//     (Reconciler.APIReader) when creating that name is refused.
//   - Bindings: without their status, which KubeStellar writes and the
//     controller never reads (see bindingUpdates).
//   - every object: without its managedFields.
//
// The selection is made where the informer lists and watches (o.NewInformer),
// not through o.ByObject, whose kinds controller-runtime maps when the cache
// is built: a space without KubeStellar's CRDs would then fail to get a
// cache at all, instead of being engaged and reported MissingAPIs.
func NarrowCache(o cache.Options) cache.Options {
	o.DefaultTransform = stripCached
	newInformer := o.NewInformer
	if newInformer == nil {
		newInformer = toolscache.NewSharedIndexInformer
	}
	o.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		if _, ok := obj.(*ksv1alpha1.BindingPolicy); ok {
			lw = selectGenerated(lw)
		}
		return newInformer(lw, obj, resync, indexers)
	}
	return o
}

// generatedSelector selects the BindingPolicies labelled as generated for a
// policy, whatever the policy.
var generatedSelector = func() labels.Selector {
	req, err := labels.NewRequirement(v1alpha1.PolicyLabel, selection.Exists, nil)
	if err != nil {
		panic(fmt.Sprintf("the selector of generated BindingPolicies: %v", err))
	}
	return labels.NewSelector().Add(*req)
}()

// selectGenerated narrows lw's lists and watches to generatedSelector,
// beside any selector they have.
func selectGenerated(lw toolscache.ListerWatcher) toolscache.ListerWatcher {
	inner := toolscache.ToListerWatcherWithContext(lw)
	narrow := func(opts *metav1.ListOptions) {
		if opts.LabelSelector == "" {
			opts.LabelSelector = generatedSelector.String()
		} else {
			opts.LabelSelector += "," + generatedSelector.String()
		}
	}
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			narrow(&opts)
			return inner.ListWithContext(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			narrow(&opts)
			return inner.WatchWithContext(ctx, opts)
		},
	}
}

// stripManagedFields is controller-runtime's transform that drops managedFields.
var stripManagedFields = cache.TransformStripManagedFields()

// stripCached drops what the controller never reads of a cached object:
// its managedFields and, of a Binding, its status. Anything else passes as is.
func stripCached(obj any) (any, error) {
	obj, err := stripManagedFields(obj)
	if err != nil {
		return obj, err
	}
	if b, ok := obj.(*ksv1alpha1.Binding); ok {
		b.Status = ksv1alpha1.BindingStatus{}
	}
	return obj, nil
}

var _ toolscache.TransformFunc = stripCached
