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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
)

// This file holds Plan's rules for revisions (spec.revision): a revision is
// a set of workload objects labelled with its name, placed side by side with
// the previous revision's. Each stage is placed by one BindingPolicy per
// revision it runs, "<policy>.stage.<stage>.<revision>", whose downsync
// selects that revision's objects and the objects of no revision. A stage's
// record says which revision it keeps while the rollout is elsewhere.
//
// The BindingPolicies a policy keeps, besides the active stage's at the
// update revision:
//   - with placement Accumulate, the earlier stages' at the update revision;
//   - every later stage's at the revision its record keeps;
//   - the active stage's at the revision its record keeps, until the stage
//     is done on the update revision (make-before-break: the stage runs
//     both meanwhile, and its condition is judged on the BindingPolicy of
//     the update revision, whose CombinedStatuses are of that revision's
//     objects only).

// RevisionBindingPolicy is the BindingPolicy that places one revision of one
// stage of the policy: for revision "", the stage's BindingPolicy of the
// policy's downsync; else one whose downsync clauses select only the objects
// labelled with that revision, or with no revision at all.
func RevisionBindingPolicy(policy *v1alpha1.StagedBindingPolicy, stage v1alpha1.Stage, revision string) *ksv1alpha1.BindingPolicy {
	bp := &ksv1alpha1.BindingPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: ksv1alpha1.SchemeGroupVersion.String(), Kind: "BindingPolicy"},
		ObjectMeta: metav1.ObjectMeta{
			Name: v1alpha1.StagePlacement(policy.Name, stage.Name).At(revision).String(),
			Labels: map[string]string{
				v1alpha1.PolicyLabel: policy.Name,
				v1alpha1.StageLabel:  stage.Name,
			},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(policy, v1alpha1.GroupVersion.WithKind("StagedBindingPolicy"))},
		},
		Spec: ksv1alpha1.BindingPolicySpec{
			ClusterSelectors: stage.ClusterSelectors,
			Downsync:         policy.Spec.Downsync,
		},
	}
	key := policy.Spec.Revision.RevisionLabelKey()
	switch revision {
	case "":
	case v1alpha1.Unrevisioned:
		// What the policy placed before it had revisions, less every
		// revision's objects: those go stage by stage.
		bp.Spec.Downsync = narrowDownsync(policy.Spec.Downsync,
			metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpDoesNotExist})
	default:
		bp.Labels[v1alpha1.RevisionLabel] = revision
		bp.Spec.Downsync = narrowDownsync(policy.Spec.Downsync,
			metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpIn, Values: []string{revision}},
			metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpDoesNotExist})
	}
	return bp
}

// narrowDownsync narrows every clause to the objects that meet any one of
// the requirements: each of its object selectors (or, with none, the empty
// one, which selects every object) becomes one per requirement, the
// selector and the requirement. Requirements, not labels, so that a
// selector's own requirement on the same key still applies.
func narrowDownsync(clauses []ksv1alpha1.DownsyncPolicyClause, anyOf ...metav1.LabelSelectorRequirement) []ksv1alpha1.DownsyncPolicyClause {
	out := make([]ksv1alpha1.DownsyncPolicyClause, 0, len(clauses))
	for _, c := range clauses {
		c = *c.DeepCopy()
		selectors := c.ObjectSelectors
		if len(selectors) == 0 {
			selectors = []metav1.LabelSelector{{}}
		}
		narrowed := make([]metav1.LabelSelector, 0, len(anyOf)*len(selectors))
		for _, s := range selectors {
			for _, req := range anyOf {
				n := *s.DeepCopy()
				n.MatchExpressions = append(n.MatchExpressions, req)
				narrowed = append(narrowed, n)
			}
		}
		c.ObjectSelectors = narrowed
		out = append(out, c)
	}
	return out
}

