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

// Every BindingPolicy Plan creates, with its name taken by an object the
// policy does not own: rules 4, 13, 14, 16 and 17 through createBindingPolicy.

import (
	"slices"
	"strings"
	"testing"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
)

// creates are snapshots in which Plan creates a BindingPolicy, one per kind
// of create Plan makes; each returns the snapshot and the name it creates.
func creates(engine *expression.Engine) map[string]func() fixture {
	abort := func(s *Snapshot) { s.Policy.Spec.Abort = true }
	recorded := func(f fixture) fixture {
		f.Policy.Status = *Plan(f.Snapshot, engine).Status
		resync(f.Snapshot)
		return f
	}
	return map[string]func() fixture{
		"the active stage's (rule 13)": func() fixture {
			return fixture{newSnapshot(atStage(newPolicy(), "dev"))}
		},
		"the next stage's, at the handover (rule 17)": func() fixture {
			return at("dev").bound().reporting(deployment, "1")
		},
		"a batched stage's cluster's (rule 16)": func() fixture {
			return batched(fleetStage(nil))
		},
		"an earlier stage's under Accumulate (rule 14)": func() fixture {
			return at("test").bound().with(accumulating)
		},
		"a kept revision's (rule 14)": func() fixture {
			f := revisioned(v1alpha1.PlacementAccumulate, "dev", "v1", "v2", keepsAll("v1")).bound().reporting(deployment, "0")
			f.BindingPolicies = slices.DeleteFunc(f.BindingPolicies, func(bp ksv1alpha1.BindingPolicy) bool { return bp.Name == "web.stage.test.v1" })
			return f
		},
		"an abort's target (rule 4)": func() fixture {
			return recorded(revisioned(v1alpha1.PlacementAccumulate, "test", "v1", "v2",
				map[string]string{"dev": "v2", "test": "v1", "prod": "v1"}).bound().with(abort))
		},
		"a withdrawal's kept stage (rule 4)": func() fixture {
			f := healthyTest(analysed(v1alpha1.FailureAbort, errorRate(1))).with(measured(now, 0.5))
			f = recorded(f) // the failure
			f.Measurements = nil
			return recorded(f) // the abort
		},
	}
}

// squatters are the objects that may hold a name Plan wants: each is the
// BindingPolicy the stager would create, made someone else's.
var squatters = map[string]func(bp *ksv1alpha1.BindingPolicy) *ksv1alpha1.BindingPolicy{
	"labelled as the policy's, owned by another": func(bp *ksv1alpha1.BindingPolicy) *ksv1alpha1.BindingPolicy {
		bp.OwnerReferences[0].UID = "someone-else"
		return bp
	},
	// As the reconciler finds one the cache does not hold.
	"not labelled, owned by none": func(bp *ksv1alpha1.BindingPolicy) *ksv1alpha1.BindingPolicy {
		bp.Labels, bp.OwnerReferences, bp.Annotations = nil, nil, nil
		return bp
	},
	"owned by another, being deleted": func(bp *ksv1alpha1.BindingPolicy) *ksv1alpha1.BindingPolicy {
		bp.OwnerReferences[0].UID = "someone-else"
		return beingDeleted(bp)
	},
}

