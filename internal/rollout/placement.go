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
	"strings"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// This file holds the placement model (docs/proposals/placement-model.md):
// the BindingPolicies a policy should have, each with why it is kept
// (Placement), and the single diff that writes them.

// Reason says why a BindingPolicy is kept.
type Reason string

// The reasons a BindingPolicy is kept.
const (
	// ReasonActive is the active stage's, at the update revision.
	ReasonActive Reason = "ActiveStage"
	// ReasonCensus is a batched active stage's census.
	ReasonCensus Reason = "Census"
	// ReasonCluster is one cluster's of a batched active stage.
	ReasonCluster Reason = "Cluster"
	// ReasonAccumulated is an earlier stage's under placement Accumulate.
	ReasonAccumulated Reason = "Accumulated"
	// ReasonKeptRevision is that of the revision a stage's record keeps.
	ReasonKeptRevision Reason = "KeptRevision"
	// ReasonHandedOver is the next stage's, created marked by the
	// handover of a done stage (HandedOverFromAnnotation).
	ReasonHandedOver Reason = "HandedOver"
	// ReasonAbortTarget is a stage's put back by abort.
	ReasonAbortTarget Reason = "AbortTarget"
)

// Placement is one BindingPolicy the policy should have, and why.
type Placement struct {
	// BP is the desired BindingPolicy: name, labels, owner and spec.
	BP *ksv1alpha1.BindingPolicy
	// Reason says why it is kept; the messages of the writes follow it.
	Reason Reason
	// Revision is the revision it places, for the messages.
	Revision string
	// Marked says BP bears a mark of the stager (PlacedAnnotation,
	// HandedOverFromAnnotation): it is created with it, and one of its
	// name the policy owns, which the mark is not on (else it would not
	// be wanted), is taken over: brought in line, the mark added.
	Marked bool
	// Held says it is kept while it is there, as it is, and never
	// created nor brought in line: rule 18 alone reads it.
	Held bool
	// Events go with its create or take-over (a batch's start).
	Events []Event
}

// stage is the name of the stage p places.
func (p Placement) stage() string {
	return p.BP.Labels[v1alpha1.StageLabel]
}

// waitsWhileDeleted reports whether a departing BindingPolicy of p's name
// holds the diff: the active stage, abort and a Marked one (a cluster that
// left and came back) wait for it to go before creating it again; the
// accumulated stages and the kept revisions let it go and go on with the
// next Placement, as rules 14 always did.
func (p Placement) waitsWhileDeleted() bool {
	return p.Reason == ReasonActive || p.Reason == ReasonCensus || p.Reason == ReasonAbortTarget || p.Marked
}

// created says why p is created.
func (p Placement) created() string {
	switch p.Reason {
	case ReasonAccumulated:
		return fmt.Sprintf("placement Accumulate keeps stage %q placed", p.stage())
	case ReasonKeptRevision:
		return fmt.Sprintf("stage %q keeps revision %s until the rollout reaches it", p.stage(), describeRevision(p.Revision))
	case ReasonAbortTarget:
		return fmt.Sprintf("abort places stage %q back on revision %s", p.stage(), describeRevision(p.Revision))
	case ReasonCluster:
		return fmt.Sprintf("stage %q places cluster %s", p.stage(), p.cluster())
	case ReasonHandedOver:
		from, _, _ := strings.Cut(p.BP.Annotations[v1alpha1.HandedOverFromAnnotation], "@")
		return fmt.Sprintf("stage %q is done: placing stage %q before the status records it", from, p.stage())
	}
	return fmt.Sprintf("stage %q has no BindingPolicy yet", p.stage())
}

// of names what p's spec is that of, in the message of an update.
func (p Placement) of() string {
	switch p.Reason {
	case ReasonAccumulated:
		return fmt.Sprintf("accumulated stage %q", p.stage())
	case ReasonKeptRevision:
		return fmt.Sprintf("stage %q at revision %s", p.stage(), describeRevision(p.Revision))
	}
	return fmt.Sprintf("stage %q", p.stage())
}

