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

// Package rollouttest holds the objects the decision's tests build on: a
// three-stage policy, its generated BindingPolicies, KubeStellar's Binding
// and CombinedStatuses for them, at fixed times. The rollout package's table
// tests and the reconciler's tests share them.
package rollouttest

import (
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
)

// The policy every fixture builds on.
const (
	PolicyName = "web"
	PolicyUID  = types.UID("sbp-uid-1")
	Generation = int64(3)

	// SeedCondition is the seed's condition: the deployments-aggregator
	// StatusCollector reports a Number column equal to 1.
	SeedCondition = `obj.results.exists(r, r.name == 'deployments-aggregator' && r.rows.exists(row, row.columns.exists(col, col.type == 'Number' && col.float == '1')))`
	// SeedConditionCS is SeedCondition with the other root, combinedStatus.
	SeedConditionCS = `combinedStatus.results.exists(r, r.name == 'deployments-aggregator' && r.rows.exists(row, row.columns.exists(col, col.type == 'Number' && col.float == '1')))`
	// DeploymentsFilter selects the Deployments of a Binding.
	DeploymentsFilter = `downsyncClause.resource == 'deployments'`
)

var (
	// Now is Snapshot.Now unless a test moves it.
	Now = metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	// Earlier is a time before Now, for records written by earlier runs.
	Earlier = metav1.NewTime(Now.Add(-time.Hour))
	// MuchEarlier is a time before Earlier.
	MuchEarlier = metav1.NewTime(Now.Add(-2 * time.Hour))
)

// WorkloadObject is a workload object as a Binding clause and a
// CombinedStatus's labels name it.
type WorkloadObject struct {
	GVR       metav1.GroupVersionResource
	Namespace string // empty for a cluster-scoped object
	Name      string
	UID       types.UID
}

// The workload objects of the policy's downsync clauses.
var (
	Deployment = WorkloadObject{GVR: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		Namespace: "web", Name: "nginx", UID: "obj-deploy"}
	ConfigMap = WorkloadObject{GVR: metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		Namespace: "web", Name: "settings", UID: "obj-cm"}
	NamespaceObject = WorkloadObject{GVR: metav1.GroupVersionResource{Version: "v1", Resource: "namespaces"},
		Name: "web", UID: "obj-ns"}
)

// NewEngine returns a CEL engine with the default limits.
func NewEngine(t *testing.T) *expression.Engine {
	t.Helper()
	engine, err := expression.NewEngine()
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	return engine
}

// Stage returns a stage placing on the clusters labelled stage=<name> and
// done when every Deployment passes the seed condition.
func Stage(name string) v1alpha1.Stage {
	return v1alpha1.Stage{
		Name:             name,
		ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"stage": name}}},
		Filter:           DeploymentsFilter,
		Condition:        SeedCondition,
	}
}

// StageWith returns stage(name) with another filter and condition.
func StageWith(name, filter, condition string) v1alpha1.Stage {
	s := Stage(name)
	s.Filter, s.Condition = filter, condition
	return s
}

// NewPolicy returns a policy with the finalizer and the given stages, by
// default dev, test and prod; its rollout has not started.
func NewPolicy(stages ...v1alpha1.Stage) *v1alpha1.StagedBindingPolicy {
	if len(stages) == 0 {
		stages = []v1alpha1.Stage{Stage("dev"), Stage("test"), Stage("prod")}
	}
	return &v1alpha1.StagedBindingPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name:       PolicyName,
			UID:        PolicyUID,
			Generation: Generation,
			Finalizers: []string{v1alpha1.CleanupFinalizer},
		},
		Spec: v1alpha1.StagedBindingPolicySpec{
			Downsync: []ksv1alpha1.DownsyncPolicyClause{
				{
					DownsyncObjectTest: ksv1alpha1.DownsyncObjectTest{APIGroup: ptr.To("apps"),
						Resources: []string{"deployments"}, Namespaces: []string{"web"}},
					DownsyncModulation: ksv1alpha1.DownsyncModulation{StatusCollectors: []string{"deployments-aggregator"}},
				},
				{
					DownsyncObjectTest: ksv1alpha1.DownsyncObjectTest{APIGroup: ptr.To(""),
						Resources: []string{"configmaps", "namespaces"}, ObjectNames: []string{"settings", "web"}},
				},
			},
			Stages: stages,
		},
	}
}

// AtStage records in the policy's status that the rollout is at the named
// Stage: earlier stages Succeeded, the named one Active since earlier, later
// ones Pending.
func AtStage(p *v1alpha1.StagedBindingPolicy, active string) *v1alpha1.StagedBindingPolicy {
	p.Status = v1alpha1.StagedBindingPolicyStatus{ObservedGeneration: p.Generation, ActiveStage: active,
		Phase: v1alpha1.RolloutProgressing}
	reached := false
	for _, s := range p.Spec.Stages {
		r := v1alpha1.StageStatus{Name: s.Name, Phase: v1alpha1.StagePending}
		switch {
		case s.Name == active:
			reached = true
			r.Phase, r.StartTime = v1alpha1.StageActive, ptr.To(Earlier)
			r.BindingPolicy = PolicyName + ".stage." + s.Name
		case !reached:
			r.Phase, r.StartTime, r.CompletionTime = v1alpha1.StageSucceeded, ptr.To(MuchEarlier), ptr.To(Earlier)
			r.BindingPolicy = PolicyName + ".stage." + s.Name
		}
		p.Status.Stages = append(p.Status.Stages, r)
	}
	return p
}

