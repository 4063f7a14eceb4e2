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

package policytest

import (
	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// Collector is the StatusCollector every policy built here names and every
// shared condition reads: test/framework/stack.NewDeploymentsAggregator
// creates it for KubeStellar, and test/framework/kubestellar's Availability
// reports in its shape.
const Collector = "deployments-aggregator"

// The seed's stage condition, with each of its roots: it holds when the
// Collector's CombinedStatus row counts one available replica.
const (
	// Available reads the CombinedStatus as obj.
	Available = `obj.results.exists(r, r.name == '` + Collector + `' && r.rows.exists(row, row.columns.exists(col, col.type == 'Number' && col.float == '1')))`
	// AvailableCombinedStatus is Available with the root combinedStatus.
	AvailableCombinedStatus = `combinedStatus.results.exists(r, r.name == '` + Collector + `' && r.rows.exists(row, row.columns.exists(col, col.type == 'Number' && col.float == '1')))`
)

// Filters of the stages built here, over a Binding's downsync clauses.
const (
	// Deployments keeps a Binding's Deployments.
	Deployments = `downsyncClause.resource == "deployments"`
	// ConfigMaps keeps a Binding's ConfigMaps (kcp workspaces serve no Deployments).
	ConfigMaps = `downsyncClause.resource == "configmaps"`
)

// AppLabel is the label the workloads of the suites carry, valued with the
// workload's name.
const AppLabel = "app.kubernetes.io/name"

// Stage returns a stage named after the env label of its WECs: it places the
// workload on the WECs labelled env=<env> and, when condition is set, moves
// on once condition holds for every object filter keeps.
func Stage(env, filter, condition string) v1alpha1.Stage {
	return v1alpha1.Stage{
		Name:             env,
		ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"env": env}}},
		Filter:           filter,
		Condition:        condition,
	}
}

// Policy returns a StagedBindingPolicy that downsyncs the objects labelled
// with selector, collects their status with Collector, and goes through
// stages.
func Policy(name string, selector map[string]string, stages ...v1alpha1.Stage) *v1alpha1.StagedBindingPolicy {
	return &v1alpha1.StagedBindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.StagedBindingPolicySpec{
			Downsync: []ksv1alpha1.DownsyncPolicyClause{{
				DownsyncObjectTest: ksv1alpha1.DownsyncObjectTest{
					ObjectSelectors: []metav1.LabelSelector{{MatchLabels: selector}},
				},
				DownsyncModulation: ksv1alpha1.DownsyncModulation{StatusCollectors: []string{Collector}},
			}},
			Stages: stages,
		},
	}
}

// ThreeStages returns the suites' usual rollout of the Deployments of the
// workload labelled AppLabel=<app>: dev, then test, each waiting until the
// workload is Available there, then prod.
func ThreeStages(name, app string) *v1alpha1.StagedBindingPolicy {
	return Policy(name, map[string]string{AppLabel: app},
		Stage("dev", Deployments, Available),
		Stage("test", Deployments, Available),
		Stage("prod", "", ""))
}

// Deployment returns a one-replica nginx Deployment named app, labelled
// AppLabel=<app>: the workload the suites and the demo roll out.
func Deployment(namespace, app string) *appsv1.Deployment {
	labels := map[string]string{AppLabel: app}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: app, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx"}}},
			},
		},
	}
}

// ConfigMap returns a ConfigMap named <app>-config, labelled AppLabel=<app>:
// a workload object that never reports available.
func ConfigMap(namespace, app string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: app + "-config", Labels: map[string]string{AppLabel: app}},
		Data:       map[string]string{"greeting": "hello"},
	}
}