// cluster is the cluster p places, "" for a stage-wide one.
func (p Placement) cluster() string {
	return p.BP.Labels[v1alpha1.ClusterLabel]
}

// deleted says what the diff waits for when p's name is being deleted.
func (p Placement) deleted(name string) string {
	switch p.Reason {
	case ReasonAbortTarget:
		return fmt.Sprintf("abort waits for BindingPolicy %s to go before placing it again", name)
	case ReasonCluster:
		// The cluster left and came back.
		return fmt.Sprintf("BindingPolicy %s is being deleted; waiting to create it again", name)
	}
	return fmt.Sprintf("BindingPolicy %s is being deleted; waiting to recreate it", name)
}

// current returns the BindingPolicy of the snapshot under p's name,
// whoever made it, or nil: the active and the next stage's as the
// snapshot read them by name, the others' as listed.
func (p Placement) current(snap *Snapshot) *ksv1alpha1.BindingPolicy {
	switch p.Reason {
	case ReasonActive, ReasonCensus:
		return snap.ActiveBindingPolicy
	case ReasonHandedOver:
		return snap.NextBindingPolicy
	}
	return findBindingPolicy(snap.BindingPolicies, p.BP.Name)
}

// takeOver is the write that makes current, a BindingPolicy of p's name
// the policy owns, the one p marks: brought in line, the mark added.
func (p Placement) takeOver(current *ksv1alpha1.BindingPolicy) Action {
	updated := inLineWith(current, p.BP)
	updated.Annotations = MergeLabels(updated.Annotations, p.BP.Annotations)
	why := fmt.Sprintf("BindingPolicy %s takes the mark of %s", current.Name, p.of())
	if p.Reason == ReasonCluster {
		why = fmt.Sprintf("stage %q places cluster %s through BindingPolicy %s, which it had not placed", p.stage(), p.cluster(), current.Name)
	}
	return Action{Type: ActionUpdateBindingPolicy, BindingPolicy: updated, Why: why, Events: p.Events}
}

// diffPlacement is the one write that brings the BindingPolicies of want
// about, taken in order, the first that needs a change deciding: a name
// taken by an object the policy does not own blocks the rollout
// (BindingPolicyConflict); one missing is created, through
// createBindingPolicy, which checks every name the snapshot read, with
// its mark if it is Marked; one being deleted is waited for, or let go
// (Placement.waitsWhileDeleted); a Marked one the policy owns unmarked is
// taken over (Placement.takeOver); one out of line with its Placement is
// brought in line, keeping whatever else others put on it. A Held one is
// never written. It reports whether it has a change to make.
func diffPlacement(snap *Snapshot, want []Placement) (Action, bool) {
	for _, p := range want {
		if p.Held {
			continue
		}
		current := p.current(snap)
		switch {
		case current == nil:
			action := createBindingPolicy(snap, p.BP, p.created())
			if action.Type == ActionCreateBindingPolicy {
				action.Events = p.Events
			}
			return action, true
		case !OwnedBy(current, snap.Policy):
			return bindingPolicyConflict(snap, current.Name, p.created()+": the name is taken"), true
		case current.DeletionTimestamp != nil:
			if p.waitsWhileDeleted() {
				return Action{Type: ActionNone, Why: p.deleted(current.Name)}, true
			}
		case p.Marked:
			return p.takeOver(current), true
		case !BindingPolicyInSync(current, p.BP):
			return Action{Type: ActionUpdateBindingPolicy, BindingPolicy: inLineWith(current, p.BP),
				Why: fmt.Sprintf("BindingPolicy %s differs from the spec of %s", current.Name, p.of())}, true
		}
	}
	return Action{}, false
}

// WaitKind names what a surplus BindingPolicy waits for before it may go.
type WaitKind string

