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

// Rule 16 for BindingPolicies of a stage's clusters that the stager did not
// make: a name taken by someone else's object.

import (
	"slices"
	"strings"
	"testing"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// squatted returns the BindingPolicy that would place cluster in stage
// prod of f's policy, made by someone else: it names the cluster as the
// stager would, owned by another object.
func (f fixture) squatted(cluster string) *ksv1alpha1.BindingPolicy {
	prod := f.Policy.Spec.Stages[len(f.Policy.Spec.Stages)-1]
	bp := resolvedAs(ClusterBindingPolicy(f.Policy, prod, cluster), types.UID("squat-"+cluster), muchEarlier)
	bp.OwnerReferences[0].UID = "someone-else"
	return bp
}

func TestBatchesReportATakenClusterName(t *testing.T) {
	engine := newEngine(t)
	prod := fleetStage(nil)

	tests := []struct {
		name string
		// fixture is the snapshot, squatted on store-a's name.
		fixture func() fixture
	}{
		{name: "before the first cluster is placed", fixture: func() fixture {
			f := batched(prod)
			return f.with(func(s *Snapshot) { s.BindingPolicies = append(s.BindingPolicies, *f.squatted("store-a")) })
		}},
		{name: "when its batch fills", fixture: func() fixture {
			f := batched(prod).on("store-b", now, "")
			return f.with(func(s *Snapshot) { s.BindingPolicies = append(s.BindingPolicies, *f.squatted("store-a")) })
		}},
		{name: "without the policy's labels", fixture: func() fixture {
			f := batched(prod)
			bp := f.squatted("store-a")
			bp.Labels = nil
			return f.with(func(s *Snapshot) { s.BindingPolicies = append(s.BindingPolicies, *bp) })
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.fixture()
			action := Plan(f.Snapshot, engine)
			if action.Type != ActionUpdateStatus {
				t.Fatalf("action = %s (%s), want the conflict reported in the status", action.Type, action.Why)
			}
			if action.Status.Phase != v1alpha1.RolloutBlocked {
				t.Errorf("phase = %s, want Blocked", action.Status.Phase)
			}
			for _, ct := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionProgressing} {
				c := condition(t, action.Status, ct)
				if c.Reason != v1alpha1.ReasonBindingPolicyConflict || !strings.Contains(c.Message, "web.stage.prod.on.store-a") {
					t.Errorf("%s = %s %q, want BindingPolicyConflict naming web.stage.prod.on.store-a", ct, c.Reason, c.Message)
				}
			}
			if got := eventKeys(action.Events); !slices.Equal(got, []string{"Warning/" + v1alpha1.ReasonBindingPolicyConflict}) {
				t.Errorf("events = %v, want one Warning BindingPolicyConflict", got)
			}
			// Reported once: the status that says so already changes nothing.
			f.Policy.Status = *action.Status
			if again := Plan(f.Snapshot, engine); again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("then: action = %s (%s), events %v, want none", again.Type, again.Why, eventKeys(again.Events))
			}
			// Once the name is free, the cluster is placed.
			f.BindingPolicies = slices.DeleteFunc(f.BindingPolicies, func(bp ksv1alpha1.BindingPolicy) bool { return bp.Name == "web.stage.prod.on.store-a" })
			if freed := Plan(f.Snapshot, engine); freed.Type != ActionCreateBindingPolicy || freed.BindingPolicy.Name != "web.stage.prod.on.store-a" {
				t.Errorf("freed: action = %s (%s), want store-a placed", freed.Type, freed.Why)
			}
		})
	}

	t.Run("a BindingPolicy of the policy's own that lost its labels is brought in line", func(t *testing.T) {
		f := batched(prod)
		bp := resolvedAs(ClusterBindingPolicy(f.Policy, prod, "store-a"), "bp-store-a", muchEarlier)
		delete(bp.Labels, v1alpha1.ClusterLabel)
		f = f.with(func(s *Snapshot) { s.BindingPolicies = append(s.BindingPolicies, *bp) })
		action := Plan(f.Snapshot, engine)
		if action.Type != ActionUpdateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.on.store-a" ||
			action.BindingPolicy.Labels[v1alpha1.ClusterLabel] != "store-a" {
			t.Fatalf("action = %s (%s), want store-a's BindingPolicy labelled again", action.Type, action.Why)
		}
	})

	t.Run("one being deleted is waited for", func(t *testing.T) {
		f := batched(prod)
		bp := beingDeleted(resolvedAs(ClusterBindingPolicy(f.Policy, prod, "store-a"), "bp-store-a", muchEarlier))
		f = f.with(func(s *Snapshot) { s.BindingPolicies = append(s.BindingPolicies, *bp) })
		if action := Plan(f.Snapshot, engine); action.Type != ActionNone {
			t.Fatalf("action = %s (%s), want none while it goes", action.Type, action.Why)
		}
	})
}
