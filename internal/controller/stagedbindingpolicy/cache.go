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
	"fmt"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// CacheByObject narrows what a space's cache holds to what the controller
// reads (docs/security.md, "What one space's cache holds"):
//
//   - BindingPolicies: only those labelled v1alpha1.PolicyLabel, which every
//     BindingPolicy the stager generates carries. Whoever may write
//     BindingPolicies in a WDS decides how many there are and how large;
//     the others never reach the stager's process. A foreign one whose name
//     the stager wants is read straight from the API server
//     (Reconciler.APIReader) when creating that name is refused.
//   - Bindings: without their status, which KubeStellar writes and the
//     controller never reads (see bindingUpdates).
//
// Every other kind keeps the cache's default (managedFields stripped).
func CacheByObject() map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&ksv1alpha1.BindingPolicy{}: {Label: generatedBindingPolicies},
		&ksv1alpha1.Binding{}:       {Transform: stripBinding},
	}
}

// generatedBindingPolicies selects the BindingPolicies labelled as
// generated for a policy, whatever the policy.
var generatedBindingPolicies = func() labels.Selector {
	req, err := labels.NewRequirement(v1alpha1.PolicyLabel, selection.Exists, nil)
	if err != nil {
		panic(fmt.Sprintf("the selector of generated BindingPolicies: %v", err))
	}
	return labels.NewSelector().Add(*req)
}()

// stripManagedFields is the cache's default transform.
var stripManagedFields = cache.TransformStripManagedFields()

// stripBinding drops what the controller never reads of a Binding: its
// managedFields and its status. Anything else passes as is.
func stripBinding(obj any) (any, error) {
	obj, err := stripManagedFields(obj)
	if err != nil {
		return obj, err
	}
	if b, ok := obj.(*ksv1alpha1.Binding); ok {
		b.Status = ksv1alpha1.BindingStatus{}
	}
	return obj, nil
}

var _ toolscache.TransformFunc = stripBinding
