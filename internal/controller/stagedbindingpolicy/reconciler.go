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

package stagedbindingpolicy

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/analysis"
	"github.com/kubestellar/workload-stager/internal/announce"
	"github.com/kubestellar/workload-stager/internal/controller/metrics"
	"github.com/kubestellar/workload-stager/internal/expression"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// +kubebuilder:rbac:groups=community.kubestellar.io,resources=stagedbindingpolicies,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=community.kubestellar.io,resources=stagedbindingpolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=community.kubestellar.io,resources=stagedbindingpolicies/finalizers,verbs=update
// +kubebuilder:rbac:groups=community.kubestellar.io,resources=stageapprovals,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=control.kubestellar.io,resources=bindingpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=control.kubestellar.io,resources=bindings;combinedstatuses,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler rolls out the StagedBindingPolicies of one space, one change per run.
type Reconciler struct {
	// Space is the name of the space, used in logs.
	Space string
	// Client reads from the space's cache and writes to its API server.
	Client client.Client
	// APIReader reads from the space's API server, uncached: a BindingPolicy
	// whose name the stager wants and that the cache does not hold
	// (NarrowCache holds only those labelled as generated), read when
	// creating that name is refused. Nil means Client.
	APIReader client.Reader
	// IndexedCache says that Client reads from a cache with the indexes of
	// IndexFields: a run then lists a policy's objects by index rather than
	// by matching the labels of every object of their kind.
	IndexedCache bool
	// Recorder emits Events on the policies.
	Recorder events.EventRecorder
	// Engine compiles and evaluates stage expressions; it is shared by all spaces.
	Engine *expression.Engine
	// Clock is every time the reconciler reads: the time recorded in status,
	// how long its own writes are believed, evaluation durations; nil means
	// the real clock.
	Clock clock.PassiveClock
	// Metrics records the space's metrics; nil records none.
	Metrics *metrics.Space
	// DeletionWarningAfter is how long a deletion may wait for the
	// finalizers of the policy's BindingPolicies before it is reported as
	// blocked; zero means DefaultDeletionWarningAfter.
	DeletionWarningAfter time.Duration
	// HandoverKey seals the handover marks and the placements of clusters
	// the reconciler writes (rollout.WithHandoverKey); NewController never
	// leaves it zero.
	HandoverKey rollout.HandoverKey
	// Measurer answers the queries of the analyses that are due; nil
	// answers none.
	Measurer Measurer
	// Fence, when set, bounds the reconciler's writes: a run makes no
	// change once the tenure has ended by the reconciler's clock, and a
	// change's requests end by the end of the tenure as it was when the
	// change began. Nil bounds nothing.
	Fence Fence
	// Waves, when set, is the hosting cluster's RolloutWaves; nil: no
	// wave orders any policy (see Waves).
	Waves Waves
	// Freezes, when set, is the hosting cluster's RolloutFreezes; nil: no
	// freeze holds any policy (see Freezes).
	Freezes Freezes
	// Notifier, when set, delivers the notifications of the pending
	// Events that spec.notifications wants (rule 20a); nil gives each up.
	Notifier Notifier

	// Unconfirmed keeps the status writes whose answers were lost until a
	// run, of this reconciler or the space's next one, sees whether they
	// were made, for the metrics of the stages they completed; nil keeps
	// none. Their Events are pending in the status they wrote (announce).
	Unconfirmed *Unconfirmed

	// Events posts the Events of status.pendingEvents (rule 20); nil:
	// through Recorder, counting one posted once handed (poster).
	Events EventPoster
	// recorded is the EventPoster when Events is nil.
	recorded     *announce.Poster
	recordedOnce sync.Once

	// own lets runs read the reconciler's writes of policies before the
	// cache has them.
	own ownWrites
	// planning bounds how many runs plan at once (see planGate); nil
	// bounds nothing.
	planning planGate
	// ownBPs lets runs read the reconciler's creations and deletions of
	// BindingPolicies before the cache has them.
	ownBPs ownBindingPolicies
	// foreignBPs lets runs read the BindingPolicies that hold a name the
	// policy wants and that the cache does not hold.
	foreignBPs foreignBindingPolicies
}

