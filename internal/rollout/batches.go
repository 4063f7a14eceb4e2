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
	"cmp"
	"crypto/hmac"
	"fmt"
	"slices"
	"strings"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
)

// A stage with maxConcurrency is placed in batches. KubeStellar resolves a
// BindingPolicy's clusterSelectors itself and the stager sees no
// ManagedCluster, so the stage learns its clusters from the census: a
// BindingPolicy with the stage's clusterSelectors and no downsync, whose
// Binding names every selected cluster and places nothing. Each cluster is
// then placed by a BindingPolicy of its own, the stage's selectors narrowed
// to the cluster's name label, whose CombinedStatuses report on that
// cluster alone: the stage's condition judges each cluster by itself. The
// BindingPolicies are the record of what is placed and when (the time of
// their seal, PlacedAnnotation, starts each cluster's progressDeadline),
// with the stage's record of its clusters vouching for them across a
// restart of the stager, so a restarted stager resumes the same batch.

// CensusBindingPolicy returns the BindingPolicy that lists the clusters of
// a stage placed in batches: the stage's clusterSelectors, no downsync.
func CensusBindingPolicy(policy *v1alpha1.StagedBindingPolicy, stage v1alpha1.Stage) *ksv1alpha1.BindingPolicy {
	bp := RevisionBindingPolicy(policy, stage, "")
	bp.Name = v1alpha1.StageCensus(policy.Name, stage.Name).String()
	bp.Spec.Downsync = nil
	return bp
}

// ClusterBindingPolicy returns the BindingPolicy that places the update
// revision of a stage on one cluster: the stage's BindingPolicy, each of
// its clusterSelectors narrowed to the cluster's name label.
func ClusterBindingPolicy(policy *v1alpha1.StagedBindingPolicy, stage v1alpha1.Stage, cluster string) *ksv1alpha1.BindingPolicy {
	bp := DesiredBindingPolicy(policy, stage)
	bp.Name = v1alpha1.StagePlacement(policy.Name, stage.Name).At(policy.Status.UpdateRevision).On(cluster).String()
	bp.Labels[v1alpha1.ClusterLabel] = cluster
	named := metav1.LabelSelectorRequirement{Key: policy.Spec.NameLabelKey(), Operator: metav1.LabelSelectorOpIn, Values: []string{cluster}}
	selectors := make([]metav1.LabelSelector, 0, len(bp.Spec.ClusterSelectors))
	for _, s := range bp.Spec.ClusterSelectors {
		s = *s.DeepCopy()
		s.MatchExpressions = append(s.MatchExpressions, named)
		selectors = append(selectors, s)
	}
	bp.Spec.ClusterSelectors = selectors
	return bp
}

// placesCluster reports whether bp is one that places a cluster of the
// given stage at the update revision.
func placesCluster(policy *v1alpha1.StagedBindingPolicy, stage string, bp *ksv1alpha1.BindingPolicy) bool {
	cluster := bp.Labels[v1alpha1.ClusterLabel]
	return cluster != "" && bp.Labels[v1alpha1.StageLabel] == stage &&
		bp.Name == v1alpha1.StagePlacement(policy.Name, stage).At(policy.Status.UpdateRevision).On(cluster).String()
}

// Placement is the value of PlacedAnnotation, sealed under k, on the
// BindingPolicy that places cluster in stage of the policy with the given
// UID, at revision, placed at at: the time, and the seal of it and of the
// rest.
func (k HandoverKey) Placement(policy types.UID, stage, revision, cluster string, at time.Time) string {
	when := at.UTC().Format(time.RFC3339)
	return when + "/" + k.seal(strings.Join([]string{string(policy), stage, revision, cluster, when}, "/"))
}

