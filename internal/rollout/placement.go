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