// Measurer sends an analysis's query, for a policy of space, to the
// MetricProvider it names and returns the sample values of the answer
// (analysis.Providers). Its errors' text is what the space may read;
// analysis.Detail adds what only the stager's log may show.
type Measurer interface {
	Query(ctx context.Context, space, provider, query string) ([]float64, error)
}

// WebMeasurer is a Measurer that also sends web analyses' requests to the
// web MetricProviders they name and returns their JSON answers
// (analysis.Providers). A Measurer that is not one answers no web
// analysis: its measurements are inconclusive, saying so.
type WebMeasurer interface {
	Fetch(ctx context.Context, space, provider string, req analysis.WebRequest) ([]byte, error)
}

// Reconcile makes the single next change for one StagedBindingPolicy.
// Its requeues (timers, retries) are at the default priority, whatever the
// priority of the event that queued the run (see bindingPolicyEvents).
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	result, err := r.reconcile(ctx, req)
	if err != nil && r.Metrics != nil {
		r.Metrics.ReconcileError()
	}
	if result.RequeueAfter > 0 || err != nil {
		result.Priority = ptr.To(0)
	}
	return result, err
}

// maxStepsPerRun bounds the steps of one run. A step is one snapshot, one
// Plan and one change; a status write that enters a stage (the rollout's
// start, an advance, a restart, an approval) is followed at once by the step
// it leads to, creating the stage's BindingPolicy or StageApproval, on the
// policy as written (see ownWrites): waiting for the write's watch event and
// the queue would make every advance two round trips and two turns in the
// queue long; so would a status write that records the Events of the
// change that follows it (rule 20), a batch's BindingPolicy. The policy's
// own status writes do not queue it (see policyEvents).
const maxStepsPerRun = 2

