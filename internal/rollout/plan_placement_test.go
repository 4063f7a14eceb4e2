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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

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
			action := planThrough(f.Snapshot, engine)
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
			if again := planThrough(f.Snapshot, engine); again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("then: action = %s (%s), events %v, want none", again.Type, again.Why, eventKeys(again.Events))
			}
			// Once the name is free, the cluster is placed.
			f.BindingPolicies = slices.DeleteFunc(f.BindingPolicies, func(bp ksv1alpha1.BindingPolicy) bool { return bp.Name == "web.stage.prod.on.store-a" })
			if freed := planThrough(f.Snapshot, engine); freed.Type != ActionCreateBindingPolicy || freed.BindingPolicy.Name != "web.stage.prod.on.store-a" {
				t.Errorf("freed: action = %s (%s), want store-a placed", freed.Type, freed.Why)
			}
		})
	}

	t.Run("a BindingPolicy of the policy's own that lost its labels is brought in line", func(t *testing.T) {
		f := batched(prod)
		bp := resolvedAs(ClusterBindingPolicy(f.Policy, prod, "store-a"), "bp-store-a", muchEarlier)
		delete(bp.Labels, v1alpha1.ClusterLabel)
		f = f.with(func(s *Snapshot) { s.BindingPolicies = append(s.BindingPolicies, *bp) })
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionUpdateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.on.store-a" ||
			action.BindingPolicy.Labels[v1alpha1.ClusterLabel] != "store-a" {
			t.Fatalf("action = %s (%s), want store-a's BindingPolicy labelled again", action.Type, action.Why)
		}
	})

	t.Run("one being deleted is waited for", func(t *testing.T) {
		f := batched(prod)
		bp := beingDeleted(resolvedAs(ClusterBindingPolicy(f.Policy, prod, "store-a"), "bp-store-a", muchEarlier))
		f = f.with(func(s *Snapshot) { s.BindingPolicies = append(s.BindingPolicies, *bp) })
		if action := planThrough(f.Snapshot, engine); action.Type != ActionNone {
			t.Fatalf("action = %s (%s), want none while it goes", action.Type, action.Why)
		}
	})
}

// forged returns the BindingPolicy that would place cluster in stage prod
// of f's policy, made by someone who can create BindingPolicies: named,
// labelled and owned (the policy's UID is readable) as the stager makes
// them, created at created, and resolved, with the CombinedStatus of its
// Deployment saying count available; it bears no seal of the stager.
func (f fixture) forged(cluster string, created metav1.Time, count string) fixture {
	f = f.on(cluster, created, count)
	delete(f.BindingPolicies[len(f.BindingPolicies)-1].Annotations, v1alpha1.PlacedAnnotation)
	return f
}

