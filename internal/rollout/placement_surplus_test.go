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
	"fmt"
	"slices"
	"testing"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// TestSurplusWaits is one row per wait of rule 18: which surplus
// BindingPolicy waits for what, and that the wait is over exactly once
// what it waits for is resolved. The abort's WaitHealthy is walked by
// TestPlanAbort ("a stage's newer revision goes only once the current one
// is healthy there").
func TestSurplusWaits(t *testing.T) {
	dev := fleetStage(func(s *v1alpha1.Stage) { s.Name = "dev"; s.ClusterSelectors[0].MatchLabels["stage"] = "dev" })
	cases := []struct {
		name string
		// snap is the snapshot, bp the surplus BindingPolicy, b the
		// active stage's batches (nil: not batched).
		snap func() (*Snapshot, *ksv1alpha1.BindingPolicy, *batches)
		kind WaitKind
		// resolve makes what bp waits for resolved.
		resolve func(*Snapshot, *batches)
	}{
		{name: "a later stage's superseded revision waits for the kept one", kind: WaitKeptResolved,
			snap: func() (*Snapshot, *ksv1alpha1.BindingPolicy, *batches) {
				f := revisioned(v1alpha1.PlacementReplace, "dev", "v1", "v2", map[string]string{"test": "v1"})
				old := revisionBP(f.Policy, "test", "v0")
				return f.alsoBP(old).Snapshot, old, nil
			},
			resolve: func(s *Snapshot, _ *batches) {
				s.Bindings = append(s.Bindings, *bindingFor(revisionBP(s.Policy, "test", "v1")))
			}},
		{name: "a batched stage's stage-wide one waits for every cluster's own", kind: WaitEveryClusterResolved,
			snap: func() (*Snapshot, *ksv1alpha1.BindingPolicy, *batches) {
				f := batched(fleetStage(nil))
				wide := ownedBP(f.Policy, "prod", "bp-prod")
				return f.alsoBP(wide).Snapshot, wide, &batches{unplaced: 1, allResolved: true}
			},
			resolve: func(_ *Snapshot, b *batches) { b.unplaced = 0 }},
		{name: "a batched stage's superseded revision waits for every cluster's own", kind: WaitEveryClusterResolved,
			snap: func() (*Snapshot, *ksv1alpha1.BindingPolicy, *batches) {
				f := batched(fleetStage(nil))
				f.Policy.Status.UpdateRevision = "v2"
				superseded := revisionBP(f.Policy, "prod", "v1")
				return f.alsoBP(superseded).Snapshot, superseded, &batches{unplaced: 1, allResolved: true}
			},
			resolve: func(_ *Snapshot, b *batches) { b.unplaced = 0 }},
		{name: "a batched stage's cluster one of a superseded revision waits for the cluster's own", kind: WaitClusterResolved,
			snap: func() (*Snapshot, *ksv1alpha1.BindingPolicy, *batches) {
				f := batched(fleetStage(nil))
				f.Policy.Status.UpdateRevision = "v2"
				before := f.Policy.DeepCopy()
				before.Status.UpdateRevision = "v1"
				superseded := resolvedAs(ClusterBindingPolicy(before, before.Spec.Stages[2], "store-a"), "bp-store-a-v1", muchEarlier)
				return f.alsoBP(superseded).Snapshot, superseded, &batches{selected: []string{"store-a", "store-b"}, allResolved: true}
			},
			resolve: func(s *Snapshot, _ *batches) {
				own := resolvedAs(ClusterBindingPolicy(s.Policy, s.Policy.Spec.Stages[2], "store-a"), "bp-store-a-v2", earlier)
				s.BindingPolicies = append(s.BindingPolicies, *own)
				s.Bindings = append(s.Bindings, *bindingFor(own))
			}},
		{name: "an accumulated stage's cluster one waits for the stage-wide one", kind: WaitStageWideResolved,
			snap: func() (*Snapshot, *ksv1alpha1.BindingPolicy, *batches) {
				f := at("test", dev, stage("test")).with(func(s *Snapshot) { s.Policy.Spec.Placement = v1alpha1.PlacementAccumulate })
				perCluster := resolvedAs(ClusterBindingPolicy(f.Policy, dev, "store-a"), "bp-store-a", muchEarlier)
				wide := ownedBP(f.Policy, "dev", "bp-dev")
				wide.Status.ObservedGeneration = 0
				return f.alsoBP(perCluster).alsoBP(wide).Snapshot, perCluster, nil
			},
			resolve: func(s *Snapshot, _ *batches) {
				wide := findBindingPolicy(s.BindingPolicies, "web.stage.dev")
				wide.Status.ObservedGeneration = 1
				s.Bindings = append(s.Bindings, *bindingFor(wide))
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap, bp, b := tc.snap()
			active, _, _ := ActiveStage(snap.Policy)
			waits := surplusWaits(snap, active, b)(bp)
			if len(waits) != 1 || waits[0].Kind != tc.kind {
				t.Fatalf("%s waits for %v, want one %s", bp.Name, waits, tc.kind)
			}
			if gone, waiting := firstGone([]Surplus{{BP: bp, WaitsFor: waits}}); gone != nil || waiting == "" {
				t.Fatalf("before it is resolved: gone %v, waiting %q; want it to wait, saying why", gone, waiting)
			}
			tc.resolve(snap, b)
			if gone, waiting := firstGone([]Surplus{{BP: bp, WaitsFor: waits}}); gone == nil {
				t.Fatalf("once resolved: still waits (%s)", waiting)
			}
		})
	}
}