func (r *Reconciler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	// refused holds the names whose create was refused in this run: a
	// second refusal of one means the snapshot does not show what holds it
	// (Plan looks for foreign names only where it reports them), and the
	// run backs off as for a lagging cache instead of trying again at once.
	refused := map[string]bool{}
	for step := 1; ; step++ {
		snap, err := r.snapshot(ctx, req.NamespacedName)
		if err != nil {
			return reconcile.Result{}, err
		}
		if snap == nil {
			r.own.forget(req.NamespacedName)
			r.poster().Forget(req.NamespacedName)
			r.foreignBPs.forget(req.Name)
			r.Unconfirmed.drop(r.Space, req.NamespacedName)
			if r.Metrics != nil {
				// Its gauges go with it from the cache; its counters stay
				// until told.
				r.Metrics.PolicyDeleted(req.Name)
			}
			return reconcile.Result{}, nil
		}
		if w, ok := r.Unconfirmed.landed(r.Space, snap.Policy); ok {
			logger.Info("A status write whose answer was lost has been made; reporting it", "action", w.action.Type, "why", w.action.Why)
			r.report(snap.Policy, w.previous, w.action)
		}
		// Pending Events not posted by this process (a write made before
		// a crash or a failover) are posted now; Plan clears those posted.
		var announcing time.Duration
		snap.Announced, snap.Delivered, announcing = r.announce(snap.Policy)

		action, err := r.planRun(ctx, snap)
		if err != nil {
			return reconcile.Result{}, err
		}
		r.recordEvaluations(action.Evaluations)
		r.recordRegressionChecks(logger, action.RegressionChecks)
		if action.Type == rollout.ActionNone {
			logger.V(1).Info("Waiting", "why", action.Why)
			// A BindingPolicy seen only through the reconciler's own
			// create is looked at again once that view expires: its events
			// may have come and gone already.
			wait := rollout.Earliest(rollout.Earliest(requeueWhileWaiting, action.RequeueAfter), announcing)
			return reconcile.Result{RequeueAfter: rollout.Earliest(wait, r.ownBPs.believedFor(snap.Policy, r.clock().Now()))}, nil
		}
		logger.Info("Making a change", "action", action.Type, "why", action.Why, "step", step)
		var written *v1alpha1.StagedBindingPolicy
		lapsed, err := r.applyFenced(ctx, func(ctx context.Context) (err error) {
			written, err = r.apply(ctx, snap.Policy, action)
			return err
		})
		if written != nil {
			r.own.record(snap.Policy, written)
		}
		if lapsed {
			logger.Info("Change not made, or not known to be: this replica's tenure of the space's fence has ended",
				"action", action.Type, "error", err.Error())
			r.keepUnconfirmed(ctx, snap.Policy, action)
			if r.Metrics != nil {
				r.Metrics.FenceLapsed()
			}
			return reconcile.Result{RequeueAfter: FenceRetry}, nil
		}
		if err != nil {
			if action.Type == rollout.ActionCreateBindingPolicy && apierrors.IsAlreadyExists(err) && !refused[action.BindingPolicy.Name] {
				refused[action.BindingPolicy.Name] = true
				foreign, readErr := r.readForeign(ctx, req.Name, action.BindingPolicy.Name)
				if readErr != nil {
					return reconcile.Result{}, readErr
				}
				if foreign {
					// Plan again, on a snapshot that has it.
					logger.Info("A BindingPolicy the cache does not hold has the name; planning again", "bindingPolicy", action.BindingPolicy.Name)
					if step < maxStepsPerRun {
						continue
					}
					return reconcile.Result{RequeueAfter: time.Millisecond}, nil
				}
			}
			if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
				// The cache lagged behind the API server; the next run reads a newer state.
				logger.V(1).Info("Change raced with another write; trying again", "action", action.Type, "error", err.Error())
				return reconcile.Result{RequeueAfter: time.Second}, nil
			}
			if answerLost(err) {
				r.keepUnconfirmed(ctx, snap.Policy, action)
			}
			return reconcile.Result{}, fmt.Errorf("%s for StagedBindingPolicy %s: %w", action.Type, req.Name, err)
		}
		if action.Type == rollout.ActionUpdateStatus {
			r.Unconfirmed.drop(r.Space, req.NamespacedName)
			r.countDropped(&snap.Policy.Status, snap.Announced, action)
		}
		if written != nil {
			_, _, _ = r.announce(written)
		}
		r.report(snap.Policy, &snap.Policy.Status, action)
		if step == maxStepsPerRun || !entersStage(snap.Policy, action) && action.Announces == "" {
			return reconcile.Result{RequeueAfter: rollout.Earliest(requeueAfterChange, action.RequeueAfter)}, nil
		}
	}
}

// readForeign reads the BindingPolicy named name from the API server, past
// the cache, after policy's create of that name was refused: one the cache
// will never hold (not labelled as generated) is remembered (foreignBPs),
// so that the next snapshot has it, and readForeign reports true. One the
// cache will hold is left to it: the cache lags behind.
func (r *Reconciler) readForeign(ctx context.Context, policy, name string) (bool, error) {
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	bp, err := getNamed(ctx, reader, "BindingPolicy", name, &ksv1alpha1.BindingPolicy{})
	if err != nil || bp == nil {
		return false, err
	}
	if _, generated := bp.Labels[v1alpha1.PolicyLabel]; generated {
		return false, nil
	}
	r.foreignBPs.record(policy, bp, r.clock().Now())
	return true, nil
}

// keepUnconfirmed keeps action, a change of policy whose outcome is not
// known, in Unconfirmed if it is a status write.
func (r *Reconciler) keepUnconfirmed(ctx context.Context, policy *v1alpha1.StagedBindingPolicy, action rollout.Action) {
	if action.Type != rollout.ActionUpdateStatus || r.Unconfirmed == nil {
		return
	}
	logger := log.FromContext(ctx)
	if err := r.Unconfirmed.add(r.Space, policy, action, r.clock().Now()); err != nil {
		logger.Error(err, "Keeping a status write whose outcome is not known")
		return
	}
	logger.Info("A status write's outcome is not known; its Events are posted once its status is seen", "why", action.Why)
}

