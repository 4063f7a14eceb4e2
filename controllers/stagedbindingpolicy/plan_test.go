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
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/controllers/stagedbindingpolicy/expression"
)

// ---------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------

const (
	testPolicyName = "web"
	testPolicyUID  = types.UID("sbp-uid-1")
	testGeneration = int64(3)

	// seedCondition is the seed's condition: the deployments-aggregator
	// StatusCollector reports a Number column equal to 1.
	seedCondition = `obj.results.exists(r, r.name == 'deployments-aggregator' && r.rows.exists(row, row.columns.exists(col, col.type == 'Number' && col.float == '1')))`
	// seedConditionCS is seedCondition with the other root, combinedStatus.
	seedConditionCS = `combinedStatus.results.exists(r, r.name == 'deployments-aggregator' && r.rows.exists(row, row.columns.exists(col, col.type == 'Number' && col.float == '1')))`
	// deploymentsFilter selects the Deployments of a Binding.
	deploymentsFilter = `downsyncClause.resource == 'deployments'`
)

var (
	// now is Snapshot.Now unless a test moves it.
	now = metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	// earlier is a time before now, for records written by earlier runs.
	earlier = metav1.NewTime(now.Add(-time.Hour))
	// muchEarlier is a time before earlier.
	muchEarlier = metav1.NewTime(now.Add(-2 * time.Hour))
)

// workloadObject is a workload object as a Binding clause and a
// CombinedStatus's labels name it.
type workloadObject struct {
	gvr       metav1.GroupVersionResource
	namespace string // empty for a cluster-scoped object
	name      string
	uid       types.UID
}

var (
	deployment = workloadObject{gvr: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		namespace: "web", name: "nginx", uid: "obj-deploy"}
	configMap = workloadObject{gvr: metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		namespace: "web", name: "settings", uid: "obj-cm"}
	namespaceObj = workloadObject{gvr: metav1.GroupVersionResource{Version: "v1", Resource: "namespaces"},
		name: "web", uid: "obj-ns"}
)

func newEngine(t *testing.T) *expression.Engine {
	t.Helper()
	engine, err := expression.NewEngine()
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	return engine
}

// stage returns a stage placing on the clusters labelled stage=<name> and
// done when every Deployment passes the seed condition.
func stage(name string) v1alpha1.Stage {
	return v1alpha1.Stage{
		Name:             name,
		ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"stage": name}}},
		Filter:           deploymentsFilter,
		Condition:        seedCondition,
	}
}

// stageWith returns stage(name) with another filter and condition.
func stageWith(name, filter, condition string) v1alpha1.Stage {
	s := stage(name)
	s.Filter, s.Condition = filter, condition
	return s
}

// newPolicy returns a policy with the finalizer and the given stages, by
// default dev, test and prod; its rollout has not started.
func newPolicy(stages ...v1alpha1.Stage) *v1alpha1.StagedBindingPolicy {
	if len(stages) == 0 {
		stages = []v1alpha1.Stage{stage("dev"), stage("test"), stage("prod")}
	}
	return &v1alpha1.StagedBindingPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name:       testPolicyName,
			UID:        testPolicyUID,
			Generation: testGeneration,
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

// atStage records in the policy's status that the rollout is at the named
// stage: earlier stages Succeeded, the named one Active since earlier, later
// ones Pending.
func atStage(p *v1alpha1.StagedBindingPolicy, active string) *v1alpha1.StagedBindingPolicy {
	p.Status = v1alpha1.StagedBindingPolicyStatus{ObservedGeneration: p.Generation, ActiveStage: active,
		Phase: v1alpha1.RolloutProgressing}
	reached := false
	for _, s := range p.Spec.Stages {
		r := v1alpha1.StageStatus{Name: s.Name, Phase: v1alpha1.StagePending}
		switch {
		case s.Name == active:
			reached = true
			r.Phase, r.StartTime = v1alpha1.StageActive, ptr.To(earlier)
			r.BindingPolicy = testPolicyName + ".stage." + s.Name
		case !reached:
			r.Phase, r.StartTime, r.CompletionTime = v1alpha1.StageSucceeded, ptr.To(muchEarlier), ptr.To(earlier)
			r.BindingPolicy = testPolicyName + ".stage." + s.Name
		}
		p.Status.Stages = append(p.Status.Stages, r)
	}
	return p
}

// policyOwnerRef is the controller reference a generated BindingPolicy
// carries to its policy.
func policyOwnerRef(p *v1alpha1.StagedBindingPolicy) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "community.kubestellar.io/v1alpha1", Kind: "StagedBindingPolicy",
		Name: p.Name, UID: p.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// ownedBP returns the BindingPolicy of a stage as the policy generated it and
// KubeStellar resolved it: generation 1, observed.
func ownedBP(p *v1alpha1.StagedBindingPolicy, stageName string, uid types.UID) *ksv1alpha1.BindingPolicy {
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
			OwnerReferences: []metav1.OwnerReference{policyOwnerRef(p)},
		},
		Spec:   ksv1alpha1.BindingPolicySpec{ClusterSelectors: selectors, Downsync: p.Spec.Downsync},
		Status: ksv1alpha1.BindingPolicyStatus{ObservedGeneration: 1},
	}
}

// foreignBP returns a BindingPolicy that carries the policy's label but is
// owned by another object (say an older policy of the same name).
func foreignBP(p *v1alpha1.StagedBindingPolicy, stageName string, uid types.UID) *ksv1alpha1.BindingPolicy {
	bp := ownedBP(p, stageName, uid)
	bp.OwnerReferences[0].UID = "some-other-sbp-uid"
	return bp
}

// beingDeleted marks a BindingPolicy as being deleted.
func beingDeleted(bp *ksv1alpha1.BindingPolicy) *ksv1alpha1.BindingPolicy {
	bp.DeletionTimestamp = ptr.To(earlier)
	bp.Finalizers = []string{"example.com/hold"}
	return bp
}

// bindingFor returns the Binding KubeStellar makes for a BindingPolicy,
// owned by it, naming the given objects (by default the deployment, the
// configmap and the cluster-scoped namespace) on two clusters.
func bindingFor(bp *ksv1alpha1.BindingPolicy, objs ...workloadObject) *ksv1alpha1.Binding {
	if len(objs) == 0 {
		objs = []workloadObject{deployment, configMap, namespaceObj}
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
		if o.namespace == "" {
			b.Spec.Workload.ClusterScope = append(b.Spec.Workload.ClusterScope, ksv1alpha1.ClusterScopeDownsyncClause{
				ClusterScopeDownsyncObject: ksv1alpha1.ClusterScopeDownsyncObject{GroupVersionResource: o.gvr,
					Name: o.name, ResourceVersion: "7"},
				DownsyncModulation: mod,
			})
			continue
		}
		b.Spec.Workload.NamespaceScope = append(b.Spec.Workload.NamespaceScope, ksv1alpha1.NamespaceScopeDownsyncClause{
			NamespaceScopeDownsyncObject: ksv1alpha1.NamespaceScopeDownsyncObject{GroupVersionResource: o.gvr,
				Namespace: o.namespace, Name: o.name, ResourceVersion: "7"},
			DownsyncModulation: mod,
		})
	}
	return b
}