// revisionsKept are the BindingPolicies of the revision each stage from
// the active one on keeps (its record's): the active stage keeps it until
// it is done on the update revision, later stages until the rollout
// reaches them. Those at the update revision are rule 18's to hold, not
// rule 14's to create (heldPlacements).
func revisionsKept(policy *v1alpha1.StagedBindingPolicy, active int) []Placement {
	var kept []Placement
	for i := active; i < len(policy.Spec.Stages); i++ {
		stage := policy.Spec.Stages[i]
		record := policy.Status.StageNamed(stage.Name)
		if record == nil || record.Revision == "" {
			continue
		}
		kept = append(kept, Placement{BP: RevisionBindingPolicy(policy, stage, record.Revision), Reason: ReasonKeptRevision, Revision: record.Revision})
	}
	return kept
}

// keptRevisionPlacements is Plan's rule 14 for revisions: for every
// stage from the active one on, the BindingPolicy of the revision its
// record keeps is kept placed and in line with the spec: one deleted by
// someone is placed again, and the unrevisioned placement kept since the
// policy gained spec.revision is narrowed to the objects of no revision;
// one being deleted is let go. The active stage's BindingPolicy at the
// update revision is rule 13's (activePlacement).
func keptRevisionPlacements(policy *v1alpha1.StagedBindingPolicy, active int) []Placement {
	return slices.DeleteFunc(revisionsKept(policy, active), func(p Placement) bool {
		return p.BP.Name == v1alpha1.StagePlacement(policy.Name, p.stage()).At(policy.Status.UpdateRevision).String()
	})
}

// ReadsBindings reports whether Plan needs the Bindings of every
// BindingPolicy of the policy (Snapshot.Bindings): for abort; for a
// policy whose stages keep revisions, so that an old placement goes only
// once the one that replaces it is resolved; and for one with a stage
// placed in batches, or with a cluster's BindingPolicy left among bps (its
// BindingPolicies), which goes only once what replaces it is resolved.
func ReadsBindings(policy *v1alpha1.StagedBindingPolicy, bps []ksv1alpha1.BindingPolicy) bool {
	return Aborting(policy) || policy.Spec.Revision != nil || policy.Status.UpdateRevision != "" || policy.Status.CurrentRevision != "" ||
		slices.ContainsFunc(policy.Spec.Stages, func(s v1alpha1.Stage) bool { return s.Batched() }) ||
		slices.ContainsFunc(bps, func(bp ksv1alpha1.BindingPolicy) bool { return bp.Labels[v1alpha1.ClusterLabel] != "" })
}

// keptRevisions returns each stage's revision from status, by stage name.
func keptRevisions(status *v1alpha1.StagedBindingPolicyStatus) map[string]string {
	revisions := make(map[string]string, len(status.Stages))
	for _, r := range status.Stages {
		if r.Revision != "" {
			revisions[r.Name] = r.Revision
		}
	}
	return revisions
}

// restoreRevisions sets each record's revision from revisions.
func restoreRevisions(status *v1alpha1.StagedBindingPolicyStatus, revisions map[string]string) {
	for i := range status.Stages {
		status.Stages[i].Revision = revisions[status.Stages[i].Name]
	}
}

// doneRevision is the revision a stage keeps once it is done on the update
// revision (placedRevision), but none under placement Replace for a stage
// that is not the last, which gives its placement up as soon as the next
// stage is placed.
func doneRevision(policy *v1alpha1.StagedBindingPolicy, status *v1alpha1.StagedBindingPolicyStatus, index int) string {
	if policy.Spec.Placement != v1alpha1.PlacementAccumulate && index < len(policy.Spec.Stages)-1 {
		return ""
	}
	return placedRevision(status)
}

// placedRevision is the update revision as a stage record or the current
// revision keeps it: for a policy that has had revisions, the rollout of
// none ("", spec.revision removed) places v1alpha1.Unrevisioned, so that
// what it placed is kept, and put back by abort, like any revision's.
func placedRevision(status *v1alpha1.StagedBindingPolicyStatus) string {
	if status.UpdateRevision != "" {
		return status.UpdateRevision
	}
	if status.CurrentRevision != "" || slices.ContainsFunc(status.Stages, func(r v1alpha1.StageStatus) bool { return r.Revision != "" }) {
		return v1alpha1.Unrevisioned
	}
	return ""
}