// placedAt returns when the stager placed bp, a BindingPolicy owned by the
// policy that places a cluster of the stage, and whether it did: bp bears
// the seal of key for that cluster (PlacedAnnotation), dated in
// the stage's current run (from record's start on), or record,
// the stage's, names the cluster (placed before a restart of the stager,
// whose seals a new process cannot tell from forged ones). Anyone who can
// read the policy can write its owner reference on a BindingPolicy; such
// a one, counted, would pick the canary, or pass for a placed cluster.
func placedAt(key HandoverKey, policy *v1alpha1.StagedBindingPolicy, stage string, record *v1alpha1.StageStatus, bp *ksv1alpha1.BindingPolicy) (metav1.Time, bool) {
	cluster := bp.Labels[v1alpha1.ClusterLabel]
	if mark := bp.Annotations[v1alpha1.PlacedAnnotation]; mark != "" {
		when, _, _ := strings.Cut(mark, "/")
		// A seal from before the stage's start is of an earlier run of it
		// (the rollout restarted since): it is the stager's no more.
		if at, err := time.Parse(time.RFC3339, when); err == nil && (record == nil || record.StartTime == nil || !at.Before(record.StartTime.Time)) &&
			hmac.Equal([]byte(mark), []byte(key.Placement(policy.UID, stage, policy.Status.UpdateRevision, cluster, at))) {
			return metav1.NewTime(at), true
		}
	}
	if record != nil && record.Clusters != nil &&
		slices.ContainsFunc(record.Clusters.Clusters, func(c v1alpha1.ClusterStatus) bool { return c.Name == cluster }) {
		return bp.CreationTimestamp, true
	}
	return metav1.Time{}, false
}

// placedCluster is one cluster of a stage placed in batches that has a
// BindingPolicy of its own.
type placedCluster struct {
	name string
	bp   *ksv1alpha1.BindingPolicy
	// at is when the stager placed it: the time of its seal, else (placed
	// before the stager restarted) its creation.
	at    metav1.Time
	state v1alpha1.ClusterState
	// message says what the cluster waits for or why it failed.
	message string
}

// batches is the assessment of a stage placed in batches.
type batches struct {
	assessment
	// clusters is the stage record's account of its clusters.
	clusters *v1alpha1.StageClusters
	// place is the cluster to place next, "" for none; filling says the
	// batch it belongs to has started, so that it is placed at once
	// rather than once the clusters placed so far are done.
	place   string
	filling bool
	// unplaced is how many selected clusters have no BindingPolicy yet.
	unplaced int
	// selected are the clusters the census names, sorted.
	selected []string
	// clusterBPs are the BindingPolicies of the selected clusters placed;
	// allResolved says KubeStellar has resolved every one of them.
	clusterBPs  []*ksv1alpha1.BindingPolicy
	allResolved bool
	// latestPlaced is when the last cluster was placed: a batch soaks
	// from then at the earliest.
	latestPlaced *metav1.Time
	// failed names the clusters that failed or timed out.
	failed []string
	// deadlineLeft is how long until the next cluster's progressDeadline
	// passes (0 for none).
	deadlineLeft time.Duration
}

