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

// Package spaces runs one independent controller per engaged space.
//
// A multicluster-runtime provider engages a space (a WDS) by handing over a
// cluster.Cluster. The Runner then checks that the space serves the APIs the
// controller needs, warms the space's caches and starts a controller with its
// own work queue and workers for that space alone. A space that lacks the
// APIs, or whose API server is down, is reported as not ready and retried with
// backoff; it never holds up the other spaces. When the provider disengages a
// space, its controller stops and its record goes away.
package spaces

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// State is what the Runner knows about one space.
type State struct {
	// Name is the space's name as the provider gave it.
	Name string
	// Ready is true when the space serves every required API, its caches are
	// synced and its API server answered the last probe.
	Ready bool
	// Reason says in one word why the space is not ready.
	Reason string
	// Message says it in words.
	Message string
	// Since is when Ready last changed.
	Since time.Time
}

// Reasons a space is not ready.
const (
	// ReasonStarting means the space was just engaged.
	ReasonStarting = "Starting"
	// ReasonMissingAPIs means the space does not serve a required API (for
	// example, KubeStellar's CRDs are not installed).
	ReasonMissingAPIs = "MissingAPIs"
	// ReasonUnreachable means the space's API server did not answer.
	ReasonUnreachable = "Unreachable"
	// ReasonCacheNotSynced means the space's caches did not sync in time.
	ReasonCacheNotSynced = "CacheNotSynced"
	// ReasonReady is the reason of a ready space.
	ReasonReady = "Ready"
	// ReasonCacheOverLimit means the space's cache went over
	// Options.MaxCacheBytes: its controller and informers are stopped
	// until a later attempt finds it under the bound.
	ReasonCacheOverLimit = "CacheOverLimit"
)

// EventReasonCacheOverLimit is the reason of the Warning Event posted in a
// space whose cache went over its bound.
const EventReasonCacheOverLimit = "SpaceCacheOverLimit"

// ControllerFactory builds the controller of one space. The returned runnable
// is started once the space's caches are synced and stopped when the space is
// disengaged.
type ControllerFactory func(space string, cl cluster.Cluster) (manager.Runnable, error)

// Options configure a Runner.
type Options struct {
	// Required are the kinds a space must serve before its controller starts.
	Required []client.Object
	// NewController builds the controller of a space.
	NewController ControllerFactory
	// IndexFields, when set, adds the controller's indexes to the cache of a
	// space, unless the cache has them: before each start of the space's
	// controller, after the space is found to serve the Required kinds (so
	// that a space without them is reported, not refused by its cache). A
	// cache may serve one engagement after another, so IndexFields must
	// leave a cache that has the indexes as it is.
	IndexFields func(ctx context.Context, c cache.Cache) error
	// ProbeInterval is how often a space's API server is probed. Default 15s.
	ProbeInterval time.Duration
	// CacheSyncTimeout bounds the wait for a space's caches. Default 2m.
	CacheSyncTimeout time.Duration
	// RetryBackoff spaces out the attempts to start a space that is not ready.
	// Default: 1s doubling up to 1m.
	RetryBackoff *wait.Backoff
	// NewCluster, when set, builds a fresh cluster of a space (from the
	// provider's, cl) to serve it from once it answers again after an
	// outage, when the provider's caches may lag behind for as long as
	// client-go's watch backoff. It may return nil to keep the provider's.
	NewCluster func(space string, cl cluster.Cluster) (cluster.Cluster, error)
	// OnChange, when set, is called with a space's new state whenever it
	// changes, and with Ready=false and Reason "Disengaged" when it goes away.
	// Calls are serialised, in the order of the changes; OnChange must not
	// call the Runner.
	OnChange func(State)
	// Replica names this replica: the stager_space_owner series of the
	// spaces it serves carry it.
	Replica string
	// MaxCacheBytes bounds what a space's cache may hold of the Required
	// kinds, by cacheCost. Past it, the space's controller stops, its
	// informers of the Required kinds are removed (and with them what they
	// held), the space is reported not ready (ReasonCacheOverLimit) with a
	// Warning Event in the space, and it is tried again after
	// OverLimitBackoff. A space whose caches its provider shares
	// (SharedCache) has its objects refused there instead, and is tried
	// again on a cluster of its own (NewCluster). Zero bounds nothing.
	MaxCacheBytes int64
	// OverLimitBackoff spaces out the attempts to serve a space whose cache
	// went over MaxCacheBytes: each attempt lists the space's objects
	// again. Default: 1m doubling up to 30m.
	OverLimitBackoff *wait.Backoff
	// Quiet, when set, waits until no write to the space by a controller
	// the Runner ran before may still land, or until ctx ends; it
	// returns an error when it gave up waiting. Nil (an unsharded
	// replica, whose writes are not counted) waits for nothing.
	Quiet func(ctx context.Context, space string) error
	// Logger is the base logger.
	Logger logr.Logger
}