// startRevision starts the rollout of the revision the spec names from the
// first stage, each stage keeping the revision it runs until the rollout
// reaches it.
//
// Plan's rule 8: a revision in the spec other than status.updateRevision
// starts the rollout of that revision from the first stage (RevisionStarted,
// or RevisionSuperseded for one in flight); each stage's record keeps the
// revision it runs until the rollout reaches it.
func startRevision(policy *v1alpha1.StagedBindingPolicy, now metav1.Time) Action {
	want, previous := policy.Spec.SpecRevision(), policy.Status.UpdateRevision
	inFlight := policy.Status.ActiveStage != "" && previous != policy.Status.CurrentRevision &&
		policy.Status.Phase != v1alpha1.RolloutCompleted && policy.Status.Phase != v1alpha1.RolloutAborted
	moved := policy.DeepCopy()
	moved.Status.UpdateRevision = want
	if previous == "" && want != "" && keepUnrevisioned(moved) && moved.Status.CurrentRevision == "" {
		// What the policy placed before is what abort goes back to.
		moved.Status.CurrentRevision = v1alpha1.Unrevisioned
	}
	action := startRollout(moved, false, now)
	first := policy.Spec.Stages[0].Name
	reason := v1alpha1.EventReasonRevisionStarted
	note := fmt.Sprintf("rolling out revision %s from stage %q; the stages keep what they run until it reaches them", describeRevision(want), first)
	if inFlight {
		reason = v1alpha1.EventReasonRevisionSuperseded
		note = fmt.Sprintf("revision %s supersedes revision %s, which was at stage %q: rolling it out from stage %q; the stages keep what they run until it reaches them",
			describeRevision(want), describeRevision(previous), policy.Status.ActiveStage, first)
	}
	action.Events = append([]Event{{Type: corev1.EventTypeNormal, Reason: reason, Note: note}}, action.Events...)
	action.Why = note
	return action
}

// keepUnrevisioned marks the stages that hold the placement of the policy
// from before it had spec.revision as keeping it (v1alpha1.Unrevisioned):
// under Accumulate every stage reached, under Replace the active one. It
// reports whether any stage keeps it.
func keepUnrevisioned(policy *v1alpha1.StagedBindingPolicy) bool {
	active, started, _ := ActiveStage(policy)
	if !started {
		return false
	}
	marked := false
	for i := range policy.Status.Stages {
		r := &policy.Status.Stages[i]
		index := stageIndex(policy, r.Name)
		holds := r.Phase == v1alpha1.StageActive || r.Phase == v1alpha1.StageSucceeded
		if index < 0 || !holds || index > active || policy.Spec.Placement != v1alpha1.PlacementAccumulate && index != active {
			continue
		}
		if r.Revision == "" {
			r.Revision = v1alpha1.Unrevisioned
		}
		marked = true
	}
	return marked
}

// describeRevision names a revision in messages.
func describeRevision(revision string) string {
	if revision == "" || revision == v1alpha1.Unrevisioned {
		return "(the whole downsync, no spec.revision)"
	}
	return fmt.Sprintf("%q", revision)
}

// abortTargets returns the BindingPolicies abort keeps: every stage whose
// record keeps a revision, at the current revision.
func abortTargets(policy *v1alpha1.StagedBindingPolicy) []*ksv1alpha1.BindingPolicy {
	var targets []*ksv1alpha1.BindingPolicy
	for _, stage := range policy.Spec.Stages {
		if record := policy.Status.StageNamed(stage.Name); record != nil && record.Revision != "" {
			targets = append(targets, RevisionBindingPolicy(policy, stage, policy.Status.CurrentRevision))
		}
	}
	return targets
}

// Aborting reports whether the rollout is being aborted, or stays
// aborted: spec.abort is set, or a failed stage's onFailure Abort holds.
func Aborting(policy *v1alpha1.StagedBindingPolicy) bool {
	return policy.Spec.Abort || failAborts(policy)
}

