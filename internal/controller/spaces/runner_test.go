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

package spaces

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/kubestellar/workload-stager/test/framework"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// The tests' timings. The Runner's are short so that a space is retried
// within the tests' waits, but ProbeInterval, which also bounds each probe,
// stays long enough for a busy machine's API server to answer in time: a
// probe that times out would restart a controller and blur what the tests
// check.
const (
	probeInterval    = 2 * time.Second
	cacheSyncTimeout = 20 * time.Second
	// waitTimeout bounds every wait for something that should happen.
	waitTimeout = 30 * time.Second
	// holdFor is how long the tests watch that something does not happen.
	holdFor = 1500 * time.Millisecond
)

var (
	// sharedSpace is the kube-apiserver the tests engage. It serves the
	// built-in kinds (ConfigMap) but not KubeStellar's (BindingPolicy). It is
	// nil in -short mode.
	sharedSpace *environment.Space
	// suiteLogger writes to the suite's log file; the Runners log there.
	suiteLogger logr.Logger
)

func TestMain(m *testing.M) { os.Exit(framework.Main(m, "spaces", setUp)) }

// setUp starts the shared space, unless the tests run with -short (make
// test-unit), which has no API server.
func setUp(s *framework.Suite) error {
	suiteLogger = s.Logger
	if testing.Short() {
		return nil
	}
	space, err := environment.StartSpace("spaces")
	if err != nil {
		return fmt.Errorf("starting the shared space: %w", err)
	}
	s.Defer(space.Stop)
	sharedSpace = space
	return nil
}

// needsAPIServer skips the test in -short mode, where no kube-apiserver runs.
func needsAPIServer(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a kube-apiserver; run without -short (make test)")
	}
}

// event is a test controller starting or stopping.
type event struct {
	// stop is false for a start, true for a stop.
	stop  bool
	space string
	// id numbers the controllers the factory built, from 1.
	id      int
	cluster cluster.Cluster
}

func (e event) String() string {
	verb := "start"
	if e.stop {
		verb = "stop"
	}
	return fmt.Sprintf("%s %s#%d", verb, e.space, e.id)
}

// controllers is the Runner's ControllerFactory in the tests: it builds test
// controllers and records, in order, when they start and stop, and any time
// more than one of them ran at once for a space.
type controllers struct {
	// runner is the Runner the controllers run under; they ask it how many
	// controllers it counts for their space when they start.
	runner *Runner

	mu      sync.Mutex
	built   int
	events  []event
	running map[string]int
	// overlaps describes every start that made a space's controllers more
	// than one.
	overlaps []string
}

// newControllers returns an empty record.
func newControllers() *controllers {
	return &controllers{running: map[string]int{}}
}

// factory is the ControllerFactory that builds test controllers.
func (c *controllers) factory(space string, cl cluster.Cluster) (manager.Runnable, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.built++
	return &testController{record: c, space: space, id: c.built, cluster: cl}, nil
}

// started records that ctrl started.
func (c *controllers) started(ctrl *testController) {
	counted := c.runner.Controllers(ctrl.space)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running[ctrl.space] > 0 {
		c.overlaps = append(c.overlaps, fmt.Sprintf("%s#%d started while %d other controller(s) of the space ran", ctrl.space, ctrl.id, c.running[ctrl.space]))
	}
	if counted > 1 {
		c.overlaps = append(c.overlaps, fmt.Sprintf("%s#%d started while the Runner counted %d controllers of the space", ctrl.space, ctrl.id, counted))
	}
	c.running[ctrl.space]++
	c.events = append(c.events, event{space: ctrl.space, id: ctrl.id, cluster: ctrl.cluster})
}

// stopped records that ctrl stopped.
func (c *controllers) stopped(ctrl *testController) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running[ctrl.space]--
	c.events = append(c.events, event{stop: true, space: ctrl.space, id: ctrl.id, cluster: ctrl.cluster})
}

// builtCount returns how many controllers the factory built.
func (c *controllers) builtCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.built
}

// history returns the starts and stops so far, oldest first.
func (c *controllers) history() []event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]event(nil), c.events...)
}

