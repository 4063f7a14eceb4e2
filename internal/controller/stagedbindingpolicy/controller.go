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
	"maps"
	"runtime"
	"slices"
	"time"

	"github.com/go-logr/logr"
	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/announce"
	"github.com/kubestellar/workload-stager/internal/controller/metrics"
	"github.com/kubestellar/workload-stager/internal/expression"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// ControllerName is the name of the controller, used in Events and metrics.
const ControllerName = "stagedbindingpolicy"

// SpaceControllerName is the name of space's controller, which labels its
// controller-runtime series (metrics.SeriesJanitor deletes them by it).
func SpaceControllerName(space string) string { return ControllerName + "/" + space }

// Options tune the controller of one space.
type Options struct {
	// MaxConcurrentReconciles is how many policies of one space are reconciled at once.
	MaxConcurrentReconciles int
	// CacheSyncTimeout bounds the wait for the space's caches.
	CacheSyncTimeout time.Duration
	// ReconcileTimeout bounds one reconcile, and so every request it makes to
	// the space's API server: a hung API server cannot hold a worker longer.
	// Zero means no bound.
	ReconcileTimeout time.Duration
	// Logger is the base logger; the space's name is added to it.
	Logger logr.Logger
	// HandoverKey seals the handover marks and the placements of clusters
	// the controller writes (rollout.HandoverKey): the process's own, made
	// once at start; the zero key means a fresh one for this controller.
	HandoverKey rollout.HandoverKey
	// DeletionWarningAfter is how long a policy's deletion may wait for the
	// finalizers of its BindingPolicies before it is reported as blocked
	// with a Warning Event; zero means DefaultDeletionWarningAfter.
	DeletionWarningAfter time.Duration
	// FieldOwner, when set, is the field manager of every write to the
	// space (so its objects' managedFields tell which replica wrote them).
	FieldOwner string
	// EventQPS and EventBurst, when EventQPS is positive, set the rate of
	// the Events the controller posts to the space: at most EventQPS a
	// second, in bursts of up to EventBurst, through a client and a
	// broadcaster of their own, which start and stop with the controller.
	// Otherwise the Events go through the recorder of the space's cluster,
	// at client-go's default rate (5 a second, bursts of 10), which a burst
	// of rollouts in one space outruns; a faster rate posts them while the
	// space is busiest with the rollouts (docs/operations.md: --space-event-qps).
	EventQPS   float32
	EventBurst int
	// Measurer answers the queries of stage analyses; nil answers none,
	// and every measurement is inconclusive.
	Measurer Measurer
	// Fence, when set, bounds the controller's writes to the space's
	// (Reconciler.Fence): a sharded replica's tenure of the space's fence.
	Fence Fence
	// Unconfirmed, shared by the controllers a space has in turn, keeps
	// the status writes whose answers were lost until one of them sees
	// whether they were made (Reconciler.Unconfirmed); nil keeps none.
	Unconfirmed *Unconfirmed
	// Waves, when set, is the hosting cluster's RolloutWaves
	// (Reconciler.Waves), and its Source one of the controller's watches.
	Waves Waves
	// Freezes, when set, is the hosting cluster's RolloutFreezes
	// (Reconciler.Freezes), and its Source one of the controller's watches.
	Freezes Freezes
	// Notifier delivers the notifications of the policies'
	// spec.notifications (Reconciler.Notifier); nil gives each up.
	Notifier Notifier
	// Clock is the reconciler's clock (Reconciler.Clock); nil means the
	// real clock. The stager gives the same one to Waves.
	Clock clock.PassiveClock
}

// WatchedObjects are the kinds the controller reads in every space. A space
// must serve all of them before its controller starts.
func WatchedObjects() []client.Object {
	return []client.Object{
		&v1alpha1.StagedBindingPolicy{},
		&v1alpha1.StageApproval{},
		&ksv1alpha1.BindingPolicy{},
		&ksv1alpha1.Binding{},
		&ksv1alpha1.CombinedStatus{},
	}
}