// report records the stages action, a change made to policy, completed
// and promoted; before is the status the action replaced. Its Events are
// posted from the status it wrote (announce).
func (r *Reconciler) report(policy *v1alpha1.StagedBindingPolicy, before *v1alpha1.StagedBindingPolicyStatus, action rollout.Action) {
	if action.Type == rollout.ActionUpdateStatus && r.Metrics != nil {
		names := make([]string, 0, len(action.Status.Stages))
		for _, st := range action.Status.Stages {
			names = append(names, st.Name)
		}
		r.Metrics.PolicyStages(policy.Name, names)
		for _, st := range CompletedStages(before, action.Status) {
			r.Metrics.StageCompleted(policy.Name, st.Name, st.CompletionTime.Sub(st.StartTime.Time))
		}
		// The forecast's durations are those status.history records.
		for _, st := range RecordedStages(before, action.Status) {
			r.Metrics.StageDone(policy.Name, st.Name, st.Duration())
		}
		for _, stage := range PromotedStages(before, action.Status) {
			r.Metrics.StagePromoted(policy.Name, stage)
		}
	}
}

// clock returns the reconciler's clock, the real one unless Clock is set.
func (r *Reconciler) clock() clock.PassiveClock {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}

// entersStage reports whether action is a status write that enters a stage:
// makes it active, or awaiting approval, when it was not (the rollout's
// start or restart, an advance, an approval), so that the stage's
// BindingPolicy or StageApproval is the next change.
func entersStage(policy *v1alpha1.StagedBindingPolicy, action rollout.Action) bool {
	if action.Type != rollout.ActionUpdateStatus {
		return false
	}
	after := action.Status.StageNamed(action.Status.ActiveStage)
	if after == nil || (after.Phase != v1alpha1.StageActive && after.Phase != v1alpha1.StageAwaitingApproval) {
		return false
	}
	before := policy.Status.StageNamed(action.Status.ActiveStage)
	return action.Status.ActiveStage != policy.Status.ActiveStage || before == nil || before.Phase != after.Phase
}

func (r *Reconciler) recordEvaluations(evaluations []rollout.Evaluation) {
	if r.Metrics == nil {
		return
	}
	for _, e := range evaluations {
		r.Metrics.Evaluation(e.Result, e.Duration)
	}
}

// recordRegressionChecks logs and counts the checks of done stages Plan
// made (rule 15b); a regression or an inconclusive check is logged at the
// default level.
func (r *Reconciler) recordRegressionChecks(logger logr.Logger, checks []rollout.RegressionCheck) {
	for _, c := range checks {
		level := 1
		if c.Result != rollout.RegressionHealthy {
			level = 0
		}
		logger.V(level).Info("Checked a done stage for regressions", "stage", c.Stage, "result", c.Result)
		if r.Metrics != nil {
			r.Metrics.RegressionCheck(c.Result)
		}
	}
}

// CompletedStages returns the stage records that are Succeeded, with start
// and completion times, in after but were not Succeeded in before.
func CompletedStages(before, after *v1alpha1.StagedBindingPolicyStatus) []v1alpha1.StageStatus {
	was := make(map[string]bool, len(before.Stages))
	for _, st := range before.Stages {
		was[st.Name] = st.Phase == v1alpha1.StageSucceeded
	}
	var completed []v1alpha1.StageStatus
	for _, st := range after.Stages {
		if st.Phase == v1alpha1.StageSucceeded && !was[st.Name] && st.StartTime != nil && st.CompletionTime != nil {
			completed = append(completed, st)
		}
	}
	return completed
}

