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

// Package v1alpha1 contains the community.kubestellar.io/v1alpha1 types the
// stager reads from its hosting cluster, never from a space: the
// MetricProvider, through which the platform team declares the metric
// endpoints that policies' analyses may query, the RolloutWave, through
// which it orders a revision's rollouts across spaces, and the RolloutFreeze,
// through which it stops rollouts from starting stages, and the
// NotificationDestination, to which it posts rollout events. Their CRDs are
// applied to the hosting cluster only (config/crd/hosting).
// +kubebuilder:object:generate=true
// +groupName=community.kubestellar.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "community.kubestellar.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this API with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers the types of this API.
func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &MetricProvider{}, &MetricProviderList{}, &RolloutWave{}, &RolloutWaveList{},
		&RolloutFreeze{}, &RolloutFreezeList{}, &NotificationDestination{}, &NotificationDestinationList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