// The waits of a surplus BindingPolicy, make-before-break.
const (
	// WaitKeptResolved: KubeStellar has resolved the placement of the
	// revision the stage keeps (keptResolved), for a stage's BindingPolicy
	// of another revision, from the active stage on.
	WaitKeptResolved WaitKind = "KeptResolved"
	// WaitEveryClusterResolved: every selected cluster of the active stage,
	// placed in batches, has its own BindingPolicy, resolved, for the
	// stage-wide one from before the stage had maxConcurrency.
	WaitEveryClusterResolved WaitKind = "EveryClusterResolved"
	// WaitStageWideResolved: KubeStellar has resolved the stage-wide
	// BindingPolicy of an earlier stage under Accumulate, for one of its
	// clusters' own.
	WaitStageWideResolved WaitKind = "StageWideResolved"
	// WaitClusterResolved: KubeStellar has resolved the cluster's own
	// BindingPolicy of the update revision, for the cluster's own of
	// another revision, of the active stage placed in batches, while the
	// stage selects the cluster.
	WaitClusterResolved WaitKind = "ClusterResolved"
	// WaitHealthy: the stage's condition holds on the revision abort puts
	// back, for the stage's BindingPolicies of other revisions.
	WaitHealthy WaitKind = "Healthy"
)

// Wait is one thing a surplus BindingPolicy waits for.
type Wait struct {
	// Kind says what it waits for.
	Kind WaitKind
	// Stage and Revision name the placement it waits for.
	Stage, Revision string
	// pending says what is not yet so, "" once the wait is over. The diff
	// asks it only of the Surplus it reaches, so that the waits that cost
	// CEL evaluations (WaitHealthy) cost them no further than today.
	pending func() string
}

// Surplus is a BindingPolicy the policy has, owned and not being deleted,
// that no Placement names, and what it waits for before it may go: every
// one of WaitsFor over (none: now).
type Surplus struct {
	BP       *ksv1alpha1.BindingPolicy
	WaitsFor []Wait
}

// surplusOf returns, in the snapshot's order, the BindingPolicies of the
// policy that no Placement of keep names, each with its waits (waits).
func surplusOf(snap *Snapshot, keep []Placement, waits func(bp *ksv1alpha1.BindingPolicy) []Wait) []Surplus {
	var out []Surplus
	for i := range snap.BindingPolicies {
		bp := &snap.BindingPolicies[i]
		if bp.DeletionTimestamp != nil || !OwnedBy(bp, snap.Policy) ||
			slices.ContainsFunc(keep, func(p Placement) bool { return p.BP.Name == bp.Name }) {
			continue
		}
		out = append(out, Surplus{BP: bp, WaitsFor: waits(bp)})
	}
	return out
}

// firstGone returns the first Surplus whose waits are all over, or nil and
// what the last one reached waits for ("" when none waits).
func firstGone(surplus []Surplus) (*Surplus, string) {
	waiting := ""
	for i := range surplus {
		over := true
		for _, w := range surplus[i].WaitsFor {
			if left := w.pending(); left != "" {
				waiting, over = left, false
				break
			}
		}
		if over {
			return &surplus[i], waiting
		}
	}
	return nil, waiting
}

// assessed is what of the active stage's assessment the Placements of
// rules 16 and 17 depend on.
type assessed struct {
	// b is the assessment of a stage placed in batches, else nil.
	b *batches
	// soaked says the stage, or its batch, is done and soaked: a batch
	// that starts places its first cluster only then.
	soaked bool
	// done says the stage is done, its analyses too, with their last
	// measurements recorded, and is not the last: it hands over.
	done bool
}