// keyOrFresh returns key, or a fresh key for the zero one, whose seals
// anyone who can read a policy could forge: a controller never runs with it.
func keyOrFresh(key rollout.HandoverKey) (rollout.HandoverKey, error) {
	if !key.IsZero() {
		return key, nil
	}
	return rollout.NewHandoverKey()
}

// NewController returns the controller of one space: its own work queue and
// workers, fed by the space's own caches, which must have the indexes of
// IndexFields. It is not started.
func NewController(space string, cl cluster.Cluster, engine *expression.Engine, opts Options) (_ controller.Controller, err error) {
	if opts.HandoverKey, err = keyOrFresh(opts.HandoverKey); err != nil {
		return nil, fmt.Errorf("making the handover key of space %s: %w", space, err)
	}
	writer := cl.GetClient()
	if opts.FieldOwner != "" {
		writer = client.WithFieldOwner(writer, opts.FieldOwner)
	}
	recorder := cl.GetEventRecorder(ControllerName)
	var broadcaster events.EventBroadcaster
	if opts.EventQPS > 0 {
		if broadcaster, err = newEventBroadcaster(cl, opts.EventQPS, opts.EventBurst); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				broadcaster.Shutdown()
			}
		}()
		recorder = broadcaster.NewRecorder(cl.GetScheme(), ControllerName)
	}
	spaceMetrics := metrics.NewSpace(space)
	logger := opts.Logger.WithValues("space", space)
	poster, err := newPoster(cl, opts.EventQPS, opts.EventBurst, announce.Options{
		Controller: ControllerName, Clock: opts.Clock, Logger: logger,
		OnOutcome: func(reason, result string) { spaceMetrics.Announcement(result, reason) },
	})
	if err != nil {
		return nil, err
	}
	r := &Reconciler{
		Space:        space,
		Client:       writer,
		APIReader:    cl.GetAPIReader(),
		IndexedCache: true,
		Recorder:     recorder,
		Engine:       engine,
		Metrics:      spaceMetrics,
		Events:       poster,
		Measurer:     opts.Measurer,
		Fence:        opts.Fence,
		Unconfirmed:  opts.Unconfirmed,
		Waves:        opts.Waves,
		Freezes:      opts.Freezes,
		Notifier:     opts.Notifier,
		Clock:        opts.Clock,

		DeletionWarningAfter: opts.DeletionWarningAfter,
		HandoverKey:          opts.HandoverKey,
		// As many runs plan at once as the process has CPUs for.
		planning: newPlanGate(runtime.GOMAXPROCS(0)),
	}
	c, err := controller.NewUnmanaged(SpaceControllerName(space), controller.Options{
		Reconciler:              r,
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
		CacheSyncTimeout:        opts.CacheSyncTimeout,
		ReconciliationTimeout:   opts.ReconcileTimeout,
		SkipNameValidation:      ptr.To(true),
		LogConstructor: func(req *reconcile.Request) logr.Logger {
			if req == nil {
				return logger
			}
			return logger.WithValues("policy", req.Name)
		},
	})
	if err != nil {
		return nil, err
	}

	informers := cl.GetCache()
	reader := cl.GetClient()
	watches := []source.Source{
		source.Kind(informers, &v1alpha1.StagedBindingPolicy{}, policyEvents()),
		source.Kind(informers, &v1alpha1.StageApproval{}, handler.TypedEnqueueRequestsFromMapFunc(
			func(_ context.Context, a *v1alpha1.StageApproval) []reconcile.Request {
				return policyOf(a.Labels)
			})),
		source.Kind(informers, &ksv1alpha1.BindingPolicy{}, bindingPolicyEvents(), bindingPolicyUpdates()),
		source.Kind(informers, &ksv1alpha1.Binding{}, handler.TypedEnqueueRequestsFromMapFunc(
			func(ctx context.Context, b *ksv1alpha1.Binding) []reconcile.Request {
				return policyOfBindingPolicy(ctx, reader, b.Name)
			}), bindingUpdates()),
		source.Kind(informers, &ksv1alpha1.CombinedStatus{}, combinedStatusEvents(reader, opts.HandoverKey)),
	}
	if opts.Waves != nil {
		watches = append(watches, opts.Waves.Source(space))
	}
	if opts.Freezes != nil {
		watches = append(watches, opts.Freezes.Source(space, reader))
	}
	for _, w := range watches {
		if err := c.Watch(w); err != nil {
			return nil, err
		}
	}
	var served controller.Controller = withPolicyGauges{Controller: c, space: space, policies: metrics.CachedPolicies(informers)}
	return withEvents{Controller: served, broadcaster: broadcaster, poster: poster}, nil
}