// SharedCache is the cluster of a space whose caches its provider shares
// with other spaces (kcp's), which no informer of the space alone can be
// removed from. Past MaxCacheBytes the Runner has them refuse the space's
// objects, and serves the space, if at all, from a cluster of its own
// (Options.NewCluster).
type SharedCache interface {
	// RefuseCache makes the shared caches refuse the space's objects (and
	// the cluster every read of them) from now on.
	RefuseCache()
	// CacheRefused reports whether they do.
	CacheRefused() bool
}

// CacheRefused reports whether cl's caches are shared and refuse its space's objects.
func CacheRefused(cl cluster.Cluster) bool {
	sc, ok := cl.(SharedCache)
	return ok && sc.CacheRefused()
}

// ReasonDisengaged is reported to OnChange when a space goes away.
const ReasonDisengaged = "Disengaged"

// Runner engages spaces and runs one controller per space. It implements
// multicluster-runtime's Runnable: add it to the multicluster manager, which
// calls Engage for every space its provider finds. Controllers run only while
// the Runner itself runs (that is, once this replica is the leader).
type Runner struct {
	opts Options

	// reportMu serialises the reports of state changes (metrics, OnChange)
	// with the changes of records they report, so that a space engaged again
	// is never last reported gone. It is taken before mu.
	reportMu sync.Mutex

	mu     sync.Mutex
	spaces map[multicluster.ClusterName]*engagement
	// running counts the controllers running per space, replaced ones included.
	running map[multicluster.ClusterName]int
	// stopped is set once Start has returned: no controller starts again.
	stopped bool
	// stopping is cancelled when Start's context is done; it stops every
	// controller of the Runner.
	stopping context.Context
	// serving counts the engagements that run (or may start) controllers;
	// Start waits for them before it returns.
	serving sync.WaitGroup
	started chan struct{}
	once    sync.Once

	// probesMu guards endpoints and the subscribers of every probe.
	probesMu sync.Mutex
	// endpoints are the probes of the shared endpoints that have a space
	// running its controller, by ProbeEndpoint.
	endpoints map[string]*endpointProbe
}

// engagement is one engaged cluster under a space's name. A later engagement
// under the same name (a rotated kubeconfig Secret, say) replaces it.
type engagement struct {
	state   State
	cluster cluster.Cluster
	ctx     context.Context
	cancel  context.CancelFunc
	// done is closed once the engagement's controller has stopped.
	done chan struct{}
}

// New returns a Runner.
func New(opts Options) (*Runner, error) {
	if opts.NewController == nil {
		return nil, errors.New("spaces: NewController is required")
	}
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = 15 * time.Second
	}
	if opts.CacheSyncTimeout <= 0 {
		opts.CacheSyncTimeout = 2 * time.Minute
	}
	if opts.RetryBackoff == nil {
		opts.RetryBackoff = &wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 1 << 30, Cap: time.Minute}
	}
	if opts.OverLimitBackoff == nil {
		opts.OverLimitBackoff = &wait.Backoff{Duration: time.Minute, Factor: 2, Jitter: 0.1, Steps: 1 << 30, Cap: 30 * time.Minute}
	}
	return &Runner{
		opts:      opts,
		spaces:    map[multicluster.ClusterName]*engagement{},
		running:   map[multicluster.ClusterName]int{},
		started:   make(chan struct{}),
		endpoints: map[string]*endpointProbe{},
	}, nil
}