// planAbort puts every stage that keeps a revision back on the current
// revision, and takes every other BindingPolicy of the policy away once
// those are placed: first the status records the abort (the records keep
// the current revision, no stage is active), then each missing
// BindingPolicy is created, and, once KubeStellar has resolved every one,
// the others are deleted one by one, each once the current revision is
// healthy on its stage (the stage's condition holds on the current
// revision's CombinedStatuses), so that the stage's WECs never run
// neither. A rollout without a current revision has nothing to go back to
// and stays where it is.
//
// Plan's rule 4: spec.abort, or a failed stage whose onFailure is Abort
// (until spec.revision names another revision or the rollout is restarted),
// puts every stage that keeps a revision back on status.currentRevision,
// make-before-break: the status records it, the StageApprovals are brought
// in line with the aborted spec (an approval given before counts no more),
// the current revision's BindingPolicies are created, and once KubeStellar
// has resolved them the others are deleted, a stage's once its condition
// holds on the current revision there (at once for a stage without one);
// without a current revision spec.abort holds the rollout where it is, while
// a failed stage's abort places the last stage done before it again (every
// earlier one under Accumulate) and then withdraws the rest.
func planAbort(snap *Snapshot, engine *expression.Engine, cfg planConfig) Action {
	policy := snap.Policy
	current := policy.Status.CurrentRevision
	cause := "spec.abort"
	if !policy.Spec.Abort {
		cause = policy.Status.Failure.Message + " (onFailure Abort)"
		if policy.Status.Failure.Reason == v1alpha1.ReasonStageRegressed {
			cause = policy.Status.Failure.Message + " (onRegression Abort)"
		}
		if current == "" {
			return planWithdraw(snap)
		}
	}
	if current == "" {
		message := "spec.abort holds the rollout where it is: there is no previous revision to go back to (status.currentRevision is empty); set spec.abort to false to go on"
		return abortStatus(policy, policy.Status.DeepCopy(), message, snap.Now)
	}
	// The message is the same once the records are back on current: a
	// reported conflict gives way to it again (abortPlacements).
	status := policy.Status.DeepCopy()
	back := make([]string, 0, len(status.Stages))
	for i := range status.Stages {
		r := &status.Stages[i]
		if r.Revision != "" {
			r.Revision = current
			back = append(back, r.Name)
		}
		r.Phase, r.ConditionMetTime, r.ProgressDeadlineTime, r.Clusters = v1alpha1.StagePending, nil, nil, nil
		r.Message = ""
	}
	status.ActiveStage = ""
	message := fmt.Sprintf("%s: revision %s is withdrawn; stages %v go back to revision %q, placed before the newer one is taken away",
		cause, describeRevision(status.UpdateRevision), back, current)
	if len(back) == 0 {
		message = fmt.Sprintf("%s: revision %s is withdrawn; no stage ran revision %q before it, so none is placed",
			cause, describeRevision(status.UpdateRevision), current)
	}
	if policy.Status.Phase != v1alpha1.RolloutAborted {
		return abortStatus(policy, status, message, snap.Now)
	}
	return abortPlacements(snap, engine, cfg, abortTargets(policy), current, message)
}

