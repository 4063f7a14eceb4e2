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

package wave

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/controller/hostingwatch"
	wavegate "github.com/kubestellar/workload-stager/internal/wave"
)

// FieldManagerPrefix starts the field manager of every space's report.
const FieldManagerPrefix = "stager-wave-"

// FieldManager is the field manager under which a space's entry of a
// wave's status is applied: the space's, not the replica's, so that a
// replica taking a space over replaces the entry the previous one left
// instead of leaving a second beside it. The hash keeps it short whatever
// the space's name (field managers are at most 128 bytes).
func FieldManager(space string) string {
	sum := sha256.Sum256([]byte(space))
	return FieldManagerPrefix + hex.EncodeToString(sum[:8])
}

// Fence bounds a sharded replica's writes for a space by its tenure of the
// space's fence (sharding.Tenure), as stagedbindingpolicy.Fence does for
// the writes to the space itself: a replica that may have lost the space
// writes nothing of it, so two replicas never report one space at once.
type Fence interface {
	// Hold starts one write at now. It returns the write's context, which
	// ends by the tenure's end, and the function to call with the write's
	// result; or an error once the tenure has ended.
	Hold(ctx context.Context, now time.Time) (context.Context, func(error), error)
}

// DefaultWriteTimeout bounds each apply of a report when
// Reporter.WriteTimeout is not set.
const DefaultWriteTimeout = 10 * time.Second

// Retry bounds: a failed apply or read is tried again after retryMin,
// doubling up to retryMax, or sooner on a change.
const (
	retryMin = time.Second
	retryMax = 30 * time.Second
)

// Reporter applies, for each space this replica serves, the space's entry
// into the status of every RolloutWave that names the space in a step:
// engaged, a heartbeat, and per policy the wave orders that exists in the
// space, wave.Report of it. It applies again when a report changes (an
// ordered policy's phase or revisions, the wave's spec), every third of
// the wave's reportStaleAfter as a heartbeat, and once with engaged false
// when the space is let go. Its zero value is not usable: set Client,
// Waves and Clock.
type Reporter struct {
	// Client writes the waves' status in the hosting cluster.
	Client client.Client
	// Waves reads the hosting cluster's RolloutWaves; its informer of them
	// wakes the reports.
	Waves cache.Cache
	// Clock gives every time a report carries and waits for.
	Clock clock.WithTicker
	// Log is the base logger; the space's name is added to it.
	Log logr.Logger
	// WriteTimeout bounds each apply, the last one (engaged false) among
	// them; zero means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// ReadTimeout bounds each report's reads of the waves and of the
	// space's policies; zero means DefaultReadTimeout.
	ReadTimeout time.Duration
	// Observe, when set, is called after each attempt to apply a space's
	// entry of a wave, with its error (nil once applied): tests wait on it.
	Observe func(space, wave string, err error)

	mu sync.Mutex
	// served are the spaces Serve reports, by name.
	served map[string]*servedSpace
	// unreachable are the spaces whose API server does not answer.
	unreachable map[string]bool
}

// SetReachable records whether space's API server answers (the space
// Runner's probe): while it does not, the space is reported with engaged
// false, at once, though its controller and Serve go on until it answers
// again, since the policies its cache holds may no longer be what the
// space says. Spaces start reachable.
func (r *Reporter) SetReachable(space string, reachable bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unreachable == nil {
		r.unreachable = map[string]bool{}
	}
	if reachable == !r.unreachable[space] {
		return
	}
	if reachable {
		delete(r.unreachable, space)
	} else {
		r.unreachable[space] = true
	}
	if s := r.served[space]; s != nil {
		s.poke()
	}
}

// readTimeout is ReadTimeout, or DefaultReadTimeout when it is not set.
func (r *Reporter) readTimeout() time.Duration {
	if r.ReadTimeout <= 0 {
		return DefaultReadTimeout
	}
	return r.ReadTimeout
}

// reachable reports whether space's API server answers, as last set.
func (r *Reporter) reachable(space string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.unreachable[space]
}

// register makes s the served space of its name until the returned
// function is called.
func (r *Reporter) register(s *servedSpace) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.served == nil {
		r.served = map[string]*servedSpace{}
	}
	r.served[s.space] = s
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.served[s.space] == s {
			delete(r.served, s.space)
		}
	}
}

// Alongside returns a runnable that runs ctrl, the controller of space,
// and, while it runs, Serve for the space; a failure of Serve is logged
// and leaves the controller running (the space's later steps then hold,
// as for a space that does not report).
func (r *Reporter) Alongside(space string, policies cache.Cache, fence Fence, ctrl manager.Runnable) manager.Runnable {
	return alongside{r: r, space: space, policies: policies, fence: fence, ctrl: ctrl}
}