// Start marks the Runner as running, so that engaged spaces start their
// controllers, and blocks until ctx is done. It then stops every controller
// and returns once they have all stopped, so that a replica that loses or
// releases its lease no longer serves any space.
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	r.stopping = ctx
	r.mu.Unlock()
	r.once.Do(func() { close(r.started) })
	<-ctx.Done()
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	r.serving.Wait()
	return nil
}

// Started reports whether the Runner runs, that is whether this replica
// serves its spaces.
func (r *Runner) Started() bool {
	select {
	case <-r.started:
		return true
	default:
		return false
	}
}

// NeedLeaderElection makes the Runner, and so every space's controller, run
// only on the elected replica.
func (r *Runner) NeedLeaderElection() bool { return true }

// Engage starts serving a space. It returns once any earlier engagement
// under the same name has stopped; the space is started in the background and
// stopped when ctx is done.
//
// Engaging the cluster already served under the name does nothing. Engaging
// another cluster under a served name (the provider rebuilt it, for example
// from a rotated kubeconfig Secret) replaces the served one: the new
// engagement owns the name at once, the old controller is stopped and waited
// for, and only then does the new one start, so that there is always exactly
// one record and at most one controller per space.
func (r *Runner) Engage(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	ctx, cancel := context.WithCancel(ctx)
	e := &engagement{
		state:   State{Name: string(name), Reason: ReasonStarting, Message: "engaged", Since: time.Now()},
		cluster: cl,
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
	}
	r.mu.Lock()
	old, replacing := r.spaces[name]
	if replacing && old.cluster == cl && old.ctx.Err() == nil {
		r.mu.Unlock()
		cancel()
		return nil
	}
	r.spaces[name] = e
	r.mu.Unlock()

	if replacing {
		r.opts.Logger.Info("Space engaged again with a new cluster; replacing the served one", "space", name)
		old.cancel()
		<-old.done
	}
	r.notify(name)
	go r.serve(e, name)
	return nil
}

// Spaces returns the state of every engaged space, sorted by name.
func (r *Runner) Spaces() []State {
	r.mu.Lock()
	defer r.mu.Unlock()
	states := make([]State, 0, len(r.spaces))
	for _, e := range r.spaces {
		states = append(states, e.state)
	}
	sort.Slice(states, func(i, j int) bool { return states[i].Name < states[j].Name })
	return states
}

// Controllers returns how many controllers run for the space: 1 while it is
// served, 0 while it is not ready or not engaged, and never more.
func (r *Runner) Controllers(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running[multicluster.ClusterName(name)]
}

// countController adds delta to the space's count of running controllers.
func (r *Runner) countController(name multicluster.ClusterName, delta int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running[name] += delta
	if r.running[name] == 0 {
		delete(r.running, name)
	}
}