// assessBatches assesses a stage placed in batches from its census and the
// BindingPolicies, Bindings and CombinedStatuses of its clusters: each
// placed cluster's state, the failure budget, and which cluster is placed
// next. The batch in progress is done once no placed cluster is
// Progressing; the stage is done (satisfied) once every selected cluster
// is placed and done, at least one Succeeded, within the budget.
func assessBatches(snap *Snapshot, active int, clk clock.PassiveClock, programs compiledStage, census *ksv1alpha1.BindingPolicy,
	budget *expression.Budget) batches {
	policy := snap.Policy
	stage := policy.Spec.Stages[active]
	if census == nil || census.UID == "" {
		return batches{assessment: assessment{reason: v1alpha1.ReasonBindingPolicyPending,
			message: "waiting for the stage's census BindingPolicy to be created"}}
	}
	censusBinding := snap.Binding
	if censusBinding == nil || !OwnedBy(censusBinding, census) || census.Status.ObservedGeneration != census.Generation {
		return batches{assessment: waitingForBinding(census)}
	}
	selected := make([]string, 0, len(censusBinding.Spec.Destinations))
	for _, d := range censusBinding.Spec.Destinations {
		selected = append(selected, d.ClusterId)
	}
	slices.Sort(selected)
	selected = slices.Compact(selected)
	if problem := unplaceable(policy, stage, selected); problem != "" {
		return batches{assessment: assessment{bindingObserved: true, evaluationError: true,
			reason: v1alpha1.ReasonClusterNotPlaceable, message: problem}}
	}

	record := policy.Status.StageNamed(stage.Name)
	var placed []placedCluster
	for i := range snap.BindingPolicies {
		bp := &snap.BindingPolicies[i]
		if !OwnedBy(bp, policy) || !placesCluster(policy, stage.Name, bp) || bp.DeletionTimestamp != nil {
			continue // one being deleted is placed again once it is gone
		}
		at, ours := placedAt(snap.key, policy, stage.Name, record, bp)
		if !ours {
			// Its owner reference is all that says it is the policy's:
			// clusterPlacements takes it over when the stage's order reaches
			// its cluster.
			continue
		}
		name := bp.Labels[v1alpha1.ClusterLabel]
		if _, ok := slices.BinarySearch(selected, name); !ok {
			// The stage no longer selects the cluster, nor does its
			// BindingPolicy: KubeStellar takes the workload away. The
			// BindingPolicy goes with the stage's others: deleted now,
			// it would race KubeStellar v0.30.0's transport, which
			// forgets the cluster's ManifestWork when a Binding goes
			// before it has handled the loss of its destination.
			continue
		}
		placed = append(placed, placedCluster{name: name, bp: bp, at: at})
	}
	// Placement order: the first placed first, which keeps the canary batch
	// the canary whatever joins the stage later.
	slices.SortFunc(placed, func(a, b placedCluster) int {
		return cmp.Or(a.at.Compare(b.at.Time), strings.Compare(a.name, b.name))
	})

	total := len(selected)
	result := batches{unplaced: total - len(placed), allResolved: true, selected: selected}
	for _, c := range placed {
		result.clusterBPs = append(result.clusterBPs, c.bp)
		result.allResolved = result.allResolved && resolved(snap, c.bp)
		if result.latestPlaced == nil || result.latestPlaced.Before(&c.at) {
			result.latestPlaced = ptr.To(c.at)
		}
	}
	if total == 0 {
		result.assessment = assessment{bindingObserved: true, reason: v1alpha1.ReasonNoClustersSelected,
			message: fmt.Sprintf("Binding %s names no cluster: the stage's clusterSelectors select none", censusBinding.Name)}
		result.clusters = &v1alpha1.StageClusters{}
		return result
	}
	evaluations, deadlineLeft, anyPlaced, evalErr := assessClusters(snap, stage, record, clk, programs, placed, budget)
	result.evaluations, result.deadlineLeft = evaluations, deadlineLeft
	if evalErr != nil {
		result.assessment = *evalErr
		return result
	}
	states := make([]v1alpha1.ClusterState, len(placed))
	for i, c := range placed {
		states[i] = c.state
		if c.state == v1alpha1.ClusterFailed || c.state == v1alpha1.ClusterTimedOut {
			result.failed = append(result.failed, fmt.Sprintf("%s (%s)", c.name, c.state))
		}
	}
	slices.Sort(result.failed)
	tally := tallyBatches(stage, total, states)
	result.clusters = &v1alpha1.StageClusters{
		Total: int32(total), Placed: int32(len(placed)), Succeeded: int32(tally.succeeded),
		Failed: int32(tally.failed), TimedOut: int32(tally.timedOut),
		Batch: int32(tally.batch), Batches: int32(tally.batches), Clusters: clusterStates(placed),
	}
	result.bindingObserved, result.placed = true, anyPlaced
	if tally.step != stepCanaryFailed && tally.step != stepBudgetExceeded && len(placed) < total {
		result.place, result.filling = nextCluster(selected, placed), tally.filling
	}
	result.assessment = batchAssessment(result.assessment, tally, placed, result.place, result.failed)
	return result
}

