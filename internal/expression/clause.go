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

package expression

import (
	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Clause is one workload-object clause of a KubeStellar Binding, independent
// of whether the object is namespace-scoped or cluster-scoped. It is the input
// of [Program.EvalFilter]. For a cluster-scoped object Namespace is "".
type Clause struct {
	metav1.GroupVersionResource
	// Namespace of the object; the empty string for cluster-scoped objects.
	Namespace string
	// Name of the object.
	Name string
	// ResourceVersion of the object.
	ResourceVersion string
	ksv1alpha1.DownsyncModulation
}

// ClauseFromNamespaceScope converts a namespace-scoped clause of a Binding.
func ClauseFromNamespaceScope(c ksv1alpha1.NamespaceScopeDownsyncClause) Clause {
	return Clause{
		GroupVersionResource: c.GroupVersionResource,
		Namespace:            c.Namespace,
		Name:                 c.Name,
		ResourceVersion:      c.ResourceVersion,
		DownsyncModulation:   c.DownsyncModulation,
	}
}

// ClauseFromClusterScope converts a cluster-scoped clause of a Binding; the
// resulting Clause has an empty Namespace.
func ClauseFromClusterScope(c ksv1alpha1.ClusterScopeDownsyncClause) Clause {
	return Clause{
		GroupVersionResource: c.GroupVersionResource,
		Name:                 c.Name,
		ResourceVersion:      c.ResourceVersion,
		DownsyncModulation:   c.DownsyncModulation,
	}
}

// downsyncClause is the CEL view of a Clause: a flat struct whose field names
// (via the cel struct tags) are the JSON field names of KubeStellar's downsync
// clauses. It is exposed to CEL with ext.NativeTypes so that filters are
// statically type checked. Its CEL type name is "expression.downsyncClause".
type downsyncClause struct {
	Group                      string   `cel:"group"`
	Version                    string   `cel:"version"`
	Resource                   string   `cel:"resource"`
	Namespace                  string   `cel:"namespace"`
	Name                       string   `cel:"name"`
	ResourceVersion            string   `cel:"resourceVersion"`
	CreateOnly                 bool     `cel:"createOnly"`
	StatusCollectors           []string `cel:"statusCollectors"`
	WantSingletonReportedState bool     `cel:"wantSingletonReportedState"`
	WantMultiWECReportedState  bool     `cel:"wantMultiWECReportedState"`
}

// downsyncClauseTypeName is the CEL type name that ext.NativeTypes derives
// for downsyncClause (package alias "expression" + type name).
const downsyncClauseTypeName = "expression.downsyncClause"

// celView converts c to the value bound to the downsyncClause variable.
func (c Clause) celView() *downsyncClause {
	collectors := c.StatusCollectors
	if collectors == nil {
		collectors = []string{}
	}
	return &downsyncClause{
		Group:                      c.Group,
		Version:                    c.Version,
		Resource:                   c.Resource,
		Namespace:                  c.Namespace,
		Name:                       c.Name,
		ResourceVersion:            c.ResourceVersion,
		CreateOnly:                 c.CreateOnly,
		StatusCollectors:           collectors,
		WantSingletonReportedState: c.WantSingletonReportedState,
		WantMultiWECReportedState:  c.WantMultiWECReportedState,
	}
}