// serve runs one engagement of a space until its context is done. Its record
// goes away with it, unless a later engagement replaced it.
func (r *Runner) serve(e *engagement, name multicluster.ClusterName) {
	ctx, cl := e.ctx, e.cluster
	logger := r.opts.Logger.WithValues("space", name)
	defer func() {
		defer close(e.done)
		r.reportMu.Lock()
		defer r.reportMu.Unlock()
		r.mu.Lock()
		current := r.spaces[name] == e
		if current {
			delete(r.spaces, name)
		}
		r.mu.Unlock()
		if !current {
			logger.Info("Space's replaced engagement stopped")
			return
		}
		r.changed(State{Name: string(name), Reason: ReasonDisengaged, Since: time.Now()})
		logger.Info("Space disengaged")
	}()

	select {
	case <-r.started:
	case <-ctx.Done():
		return
	}
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	r.serving.Add(1)
	stopping := r.stopping
	r.mu.Unlock()
	defer r.serving.Done()
	// The engagement runs until it is disengaged or the Runner stops.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(stopping, stop)()

	var probe *prober
	// serving is the cluster whose caches feed the controller: the
	// provider's, until an outage leaves them stale.
	serving, stopServing := cl, context.CancelFunc(func() {})
	defer func() { stopServing() }()
	backoff, overBackoff := *r.opts.RetryBackoff, *r.opts.OverLimitBackoff
	for ctx.Err() == nil {
		// A controller of the space may have run before: the one this
		// engagement replaced, or this engagement's own.
		if !r.awaitQuiet(ctx, name, logger) {
			return
		}
		reason, err := ReasonUnreachable, error(nil)
		if probe == nil {
			probe, err = newProber(cl)
		}
		if err == nil && CacheRefused(serving) {
			// The shared caches refuse the space's objects: serve it
			// from caches of its own, or not at all.
			var fresh cluster.Cluster
			var stopFresh context.CancelFunc
			if fresh, stopFresh, err = r.freshCluster(ctx, name, cl); err == nil {
				stopServing()
				serving, stopServing = fresh, stopFresh
				if CacheRefused(serving) {
					reason, err = ReasonCacheOverLimit, errors.New("the caches shared with other spaces refuse the space's objects, and it has no caches of its own")
				}
			}
		}
		var attempt *meteredAttempt
		ran := false
		if err == nil {
			attempt = r.meter(ctx, name, serving)
			reason, err = r.prepare(attempt.ctx, probe, serving, attempt)
			if err == nil {
				ran = true
				err = r.runController(attempt.ctx, e, serving, probe, logger)
			}
		}
		if attempt != nil {
			held, over := attempt.end()
			if over && ctx.Err() == nil {
				delay := overBackoff.Step()
				r.overLimit(e, serving, held, delay, logger)
				select {
				case <-ctx.Done():
					return
				case <-time.After(delay):
				}
				continue
			}
			if ran && !over {
				overBackoff = *r.opts.OverLimitBackoff
			}
		}
		if ran {
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, errRecovered) {
				// Before the fresh caches list the space, so that they
				// show what the controller before wrote.
				if !r.awaitQuiet(ctx, name, logger) {
					return
				}
				fresh, stopFresh, freshErr := r.freshCluster(ctx, name, cl)
				if freshErr == nil {
					stopServing()
					serving, stopServing = fresh, stopFresh
					backoff = *r.opts.RetryBackoff
					r.setState(e, false, ReasonStarting, "the API server answers again; restarting the controller on fresh caches")
					logger.Info("Space answers again; restarting its controller on fresh caches")
					continue
				}
				err = freshErr
			}
			reason = ReasonUnreachable
			if err == nil {
				err = errors.New("controller stopped")
			}
		}
		r.setState(e, false, reason, err.Error())
		delay := backoff.Step()
		logger.Info("Space is not ready; retrying", "reason", reason, "message", err.Error(), "retryIn", delay.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// awaitQuiet waits, through Options.Quiet, until no write to the space by
// a controller that ran before may still land, so that the next one does
// not plan on caches that miss it (its writes would conflict, its Events
// repeat). It returns false once ctx ends. A wait given up (Quiet bounds
// it) is logged, and the controller started all the same.
func (r *Runner) awaitQuiet(ctx context.Context, name multicluster.ClusterName, logger logr.Logger) bool {
	if r.opts.Quiet == nil {
		return true
	}
	err := r.opts.Quiet(ctx, string(name))
	if ctx.Err() != nil {
		return false
	}
	if err != nil {
		logger.Error(err, "Starting the space's controller while writes of the one before may still land")
	}
	return true
}

// errRecovered ends a controller's run when its space's API server answers
// again after an outage.
var errRecovered = errors.New("the API server answers again after an outage")

// freshCluster returns the cluster to serve a space from after an outage:
// a new one built by Options.NewCluster, started and stopped with the
// returned function, or the provider's own cluster when there is none.
func (r *Runner) freshCluster(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) (cluster.Cluster, context.CancelFunc, error) {
	if r.opts.NewCluster == nil {
		return cl, func() {}, nil
	}
	fresh, err := r.opts.NewCluster(string(name), cl)
	if err != nil {
		return nil, nil, fmt.Errorf("building fresh caches: %w", err)
	}
	if fresh == nil {
		return cl, func() {}, nil
	}
	freshCtx, cancel := context.WithCancel(ctx)
	go func() {
		if err := fresh.Start(freshCtx); err != nil && freshCtx.Err() == nil {
			r.opts.Logger.Error(err, "Fresh caches of the space stopped", "space", name)
		}
	}()
	return fresh, cancel, nil
}

// prepare checks that the space serves the required APIs, adds the
// controller's indexes to its cache, has the attempt meter its informers,
// and warms its caches.
func (r *Runner) prepare(ctx context.Context, probe *prober, cl cluster.Cluster, attempt *meteredAttempt) (string, error) {
	missing, err := probe.missing(ctx, r.opts.Required, cl)
	if err != nil {
		return ReasonUnreachable, err
	}
	if len(missing) > 0 {
		return ReasonMissingAPIs, fmt.Errorf("the space does not serve %s", strings.Join(missing, ", "))
	}
	if r.opts.IndexFields != nil {
		if err := r.opts.IndexFields(ctx, cl.GetCache()); err != nil {
			return ReasonCacheNotSynced, fmt.Errorf("indexing the caches: %w", err)
		}
	}
	for _, obj := range r.opts.Required {
		if err := attempt.watch(ctx, cl.GetCache(), obj); err != nil {
			return ReasonCacheNotSynced, err
		}
	}
	syncCtx, cancel := context.WithTimeout(ctx, r.opts.CacheSyncTimeout)
	defer cancel()
	for _, obj := range r.opts.Required {
		if _, err := cl.GetCache().GetInformer(syncCtx, obj); err != nil {
			return ReasonCacheNotSynced, fmt.Errorf("warming the cache of %T: %w", obj, err)
		}
	}
	return "", nil
}

// meteredAttempt is one attempt to serve a space: its context, ended
// with errCacheOverLimit when its meter goes over Options.MaxCacheBytes,
// and the meter's handlers on the space's informers.
type meteredAttempt struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	// meter is nil when the space is not metered.
	meter *cacheMeter
	regs  []meterRegistration
}

// meterRegistration is a meter's handler on an informer.
type meterRegistration struct {
	informer cache.Informer
	reg      toolscache.ResourceEventHandlerRegistration
}

// meter starts an attempt to serve the space name from cl: metered when
// MaxCacheBytes is set. Past the bound, shared caches refuse the space's
// objects at once, before its controller has stopped, so that what they
// hold of it stops growing.
func (r *Runner) meter(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) *meteredAttempt {
	actx, cancel := context.WithCancelCause(ctx)
	a := &meteredAttempt{ctx: actx, cancel: cancel}
	if r.opts.MaxCacheBytes > 0 {
		a.meter = newCacheMeter(r.opts.MaxCacheBytes,
			func(int64) {
				if sc, ok := cl.(SharedCache); ok {
					sc.RefuseCache()
				}
				cancel(errCacheOverLimit)
			},
			func(held int64) { spaceCacheBytes.WithLabelValues(string(name)).Set(float64(held)) })
		spaceCacheBytes.WithLabelValues(string(name)).Set(0)
	}
	return a
}

// watch adds the attempt's meter to c's informer of obj, before the
// informer has synced: the meter counts its objects as they arrive.
func (a *meteredAttempt) watch(ctx context.Context, c cache.Cache, obj client.Object) error {
	if a.meter == nil {
		return nil
	}
	informer, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("watching the cache of %T: %w", obj, err)
	}
	reg, err := informer.AddEventHandler(a.meter.handler(fmt.Sprintf("%T", obj)))
	if err != nil {
		return fmt.Errorf("metering the cache of %T: %w", obj, err)
	}
	a.regs = append(a.regs, meterRegistration{informer: informer, reg: reg})
	return nil
}