// withPolicyGauges is a controller whose space's policy gauges are served,
// computed at every scrape from the space's cache, while it runs: a space
// not served (not ready, over its cache bound, disengaged) has none.
type withPolicyGauges struct {
	controller.Controller
	space    string
	policies metrics.PolicyLister
}

// Start serves the gauges, then runs the controller until ctx is done.
func (c withPolicyGauges) Start(ctx context.Context) error {
	defer metrics.ServePolicies(c.space, c.policies)()
	return c.Controller.Start(ctx)
}

// policyEvents enqueues a policy on its own events, except an update that
// changes only its status: the stager writes the status, and the run that
// wrote it goes on by itself to the change that follows (see
// maxStepsPerRun); a run for its own write would find the objects that
// change created missing from the cache, and make it again.
func policyEvents() handler.TypedEventHandler[*v1alpha1.StagedBindingPolicy, reconcile.Request] {
	enqueue := &handler.TypedEnqueueRequestForObject[*v1alpha1.StagedBindingPolicy]{}
	return handler.TypedFuncs[*v1alpha1.StagedBindingPolicy, reconcile.Request]{
		CreateFunc:  enqueue.Create,
		DeleteFunc:  enqueue.Delete,
		GenericFunc: enqueue.Generic,
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[*v1alpha1.StagedBindingPolicy], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if !statusOnly(e.ObjectOld, e.ObjectNew) {
				enqueue.Update(ctx, e, q)
			}
		},
	}
}

// bindingPolicyEvents queues the policy of a generated BindingPolicy on the
// BindingPolicy's creation and deletion at handler.LowPriority: those are
// the stager's own writes (a handover's create, whose run records the
// advance, and a previous stage's delete), and neither makes a placement
// sooner, while the runs that CombinedStatuses and Bindings queue hand
// stages over. When a space's policies advance together, the handovers go
// first and the records follow. Updates queue at the default priority:
// KubeStellar's note that it resolved the BindingPolicy
// (status.observedGeneration) is what a stage's assessment may wait for
// last. A policy queued already keeps the higher of its priorities.
func bindingPolicyEvents() handler.TypedEventHandler[*ksv1alpha1.BindingPolicy, reconcile.Request] {
	mapped := handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, bp *ksv1alpha1.BindingPolicy) []reconcile.Request {
		return policyOf(bp.Labels)
	})
	return handler.TypedFuncs[*ksv1alpha1.BindingPolicy, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[*ksv1alpha1.BindingPolicy], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, ptr.To(handler.LowPriority), policyOf(e.Object.Labels)...)
		},
		UpdateFunc: mapped.Update,
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[*ksv1alpha1.BindingPolicy], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, ptr.To(handler.LowPriority), policyOf(e.Object.Labels)...)
		},
		GenericFunc: mapped.Generic,
	}
}

// AssessmentPriority is the priority at which a CombinedStatus of the stage
// a rollout is in queues the rollout's policy: ahead of the default (0) and
// of handler.LowPriority.
const AssessmentPriority = 100