// TestPlanReportsEveryTakenName: whatever BindingPolicy Plan would create,
// an object of its name that the policy does not own blocks the rollout
// with BindingPolicyConflict naming it and one Warning Event (after the
// status write that the squatter leaves as the change, such as the advance
// a handover records), never a create of the name; reported once; and
// once the name is free, Plan creates it.
func TestPlanReportsEveryTakenName(t *testing.T) {
	engine := newEngine(t)
	for kind, base := range creates(engine) {
		first := planThrough(base().Snapshot, engine)
		if first.Type != ActionCreateBindingPolicy {
			t.Fatalf("%s: the fixture does not create: action %s (%s)", kind, first.Type, first.Why)
		}
		name := first.BindingPolicy.Name
		for squat, squatter := range squatters {
			t.Run(kind+"/"+squat, func(t *testing.T) {
				f := base()
				taken := squatter(first.BindingPolicy.DeepCopy())
				taken.UID, taken.CreationTimestamp = types.UID("squat"), muchEarlier
				f.BindingPolicies = append(f.BindingPolicies, *taken)
				switch name { // as the reconciler reads them, by name
				case activeBPName(f.Policy):
					f.ActiveBindingPolicy = taken
				case nextBPName(f.Policy):
					f.NextBindingPolicy = taken
				}

				snap := reportsConflict(t, f.Snapshot, engine, name)
				if again := planThrough(snap, engine); again.Type != ActionNone || len(again.Events) != 0 {
					t.Errorf("reported, then: action %s (%s), events %v; want none", again.Type, again.Why, eventKeys(again.Events))
				}
				snap.BindingPolicies = slices.DeleteFunc(snap.BindingPolicies, func(bp ksv1alpha1.BindingPolicy) bool { return bp.Name == name })
				if snap.ActiveBindingPolicy != nil && snap.ActiveBindingPolicy.Name == name {
					snap.ActiveBindingPolicy = nil
				}
				if freed := planThrough(snap, engine); freed.Type != ActionCreateBindingPolicy || freed.BindingPolicy.Name != name {
					t.Errorf("the name freed: action %s (%s), want %s created", freed.Type, freed.Why, name)
				}
			})
		}
	}
}

// reportsConflict plans snap until the status reports the name taken, and
// returns the snapshot with that status: every step before must be a status
// write, none a create of name.
func reportsConflict(t *testing.T, snap *Snapshot, engine *expression.Engine, name string) *Snapshot {
	t.Helper()
	for step := 1; ; step++ {
		action := planThrough(snap, engine)
		if action.Type == ActionCreateBindingPolicy && action.BindingPolicy.Name == name {
			t.Fatalf("step %d: creates %s, whose name is taken (%s)", step, name, action.Why)
		}
		if action.Type != ActionUpdateStatus {
			t.Fatalf("step %d: action %s (%s), want the name taken reported in the status", step, action.Type, action.Why)
		}
		next := *snap
		next.Policy = snap.Policy.DeepCopy()
		next.Policy.Status = *action.Status
		ready := condition(t, action.Status, v1alpha1.ConditionReady)
		if ready.Reason == v1alpha1.ReasonBindingPolicyConflict {
			for _, ct := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionProgressing} {
				if c := condition(t, action.Status, ct); c.Reason != v1alpha1.ReasonBindingPolicyConflict || !strings.Contains(c.Message, name) {
					t.Errorf("%s = %s %q, want BindingPolicyConflict naming %s", ct, c.Reason, c.Message, name)
				}
			}
			if got := eventKeys(action.Events); !slices.Contains(got, "Warning/"+v1alpha1.ReasonBindingPolicyConflict) {
				t.Errorf("events %v, want a Warning BindingPolicyConflict", got)
			}
			return &next
		}
		if step == 3 {
			t.Fatalf("step %d: status %s (Ready %q), want BindingPolicyConflict naming %s by now", step, action.Status.Phase, ready.Message, name)
		}
		if next.Policy.Status.ActiveStage != snap.Policy.Status.ActiveStage {
			resync(&next) // the reconciler reads by the new active stage's name
		}
		snap = &next
	}
}