// alongside runs a space's controller and its report.
type alongside struct {
	r        *Reporter
	space    string
	policies cache.Cache
	fence    Fence
	ctrl     manager.Runnable
}

// Start runs the controller until it returns, and the report until then.
func (a alongside) Start(ctx context.Context) error {
	serveCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := a.r.Serve(serveCtx, a.space, a.policies, a.fence); err != nil {
			a.r.Log.Error(err, "The space is not reported to its waves", "space", a.space)
		}
	}()
	err := a.ctrl.Start(ctx)
	cancel()
	<-done
	return err
}

// Serve reports space, whose StagedBindingPolicies policies holds (the
// space's cache), until ctx is done; then it applies engaged false into
// the waves it reported to, within the fence if one is given (nil: no
// fence, as with one replica), and returns. Errors of reads and writes are
// logged and retried; only a failure to watch ends Serve early.
func (r *Reporter) Serve(ctx context.Context, space string, policies cache.Cache, fence Fence) error {
	s := &servedSpace{
		r: r, space: space, policies: policies, fence: fence,
		log:  r.Log.WithValues("space", space),
		wake: make(chan struct{}, 1),
		last: map[string]*report{},
		seen: map[string][]string{},
	}
	s.ordered.Store(&map[string]bool{})
	defer r.register(s)()
	// No wave can exist until the kind is installed: nothing to report.
	waves, err := hostingwatch.Informer(ctx, r.Waves, &hostingv1alpha1.RolloutWave{}, r.Clock, retryMax, func() {
		s.log.Info("The hosting cluster has no RolloutWave kind; the space is reported to no wave until it has")
	})
	if err != nil {
		return fmt.Errorf("watching the RolloutWaves for space %s: %w", space, err)
	}
	if waves == nil {
		return nil
	}
	waveReg, err := waves.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.poke() },
		UpdateFunc: s.waveUpdated,
		DeleteFunc: func(any) { s.poke() },
	})
	if err != nil {
		return fmt.Errorf("watching the RolloutWaves for space %s: %w", space, err)
	}
	defer func() { _ = waves.RemoveEventHandler(waveReg) }()
	informer, err := policies.GetInformer(ctx, &v1alpha1.StagedBindingPolicy{}, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("watching the policies of space %s: %w", space, err)
	}
	policyReg, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.policyChanged(nil, obj) },
		UpdateFunc: s.policyChanged,
		DeleteFunc: func(any) { s.poke() },
	})
	if err != nil {
		return fmt.Errorf("watching the policies of space %s: %w", space, err)
	}
	defer func() { _ = informer.RemoveEventHandler(policyReg) }()

	s.run(ctx)
	s.disengage()
	return nil
}

// report is what this replica last applied of a space into one wave.
type report struct {
	entry hostingv1alpha1.WaveSpaceReport
	// beat is when, by the Reporter's clock, it was applied.
	beat time.Time
}

// servedSpace is one space as Serve reports it.
type servedSpace struct {
	r        *Reporter
	space    string
	policies cache.Cache
	fence    Fence
	log      logr.Logger
	// wake, of capacity one, coalesces the changes that ask for a report.
	wake chan struct{}
	// ordered is the set of policy names the waves naming the space order,
	// as of the last report: the policy handler ignores the others.
	ordered atomic.Pointer[map[string]bool]

	// last is what was applied per wave; only run and disengage touch it.
	last map[string]*report

	// readErrors counts the failed reads of the waves for the space
	// (stager_wave_read_errors_total, metrics.go).
	readErrors atomic.Uint64

	mu sync.Mutex
	// seen are the revisions each ordered policy was seen given up at
	// (Aborted or Stalled), by the policy handler, which sees every
	// update: a policy Stalled for an instant between two reports is given
	// up all the same. Only ordered policies have an entry (setOrdered
	// drops the others), each of at most wave.MaxFailedRevisions.
	seen map[string][]string
}

// setOrdered makes ordered the set of policies the handler records, and
// forgets what it recorded of the others, so that seen holds no more
// names than the waves naming the space order now, however many they
// ordered before.
func (s *servedSpace) setOrdered(ordered map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ordered.Store(&ordered)
	for name := range s.seen {
		if !ordered[name] {
			delete(s.seen, name)
		}
	}
}

// poke asks for a report, once however many ask before it runs.
func (s *servedSpace) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// waveUpdated asks for a report when a wave's spec or this space's entry
// changed: the heartbeats of the other spaces change neither.
func (s *servedSpace) waveUpdated(oldObj, newObj any) {
	o, ok1 := oldObj.(*hostingv1alpha1.RolloutWave)
	n, ok2 := newObj.(*hostingv1alpha1.RolloutWave)
	if !ok1 || !ok2 || o.Generation != n.Generation || !reflect.DeepEqual(wavegate.SpaceReport(o, s.space), wavegate.SpaceReport(n, s.space)) {
		s.poke()
	}
}