// RecordedStages returns the stage durations status.history records in
// after and did not in before: the stages a status write recorded done.
func RecordedStages(before, after *v1alpha1.StagedBindingPolicyStatus) []v1alpha1.StageHistory {
	type run struct {
		revision string
		start    time.Time
	}
	was := map[run][]v1alpha1.StageHistory{}
	for _, h := range before.History {
		was[run{h.Revision, h.StartTime.Time}] = h.Stages
	}
	var recorded []v1alpha1.StageHistory
	for _, h := range after.History {
		known := was[run{h.Revision, h.StartTime.Time}]
		for _, st := range h.Stages {
			if !slices.ContainsFunc(known, func(k v1alpha1.StageHistory) bool { return k.Name == st.Name }) {
				recorded = append(recorded, st)
			}
		}
	}
	return recorded
}

// snapshot reads the policy and the objects around its active stage that
// rollout.Reads names from the space's cache, the policy as the reconciler
// last wrote it if the cache has not caught up with that write yet, and the
// BindingPolicies under names the policy needs as the reconciler last found
// them on the API server when the cache does not hold them (foreignBPs):
// among the policy's, and as the active and next stages'. It returns nil
// when the policy does not exist.
func (r *Reconciler) snapshot(ctx context.Context, key types.NamespacedName) (*rollout.Snapshot, error) {
	policy := &v1alpha1.StagedBindingPolicy{}
	if err := r.Client.Get(ctx, key, policy); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading StagedBindingPolicy %s: %w", key.Name, err)
	}
	policy = r.own.freshest(policy)
	now := r.clock().Now()
	snap := &rollout.Snapshot{Policy: policy, Now: metav1.NewTime(now.Truncate(time.Second))}
	snap.Wave = r.waveDecision(ctx, policy, snap.Now.Time)
	snap.Freeze = r.freezeDecision(ctx, policy, snap.Now.Time)

	owned := &ksv1alpha1.BindingPolicyList{}
	if err := r.Client.List(ctx, owned, r.labelled(byPolicy, policy.Name)); err != nil {
		return nil, fmt.Errorf("listing BindingPolicies of %s: %w", policy.Name, err)
	}
	seen := r.clock().Now()
	snap.BindingPolicies = r.ownBPs.viewList(owned.Items, policy, seen)

	approvals := &v1alpha1.StageApprovalList{}
	if err := r.Client.List(ctx, approvals, r.labelled(byPolicy, policy.Name)); err != nil {
		return nil, fmt.Errorf("listing StageApprovals of %s: %w", policy.Name, err)
	}
	snap.Approvals = approvals.Items

	reads := rollout.Reads(policy, snap.BindingPolicies, snap.Now)
	if reads.Bindings {
		for i := range snap.BindingPolicies {
			binding, err := getNamed(ctx, r.Client, "Binding", snap.BindingPolicies[i].Name, &ksv1alpha1.Binding{})
			if err != nil {
				return nil, err
			}
			if binding != nil {
				snap.Bindings = append(snap.Bindings, *binding)
			}
			if !reads.AbortStatuses {
				continue
			}
			statuses := &ksv1alpha1.CombinedStatusList{}
			if err := r.Client.List(ctx, statuses, r.labelled(byBindingPolicy, snap.BindingPolicies[i].Name)); err != nil {
				return nil, fmt.Errorf("listing CombinedStatuses of %s: %w", snap.BindingPolicies[i].Name, err)
			}
			snap.AbortStatuses = append(snap.AbortStatuses, statuses.Items...)
		}
	}

	snap.BindingPolicies = r.foreignBPs.withFound(policy.Name, snap.BindingPolicies, seen)

	if reads.Active == "" {
		return snap, nil
	}
	bpName := reads.Active

	var err error
	if snap.ActiveBindingPolicy, err = getNamed(ctx, r.Client, "BindingPolicy", bpName, &ksv1alpha1.BindingPolicy{}); err != nil {
		return nil, err
	}
	snap.ActiveBindingPolicy = r.ownBPs.view(bpName, r.foreignBPs.view(policy.Name, bpName, snap.ActiveBindingPolicy, seen), policy, seen)
	if nextName := reads.Next; nextName != "" {
		if snap.NextBindingPolicy, err = getNamed(ctx, r.Client, "BindingPolicy", nextName, &ksv1alpha1.BindingPolicy{}); err != nil {
			return nil, err
		}
		snap.NextBindingPolicy = r.ownBPs.view(nextName, r.foreignBPs.view(policy.Name, nextName, snap.NextBindingPolicy, seen), policy, seen)
	}
	if snap.Binding, err = getNamed(ctx, r.Client, "Binding", bpName, &ksv1alpha1.Binding{}); err != nil {
		return nil, err
	}

	statuses := &ksv1alpha1.CombinedStatusList{}
	if err := r.Client.List(ctx, statuses, r.labelled(byBindingPolicy, bpName)); err != nil {
		return nil, fmt.Errorf("listing CombinedStatuses of %s: %w", bpName, err)
	}
	snap.CombinedStatuses = statuses.Items

	for _, name := range reads.ClusterStatuses {
		statuses := &ksv1alpha1.CombinedStatusList{}
		if err := r.Client.List(ctx, statuses, r.labelled(byBindingPolicy, name)); err != nil {
			return nil, fmt.Errorf("listing CombinedStatuses of %s: %w", name, err)
		}
		snap.ClusterStatuses = append(snap.ClusterStatuses, statuses.Items...)
	}
	for _, name := range reads.Watched {
		binding, err := getNamed(ctx, r.Client, "Binding", name, &ksv1alpha1.Binding{})
		if err != nil {
			return nil, err
		}
		if binding != nil {
			snap.WatchedBindings = append(snap.WatchedBindings, *binding)
		}
		statuses := &ksv1alpha1.CombinedStatusList{}
		if err := r.Client.List(ctx, statuses, r.labelled(byBindingPolicy, name)); err != nil {
			return nil, fmt.Errorf("listing CombinedStatuses of %s: %w", name, err)
		}
		snap.WatchedStatuses = append(snap.WatchedStatuses, statuses.Items...)
	}
	foreign := func(name string, cached *ksv1alpha1.BindingPolicy) *ksv1alpha1.BindingPolicy {
		return r.foreignBPs.view(policy.Name, name, cached, seen)
	}
	if snap.BindingPolicies, err = withNamesakes(ctx, r.Client, policy, snap.Binding, snap.BindingPolicies, foreign); err != nil {
		return nil, err
	}
	snap.Measurements = r.measure(ctx, policy, policy.Status.ActiveStage, snap.Binding, snap.Now, reads.Analyses)
	return snap, nil
}