// assessClusters assesses each placed cluster of a stage placed in
// batches (CEL over its CombinedStatuses, its progressDeadline from when
// it was placed, the time suspended excepted), setting its state and
// message. It returns the evaluations, how long until the next deadline
// passes (0 for none), whether any cluster has the workload placed, and,
// when an expression fails to evaluate, the assessment that says so.
func assessClusters(snap *Snapshot, stage v1alpha1.Stage, record *v1alpha1.StageStatus, clk clock.PassiveClock, programs compiledStage,
	placed []placedCluster, budget *expression.Budget) (evaluations []Evaluation, deadlineLeft time.Duration, anyPlaced bool, evalErr *assessment) {
	policy := snap.Policy
	var suspended time.Duration
	if record != nil {
		suspended = suspendedFor(&policy.Status, record, snap.Now)
	}
	for i := range placed {
		c := &placed[i]
		one := assessStage(clk, programs, c.bp, bindingNamed(snap, c.bp.Name), snap.ClusterStatuses, budget)
		evaluations = append(evaluations, one.evaluations...)
		if one.evaluationError {
			return evaluations, deadlineLeft, anyPlaced, &assessment{bindingObserved: true, placed: true, evaluationError: true, reason: one.reason,
				message: fmt.Sprintf("cluster %s: %s", c.name, one.message), evaluations: evaluations}
		}
		anyPlaced = anyPlaced || one.placed
		c.state, c.message = v1alpha1.ClusterProgressing, one.message
		if one.reason == v1alpha1.ReasonNoClustersSelected {
			c.message = fmt.Sprintf("BindingPolicy %s selects no cluster: does cluster %s carry the label %s=%s?",
				c.bp.Name, c.name, policy.Spec.NameLabelKey(), c.name)
		}
		switch {
		case one.failed:
			// The failureCondition does not wait for the deadline.
			c.state = v1alpha1.ClusterFailed
		case one.satisfied:
			c.state = v1alpha1.ClusterSucceeded
		case stage.ProgressDeadline != nil && stage.ProgressDeadline.Duration > 0:
			deadline := c.at.Add(stage.ProgressDeadline.Duration + suspended)
			if left := deadline.Sub(snap.Now.Time); left > 0 {
				// Now is truncated to the second: a second more is past the deadline.
				deadlineLeft = Earliest(deadlineLeft, left+time.Second)
				break
			}
			c.state = v1alpha1.ClusterTimedOut
			if one.reason == v1alpha1.ReasonConditionNotMet {
				c.state = v1alpha1.ClusterFailed
			}
		}
	}
	return evaluations, deadlineLeft, anyPlaced, nil
}