// policyChanged records a policy seen given up, and asks for a report
// when an ordered policy's report changed.
func (s *servedSpace) policyChanged(oldObj, newObj any) {
	p, ok := newObj.(*v1alpha1.StagedBindingPolicy)
	if !ok {
		s.poke()
		return
	}
	if !(*s.ordered.Load())[p.Name] {
		return
	}
	if wavegate.Failed(p.Status.Phase) && p.Status.UpdateRevision != "" {
		s.mu.Lock()
		// Checked again under the lock: setOrdered may have dropped it.
		if (*s.ordered.Load())[p.Name] {
			s.seen[p.Name] = wavegate.AddFailed(s.seen[p.Name], p.Status.UpdateRevision)
		}
		s.mu.Unlock()
	}
	if o, ok := oldObj.(*v1alpha1.StagedBindingPolicy); ok && reflect.DeepEqual(wavegate.Report(o, nil), wavegate.Report(p, nil)) {
		return
	}
	s.poke()
}

// run reports until ctx is done: at once, on every change, and when a
// heartbeat or a retry is due.
func (s *servedSpace) run(ctx context.Context) {
	retry := retryMin
	for {
		next, failed := s.reportAll(ctx)
		if failed {
			next = min(next, retry)
			retry = min(2*retry, retryMax)
		} else {
			retry = retryMin
		}
		timer := s.r.Clock.NewTimer(next)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-s.wake:
		case <-timer.C():
		}
		timer.Stop()
	}
}

// idle is how long run waits when no wave names the space: a wave's
// creation wakes it anyway.
const idle = time.Hour

// reportAll applies the space's entry into every wave naming it where it
// changed or its heartbeat is due, and removes this space's entry from the
// waves that no longer name it. It returns how long until the next
// heartbeat is due, and whether anything failed.
func (s *servedSpace) reportAll(ctx context.Context) (next time.Duration, failed bool) {
	next = idle
	var waves hostingv1alpha1.RolloutWaveList
	// The first read waits for the cache's watch, which a stager without
	// list and watch on RolloutWaves never gets: bounded, so it is logged.
	readCtx, cancel := context.WithTimeout(ctx, s.r.readTimeout())
	err := s.r.Waves.List(readCtx, &waves)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error(err, "Cannot read the RolloutWaves to report the space")
			s.readErrors.Add(1)
		}
		return next, true
	}
	ordered := map[string]bool{}
	named := map[string]bool{}
	for i := range waves.Items {
		w := &waves.Items[i]
		if wavegate.StepOf(w, s.space) < 0 {
			if s.last[w.Name] != nil || wavegate.SpaceReport(w, s.space) != nil {
				err := s.apply(ctx, w.Name, nil)
				s.observe(w.Name, err)
				if err != nil {
					failed = true
					continue
				}
				delete(s.last, w.Name)
			}
			continue
		}
		named[w.Name] = true
		for _, p := range w.Spec.Policies {
			ordered[p] = true
		}
	}
	s.setOrdered(ordered)
	for name := range s.last {
		if !named[name] {
			delete(s.last, name) // the wave is gone
		}
	}
	for i := range waves.Items {
		w := &waves.Items[i]
		if !named[w.Name] {
			continue
		}
		now := s.r.Clock.Now()
		every := w.Spec.StaleAfter() / 3
		entry, err := s.entry(ctx, w, now)
		if err != nil {
			s.log.Error(err, "Cannot read the space's policies to report them", "wave", w.Name)
			s.observe(w.Name, err)
			failed = true
			continue
		}
		last := s.last[w.Name]
		if last != nil && sameReport(&last.entry, entry) && now.Before(last.beat.Add(every)) {
			next = min(next, last.beat.Add(every).Sub(now))
			continue
		}
		err = s.apply(ctx, w.Name, entry)
		s.observe(w.Name, err)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error(err, "Cannot report the space into a wave", "wave", w.Name)
			}
			failed = true
			continue
		}
		s.last[w.Name] = &report{entry: *entry, beat: now}
		next = min(next, every)
	}
	return next, failed
}