// TestAbortSaysSoAgainOnceTheNameIsFree: an abort that reported a target's
// name taken stays Aborted meanwhile, and once the name is free and the
// target placed, its conditions say again why the rollout is aborted.
func TestAbortSaysSoAgainOnceTheNameIsFree(t *testing.T) {
	engine := newEngine(t)
	for _, kind := range []string{"an abort's target (rule 4)", "a withdrawal's kept stage (rule 4)"} {
		t.Run(kind, func(t *testing.T) {
			f := creates(engine)[kind]()
			aborted := condition(t, &f.Policy.Status, v1alpha1.ConditionReady)
			name := planThrough(f.Snapshot, engine).BindingPolicy.Name
			taken := ownedBP(f.Policy, "dev", "squat")
			taken.Name, taken.OwnerReferences = name, nil
			f.BindingPolicies = append(f.BindingPolicies, *taken)
			snap := reportsConflict(t, f.Snapshot, engine, name)
			if snap.Policy.Status.Phase != v1alpha1.RolloutAborted {
				t.Errorf("phase %s while the name is taken, want Aborted", snap.Policy.Status.Phase)
			}

			created := planThrough(&Snapshot{Policy: snap.Policy, Now: snap.Now, Bindings: snap.Bindings,
				BindingPolicies: slices.DeleteFunc(slices.Clone(snap.BindingPolicies), func(bp ksv1alpha1.BindingPolicy) bool { return bp.Name == name })}, engine)
			if created.Type != ActionCreateBindingPolicy {
				t.Fatalf("the name freed: action %s (%s), want %s created", created.Type, created.Why, name)
			}
			placed := created.BindingPolicy.DeepCopy()
			placed.UID = "placed"
			snap.BindingPolicies = slices.DeleteFunc(snap.BindingPolicies, func(bp ksv1alpha1.BindingPolicy) bool { return bp.Name == name })
			snap.BindingPolicies = append(snap.BindingPolicies, *placed)
			action := planThrough(snap, engine)
			if action.Type != ActionUpdateStatus || action.Status.Phase != v1alpha1.RolloutAborted {
				t.Fatalf("placed: action %s (%s), want the abort's status again", action.Type, action.Why)
			}
			if got := condition(t, action.Status, v1alpha1.ConditionReady); got.Reason != aborted.Reason || got.Message != aborted.Message {
				t.Errorf("Ready = %s %q, want %s %q as before", got.Reason, got.Message, aborted.Reason, aborted.Message)
			}
			if len(action.Events) != 0 {
				t.Errorf("events %v, want none: the abort was reported", eventKeys(action.Events))
			}
		})
	}
}

// TestACopiedSealPlacesOnlyWhatTheStagerPlaced pins what a seal copied
// from the stager's BindingPolicy of a cluster onto a forged one of the
// same cluster (same name: the stager's is gone) gives its forger
// (docs/security.md, "Cluster names from KubeStellar's Bindings"): the
// cluster counts as placed when the stager placed it, and nothing else;
// the forged spec is brought in line with the stage's before anything.
func TestACopiedSealPlacesOnlyWhatTheStagerPlaced(t *testing.T) {
	engine := newEngine(t)
	f := batched(fleetStage(nil)).on("store-a", minutesAgo(30), "0")
	forged := &f.BindingPolicies[len(f.BindingPolicies)-1]
	forged.UID = "forged"
	forged.Spec.ClusterSelectors = []metav1.LabelSelector{{}} // every cluster
	forged.Spec.Downsync = nil

	action := planThrough(f.Snapshot, engine)
	want := ClusterBindingPolicy(f.Policy, f.Policy.Spec.Stages[2], "store-a")
	if action.Type != ActionUpdateBindingPolicy || action.BindingPolicy.Name != want.Name || !BindingPolicyInSync(action.BindingPolicy, want) {
		t.Fatalf("action %s (%s), want %s brought in line with the stage's spec first", action.Type, action.Why, want.Name)
	}
	forged.Spec = want.Spec
	if got := clusterRecord(t, Plan(f.Snapshot, engine)); got.Placed != 1 || len(got.Clusters) != 1 || got.Clusters[0].Name != "store-a" {
		t.Errorf("clusters %+v, want store-a alone placed, as the stager placed it", got)
	}
}

// TestASealFromAnEarlierRunDoesNotCount: a seal dated before the stage's
// current start (the stager's own, from a run of the stage before a
// restart of the rollout, copied onto a forged BindingPolicy) does not
// make its cluster placed: the stage's order takes the BindingPolicy over,
// sealed now, when it reaches the cluster.
func TestASealFromAnEarlierRunDoesNotCount(t *testing.T) {
	engine := newEngine(t)
	f := batched(fleetStage(nil)).on("store-a", minutesAgo(90), "1") // the stage started an hour ago
	action := planThrough(f.Snapshot, engine)
	if action.Type != ActionUpdateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.on.store-a" ||
		action.BindingPolicy.Annotations[v1alpha1.PlacedAnnotation] != SealedPlacement(testPolicyUID, "prod", "", "store-a", now.Time) {
		t.Fatalf("action %s (%s), want store-a taken over, sealed now", action.Type, action.Why)
	}
}
