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

package expression_test

import (
	"fmt"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/internal/expression"
)

func Example() {
	engine, err := expression.NewEngine()
	if err != nil {
		panic(err)
	}

	filter, err := engine.Compile(expression.KindFilter, `downsyncClause.resource == "deployments"`)
	if err != nil {
		panic(err)
	}
	clause := expression.ClauseFromNamespaceScope(ksv1alpha1.NamespaceScopeDownsyncClause{
		NamespaceScopeDownsyncObject: ksv1alpha1.NamespaceScopeDownsyncObject{
			GroupVersionResource: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
			Namespace:            "default",
			Name:                 "nginx",
		},
	})
	selected, err := filter.EvalFilter(clause)
	fmt.Println(selected, err)

	condition, err := engine.Compile(expression.KindCondition, `obj.results.exists(r, r.name == 'deployments-aggregator')`)
	if err != nil {
		panic(err)
	}
	done, err := condition.EvalCondition(&ksv1alpha1.CombinedStatus{})
	fmt.Println(done, err)

	_, err = condition.EvalCondition(nil)
	fmt.Println(err)
	// Output:
	// true <nil>
	// false <nil>
	// condition "obj.results.exists(r, r.name == 'deployments-aggregator')": evaluation error: no CombinedStatus given
}