// TestPlanNeverDeletesAHeldOrWaitingBindingPolicy checks rules 4 and 18
// over random snapshots of a policy with revisions, placement Accumulate
// or Replace, a stage placed in batches or not, abort or not, and
// BindingPolicies of every stage, revision and cluster, each present or
// not, owned or not, resolved or not: whatever Plan deletes is no
// BindingPolicy the rollout holds, and its make-before-break wait is over,
// each judged here from the snapshot, not by the code under test.
func TestPlanNeverDeletesAHeldOrWaitingBindingPolicy(t *testing.T) {
	engine := newEngine(t)
	deletes := 0
	rapid.Check(t, func(rt *rapid.T) {
		snap := randomPlacementSnapshot(rt)
		// Each delete is followed by the next, on the snapshot without
		// the deleted one, so that every surplus is reached in turn.
		for range len(snap.BindingPolicies) {
			action := Plan(snap, engine)
			if action.Type != ActionDeleteBindingPolicy {
				return
			}
			deletes++
			name := action.BindingPolicy.Name
			if problem := heldOrWaiting(snap, action.BindingPolicy); problem != "" {
				rt.Fatalf("Plan deleted %s (%s), but %s", name, action.Why, problem)
			}
			snap.BindingPolicies = slices.DeleteFunc(snap.BindingPolicies, func(bp ksv1alpha1.BindingPolicy) bool { return bp.Name == name })
			snap.Bindings = slices.DeleteFunc(snap.Bindings, func(b ksv1alpha1.Binding) bool { return b.Name == name })
		}
	})
	if deletes == 0 {
		t.Fatalf("no random snapshot led to a delete: the generator does not reach rules 4 and 18")
	}
	t.Logf("%d deletes checked", deletes)
}