// combinedStatus returns the CombinedStatus KubeStellar makes for an object
// under a BindingPolicy: named <objUID>.<bpUID>, with KubeStellar's five
// labels and a deployments-aggregator result with one Number column.
func combinedStatus(bp *ksv1alpha1.BindingPolicy, o workloadObject, count string) ksv1alpha1.CombinedStatus {
	namespace := o.namespace
	if namespace == "" {
		namespace = "kubestellar-report"
	}
	return ksv1alpha1.CombinedStatus{
		ObjectMeta: metav1.ObjectMeta{
			Name:      string(o.uid) + "." + string(bp.UID),
			Namespace: namespace,
			Labels: map[string]string{
				"status.kubestellar.io/api-group":      o.gvr.Group,
				"status.kubestellar.io/resource":       o.gvr.Resource,
				"status.kubestellar.io/namespace":      o.namespace,
				"status.kubestellar.io/name":           o.name,
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

// newSnapshot returns what the reconciler would read for the policy, given
// the BindingPolicies labelled for it: the active one is found by name.
func newSnapshot(p *v1alpha1.StagedBindingPolicy, bps ...*ksv1alpha1.BindingPolicy) *Snapshot {
	snap := &Snapshot{Policy: p, Now: now}
	for _, bp := range bps {
		snap.BindingPolicies = append(snap.BindingPolicies, *bp.DeepCopy())
	}
	resync(snap)
	return snap
}

// activeBPName is the name of the active stage's BindingPolicy, or "" when
// the recorded active stage is not in the spec (or none is recorded).
func activeBPName(p *v1alpha1.StagedBindingPolicy) string {
	for _, s := range p.Spec.Stages {
		if s.Name == p.Status.ActiveStage {
			return p.Name + ".stage." + s.Name
		}
	}
	return ""
}

// nextBPName is the name of the BindingPolicy of the stage after the active
// one, or "" when there is none.
func nextBPName(p *v1alpha1.StagedBindingPolicy) string {
	for i, s := range p.Spec.Stages {
		if s.Name == p.Status.ActiveStage && i+1 < len(p.Spec.Stages) {
			return p.Name + ".stage." + p.Spec.Stages[i+1].Name
		}
	}
	return ""
}

// resync re-derives what the reconciler reads by the active stage's name:
// ActiveBindingPolicy, and the Binding and CombinedStatuses of that name;
// and NextBindingPolicy by the next stage's.
func resync(snap *Snapshot) {
	name := activeBPName(snap.Policy)
	snap.ActiveBindingPolicy, snap.NextBindingPolicy = nil, nil
	if name == "" || snap.Policy.DeletionTimestamp != nil {
		snap.Binding, snap.CombinedStatuses = nil, nil
		return
	}
	next := nextBPName(snap.Policy)
	for i := range snap.BindingPolicies {
		switch snap.BindingPolicies[i].Name {
		case name:
			snap.ActiveBindingPolicy = snap.BindingPolicies[i].DeepCopy()
		case next:
			snap.NextBindingPolicy = snap.BindingPolicies[i].DeepCopy()
		}
	}
	if snap.Binding != nil && snap.Binding.Name != name {
		snap.Binding = nil
	}
	snap.CombinedStatuses = slices.DeleteFunc(snap.CombinedStatuses, func(cs ksv1alpha1.CombinedStatus) bool {
		return cs.Labels["status.kubestellar.io/binding-policy"] != name
	})
}

// fixture builds a snapshot step by step.
type fixture struct{ *Snapshot }

// at returns a policy (default stages unless given) at the named stage with
// that stage's BindingPolicy (UID "bp-<stage>") in place; nothing resolved yet.
func at(active string, stages ...v1alpha1.Stage) fixture {
	p := atStage(newPolicy(stages...), active)
	return fixture{newSnapshot(p, ownedBP(p, active, types.UID("bp-"+active)))}
}

// bound adds the Binding of the active BindingPolicy, naming the default workload objects.
func (f fixture) bound() fixture {
	f.Binding = bindingFor(f.ActiveBindingPolicy)
	return f
}

// reporting adds the CombinedStatus of o under the active BindingPolicy.
func (f fixture) reporting(o workloadObject, count string) fixture {
	f.CombinedStatuses = append(f.CombinedStatuses, combinedStatus(f.ActiveBindingPolicy, o, count))
	return f
}

// alsoBP adds a labelled BindingPolicy other than the active one.
func (f fixture) alsoBP(bp *ksv1alpha1.BindingPolicy) fixture {
	f.BindingPolicies = append(f.BindingPolicies, *bp.DeepCopy())
	return f
}

// with applies any other change to the snapshot.
func (f fixture) with(change func(*Snapshot)) fixture {
	change(f.Snapshot)
	return f
}

// placingNowhere empties the destinations of the Binding: the stage's
// clusterSelectors select no cluster.
func (f fixture) placingNowhere() fixture {
	f.Binding.Spec.Destinations = nil
	return f
}

// replan applies a status action to a copy of the snapshot, a minute later,
// and plans again. The objects around the active stage stay as they are
// unless the action moved the active stage.
func replan(t *testing.T, snap *Snapshot, engine *expression.Engine, action Action) Action {
	t.Helper()
	if action.Type != ActionUpdateStatus || action.Status == nil {
		t.Fatalf("replan needs an UpdateStatus action, got %s", action.Type)
	}
	next := *snap
	next.Policy = snap.Policy.DeepCopy()
	next.Policy.Status = *action.Status.DeepCopy()
	next.Now = metav1.NewTime(snap.Now.Add(time.Minute))
	if next.Policy.Status.ActiveStage != snap.Policy.Status.ActiveStage {
		resync(&next) // the reconciler reads by the new active stage's name
	}
	return Plan(&next, engine)
}

func condition(t *testing.T, status *v1alpha1.StagedBindingPolicyStatus, conditionType string) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(status.Conditions, conditionType)
	if c == nil {
		t.Fatalf("status has no %s condition: %+v", conditionType, status.Conditions)
	}
	return *c
}

// eventKeys returns "Type/Reason" per event.
func eventKeys(events []Event) []string {
	keys := make([]string, 0, len(events))
	for _, e := range events {
		keys = append(keys, e.Type+"/"+e.Reason)
	}
	return keys
}

func bpNames(bps []ksv1alpha1.BindingPolicy) []string {
	names := make([]string, 0, len(bps))
	for _, bp := range bps {
		names = append(names, bp.Name)
	}
	return names
}

func timeEqual(a *metav1.Time, b metav1.Time) bool {
	return a != nil && a.Equal(&b)
}

// ---------------------------------------------------------------------------
// 1. Finalizer and deletion
// ---------------------------------------------------------------------------

func TestPlanFinalizerAndDeletion(t *testing.T) {
	engine := newEngine(t)
	withoutFinalizer := func(p *v1alpha1.StagedBindingPolicy) *v1alpha1.StagedBindingPolicy {
		p.Finalizers = nil
		return p
	}
	deleting := func(p *v1alpha1.StagedBindingPolicy) *v1alpha1.StagedBindingPolicy {
		p.DeletionTimestamp = ptr.To(earlier)
		return p
	}
	p := newPolicy()

	tests := []struct {
		name    string
		snap    *Snapshot
		want    ActionType
		wantBP  string
		wantUID types.UID
	}{
		{name: "finalizer missing on a new policy",
			snap: newSnapshot(withoutFinalizer(newPolicy())),
			want: ActionAddFinalizer},
		{name: "finalizer missing comes before an invalid expression",
			snap: newSnapshot(withoutFinalizer(newPolicy(stageWith("dev", "", "obj.results.exists(")))),
			want: ActionAddFinalizer},
		{name: "finalizer missing mid-rollout comes before the BindingPolicy",
			snap: newSnapshot(withoutFinalizer(atStage(newPolicy(), "test"))),
			want: ActionAddFinalizer},
		{name: "deleted: deletes an owned BindingPolicy, skipping a foreign one",
			snap: newSnapshot(deleting(atStage(newPolicy(), "test")),
				foreignBP(p, "canary", "bp-foreign"), ownedBP(p, "dev", "bp-dev"), ownedBP(p, "test", "bp-test")),
			want: ActionDeleteBindingPolicy, wantBP: "web.stage.dev", wantUID: "bp-dev"},
		{name: "deleted: skips an owned BindingPolicy already being deleted",
			snap: newSnapshot(deleting(atStage(newPolicy(), "test")),
				beingDeleted(ownedBP(p, "dev", "bp-dev")), ownedBP(p, "test", "bp-test")),
			want: ActionDeleteBindingPolicy, wantBP: "web.stage.test", wantUID: "bp-test"},
		{name: "deleted: an invalid expression does not stop the cleanup",
			snap: newSnapshot(deleting(newPolicy(stageWith("dev", "", "obj.results.exists("))),
				ownedBP(p, "dev", "bp-dev")),
			want: ActionDeleteBindingPolicy, wantBP: "web.stage.dev", wantUID: "bp-dev"},
		{name: "deleted: held BindingPolicies but the finalizer was removed by hand",
			snap: newSnapshot(withoutFinalizer(deleting(atStage(newPolicy(), "test"))), beingDeleted(ownedBP(p, "test", "bp-test"))),
			want: ActionNone},
		{name: "deleted: only a foreign BindingPolicy left",
			snap: newSnapshot(deleting(atStage(newPolicy(), "test")), foreignBP(p, "canary", "bp-foreign")),
			want: ActionRemoveFinalizer},
		{name: "deleted: nothing left",
			snap: newSnapshot(deleting(atStage(newPolicy(), "prod"))),
			want: ActionRemoveFinalizer},
		{name: "deleted: nothing left and finalizer already gone",
			snap: newSnapshot(withoutFinalizer(deleting(newPolicy()))),
			want: ActionNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.snap, engine)
			if got.Type != tt.want {
				t.Fatalf("Plan() = %s (%s), want %s", got.Type, got.Why, tt.want)
			}
			if got.Status != nil {
				t.Errorf("Plan() wants to write status %+v", got.Status)
			}
			if tt.wantBP == "" {
				if got.BindingPolicy != nil {
					t.Errorf("Plan() names BindingPolicy %s, want none", got.BindingPolicy.Name)
				}
				return
			}
			if got.BindingPolicy == nil || got.BindingPolicy.Name != tt.wantBP || got.BindingPolicy.UID != tt.wantUID {
				t.Fatalf("Plan() BindingPolicy = %v, want %s (UID %s)", got.BindingPolicy, tt.wantBP, tt.wantUID)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 2. Starting (and restarting) the rollout
// ---------------------------------------------------------------------------

func TestPlanStartsRollout(t *testing.T) {
	engine := newEngine(t)

	// reset is a policy whose recorded active stage "qa" was removed from the spec.
	reset := newPolicy()
	reset.Status = v1alpha1.StagedBindingPolicyStatus{
		ObservedGeneration: 2, ActiveStage: "qa", Phase: v1alpha1.RolloutProgressing,
		Stages: []v1alpha1.StageStatus{
			{Name: "dev", Phase: v1alpha1.StageSucceeded, StartTime: ptr.To(muchEarlier), CompletionTime: ptr.To(earlier),
				BindingPolicy: "web.stage.dev", Message: "old"},
			{Name: "qa", Phase: v1alpha1.StageActive, StartTime: ptr.To(earlier), BindingPolicy: "web.stage.qa"},
			{Name: "prod", Phase: v1alpha1.StagePending},
		},
	}

	tests := []struct {
		name       string
		snap       *Snapshot
		wantEvents []string
		wantNotes  []string // substrings of the first event's note
	}{
		{name: "not started",
			snap:       newSnapshot(newPolicy()),
			wantEvents: []string{"Normal/StageStarted"},
			wantNotes:  []string{`"dev"`}},
		{name: "not started, leftover BindingPolicy does not matter",
			snap:       newSnapshot(newPolicy(), ownedBP(newPolicy(), "prod", "bp-old-prod")),
			wantEvents: []string{"Normal/StageStarted"},
			wantNotes:  []string{`"dev"`}},
		{name: "active stage removed from the spec",
			snap:       newSnapshot(reset, ownedBP(reset, "qa", "bp-qa")),
			wantEvents: []string{"Warning/ActiveStageReset", "Normal/StageStarted"},
			wantNotes:  []string{`"qa"`, `"dev"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.snap, engine)
			if got.Type != ActionUpdateStatus {
				t.Fatalf("Plan() = %s (%s), want %s", got.Type, got.Why, ActionUpdateStatus)
			}
			if got.BindingPolicy != nil {
				t.Errorf("Plan() names BindingPolicy %s", got.BindingPolicy.Name)
			}
			s := got.Status
			if s.ActiveStage != "dev" || s.Phase != v1alpha1.RolloutProgressing || s.ObservedGeneration != testGeneration {
				t.Errorf("status activeStage/phase/observedGeneration = %q/%q/%d, want dev/Progressing/%d",
					s.ActiveStage, s.Phase, s.ObservedGeneration, testGeneration)
			}
			want := []v1alpha1.StageStatus{
				{Name: "dev", Phase: v1alpha1.StageActive, StartTime: ptr.To(now), BindingPolicy: "web.stage.dev",
					Message: "creating the stage's BindingPolicy"},
				{Name: "test", Phase: v1alpha1.StagePending},
				{Name: "prod", Phase: v1alpha1.StagePending},
			}
			if !equality.Semantic.DeepEqual(s.Stages, want) {
				t.Errorf("stage records differ (-want +got):\n%s", diff.Diff(want, s.Stages))
			}
			if c := condition(t, s, v1alpha1.ConditionReady); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonBindingPolicyPending {
				t.Errorf("Ready = %s/%s, want False/%s", c.Status, c.Reason, v1alpha1.ReasonBindingPolicyPending)
			}
			if c := condition(t, s, v1alpha1.ConditionCompleted); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonStagesRemaining {
				t.Errorf("Completed = %s/%s, want False/%s", c.Status, c.Reason, v1alpha1.ReasonStagesRemaining)
			}
			if keys := eventKeys(got.Events); !slices.Equal(keys, tt.wantEvents) {
				t.Fatalf("events = %v, want %v", keys, tt.wantEvents)
			}
			for _, sub := range tt.wantNotes {
				if !strings.Contains(got.Events[0].Note, sub) {
					t.Errorf("event note %q does not contain %s", got.Events[0].Note, sub)
				}
			}

			// Once the start is written, the next run creates dev's
			// BindingPolicy and does not start the stage again.
			again := replan(t, tt.snap, engine, got)
			if again.Type != ActionCreateBindingPolicy || again.BindingPolicy.Name != "web.stage.dev" {
				t.Fatalf("after the start, Plan() = %s %v (%s), want CreateBindingPolicy web.stage.dev",
					again.Type, again.BindingPolicy, again.Why)
			}
			if len(again.Events) != 0 {
				t.Errorf("after the start, events = %v, want none", eventKeys(again.Events))
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 3. Expressions that do not compile
// ---------------------------------------------------------------------------

func TestPlanInvalidExpression(t *testing.T) {
	engine := newEngine(t)
	const (
		badFilter    = `downsyncClause.resourc == 'deployments'` // no such field
		badCondition = `obj.results.exists(r, r.name ==)`        // syntax error
		notBool      = `obj.results.size()`
	)

	tests := []struct {
		name string
		snap *Snapshot
		// wantNamed are substrings the Ready message must contain.
		wantNamed []string
	}{
		{name: "filter of the first stage, rollout not started",
			snap:      newSnapshot(newPolicy(stageWith("dev", badFilter, seedCondition), stage("test"), stage("prod"))),
			wantNamed: []string{`stage "dev"`, badFilter}},
		{name: "condition of a later stage, BindingPolicy missing",
			snap:      newSnapshot(atStage(newPolicy(stage("dev"), stage("test"), stageWith("prod", "", badCondition)), "dev")),
			wantNamed: []string{`stage "prod"`, badCondition}},
		{name: "condition of a later stage, would otherwise advance",
			snap: at("dev", stage("dev"), stage("test"), stageWith("prod", "", badCondition)).
				bound().reporting(deployment, "1").Snapshot,
			wantNamed: []string{`stage "prod"`, badCondition}},
		{name: "would otherwise delete the previous stage's BindingPolicy",
			snap: at("test", stage("dev"), stage("test"), stageWith("prod", deploymentsFilter, notBool)).
				bound().alsoBP(ownedBP(newPolicy(), "dev", "bp-dev")).Snapshot,
			wantNamed: []string{`stage "prod"`, notBool, "bool"}},
		{name: "two stages broken, both named",
			snap: at("test", stageWith("dev", badFilter, ""), stage("test"), stageWith("prod", "", badCondition)).
				with(func(s *Snapshot) { s.ActiveBindingPolicy.Spec.ClusterSelectors = nil }).Snapshot,
			wantNamed: []string{`stage "dev"`, badFilter, `stage "prod"`, badCondition}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.snap.Policy.Status.DeepCopy()
			got := Plan(tt.snap, engine)
			if got.Type != ActionUpdateStatus {
				t.Fatalf("Plan() = %s (%s), want UpdateStatus", got.Type, got.Why)
			}
			if got.BindingPolicy != nil {
				t.Errorf("Plan() names BindingPolicy %s; nothing may be created, updated or deleted", got.BindingPolicy.Name)
			}
			s := got.Status
			if s.Phase != v1alpha1.RolloutBlocked {
				t.Errorf("phase = %q, want Blocked", s.Phase)
			}
			if s.ActiveStage != before.ActiveStage || !equality.Semantic.DeepEqual(s.Stages, before.Stages) {
				t.Errorf("active stage / records changed:\n%s", diff.Diff(before.Stages, s.Stages))
			}
			ready := condition(t, s, v1alpha1.ConditionReady)
			if ready.Status != metav1.ConditionFalse || ready.Reason != v1alpha1.ReasonInvalidExpression {
				t.Errorf("Ready = %s/%s, want False/%s", ready.Status, ready.Reason, v1alpha1.ReasonInvalidExpression)
			}
			for _, sub := range tt.wantNamed {
				if !strings.Contains(ready.Message, sub) {
					t.Errorf("Ready message %q does not contain %q", ready.Message, sub)
				}
			}
			if p := condition(t, s, v1alpha1.ConditionProgressing); p.Status != metav1.ConditionFalse || p.Reason != v1alpha1.ReasonInvalidExpression {
				t.Errorf("Progressing = %s/%s, want False/%s", p.Status, p.Reason, v1alpha1.ReasonInvalidExpression)
			}
			if keys := eventKeys(got.Events); !slices.Equal(keys, []string{"Warning/InvalidExpression"}) {
				t.Errorf("events = %v, want [Warning/InvalidExpression]", keys)
			}

			again := replan(t, tt.snap, engine, got)
			if again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("with the Blocked status written, Plan() = %s with events %v (%s), want None without events",
					again.Type, eventKeys(again.Events), again.Why)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 4. The active stage's BindingPolicy
// ---------------------------------------------------------------------------

func TestPlanActiveBindingPolicy(t *testing.T) {
	engine := newEngine(t)
	p := newPolicy()

	// wantCreated is the BindingPolicy a stage of p needs, built by hand.
	wantCreated := func(stageName string) *ksv1alpha1.BindingPolicy {
		return &ksv1alpha1.BindingPolicy{
			TypeMeta: metav1.TypeMeta{APIVersion: "control.kubestellar.io/v1alpha1", Kind: "BindingPolicy"},
			ObjectMeta: metav1.ObjectMeta{
				Name: "web.stage." + stageName,
				Labels: map[string]string{
					"community.kubestellar.io/staged-binding-policy": "web",
					"community.kubestellar.io/stage":                 stageName,
				},
				OwnerReferences: []metav1.OwnerReference{policyOwnerRef(p)},
			},
			Spec: ksv1alpha1.BindingPolicySpec{
				ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"stage": stageName}}},
				Downsync:         p.Spec.Downsync,
			},
		}
	}
	// stale is dev's BindingPolicy with a foreign label and a change.
	stale := func(change func(bp *ksv1alpha1.BindingPolicy)) *ksv1alpha1.BindingPolicy {
		bp := ownedBP(p, "dev", "bp-dev")
		bp.Labels["team"] = "payments"
		change(bp)
		return bp
	}
	// wantUpdated is dev's stale BindingPolicy brought in line: identity and
	// foreign labels kept, our labels, owner and spec restored.
	wantUpdated := func(bp *ksv1alpha1.BindingPolicy) *ksv1alpha1.BindingPolicy {
		want := ownedBP(p, "dev", "bp-dev")
		want.Labels["team"] = "payments"
		want.TypeMeta, want.Generation, want.Status = bp.TypeMeta, bp.Generation, bp.Status
		return want
	}
	oldSelectors := stale(func(bp *ksv1alpha1.BindingPolicy) {
		bp.Spec.ClusterSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"stage": "staging"}}}
	})
	oldDownsync := stale(func(bp *ksv1alpha1.BindingPolicy) { bp.Spec.Downsync = bp.Spec.Downsync[:1] })
	lostLabel := stale(func(bp *ksv1alpha1.BindingPolicy) { delete(bp.Labels, "community.kubestellar.io/stage") })
	notController := stale(func(bp *ksv1alpha1.BindingPolicy) { bp.OwnerReferences[0].Controller = nil })

	tests := []struct {
		name       string
		snap       *Snapshot
		want       ActionType
		wantBP     *ksv1alpha1.BindingPolicy
		wantReason string // for a Blocked status
	}{
		{name: "missing for the first stage",
			snap: newSnapshot(atStage(newPolicy(), "dev")),
			want: ActionCreateBindingPolicy, wantBP: wantCreated("dev")},
		{name: "missing for a later stage, earlier one still placed",
			snap: newSnapshot(atStage(newPolicy(), "test"), ownedBP(p, "dev", "bp-dev")),
			want: ActionCreateBindingPolicy, wantBP: wantCreated("test")},
		{name: "cluster selectors differ",
			snap: newSnapshot(atStage(newPolicy(), "dev"), oldSelectors),
			want: ActionUpdateBindingPolicy, wantBP: wantUpdated(oldSelectors)},
		{name: "downsync differs",
			snap: newSnapshot(atStage(newPolicy(), "dev"), oldDownsync),
			want: ActionUpdateBindingPolicy, wantBP: wantUpdated(oldDownsync)},
		{name: "stage label removed",
			snap: newSnapshot(atStage(newPolicy(), "dev"), lostLabel),
			want: ActionUpdateBindingPolicy, wantBP: wantUpdated(lostLabel)},
		{name: "owner reference no longer the controller",
			snap: newSnapshot(atStage(newPolicy(), "dev"), notController),
			want: ActionUpdateBindingPolicy, wantBP: wantUpdated(notController)},
		{name: "same name owned by another policy",
			snap: newSnapshot(atStage(newPolicy(), "dev"), foreignBP(p, "dev", "bp-foreign")),
			want: ActionUpdateStatus, wantReason: v1alpha1.ReasonBindingPolicyConflict},
		{name: "same name owned by nobody, not labelled",
			snap: fixture{newSnapshot(atStage(newPolicy(), "dev"))}.with(func(s *Snapshot) {
				s.ActiveBindingPolicy = &ksv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web.stage.dev", UID: "bp-hand-made"}}
			}).Snapshot,
			want: ActionUpdateStatus, wantReason: v1alpha1.ReasonBindingPolicyConflict},
		{name: "being deleted",
			snap: newSnapshot(atStage(newPolicy(), "dev"), beingDeleted(ownedBP(p, "dev", "bp-dev"))),
			want: ActionNone},
		{name: "being deleted and out of date",
			snap: newSnapshot(atStage(newPolicy(), "dev"), beingDeleted(stale(func(bp *ksv1alpha1.BindingPolicy) { bp.Spec.Downsync = nil }))),
			want: ActionNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.snap, engine)
			if got.Type != tt.want {
				t.Fatalf("Plan() = %s (%s), want %s", got.Type, got.Why, tt.want)
			}
			if tt.wantBP != nil {
				if got.BindingPolicy == nil {
					t.Fatalf("Plan() has no BindingPolicy")
				}
				if !equality.Semantic.DeepEqual(got.BindingPolicy, tt.wantBP) {
					t.Errorf("BindingPolicy differs:\n%s", diff.Diff(tt.wantBP, got.BindingPolicy))
				}
			}
			if tt.wantReason == "" {
				return
			}
			if got.BindingPolicy != nil {
				t.Errorf("Plan() names BindingPolicy %s; a conflict must not touch it", got.BindingPolicy.Name)
			}
			if got.Status.Phase != v1alpha1.RolloutBlocked {
				t.Errorf("phase = %s, want Blocked", got.Status.Phase)
			}
			ready := condition(t, got.Status, v1alpha1.ConditionReady)
			if ready.Status != metav1.ConditionFalse || ready.Reason != tt.wantReason || !strings.Contains(ready.Message, "web.stage.dev") {
				t.Errorf("Ready = %s/%s %q, want False/%s naming web.stage.dev", ready.Status, ready.Reason, ready.Message, tt.wantReason)
			}
			if keys := eventKeys(got.Events); !slices.Equal(keys, []string{"Warning/" + tt.wantReason}) {
				t.Errorf("events = %v, want [Warning/%s]", keys, tt.wantReason)
			}
			if again := replan(t, tt.snap, engine, got); again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("with the Blocked status written, Plan() = %s %v, want None without events", again.Type, eventKeys(again.Events))
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 5. Waiting, and what the status says about it
// ---------------------------------------------------------------------------

func TestPlanWaiting(t *testing.T) {
	engine := newEngine(t)
	dev := func() fixture { return at("dev") }

	tests := []struct {
		name       string
		snap       *Snapshot
		wantReason string   // of the Progressing condition
		wantMsg    []string // substrings of the active stage's message
		wantPhase  v1alpha1.RolloutPhase
		wantEvents []string
		// wantCompletedReason is the Completed condition's reason.
		wantCompletedReason string
	}{
		{name: "no Binding",
			snap:       dev().Snapshot,
			wantReason: v1alpha1.ReasonWaitingForBinding, wantMsg: []string{"web.stage.dev"}},
		{name: "Binding of an older BindingPolicy of the same name",
			snap: dev().bound().with(func(s *Snapshot) { s.Binding.OwnerReferences[0].UID = "bp-dev-older" }).
				reporting(deployment, "1").Snapshot,
			wantReason: v1alpha1.ReasonWaitingForBinding, wantMsg: []string{"web.stage.dev"}},
		{name: "Binding without owner",
			snap:       dev().bound().with(func(s *Snapshot) { s.Binding.OwnerReferences = nil }).Snapshot,
			wantReason: v1alpha1.ReasonWaitingForBinding, wantMsg: []string{"web.stage.dev"}},
		{name: "BindingPolicy generation not yet observed",
			snap: dev().bound().reporting(deployment, "1").with(func(s *Snapshot) {
				s.ActiveBindingPolicy.Generation = 2
			}).Snapshot,
			wantReason: v1alpha1.ReasonWaitingForBinding, wantMsg: []string{"generation 2", "generation 1"}},
		{name: "CombinedStatus missing",
			snap:       dev().bound().Snapshot,
			wantReason: v1alpha1.ReasonWaitingForStatus, wantMsg: []string{"0 of 1", "deployments.apps web/nginx"}},
		{name: "CombinedStatus of an older BindingPolicy of the same name does not count",
			snap: dev().bound().with(func(s *Snapshot) {
				older := s.ActiveBindingPolicy.DeepCopy()
				older.UID = "bp-dev-older"
				s.CombinedStatuses = append(s.CombinedStatuses, combinedStatus(older, deployment, "1"))
			}).Snapshot,
			wantReason: v1alpha1.ReasonWaitingForStatus, wantMsg: []string{"deployments.apps web/nginx"}},
		{name: "CombinedStatus of another object does not count",
			snap:       dev().bound().reporting(configMap, "1").Snapshot,
			wantReason: v1alpha1.ReasonWaitingForStatus, wantMsg: []string{"deployments.apps web/nginx"}},
		{name: "condition false",
			snap:       dev().bound().reporting(deployment, "0").reporting(configMap, "1").Snapshot,
			wantReason: v1alpha1.ReasonConditionNotMet, wantMsg: []string{"0 of 1", "deployments.apps web/nginx"}},
		{name: "condition false for the configmap when there is no filter",
			snap: at("dev", stageWith("dev", "", seedCondition), stage("test")).bound().
				reporting(deployment, "1").reporting(configMap, "0").reporting(namespaceObj, "1").Snapshot,
			wantReason: v1alpha1.ReasonConditionNotMet, wantMsg: []string{"2 of 3", "configmaps web/settings"}},
		{name: "cluster-scoped object without CombinedStatus",
			snap: at("dev", stageWith("dev", `downsyncClause.namespace == ''`, seedCondition), stage("test")).bound().
				reporting(deployment, "1").Snapshot,
			wantReason: v1alpha1.ReasonWaitingForStatus, wantMsg: []string{"0 of 1", "namespaces web"}},
		{name: "filter selects nothing",
			snap: at("dev", stageWith("dev", `downsyncClause.resource == 'statefulsets'`, seedCondition), stage("test")).
				bound().reporting(deployment, "1").Snapshot,
			wantReason: v1alpha1.ReasonNoObjectsSelected, wantMsg: []string{"web.stage.dev"}},
		{name: "Binding with no objects",
			snap: at("dev", stageWith("dev", "", seedCondition), stage("test")).
				with(func(s *Snapshot) {
					s.Binding = bindingFor(s.ActiveBindingPolicy)
					s.Binding.Spec.Workload = ksv1alpha1.DownsyncObjectClauses{}
				}).Snapshot,
			wantReason: v1alpha1.ReasonNoObjectsSelected, wantMsg: []string{"web.stage.dev"}},
		{name: "condition fails to evaluate",
			snap: at("dev", stageWith("dev", deploymentsFilter, `obj.results[3].name == 'deployments-aggregator'`), stage("test")).
				bound().reporting(deployment, "1").Snapshot,
			wantReason: v1alpha1.ReasonEvaluationError, wantPhase: v1alpha1.RolloutBlocked,
			wantMsg:    []string{`condition "obj.results[3]`, "deployments.apps web/nginx"},
			wantEvents: []string{"Warning/EvaluationError"}},
		{name: "filter fails to evaluate",
			snap: at("dev", stageWith("dev", `int(downsyncClause.name) > 0`, seedCondition), stage("test")).
				bound().reporting(deployment, "1").Snapshot,
			wantReason: v1alpha1.ReasonEvaluationError, wantPhase: v1alpha1.RolloutBlocked,
			wantMsg:    []string{`filter "int(downsyncClause.name) > 0"`, "(on deployments.apps web/nginx)"},
			wantEvents: []string{"Warning/EvaluationError"}},
		{name: "final stage condition false",
			snap:       at("prod").bound().reporting(deployment, "0").Snapshot,
			wantReason: v1alpha1.ReasonConditionNotMet, wantMsg: []string{"deployments.apps web/nginx"},
			wantCompletedReason: v1alpha1.ReasonFinalConditionNotMet},
		// A Binding observed with no destination places nothing: the stage
		// waits, even where its condition would hold or it has none.
		{name: "Binding places on no cluster, condition would hold",
			snap:       dev().bound().placingNowhere().reporting(deployment, "1").Snapshot,
			wantReason: v1alpha1.ReasonNoClustersSelected, wantMsg: []string{"web.stage.dev", "no cluster"}},
		{name: "Binding places on no cluster (empty list), condition would hold",
			snap: dev().bound().reporting(deployment, "1").with(func(s *Snapshot) {
				s.Binding.Spec.Destinations = []ksv1alpha1.Destination{}
			}).Snapshot,
			wantReason: v1alpha1.ReasonNoClustersSelected, wantMsg: []string{"web.stage.dev", "no cluster"}},
		{name: "Binding places on no cluster, stage without condition",
			snap:       at("dev", stageWith("dev", "", ""), stage("test")).bound().placingNowhere().Snapshot,
			wantReason: v1alpha1.ReasonNoClustersSelected, wantMsg: []string{"web.stage.dev", "no cluster"}},
		{name: "final stage, Binding places on no cluster, condition would hold",
			snap:       at("prod").bound().placingNowhere().reporting(deployment, "1").Snapshot,
			wantReason: v1alpha1.ReasonNoClustersSelected, wantMsg: []string{"web.stage.prod", "no cluster"},
			wantCompletedReason: v1alpha1.ReasonFinalConditionNotMet},
		{name: "final stage without condition, Binding places on no cluster",
			snap:       at("prod", stage("dev"), stage("test"), stageWith("prod", "", "")).bound().placingNowhere().Snapshot,
			wantReason: v1alpha1.ReasonNoClustersSelected, wantMsg: []string{"web.stage.prod", "no cluster"},
			wantCompletedReason: v1alpha1.ReasonFinalConditionNotMet},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			active := tt.snap.Policy.Status.ActiveStage
			got := Plan(tt.snap, engine)
			if got.Type != ActionUpdateStatus {
				t.Fatalf("Plan() = %s (%s), want UpdateStatus", got.Type, got.Why)
			}
			s := got.Status
			wantPhase := tt.wantPhase
			if wantPhase == "" {
				wantPhase = v1alpha1.RolloutProgressing
			}
			if s.Phase != wantPhase || s.ActiveStage != active {
				t.Errorf("phase/activeStage = %s/%s, want %s/%s", s.Phase, s.ActiveStage, wantPhase, active)
			}
			progressing := condition(t, s, v1alpha1.ConditionProgressing)
			if progressing.Reason != tt.wantReason {
				t.Errorf("Progressing reason = %s (%q), want %s", progressing.Reason, progressing.Message, tt.wantReason)
			}
			wantStatus := metav1.ConditionTrue
			if wantPhase == v1alpha1.RolloutBlocked {
				wantStatus = metav1.ConditionFalse
			}
			if progressing.Status != wantStatus {
				t.Errorf("Progressing status = %s, want %s", progressing.Status, wantStatus)
			}
			if ready := condition(t, s, v1alpha1.ConditionReady); ready.Status != metav1.ConditionTrue || ready.Reason != v1alpha1.ReasonBindingPolicyInSync {
				t.Errorf("Ready = %s/%s, want True/%s", ready.Status, ready.Reason, v1alpha1.ReasonBindingPolicyInSync)
			}
			wantCompleted := tt.wantCompletedReason
			if wantCompleted == "" {
				wantCompleted = v1alpha1.ReasonStagesRemaining
			}
			if c := condition(t, s, v1alpha1.ConditionCompleted); c.Status != metav1.ConditionFalse || c.Reason != wantCompleted {
				t.Errorf("Completed = %s/%s, want False/%s", c.Status, c.Reason, wantCompleted)
			}
			var record *v1alpha1.StageStatus
			for i := range s.Stages {
				if s.Stages[i].Name == active {
					record = &s.Stages[i]
				}
			}
			if record == nil || record.Phase != v1alpha1.StageActive || !timeEqual(record.StartTime, earlier) || record.CompletionTime != nil {
				t.Fatalf("record of %s = %+v, want Active since %v", active, record, earlier)
			}
			for _, sub := range tt.wantMsg {
				if !strings.Contains(record.Message, sub) {
					t.Errorf("stage message %q does not contain %q", record.Message, sub)
				}
			}
			if !strings.Contains(progressing.Message, record.Message) {
				t.Errorf("Progressing message %q does not carry the stage message %q", progressing.Message, record.Message)
			}
			if n := strings.Count(progressing.Message, fmt.Sprintf("stage %q", active)); n != 1 {
				t.Errorf("Progressing message %q names stage %q %d times, want once", progressing.Message, active, n)
			}
			if keys := eventKeys(got.Events); !slices.Equal(keys, tt.wantEvents) {
				t.Errorf("events = %v, want %v", keys, tt.wantEvents)
			}

			// Written once, the same state makes no further change.
			again := replan(t, tt.snap, engine, got)
			if again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("with the status written, Plan() = %s with events %v (%s), want None without events",
					again.Type, eventKeys(again.Events), again.Why)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 6. Advancing to the next stage
// ---------------------------------------------------------------------------

func TestPlanAdvances(t *testing.T) {
	engine := newEngine(t)

	tests := []struct {
		name     string
		snap     *Snapshot
		from, to string
	}{
		{name: "seed condition with root obj",
			snap: at("dev").bound().reporting(deployment, "1").Snapshot,
			from: "dev", to: "test"},
		{name: "seed condition with root combinedStatus",
			snap: at("dev", stageWith("dev", deploymentsFilter, seedConditionCS), stage("test")).
				bound().reporting(deployment, "1").Snapshot,
			from: "dev", to: "test"},
		{name: "filter selects deployments, a failing configmap does not matter",
			snap: at("dev").bound().reporting(deployment, "1").reporting(configMap, "0").reporting(namespaceObj, "0").Snapshot,
			from: "dev", to: "test"},
		{name: "no filter, every object passes",
			snap: at("dev", stageWith("dev", "", seedCondition), stage("test")).bound().
				reporting(deployment, "1").reporting(configMap, "1").reporting(namespaceObj, "1").Snapshot,
			from: "dev", to: "test"},
		{name: "cluster-scoped object selected and passing",
			snap: at("dev", stageWith("dev", `downsyncClause.namespace == ''`, seedCondition), stage("test")).bound().
				reporting(deployment, "0").reporting(namespaceObj, "1").Snapshot,
			from: "dev", to: "test"},
		{name: "stage without condition, once its Binding is observed",
			snap: at("dev", stageWith("dev", "", ""), stage("test")).bound().Snapshot,
			from: "dev", to: "test"},
		{name: "stage without condition but with a filter selecting nothing",
			snap: at("dev", stageWith("dev", `downsyncClause.resource == 'statefulsets'`, ""), stage("test")).bound().Snapshot,
			from: "dev", to: "test"},
		{name: "middle stage to the final one, earlier BindingPolicy still there",
			snap: at("test").bound().reporting(deployment, "1").alsoBP(ownedBP(newPolicy(), "dev", "bp-dev")).Snapshot,
			from: "test", to: "prod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.snap.Policy.Status.DeepCopy()
			// The next stage is placed first, marked as handed over from
			// this start of the stage that is done.
			handover := Plan(tt.snap, engine)
			if handover.Type != ActionCreateBindingPolicy || handover.BindingPolicy.Name != "web.stage."+tt.to {
				t.Fatalf("Plan() = %s (%s), want CreateBindingPolicy web.stage.%s", handover.Type, handover.Why, tt.to)
			}
			if mark, want := handover.BindingPolicy.Annotations[v1alpha1.HandedOverFromAnnotation], sealedMark(tt.snap.Policy.UID, tt.from, earlier.Time); mark != want {
				t.Errorf("%s = %q, want %q", v1alpha1.HandedOverFromAnnotation, mark, want)
			}
			if handover.Status != nil || len(handover.Events) != 0 {
				t.Errorf("the handover writes a status or Events: %+v", handover)
			}
			// Then the status records the advance.
			placedSnap := placed(tt.snap, handover.BindingPolicy)
			got := Plan(placedSnap, engine)
			if got.Type != ActionUpdateStatus {
				t.Fatalf("Plan() = %s (%s), want UpdateStatus", got.Type, got.Why)
			}
			if got.BindingPolicy != nil {
				t.Errorf("Plan() names BindingPolicy %s", got.BindingPolicy.Name)
			}
			s := got.Status
			if s.ActiveStage != tt.to || s.Phase != v1alpha1.RolloutProgressing {
				t.Fatalf("activeStage/phase = %s/%s, want %s/Progressing", s.ActiveStage, s.Phase, tt.to)
			}
			if len(s.Stages) != len(tt.snap.Policy.Spec.Stages) {
				t.Fatalf("%d stage records, want %d", len(s.Stages), len(tt.snap.Policy.Spec.Stages))
			}
			reachedTo := false
			for i, r := range s.Stages {
				old := before.Stages[i]
				switch {
				case r.Name == tt.from:
					if r.Phase != v1alpha1.StageSucceeded || !timeEqual(r.CompletionTime, now) || !timeEqual(r.StartTime, earlier) ||
						r.BindingPolicy != "web.stage."+tt.from || r.Message == "" {
						t.Errorf("record of %s = %+v, want Succeeded at %v, started %v, with a message", r.Name, r, now, earlier)
					}
				case r.Name == tt.to:
					reachedTo = true
					if r.Phase != v1alpha1.StageActive || !timeEqual(r.StartTime, now) || r.CompletionTime != nil ||
						r.BindingPolicy != "web.stage."+tt.to {
						t.Errorf("record of %s = %+v, want Active since %v", r.Name, r, now)
					}
				case !reachedTo:
					if !equality.Semantic.DeepEqual(r, old) {
						t.Errorf("record of earlier stage %s changed:\n%s", r.Name, diff.Diff(old, r))
					}
				default:
					if r.Phase != v1alpha1.StagePending || r.StartTime != nil {
						t.Errorf("record of later stage %s = %+v, want Pending", r.Name, r)
					}
				}
			}
			// The next stage is placed already: the status says what its
			// first run would, waiting for KubeStellar's resolution.
			if c := condition(t, s, v1alpha1.ConditionProgressing); c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonWaitingForBinding {
				t.Errorf("Progressing = %s/%s, want True/%s", c.Status, c.Reason, v1alpha1.ReasonWaitingForBinding)
			}
			if c := condition(t, s, v1alpha1.ConditionReady); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "web.stage."+tt.to) {
				t.Errorf("Ready = %s %q, want True naming web.stage.%s", c.Status, c.Message, tt.to)
			}
			if keys := eventKeys(got.Events); !slices.Equal(keys, []string{"Normal/StageSucceeded", "Normal/StageStarted"}) {
				t.Fatalf("events = %v, want [Normal/StageSucceeded Normal/StageStarted]", keys)
			}
			if !strings.Contains(got.Events[0].Note, `"`+tt.from+`"`) || !strings.Contains(got.Events[1].Note, `"`+tt.to+`"`) {
				t.Errorf("event notes %q / %q do not name %s / %s", got.Events[0].Note, got.Events[1].Note, tt.from, tt.to)
			}

			// The next run, on the status as written, has nothing to add
			// until KubeStellar resolves the next stage, and keeps the
			// previous stage placed meanwhile.
			again := replan(t, placedSnap, engine, got)
			if again.Type != ActionNone {
				t.Errorf("after advancing, Plan() = %s (%s), want None: the advance said it all", again.Type, again.Why)
			}
		})
	}
}

// placed returns a copy of the snapshot in which bp, as Plan asked to
// create it, exists.
func placed(snap *Snapshot, bp *ksv1alpha1.BindingPolicy) *Snapshot {
	next := *snap
	created := bp.DeepCopy()
	created.UID = types.UID("bp-" + created.Labels[v1alpha1.StageLabel])
	next.BindingPolicies = append(slices.Clone(snap.BindingPolicies), *created)
	resync(&next)
	return &next
}

// ---------------------------------------------------------------------------
// 7. Make-before-break
// ---------------------------------------------------------------------------

func TestPlanMakeBeforeBreak(t *testing.T) {
	engine := newEngine(t)
	p := newPolicy()
	// test is the policy just moved to stage test, with dev's BindingPolicy still there.
	test := func() fixture { return at("test").alsoBP(ownedBP(p, "dev", "bp-dev")) }

	tests := []struct {
		name       string
		snap       *Snapshot
		want       ActionType
		wantDelete string
	}{
		{name: "next Binding missing",
			snap: test().Snapshot,
			want: ActionUpdateStatus},
		{name: "next Binding of an older BindingPolicy of the same name",
			snap: test().bound().with(func(s *Snapshot) { s.Binding.OwnerReferences[0].UID = "bp-test-older" }).Snapshot,
			want: ActionUpdateStatus},
		{name: "next BindingPolicy generation not yet observed",
			snap: test().bound().with(func(s *Snapshot) { s.ActiveBindingPolicy.Generation = 2 }).Snapshot,
			want: ActionUpdateStatus},
		{name: "next Binding observed, status not yet",
			snap: test().bound().Snapshot,
			want: ActionDeleteBindingPolicy, wantDelete: "web.stage.dev"},
		{name: "next Binding observed, condition not met",
			snap: test().bound().reporting(deployment, "0").Snapshot,
			want: ActionDeleteBindingPolicy, wantDelete: "web.stage.dev"},
		{name: "next Binding observed but placing nowhere: the previous stage stays placed",
			snap: test().bound().placingNowhere().Snapshot,
			want: ActionUpdateStatus},
		{name: "next Binding observed, previous BindingPolicy already being deleted",
			snap: at("test").alsoBP(beingDeleted(ownedBP(p, "dev", "bp-dev"))).bound().Snapshot,
			want: ActionUpdateStatus},
		{name: "next Binding observed, the other BindingPolicy is not ours",
			snap: at("test").alsoBP(foreignBP(p, "dev", "bp-dev")).bound().Snapshot,
			want: ActionUpdateStatus},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.snap, engine)
			if got.Type != tt.want {
				t.Fatalf("Plan() = %s (%s), want %s", got.Type, got.Why, tt.want)
			}
			switch got.Type {
			case ActionDeleteBindingPolicy:
				if got.BindingPolicy == nil || got.BindingPolicy.Name != tt.wantDelete || got.BindingPolicy.UID != "bp-dev" {
					t.Errorf("Plan() deletes %v, want %s (UID bp-dev)", got.BindingPolicy, tt.wantDelete)
				}
			case ActionUpdateStatus:
				if got.Status.ActiveStage != "test" {
					t.Errorf("activeStage = %s, want test", got.Status.ActiveStage)
				}
				if again := replan(t, tt.snap, engine, got); again.Type != ActionNone {
					t.Errorf("with the status written, Plan() = %s (%s), want None: the previous BindingPolicy stays", again.Type, again.Why)
				}
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 8. The final stage
// ---------------------------------------------------------------------------

func TestPlanFinalStage(t *testing.T) {
	engine := newEngine(t)
	p := newPolicy()

	// The final stage's condition holds while test's BindingPolicy is still
	// there: it goes first, even on the final stage.
	snap := at("prod").alsoBP(ownedBP(p, "test", "bp-test")).bound().reporting(deployment, "1").Snapshot
	got := Plan(snap, engine)
	if got.Type != ActionDeleteBindingPolicy || got.BindingPolicy.Name != "web.stage.test" {
		t.Fatalf("Plan() = %s (%s), want DeleteBindingPolicy web.stage.test", got.Type, got.Why)
	}
	snap.BindingPolicies = slices.DeleteFunc(snap.BindingPolicies, func(bp ksv1alpha1.BindingPolicy) bool { return bp.Name == "web.stage.test" })

	got = Plan(snap, engine)
	if got.Type != ActionUpdateStatus {
		t.Fatalf("Plan() = %s (%s), want UpdateStatus", got.Type, got.Why)
	}
	s := got.Status
	if s.Phase != v1alpha1.RolloutCompleted || s.ActiveStage != "prod" {
		t.Errorf("phase/activeStage = %s/%s, want Completed/prod", s.Phase, s.ActiveStage)
	}
	if c := condition(t, s, v1alpha1.ConditionCompleted); c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonRolloutCompleted {
		t.Errorf("Completed = %s/%s, want True/%s", c.Status, c.Reason, v1alpha1.ReasonRolloutCompleted)
	}
	if c := condition(t, s, v1alpha1.ConditionProgressing); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonRolloutCompleted {
		t.Errorf("Progressing = %s/%s, want False/%s", c.Status, c.Reason, v1alpha1.ReasonRolloutCompleted)
	}
	if c := condition(t, s, v1alpha1.ConditionReady); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %s, want True: the final stage stays placed", c.Status)
	}
	prod := s.Stages[2]
	if prod.Name != "prod" || prod.Phase != v1alpha1.StageSucceeded || !timeEqual(prod.CompletionTime, now) || !timeEqual(prod.StartTime, earlier) {
		t.Errorf("record of prod = %+v, want Succeeded at %v", prod, now)
	}
	if keys := eventKeys(got.Events); !slices.Equal(keys, []string{"Normal/RolloutCompleted"}) {
		t.Errorf("events = %v, want [Normal/RolloutCompleted]", keys)
	}

	// Once Completed, nothing changes: not again, not when the condition
	// stops holding, not when the CombinedStatus goes away; prod stays placed.
	completed := *snap
	completed.Policy = snap.Policy.DeepCopy()
	completed.Policy.Status = *s.DeepCopy()
	for _, tc := range []struct {
		name   string
		change func(*Snapshot)
	}{
		{"again", func(*Snapshot) {}},
		{"a day later", func(s *Snapshot) { s.Now = metav1.NewTime(now.Add(24 * time.Hour)) }},
		{"condition no longer holds", func(s *Snapshot) {
			s.CombinedStatuses = []ksv1alpha1.CombinedStatus{combinedStatus(s.ActiveBindingPolicy, deployment, "0")}
		}},
		{"CombinedStatus gone", func(s *Snapshot) { s.CombinedStatuses = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := completed
			next.Policy = completed.Policy.DeepCopy()
			next.CombinedStatuses = slices.Clone(completed.CombinedStatuses)
			tc.change(&next)
			again := Plan(&next, engine)
			if again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("Plan() = %s %v with events %v (%s), want None", again.Type, again.BindingPolicy, eventKeys(again.Events), again.Why)
			}
		})
	}

	// A new generation of the spec changes the status, which stays Completed
	// without announcing the completion again.
	t.Run("new spec generation", func(t *testing.T) {
		next := completed
		next.Policy = completed.Policy.DeepCopy()
		next.Policy.Generation++
		again := Plan(&next, engine)
		if again.Type != ActionUpdateStatus {
			t.Fatalf("Plan() = %s (%s), want UpdateStatus", again.Type, again.Why)
		}
		if again.Status.Phase != v1alpha1.RolloutCompleted || again.Status.ObservedGeneration != testGeneration+1 {
			t.Errorf("phase/observedGeneration = %s/%d, want Completed/%d", again.Status.Phase, again.Status.ObservedGeneration, testGeneration+1)
		}
		if len(again.Events) != 0 {
			t.Errorf("events = %v, want none", eventKeys(again.Events))
		}
	})
}

// ---------------------------------------------------------------------------
// 9. A whole rollout, one action at a time
// ---------------------------------------------------------------------------

// applyAction changes the snapshot as the API server would on the action.
// It fails the test on a change the API server would refuse.
func applyAction(t *testing.T, snap *Snapshot, action Action, uid types.UID) {
	t.Helper()
	find := func(name string) int {
		return slices.IndexFunc(snap.BindingPolicies, func(bp ksv1alpha1.BindingPolicy) bool { return bp.Name == name })
	}
	switch action.Type {
	case ActionNone:
	case ActionAddFinalizer:
		snap.Policy.Finalizers = append(snap.Policy.Finalizers, v1alpha1.CleanupFinalizer)
	case ActionRemoveFinalizer:
		snap.Policy.Finalizers = slices.DeleteFunc(snap.Policy.Finalizers, func(f string) bool { return f == v1alpha1.CleanupFinalizer })
	case ActionCreateBindingPolicy:
		if find(action.BindingPolicy.Name) >= 0 {
			t.Fatalf("create %s: already exists", action.BindingPolicy.Name)
		}
		bp := action.BindingPolicy.DeepCopy()
		bp.UID, bp.Generation, bp.ResourceVersion = uid, 1, "1"
		snap.BindingPolicies = append(snap.BindingPolicies, *bp)
	case ActionUpdateBindingPolicy:
		i := find(action.BindingPolicy.Name)
		if i < 0 || snap.BindingPolicies[i].UID != action.BindingPolicy.UID {
			t.Fatalf("update %s: not found", action.BindingPolicy.Name)
		}
		bp := action.BindingPolicy.DeepCopy()
		if !equality.Semantic.DeepEqual(bp.Spec, snap.BindingPolicies[i].Spec) {
			bp.Generation++
		}
		snap.BindingPolicies[i] = *bp
	case ActionDeleteBindingPolicy:
		i := find(action.BindingPolicy.Name)
		if i < 0 || snap.BindingPolicies[i].UID != action.BindingPolicy.UID {
			t.Fatalf("delete %s: precondition failed", action.BindingPolicy.Name)
		}
		snap.BindingPolicies = slices.Delete(snap.BindingPolicies, i, i+1)
	case ActionUpdateStatus:
		snap.Policy.Status = *action.Status.DeepCopy()
	default:
		t.Fatalf("unknown action %s", action.Type)
	}
	resync(snap)
}

// kubestellarStep makes KubeStellar's next move for the active stage: first
// resolve its BindingPolicy into a Binding, then report the CombinedStatuses
// (the Deployment ready, the ConfigMap not). It returns what it did, or ""
// when it has nothing left to do.
func kubestellarStep(snap *Snapshot) string {
	bp := snap.ActiveBindingPolicy
	if bp == nil {
		return ""
	}
	if snap.Binding == nil || bp.Status.ObservedGeneration != bp.Generation {
		for i := range snap.BindingPolicies {
			if snap.BindingPolicies[i].UID == bp.UID {
				snap.BindingPolicies[i].Status.ObservedGeneration = bp.Generation
			}
		}
		resync(snap)
		snap.Binding = bindingFor(snap.ActiveBindingPolicy)
		return "ks:bind " + bp.Name
	}
	if len(snap.CombinedStatuses) == 0 {
		snap.CombinedStatuses = []ksv1alpha1.CombinedStatus{
			combinedStatus(bp, deployment, "1"), combinedStatus(bp, configMap, "0"), combinedStatus(bp, namespaceObj, "0"),
		}
		return "ks:report " + bp.Name
	}
	return ""
}

// describe sums up an action for the walk's log.
func describe(a Action) string {
	switch a.Type {
	case ActionUpdateStatus:
		reason := ""
		if c := meta.FindStatusCondition(a.Status.Conditions, v1alpha1.ConditionProgressing); c != nil {
			reason = c.Reason
		}
		return fmt.Sprintf("UpdateStatus %s %s %s", a.Status.ActiveStage, a.Status.Phase, reason)
	case ActionCreateBindingPolicy, ActionUpdateBindingPolicy, ActionDeleteBindingPolicy:
		return string(a.Type) + " " + a.BindingPolicy.Name
	default:
		return string(a.Type)
	}
}

// quoted returns the first double-quoted word of s.
func quoted(s string) string {
	_, rest, _ := strings.Cut(s, `"`)
	word, _, _ := strings.Cut(rest, `"`)
	return word
}

// TestPlanFirstResolutionIsOneWait: KubeStellar writes a new BindingPolicy's
// Binding before it records the resolution in the BindingPolicy's status.
// Between the two the stage still waits for the same thing, so the status
// says the same and Plan writes nothing: a write per stage saved.
func TestPlanFirstResolutionIsOneWait(t *testing.T) {
	engine := newEngine(t)
	unresolved := func(s *Snapshot) {
		for i := range s.BindingPolicies {
			s.BindingPolicies[i].Status.ObservedGeneration = 0
		}
		resync(s)
	}
	waiting := Plan(at("dev").with(unresolved).Snapshot, engine)
	if waiting.Type != ActionUpdateStatus {
		t.Fatalf("no Binding yet: %s (%s), want UpdateStatus", waiting.Type, waiting.Why)
	}
	snap := at("dev").with(unresolved).bound().Snapshot
	snap.Policy.Status = *waiting.Status.DeepCopy()
	if snap.ActiveBindingPolicy.Status.ObservedGeneration != 0 || snap.Binding == nil {
		t.Fatal("the fixture is not between the Binding and the resolution's record")
	}
	if got := Plan(snap, engine); got.Type != ActionNone {
		t.Errorf("Binding written, resolution not yet recorded: %s (%s), want None", got.Type, got.Why)
	}
}

func TestPlanFullRollout(t *testing.T) {
	engine := newEngine(t)
	p := newPolicy()
	p.Finalizers = nil
	snap := newSnapshot(p)

	var log, events []string
	created := 0
	// run plans and applies until Plan waits and KubeStellar has nothing left to do.
	run := func() {
		for step := 0; ; step++ {
			if step > 50 {
				t.Fatalf("no end after 50 steps:\n%s", strings.Join(log, "\n"))
			}
			snap.Now = metav1.NewTime(now.Add(time.Duration(len(log)) * time.Minute))
			a := Plan(snap, engine)
			for _, e := range a.Events {
				events = append(events, e.Reason+" "+quoted(e.Note))
			}
			if a.Type == ActionDeleteBindingPolicy && snap.Policy.DeletionTimestamp == nil {
				// make-before-break: the active stage's Binding is in place
				active := snap.ActiveBindingPolicy
				if active == nil || snap.Binding == nil || !ownedBy(snap.Binding, active) || active.Status.ObservedGeneration != active.Generation {
					t.Fatalf("deleting %s before the active stage's Binding is observed", a.BindingPolicy.Name)
				}
			}
			if a.Type != ActionNone {
				log = append(log, describe(a))
				if a.Type == ActionCreateBindingPolicy {
					created++
				}
				applyAction(t, snap, a, types.UID(fmt.Sprintf("bp-uid-%d", created)))
				if created > 0 && snap.Policy.DeletionTimestamp == nil && len(snap.BindingPolicies) == 0 {
					t.Fatalf("after %s nothing is placed", describe(a))
				}
				continue
			}
			if did := kubestellarStep(snap); did != "" {
				log = append(log, did)
				continue
			}
			log = append(log, "None")
			return
		}
	}

	run()
	want := []string{
		"AddFinalizer",
		"UpdateStatus dev Progressing BindingPolicyPending",
		"CreateBindingPolicy web.stage.dev",
		"UpdateStatus dev Progressing WaitingForBinding",
		"ks:bind web.stage.dev",
		"UpdateStatus dev Progressing WaitingForStatus",
		"ks:report web.stage.dev",
		"CreateBindingPolicy web.stage.test",
		"UpdateStatus test Progressing WaitingForBinding",
		"ks:bind web.stage.test",
		"DeleteBindingPolicy web.stage.dev",
		"UpdateStatus test Progressing WaitingForStatus",
		"ks:report web.stage.test",
		"CreateBindingPolicy web.stage.prod",
		"UpdateStatus prod Progressing WaitingForBinding",
		"ks:bind web.stage.prod",
		"DeleteBindingPolicy web.stage.test",
		"UpdateStatus prod Progressing WaitingForStatus",
		"ks:report web.stage.prod",
		"UpdateStatus prod Completed RolloutCompleted",
		"None",
	}
	if !slices.Equal(log, want) {
		t.Fatalf("rollout steps differ (-want +got):\n%s", diff.Diff(want, log))
	}
	wantEvents := []string{
		"StageStarted dev",
		"StageSucceeded dev", "StageStarted test",
		"StageSucceeded test", "StageStarted prod",
		"RolloutCompleted prod",
	}
	if !slices.Equal(events, wantEvents) {
		t.Errorf("events differ (-want +got):\n%s", diff.Diff(wantEvents, events))
	}

	s := snap.Policy.Status
	if s.Phase != v1alpha1.RolloutCompleted || s.ActiveStage != "prod" {
		t.Errorf("phase/activeStage = %s/%s, want Completed/prod", s.Phase, s.ActiveStage)
	}
	if names := bpNames(snap.BindingPolicies); !slices.Equal(names, []string{"web.stage.prod"}) {
		t.Errorf("BindingPolicies left = %v, want [web.stage.prod]", names)
	}
	if got := snap.BindingPolicies[0]; got.UID != "bp-uid-3" || got.Spec.ClusterSelectors[0].MatchLabels["stage"] != "prod" {
		t.Errorf("prod BindingPolicy = %s selecting %v, want bp-uid-3 selecting stage=prod", got.UID, got.Spec.ClusterSelectors)
	}
	if len(s.Stages) != 3 {
		t.Fatalf("%d stage records, want 3", len(s.Stages))
	}
	for i, r := range s.Stages {
		if r.Phase != v1alpha1.StageSucceeded || r.StartTime == nil || r.CompletionTime == nil || r.CompletionTime.Before(r.StartTime) {
			t.Errorf("record %d = %+v, want Succeeded with start before completion", i, r)
		}
		if i > 0 && !r.StartTime.Equal(s.Stages[i-1].CompletionTime) {
			t.Errorf("stage %s started at %v, want when %s completed (%v)", r.Name, r.StartTime, s.Stages[i-1].Name, s.Stages[i-1].CompletionTime)
		}
	}

	// Deleting the policy removes prod's BindingPolicy, then the finalizer.
	snap.Policy.DeletionTimestamp = ptr.To(metav1.NewTime(now.Add(time.Hour)))
	resync(snap)
	log = nil
	run()
	wantDeletion := []string{"DeleteBindingPolicy web.stage.prod", "RemoveFinalizer", "None"}
	if !slices.Equal(log, wantDeletion) {
		t.Errorf("deletion steps = %v, want %v", log, wantDeletion)
	}
}

// ---------------------------------------------------------------------------
// 10. Stages added to the spec behind the rollout
// ---------------------------------------------------------------------------

// cloneSnapshot returns a deep copy of a snapshot.
func cloneSnapshot(s *Snapshot) *Snapshot {
	c := *s
	c.Policy = s.Policy.DeepCopy()
	c.BindingPolicies = nil
	for i := range s.BindingPolicies {
		c.BindingPolicies = append(c.BindingPolicies, *s.BindingPolicies[i].DeepCopy())
	}
	if s.ActiveBindingPolicy != nil {
		c.ActiveBindingPolicy = s.ActiveBindingPolicy.DeepCopy()
	}
	if s.Binding != nil {
		c.Binding = s.Binding.DeepCopy()
	}
	c.CombinedStatuses = nil
	for i := range s.CombinedStatuses {
		c.CombinedStatuses = append(c.CombinedStatuses, *s.CombinedStatuses[i].DeepCopy())
	}
	c.Approvals = nil
	for i := range s.Approvals {
		c.Approvals = append(c.Approvals, *s.Approvals[i].DeepCopy())
	}
	return &c
}

// respec replaces the stages of the snapshot's policy by stage(name) for
// each name, as a new generation of the spec; the status stays as it was.
func respec(names ...string) func(*Snapshot) {
	return func(s *Snapshot) {
		s.Policy.Spec.Stages = nil
		for _, name := range names {
			s.Policy.Spec.Stages = append(s.Policy.Spec.Stages, stage(name))
		}
		s.Policy.Generation++
	}
}

func TestPlanStageAddedBeforeActive(t *testing.T) {
	engine := newEngine(t)

	// The records atStage writes for dev, test and prod.
	devDone := v1alpha1.StageStatus{Name: "dev", Phase: v1alpha1.StageSucceeded, StartTime: ptr.To(muchEarlier),
		CompletionTime: ptr.To(earlier), BindingPolicy: "web.stage.dev"}
	testDone := v1alpha1.StageStatus{Name: "test", Phase: v1alpha1.StageSucceeded, StartTime: ptr.To(earlier),
		CompletionTime: ptr.To(now), BindingPolicy: "web.stage.test"}
	testActive := v1alpha1.StageStatus{Name: "test", Phase: v1alpha1.StageActive, StartTime: ptr.To(earlier), BindingPolicy: "web.stage.test"}
	prodPending := v1alpha1.StageStatus{Name: "prod", Phase: v1alpha1.StagePending}
	prodActive := v1alpha1.StageStatus{Name: "prod", Phase: v1alpha1.StageActive, StartTime: ptr.To(now), BindingPolicy: "web.stage.prod"}
	prodDone := v1alpha1.StageStatus{Name: "prod", Phase: v1alpha1.StageSucceeded, StartTime: ptr.To(earlier),
		CompletionTime: ptr.To(now), BindingPolicy: "web.stage.prod"}
	skipped := func(name string) v1alpha1.StageStatus {
		return v1alpha1.StageStatus{Name: name, Phase: v1alpha1.StageSkipped}
	}

	tests := []struct {
		name string
		snap *Snapshot
		// wantActive and wantPhase are the status's active stage and phase.
		wantActive string
		wantPhase  v1alpha1.RolloutPhase
		// wantRecords are the stage records, messages left out.
		wantRecords []v1alpha1.StageStatus
		// advances is true when the run moves to the next stage.
		advances bool
	}{
		{name: "stage added before the first stage while test waits",
			snap:       at("test").bound().with(respec("canary", "dev", "test", "prod")).Snapshot,
			wantActive: "test", wantPhase: v1alpha1.RolloutProgressing,
			wantRecords: []v1alpha1.StageStatus{skipped("canary"), devDone, testActive, prodPending}},
		{name: "stage added between dev and the active test",
			snap:       at("test").bound().reporting(deployment, "0").with(respec("dev", "canary", "test", "prod")).Snapshot,
			wantActive: "test", wantPhase: v1alpha1.RolloutProgressing,
			wantRecords: []v1alpha1.StageStatus{devDone, skipped("canary"), testActive, prodPending}},
		{name: "two stages added before the active one",
			snap:       at("test").bound().with(respec("dev", "qa", "staging", "test", "prod")).Snapshot,
			wantActive: "test", wantPhase: v1alpha1.RolloutProgressing,
			wantRecords: []v1alpha1.StageStatus{devDone, skipped("qa"), skipped("staging"), testActive, prodPending}},
		{name: "pending stage moved before the active one",
			snap:       at("test").bound().with(respec("dev", "prod", "test")).Snapshot,
			wantActive: "test", wantPhase: v1alpha1.RolloutProgressing,
			wantRecords: []v1alpha1.StageStatus{devDone, skipped("prod"), testActive}},
		{name: "stage added before the active one as the active one advances",
			snap:       at("test").bound().reporting(deployment, "1").with(respec("dev", "canary", "test", "prod")).Snapshot,
			wantActive: "prod", wantPhase: v1alpha1.RolloutProgressing, advances: true,
			wantRecords: []v1alpha1.StageStatus{devDone, skipped("canary"), testDone, prodActive}},
		{name: "stage added before the final one as it completes",
			snap:       at("prod").bound().reporting(deployment, "1").with(respec("dev", "test", "canary", "prod")).Snapshot,
			wantActive: "prod", wantPhase: v1alpha1.RolloutCompleted,
			wantRecords: []v1alpha1.StageStatus{devDone, {Name: "test", Phase: v1alpha1.StageSucceeded, StartTime: ptr.To(muchEarlier),
				CompletionTime: ptr.To(earlier), BindingPolicy: "web.stage.test"}, skipped("canary"), prodDone}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := tt.snap
			if tt.advances { // the next stage is placed first
				handover := Plan(snap, engine)
				if handover.Type != ActionCreateBindingPolicy {
					t.Fatalf("Plan() = %s (%s), want CreateBindingPolicy", handover.Type, handover.Why)
				}
				snap = placed(snap, handover.BindingPolicy)
			}
			got := Plan(snap, engine)
			if got.Type != ActionUpdateStatus {
				t.Fatalf("Plan() = %s (%s), want UpdateStatus", got.Type, got.Why)
			}
			s := got.Status
			if s.ActiveStage != tt.wantActive || s.Phase != tt.wantPhase || s.ObservedGeneration != testGeneration+1 {
				t.Errorf("activeStage/phase/observedGeneration = %s/%s/%d, want %s/%s/%d",
					s.ActiveStage, s.Phase, s.ObservedGeneration, tt.wantActive, tt.wantPhase, testGeneration+1)
			}
			records := slices.Clone(s.Stages)
			for i := range records {
				if records[i].Phase == v1alpha1.StageSkipped && records[i].Message != "" {
					t.Errorf("skipped record %s has message %q, want none", records[i].Name, records[i].Message)
				}
				records[i].Message = ""
			}
			if !equality.Semantic.DeepEqual(records, tt.wantRecords) {
				t.Errorf("stage records differ (-want +got):\n%s", diff.Diff(tt.wantRecords, records))
			}
			for _, e := range got.Events {
				for _, r := range s.Stages {
					if r.Phase == v1alpha1.StageSkipped && strings.Contains(e.Note, `"`+r.Name+`"`) {
						t.Errorf("event %s/%s %q names skipped stage %s", e.Type, e.Reason, e.Note, r.Name)
					}
				}
			}

			// The next run keeps the Skipped records as they are.
			again := replan(t, tt.snap, engine, got)
			if tt.advances {
				if again.Type != ActionCreateBindingPolicy || again.BindingPolicy.Name != "web.stage."+tt.wantActive {
					t.Errorf("after advancing, Plan() = %s (%s), want CreateBindingPolicy web.stage.%s", again.Type, again.Why, tt.wantActive)
				}
				return
			}
			if again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("with the status written, Plan() = %s with events %v (%s), want None without events",
					again.Type, eventKeys(again.Events), again.Why)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 11. RolloutCompleted is announced once
// ---------------------------------------------------------------------------

func TestPlanRolloutCompletedOnce(t *testing.T) {
	engine := newEngine(t)
	const (
		badFilter    = `downsyncClause.resourc == 'deployments'`
		badCondition = `obj.results.exists(r, r.name ==)`
	)

	tests := []struct {
		name string
		// block interrupts the completed rollout.
		block      func(*Snapshot)
		specChange bool
		wantReason string
	}{
		{name: "invalid condition added to the final stage",
			block:      func(s *Snapshot) { s.Policy.Spec.Stages[2].Condition = badCondition; s.Policy.Generation++ },
			specChange: true, wantReason: v1alpha1.ReasonInvalidExpression},
		{name: "invalid filter added to an earlier stage",
			block:      func(s *Snapshot) { s.Policy.Spec.Stages[0].Filter = badFilter; s.Policy.Generation++ },
			specChange: true, wantReason: v1alpha1.ReasonInvalidExpression},
		{name: "final stage's BindingPolicy name taken",
			block:      func(s *Snapshot) { s.ActiveBindingPolicy = foreignBP(s.Policy, "prod", "bp-foreign") },
			wantReason: v1alpha1.ReasonBindingPolicyConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The final stage completes: announced once.
			completed := at("prod").bound().reporting(deployment, "1").Snapshot
			got := Plan(completed, engine)
			if got.Type != ActionUpdateStatus || got.Status.Phase != v1alpha1.RolloutCompleted {
				t.Fatalf("Plan() = %s (%s), want UpdateStatus to Completed", got.Type, got.Why)
			}
			if keys := eventKeys(got.Events); !slices.Equal(keys, []string{"Normal/RolloutCompleted"}) {
				t.Fatalf("events = %v, want [Normal/RolloutCompleted]", keys)
			}
			completed.Policy.Status = *got.Status

			// Something blocks it: the final stage's record stays Succeeded.
			blocked := cloneSnapshot(completed)
			blocked.Now = metav1.NewTime(now.Add(time.Minute))
			tt.block(blocked)
			got = Plan(blocked, engine)
			if got.Type != ActionUpdateStatus || got.Status.Phase != v1alpha1.RolloutBlocked {
				t.Fatalf("blocked: Plan() = %s (%s), want UpdateStatus to Blocked", got.Type, got.Why)
			}
			if c := condition(t, got.Status, v1alpha1.ConditionProgressing); c.Reason != tt.wantReason {
				t.Errorf("blocked: Progressing reason = %s, want %s", c.Reason, tt.wantReason)
			}
			if keys := eventKeys(got.Events); !slices.Equal(keys, []string{"Warning/" + tt.wantReason}) {
				t.Errorf("blocked: events = %v, want [Warning/%s]", keys, tt.wantReason)
			}
			if r := got.Status.Stages[2]; r.Phase != v1alpha1.StageSucceeded || !timeEqual(r.CompletionTime, now) {
				t.Errorf("blocked: record of prod = %+v, want Succeeded at %v", r, now)
			}

			// Fixed: Completed again, without a second announcement.
			fixed := cloneSnapshot(completed)
			fixed.Now = metav1.NewTime(now.Add(2 * time.Minute))
			fixed.Policy.Generation = blocked.Policy.Generation
			if tt.specChange {
				fixed.Policy.Generation++
			}
			fixed.Policy.Status = *got.Status
			got = Plan(fixed, engine)
			if got.Type != ActionUpdateStatus {
				t.Fatalf("fixed: Plan() = %s (%s), want UpdateStatus", got.Type, got.Why)
			}
			s := got.Status
			if s.Phase != v1alpha1.RolloutCompleted || s.ActiveStage != "prod" || s.ObservedGeneration != fixed.Policy.Generation {
				t.Errorf("fixed: phase/activeStage/observedGeneration = %s/%s/%d, want Completed/prod/%d",
					s.Phase, s.ActiveStage, s.ObservedGeneration, fixed.Policy.Generation)
			}
			if c := condition(t, s, v1alpha1.ConditionCompleted); c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonRolloutCompleted {
				t.Errorf("fixed: Completed = %s/%s, want True/%s", c.Status, c.Reason, v1alpha1.ReasonRolloutCompleted)
			}
			if r := s.Stages[2]; r.Phase != v1alpha1.StageSucceeded || !timeEqual(r.CompletionTime, now) || !timeEqual(r.StartTime, earlier) {
				t.Errorf("fixed: record of prod = %+v, want Succeeded at %v as first recorded", r, now)
			}
			if len(got.Events) != 0 {
				t.Errorf("fixed: events = %v, want none: the completion was announced already", eventKeys(got.Events))
			}
			if again := replan(t, fixed, engine, got); again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("fixed, status written: Plan() = %s with events %v (%s), want None without events",
					again.Type, eventKeys(again.Events), again.Why)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 12. EvaluationError is announced once per change of Progressing
// ---------------------------------------------------------------------------

func TestPlanEvaluationErrorEvent(t *testing.T) {
	engine := newEngine(t)
	const (
		failingCondition = `obj.results[3].name == 'deployments-aggregator'` // index out of range
		failingFilter    = `int(downsyncClause.name) > 0`                    // "nginx" is no int
		badCondition     = `obj.results.exists(r, r.name ==)`
	)
	// failing is dev with a condition that fails to evaluate on the deployment.
	failing := func() fixture {
		return at("dev", stageWith("dev", deploymentsFilter, failingCondition), stage("test")).bound().reporting(deployment, "1")
	}

	tests := []struct {
		name string
		// prior is planned first; the status it writes is the status of snap's policy.
		prior         *Snapshot
		snap          *Snapshot
		newGeneration bool
		want          ActionType
		wantEvents    []string
	}{
		{name: "after waiting for status",
			prior: at("dev", stage("dev"), stage("test")).bound().Snapshot,
			snap:  failing().Snapshot, newGeneration: true,
			want: ActionUpdateStatus, wantEvents: []string{"Warning/EvaluationError"}},
		{name: "after an invalid expression: already Blocked",
			prior: at("dev", stageWith("dev", deploymentsFilter, badCondition), stage("test")).bound().reporting(deployment, "1").Snapshot,
			snap:  failing().Snapshot, newGeneration: true,
			want: ActionUpdateStatus, wantEvents: []string{"Warning/EvaluationError"}},
		{name: "after a BindingPolicy name conflict: already Blocked",
			prior: failing().with(func(s *Snapshot) { s.ActiveBindingPolicy = foreignBP(s.Policy, "dev", "bp-foreign") }).Snapshot,
			snap:  failing().Snapshot,
			want:  ActionUpdateStatus, wantEvents: []string{"Warning/EvaluationError"}},
		{name: "after another evaluation error: already Blocked",
			prior: at("dev", stageWith("dev", failingFilter, failingCondition), stage("test")).bound().reporting(deployment, "1").Snapshot,
			snap:  failing().Snapshot, newGeneration: true,
			want: ActionUpdateStatus, wantEvents: []string{"Warning/EvaluationError"}},
		{name: "same evaluation error, new spec generation",
			prior: failing().Snapshot,
			snap:  failing().Snapshot, newGeneration: true,
			want: ActionUpdateStatus},
		{name: "same evaluation error, planned again",
			prior: failing().Snapshot,
			snap:  failing().Snapshot,
			want:  ActionNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prior := Plan(tt.prior, engine)
			if prior.Type != ActionUpdateStatus {
				t.Fatalf("prior: Plan() = %s (%s), want UpdateStatus", prior.Type, prior.Why)
			}
			tt.snap.Policy.Status = *prior.Status.DeepCopy()
			if tt.newGeneration {
				tt.snap.Policy.Generation++
			}
			tt.snap.Now = metav1.NewTime(now.Add(time.Minute))

			got := Plan(tt.snap, engine)
			if got.Type != tt.want {
				t.Fatalf("Plan() = %s (%s), want %s", got.Type, got.Why, tt.want)
			}
			if keys := eventKeys(got.Events); !slices.Equal(keys, tt.wantEvents) {
				t.Errorf("events = %v, want %v", keys, tt.wantEvents)
			}
			for _, e := range got.Events {
				if !strings.Contains(e.Note, `stage "dev"`) || !strings.Contains(e.Note, "deployments.apps web/nginx") {
					t.Errorf("event note %q does not name the stage and the object", e.Note)
				}
			}
			if got.Type != ActionUpdateStatus {
				return
			}
			s := got.Status
			if s.Phase != v1alpha1.RolloutBlocked || s.ActiveStage != "dev" {
				t.Errorf("phase/activeStage = %s/%s, want Blocked/dev", s.Phase, s.ActiveStage)
			}
			if c := condition(t, s, v1alpha1.ConditionProgressing); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonEvaluationError {
				t.Errorf("Progressing = %s/%s, want False/%s", c.Status, c.Reason, v1alpha1.ReasonEvaluationError)
			}
			if again := replan(t, tt.snap, engine, got); again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("with the status written, Plan() = %s with events %v (%s), want None without events",
					again.Type, eventKeys(again.Events), again.Why)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 13. A spec without stages
// ---------------------------------------------------------------------------

// planNoPanic is Plan, failing the test instead of crashing the binary when
// Plan panics.
func planNoPanic(t *testing.T, snap *Snapshot, engine *expression.Engine) (action Action) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("Plan() panicked: %v", r)
		}
	}()
	return Plan(snap, engine)
}

func TestPlanNoStages(t *testing.T) {
	engine := newEngine(t)
	// noStages drops the stages of the spec, as a hand-made object or one
	// written before the CRD required a stage may.
	noStages := func(p *v1alpha1.StagedBindingPolicy) *v1alpha1.StagedBindingPolicy {
		p.Spec.Stages = nil
		return p
	}
	emptyStages := func(p *v1alpha1.StagedBindingPolicy) *v1alpha1.StagedBindingPolicy {
		p.Spec.Stages = []v1alpha1.Stage{}
		return p
	}
	p := newPolicy()

	tests := []struct {
		name   string
		snap   *Snapshot
		want   ActionType
		wantBP string // the BindingPolicy to delete
	}{
		{name: "rollout not started",
			snap: newSnapshot(noStages(newPolicy())),
			want: ActionUpdateStatus},
		{name: "empty list, rollout not started",
			snap: newSnapshot(emptyStages(newPolicy())),
			want: ActionUpdateStatus},
		{name: "stages removed mid-rollout: BindingPolicies stay",
			snap: newSnapshot(noStages(atStage(newPolicy(), "test")), ownedBP(p, "dev", "bp-dev"), ownedBP(p, "test", "bp-test")),
			want: ActionUpdateStatus},
		{name: "stages removed from the final stage",
			snap: newSnapshot(emptyStages(atStage(newPolicy(), "prod")), ownedBP(p, "prod", "bp-prod")),
			want: ActionUpdateStatus},
		{name: "finalizer missing comes first",
			snap: newSnapshot(func() *v1alpha1.StagedBindingPolicy { q := noStages(newPolicy()); q.Finalizers = nil; return q }()),
			want: ActionAddFinalizer},
		{name: "being deleted: the BindingPolicies still go",
			snap: newSnapshot(func() *v1alpha1.StagedBindingPolicy {
				q := noStages(atStage(newPolicy(), "test"))
				q.DeletionTimestamp = ptr.To(earlier)
				return q
			}(), ownedBP(p, "test", "bp-test")),
			want: ActionDeleteBindingPolicy, wantBP: "web.stage.test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.snap.Policy.Status.DeepCopy()
			got := planNoPanic(t, tt.snap, engine)
			if got.Type != tt.want {
				t.Fatalf("Plan() = %s (%s), want %s", got.Type, got.Why, tt.want)
			}
			if tt.want == ActionDeleteBindingPolicy {
				if got.BindingPolicy == nil || got.BindingPolicy.Name != tt.wantBP {
					t.Errorf("Plan() deletes %v, want %s", got.BindingPolicy, tt.wantBP)
				}
				return
			}
			if got.BindingPolicy != nil {
				t.Errorf("Plan() names BindingPolicy %s; nothing may be created, updated or deleted", got.BindingPolicy.Name)
			}
			if tt.want != ActionUpdateStatus {
				return
			}
			s := got.Status
			if s.Phase != v1alpha1.RolloutBlocked || s.ObservedGeneration != testGeneration {
				t.Errorf("phase/observedGeneration = %s/%d, want Blocked/%d", s.Phase, s.ObservedGeneration, testGeneration)
			}
			if s.ActiveStage != before.ActiveStage || !equality.Semantic.DeepEqual(s.Stages, before.Stages) {
				t.Errorf("active stage / records changed:\n%s", diff.Diff(before, s))
			}
			for _, ct := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionProgressing} {
				if c := condition(t, s, ct); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonNoStages {
					t.Errorf("%s = %s/%s, want False/%s", ct, c.Status, c.Reason, v1alpha1.ReasonNoStages)
				}
			}
			if c := condition(t, s, v1alpha1.ConditionCompleted); c.Status != metav1.ConditionFalse {
				t.Errorf("Completed = %s, want False", c.Status)
			}
			if keys := eventKeys(got.Events); !slices.Equal(keys, []string{"Warning/NoStages"}) {
				t.Errorf("events = %v, want [Warning/NoStages]", keys)
			}

			next := cloneSnapshot(tt.snap)
			next.Policy.Status = *s.DeepCopy()
			next.Now = metav1.NewTime(now.Add(time.Minute))
			if again := planNoPanic(t, next, engine); again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("with the Blocked status written, Plan() = %s with events %v (%s), want None without events",
					again.Type, eventKeys(again.Events), again.Why)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Deletion held by finalizers
// ---------------------------------------------------------------------------

// TestPlanDeletionBlocked covers a deletion that waits for the finalizers of
// the policy's BindingPolicies: the Deleting condition names them and the
// time the deletion began; past the threshold, computed from the policy's
// deletionTimestamp and the snapshot's time, it says DeletionBlocked and
// warns once.
func TestPlanDeletionBlocked(t *testing.T) {
	engine := newEngine(t)
	p := newPolicy()
	deletedAt := func(at metav1.Time) *v1alpha1.StagedBindingPolicy {
		policy := atStage(newPolicy(), "test")
		policy.DeletionTimestamp = ptr.To(at)
		return policy
	}
	// withDeleting gives the policy the status Plan writes under opts.
	withDeleting := func(policy *v1alpha1.StagedBindingPolicy, reason string, opts ...PlanOption) *v1alpha1.StagedBindingPolicy {
		first := Plan(newSnapshot(policy, beingDeleted(ownedBP(p, "test", "bp-test"))), engine, opts...)
		if first.Status == nil {
			t.Fatalf("no status to start from: %s (%s)", first.Type, first.Why)
		}
		policy.Status = *first.Status
		if c := meta.FindStatusCondition(policy.Status.Conditions, v1alpha1.ConditionDeleting); c == nil || c.Reason != reason {
			t.Fatalf("starting status has Deleting %+v, want reason %s", c, reason)
		}
		return policy
	}
	oneMinuteAgo := metav1.NewTime(now.Add(-time.Minute))

	tests := []struct {
		name       string
		snap       *Snapshot
		opts       []PlanOption
		want       ActionType
		wantReason string
		wantEvents []string
		// wantRequeue is Action.RequeueAfter.
		wantRequeue time.Duration
		wantMsg     []string
	}{
		{name: "held for a minute: waiting, due again when the default threshold passes",
			snap: newSnapshot(deletedAt(oneMinuteAgo), foreignBP(p, "canary", "bp-foreign"),
				beingDeleted(ownedBP(p, "dev", "bp-dev")), beingDeleted(ownedBP(p, "test", "bp-test"))),
			want: ActionUpdateStatus, wantReason: v1alpha1.ReasonWaitingForFinalizers,
			wantRequeue: 4*time.Minute + time.Second,
			wantMsg: []string{"deletion waits since 2026-03-01T11:59:00Z", "BindingPolicy web.stage.dev (finalizers example.com/hold)",
				"BindingPolicy web.stage.test (finalizers example.com/hold)"}},
		{name: "held for an hour: blocked, with a Warning Event",
			snap: newSnapshot(deletedAt(earlier), beingDeleted(ownedBP(p, "test", "bp-test"))),
			want: ActionUpdateStatus, wantReason: v1alpha1.ReasonDeletionBlocked, wantEvents: []string{"Warning/DeletionBlocked"},
			wantMsg: []string{"deletion waits since 2026-03-01T11:00:00Z", "web.stage.test (finalizers example.com/hold)",
				"more than 5m0s", "controller-manager", "README"}},
		{name: "held for an hour under a two-hour threshold: waiting",
			snap: newSnapshot(deletedAt(earlier), beingDeleted(ownedBP(p, "test", "bp-test"))),
			opts: []PlanOption{WithDeletionWarningAfter(2 * time.Hour)},
			want: ActionUpdateStatus, wantReason: v1alpha1.ReasonWaitingForFinalizers, wantRequeue: time.Hour + time.Second},
		{name: "waiting reported, then the threshold passed: blocked, with a Warning Event",
			snap: newSnapshot(withDeleting(deletedAt(earlier), v1alpha1.ReasonWaitingForFinalizers, WithDeletionWarningAfter(2*time.Hour)),
				beingDeleted(ownedBP(p, "test", "bp-test"))),
			want: ActionUpdateStatus, wantReason: v1alpha1.ReasonDeletionBlocked, wantEvents: []string{"Warning/DeletionBlocked"}},
		{name: "blocked reported: nothing more to say",
			snap: newSnapshot(withDeleting(deletedAt(earlier), v1alpha1.ReasonDeletionBlocked), beingDeleted(ownedBP(p, "test", "bp-test"))),
			want: ActionNone},
		{name: "a BindingPolicy without finalizers but still listed",
			snap: newSnapshot(deletedAt(oneMinuteAgo), func() *ksv1alpha1.BindingPolicy {
				bp := beingDeleted(ownedBP(p, "test", "bp-test"))
				bp.Finalizers = nil
				return bp
			}()),
			want: ActionUpdateStatus, wantReason: v1alpha1.ReasonWaitingForFinalizers, wantRequeue: 4*time.Minute + time.Second,
			wantMsg: []string{"web.stage.test (no finalizer left)"}},
		{name: "more BindingPolicies than a message names",
			snap: newSnapshot(deletedAt(oneMinuteAgo), beingDeleted(ownedBP(p, "a", "bp-a")), beingDeleted(ownedBP(p, "b", "bp-b")),
				beingDeleted(ownedBP(p, "c", "bp-c")), beingDeleted(ownedBP(p, "d", "bp-d")), beingDeleted(ownedBP(p, "e", "bp-e"))),
			want: ActionUpdateStatus, wantReason: v1alpha1.ReasonWaitingForFinalizers, wantRequeue: 4*time.Minute + time.Second,
			wantMsg: []string{"web.stage.a", "web.stage.c", "and 2 more"}},
		{name: "an undeleted BindingPolicy is deleted first",
			snap: newSnapshot(deletedAt(earlier), beingDeleted(ownedBP(p, "dev", "bp-dev")), ownedBP(p, "test", "bp-test")),
			want: ActionDeleteBindingPolicy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.snap, engine, tt.opts...)
			if got.Type != tt.want {
				t.Fatalf("Plan() = %s (%s), want %s", got.Type, got.Why, tt.want)
			}
			if keys := eventKeys(got.Events); !slices.Equal(keys, tt.wantEvents) {
				t.Errorf("events = %v, want %v", keys, tt.wantEvents)
			}
			if got.RequeueAfter != tt.wantRequeue {
				t.Errorf("RequeueAfter = %v, want %v", got.RequeueAfter, tt.wantRequeue)
			}
			if tt.want != ActionUpdateStatus {
				return
			}
			c := condition(t, got.Status, v1alpha1.ConditionDeleting)
			if c.Status != metav1.ConditionTrue || c.Reason != tt.wantReason {
				t.Errorf("Deleting = %s/%s, want True/%s", c.Status, c.Reason, tt.wantReason)
			}
			if !c.LastTransitionTime.Equal(tt.snap.Policy.DeletionTimestamp) {
				t.Errorf("Deleting since %v, want the deletionTimestamp %v", c.LastTransitionTime, tt.snap.Policy.DeletionTimestamp)
			}
			for _, sub := range tt.wantMsg {
				if !strings.Contains(c.Message, sub) {
					t.Errorf("Deleting message %q does not contain %q", c.Message, sub)
				}
			}
			if strings.Contains(c.Message, "canary") {
				t.Errorf("Deleting message %q names a foreign BindingPolicy", c.Message)
			}
			for _, e := range got.Events {
				if e.Note != c.Message {
					t.Errorf("event note %q, want the condition's message %q", e.Note, c.Message)
				}
			}
			// Written once, the same state a minute later makes no change and no Event.
			next := *tt.snap
			next.Policy = tt.snap.Policy.DeepCopy()
			next.Policy.Status = *got.Status.DeepCopy()
			next.Now = metav1.NewTime(tt.snap.Now.Add(time.Minute))
			if again := Plan(&next, engine, tt.opts...); again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("with the status written, Plan() = %s with events %v (%s), want None", again.Type, eventKeys(again.Events), again.Why)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Bounded messages
// ---------------------------------------------------------------------------

// TestPlanBoundsMessages gives every stage of a 32-stage policy a ~4 KB
// condition that does not parse: the status stays within the API server's
// limits (Ready names as many failures as fit and how many more), the Event
// note within 1 KiB, and the same state plans no further change.
func TestPlanBoundsMessages(t *testing.T) {
	engine := newEngine(t)
	filler := strings.Repeat("a", 4000)
	var stages []v1alpha1.Stage
	for i := range 32 {
		stages = append(stages, stageWith(fmt.Sprintf("s%02d", i), deploymentsFilter,
			fmt.Sprintf("obj.results.exists(r, r.name == '%s' &&", filler)))
	}
	tests := []struct {
		name string
		snap *Snapshot
	}{
		{name: "rollout not started", snap: newSnapshot(newPolicy(stages...))},
		{name: "mid-rollout", snap: at("s03", stages...).bound().reporting(deployment, "1").Snapshot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.snap, engine)
			if got.Type != ActionUpdateStatus {
				t.Fatalf("Plan() = %s (%s), want %s", got.Type, got.Why, ActionUpdateStatus)
			}
			if got.Status.Phase != v1alpha1.RolloutBlocked {
				t.Errorf("phase = %s, want Blocked", got.Status.Phase)
			}
			for _, c := range got.Status.Conditions {
				if len(c.Message) > MaxConditionMessage {
					t.Errorf("%s message has %d bytes, more than %d", c.Type, len(c.Message), MaxConditionMessage)
				}
			}
			ready := condition(t, got.Status, v1alpha1.ConditionReady)
			for _, sub := range []string{"32 expressions do not compile: ", `stage "s00": condition "obj.results.exists(`, "more"} {
				if !strings.Contains(ready.Message, sub) {
					t.Errorf("Ready message does not contain %q: %q", sub, ready.Message)
				}
			}
			if !strings.HasSuffix(ready.Message, " more") {
				t.Errorf("Ready message does not end saying how many more: %q", ready.Message)
			}
			if len(got.Events) != 1 || len(got.Events[0].Note) > MaxEventNote || !strings.Contains(got.Events[0].Note, `stage "s00"`) {
				t.Fatalf("events = %+v, want one InvalidExpression note of at most %d bytes naming stage s00", got.Events, MaxEventNote)
			}
			if again := replan(t, tt.snap, engine, got); again.Type != ActionNone {
				t.Errorf("with the status written, Plan() = %s (%s), want None", again.Type, again.Why)
			}
		})
	}
}

// TestPlanBoundsStageMessages: a status Plan writes has no stage record
// message longer than MaxConditionMessage, whatever the status it starts
// from holds (here a record an older writer left 10 KB long).
func TestPlanBoundsStageMessages(t *testing.T) {
	engine := newEngine(t)
	snap := at("test").bound().reporting(deployment, "0").with(func(s *Snapshot) {
		s.Policy.Status.Stages[0].Message = strings.Repeat("m", 10_000)
		s.Policy.Generation++
	}).Snapshot
	got := Plan(snap, engine)
	if got.Type != ActionUpdateStatus {
		t.Fatalf("Plan() = %s (%s), want a status write", got.Type, got.Why)
	}
	for _, r := range got.Status.Stages {
		if len(r.Message) > MaxConditionMessage {
			t.Errorf("stage %s's message has %d bytes, more than %d", r.Name, len(r.Message), MaxConditionMessage)
		}
	}
}

// TestCutMessage checks the cut: within the limit, at a rune boundary, idempotent.
func TestCutMessage(t *testing.T) {
	tests := []struct {
		name  string
		msg   string
		limit int
		want  string
	}{
		{name: "short", msg: "hello", limit: 10, want: "hello"},
		{name: "exactly the limit", msg: strings.Repeat("x", 30), limit: 30, want: strings.Repeat("x", 30)},
		{name: "long", msg: strings.Repeat("x", 100), limit: 40, want: strings.Repeat("x", 21) + "… (100 bytes cut)"},
		{name: "multi-byte runes", msg: strings.Repeat("é", 50), limit: 40, want: strings.Repeat("é", 10) + "… (100 bytes cut)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cutMessage(tt.msg, tt.limit)
			if got != tt.want {
				t.Errorf("cutMessage = %q, want %q", got, tt.want)
			}
			if len(got) > tt.limit {
				t.Errorf("cutMessage returned %d bytes, more than %d", len(got), tt.limit)
			}
			if again := cutMessage(got, tt.limit); again != got {
				t.Errorf("cutting again gives %q, want %q", again, got)
			}
		})
	}
}

// TestCompileFailures checks the list of expressions that do not compile.
func TestCompileFailures(t *testing.T) {
	tests := []struct {
		name     string
		failures []string
		limit    int
		want     string
	}{
		{name: "one", failures: []string{"stage \"a\": bad"}, limit: 100, want: "stage \"a\": bad"},
		{name: "all fit", failures: []string{"a: bad", "b: bad"}, limit: 100, want: "2 expressions do not compile: a: bad; b: bad"},
		{name: "some fit", failures: []string{"a: bad", "b: bad", "c: bad"}, limit: 50, want: "3 expressions do not compile: a: bad; and 2 more"},
		{name: "the first does not fit", failures: []string{strings.Repeat("x", 100), "b: bad"}, limit: 80,
			want: "2 expressions do not compile: " + strings.Repeat("x", 19) + "… (100 bytes cut); and 1 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := compileFailures(tt.failures, tt.limit)
			if got != tt.want {
				t.Errorf("compileFailures = %q, want %q", got, tt.want)
			}
			if len(got) > tt.limit {
				t.Errorf("compileFailures returned %d bytes, more than %d", len(got), tt.limit)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 14. Too costly expressions block the rollout with ExpressionTooCostly
// ---------------------------------------------------------------------------

func TestPlanTooCostlyExpressions(t *testing.T) {
	const (
		// hostileCondition is rejected by the compile-time estimate.
		hostileCondition = `obj.results.exists(r, lists.range(300000).map(i, 'x').size() == 0)`
		// costlyCondition passes the estimate and exceeds the runtime cost limit.
		costlyCondition = `lists.range(100000).map(i, 'x').size() == 0`
	)
	tinyBudget, err := expression.NewEngine(expression.WithBudget(1, time.Minute))
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	instant, err := expression.NewEngine(expression.WithEvalTimeout(time.Nanosecond))
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	unestimated, err := expression.NewEngine(expression.WithEstimatedCostLimit(math.MaxUint64))
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	// A call whose worst case is above the cost limit on its own: refused
	// before it runs (issue 32's indexOf).
	bigString := `'aaaaaaaaaa'` + strings.Repeat(`.replace('a', 'aaaaaaaaaa')`, 5)
	superLinear := bigString + `.indexOf(` + bigString + ` + 'b') >= 0`
	tests := []struct {
		name        string
		engine      *expression.Engine
		snap        *Snapshot
		wantMessage string
	}{
		{name: "condition rejected at compile time", engine: newEngine(t),
			snap:        at("dev", stageWith("dev", "", hostileCondition), stage("test")).bound().reporting(deployment, "1").Snapshot,
			wantMessage: "estimated worst-case cost"},
		{name: "filter rejected at compile time", engine: newEngine(t),
			snap:        at("dev", stageWith("dev", `downsyncClause.name.replace('', downsyncClause.name).replace('', downsyncClause.name) == ''`, seedCondition), stage("test")).bound().Snapshot,
			wantMessage: "estimated worst-case cost"},
		{name: "condition stopped by the runtime cost limit", engine: newEngine(t),
			snap:        at("dev", stageWith("dev", deploymentsFilter, costlyCondition), stage("test")).bound().reporting(deployment, "1").Snapshot,
			wantMessage: "cost limit exceeded"},
		{name: "condition stopped by the evaluation timeout", engine: instant,
			snap:        at("dev", stageWith("dev", deploymentsFilter, `lists.range(1000).all(i, i >= 0)`), stage("test")).bound().reporting(deployment, "1").Snapshot,
			wantMessage: "timed out"},
		{name: "a super-linear call refused before it runs", engine: unestimated,
			snap:        at("dev", stageWith("dev", deploymentsFilter, superLinear), stage("test")).bound().reporting(deployment, "1").Snapshot,
			wantMessage: "it was not run"},
		{name: "per-reconcile budget spent", engine: tinyBudget,
			snap: at("dev", stageWith("dev", "", seedCondition), stage("test")).bound().
				reporting(deployment, "1").reporting(configMap, "1").reporting(namespaceObj, "1").Snapshot,
			wantMessage: "budget"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.snap, tt.engine)
			if got.Type != ActionUpdateStatus {
				t.Fatalf("Plan() = %s (%s), want UpdateStatus", got.Type, got.Why)
			}
			if got.Status.Phase != v1alpha1.RolloutBlocked {
				t.Errorf("phase = %s, want Blocked", got.Status.Phase)
			}
			c := condition(t, got.Status, v1alpha1.ConditionProgressing)
			if c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonExpressionTooCostly {
				t.Errorf("Progressing = %s/%s, want False/%s", c.Status, c.Reason, v1alpha1.ReasonExpressionTooCostly)
			}
			if !strings.Contains(c.Message, tt.wantMessage) || !strings.Contains(c.Message, `stage "dev"`) {
				t.Errorf("Progressing message %q does not name the stage and say %q", c.Message, tt.wantMessage)
			}
			if !strings.Contains(c.Message, `condition "`) && !strings.Contains(c.Message, `filter "`) {
				t.Errorf("Progressing message %q does not quote the expression", c.Message)
			}
			if tt.wantMessage != "estimated worst-case cost" && !strings.Contains(c.Message, "(on the CombinedStatus of ") {
				t.Errorf("Progressing message %q does not name the object the evaluation was stopped on", c.Message)
			}
			if ready := condition(t, got.Status, v1alpha1.ConditionReady); tt.wantMessage == "estimated worst-case cost" &&
				(ready.Reason != v1alpha1.ReasonExpressionTooCostly || !strings.Contains(ready.Message, tt.wantMessage)) {
				t.Errorf("Ready = %s %q, want %s saying %q", ready.Reason, ready.Message, v1alpha1.ReasonExpressionTooCostly, tt.wantMessage)
			}
			if keys := eventKeys(got.Events); !slices.Equal(keys, []string{"Warning/" + v1alpha1.ReasonExpressionTooCostly}) {
				t.Errorf("events = %v, want [Warning/%s]", keys, v1alpha1.ReasonExpressionTooCostly)
			}
			if again := replan(t, tt.snap, tt.engine, got); again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("with the status written, Plan() = %s with events %v (%s), want None without events",
					again.Type, eventKeys(again.Events), again.Why)
			}
		})
	}
}

// TestPlanInvalidAndTooCostly checks that an expression that does not compile
// wins over one that is too costly: the reason is InvalidExpression, and the
// message names both.
func TestPlanInvalidAndTooCostly(t *testing.T) {
	engine := newEngine(t)
	snap := at("dev", stageWith("dev", "", `obj.results.exists(r, lists.range(300000).map(i, 'x').size() == 0)`),
		stageWith("test", "", `obj.results.exists(r, r.name ==)`)).bound().Snapshot
	got := Plan(snap, engine)
	if got.Type != ActionUpdateStatus {
		t.Fatalf("Plan() = %s (%s), want UpdateStatus", got.Type, got.Why)
	}
	c := condition(t, got.Status, v1alpha1.ConditionReady)
	if c.Reason != v1alpha1.ReasonInvalidExpression {
		t.Errorf("Ready reason = %s, want %s", c.Reason, v1alpha1.ReasonInvalidExpression)
	}
	if !strings.Contains(c.Message, "estimated worst-case cost") || !strings.Contains(c.Message, "compile error") {
		t.Errorf("Ready message %q does not name both failures", c.Message)
	}
}

// ---------------------------------------------------------------------------
// Suspend
// ---------------------------------------------------------------------------

// suspend sets spec.suspend on the snapshot's policy.
func suspend(s *Snapshot) { s.Policy.Spec.Suspend = true }

func TestPlanSuspend(t *testing.T) {
	engine := newEngine(t)
	dev := func() fixture { return at("dev") }
	tests := []struct {
		name       string
		snap       *Snapshot
		wantType   ActionType
		wantPhase  v1alpha1.RolloutPhase
		wantEvents []string
		wantMsg    string // substring of the Progressing condition's message
	}{
		{name: "suspended before the first stage: nothing is placed",
			snap:     fixture{newSnapshot(newPolicy())}.with(suspend).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutSuspended, wantEvents: []string{"Normal/Suspended"},
			wantMsg: "before its first stage"},
		{name: "suspended with the active stage's BindingPolicy missing: it is not created",
			snap:     fixture{newSnapshot(atStage(newPolicy(), "dev"))}.with(suspend).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutSuspended, wantEvents: []string{"Normal/Suspended"},
			wantMsg: `in stage "dev"`},
		{name: "suspended with the stage's condition holding: no stage starts",
			snap:     dev().bound().reporting(deployment, "1").with(suspend).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutSuspended, wantEvents: []string{"Normal/Suspended"},
			wantMsg: `in stage "dev"`},
		{name: "suspended with an earlier stage's BindingPolicy left: it is not deleted",
			snap:     at("test").bound().reporting(deployment, "1").alsoBP(ownedBP(newPolicy(), "dev", "bp-dev")).with(suspend).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutSuspended, wantEvents: []string{"Normal/Suspended"},
			wantMsg: `in stage "test"`},
		{name: "suspended with a spec change: the BindingPolicy is not updated",
			snap: dev().bound().with(func(s *Snapshot) {
				s.Policy.Spec.Stages[0].ClusterSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"env": "qa"}}}
			}).with(suspend).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutSuspended, wantEvents: []string{"Normal/Suspended"},
			wantMsg: `in stage "dev"`},
		{name: "an invalid expression is reported before the suspension",
			snap:     fixture{newSnapshot(newPolicy(stageWith("dev", "", "obj.results.exists("), stage("prod")))}.with(suspend).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutBlocked, wantEvents: []string{"Warning/InvalidExpression"},
			wantMsg: "dev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			action := Plan(tt.snap, engine)
			if action.Type != tt.wantType {
				t.Fatalf("action %s (%s), want %s", action.Type, action.Why, tt.wantType)
			}
			if action.Status.Phase != tt.wantPhase {
				t.Errorf("phase %s, want %s", action.Status.Phase, tt.wantPhase)
			}
			if got := eventKeys(action.Events); !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events %v, want %v", got, tt.wantEvents)
			}
			if c := condition(t, action.Status, v1alpha1.ConditionProgressing); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, tt.wantMsg) {
				t.Errorf("Progressing %s (%s: %q), want False naming %q", c.Status, c.Reason, c.Message, tt.wantMsg)
			}
			if action.Status.ActiveStage != tt.snap.Policy.Status.ActiveStage {
				t.Errorf("the active stage moved from %q to %q", tt.snap.Policy.Status.ActiveStage, action.Status.ActiveStage)
			}
			if tt.wantPhase != v1alpha1.RolloutSuspended {
				return
			}
			// Once written, the suspension holds with nothing more to do.
			if again := replan(t, tt.snap, engine, action); again.Type != ActionNone {
				t.Errorf("planned again while suspended: %s (%s), want None", again.Type, again.Why)
			}
		})
	}
}

// TestPlanResume resumes a rollout suspended with its stage's condition
// holding: it goes on where it stopped, with a Resumed Event.
func TestPlanResume(t *testing.T) {
	engine := newEngine(t)
	const deadline, pause = 30 * time.Minute, 10 * time.Minute
	snap := at("dev", stage("dev"), deadlined("test", seedCondition, deadline), stage("prod")).bound().reporting(deployment, "1").with(suspend).Snapshot
	held := Plan(snap, engine)
	if held.Status == nil || held.Status.Phase != v1alpha1.RolloutSuspended {
		t.Fatalf("suspending: %s (%s)", held.Type, held.Why)
	}
	resumed := *snap
	resumed.Policy = snap.Policy.DeepCopy()
	resumed.Policy.Status = *held.Status.DeepCopy()
	resumed.Policy.Spec.Suspend = false
	resumed.Now = metav1.NewTime(snap.Now.Add(pause))
	handover := Plan(&resumed, engine)
	if handover.Type != ActionCreateBindingPolicy || handover.BindingPolicy.Name != "web.stage.test" {
		t.Fatalf("resumed: %s (%s), want the next stage placed", handover.Type, handover.Why)
	}
	action := Plan(placed(&resumed, handover.BindingPolicy), engine)
	if action.Type != ActionUpdateStatus || action.Status.ActiveStage != "test" {
		t.Fatalf("resumed: %s (%s) to stage %q, want the rollout to move on to test", action.Type, action.Why, action.Status.ActiveStage)
	}
	if got := eventKeys(action.Events); !slices.Contains(got, "Normal/Resumed") || !slices.Contains(got, "Normal/StageStarted") {
		t.Errorf("events %v, want Resumed and StageStarted", got)
	}
	// The suspension was dev's: test, started as it ended, was not
	// suspended, and its deadline runs from its start.
	dev, test := action.Status.Stages[0], action.Status.Stages[1]
	if dev.SuspendedDuration == nil || dev.SuspendedDuration.Duration != pause {
		t.Errorf("dev's suspendedDuration %v, want %s", dev.SuspendedDuration, pause)
	}
	if test.SuspendedDuration != nil {
		t.Errorf("test's suspendedDuration %v, want none", test.SuspendedDuration)
	}
	if !timeEqual(test.ProgressDeadlineTime, metav1.NewTime(resumed.Now.Add(deadline))) {
		t.Errorf("test's progressDeadlineTime %v, want %s after its start at %s", test.ProgressDeadlineTime, deadline, resumed.Now)
	}
	if action.Status.SuspendedTime != nil {
		t.Errorf("suspendedTime %v after the resume, want none", action.Status.SuspendedTime)
	}
}

// ---------------------------------------------------------------------------
// Restart
// ---------------------------------------------------------------------------

// restartedAt is the value of the restartedAt annotation in the restart tests.
const restartedAt = "2026-11-23T14:00:00Z"

// restart sets the restartedAt annotation on the snapshot's policy.
func restart(s *Snapshot) {
	s.Policy.Annotations = map[string]string{v1alpha1.RestartedAtAnnotation: restartedAt}
}

func TestPlanRestart(t *testing.T) {
	engine := newEngine(t)
	const value = restartedAt
	// completed is a rollout done in prod.
	completed := func() fixture {
		f := at("prod").bound().reporting(deployment, "1")
		f.Policy.Status.Phase = v1alpha1.RolloutCompleted
		f.Policy.Status.Stages = []v1alpha1.StageStatus{
			{Name: "dev", Phase: v1alpha1.StageSucceeded, StartTime: ptr.To(muchEarlier), CompletionTime: ptr.To(earlier)},
			{Name: "test", Phase: v1alpha1.StageSucceeded, StartTime: ptr.To(earlier), CompletionTime: ptr.To(earlier)},
			{Name: "prod", Phase: v1alpha1.StageSucceeded, StartTime: ptr.To(earlier), CompletionTime: ptr.To(earlier), BindingPolicy: "web.stage.prod"},
		}
		return f
	}
	tests := []struct {
		name       string
		snap       *Snapshot
		wantStage  string
		wantEvents []string
	}{
		{name: "a completed rollout restarts from the first stage",
			snap: completed().with(restart).Snapshot, wantStage: "dev",
			wantEvents: []string{"Normal/RolloutRestarted", "Normal/StageStarted"}},
		{name: "a rollout in its second stage restarts too",
			snap: at("test").bound().with(restart).Snapshot, wantStage: "dev",
			wantEvents: []string{"Normal/RolloutRestarted", "Normal/StageStarted"}},
		{name: "a new policy with the annotation starts, recording the value",
			snap: fixture{newSnapshot(newPolicy())}.with(restart).Snapshot, wantStage: "dev",
			wantEvents: []string{"Normal/RolloutRestarted", "Normal/StageStarted"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			action := Plan(tt.snap, engine)
			if action.Type != ActionUpdateStatus || action.Status.ActiveStage != tt.wantStage || action.Status.RestartedAt != value {
				t.Fatalf("action %s (%s) to stage %q recording %q, want the rollout restarted in %q recording %q",
					action.Type, action.Why, action.Status.ActiveStage, action.Status.RestartedAt, tt.wantStage, value)
			}
			if got := eventKeys(action.Events); !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events %v, want %v", got, tt.wantEvents)
			}
			for i, r := range action.Status.Stages {
				if i > 0 && r.Phase != v1alpha1.StagePending {
					t.Errorf("stage %s is %s after the restart, want Pending", r.Name, r.Phase)
				}
			}
			// The same value again restarts nothing: the first stage's
			// BindingPolicy comes next, the old one stays until it is placed.
			next := replan(t, tt.snap, engine, action)
			if next.Status != nil && next.Status.ActiveStage != tt.wantStage || slices.Contains(eventKeys(next.Events), "Normal/RolloutRestarted") {
				t.Errorf("planned again: %s (%s), events %v; want no second restart", next.Type, next.Why, eventKeys(next.Events))
			}
			if next.Type == ActionDeleteBindingPolicy {
				t.Errorf("planned again: deletes %s before the first stage is placed", next.BindingPolicy.Name)
			}
		})
	}

	t.Run("a value already handled restarts nothing", func(t *testing.T) {
		snap := completed().with(restart).with(func(s *Snapshot) { s.Policy.Status.RestartedAt = value }).Snapshot
		if action := Plan(snap, engine); slices.Contains(eventKeys(action.Events), "Normal/RolloutRestarted") || action.Status != nil && action.Status.ActiveStage != "prod" {
			t.Errorf("action %s (%s), events %v: want the completed rollout left alone", action.Type, action.Why, eventKeys(action.Events))
		}
	})
	// The status records the value handled, and the API server refuses a
	// status whose restartedAt is over 256 bytes: such a value failed
	// every status write, with no Event.
	t.Run("a value too long to record blocks the rollout and says why", func(t *testing.T) {
		long := strings.Repeat("x", v1alpha1.MaxRestartedAtLength+1)
		snap := at("test").bound().with(func(s *Snapshot) {
			s.Policy.Annotations = map[string]string{v1alpha1.RestartedAtAnnotation: long}
		}).Snapshot
		action := Plan(snap, engine)
		if action.Type != ActionUpdateStatus || action.Status.RestartedAt != "" || action.Status.ActiveStage != "test" ||
			action.Status.Phase != v1alpha1.RolloutBlocked {
			t.Fatalf("action %s (%s), status %+v: want the rollout blocked where it is, the value not recorded", action.Type, action.Why, action.Status)
		}
		progressing := meta.FindStatusCondition(action.Status.Conditions, v1alpha1.ConditionProgressing)
		if progressing == nil || progressing.Reason != v1alpha1.ReasonInvalidAnnotation || !strings.Contains(progressing.Message, "257 bytes") {
			t.Errorf("Progressing %+v, want reason %s saying the value's length", progressing, v1alpha1.ReasonInvalidAnnotation)
		}
		if got := eventKeys(action.Events); !slices.Equal(got, []string{"Warning/" + v1alpha1.ReasonInvalidAnnotation}) {
			t.Errorf("events %v, want one Warning %s", got, v1alpha1.ReasonInvalidAnnotation)
		}
		if next := replan(t, snap, engine, action); next.Type != ActionNone {
			t.Errorf("planned again: %s (%s), want nothing more until the annotation changes", next.Type, next.Why)
		}
	})
	t.Run("a suspended rollout restarts once resumed", func(t *testing.T) {
		snap := completed().with(restart).with(suspend).Snapshot
		if action := Plan(snap, engine); action.Status == nil || action.Status.Phase != v1alpha1.RolloutSuspended || action.Status.ActiveStage != "prod" {
			t.Errorf("action %s (%s): want the suspension to hold the restart", action.Type, action.Why)
		}
	})
}

// ---------------------------------------------------------------------------
// Soak
// ---------------------------------------------------------------------------

// soakingFor returns the dev stage, over the Deployments with the seed's
// condition, and soakDuration d.
func soakingFor(d time.Duration) v1alpha1.Stage {
	s := stageWith("dev", deploymentsFilter, seedCondition)
	s.SoakDuration = &metav1.Duration{Duration: d}
	return s
}

// metSince sets when the dev stage's condition started holding.
func metSince(t metav1.Time) func(*Snapshot) {
	return func(s *Snapshot) {
		s.Policy.Status.Stages = stageRecords(s.Policy, s.Policy.Status.Stages, 0, earlier)
		s.Policy.Status.Stages[0].ConditionMetTime = ptr.To(t)
	}
}

func TestPlanSoak(t *testing.T) {
	engine := newEngine(t)
	soak := soakingFor(10 * time.Minute)
	holding := func() fixture { return at("dev", soak, stage("test")).bound().reporting(deployment, "1") }

	t.Run("the condition holds for the first time: the clock starts", func(t *testing.T) {
		snap := holding().Snapshot
		action := Plan(snap, engine)
		if action.Type != ActionUpdateStatus || action.Status.ActiveStage != "dev" {
			t.Fatalf("action %s (%s) in stage %q, want a status update in dev", action.Type, action.Why, action.Status.ActiveStage)
		}
		if got := action.Status.Stages[0].ConditionMetTime; !timeEqual(got, now) {
			t.Errorf("conditionMetTime %v, want %v", got, now)
		}
		if c := condition(t, action.Status, v1alpha1.ConditionProgressing); c.Reason != v1alpha1.ReasonSoaking || !strings.Contains(c.Message, "2026-03-01T12:10:00Z") {
			t.Errorf("Progressing %s: %q, want Soaking naming when it is done", c.Reason, c.Message)
		}
		if action.RequeueAfter != 10*time.Minute {
			t.Errorf("requeue after %s, want 10m", action.RequeueAfter)
		}
		// A minute later nothing changes but the time left.
		again := replan(t, snap, engine, action)
		if again.Type != ActionNone || again.RequeueAfter != 9*time.Minute {
			t.Errorf("a minute later: %s (%s) requeue %s, want None, requeue 9m", again.Type, again.Why, again.RequeueAfter)
		}
	})
	t.Run("held for the whole soak: the next stage starts", func(t *testing.T) {
		snap := holding().with(metSince(metav1.NewTime(now.Add(-10 * time.Minute)))).Snapshot
		handover := Plan(snap, engine)
		if handover.Type != ActionCreateBindingPolicy || handover.BindingPolicy.Name != "web.stage.test" {
			t.Fatalf("action %s (%s), want test placed", handover.Type, handover.Why)
		}
		action := Plan(placed(snap, handover.BindingPolicy), engine)
		if action.Type != ActionUpdateStatus || action.Status.ActiveStage != "test" {
			t.Fatalf("action %s (%s) to stage %q, want test to start", action.Type, action.Why, action.Status.ActiveStage)
		}
		if !strings.Contains(action.Status.Stages[0].Message, "soakDuration 10m0s") {
			t.Errorf("dev's message %q does not say it soaked", action.Status.Stages[0].Message)
		}
		// dev's record keeps when its condition started holding.
		if got := action.Status.Stages[0].ConditionMetTime; !timeEqual(got, metav1.NewTime(now.Add(-10*time.Minute))) {
			t.Errorf("dev's conditionMetTime %v once done, want it kept", got)
		}
	})
	t.Run("held for part of the soak: it waits for the rest", func(t *testing.T) {
		snap := holding().with(metSince(metav1.NewTime(now.Add(-4 * time.Minute)))).Snapshot
		action := Plan(snap, engine)
		if action.Status != nil && action.Status.ActiveStage != "dev" {
			t.Fatalf("action %s moved to %q before the soak ended", action.Type, action.Status.ActiveStage)
		}
		if action.RequeueAfter != 6*time.Minute {
			t.Errorf("requeue after %s, want 6m", action.RequeueAfter)
		}
		if action.Status != nil && !timeEqual(action.Status.Stages[0].ConditionMetTime, metav1.NewTime(now.Add(-4*time.Minute))) {
			t.Errorf("conditionMetTime moved to %v", action.Status.Stages[0].ConditionMetTime)
		}
	})
	t.Run("the condition stops holding: the clock is cleared", func(t *testing.T) {
		snap := at("dev", soak, stage("test")).bound().reporting(deployment, "0").with(metSince(metav1.NewTime(now.Add(-4 * time.Minute)))).Snapshot
		action := Plan(snap, engine)
		if action.Type != ActionUpdateStatus || action.Status.Stages[0].ConditionMetTime != nil || action.Status.ActiveStage != "dev" {
			t.Fatalf("action %s (%s): want the status to clear conditionMetTime and stay in dev", action.Type, action.Why)
		}
		if action.RequeueAfter != 0 {
			t.Errorf("requeue after %s, want none for the soak", action.RequeueAfter)
		}
	})
	t.Run("a final stage completes only after its soak", func(t *testing.T) {
		final := soakingFor(5 * time.Minute)
		f := at("dev", final).bound().reporting(deployment, "1")
		action := Plan(f.Snapshot, engine)
		if action.Status == nil || action.Status.Phase == v1alpha1.RolloutCompleted {
			t.Fatalf("action %s (%s): completed before the soak", action.Type, action.Why)
		}
		done := Plan(at("dev", final).bound().reporting(deployment, "1").with(metSince(metav1.NewTime(now.Add(-5*time.Minute)))).Snapshot, engine)
		if done.Status == nil || done.Status.Phase != v1alpha1.RolloutCompleted {
			t.Fatalf("action %s (%s): want Completed after the soak", done.Type, done.Why)
		}
	})
}

// ---------------------------------------------------------------------------
// Placement
// ---------------------------------------------------------------------------

// accumulating sets spec.placement Accumulate on the snapshot's policy.
func accumulating(s *Snapshot) { s.Policy.Spec.Placement = v1alpha1.PlacementAccumulate }

func TestPlanPlacement(t *testing.T) {
	engine := newEngine(t)
	p := newPolicy()
	devBP := ownedBP(p, "dev", "bp-dev")
	tests := []struct {
		name     string
		snap     *Snapshot
		wantType ActionType
		wantBP   string // the BindingPolicy the action writes
	}{
		{name: "Replace (the default): the earlier stage's BindingPolicy goes once the active one is placed",
			snap:     at("test").bound().alsoBP(devBP).Snapshot,
			wantType: ActionDeleteBindingPolicy, wantBP: "web.stage.dev"},
		{name: "Accumulate: the earlier stage's BindingPolicy stays",
			snap:     at("test").bound().alsoBP(devBP).with(accumulating).Snapshot,
			wantType: ActionUpdateStatus},
		{name: "Accumulate: a missing earlier stage's BindingPolicy is created (a switch from Replace)",
			snap:     at("test").bound().with(accumulating).Snapshot,
			wantType: ActionCreateBindingPolicy, wantBP: "web.stage.dev"},
		{name: "Accumulate: an earlier stage's BindingPolicy follows the spec",
			snap: at("test").bound().alsoBP(devBP).with(accumulating).with(func(s *Snapshot) {
				s.Policy.Spec.Downsync[0].ObjectSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"app": "other"}}}
				s.ActiveBindingPolicy.Spec.Downsync = s.Policy.Spec.Downsync
				for i := range s.BindingPolicies {
					if s.BindingPolicies[i].Name == "web.stage.test" {
						s.BindingPolicies[i].Spec.Downsync = s.Policy.Spec.Downsync
					}
				}
			}).Snapshot,
			wantType: ActionUpdateBindingPolicy, wantBP: "web.stage.dev"},
		{name: "Accumulate: a later stage's BindingPolicy (a restart) still goes",
			snap:     at("dev").bound().alsoBP(ownedBP(p, "prod", "bp-prod")).with(accumulating).Snapshot,
			wantType: ActionDeleteBindingPolicy, wantBP: "web.stage.prod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			action := Plan(tt.snap, engine)
			if action.Type != tt.wantType {
				t.Fatalf("action %s (%s), want %s", action.Type, action.Why, tt.wantType)
			}
			if tt.wantBP != "" && (action.BindingPolicy == nil || action.BindingPolicy.Name != tt.wantBP) {
				t.Errorf("action writes %v, want %s", action.BindingPolicy, tt.wantBP)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Progress deadline
// ---------------------------------------------------------------------------

// deadlined returns dev with the seed's condition and a progressDeadline.
func deadlined(name, condition string, d time.Duration) v1alpha1.Stage {
	s := stageWith(name, deploymentsFilter, condition)
	s.ProgressDeadline = &metav1.Duration{Duration: d}
	return s
}

// suspendedWhileActive records that the rollout was suspended for d while the
// active stage was active.
func suspendedWhileActive(d time.Duration) func(*Snapshot) {
	return func(s *Snapshot) {
		s.Policy.Status.Stages[slices.IndexFunc(s.Policy.Status.Stages, func(r v1alpha1.StageStatus) bool {
			return r.Name == s.Policy.Status.ActiveStage
		})].SuspendedDuration = &metav1.Duration{Duration: d}
	}
}

// resumedAfter records a suspension that began d ago and has just been
// lifted: status still says Suspended, the spec no longer does.
func resumedAfter(d time.Duration) func(*Snapshot) {
	return func(s *Snapshot) {
		s.Policy.Status.Phase = v1alpha1.RolloutSuspended
		s.Policy.Status.SuspendedTime = ptr.To(metav1.NewTime(now.Add(-d)))
	}
}

// alreadyStalled records that the rollout is already Stalled.
func alreadyStalled(s *Snapshot) {
	s.Policy.Status.Phase = v1alpha1.RolloutStalled
	meta.SetStatusCondition(&s.Policy.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionProgressing,
		Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonProgressDeadlineExceeded, Message: "earlier"})
}

// TestPlanProgressDeadline checks the stage deadline: counted from the
// stage's start (an hour before now in these fixtures), not counting the
// time suspended; past it the rollout is Stalled with one Warning Event; it
// recovers by itself when the condition holds.
func TestPlanProgressDeadline(t *testing.T) {
	engine := newEngine(t)
	dev := func(d time.Duration) v1alpha1.Stage { return deadlined("dev", seedCondition, d) }
	tests := []struct {
		name         string
		snap         *Snapshot
		wantStage    string // the active stage after the action
		wantPhase    v1alpha1.RolloutPhase
		wantReason   string // of Progressing
		wantEvents   []string
		wantDeadline *metav1.Time // of the active stage's record
		wantRequeue  time.Duration
		wantMsg      string // substring of Progressing's message
	}{
		{name: "within the deadline: waits, requeued for when it passes",
			snap:      at("dev", dev(2*time.Hour), stage("test")).bound().reporting(deployment, "0").Snapshot,
			wantStage: "dev", wantPhase: v1alpha1.RolloutProgressing, wantReason: v1alpha1.ReasonConditionNotMet,
			wantDeadline: ptr.To(metav1.NewTime(now.Add(time.Hour))), wantRequeue: time.Hour + time.Second},
		{name: "past the deadline: Stalled, with a Warning Event",
			snap:      at("dev", dev(30*time.Minute), stage("test")).bound().reporting(deployment, "0").Snapshot,
			wantStage: "dev", wantPhase: v1alpha1.RolloutStalled, wantReason: v1alpha1.ReasonProgressDeadlineExceeded,
			wantEvents: []string{"Warning/ProgressDeadlineExceeded"}, wantDeadline: ptr.To(metav1.NewTime(now.Add(-30 * time.Minute))),
			wantMsg: "past its progressDeadline 30m0s (at 2026-03-01T11:30:00Z): "},
		{name: "past the deadline waiting for the Binding: Stalled too",
			snap:      at("dev", dev(30*time.Minute), stage("test")).Snapshot,
			wantStage: "dev", wantPhase: v1alpha1.RolloutStalled, wantReason: v1alpha1.ReasonProgressDeadlineExceeded,
			wantEvents: []string{"Warning/ProgressDeadlineExceeded"}, wantDeadline: ptr.To(metav1.NewTime(now.Add(-30 * time.Minute))),
			wantMsg: "to resolve BindingPolicy web.stage.dev into a Binding"},
		{name: "already Stalled: no second Event",
			snap:      at("dev", dev(30*time.Minute), stage("test")).bound().reporting(deployment, "0").with(alreadyStalled).Snapshot,
			wantStage: "dev", wantPhase: v1alpha1.RolloutStalled, wantReason: v1alpha1.ReasonProgressDeadlineExceeded,
			wantDeadline: ptr.To(metav1.NewTime(now.Add(-30 * time.Minute)))},
		{name: "Stalled, then the condition holds: the rollout goes on",
			snap:      at("dev", dev(30*time.Minute), stage("test")).bound().reporting(deployment, "1").with(alreadyStalled).Snapshot,
			wantStage: "test", wantPhase: v1alpha1.RolloutProgressing, wantReason: v1alpha1.ReasonWaitingForBinding,
			wantEvents: []string{"Normal/StageSucceeded", "Normal/StageStarted"}},
		{name: "time suspended does not count",
			snap:      at("dev", dev(30*time.Minute), stage("test")).bound().reporting(deployment, "0").with(suspendedWhileActive(45 * time.Minute)).Snapshot,
			wantStage: "dev", wantPhase: v1alpha1.RolloutProgressing, wantReason: v1alpha1.ReasonConditionNotMet,
			wantDeadline: ptr.To(metav1.NewTime(now.Add(15 * time.Minute))), wantRequeue: 15*time.Minute + time.Second},
		{name: "just resumed: the suspension is added to the stage's record",
			snap:      at("dev", dev(30*time.Minute), stage("test")).bound().reporting(deployment, "0").with(resumedAfter(45 * time.Minute)).Snapshot,
			wantStage: "dev", wantPhase: v1alpha1.RolloutProgressing, wantReason: v1alpha1.ReasonConditionNotMet,
			wantEvents:   []string{"Normal/Resumed"},
			wantDeadline: ptr.To(metav1.NewTime(now.Add(15 * time.Minute))), wantRequeue: 15*time.Minute + time.Second},
		{name: "final stage past the deadline: Stalled, not Completed",
			snap:      at("dev", dev(30*time.Minute)).bound().reporting(deployment, "0").Snapshot,
			wantStage: "dev", wantPhase: v1alpha1.RolloutStalled, wantReason: v1alpha1.ReasonProgressDeadlineExceeded,
			wantEvents: []string{"Warning/ProgressDeadlineExceeded"}, wantDeadline: ptr.To(metav1.NewTime(now.Add(-30 * time.Minute)))},
		{name: "an evaluation error past the deadline: Blocked, as without one",
			snap:      at("dev", deadlined("dev", `obj.results[3].name == 'x'`, 30*time.Minute), stage("test")).bound().reporting(deployment, "1").Snapshot,
			wantStage: "dev", wantPhase: v1alpha1.RolloutBlocked, wantReason: v1alpha1.ReasonEvaluationError,
			wantEvents: []string{"Warning/EvaluationError"}},
		{name: "soaking past the deadline: Stalled, the soak goes on",
			snap: at("dev", func() v1alpha1.Stage {
				s := dev(30 * time.Minute)
				s.SoakDuration = &metav1.Duration{Duration: 20 * time.Minute}
				return s
			}(), stage("test")).bound().reporting(deployment, "1").with(metSince(metav1.NewTime(now.Add(-10 * time.Minute)))).Snapshot,
			wantStage: "dev", wantPhase: v1alpha1.RolloutStalled, wantReason: v1alpha1.ReasonProgressDeadlineExceeded,
			wantEvents: []string{"Warning/ProgressDeadlineExceeded"}, wantDeadline: ptr.To(metav1.NewTime(now.Add(-30 * time.Minute))),
			wantRequeue: 10 * time.Minute, wantMsg: "unless it stops holding"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := tt.snap
			action := Plan(snap, engine)
			if action.Type == ActionCreateBindingPolicy && tt.wantStage != snap.Policy.Status.ActiveStage {
				snap = placed(snap, action.BindingPolicy) // the next stage is placed before the status says so
				action = Plan(snap, engine)
			}
			if action.Type != ActionUpdateStatus {
				t.Fatalf("action %s (%s), want UpdateStatus", action.Type, action.Why)
			}
			st := action.Status
			if st.ActiveStage != tt.wantStage || st.Phase != tt.wantPhase {
				t.Errorf("stage %q phase %s, want %q %s", st.ActiveStage, st.Phase, tt.wantStage, tt.wantPhase)
			}
			c := condition(t, st, v1alpha1.ConditionProgressing)
			if c.Reason != tt.wantReason || !strings.Contains(c.Message, tt.wantMsg) {
				t.Errorf("Progressing %s %q, want %s naming %q", c.Reason, c.Message, tt.wantReason, tt.wantMsg)
			}
			if tt.wantPhase == v1alpha1.RolloutStalled && c.Status != metav1.ConditionFalse {
				t.Errorf("Progressing is %s while Stalled, want False", c.Status)
			}
			if got := eventKeys(action.Events); !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events %v, want %v", got, tt.wantEvents)
			}
			if st.SuspendedTime != nil {
				t.Errorf("suspendedTime %v left after resuming", st.SuspendedTime)
			}
			if action.RequeueAfter != tt.wantRequeue {
				t.Errorf("requeue after %s, want %s", action.RequeueAfter, tt.wantRequeue)
			}
			record := st.StageNamed(st.ActiveStage)
			if got := record.ProgressDeadlineTime; (got == nil) != (tt.wantDeadline == nil) || got != nil && !got.Equal(tt.wantDeadline) {
				t.Errorf("progressDeadlineTime %v, want %v", got, tt.wantDeadline)
			}
			if tt.wantPhase == v1alpha1.RolloutStalled || tt.wantRequeue > 0 {
				// Planned again a minute later, nothing new happens: no second
				// Event, and the deadline stays where it is.
				again := replan(t, tt.snap, engine, action)
				if len(again.Events) > 0 {
					t.Errorf("planned again: events %v", eventKeys(again.Events))
				}
				if again.Status != nil && !again.Status.StageNamed(st.ActiveStage).ProgressDeadlineTime.Equal(record.ProgressDeadlineTime) {
					t.Errorf("planned again: the deadline moved to %v", again.Status.StageNamed(st.ActiveStage).ProgressDeadlineTime)
				}
			}
		})
	}
}

// TestPlanSuspensionStopsTheDeadlineClock suspends a stage with a deadline
// for longer than the deadline and resumes it: the stage is not stalled
// until the deadline plus the time suspended has passed.
func TestPlanSuspensionStopsTheDeadlineClock(t *testing.T) {
	engine := newEngine(t)
	snap := at("dev", deadlined("dev", seedCondition, 90*time.Minute), stage("test")).bound().reporting(deployment, "0").with(suspend).Snapshot
	held := Plan(snap, engine)
	if held.Status == nil || !timeEqual(held.Status.SuspendedTime, now) {
		t.Fatalf("suspending: %s (%s), want suspendedTime %v", held.Type, held.Why, now)
	}
	// Resumed two hours later: the stage has been active for three hours,
	// two of them suspended, so 30 minutes of its 90 are left.
	resumed := cloneSnapshot(snap)
	resumed.Policy.Status = *held.Status.DeepCopy()
	resumed.Policy.Spec.Suspend = false
	resumed.Now = metav1.NewTime(now.Add(2 * time.Hour))
	action := Plan(resumed, engine)
	if action.Type != ActionUpdateStatus || action.Status.Phase != v1alpha1.RolloutProgressing {
		t.Fatalf("resumed: %s (%s) phase %v, want Progressing", action.Type, action.Why, action.Status)
	}
	record := action.Status.StageNamed("dev")
	if record.SuspendedDuration == nil || record.SuspendedDuration.Duration != 2*time.Hour {
		t.Errorf("suspendedDuration %v, want 2h", record.SuspendedDuration)
	}
	if want := metav1.NewTime(now.Add(30 * time.Minute).Add(2 * time.Hour)); !timeEqual(record.ProgressDeadlineTime, want) {
		t.Errorf("progressDeadlineTime %v, want %v", record.ProgressDeadlineTime, want)
	}
	if action.RequeueAfter != 30*time.Minute+time.Second {
		t.Errorf("requeue after %s, want 30m1s", action.RequeueAfter)
	}
	// Once written, the suspension stays counted.
	later := cloneSnapshot(resumed)
	later.Policy.Status = *action.Status.DeepCopy()
	later.Now = metav1.NewTime(resumed.Now.Add(31 * time.Minute))
	if stalled := Plan(later, engine); stalled.Status == nil || stalled.Status.Phase != v1alpha1.RolloutStalled {
		t.Errorf("31 minutes after resuming: %s (%s), want Stalled", stalled.Type, stalled.Why)
	}
}

// BenchmarkPlanAdvance plans the run that hands a stage without an approval
// gate over to the next: the run a CombinedStatus queues first.
func BenchmarkPlanAdvance(b *testing.B) {
	engine, err := expression.NewEngine()
	if err != nil {
		b.Fatal(err)
	}
	snap := at("dev").bound().reporting(deployment, "1").Snapshot
	// As read from the cache: the engine converts a CombinedStatus once per
	// UID and resourceVersion.
	snap.CombinedStatuses[0].UID, snap.CombinedStatuses[0].ResourceVersion = "cs-dev", "1"
	if action := Plan(snap, engine); action.Type == ActionNone {
		b.Fatalf("the snapshot plans nothing: %s", describe(action))
	}
	b.ReportAllocs()
	for b.Loop() {
		Plan(snap, engine)
	}
}