// batchAssessment says in words what tally, the arithmetic of the
// stage's batches, means for the stage: whether it is done (satisfied),
// stalled, or what it waits for. placed are its clusters in placement
// order, next the one to place next ("" for none), failed those that
// failed, by name.
func batchAssessment(result assessment, tally batchTally, placed []placedCluster, next string, failed []string) assessment {
	summary := fmt.Sprintf("%d of %d cluster(s) succeeded, %d progressing, %d failed",
		tally.succeeded, tally.total, tally.progressing, tally.failed+tally.timedOut)
	switch tally.step {
	case stepCanaryFailed:
		canary := make([]string, 0, len(tally.canaryFailed))
		for _, i := range tally.canaryFailed {
			canary = append(canary, placed[i].name)
		}
		result.stalled, result.reason = true, v1alpha1.ReasonFailureBudgetExceeded
		result.message = fmt.Sprintf("canary cluster(s) %s failed, and the canary batch may not fail: %s; no more clusters are placed",
			nameSome(canary), nameSome(slices.Clone(failed)))
		return result
	case stepBudgetExceeded:
		result.stalled, result.reason = true, v1alpha1.ReasonFailureBudgetExceeded
		result.message = fmt.Sprintf("%d cluster(s) failed, more than maxFailures allows (%d): %s; no more clusters are placed",
			tally.failed+tally.timedOut, tally.allowed, nameSome(slices.Clone(failed)))
		return result
	case stepFill:
		result.reason = v1alpha1.ReasonBatchInProgress
		result.message = fmt.Sprintf("batch %d of %d: placing cluster %s; %s", tally.nextBatch, tally.batches, next, summary)
		return result
	case stepBatchDone:
		// Placing the next batch waits only for the soak, which Plan
		// applies to this satisfied assessment.
		result.satisfied, result.reason = true, v1alpha1.ReasonBatchInProgress
		result.message = fmt.Sprintf("batch %d of %d is done: %s", tally.batch, tally.batches, summary)
		return result
	case stepNoneSucceeded:
		result.reason = v1alpha1.ReasonConditionNotMet
		result.message = fmt.Sprintf("no cluster of the stage succeeded: %s", summary)
		return result
	case stepDone:
		result.satisfied, result.reason = true, v1alpha1.ReasonStageAdvanced
		result.message = fmt.Sprintf("condition holds on %d of %d cluster(s)", tally.succeeded, tally.total)
		if tally.failed+tally.timedOut > 0 {
			result.message += fmt.Sprintf("; %s failed, within maxFailures (%d)", nameSome(slices.Clone(failed)), tally.allowed)
		}
		return result
	}
	var waiting []string
	for _, c := range placed {
		if c.state == v1alpha1.ClusterProgressing {
			waiting = append(waiting, c.name)
		}
	}
	slices.Sort(waiting)
	result.reason = v1alpha1.ReasonBatchInProgress
	result.message = fmt.Sprintf("batch %d of %d: waiting for %s; %s", tally.batch, tally.batches, nameSome(waiting), summary)
	for _, c := range placed {
		if c.state == v1alpha1.ClusterProgressing && c.name == waiting[0] {
			result.message += fmt.Sprintf(" (%s: %s)", c.name, c.message)
		}
	}
	return result
}

// unplaceable says why the first cluster that cannot have a BindingPolicy
// of its own cannot, or "": a cluster name comes from KubeStellar's
// Binding, and becomes part of a BindingPolicy's name and a label value.
func unplaceable(policy *v1alpha1.StagedBindingPolicy, stage v1alpha1.Stage, clusters []string) string {
	for _, c := range clusters {
		if errs := validation.IsDNS1123Label(c); len(errs) > 0 {
			return fmt.Sprintf("cluster %q of stage %q cannot be placed by itself: its name is not a DNS label (%s)",
				c, stage.Name, strings.Join(errs, "; "))
		}
		if name := v1alpha1.StagePlacement(policy.Name, stage.Name).At(policy.Status.UpdateRevision).On(c).String(); len(name) > validation.LabelValueMaxLength {
			return fmt.Sprintf("cluster %q of stage %q cannot be placed by itself: the name of its BindingPolicy, %s, is longer than the %d characters of KubeStellar's %s label; shorten the policy's or the stage's name",
				c, stage.Name, name, validation.LabelValueMaxLength, StatusLabelBindingPolicy)
		}
	}
	return ""
}