// planRun plans the step on snap; when that plan checks done stages whose
// regressionWatch runs analyses, it measures them (measureWatched) and
// plans again, so that the checks judge the answers.
func (r *Reconciler) planRun(ctx context.Context, snap *rollout.Snapshot) (rollout.Action, error) {
	var action rollout.Action
	plan := func() {
		action = rollout.Plan(snap, r.Engine, rollout.WithDeletionWarningAfter(r.DeletionWarningAfter), rollout.WithClock(r.clock()),
			rollout.WithHandoverKey(r.HandoverKey))
	}
	if err := r.planning.plan(ctx, plan); err != nil {
		return rollout.Action{}, err
	}
	if !r.measureWatched(ctx, snap, action) {
		return action, nil
	}
	if err := r.planning.plan(ctx, plan); err != nil {
		return rollout.Action{}, err
	}
	return action, nil
}

// measureWatched measures, into snap.WatchedMeasurements, the analyses
// of the done stages whose regression checks action, planned on snap,
// made (rollout.RegressionAnalyses), each rendered with its stage's
// context, and reports whether it measured any: the caller then plans
// again. Only a plan whose write records a check makes one, so a done
// stage's analyses are queried once per interval (rule 15b).
func (r *Reconciler) measureWatched(ctx context.Context, snap *rollout.Snapshot, action rollout.Action) bool {
	watched := rollout.RegressionAnalyses(snap.Policy, action.RegressionChecks)
	for _, w := range watched {
		var binding *ksv1alpha1.Binding
		for i := range snap.WatchedBindings {
			if snap.WatchedBindings[i].Name == w.BindingPolicy {
				binding = &snap.WatchedBindings[i]
			}
		}
		if binding == nil && snap.Binding != nil && snap.Binding.Name == w.BindingPolicy {
			binding = snap.Binding
		}
		snap.WatchedMeasurements = append(snap.WatchedMeasurements, r.measure(ctx, snap.Policy, w.Stage, binding, snap.Now, w.Analyses)...)
	}
	return len(watched) > 0
}