// entry builds the space's entry of w at now, from its policies the wave
// orders; the revisions given up are carried over from what this replica
// last applied, else from the wave's status (a previous replica's report).
// The reads of the policies are bounded by the Reporter's read timeout, as
// a space's cache that never synced waits for as long as it is let; and an
// unreachable space is reported engaged false with its prior policies,
// without reading them, so that it is said at once whatever its cache does.
func (s *servedSpace) entry(ctx context.Context, w *hostingv1alpha1.RolloutWave, now time.Time) (*hostingv1alpha1.WaveSpaceReport, error) {
	var prior *hostingv1alpha1.WaveSpaceReport
	if last := s.last[w.Name]; last != nil {
		prior = &last.entry
	} else {
		prior = wavegate.SpaceReport(w, s.space)
	}
	e := &hostingv1alpha1.WaveSpaceReport{Space: s.space, Engaged: s.r.reachable(s.space), HeartbeatTime: metav1.NewTime(now)}
	if !e.Engaged {
		if prior != nil {
			e.Policies = prior.DeepCopy().Policies
		}
		return e, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.r.readTimeout())
	defer cancel()
	for _, name := range w.Spec.Policies {
		p := &v1alpha1.StagedBindingPolicy{}
		if err := s.policies.Get(ctx, types.NamespacedName{Name: name}, p); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("reading policy %s: %w", name, err)
		}
		e.Policies = append(e.Policies, wavegate.Report(p, s.priorOf(prior, name)))
	}
	return e, nil
}

// priorOf is the prior report of policy, with the revisions the handler
// saw it give up added.
func (s *servedSpace) priorOf(prior *hostingv1alpha1.WaveSpaceReport, policy string) *hostingv1alpha1.WavePolicyReport {
	var p hostingv1alpha1.WavePolicyReport
	if r := wavegate.PolicyReport(prior, policy); r != nil {
		p = *r.DeepCopy()
	}
	s.mu.Lock()
	p.FailedRevisions = wavegate.AddFailed(p.FailedRevisions, s.seen[policy]...)
	s.mu.Unlock()
	return &p
}

// disengage applies engaged false, with the policies last reported, into
// every wave the space was reported to, once the space is let go: its
// later steps hold at once rather than once the report goes stale.
func (s *servedSpace) disengage() {
	for name, last := range s.last {
		entry := last.entry.DeepCopy()
		entry.Engaged = false
		entry.HeartbeatTime = metav1.NewTime(s.r.Clock.Now())
		err := s.apply(context.Background(), name, entry)
		s.observe(name, err)
		if err != nil {
			s.log.Error(err, "Cannot report the space let go; the wave sees it down once its report is stale", "wave", name)
		}
	}
}

// apply applies entry as the space's entry of wave, or, for nil, removes
// it, under the space's field manager and within its fence.
func (s *servedSpace) apply(ctx context.Context, wave string, entry *hostingv1alpha1.WaveSpaceReport) (err error) {
	timeout := s.r.WriteTimeout
	if timeout <= 0 {
		timeout = DefaultWriteTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if s.fence != nil {
		write, done, err := s.fence.Hold(ctx, s.r.Clock.Now())
		if err != nil {
			return fmt.Errorf("not reporting space %s into wave %s: %w", s.space, wave, err)
		}
		defer func() { done(err) }()
		ctx = write
	}
	status := map[string]any{}
	if entry != nil {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(entry)
		if err != nil {
			return fmt.Errorf("converting the report of space %s: %w", s.space, err)
		}
		status["spaces"] = []any{u}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": hostingv1alpha1.GroupVersion.String(),
		"kind":       "RolloutWave",
		"metadata":   map[string]any{"name": wave},
		"status":     status,
	}}
	err = s.r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
		client.FieldOwner(FieldManager(s.space)), client.ForceOwnership)
	if apierrors.IsNotFound(err) {
		return nil // the wave is gone, and its status with it
	}
	if err != nil {
		return fmt.Errorf("reporting space %s into wave %s: %w", s.space, wave, err)
	}
	return nil
}

// observe passes an attempt's result to Reporter.Observe.
func (s *servedSpace) observe(wave string, err error) {
	if s.r.Observe != nil {
		s.r.Observe(s.space, wave, err)
	}
}

// sameReport reports whether two entries say the same but for their
// heartbeats.
func sameReport(a, b *hostingv1alpha1.WaveSpaceReport) bool {
	x, y := *a, *b
	x.HeartbeatTime, y.HeartbeatTime = metav1.Time{}, metav1.Time{}
	return reflect.DeepEqual(normalized(x), normalized(y))
}

// normalized makes the empty and nil lists of an entry alike.
func normalized(e hostingv1alpha1.WaveSpaceReport) hostingv1alpha1.WaveSpaceReport {
	e = *e.DeepCopy()
	if len(e.Policies) == 0 {
		e.Policies = nil
	}
	for i := range e.Policies {
		if len(e.Policies[i].FailedRevisions) == 0 {
			e.Policies[i].FailedRevisions = nil
		}
		if c := e.Policies[i].CompletedTime; c != nil {
			e.Policies[i].CompletedTime = &metav1.Time{Time: c.Truncate(time.Second)}
		}
	}
	return e
}