// heldOrWaiting says why deleting bp breaks the placement model, or "".
func heldOrWaiting(snap *Snapshot, bp *ksv1alpha1.BindingPolicy) string {
	p := snap.Policy
	stageName := bp.Labels[v1alpha1.StageLabel]
	index := stageIndex(p, stageName)
	if Aborting(p) {
		var targets []string
		for _, r := range p.Status.Stages {
			if r.Revision != "" {
				targets = append(targets, v1alpha1.StagePlacement(p.Name, r.Name).At(p.Status.CurrentRevision).String())
			}
		}
		for _, name := range targets {
			if name == bp.Name {
				return "abort puts it back"
			}
			if !resolved(snap, findBindingPolicy(snap.BindingPolicies, name)) {
				return fmt.Sprintf("abort's %s is not resolved", name)
			}
		}
		target := v1alpha1.StagePlacement(p.Name, stageName).At(p.Status.CurrentRevision).String()
		if index >= 0 && findBindingPolicy(snap.BindingPolicies, target) != nil && !slices.ContainsFunc(snap.AbortStatuses, func(cs ksv1alpha1.CombinedStatus) bool {
			return cs.Labels[StatusLabelBindingPolicy] == target && cs.Results[0].Rows[0].Columns[0].Number != nil && *cs.Results[0].Rows[0].Columns[0].Number == "1"
		}) {
			return fmt.Sprintf("stage %q is not healthy on %s", stageName, target)
		}
		return ""
	}
	active, _, _ := ActiveStage(p)
	stage := p.Spec.Stages[active]
	held := []string{v1alpha1.ActivePlacement(p.Name, stage, p.Status.UpdateRevision).String()}
	if p.Spec.Placement == v1alpha1.PlacementAccumulate {
		for _, s := range p.Spec.Stages[:active] {
			held = append(held, v1alpha1.StagePlacement(p.Name, s.Name).At(p.Status.UpdateRevision).String())
		}
	}
	for i, s := range p.Spec.Stages[active:] {
		// A batched active stage's clusters place the update revision.
		if r := p.Status.StageNamed(s.Name); r != nil && r.Revision != "" && (i > 0 || !s.Batched() || r.Revision != p.Status.UpdateRevision) {
			held = append(held, v1alpha1.StagePlacement(p.Name, s.Name).At(r.Revision).String())
		}
	}
	if stage.Batched() {
		for _, c := range clustersOf {
			held = append(held, v1alpha1.StagePlacement(p.Name, stage.Name).At(p.Status.UpdateRevision).On(c).String())
		}
	}
	if slices.Contains(held, bp.Name) {
		return "the rollout holds it"
	}
	if r := p.Status.StageNamed(stageName); index >= active && r != nil && r.Revision != "" &&
		v1alpha1.StagePlacement(p.Name, stageName).At(r.Revision).String() != bp.Name && !keptResolved(snap, p.Spec.Stages[index], r.Revision) {
		return fmt.Sprintf("stage %q's kept revision %s is not resolved", stageName, r.Revision)
	}
	if stage.Batched() && bp.Name == v1alpha1.StagePlacement(p.Name, stage.Name).At(p.Status.UpdateRevision).String() && snap.Binding != nil {
		for _, d := range snap.Binding.Spec.Destinations {
			if !resolved(snap, findBindingPolicy(snap.BindingPolicies, v1alpha1.StagePlacement(p.Name, stage.Name).At(p.Status.UpdateRevision).On(d.ClusterId).String())) {
				return fmt.Sprintf("cluster %s of the batched stage has no resolved BindingPolicy", d.ClusterId)
			}
		}
	}
	// A cluster of the batched active stage keeps its BindingPolicy of
	// another revision until its own of the update revision is resolved,
	// while the stage selects it.
	if c := bp.Labels[v1alpha1.ClusterLabel]; c != "" && stage.Batched() && stageName == stage.Name && snap.Binding != nil &&
		bp.Name != v1alpha1.StagePlacement(p.Name, stage.Name).At(p.Status.UpdateRevision).On(c).String() &&
		slices.ContainsFunc(snap.Binding.Spec.Destinations, func(d ksv1alpha1.Destination) bool { return d.ClusterId == c }) &&
		!resolved(snap, findBindingPolicy(snap.BindingPolicies, v1alpha1.StagePlacement(p.Name, stage.Name).At(p.Status.UpdateRevision).On(c).String())) {
		return fmt.Sprintf("cluster %s of the batched stage has no resolved BindingPolicy of the update revision", c)
	}
	if bp.Labels[v1alpha1.ClusterLabel] != "" && p.Spec.Placement == v1alpha1.PlacementAccumulate && index >= 0 && index < active &&
		!resolved(snap, findBindingPolicy(snap.BindingPolicies, v1alpha1.StagePlacement(p.Name, stageName).At(p.Status.UpdateRevision).String())) {
		return fmt.Sprintf("stage %q's stage-wide BindingPolicy is not resolved", stageName)
	}
	return ""
}