// combinedStatusEvents queues the policy whose BindingPolicy a
// CombinedStatus reports on. A CombinedStatus of the active stage of a
// rollout in progress, created or updated, queues the policy at
// AssessmentPriority: it is what may satisfy the stage's condition, and the
// run it queues hands the stage over. When a space's rollouts start and
// advance at once, the handovers go before the starts, the records and the
// runs that only say what a stage waits for; otherwise an advance waits for
// all of them (on 10 workers, seconds). The rest, and every deletion, queue
// at the default priority.
func combinedStatusEvents(reader client.Reader, key rollout.HandoverKey) handler.TypedEventHandler[*ksv1alpha1.CombinedStatus, reconcile.Request] {
	// queue queues the policy of cs: at AssessmentPriority when the event
	// changed cs and cs reports on the stage the rollout is in; otherwise
	// at the queue's default, which handler.TypedFuncs lowers to
	// handler.LowPriority for the cache's initial list and resyncs.
	queue := func(ctx context.Context, cs *ksv1alpha1.CombinedStatus, changed bool, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		bindingPolicy := cs.Labels[rollout.StatusLabelBindingPolicy]
		for _, req := range policyOfBindingPolicy(ctx, reader, bindingPolicy) {
			var priority *int
			if changed && assesses(ctx, reader, key, req, bindingPolicy) {
				priority = ptr.To(AssessmentPriority)
			}
			enqueue(q, priority, req)
		}
	}
	return handler.TypedFuncs[*ksv1alpha1.CombinedStatus, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[*ksv1alpha1.CombinedStatus], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			queue(ctx, e.Object, !e.IsInInitialList, q)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[*ksv1alpha1.CombinedStatus], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			queue(ctx, e.ObjectNew, e.ObjectOld.GetResourceVersion() != e.ObjectNew.GetResourceVersion(), q)
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[*ksv1alpha1.CombinedStatus], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			queue(ctx, e.Object, false, q)
		},
		GenericFunc: func(ctx context.Context, e event.TypedGenericEvent[*ksv1alpha1.CombinedStatus], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			queue(ctx, e.Object, false, q)
		},
	}
}

// assesses reports whether the policy of req is rolling out in the stage
// that bindingPolicy places, as the cache has it: its active stage (or one
// of its clusters, for a stage placed in batches), or the
// stage its active stage has handed over to (HandedOver under key) before the status
// records the advance. The record is queued at handler.LowPriority and
// trails the handover by seconds when many rollouts advance at once, while
// the next stage's CombinedStatus may come at once; the run it queues
// records the advance and, in the same run, assesses the next stage (see
// maxStepsPerRun), so the next stage's handover does not wait for the
// record's turn.
func assesses(ctx context.Context, reader client.Reader, key rollout.HandoverKey, req reconcile.Request, bindingPolicy string) bool {
	policy := &v1alpha1.StagedBindingPolicy{}
	if err := reader.Get(ctx, req.NamespacedName, policy); err != nil {
		return false
	}
	active, started, _ := rollout.ActiveStage(policy)
	if policy.Status.Phase != v1alpha1.RolloutProgressing || !started {
		return false
	}
	stage := policy.Spec.Stages[active]
	if v1alpha1.StagePlacement(policy.Name, stage.Name).At(policy.Status.UpdateRevision).String() == bindingPolicy {
		return true
	}
	if stage.Batched() {
		bp := &ksv1alpha1.BindingPolicy{}
		if err := reader.Get(ctx, types.NamespacedName{Name: bindingPolicy}, bp); err == nil && rollout.PlacesActiveCluster(policy, bp) {
			return true // it reports on a cluster of the stage
		}
	}
	if active+1 >= len(policy.Spec.Stages) ||
		v1alpha1.StagePlacement(policy.Name, policy.Spec.Stages[active+1].Name).At(policy.Status.UpdateRevision).String() != bindingPolicy {
		return false
	}
	next := &ksv1alpha1.BindingPolicy{}
	if err := reader.Get(ctx, types.NamespacedName{Name: bindingPolicy}, next); err != nil {
		return false
	}
	return key.HandedOver(policy, next, active)
}