// runningOf returns how many test controllers of the space run.
func (c *controllers) runningOf(space string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running[space]
}

// check fails the test if controllers of a space ever overlapped or one of
// them still runs.
func (c *controllers) check(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range c.overlaps {
		t.Errorf("more than one controller ran for a space: %s", o)
	}
	for space, n := range c.running {
		if n != 0 {
			t.Errorf("%d controller(s) of space %s still run after the test (history %v)", n, space, c.events)
		}
	}
}

// testController is a controller that does nothing but run until it is
// stopped, recording both.
type testController struct {
	record  *controllers
	space   string
	id      int
	cluster cluster.Cluster
}

// Start implements manager.Runnable.
func (tc *testController) Start(ctx context.Context) error {
	tc.record.started(tc)
	<-ctx.Done()
	tc.record.stopped(tc)
	return nil
}

// changes records the states that the Runner passes to OnChange.
type changes struct {
	mu     sync.Mutex
	states []State
	// before, when set, is called with each state before it is recorded:
	// a test can hold a report there.
	before func(State)
}

// onChange is the Runner's OnChange.
func (c *changes) onChange(s State) {
	c.mu.Lock()
	before := c.before
	c.mu.Unlock()
	if before != nil {
		before(s)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.states = append(c.states, s)
}

// of returns the states reported for the space, oldest first.
func (c *changes) of(space string) []State {
	c.mu.Lock()
	defer c.mu.Unlock()
	var states []State
	for _, s := range c.states {
		if s.Name == space {
			states = append(states, s)
		}
	}
	return states
}

// saw returns an error unless a state reported for the space has the
// given readiness and reason.
func (c *changes) saw(space string, ready bool, reason string) error {
	states := c.of(space)
	for _, s := range states {
		if s.Ready == ready && s.Reason == reason {
			return nil
		}
	}
	return fmt.Errorf("OnChange got no state of %s with Ready=%t and Reason %s; it got %s", space, ready, reason, summary(states))
}

// summary describes states briefly, for failure messages.
func summary(states []State) string {
	parts := make([]string, 0, len(states))
	for _, s := range states {
		parts = append(parts, fmt.Sprintf("%s(ready=%t)", s.Reason, s.Ready))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// harness is one test's Runner with its test controllers, the states it
// reported, and what the test engaged and started. Its clean-up disengages
// every space, stops the Runner and the clusters, and checks that no two
// controllers of a space ever ran at once.
type harness struct {
	t       *testing.T
	runner  *Runner
	ctrls   *controllers
	changes *changes

	mu       sync.Mutex
	cancels  []context.CancelFunc
	names    map[string]bool
	stoppers []func() error
}

// newHarness returns a harness whose Runner requires the given kinds and is
// not started yet.
func newHarness(t *testing.T, required ...client.Object) *harness {
	t.Helper()
	return newHarnessWith(t, func(*Options) {}, required...)
}

// newHarnessWith is newHarness with the Runner's options changed by change.
func newHarnessWith(t *testing.T, change func(*Options), required ...client.Object) *harness {
	t.Helper()
	h := &harness{t: t, ctrls: newControllers(), changes: &changes{}, names: map[string]bool{}}
	opts := Options{
		Required:         required,
		NewController:    h.ctrls.factory,
		ProbeInterval:    probeInterval,
		CacheSyncTimeout: cacheSyncTimeout,
		RetryBackoff:     &wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Steps: 1 << 30, Cap: 400 * time.Millisecond},
		OnChange:         h.changes.onChange,
		Logger:           suiteLogger.WithName(t.Name()),
	}
	change(&opts)
	r, err := New(opts)
	if err != nil {
		t.Fatalf("building the Runner: %v", err)
	}
	h.runner = r
	h.ctrls.runner = r
	t.Cleanup(h.cleanUp)
	return h
}

// cleanUp cancels every engagement, waits until the Runner forgets them and
// runs no controller, then stops the Runner and the clusters.
func (h *harness) cleanUp() {
	t := h.t
	h.mu.Lock()
	cancels, stoppers := h.cancels, h.stoppers
	names := make([]string, 0, len(h.names))
	for name := range h.names {
		names = append(names, name)
	}
	h.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
	err := environment.Poll(context.Background(), environment.PollInterval, waitTimeout, "every space disengaged", func() error {
		if states := h.runner.Spaces(); len(states) > 0 {
			return fmt.Errorf("the Runner still lists %s", summary(states))
		}
		for _, name := range names {
			if n := h.runner.Controllers(name); n != 0 {
				return fmt.Errorf("the Runner counts %d controllers of %s", n, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Errorf("cleaning up: %v", err)
	}
	for i := len(stoppers) - 1; i >= 0; i-- {
		if err := stoppers[i](); err != nil {
			t.Errorf("cleaning up: %v", err)
		}
	}
	h.ctrls.check(t)
}

// runInBackground runs start until the test ends, when its context is
// cancelled and start's error, if any, reported.
func (h *harness) runInBackground(what string, start func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- start(ctx) }()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stoppers = append(h.stoppers, func() error {
		cancel()
		if err := <-done; err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	})
}

// start starts the Runner, as the multicluster manager does once this
// replica is elected leader.
func (h *harness) start() {
	h.runInBackground("the Runner", h.runner.Start)
}

// newCluster builds and starts a cluster of the shared space, as a provider
// does for a space's kubeconfig. Each call builds a distinct cluster, as a
// provider does again when the kubeconfig Secret is rotated.
func (h *harness) newCluster() cluster.Cluster {
	h.t.Helper()
	cl, err := cluster.New(sharedSpace.Config, func(o *cluster.Options) { o.Scheme = environment.Scheme() })
	if err != nil {
		h.t.Fatalf("building a cluster of space %s: %v", sharedSpace.Name, err)
	}
	h.runInBackground("a cluster of the shared space", cl.Start)
	return cl
}

// engage engages cl under name with a context of its own, as a provider
// does, and returns the function that disengages it by cancelling that
// context.
func (h *harness) engage(name string, cl cluster.Cluster) context.CancelFunc {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h.mu.Lock()
	h.cancels = append(h.cancels, cancel)
	h.names[name] = true
	h.mu.Unlock()
	if err := h.runner.Engage(ctx, multicluster.ClusterName(name), cl); err != nil {
		h.t.Fatalf("engaging %s: %v", name, err)
	}
	return cancel
}

// state returns the Runner's state of the space, or an error if the Runner
// does not list exactly that space.
func (h *harness) state(name string) (State, error) {
	states := h.runner.Spaces()
	if len(states) != 1 || states[0].Name != name {
		return State{}, fmt.Errorf("the Runner lists %d space(s) %s, want %s alone", len(states), summary(states), name)
	}
	return states[0], nil
}

// serving returns an error unless the space is ready and served by exactly
// one controller, the one numbered id, built for cl.
func (h *harness) serving(name string, id int, cl cluster.Cluster) error {
	s, err := h.state(name)
	if err != nil {
		return err
	}
	if !s.Ready || s.Reason != ReasonReady {
		return fmt.Errorf("%s is not ready: Ready=%t Reason=%s Message=%q", name, s.Ready, s.Reason, s.Message)
	}
	if n := h.runner.Controllers(name); n != 1 {
		return fmt.Errorf("the Runner counts %d controllers of %s, want 1", n, name)
	}
	if n := h.ctrls.runningOf(name); n != 1 {
		return fmt.Errorf("%d test controllers of %s run, want 1", n, name)
	}
	history := h.ctrls.history()
	if len(history) == 0 {
		return fmt.Errorf("no controller of %s started", name)
	}
	last := history[len(history)-1]
	if last.stop || last.space != name || last.id != id {
		return fmt.Errorf("the last controller started is not %s#%d: history %v", name, id, history)
	}
	if last.cluster != cl {
		return fmt.Errorf("controller %s#%d was built for another cluster than the one engaged", name, id)
	}
	return nil
}

// TestEngageBeforeStartRunsNoControllerUntilStarted engages a space before
// the Runner runs (this replica is not the leader yet): the space is listed
// as starting but no controller is built; once the Runner starts, the
// space's controller runs and the space becomes ready, which OnChange hears.
func TestEngageBeforeStartRunsNoControllerUntilStarted(t *testing.T) {
	needsAPIServer(t)
	const name = "before-start"
	h := newHarness(t, &corev1.ConfigMap{})
	cl := h.newCluster()
	h.engage(name, cl)

	environment.Consistently(t, holdFor, "no controller before the Runner starts", func() error {
		if h.runner.Started() {
			return errors.New("the Runner says it started")
		}
		if n := h.ctrls.builtCount(); n != 0 {
			return fmt.Errorf("the factory built %d controller(s)", n)
		}
		if n := h.runner.Controllers(name); n != 0 {
			return fmt.Errorf("the Runner counts %d controller(s)", n)
		}
		s, err := h.state(name)
		if err != nil {
			return err
		}
		if s.Ready || s.Reason != ReasonStarting {
			return fmt.Errorf("state Ready=%t Reason=%s, want not ready and %s", s.Ready, s.Reason, ReasonStarting)
		}
		return nil
	})
	if err := h.changes.saw(name, false, ReasonStarting); err != nil {
		t.Error(err)
	}

	h.start()
	took := environment.Eventually(t, waitTimeout, "the space served once the Runner starts", func() error {
		if err := h.serving(name, 1, cl); err != nil {
			return err
		}
		return h.changes.saw(name, true, ReasonReady)
	})
	t.Logf("the space was ready %s after the Runner started", took.Round(time.Millisecond))
	if n := h.ctrls.builtCount(); n != 1 {
		t.Errorf("the factory built %d controllers, want 1", n)
	}
}

// TestEngageSameClusterAgainDoesNothing engages the cluster already served
// under a name again: the Runner builds no second controller, stops nothing
// and reports no change.
func TestEngageSameClusterAgainDoesNothing(t *testing.T) {
	needsAPIServer(t)
	const name = "same-cluster"
	h := newHarness(t, &corev1.ConfigMap{})
	h.start()
	cl := h.newCluster()
	h.engage(name, cl)
	environment.Eventually(t, waitTimeout, "the space served", func() error { return h.serving(name, 1, cl) })
	reported := len(h.changes.of(name))

	h.engage(name, cl)
	environment.Consistently(t, holdFor, "the first engagement served alone and untouched", func() error {
		if err := h.serving(name, 1, cl); err != nil {
			return err
		}
		if n := h.ctrls.builtCount(); n != 1 {
			return fmt.Errorf("the factory built %d controllers, want 1", n)
		}
		if states := h.changes.of(name); len(states) != reported {
			return fmt.Errorf("OnChange got %s after the second engagement", summary(states[reported:]))
		}
		return nil
	})
	if history := h.ctrls.history(); len(history) != 1 {
		t.Errorf("controller history %v, want the first controller's start alone", history)
	}
}

// TestEngageNewClusterReplacesServedOne engages another cluster under a
// served name, as a provider does when a space's kubeconfig Secret is
// rotated: Engage returns once the old controller has stopped, the new one
// starts only then and on the new cluster, the Runner lists exactly one
// record for the space and counts at most one controller throughout, the
// space is ready again, and a replacement is never reported as a
// disengagement. Cancelling the replaced engagement's context afterwards, as
// the provider does with the old cluster, leaves the new one served.
func TestEngageNewClusterReplacesServedOne(t *testing.T) {
	needsAPIServer(t)
	const name = "rotated"
	h := newHarness(t, &corev1.ConfigMap{})
	h.start()
	oldCluster := h.newCluster()
	disengageOld := h.engage(name, oldCluster)
	environment.Eventually(t, waitTimeout, "the old cluster served", func() error { return h.serving(name, 1, oldCluster) })

	newCluster := h.newCluster()
	if newCluster == oldCluster {
		t.Fatal("cluster.New returned the same cluster twice")
	}
	// Watch the Runner's records and counts while it replaces the cluster.
	type sample struct{ records, controllers int }
	var samples []sample
	stopSampling, sampled := make(chan struct{}), make(chan struct{})
	var stopOnce sync.Once
	stop := func() {
		stopOnce.Do(func() { close(stopSampling) })
		<-sampled
	}
	defer stop()
	go func() {
		defer close(sampled)
		for {
			records := 0
			for _, s := range h.runner.Spaces() {
				if s.Name == name {
					records++
				}
			}
			samples = append(samples, sample{records: records, controllers: h.runner.Controllers(name)})
			select {
			case <-stopSampling:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()

	h.engage(name, newCluster)
	history := h.ctrls.history()
	if len(history) != 2 || !history[1].stop || history[1].id != 1 {
		t.Errorf("when Engage returned, the controller history was %v; want the old controller started and stopped", history)
	}
	took := environment.Eventually(t, waitTimeout, "the new cluster served", func() error { return h.serving(name, 2, newCluster) })
	t.Logf("the space was ready again %s after Engage returned", took.Round(time.Millisecond))
	stop()

	want := []event{
		{space: name, id: 1, cluster: oldCluster},
		{stop: true, space: name, id: 1, cluster: oldCluster},
		{space: name, id: 2, cluster: newCluster},
	}
	if history := h.ctrls.history(); fmt.Sprint(history) != fmt.Sprint(want) || history[2].cluster != newCluster {
		t.Errorf("controller history %v, want %v (the new one on the new cluster)", history, want)
	}
	for i, s := range samples {
		if s.records != 1 || s.controllers > 1 {
			t.Errorf("sample %d of %d during the replacement: %d record(s) of the space and %d controller(s); want 1 record and at most 1 controller",
				i+1, len(samples), s.records, s.controllers)
			break
		}
	}
	t.Logf("%d samples of the Runner taken during the replacement", len(samples))
	if err := h.changes.saw(name, false, ReasonDisengaged); err == nil {
		t.Errorf("OnChange heard the replaced space disengaged: %s", summary(h.changes.of(name)))
	}

	disengageOld()
	environment.Consistently(t, holdFor, "the new cluster served after the old one's context ends", func() error {
		if err := h.serving(name, 2, newCluster); err != nil {
			return err
		}
		if n := h.ctrls.builtCount(); n != 2 {
			return fmt.Errorf("the factory built %d controllers, want 2", n)
		}
		return nil
	})
}

// TestDisengageStopsControllerAndForgetsSpace cancels the context a space
// was engaged with, as a provider does when the space goes away: its
// controller stops, the Runner no longer lists or counts it, OnChange hears
// it disengaged last, and nothing restarts it.
func TestDisengageStopsControllerAndForgetsSpace(t *testing.T) {
	needsAPIServer(t)
	const name = "gone"
	h := newHarness(t, &corev1.ConfigMap{})
	h.start()
	cl := h.newCluster()
	disengage := h.engage(name, cl)
	environment.Eventually(t, waitTimeout, "the space served", func() error { return h.serving(name, 1, cl) })

	disengage()
	gone := func() error {
		if states := h.runner.Spaces(); len(states) != 0 {
			return fmt.Errorf("the Runner still lists %s", summary(states))
		}
		if n := h.runner.Controllers(name); n != 0 {
			return fmt.Errorf("the Runner counts %d controller(s)", n)
		}
		if n := h.ctrls.runningOf(name); n != 0 {
			return fmt.Errorf("%d test controller(s) still run", n)
		}
		states := h.changes.of(name)
		if len(states) == 0 {
			return errors.New("OnChange got nothing")
		}
		if last := states[len(states)-1]; last.Ready || last.Reason != ReasonDisengaged {
			return fmt.Errorf("OnChange last got %s, want Ready=false Reason %s", summary(states[len(states)-1:]), ReasonDisengaged)
		}
		return nil
	}
	took := environment.Eventually(t, waitTimeout, "the space disengaged", gone)
	t.Logf("the space was gone %s after its context was cancelled", took.Round(time.Millisecond))
	environment.Consistently(t, holdFor, "the space staying gone", func() error {
		if n := h.ctrls.builtCount(); n != 1 {
			return fmt.Errorf("the factory built %d controllers, want 1", n)
		}
		return gone()
	})
	want := []event{{space: name, id: 1}, {stop: true, space: name, id: 1}}
	if history := h.ctrls.history(); fmt.Sprint(history) != fmt.Sprint(want) {
		t.Errorf("controller history %v, want %v", history, want)
	}
}

// TestSpaceMissingRequiredAPIIsNotReadyAndRunsNoController engages a space
// that does not serve a required kind (KubeStellar's BindingPolicy, whose
// CRDs the shared space lacks): the space is reported not ready with reason
// MissingAPIs naming the kind, and no controller is ever built nor its cache
// indexed (which would fail for a kind the space does not serve), however
// often the Runner retries.
func TestSpaceMissingRequiredAPIIsNotReadyAndRunsNoController(t *testing.T) {
	needsAPIServer(t)
	const name = "no-kubestellar"
	var indexed atomic.Int32
	h := newHarnessWith(t, func(o *Options) {
		o.IndexFields = func(context.Context, cache.Cache) error {
			indexed.Add(1)
			return nil
		}
	}, &corev1.ConfigMap{}, &ksv1alpha1.BindingPolicy{})
	h.start()
	h.engage(name, h.newCluster())

	missingAPIs := func() error {
		s, err := h.state(name)
		if err != nil {
			return err
		}
		if s.Ready || s.Reason != ReasonMissingAPIs {
			return fmt.Errorf("state Ready=%t Reason=%s Message=%q, want not ready and %s", s.Ready, s.Reason, s.Message, ReasonMissingAPIs)
		}
		if !strings.Contains(s.Message, "BindingPolicy.control.kubestellar.io") || strings.Contains(s.Message, "ConfigMap") {
			return fmt.Errorf("message %q does not name BindingPolicy.control.kubestellar.io alone", s.Message)
		}
		if n := h.ctrls.builtCount(); n != 0 {
			return fmt.Errorf("the factory built %d controller(s)", n)
		}
		if n := h.runner.Controllers(name); n != 0 {
			return fmt.Errorf("the Runner counts %d controller(s)", n)
		}
		if n := indexed.Load(); n != 0 {
			return fmt.Errorf("the Runner indexed the space's cache %d time(s)", n)
		}
		return nil
	}
	environment.Eventually(t, waitTimeout, "the space reported missing APIs", missingAPIs)
	// Several retries (100ms doubling up to 400ms) fall within this window.
	environment.Consistently(t, 2*holdFor, "the space still missing APIs, with no controller", missingAPIs)
	if err := h.changes.saw(name, false, ReasonMissingAPIs); err != nil {
		t.Error(err)
	}
	if err := h.changes.saw(name, true, ReasonReady); err == nil {
		t.Errorf("OnChange heard the space ready: %s", summary(h.changes.of(name)))
	}
}

// TestStoppingTheRunnerStopsItsControllers stops a Runner serving a space,
// as the manager does when this replica loses or releases its lease: by the
// time Start returns, no controller of the Runner runs any more, so the next
// leader never shares a space with this replica.
func TestStoppingTheRunnerStopsItsControllers(t *testing.T) {
	needsAPIServer(t)
	const name = "stopping"
	h := newHarness(t, &corev1.ConfigMap{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	returned := make(chan error, 1)
	go func() { returned <- h.runner.Start(ctx) }()
	cl := h.newCluster()
	h.engage(name, cl)
	environment.Eventually(t, waitTimeout, "the space served", func() error { return h.serving(name, 1, cl) })

	cancel()
	select {
	case err := <-returned:
		if err != nil {
			t.Fatalf("Start returned %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("Start did not return within %s of its context's end", waitTimeout)
	}
	if n := h.ctrls.runningOf(name); n != 0 {
		t.Errorf("%d controller(s) of %s still run after Start returned; history %v", n, name, h.ctrls.history())
	}
	if n := h.runner.Controllers(name); n != 0 {
		t.Errorf("the Runner counts %d controller(s) of %s after Start returned", n, name)
	}
}

// TestReengagedSpaceIsNotReportedGone disengages a space and engages it
// again while the Runner is still reporting it gone: the last state OnChange
// hears (and so the space's metrics) must be the new engagement's, never the
// stale Disengaged.
func TestReengagedSpaceIsNotReportedGone(t *testing.T) {
	needsAPIServer(t)
	const name = "again"
	h := newHarness(t, &corev1.ConfigMap{})
	disengaging, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h.changes.mu.Lock()
	h.changes.before = func(s State) {
		if s.Name == name && s.Reason == ReasonDisengaged {
			once.Do(func() { close(disengaging) })
			<-release // hold the Disengaged report while the space is engaged again
		}
	}
	h.changes.mu.Unlock()

	disengage := h.engage(name, h.newCluster())
	disengage()
	select {
	case <-disengaging:
	case <-time.After(waitTimeout):
		t.Fatal("the Runner did not report the space disengaged")
	}
	engaged := make(chan struct{})
	cl := h.newCluster()
	go func() {
		defer close(engaged)
		h.engage(name, cl)
	}()
	environment.Eventually(t, waitTimeout, "the space engaged again", func() error {
		_, err := h.state(name)
		return err
	})
	close(release)
	select {
	case <-engaged:
	case <-time.After(waitTimeout):
		t.Fatal("Engage did not return once the Disengaged report was let through")
	}
	environment.Eventually(t, waitTimeout, "the held Disengaged report recorded", func() error {
		return h.changes.saw(name, false, ReasonDisengaged)
	})
	states := h.changes.of(name)
	if last := states[len(states)-1]; last.Reason != ReasonStarting {
		t.Errorf("OnChange heard %s last, want the new engagement's %s; all: %s", last.Reason, ReasonStarting, summary(states))
	}
}

// TestIndexesBeforeEachControllerStart engages a space whose first
// indexing fails and whose first controller stops at once: the failure is
// reported and retried, and the cache is indexed again before the next
// controller starts, which serves the space from a cache that has the
// index. (A space that does not serve a required kind is never indexed:
// TestSpaceMissingRequiredAPIIsNotReadyAndRunsNoController.)
func TestIndexesBeforeEachControllerStart(t *testing.T) {
	needsAPIServer(t)
	const name, field = "indexed", "test.app"
	var mu sync.Mutex
	var calls, starts int
	h := newHarnessWith(t, func(o *Options) {
		o.IndexFields = func(ctx context.Context, c cache.Cache) error {
			mu.Lock()
			defer mu.Unlock()
			calls++
			switch calls {
			case 1:
				return errors.New("the first indexing fails")
			case 2:
				return c.IndexField(ctx, &corev1.ConfigMap{}, field, func(obj client.Object) []string {
					return []string{obj.GetLabels()["app"]}
				})
			}
			return nil // the cache has the index
		}
		factory := o.NewController
		o.NewController = func(space string, cl cluster.Cluster) (manager.Runnable, error) {
			mu.Lock()
			defer mu.Unlock()
			starts++
			if starts == 1 {
				return manager.RunnableFunc(func(context.Context) error { return errors.New("the first controller stops") }), nil
			}
			return factory(space, cl)
		}
	}, &corev1.ConfigMap{})
	h.start()
	cl := h.newCluster()
	h.engage(name, cl)

	environment.Eventually(t, waitTimeout, "the space served", func() error { return h.serving(name, 1, cl) })
	if err := h.changes.saw(name, false, ReasonCacheNotSynced); err != nil {
		t.Errorf("the failed indexing was not reported: %v", err)
	}
	list := &corev1.ConfigMapList{}
	if err := cl.GetClient().List(t.Context(), list, client.MatchingFields{field: "web"}); err != nil {
		t.Errorf("listing by the index from the served cache: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 3 || starts != 2 {
		t.Errorf("IndexFields was called %d times for %d controller starts, want 3 for 2: a failure, then before each start", calls, starts)
	}
}