// measure sends the queries of due, analyses of the named stage (the
// active stage's that are due, rollout.Reads, or a done stage's for its
// regression check), side by side, each rendered with the stage's context:
// its clusters are those its Binding names (analysis.ClusterNames). A query that gets
// no answer is an inconclusive measurement, which says why; one over the
// space's bound on queries is no measurement: the analysis stays due and
// is measured again at the run its requeue brings (a regression check
// without it is inconclusive).
func (r *Reconciler) measure(ctx context.Context, policy *v1alpha1.StagedBindingPolicy, stage string, binding *ksv1alpha1.Binding,
	now metav1.Time, due []v1alpha1.Analysis) []rollout.Measurement {
	if len(due) == 0 {
		return nil
	}
	qc := analysis.Context{Space: r.Space, Policy: policy.Name, Stage: stage, Revision: policy.Status.UpdateRevision,
		Clusters: analysis.ClusterNames(binding)}
	out := make([]rollout.Measurement, len(due))
	details := make([]string, len(due))
	limited := make([]bool, len(due))
	reasons := make([]analysis.Reason, len(due))
	var wg sync.WaitGroup
	for i, a := range due {
		out[i] = rollout.Measurement{Stage: stage, Analysis: a.Name, Time: now}
		if r.Measurer == nil {
			out[i].Error = "the stager queries no MetricProvider"
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var values []float64
			var answer []byte
			var err error
			if a.Web != nil {
				web, ok := r.Measurer.(WebMeasurer)
				if !ok {
					out[i].Error = "the stager calls no web MetricProvider"
					return
				}
				answer, err = web.Fetch(ctx, r.Space, a.Provider, analysis.RenderWeb(a.Web, qc))
			} else {
				values, err = r.Measurer.Query(ctx, r.Space, a.Provider, analysis.Render(a.Query, qc))
			}
			result := metrics.QueryAnswered
			if err != nil {
				out[i].Error, details[i], reasons[i] = err.Error(), analysis.Detail(err), analysis.ReasonOf(err)
				switch reason := reasons[i]; {
				case reason == analysis.ReasonRateLimited:
					result, limited[i] = metrics.QueryRateLimited, true
				case reason.Refused():
					result = metrics.QueryRefused
				default:
					result = metrics.QueryFailed
				}
			}
			out[i].Values, out[i].Answer = values, answer
			if r.Metrics != nil {
				r.Metrics.AnalysisQuery(result)
			}
		}()
	}
	wg.Wait()
	logger := log.FromContext(ctx)
	measured := out[:0]
	for i, m := range out {
		switch {
		case limited[i]:
			logger.Info("Analysis query rate limited; it will be measured again", "stage", m.Stage, "analysis", m.Analysis, "error", details[i])
			continue
		case m.Error != "":
			logger.Info("Analysis query got no answer", "stage", m.Stage, "analysis", m.Analysis, "error", details[i])
			if reasons[i] == analysis.ReasonCredentialsRefused && !alreadyMeasured(policy, m) {
				r.Recorder.Eventf(policy, nil, corev1.EventTypeWarning, string(analysis.ReasonCredentialsRefused), "Measure",
					"stage %q, analysis %q: %s", m.Stage, m.Analysis, m.Error)
			}
		default:
			logger.V(1).Info("Analysis measured", "stage", m.Stage, "analysis", m.Analysis, "values", len(m.Values))
		}
		measured = append(measured, m)
	}
	return measured
}