// TestBatchesCountOnlyTheClustersTheStagerPlaced: a BindingPolicy of a
// cluster that carries the policy's owner reference counts as placed only
// when the stager placed it: sealed by this process, or named in the
// stage's record (placed before the stager restarted). Another is not the
// canary, counts neither for nor against the stage, and is taken over,
// sealed, when the stage's order reaches its cluster.
func TestBatchesCountOnlyTheClustersTheStagerPlaced(t *testing.T) {
	engine := newEngine(t)
	canary := fleetStage(func(s *v1alpha1.Stage) { s.Canary = ptr.To[int32](1) })

	t.Run("a forged BindingPolicy does not pick the canary", func(t *testing.T) {
		f := batched(canary).forged("store-c", minutesAgo(30), "1")
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.on.store-a" {
			t.Fatalf("action = %s (%s), want store-a placed", action.Type, action.Why)
		}
		if len(action.Events) != 1 || !strings.Contains(action.Events[0].Note, "batch 1 of") {
			t.Errorf("events = %+v, want store-a to start batch 1, the canary", action.Events)
		}
		if action.BindingPolicy.Annotations[v1alpha1.PlacedAnnotation] == "" {
			t.Errorf("store-a's BindingPolicy is not sealed: %v", action.BindingPolicy.Annotations)
		}
	})

	t.Run("a forged failure neither stalls the stage nor counts against its budget", func(t *testing.T) {
		f := batched(canary).on("store-a", minutesAgo(2), "1").forged("store-b", minutesAgo(30), "0")
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionUpdateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.on.store-b" ||
			action.BindingPolicy.Annotations[v1alpha1.PlacedAnnotation] == "" {
			t.Fatalf("action = %s (%s), want store-b taken over, sealed, as the next cluster", action.Type, action.Why)
		}
	})

	t.Run("forged BindingPolicies do not complete the stage", func(t *testing.T) {
		f := batched(canary).on("store-a", minutesAgo(2), "1")
		for _, c := range []string{"store-b", "store-c", "store-d", "store-e"} {
			f = f.forged(c, minutesAgo(2), "1")
		}
		action := planThrough(f.Snapshot, engine)
		if action.Status != nil && action.Status.Phase == v1alpha1.RolloutCompleted {
			t.Fatalf("the rollout completed on forged placements")
		}
	})

	t.Run("the stage's order takes a forged one over, its deadline counting from then", func(t *testing.T) {
		f := batched(canary).forged("store-a", minutesAgo(30), "0")
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionUpdateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.on.store-a" {
			t.Fatalf("action = %s (%s), want store-a's BindingPolicy taken over", action.Type, action.Why)
		}
		sealed := action.BindingPolicy.Annotations[v1alpha1.PlacedAnnotation]
		if sealed != SealedPlacement(testPolicyUID, "prod", "", "store-a", now.Time) {
			t.Fatalf("seal = %q, want this process's, dated now", sealed)
		}
		f.BindingPolicies[len(f.BindingPolicies)-1] = *action.BindingPolicy
		then := planThrough(f.Snapshot, engine)
		got := clusterRecord(t, then)
		if got.Placed != 1 || got.Failed != 0 || then.Status.Phase != v1alpha1.RolloutProgressing {
			t.Errorf("clusters = %+v, phase %s: want store-a placed now and progressing, not failed past a deadline from its creation",
				got, then.Status.Phase)
		}
	})

	t.Run("a seal is the cluster's own", func(t *testing.T) {
		f := batched(canary).forged("store-c", minutesAgo(30), "0")
		bp := &f.BindingPolicies[len(f.BindingPolicies)-1]
		bp.Annotations = map[string]string{v1alpha1.PlacedAnnotation: SealedPlacement(testPolicyUID, "prod", "", "store-a", minutesAgo(30).Time)}
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.on.store-a" {
			t.Fatalf("action = %s (%s), want store-a placed: store-a's seal does not seal store-c", action.Type, action.Why)
		}
	})

	t.Run("after a restart, the clusters the record names count", func(t *testing.T) {
		f := batched(fleetStage(nil)).forged("store-a", minutesAgo(2), "1").forged("store-b", minutesAgo(1), "0")
		record := f.Policy.Status.StageNamed("prod")
		record.Clusters = &v1alpha1.StageClusters{Total: 5, Placed: 2, Succeeded: 1, Batch: 1, Batches: 3,
			Clusters: []v1alpha1.ClusterStatus{{Name: "store-b", State: v1alpha1.ClusterProgressing}, {Name: "store-a", State: v1alpha1.ClusterSucceeded}}}
		action := planThrough(f.Snapshot, engine)
		if action.Type == ActionCreateBindingPolicy || action.Type == ActionUpdateBindingPolicy {
			t.Fatalf("action = %s (%s), want the stage to wait for store-b", action.Type, action.Why)
		}
		if got := clusterRecord(t, action); got.Placed != 2 || got.Succeeded != 1 {
			t.Errorf("clusters = %+v, want store-a and store-b placed", got)
		}
	})
}