// enqueue adds reqs to q at priority when q is a priority queue
// (controller-runtime's default), and plainly otherwise. A nil priority is the
// queue's default, which handler.TypedFuncs sets for the event.
func enqueue(q workqueue.TypedRateLimitingInterface[reconcile.Request], priority *int, reqs ...reconcile.Request) {
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	for _, req := range reqs {
		if ok {
			pq.AddWithOpts(priorityqueue.AddOpts{Priority: priority}, req)
		} else {
			q.Add(req)
		}
	}
}

// statusOnly reports whether an update of a policy changed nothing that
// Plan reads but its status: not its spec (generation), labels,
// annotations (restartedAt), owners, finalizers or deletion.
func statusOnly(old, new *v1alpha1.StagedBindingPolicy) bool {
	return sameMetadata(old, new) && slices.Equal(old.Finalizers, new.Finalizers)
}

// bindingPolicyUpdates passes the updates of a BindingPolicy that change
// what Plan reads (bindingPolicyChanged); creations and deletions pass.
func bindingPolicyUpdates() predicate.TypedPredicate[*ksv1alpha1.BindingPolicy] {
	return predicate.TypedFuncs[*ksv1alpha1.BindingPolicy]{UpdateFunc: func(e event.TypedUpdateEvent[*ksv1alpha1.BindingPolicy]) bool {
		return bindingPolicyChanged(e.ObjectOld, e.ObjectNew)
	}}
}

// bindingUpdates passes the updates of a Binding that change its spec or
// metadata (sameMetadata); Plan does not read a Binding's status (KubeStellar's
// transport controller writes it) or finalizers. Creations and deletions pass.
func bindingUpdates() predicate.TypedPredicate[*ksv1alpha1.Binding] {
	return predicate.TypedFuncs[*ksv1alpha1.Binding]{UpdateFunc: func(e event.TypedUpdateEvent[*ksv1alpha1.Binding]) bool {
		return !sameMetadata(e.ObjectOld, e.ObjectNew)
	}}
}

// bindingPolicyChanged reports whether an update of a BindingPolicy changed
// anything Plan reads: its spec (generation), labels, annotations
// (the handover's), owners, deletion or status (KubeStellar's resolution),
// or its finalizers while it is being deleted (they hold the deletion of
// its policy). KubeStellar's finalizer, added to every BindingPolicy it
// resolves, queues nothing.
func bindingPolicyChanged(old, new *ksv1alpha1.BindingPolicy) bool {
	return !sameMetadata(old, new) || !equality.Semantic.DeepEqual(&old.Status, &new.Status) ||
		(new.DeletionTimestamp != nil && !slices.Equal(old.Finalizers, new.Finalizers))
}

// sameMetadata reports whether two versions of an object have the same
// generation (spec), labels, annotations, owners and deletion timestamp.
func sameMetadata(old, new client.Object) bool {
	return old.GetGeneration() == new.GetGeneration() &&
		maps.Equal(old.GetLabels(), new.GetLabels()) &&
		maps.Equal(old.GetAnnotations(), new.GetAnnotations()) &&
		equality.Semantic.DeepEqual(old.GetOwnerReferences(), new.GetOwnerReferences()) &&
		old.GetDeletionTimestamp().Equal(new.GetDeletionTimestamp())
}

// policyOf maps the labels of a generated BindingPolicy or StageApproval to its policy.
func policyOf(labels map[string]string) []reconcile.Request {
	name := labels[v1alpha1.PolicyLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
}

// policyOfBindingPolicy maps an object named after a BindingPolicy (a Binding,
// or a CombinedStatus through its label) to the policy that generated it.
func policyOfBindingPolicy(ctx context.Context, reader client.Reader, bindingPolicy string) []reconcile.Request {
	if bindingPolicy == "" {
		return nil
	}
	bp := &ksv1alpha1.BindingPolicy{}
	if err := reader.Get(ctx, types.NamespacedName{Name: bindingPolicy}, bp); err != nil {
		if !apierrors.IsNotFound(err) {
			// This event is lost; the policy's periodic requeue catches up.
			log.FromContext(ctx).Error(err, "Cannot map an object to its policy", "bindingPolicy", bindingPolicy)
		}
		return nil
	}
	return policyOf(bp.Labels)
}