// alreadyMeasured reports whether the latest measurement that policy's
// status records for m's analysis says what m does: its refusal was told
// then, and is not told again.
func alreadyMeasured(policy *v1alpha1.StagedBindingPolicy, m rollout.Measurement) bool {
	record := policy.Status.StageNamed(m.Stage)
	if record == nil {
		return false
	}
	a := record.AnalysisNamed(m.Analysis)
	return a != nil && len(a.Measurements) > 0 && a.Measurements[len(a.Measurements)-1].Message == m.Error
}

// getNamed reads the cluster-scoped object of kind with the given name into
// obj and returns it, or nil when there is none.
func getNamed[T client.Object](ctx context.Context, reader client.Reader, kind, name string, obj T) (T, error) {
	var none T
	switch err := reader.Get(ctx, types.NamespacedName{Name: name}, obj); {
	case err == nil:
		return obj, nil
	case apierrors.IsNotFound(err):
		return none, nil
	default:
		return none, fmt.Errorf("reading %s %s: %w", kind, name, err)
	}
}

// apply makes the change an Action describes. It returns the policy as the
// API server stored it when the change wrote the policy, else nil.
func (r *Reconciler) apply(ctx context.Context, policy *v1alpha1.StagedBindingPolicy, action rollout.Action) (*v1alpha1.StagedBindingPolicy, error) {
	switch action.Type {
	case rollout.ActionAddFinalizer, rollout.ActionRemoveFinalizer:
		patched := policy.DeepCopy()
		if action.Type == rollout.ActionAddFinalizer {
			controllerutil.AddFinalizer(patched, v1alpha1.CleanupFinalizer)
		} else {
			controllerutil.RemoveFinalizer(patched, v1alpha1.CleanupFinalizer)
		}
		return written(patched, r.Client.Patch(ctx, patched, client.MergeFromWithOptions(policy, client.MergeFromWithOptimisticLock{})))
	case rollout.ActionCreateBindingPolicy:
		if err := r.Client.Create(ctx, action.BindingPolicy); err != nil {
			return nil, err
		}
		r.ownBPs.recordCreate(action.BindingPolicy, r.clock().Now())
		return nil, nil
	case rollout.ActionUpdateBindingPolicy:
		return nil, r.Client.Update(ctx, action.BindingPolicy)
	case rollout.ActionDeleteBindingPolicy:
		if err := client.IgnoreNotFound(r.Client.Delete(ctx, action.BindingPolicy, client.Preconditions{UID: &action.BindingPolicy.UID})); err != nil {
			return nil, err
		}
		r.ownBPs.recordDelete(action.BindingPolicy.UID, r.clock().Now())
		return nil, nil
	case rollout.ActionCreateStageApproval:
		return nil, r.Client.Create(ctx, action.StageApproval)
	case rollout.ActionUpdateStageApproval:
		return nil, r.Client.Update(ctx, action.StageApproval)
	case rollout.ActionDeleteStageApproval:
		err := r.Client.Delete(ctx, action.StageApproval, client.Preconditions{UID: &action.StageApproval.UID})
		return nil, client.IgnoreNotFound(err)
	case rollout.ActionUpdateStatus:
		updated := policy.DeepCopy()
		updated.Status = *action.Status
		return written(updated, r.Client.Status().Update(ctx, updated))
	default:
		return nil, fmt.Errorf("unknown action %q", action.Type)
	}
}

// written returns policy if err is nil, for apply.
func written(policy *v1alpha1.StagedBindingPolicy, err error) (*v1alpha1.StagedBindingPolicy, error) {
	if err != nil {
		return nil, err
	}
	return policy, nil
}

// Requeue intervals.
const (
	// requeueAfterChange is a safety net after a change; the watch event the
	// change causes normally brings the next run sooner.
	requeueAfterChange = 2 * time.Second
	// requeueWhileWaiting is a safety net while a stage waits on KubeStellar.
	requeueWhileWaiting = 5 * time.Minute
)