// abortPlacements brings an aborted rollout's BindingPolicies to targets:
// each missing is created, and once KubeStellar has resolved them all,
// every other BindingPolicy of the policy is deleted, one by one; with a
// revision to go back to, a stage's only once the stage is healthy on that
// revision. Once every target is placed, a status that reported a
// target's name taken says message, why the rollout is aborted, again.
func abortPlacements(snap *Snapshot, engine *expression.Engine, cfg planConfig, targets []*ksv1alpha1.BindingPolicy, current, message string) Action {
	policy := snap.Policy
	if action, ok := voidApprovals(snap); ok {
		return action
	}
	want := make([]Placement, 0, len(targets))
	for _, desired := range targets {
		want = append(want, Placement{BP: desired, Reason: ReasonAbortTarget, Revision: current})
	}
	if action, ok := diffPlacement(snap, want); ok {
		return action
	}
	if c := meta.FindStatusCondition(policy.Status.Conditions, v1alpha1.ConditionReady); c != nil && c.Reason == v1alpha1.ReasonBindingPolicyConflict {
		return abortStatus(policy, policy.Status.DeepCopy(), message, snap.Now)
	}
	for _, desired := range targets {
		if !resolved(snap, findBindingPolicy(snap.BindingPolicies, desired.Name)) {
			return Action{Type: ActionNone,
				Why: fmt.Sprintf("abort waits for KubeStellar to resolve BindingPolicy %s before taking the newer revision away", desired.Name)}
		}
	}
	// An expression that does not compile cannot say whether a stage is
	// healthy: the abort then goes on once the current revision is placed.
	var programs []compiledStage
	var compileErr error
	var budget *expression.Budget
	if current != "" {
		programs, _, compileErr = compileStages(engine, policy.Spec.Stages)
		budget = engine.NewBudget()
	}
	waits := func(bp *ksv1alpha1.BindingPolicy) []Wait {
		stage := bp.Labels[v1alpha1.StageLabel]
		index := stageIndex(policy, stage)
		if index < 0 || compileErr != nil || current == "" {
			return nil
		}
		target := findBindingPolicy(snap.BindingPolicies, v1alpha1.StagePlacement(policy.Name, stage).At(current).String())
		if target == nil {
			return nil
		}
		return []Wait{{Kind: WaitHealthy, Stage: stage, Revision: current, pending: func() string {
			if health := abortTargetHealth(snap, programs[index], target, cfg, budget); health != "" {
				return fmt.Sprintf("abort keeps BindingPolicy %s until stage %q is healthy on revision %s: %s",
					bp.Name, stage, describeRevision(current), health)
			}
			return ""
		}}}
	}
	gone, waiting := firstGone(surplusOf(snap, want, waits))
	switch {
	case gone != nil:
		return Action{Type: ActionDeleteBindingPolicy, BindingPolicy: gone.BP,
			Why: fmt.Sprintf("abort takes BindingPolicy %s away: the stages are back on revision %s", gone.BP.Name, describeRevision(current))}
	case waiting != "":
		return Action{Type: ActionNone, Why: waiting}
	}
	return Action{Type: ActionNone, Why: fmt.Sprintf("the rollout is aborted: the stages are back on revision %s", describeRevision(current))}
}

// planWithdraw aborts, for a failed stage whose onFailure is Abort, a
// rollout that has no revision to go back to: the status records it (the
// failed stage and those after it Pending, no stage active), the last
// stage whose record says it was done before the failed one is placed
// again (every such stage under Accumulate), and once KubeStellar has
// resolved those, every other BindingPolicy of the policy goes.
func planWithdraw(snap *Snapshot) Action {
	policy := snap.Policy
	f := policy.Status.Failure
	var kept []string
	for _, r := range policy.Status.Stages {
		if r.Name == f.Stage {
			break
		}
		if r.Phase == v1alpha1.StageSucceeded && policy.Spec.StageNamed(r.Name) != nil {
			kept = append(kept, r.Name)
		}
	}
	if policy.Spec.Placement != v1alpha1.PlacementAccumulate && len(kept) > 1 {
		kept = kept[len(kept)-1:]
	}
	message := fmt.Sprintf("%s (onFailure Abort): the stage's placement is withdrawn; stages %v stay placed", f.Message, kept)
	if len(kept) == 0 {
		message = fmt.Sprintf("%s (onFailure Abort): the stage's placement is withdrawn; no stage was done before it, so none stays placed", f.Message)
	}
	if policy.Status.Phase != v1alpha1.RolloutAborted || policy.Status.ActiveStage != "" {
		status := policy.Status.DeepCopy()
		for i := range status.Stages {
			r := &status.Stages[i]
			if slices.Contains(kept, r.Name) {
				continue
			}
			if r.Phase == v1alpha1.StageActive || r.Phase == v1alpha1.StageAwaitingApproval {
				r.Phase = v1alpha1.StagePending
			}
			r.ConditionMetTime, r.ProgressDeadlineTime, r.Clusters = nil, nil, nil
		}
		status.ActiveStage = ""
		return abortStatus(policy, status, message, snap.Now)
	}
	targets := make([]*ksv1alpha1.BindingPolicy, 0, len(kept))
	for _, name := range kept {
		targets = append(targets, RevisionBindingPolicy(policy, *policy.Spec.StageNamed(name), policy.Status.UpdateRevision))
	}
	return abortPlacements(snap, nil, planConfig{}, targets, "", message)
}

