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

package stack

import (
	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// DeploymentsAggregator is the name of the StatusCollector that the
	// seed's stage condition reads.
	DeploymentsAggregator = "deployments-aggregator"

	// AggregatorWECColumn is the first column of a NewDeploymentsAggregator
	// collector's rows: the WEC's name.
	AggregatorWECColumn = "wec"
	// AggregatorAvailableColumn is the second column of those rows: the
	// available replicas in that WEC.
	AggregatorAvailableColumn = "availableReplicas"
)

// NewDeploymentsAggregator returns a StatusCollector (apply it in a WDS) that
// reports, for every WEC a workload object is placed on, one row: the WEC's
// name (a String) and the object's available replicas there (a Number; 0
// while the WEC reports no status, and when its status has no
// availableReplicas — a Deployment's status omits it when it is 0).
//
// KubeStellar evaluates the expressions in CEL with the variables `inventory`
// (`inventory.name` is the WEC), `returned` (`returned.status` is the
// object's status reported from the WEC), `obj` (the object in the WDS) and
// `propagation`. A select collector (rather than a SUM over the WECs) keeps
// "1" in a row per available WEC, so the seed condition
//
//	obj.results.exists(r, r.name == 'deployments-aggregator' &&
//	  r.rows.exists(row, row.columns.exists(col, col.type == 'Number' && col.float == '1')))
//
// holds as soon as one WEC reports one available replica, however many WECs
// the stage has, and never while every WEC reports 0.
//
// KubeStellar evaluates the collector for every destination of the Binding,
// with a null `returned.status` while a WEC has no WorkStatus (or one
// without status); the rows are in no particular order.
func NewDeploymentsAggregator(name string) *ksv1alpha1.StatusCollector {
	if name == "" {
		name = DeploymentsAggregator
	}
	return &ksv1alpha1.StatusCollector{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: ksv1alpha1.StatusCollectorSpec{
			Select: []ksv1alpha1.NamedExpression{
				{Name: AggregatorWECColumn, Def: "inventory.name"},
				{Name: AggregatorAvailableColumn, Def: "returned.status != null && has(returned.status.availableReplicas) ? returned.status.availableReplicas : 0"},
			},
			Limit: 20,
		},
	}
}