// invalidBatches says which stage has a maxConcurrency below 1 or a
// maxFailures below 0, or "": the CRD checks only their percentages.
//
// Plan's rule 5: a maxConcurrency below 1 or maxFailures below 0 blocks the
// rollout, changing nothing placed.
func invalidBatches(stages []v1alpha1.Stage) string {
	for _, s := range stages {
		if c := s.MaxConcurrency; c != nil && c.Type == intstr.Int && c.IntVal < 1 {
			return fmt.Sprintf("stage %q: maxConcurrency must be a number of at least 1 or a percentage from 1%% to 100%%, not %d", s.Name, c.IntVal)
		}
		if f := s.MaxFailures; f != nil && f.Type == intstr.Int && f.IntVal < 0 {
			return fmt.Sprintf("stage %q: maxFailures must be a number of at least 0 or a percentage from 0%% to 100%%, not %d", s.Name, f.IntVal)
		}
	}
	return ""
}

// nextCluster returns the first selected cluster by name that has no
// BindingPolicy, or "".
func nextCluster(selected []string, placed []placedCluster) string {
	for _, name := range selected {
		if !slices.ContainsFunc(placed, func(c placedCluster) bool { return c.name == name }) {
			return name
		}
	}
	return ""
}

// clusterStates names the placed clusters and their states for the stage
// record: failed and timed out first, then progressing, then succeeded,
// each by name, at most v1alpha1.MaxClusterStates.
func clusterStates(placed []placedCluster) []v1alpha1.ClusterStatus {
	rank := map[v1alpha1.ClusterState]int{v1alpha1.ClusterFailed: 0, v1alpha1.ClusterTimedOut: 0, v1alpha1.ClusterProgressing: 1, v1alpha1.ClusterSucceeded: 2}
	states := make([]v1alpha1.ClusterStatus, 0, len(placed))
	for _, c := range placed {
		states = append(states, v1alpha1.ClusterStatus{Name: c.name, State: c.state})
	}
	slices.SortFunc(states, func(a, b v1alpha1.ClusterStatus) int {
		return cmp.Or(cmp.Compare(rank[a.State], rank[b.State]), strings.Compare(a.Name, b.Name))
	})
	if len(states) > v1alpha1.MaxClusterStates {
		states = states[:v1alpha1.MaxClusterStates]
	}
	return states
}

// clusterPlacements are the Placements of a stage placed in batches
// (ReasonCluster): each placed cluster's, in line with the spec, then,
// when the batch allows it, the next cluster's, sealed. The next cluster
// goes at once while its batch fills, and once the batch before is done
// (and soaked: soaked) when it starts a batch, with the Event of the
// batch's start.
//
// Plan's rule 16: a stage placed in batches (maxConcurrency) brings its
// clusters' BindingPolicies in line with the spec, then places the next
// cluster its census names, by name, through a BindingPolicy of its own,
// sealed (PlacedAnnotation): at once while the batch fills, else once no
// placed cluster is Progressing and that has soaked; a cluster counts as
// placed only under the seal of this process or when the stage's record
// names it, and one the policy owns otherwise is taken over, sealed, when
// the order reaches it; a name taken by an object the policy does not own
// blocks the rollout (BindingPolicyConflict); more failures than maxFailures
// allow, or one in the canary batch, stall the rollout
// (FailureBudgetExceeded) and place nothing more; the stage is done once
// every cluster is placed and none is Progressing, one at least Succeeded.
func clusterPlacements(snap *Snapshot, active int, b batches, soaked bool) []Placement {
	policy := snap.Policy
	stage := policy.Spec.Stages[active]
	want := make([]Placement, 0, len(b.clusterBPs)+1)
	for _, bp := range b.clusterBPs {
		want = append(want, Placement{BP: ClusterBindingPolicy(policy, stage, bp.Labels[v1alpha1.ClusterLabel]),
			Reason: ReasonCluster, Revision: policy.Status.UpdateRevision})
	}
	first := b.clusters != nil && b.clusters.Placed == 0
	if b.place == "" || b.stalled || !b.filling && (!soaked && !first || batchFrozen(snap, active)) {
		return want
	}
	if !b.filling && holdsBatch(snap, active) { // rule 6b
		return want
	}
	bp := ClusterBindingPolicy(policy, stage, b.place)
	bp.Annotations = map[string]string{v1alpha1.PlacedAnnotation: snap.key.Placement(policy.UID, stage.Name, policy.Status.UpdateRevision, b.place, snap.Now.Time)}
	next := Placement{BP: bp, Reason: ReasonCluster, Revision: policy.Status.UpdateRevision, Marked: true}
	if !b.filling {
		firstSize, size, _ := batchSizes(stage, int(b.clusters.Total))
		n := batchNumber(int(b.clusters.Placed)+1, firstSize, size)
		next.Events = []Event{{Type: corev1.EventTypeNormal, Reason: v1alpha1.EventReasonBatchStarted,
			Note: fmt.Sprintf("stage %q: batch %d of %d started with cluster %s", stage.Name, n, b.clusters.Batches, b.place)}}
	}
	return append(want, next)
}