// abortTargetHealth assesses a stage's condition on the CombinedStatuses
// of target, its BindingPolicy at the current revision, and says what it
// waits for, or "" when the stage is healthy on it (or places nothing).
func abortTargetHealth(snap *Snapshot, programs compiledStage, target *ksv1alpha1.BindingPolicy, cfg planConfig, budget *expression.Budget) string {
	var statuses []ksv1alpha1.CombinedStatus
	for _, cs := range snap.AbortStatuses {
		if cs.Labels[StatusLabelBindingPolicy] == target.Name {
			statuses = append(statuses, cs)
		}
	}
	result := assessStage(cfg.clock, programs, target, bindingNamed(snap, target.Name), statuses, budget)
	if result.satisfied || result.bindingObserved && !result.placed {
		return ""
	}
	return result.message
}

// abortStatus writes the status of an aborted rollout, with a Warning Event
// when the abort begins.
func abortStatus(policy *v1alpha1.StagedBindingPolicy, status *v1alpha1.StagedBindingPolicyStatus, message string, now metav1.Time) Action {
	setSummary(status, policy, v1alpha1.RolloutAborted,
		metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonRolloutAborted, Message: message},
		metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonRolloutAborted, Message: message},
		now)
	action := statusAction(policy, status, Event{}, "the rollout is aborted")
	if action.Type == ActionUpdateStatus && policy.Status.Phase != v1alpha1.RolloutAborted {
		action.Events = []Event{{Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonRolloutAborted, Note: message}}
	}
	return action
}

// findBindingPolicy returns the BindingPolicy with the given name, or nil.
func findBindingPolicy(bps []ksv1alpha1.BindingPolicy, name string) *ksv1alpha1.BindingPolicy {
	for i := range bps {
		if bps[i].Name == name {
			return &bps[i]
		}
	}
	return nil
}

// resolved reports whether bp, a BindingPolicy of the policy, exists, stays
// and is resolved by KubeStellar: it has observed bp's generation, and its
// Binding is there. What the Binding places is then placed, wherever that
// is (nowhere, if the stage's selectors match no cluster: then there is
// nothing to wait for either).
func resolved(snap *Snapshot, bp *ksv1alpha1.BindingPolicy) bool {
	if bp == nil || bp.DeletionTimestamp != nil || !OwnedBy(bp, snap.Policy) ||
		bp.Status.ObservedGeneration == 0 || bp.Status.ObservedGeneration != bp.Generation {
		return false
	}
	binding := bindingNamed(snap, bp.Name)
	return binding != nil && OwnedBy(binding, bp)
}

// bindingNamed returns the Binding of the named BindingPolicy from the
// snapshot (the active stage's, or Bindings), or nil.
func bindingNamed(snap *Snapshot, name string) *ksv1alpha1.Binding {
	if snap.Binding != nil && snap.Binding.Name == name {
		return snap.Binding
	}
	for i := range snap.Bindings {
		if snap.Bindings[i].Name == name {
			return &snap.Bindings[i]
		}
	}
	return nil
}

// voidApprovals brings the policy's StageApprovals in line with the aborted
// spec, whose digest differs from the rollout's: an approval given before
// the abort then counts no more, so that a retried rollout is approved again.
func voidApprovals(snap *Snapshot) (Action, bool) {
	digest := ""
	for i := range snap.Approvals {
		a := &snap.Approvals[i]
		if !OwnedBy(a, snap.Policy) || a.DeletionTimestamp != nil {
			continue
		}
		if digest == "" {
			digest = specDigest(snap.Policy)
		}
		if a.Spec.SpecDigest != digest {
			updated := a.DeepCopy()
			updated.Spec.SpecDigest = digest
			updated.Spec.PolicyGeneration = snap.Policy.Generation
			return Action{Type: ActionUpdateStageApproval, StageApproval: updated,
				Why: fmt.Sprintf("the rollout is aborted: StageApproval %s no longer counts", a.Name)}, true
		}
	}
	return Action{}, false
}