// PolicyOwnerRef is the controller reference a generated BindingPolicy
// carries to its policy.
func PolicyOwnerRef(p *v1alpha1.StagedBindingPolicy) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "community.kubestellar.io/v1alpha1", Kind: "StagedBindingPolicy",
		Name: p.Name, UID: p.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// OwnedBP returns the BindingPolicy of a stage as the policy generated it and
// KubeStellar resolved it: generation 1, observed.
func OwnedBP(p *v1alpha1.StagedBindingPolicy, stageName string, uid types.UID) *ksv1alpha1.BindingPolicy {
	selectors := []metav1.LabelSelector{{MatchLabels: map[string]string{"stage": stageName}}}
	for _, s := range p.Spec.Stages {
		if s.Name == stageName {
			selectors = s.ClusterSelectors
		}
	}
	return &ksv1alpha1.BindingPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name:            p.Name + ".stage." + stageName,
			UID:             uid,
			Generation:      1,
			ResourceVersion: "100",
			Labels: map[string]string{
				"community.kubestellar.io/staged-binding-policy": p.Name,
				"community.kubestellar.io/stage":                 stageName,
			},
			OwnerReferences: []metav1.OwnerReference{PolicyOwnerRef(p)},
		},
		Spec:   ksv1alpha1.BindingPolicySpec{ClusterSelectors: selectors, Downsync: p.Spec.Downsync},
		Status: ksv1alpha1.BindingPolicyStatus{ObservedGeneration: 1},
	}
}

// ForeignBP returns a BindingPolicy that carries the policy's label but is
// owned by another object (say an older policy of the same name).
func ForeignBP(p *v1alpha1.StagedBindingPolicy, stageName string, uid types.UID) *ksv1alpha1.BindingPolicy {
	bp := OwnedBP(p, stageName, uid)
	bp.OwnerReferences[0].UID = "some-other-sbp-uid"
	return bp
}

// BeingDeleted marks a BindingPolicy as being deleted.
func BeingDeleted(bp *ksv1alpha1.BindingPolicy) *ksv1alpha1.BindingPolicy {
	bp.DeletionTimestamp = ptr.To(Earlier)
	bp.Finalizers = []string{"example.com/hold"}
	return bp
}

// BindingFor returns the Binding KubeStellar makes for a BindingPolicy,
// owned by it, naming the given objects (by default the deployment, the
// configmap and the cluster-scoped namespace) on two clusters.
func BindingFor(bp *ksv1alpha1.BindingPolicy, objs ...WorkloadObject) *ksv1alpha1.Binding {
	if len(objs) == 0 {
		objs = []WorkloadObject{Deployment, ConfigMap, NamespaceObject}
	}
	b := &ksv1alpha1.Binding{
		ObjectMeta: metav1.ObjectMeta{
			Name: bp.Name,
			UID:  "binding-" + bp.UID,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "control.kubestellar.io/v1alpha1", Kind: "BindingPolicy",
				Name: bp.Name, UID: bp.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: ksv1alpha1.BindingSpec{
			Destinations: []ksv1alpha1.Destination{{ClusterId: "cluster1"}, {ClusterId: "cluster2"}},
		},
	}
	for _, o := range objs {
		mod := ksv1alpha1.DownsyncModulation{StatusCollectors: []string{"deployments-aggregator"}}
		if o.Namespace == "" {
			b.Spec.Workload.ClusterScope = append(b.Spec.Workload.ClusterScope, ksv1alpha1.ClusterScopeDownsyncClause{
				ClusterScopeDownsyncObject: ksv1alpha1.ClusterScopeDownsyncObject{GroupVersionResource: o.GVR,
					Name: o.Name, ResourceVersion: "7"},
				DownsyncModulation: mod,
			})
			continue
		}
		b.Spec.Workload.NamespaceScope = append(b.Spec.Workload.NamespaceScope, ksv1alpha1.NamespaceScopeDownsyncClause{
			NamespaceScopeDownsyncObject: ksv1alpha1.NamespaceScopeDownsyncObject{GroupVersionResource: o.GVR,
				Namespace: o.Namespace, Name: o.Name, ResourceVersion: "7"},
			DownsyncModulation: mod,
		})
	}
	return b
}

// CombinedStatus returns the CombinedStatus KubeStellar makes for an object
// under a BindingPolicy: named <objUID>.<bpUID>, with KubeStellar's five
// labels and a deployments-aggregator result with one Number column.
func CombinedStatus(bp *ksv1alpha1.BindingPolicy, o WorkloadObject, count string) ksv1alpha1.CombinedStatus {
	namespace := o.Namespace
	if namespace == "" {
		namespace = "kubestellar-report"
	}
	return ksv1alpha1.CombinedStatus{
		ObjectMeta: metav1.ObjectMeta{
			Name:      string(o.UID) + "." + string(bp.UID),
			Namespace: namespace,
			Labels: map[string]string{
				"status.kubestellar.io/api-group":      o.GVR.Group,
				"status.kubestellar.io/resource":       o.GVR.Resource,
				"status.kubestellar.io/namespace":      o.Namespace,
				"status.kubestellar.io/name":           o.Name,
				"status.kubestellar.io/binding-policy": bp.Name,
			},
		},
		Results: []ksv1alpha1.NamedStatusCombination{{
			Name:        "deployments-aggregator",
			ColumnNames: []string{"count"},
			Rows: []ksv1alpha1.StatusCombinationRow{{Columns: []ksv1alpha1.Value{
				{Type: ksv1alpha1.TypeNumber, Number: ptr.To(count)},
			}}},
		}},
	}
}

// BindingPolicyNames returns the names of bps, in their order.
func BindingPolicyNames(bps []ksv1alpha1.BindingPolicy) []string {
	names := make([]string, 0, len(bps))
	for _, bp := range bps {
		names = append(names, bp.Name)
	}
	return names
}