// placements is the set desiredPlacement computes: every BindingPolicy
// the policy should have while its active stage runs, each once, with its
// Reason, in the slices Plan writes at its two points, and every other one
// it has, with its waits.
type placements struct {
	snap   *Snapshot
	active int
	// stages are rules 13 and 14's, written before the assessment: the
	// active stage's (or its census), the accumulated stages', the kept
	// revisions'.
	stages []Placement
	// assessed are rules 16 and 17's, written once the assessment allows
	// (assess): the placed clusters', the next cluster's (sealed), the
	// next stage's (marked).
	assessed []Placement
	// b is the assessment of the active stage placed in batches, else nil.
	b *batches
}

// desiredPlacement computes, from the snapshot, the BindingPolicies the
// policy should have while its active stage runs, each with the Reason it
// is kept: the stages' Placements at once; those that depend on the
// stage's assessment once assess is given it (the assessment costs CEL
// evaluations, which a run that stops at rule 13 or 14 does not make);
// those rule 18 holds as they are, and every other BindingPolicy with its
// waits, when rule 18 asks (surplus). Abort (rule 4) and deletion (rule 1)
// have Placements of their own.
func desiredPlacement(snap *Snapshot, active int) *placements {
	policy := snap.Policy
	want := &placements{snap: snap, active: active,
		stages: append([]Placement{activePlacement(policy, active)}, accumulated(policy, active)...)}
	want.stages = append(want.stages, keptRevisionPlacements(policy, active)...)
	return want
}

// batched reports whether the active stage is placed in batches: its
// Placement is its census.
func (w *placements) batched() bool {
	return w.stages[0].Reason == ReasonCensus
}

// assess adds the Placements that the active stage's assessment a allows:
// the placed clusters' and the next cluster's of a stage placed in batches
// (clusterPlacements), the next stage's of a done stage (handover).
func (w *placements) assess(a assessed) {
	w.b = a.b
	if a.b != nil {
		w.assessed = clusterPlacements(w.snap, w.active, *a.b, a.soaked)
	}
	if a.done {
		if next, ok := handover(w.snap, w.active); ok {
			w.assessed = append(w.assessed, next)
		}
	}
}

// all returns every Placement of w, in the order Plan writes them, and
// those rule 18 holds as they are (heldPlacements) last.
func (w *placements) all() []Placement {
	all := append(slices.Clip(w.stages), w.assessed...)
	return append(all, heldPlacements(w.snap, w.active, w.b, all)...)
}

// surplus returns every BindingPolicy of the policy, owned and not being
// deleted, that no Placement of w names, each with what it waits for
// before it may go (surplusWaits).
func (w *placements) surplus() []Surplus {
	return surplusOf(w.snap, w.all(), surplusWaits(w.snap, w.active, w.b))
}

// heldPlacements are the BindingPolicies rule 18 keeps as they are besides
// those written (placed): a later stage's at the update revision, when its
// record keeps that one (creating it would place the stage early), and,
// for a stage placed in batches (b not nil), its clusters' own that the
// stage does not count as placed (unsealed, or no longer selected), which
// the stage takes over when its order reaches them, or lets go with its
// others.
func heldPlacements(snap *Snapshot, active int, b *batches, placed []Placement) []Placement {
	policy := snap.Policy
	named := func(name string) bool {
		return slices.ContainsFunc(placed, func(p Placement) bool { return p.BP.Name == name })
	}
	var held []Placement
	for _, p := range revisionsKept(policy, active) {
		// The active stage placed in batches keeps the update revision in
		// its clusters' own BindingPolicies; WaitEveryClusterResolved says
		// how long the stage-wide one stays.
		if named(p.BP.Name) || b != nil && p.stage() == policy.Spec.Stages[active].Name && p.Revision == policy.Status.UpdateRevision {
			continue
		}
		p.Held = true
		held = append(held, p)
	}
	if b == nil {
		return held
	}
	stage := policy.Spec.Stages[active].Name
	for i := range snap.BindingPolicies {
		if bp := &snap.BindingPolicies[i]; placesCluster(policy, stage, bp) && !named(bp.Name) {
			held = append(held, Placement{BP: bp, Reason: ReasonCluster, Revision: policy.Status.UpdateRevision, Held: true})
		}
	}
	return held
}