// end ends the attempt, removing its meter from the informers, and returns
// what the meter counted and whether it went over the bound.
func (a *meteredAttempt) end() (held int64, over bool) {
	over = errors.Is(context.Cause(a.ctx), errCacheOverLimit)
	a.cancel(context.Canceled)
	if a.meter == nil {
		return 0, over
	}
	for _, r := range a.regs {
		_ = r.informer.RemoveEventHandler(r.reg)
	}
	return a.meter.stop(), over
}

// overLimit stops serving a space whose cache went over MaxCacheBytes:
// the controller has stopped; its informers of the Required kinds are
// removed, with what they held (shared caches refuse the space's objects
// instead), and the space is reported (state, metric, a Warning Event in
// the space and a log line) until the attempt after retryIn.
func (r *Runner) overLimit(e *engagement, cl cluster.Cluster, held int64, retryIn time.Duration, logger logr.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.ProbeInterval)
	defer cancel()
	for _, obj := range r.opts.Required {
		if sc, ok := cl.(SharedCache); ok {
			sc.RefuseCache()
			break
		}
		if err := cl.GetCache().RemoveInformer(ctx, obj); err != nil {
			logger.Error(err, "Cannot stop an informer of a space over its cache bound", "kind", fmt.Sprintf("%T", obj))
		}
	}
	spaceCacheBytes.WithLabelValues(e.state.Name).Set(0)
	msg := overLimitMessage(held, r.opts.MaxCacheBytes)
	r.setState(e, false, ReasonCacheOverLimit, msg)
	logger.Error(errCacheOverLimit, "Space is not served: its cache went over its bound", "held", held,
		"limit", r.opts.MaxCacheBytes, "retryIn", retryIn.Round(time.Second))
	// Cluster-scoped, the Event goes to the namespace default, where
	// the space's users look for Events of no namespace of theirs.
	regarding := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespaceDefault}}
	cl.GetEventRecorder(EventRecorderName).Eventf(regarding, nil, corev1.EventTypeWarning, EventReasonCacheOverLimit, "Disengage",
		"%s; retried in %s", msg, retryIn.Round(time.Second))
}

