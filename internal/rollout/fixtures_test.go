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

package rollout

import (
	"slices"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
	"github.com/kubestellar/workload-stager/internal/rollout/rollouttest"
)

// The table tests name the shared fixtures (package rollouttest) as they
// did when the fixtures lived here, so that every case reads as before.
const (
	testPolicyName    = rollouttest.PolicyName
	testPolicyUID     = rollouttest.PolicyUID
	testGeneration    = rollouttest.Generation
	seedConditionCS   = rollouttest.SeedConditionCS
	seedCondition     = rollouttest.SeedCondition
	deploymentsFilter = rollouttest.DeploymentsFilter
)

type workloadObject = rollouttest.WorkloadObject

var (
	muchEarlier    = rollouttest.MuchEarlier
	earlier        = rollouttest.Earlier
	now            = rollouttest.Now
	deployment     = rollouttest.Deployment
	configMap      = rollouttest.ConfigMap
	namespaceObj   = rollouttest.NamespaceObject
	newEngine      = rollouttest.NewEngine
	stageWith      = rollouttest.StageWith
	stage          = rollouttest.Stage
	newPolicy      = rollouttest.NewPolicy
	atStage        = rollouttest.AtStage
	policyOwnerRef = rollouttest.PolicyOwnerRef
	ownedBP        = rollouttest.OwnedBP
	foreignBP      = rollouttest.ForeignBP
	beingDeleted   = rollouttest.BeingDeleted
	bindingFor     = rollouttest.BindingFor
	combinedStatus = rollouttest.CombinedStatus
	bpNames        = rollouttest.BindingPolicyNames
)

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
			return v1alpha1.StagePlacement(p.Name, s.Name).At(p.Status.UpdateRevision).String()
		}
	}
	return ""
}

// nextBPName is the name of the BindingPolicy of the stage after the active
// one, or "" when there is none.
func nextBPName(p *v1alpha1.StagedBindingPolicy) string {
	for i, s := range p.Spec.Stages {
		if s.Name == p.Status.ActiveStage && i+1 < len(p.Spec.Stages) {
			return v1alpha1.StagePlacement(p.Name, p.Spec.Stages[i+1].Name).At(p.Status.UpdateRevision).String()
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

func timeEqual(a *metav1.Time, b metav1.Time) bool {
	return a != nil && a.Equal(&b)
}

// planThrough plans on snap and, when the plan is rule 20's status write
// that records the Events of a change before it is made
// (Action.Announces), plans again on the policy with that status written,
// as the reconciler's next step does: it returns that change, with the
// Events the write recorded, or the write if the next plan is another
// change.
func planThrough(snap *Snapshot, engine *expression.Engine, opts ...PlanOption) Action {
	action := Plan(snap, engine, opts...)
	if action.Announces == "" {
		return action
	}
	next := *snap
	next.Policy = snap.Policy.DeepCopy()
	next.Policy.Status = *action.Status
	change := Plan(&next, engine, opts...)
	if change.Type != action.Announces {
		return action
	}
	change.Events = action.Events
	return change
}