// surplusWaits returns what bp, a BindingPolicy rule 18 does not keep,
// waits for before it goes (make-before-break): a stage's at another
// revision than the one its record keeps, from the active stage on, for
// that one resolved; the active stage's stage-wide one, placed in
// batches, for every cluster's own resolved; one cluster's of the active
// stage placed in batches at another revision, while the stage selects
// the cluster, for the cluster's own at the update revision resolved; one
// cluster's of an earlier stage under Accumulate, for the stage-wide one
// resolved.
func surplusWaits(snap *Snapshot, active int, b *batches) func(bp *ksv1alpha1.BindingPolicy) []Wait {
	policy := snap.Policy
	return func(bp *ksv1alpha1.BindingPolicy) []Wait {
		var waits []Wait
		name := bp.Labels[v1alpha1.StageLabel]
		index := stageIndex(policy, name)
		if record := policy.Status.StageNamed(name); index >= active && record != nil && record.Revision != "" &&
			v1alpha1.StagePlacement(policy.Name, record.Name).At(record.Revision).String() != bp.Name {
			stage := policy.Spec.Stages[index]
			waits = append(waits, Wait{Kind: WaitKeptResolved, Stage: name, Revision: record.Revision, pending: func() string {
				if keptResolved(snap, stage, record.Revision) {
					return ""
				}
				return fmt.Sprintf("stage %q at revision %s is not resolved yet", name, describeRevision(record.Revision))
			}})
		}
		// Every stage-wide BindingPolicy of the active stage placed in
		// batches, the update revision's or a superseded one's, places the
		// clusters its batches have not reached yet.
		// b is only given for a stage placed in batches.
		if stage := policy.Spec.Stages[active]; b != nil && name == stage.Name &&
			bp.Labels[v1alpha1.ClusterLabel] == "" && bp.Name != v1alpha1.StageCensus(policy.Name, stage.Name).String() {
			waits = append(waits, Wait{Kind: WaitEveryClusterResolved, Stage: stage.Name, Revision: policy.Status.UpdateRevision, pending: func() string {
				if b.unplaced > 0 || !b.allResolved {
					return fmt.Sprintf("stage %q has clusters without a resolved BindingPolicy of their own", stage.Name)
				}
				return ""
			}})
		}
		// A cluster's own of another revision places it until its
		// batch reaches it: keptResolved asks only that the clusters
		// placed so far are resolved.
		if cluster := bp.Labels[v1alpha1.ClusterLabel]; cluster != "" && b != nil && name == policy.Spec.Stages[active].Name {
			own := v1alpha1.StagePlacement(policy.Name, name).At(policy.Status.UpdateRevision).On(cluster).String()
			if _, selected := slices.BinarySearch(b.selected, cluster); selected && own != bp.Name {
				waits = append(waits, Wait{Kind: WaitClusterResolved, Stage: name, Revision: policy.Status.UpdateRevision, pending: func() string {
					if resolved(snap, findBindingPolicy(snap.BindingPolicies, own)) {
						return ""
					}
					return fmt.Sprintf("cluster %s of stage %q has no resolved BindingPolicy of revision %s yet", cluster, name,
						describeRevision(policy.Status.UpdateRevision))
				}})
			}
		}
		if bp.Labels[v1alpha1.ClusterLabel] != "" && policy.Spec.Placement == v1alpha1.PlacementAccumulate && index >= 0 && index < active {
			waits = append(waits, Wait{Kind: WaitStageWideResolved, Stage: name, Revision: policy.Status.UpdateRevision, pending: func() string {
				if resolved(snap, findBindingPolicy(snap.BindingPolicies, v1alpha1.StagePlacement(policy.Name, name).At(policy.Status.UpdateRevision).String())) {
					return ""
				}
				return fmt.Sprintf("stage %q's own BindingPolicy is not resolved yet", name)
			}})
		}
		return waits
	}
}