// EventRecorderName is the name the Runner posts its Events in a space under.
const EventRecorderName = "workload-stager-spaces"

// runController runs the space's controller and probes the space until the
// controller stops or ctx is done.
func (r *Runner) runController(ctx context.Context, e *engagement, cl cluster.Cluster, probe *prober, logger logr.Logger) error {
	ctrl, err := r.opts.NewController(e.state.Name, cl)
	if err != nil {
		return fmt.Errorf("building the controller: %w", err)
	}
	ctrlCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	name := multicluster.ClusterName(e.state.Name)
	r.countController(name, 1)
	go func() {
		err := ctrl.Start(ctrlCtx)
		r.countController(name, -1)
		done <- err
	}()

	r.setState(e, true, ReasonReady, "serving")
	logger.Info("Space is ready; controller started")

	stopped, err := r.probeUntilDone(ctx, e, probe, done, logger)
	if stopped {
		return err
	}
	cancel()
	if stopErr := <-done; err == nil {
		err = stopErr
	}
	return err
}

// probeUntilDone has the space probed until ctx is done (nil), the
// controller stops (stopped, with its error), or the space answers again
// after an outage (errRecovered): its caches may then lag behind for as long
// as client-go's watch backoff, up to a minute, so the controller is better
// restarted on fresh ones. The space is probed with the other spaces of its
// endpoint, if it shares one (SharedEndpoint).
func (r *Runner) probeUntilDone(ctx context.Context, e *engagement, probe *prober, done <-chan error, logger logr.Logger) (stopped bool, err error) {
	sub := &probeSubscriber{runner: r, e: e, probe: probe, logger: logger, recovered: make(chan struct{}, 1)}
	defer r.subscribe(endpointOf(e.cluster), sub)()
	select {
	case <-ctx.Done():
		return false, nil
	case err := <-done:
		return true, err
	case <-sub.recovered:
		return false, errRecovered
	}
}

