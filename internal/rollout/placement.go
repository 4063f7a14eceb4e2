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
}

// stage is the name of the stage p places.
func (p Placement) stage() string {
	return p.BP.Labels[v1alpha1.StageLabel]
}

// waitsWhileDeleted reports whether a departing BindingPolicy of p's name
// holds the diff: the active stage and abort wait for it to go before
// creating it again; the accumulated stages and the kept revisions let it
// go and go on with the next Placement, as rules 14 always did.
func (p Placement) waitsWhileDeleted() bool {
	return p.Reason == ReasonActive || p.Reason == ReasonCensus || p.Reason == ReasonAbortTarget
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

// deleted says what the diff waits for when p's name is being deleted.
func (p Placement) deleted(name string) string {
	if p.Reason == ReasonAbortTarget {
		return fmt.Sprintf("abort waits for BindingPolicy %s to go before placing it again", name)
	}
	return fmt.Sprintf("BindingPolicy %s is being deleted; waiting to recreate it", name)
}

// current returns the BindingPolicy of the snapshot under p's name,
// whoever made it, or nil: the active stage's as the snapshot read it by
// name, the others' as listed.
func (p Placement) current(snap *Snapshot) *ksv1alpha1.BindingPolicy {
	if p.Reason == ReasonActive || p.Reason == ReasonCensus {
		return snap.ActiveBindingPolicy
	}
	return findBindingPolicy(snap.BindingPolicies, p.BP.Name)
}

// diffPlacement is the one write that brings the BindingPolicies of want
// about, taken in order, the first that needs a change deciding: a name
// taken by an object the policy does not own blocks the rollout
// (BindingPolicyConflict); one missing is created, through
// createBindingPolicy, which checks every name the snapshot read; one
// being deleted is waited for, or let go
// (Placement.waitsWhileDeleted); one out of line with its Placement is
// brought in line, keeping whatever else others put on it. It reports
// whether it has a change to make.
func diffPlacement(snap *Snapshot, want []Placement) (Action, bool) {
	for _, p := range want {
		current := p.current(snap)
		switch {
		case current == nil:
			return createBindingPolicy(snap, p.BP, p.created()), true
		case !OwnedBy(current, snap.Policy):
			return bindingPolicyConflict(snap, current.Name, p.created()+": the name is taken"), true
		case current.DeletionTimestamp != nil:
			if p.waitsWhileDeleted() {
				return Action{Type: ActionNone, Why: p.deleted(current.Name)}, true
			}
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

// heldPlacements are the BindingPolicies rule 18 keeps while the active
// stage runs: the active stage's (current, as read), the accumulated
// stages', the revisions the stages from the active one on keep (also one
// at the update revision, which rule 14 leaves to the rollout to create),
// and, for a stage placed in batches (b not nil), its clusters' own.
func heldPlacements(snap *Snapshot, active int, current *ksv1alpha1.BindingPolicy, b *batches) []Placement {
	policy := snap.Policy
	keep := append([]Placement{{BP: current, Reason: ReasonActive}}, accumulated(policy, active)...)
	keep = append(keep, revisionsKept(policy, active)...)
	if b == nil {
		return keep
	}
	stage := policy.Spec.Stages[active].Name
	for i := range snap.BindingPolicies {
		if bp := &snap.BindingPolicies[i]; placesCluster(policy, stage, bp) {
			keep = append(keep, Placement{BP: bp, Reason: ReasonCluster, Revision: policy.Status.UpdateRevision})
		}
	}
	return keep
}

// surplusWaits returns what bp, a BindingPolicy rule 18 does not keep,
// waits for before it goes (make-before-break): a stage's at another
// revision than the one its record keeps, from the active stage on, for
// that one resolved; the active stage's stage-wide one, placed in
// batches, for every cluster's own resolved; one cluster's of an earlier
// stage under Accumulate, for the stage-wide one resolved.
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
		if stage := policy.Spec.Stages[active]; b != nil && stage.Batched() && name == stage.Name &&
			bp.Labels[v1alpha1.ClusterLabel] == "" && bp.Name != v1alpha1.StageCensus(policy.Name, stage.Name).String() {
			waits = append(waits, Wait{Kind: WaitEveryClusterResolved, Stage: stage.Name, Revision: policy.Status.UpdateRevision, pending: func() string {
				if b.unplaced > 0 || !b.allResolved {
					return fmt.Sprintf("stage %q has clusters without a resolved BindingPolicy of their own", stage.Name)
				}
				return ""
			}})
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