// withClusters records in the status of an action that moves the rollout
// on from a stage placed in batches (b, nil for another stage) the stage's
// last count of its clusters, with the Events of the clusters that failed
// since the record was written.
func withClusters(action Action, policy *v1alpha1.StagedBindingPolicy, active int, b *batches) Action {
	if b == nil || b.clusters == nil || action.Status == nil {
		return action
	}
	stage := policy.Spec.Stages[active].Name
	if record := action.Status.StageNamed(stage); record != nil {
		record.Clusters = b.clusters
		action.Events = append(newlyFailed(policy.Status.StageNamed(stage), stage, b.clusters), action.Events...)
	}
	return action
}

// newlyFailed returns the Events of clusters that failed since the record
// was written, within the failure budget.
func newlyFailed(before *v1alpha1.StageStatus, stage string, after *v1alpha1.StageClusters) []Event {
	if after == nil {
		return nil
	}
	var events []Event
	for _, c := range after.Clusters {
		if c.State != v1alpha1.ClusterFailed && c.State != v1alpha1.ClusterTimedOut {
			continue
		}
		if before != nil && before.Clusters != nil && slices.ContainsFunc(before.Clusters.Clusters, func(o v1alpha1.ClusterStatus) bool {
			return o.Name == c.Name && o.State == c.State
		}) {
			continue
		}
		events = append(events, Event{Type: corev1.EventTypeWarning, Reason: v1alpha1.EventReasonClusterFailed,
			Note: fmt.Sprintf("stage %q: cluster %s is %s past its progressDeadline", stage, c.Name, c.State)})
	}
	return events
}

// keptResolved reports whether the placement of a stage at the revision
// its record keeps is resolved by KubeStellar: the BindingPolicy of that
// revision, or, for a stage placed in batches that keeps the update
// revision, its clusters' own BindingPolicies (one at least, every one).
func keptResolved(snap *Snapshot, stage v1alpha1.Stage, revision string) bool {
	policy := snap.Policy
	if bp := findBindingPolicy(snap.BindingPolicies, v1alpha1.StagePlacement(policy.Name, stage.Name).At(revision).String()); bp != nil ||
		!stage.Batched() || revision != placedRevision(&policy.Status) {
		return resolved(snap, bp)
	}
	any := false
	for i := range snap.BindingPolicies {
		bp := &snap.BindingPolicies[i]
		if OwnedBy(bp, policy) && placesCluster(policy, stage.Name, bp) && bp.DeletionTimestamp == nil {
			if !resolved(snap, bp) {
				return false
			}
			any = true
		}
	}
	return any
}

// PlacesActiveCluster reports whether bp is a BindingPolicy that places one
// cluster of the policy's active stage, placed in batches, at the update
// revision: the reconciler reads its CombinedStatuses
// (Snapshot.ClusterStatuses).
func PlacesActiveCluster(policy *v1alpha1.StagedBindingPolicy, bp *ksv1alpha1.BindingPolicy) bool {
	active, started, _ := ActiveStage(policy)
	return started && policy.Spec.Stages[active].Batched() && placesCluster(policy, policy.Spec.Stages[active].Name, bp)
}