// outageProbeInterval is how often a space that does not answer is probed,
// when ProbeInterval is longer.
const outageProbeInterval = 2 * time.Second

// setState records a space's state, unless the engagement no longer owns the
// space's name (it was disengaged or replaced).
func (r *Runner) setState(e *engagement, ready bool, reason, message string) {
	name := multicluster.ClusterName(e.state.Name)
	r.mu.Lock()
	if r.spaces[name] != e {
		r.mu.Unlock()
		return
	}
	s := &e.state
	changed := s.Ready != ready || s.Reason != reason || s.Message != message
	if s.Ready != ready {
		s.Since = time.Now()
	}
	s.Ready, s.Reason, s.Message = ready, reason, message
	r.mu.Unlock()
	if changed {
		r.notify(name)
	}
}

// notify reports the current state of a space, if it is engaged.
func (r *Runner) notify(name multicluster.ClusterName) {
	r.reportMu.Lock()
	defer r.reportMu.Unlock()
	r.mu.Lock()
	e, ok := r.spaces[name]
	var state State
	if ok {
		state = e.state
	}
	r.mu.Unlock()
	if ok {
		r.changed(state)
	}
}

// changed records a space's new state in the Runner's metrics and passes it
// to OnChange. Its callers hold reportMu.
func (r *Runner) changed(state State) {
	recordState(state, r.opts.Replica)
	if r.opts.OnChange != nil {
		r.opts.OnChange(state)
	}
}

// prober asks a space's API server, bypassing every cache, whether it answers
// and which APIs it serves.
type prober struct {
	discovery discovery.DiscoveryInterface
	// noReadyz is set once the server answered that it has no /readyz:
	// its later probes ask discovery at once, one request, not two.
	noReadyz atomic.Bool
}

func newProber(cl cluster.Cluster) (*prober, error) {
	d, err := discovery.NewDiscoveryClientForConfig(cl.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("building a discovery client: %w", err)
	}
	return &prober{discovery: d}, nil
}

// alive returns an error when the API server does not answer, or answers
// that it is not ready. Servers without /readyz, as kcp's virtual
// workspaces, are alive when they answer discovery.
func (p *prober) alive(ctx context.Context) error {
	var err error
	if !p.noReadyz.Load() {
		err = p.discovery.RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
		p.noReadyz.Store(apierrors.IsNotFound(err))
	}
	if p.noReadyz.Load() {
		err = p.discovery.RESTClient().Get().AbsPath("/apis").Do(ctx).Error()
	}
	if err != nil {
		return fmt.Errorf("probing the API server: %w", err)
	}
	return nil
}

// missing lists the required kinds the space does not serve.
func (p *prober) missing(ctx context.Context, required []client.Object, cl cluster.Cluster) ([]string, error) {
	if err := p.alive(ctx); err != nil {
		return nil, err
	}
	var missing []string
	served := map[schema.GroupVersion][]string{}
	for _, obj := range required {
		gvk, err := apiutil.GVKForObject(obj, cl.GetScheme())
		if err != nil {
			return nil, err
		}
		gv := gvk.GroupVersion()
		kinds, ok := served[gv]
		if !ok {
			list, err := p.discovery.ServerResourcesForGroupVersion(gv.String())
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("discovering %s: %w", gv, err)
			}
			kinds = []string{}
			if list != nil {
				for _, res := range list.APIResources {
					kinds = append(kinds, res.Kind)
				}
			}
			served[gv] = kinds
		}
		if !slices.Contains(kinds, gvk.Kind) {
			missing = append(missing, gvk.GroupKind().String())
		}
	}
	return missing, nil
}