// clustersOf are the clusters of the random snapshots' stages.
var clustersOf = []string{"store-a", "store-b"}

// randomPlacementSnapshot draws a snapshot whose active stage is placed,
// bound and not done, so that Plan reaches its deletes, built from the
// table tests' fixtures.
func randomPlacementSnapshot(rt *rapid.T) *Snapshot {
	revisions := []string{"", "v1", "v2"}
	stages := []v1alpha1.Stage{stage("dev"), stage("test"), stage("prod")}
	for i := range stages {
		if rapid.Bool().Draw(rt, "batched-"+stages[i].Name) {
			name := stages[i].Name
			stages[i] = fleetStage(func(s *v1alpha1.Stage) { s.Name = name; s.ClusterSelectors[0].MatchLabels["stage"] = name })
		}
	}
	active := rapid.SampledFrom([]string{"dev", "test", "prod"}).Draw(rt, "active")
	p := atStage(newPolicy(stages...), active)
	p.Spec.Placement = rapid.SampledFrom([]v1alpha1.Placement{v1alpha1.PlacementReplace, v1alpha1.PlacementAccumulate}).Draw(rt, "placement")
	update := rapid.SampledFrom([]string{"", "v2"}).Draw(rt, "update")
	if update != "" {
		p.Spec.Revision = &v1alpha1.Revision{Name: update}
		p.Status.CurrentRevision = rapid.SampledFrom([]string{"", "v1"}).Draw(rt, "current")
	}
	p.Status.UpdateRevision = update
	for i := range p.Status.Stages {
		p.Status.Stages[i].Revision = rapid.SampledFrom(revisions).Draw(rt, "keeps-"+p.Status.Stages[i].Name)
	}
	if rapid.IntRange(0, 3).Draw(rt, "abort") == 0 {
		p.Spec.Abort = true
		for i := range p.Status.Stages {
			if p.Status.Stages[i].Revision != "" {
				p.Status.Stages[i].Revision = p.Status.CurrentRevision
			}
			p.Status.Stages[i].Phase = v1alpha1.StagePending
		}
		p.Status.ActiveStage, p.Status.Phase = "", v1alpha1.RolloutAborted
	}
	snap := &Snapshot{Policy: p, Now: now}
	addBP := func(bp *ksv1alpha1.BindingPolicy, label string) {
		if !rapid.Bool().Draw(rt, "has-"+label) {
			return
		}
		switch rapid.IntRange(0, 9).Draw(rt, "state-"+label) {
		case 0:
			bp.OwnerReferences[0].UID = "someone-else"
		case 1:
			beingDeleted(bp)
		case 2, 3:
			bp.Status.ObservedGeneration = 0
		}
		snap.BindingPolicies = append(snap.BindingPolicies, *bp)
		if rapid.IntRange(0, 3).Draw(rt, "bound-"+label) > 0 {
			snap.Bindings = append(snap.Bindings, *bindingFor(bp))
		}
		if Aborting(p) {
			snap.AbortStatuses = append(snap.AbortStatuses, combinedStatus(bp, deployment, rapid.SampledFrom([]string{"0", "1"}).Draw(rt, "healthy-"+label)))
		}
	}
	for _, s := range p.Spec.Stages {
		for _, rev := range revisions {
			addBP(revisionBP(p, s.Name, rev), s.Name+"-"+rev)
		}
		for _, c := range clustersOf {
			bp := resolvedAs(ClusterBindingPolicy(p, s, c), types.UID("bp-"+s.Name+"-"+c), muchEarlier)
			if rapid.Bool().Draw(rt, "sealed-"+s.Name+"-"+c) {
				bp.Annotations = map[string]string{v1alpha1.PlacedAnnotation: SealedPlacement(p.UID, s.Name, update, c, earlier.Time)}
			}
			addBP(bp, s.Name+"-"+c)
		}
		// A cluster's own BindingPolicy of a superseded revision, from
		// when the stage was placed in batches at that revision.
		superseded := p.DeepCopy()
		superseded.Status.UpdateRevision = "v1"
		if update != "v1" {
			for _, c := range clustersOf {
				addBP(resolvedAs(ClusterBindingPolicy(superseded, s, c), types.UID("bp-"+s.Name+"-v1-"+c), muchEarlier), s.Name+"-v1-"+c)
			}
		}
	}
	// What rules 4, 13 and 14 would create or update first is in place,
	// resolved or not, so that the deletes are reached.
	ensure := func(bp *ksv1alpha1.BindingPolicy, label string, mayBeUnresolved bool) {
		snap.BindingPolicies = slices.DeleteFunc(snap.BindingPolicies, func(o ksv1alpha1.BindingPolicy) bool { return o.Name == bp.Name })
		snap.Bindings = slices.DeleteFunc(snap.Bindings, func(o ksv1alpha1.Binding) bool { return o.Name == bp.Name })
		if mayBeUnresolved && rapid.IntRange(0, 2).Draw(rt, "unresolved-"+label) == 0 {
			bp.Status.ObservedGeneration = 0
		}
		snap.BindingPolicies = append(snap.BindingPolicies, *bp)
		snap.Bindings = append(snap.Bindings, *bindingFor(bp))
	}
	index, _, _ := ActiveStage(p)
	var held []Placement
	if Aborting(p) {
		for _, t := range abortTargets(p) {
			held = append(held, Placement{BP: t})
		}
	} else {
		held = append(accumulated(p, index), keptRevisionPlacements(p, index)...)
	}
	for _, h := range held {
		ensure(resolvedAs(h.BP, types.UID("bp-held-"+h.BP.Name), muchEarlier), h.BP.Name, !Aborting(p))
	}
	// The reconciler lists them in no order the rules may rely on.
	snap.BindingPolicies = rapid.Permutation(snap.BindingPolicies).Draw(rt, "order")
	if Aborting(p) {
		return snap
	}
	// The active stage is placed, bound and reports not done; placed in
	// batches, its first cluster is.
	stg := p.Spec.Stages[index]
	placed := resolvedAs(DesiredBindingPolicy(p, stg), "bp-active", muchEarlier)
	if stg.Batched() {
		placed = resolvedAs(CensusBindingPolicy(p, stg), "bp-census", muchEarlier)
	}
	snap.BindingPolicies = slices.DeleteFunc(snap.BindingPolicies, func(bp ksv1alpha1.BindingPolicy) bool { return bp.Name == placed.Name })
	snap.BindingPolicies = append(snap.BindingPolicies, *placed)
	snap.ActiveBindingPolicy = placed.DeepCopy()
	snap.Binding = bindingFor(placed)
	snap.CombinedStatuses = []ksv1alpha1.CombinedStatus{combinedStatus(placed, deployment, "0")}
	if stg.Batched() {
		snap.Binding.Spec.Workload = ksv1alpha1.DownsyncObjectClauses{}
		snap.Binding.Spec.Destinations = nil
		first := resolvedAs(ClusterBindingPolicy(p, stg, clustersOf[0]), "bp-first", earlier)
		first.Annotations = map[string]string{v1alpha1.PlacedAnnotation: SealedPlacement(p.UID, stg.Name, update, clustersOf[0], earlier.Time)}
		ensure(first, "first", false)
		for _, c := range clustersOf {
			snap.Binding.Spec.Destinations = append(snap.Binding.Spec.Destinations, ksv1alpha1.Destination{ClusterId: c})
			if bp := findBindingPolicy(snap.BindingPolicies, v1alpha1.StagePlacement(p.Name, stg.Name).At(update).On(c).String()); bp != nil {
				snap.ClusterStatuses = append(snap.ClusterStatuses, combinedStatus(bp, deployment, "0"))
			}
		}
	}
	for i := range snap.BindingPolicies {
		if next := nextBPName(p); next != "" && snap.BindingPolicies[i].Name == next {
			snap.NextBindingPolicy = snap.BindingPolicies[i].DeepCopy()
		}
	}
	return snap
}
