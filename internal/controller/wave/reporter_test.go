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

package wave_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/controller/sharding"
	"github.com/kubestellar/workload-stager/internal/controller/wave"
	wavegate "github.com/kubestellar/workload-stager/internal/wave"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// The spaces of the test's wave: one per step, named as two providers would.
const (
	spaceA = "wds-a"
	spaceB = "kubeconfig#wds-b"
)

// staleAfter is the test wave's reportStaleAfter: heartbeats every 20s.
const staleAfter = time.Minute

// waitFor bounds every wait for the API servers and caches.
const waitFor = 30 * time.Second

// start starts a space's API server, stopped at the test's end.
// setUp skips without kube-apiservers (-short), discards the caches' logs
// (they log through controller-runtime's root logger), and returns the
// scheme of the hosting cluster and spaces and the hosting CRDs.
func setUp(t *testing.T) (*runtime.Scheme, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs kube-apiservers; run without -short (make test)")
	}
	ctrllog.SetLogger(logr.Discard())
	scheme := environment.Scheme()
	for _, add := range []func(*runtime.Scheme) error{hostingv1alpha1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	hostingCRDs, err := environment.HostingCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	return scheme, hostingCRDs
}

func start(t *testing.T, name string, scheme *runtime.Scheme, opts ...environment.SpaceOption) *environment.Space {
	t.Helper()
	return environment.StartTestSpace(t, name, append(opts, environment.WithScheme(scheme))...)
}

// startTwoStepWave starts a hosting cluster and two spaces, spaceA in step
// one and spaceB in step two of wave name, which orders web and api, with a
// policy web in each space.
func startTwoStepWave(t *testing.T, name string) (*runtime.Scheme, *environment.Space, *environment.Space, *environment.Space, *hostingv1alpha1.RolloutWave) {
	t.Helper()
	scheme, hostingCRDs := setUp(t)
	hosting := start(t, "hosting", scheme, environment.WithCRDDirs(hostingCRDs))
	wdsA := start(t, "wds-a", scheme, environment.WithStagerCRDs())
	wdsB := start(t, "wds-b", scheme, environment.WithStagerCRDs())
	w := &hostingv1alpha1.RolloutWave{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: hostingv1alpha1.RolloutWaveSpec{
		Policies:         []string{"web", "api"},
		ReportStaleAfter: &metav1.Duration{Duration: staleAfter},
		Steps:            []hostingv1alpha1.WaveStep{{Name: "one", Spaces: []string{spaceA}}, {Name: "two", Spaces: []string{spaceB}}},
	}}
	if err := hosting.Client.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*environment.Space{wdsA, wdsB} {
		if err := s.Client.Create(t.Context(), policytest.ThreeStages("web", "nginx")); err != nil {
			t.Fatal(err)
		}
	}
	return scheme, hosting, wdsA, wdsB, w
}

// startCache starts a cache of the space, as the stager's (managedFields
// stripped), stopped at the test's end.
func startCache(t *testing.T, s *environment.Space, scheme *runtime.Scheme) cache.Cache {
	t.Helper()
	return startCacheOf(t, s.Config, cache.Options{Scheme: scheme, DefaultTransform: cache.TransformStripManagedFields()})
}

// startCacheOf starts a cache of cfg with opts, stopped at the test's end,
// and returns it once started.
func startCacheOf(t *testing.T, cfg *rest.Config, opts cache.Options) cache.Cache {
	t.Helper()
	c, err := cache.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.Start(ctx); err != nil {
			t.Error(err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	if !c.WaitForCacheSync(t.Context()) { // started, its informers synced
		t.Fatal("the cache did not start")
	}
	return c
}

// userConfig is the config of a new user of s, without any group or role.
func userConfig(t *testing.T, s *environment.Space, name string) *rest.Config {
	t.Helper()
	kubeconfig, err := s.AddUser(name)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// setStatus writes a policy's status as the stager would: phase, revisions
// and, when Completed, the Completed condition.
func setStatus(t *testing.T, c client.Client, phase v1alpha1.RolloutPhase, revision, current string) {
	t.Helper()
	p := &v1alpha1.StagedBindingPolicy{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: "web"}, p); err != nil {
		t.Fatal(err)
	}
	p.Status.Phase, p.Status.UpdateRevision, p.Status.CurrentRevision = phase, revision, current
	completed := metav1.ConditionFalse
	if phase == v1alpha1.RolloutCompleted {
		completed = metav1.ConditionTrue
	}
	apimeta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionCompleted, Status: completed, Reason: string(phase),
		LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second))})
	if err := c.Status().Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}
}

// observed records the Reporters' attempts, per space.
type observed struct {
	mu       sync.Mutex
	attempts map[string][]error
}

func (o *observed) observe(space, _ string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.attempts == nil {
		o.attempts = map[string][]error{}
	}
	o.attempts[space] = append(o.attempts[space], err)
}

// since returns the attempts for space after the first n.
func (o *observed) since(space string, n int) []error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.attempts[space]) <= n {
		return nil
	}
	return append([]error(nil), o.attempts[space][n:]...)
}

func (o *observed) count(space string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.attempts[space])
}

// serve runs r for space until the returned function is called, which
// waits for Serve to return.
func serve(t *testing.T, r *wave.Reporter, space string, policies cache.Cache, fence wave.Fence) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.Serve(ctx, space, policies, fence); err != nil {
			t.Error(err)
		}
	}()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// TestReporterAgainstAPIServers runs the wave's Reporters and Gates against
// real API servers: a hosting cluster with a wave of two steps, and a
// space per step, each served by a replica (Reporter) of its own with a
// fake clock. Each writes its space's entry under the space's field
// manager without touching the other's, renews its heartbeat every third
// of reportStaleAfter by its clock, reports a phase change, and applies
// engaged false while its space does not answer and when it is let go; the Gates reader holds and
// releases the later step as the reports move, and its Source queues the
// later space's policy on an earlier report's change but not on a
// heartbeat; and a replica whose fence of a space moved to another
// replica writes nothing for the space.
func TestReporterAgainstAPIServers(t *testing.T) {
	scheme, hosting, wdsA, wdsB, _ := startTwoStepWave(t, "regions")
	ctx := t.Context()
	for _, s := range []*environment.Space{wdsA, wdsB} {
		// A policy the wave does not order: nothing of it crosses.
		if err := s.Client.Create(ctx, policytest.ThreeStages("other", "nginx")); err != nil {
			t.Fatal(err)
		}
	}
	setStatus(t, wdsA.Client, v1alpha1.RolloutCompleted, "v1", "v1")
	setStatus(t, wdsB.Client, v1alpha1.RolloutProgressing, "v1", "")

	waves := startCache(t, hosting, scheme)
	cacheA, cacheB := startCache(t, wdsA, scheme), startCache(t, wdsB, scheme)
	begin := time.Now().Truncate(time.Second)
	clockA, clockB, clockG := clocktesting.NewFakeClock(begin), clocktesting.NewFakeClock(begin), clocktesting.NewFakeClock(begin)
	obs := &observed{}
	reporter := func(c *clocktesting.FakeClock) *wave.Reporter {
		return &wave.Reporter{Client: hosting.Client, Waves: waves, Clock: c, Log: testr.New(t), Observe: obs.observe}
	}
	stopA := serve(t, reporter(clockA), spaceA, cacheA, nil)
	reporterB := reporter(clockB)
	serve(t, reporterB, spaceB, cacheB, nil)

	get := func() *hostingv1alpha1.RolloutWave {
		t.Helper()
		got := &hostingv1alpha1.RolloutWave{}
		if err := hosting.Client.Get(ctx, client.ObjectKey{Name: "regions"}, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	entry := func(got *hostingv1alpha1.RolloutWave, space string) *hostingv1alpha1.WaveSpaceReport {
		for i := range got.Status.Spaces {
			if got.Status.Spaces[i].Space == space {
				return &got.Status.Spaces[i]
			}
		}
		return nil
	}
	// waitEntry waits until space's entry passes check.
	waitEntry := func(what, space string, check func(e *hostingv1alpha1.WaveSpaceReport) error) *hostingv1alpha1.WaveSpaceReport {
		t.Helper()
		var last *hostingv1alpha1.WaveSpaceReport
		environment.Eventually(t, waitFor, what, func() error {
			last = entry(get(), space)
			if last == nil {
				return fmt.Errorf("no entry of %s", space)
			}
			return check(last)
		})
		return last
	}
	policyIs := func(phase, revision, current string) func(e *hostingv1alpha1.WaveSpaceReport) error {
		return func(e *hostingv1alpha1.WaveSpaceReport) error {
			if !e.Engaged || len(e.Policies) != 1 || e.Policies[0].Name != "web" || e.Policies[0].Phase != phase ||
				e.Policies[0].Revision != revision || e.Policies[0].CurrentRevision != current {
				return fmt.Errorf("entry %+v, want web %s at %s, current %q", e, phase, revision, current)
			}
			return nil
		}
	}

	t.Run("each space's entry under its own field manager", func(t *testing.T) {
		a := waitEntry("the entry of wds-a", spaceA, policyIs("Completed", "v1", "v1"))
		waitEntry("the entry of wds-b", spaceB, policyIs("Progressing", "v1", ""))
		if a.Policies[0].CompletedTime == nil || !a.HeartbeatTime.Time.Equal(begin) {
			t.Errorf("entry of %s: %+v, want a completion time and the heartbeat %s", spaceA, a, begin)
		}
		owners := map[string]string{}
		for _, f := range get().ManagedFields {
			if strings.HasPrefix(f.Manager, wave.FieldManagerPrefix) {
				owners[f.Manager] = f.FieldsV1.GetRawString()
			}
		}
		for space, other := range map[string]string{spaceA: spaceB, spaceB: spaceA} {
			fields, ok := owners[wave.FieldManager(space)]
			if !ok {
				t.Fatalf("no field manager %s for %s among %v", wave.FieldManager(space), space, owners)
			}
			key := func(s string) string { return `k:{\"space\":\"` + s + `\"}` }
			if !strings.Contains(fields, key(space)) || strings.Contains(fields, key(other)) {
				t.Errorf("the manager of %s owns %s, want its entry only", space, fields)
			}
		}
	})

	t.Run("heartbeats every third of reportStaleAfter, by the reporter's clock", func(t *testing.T) {
		beforeB := entry(get(), spaceB).HeartbeatTime
		clockA.Step(staleAfter / 3)
		waitEntry("wds-a's heartbeat", spaceA, func(e *hostingv1alpha1.WaveSpaceReport) error {
			if want := begin.Add(staleAfter / 3); !e.HeartbeatTime.Time.Equal(want) {
				return fmt.Errorf("heartbeat %s, want %s", e.HeartbeatTime, want)
			}
			return nil
		})
		if after := entry(get(), spaceB).HeartbeatTime; !after.Equal(&beforeB) {
			t.Errorf("wds-b's heartbeat moved from %s to %s without its clock", beforeB, after)
		}
	})

	t.Run("a phase change is reported", func(t *testing.T) {
		setStatus(t, wdsB.Client, v1alpha1.RolloutCompleted, "v1", "v1")
		waitEntry("wds-b completed", spaceB, policyIs("Completed", "v1", "v1"))
	})

	t.Run("an unreachable space reports engaged false at once", func(t *testing.T) {
		reporterB.SetReachable(spaceB, false)
		waitEntry("wds-b unreachable", spaceB, func(e *hostingv1alpha1.WaveSpaceReport) error {
			if e.Engaged || len(e.Policies) != 1 {
				return fmt.Errorf("entry %+v, want engaged false with its policy", e)
			}
			return nil
		})
		reporterB.SetReachable(spaceB, true)
		waitEntry("wds-b reachable again", spaceB, policyIs("Completed", "v1", "v1"))
	})

	gates := &wave.Gates{Waves: waves, Clock: clockG}
	decide := func(revision string) wavegate.Decision {
		t.Helper()
		d, err := gates.Decision(ctx, spaceB, "web", revision, clockG.Now())
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	waitDecision := func(revision, reason string) {
		t.Helper()
		environment.Eventually(t, waitFor, "decision "+reason, func() error {
			if d := decide(revision); d.Reason != reason || d.Released != (reason == wavegate.ReasonReleased) {
				return fmt.Errorf("decision %+v, want %s", d, reason)
			}
			return nil
		})
	}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(queue.ShutDown)
	if err := gates.Source(spaceB).Start(ctx, queue); err != nil {
		t.Fatal(err)
	}
	drain := func() []string {
		var names []string
		for queue.Len() > 0 {
			req, _ := queue.Get()
			names = append(names, req.Name)
			queue.Forget(req)
			queue.Done(req)
		}
		return names
	}

	t.Run("the gate holds and releases as the reports move", func(t *testing.T) {
		if d := decide("v2"); d.Released || d.Reason != wavegate.ReasonWaitingForEarlierSteps || !strings.Contains(d.Message, spaceA) {
			t.Errorf("v2 before wds-a completed it: %+v, want held, naming wds-a", d)
		}
		environment.Eventually(t, waitFor, "the source queues the wave's policies", func() error {
			if got := queue.Len(); got != 2 {
				return fmt.Errorf("%d queued, want web and api", got)
			}
			return nil
		})
		drain()
		setStatus(t, wdsA.Client, v1alpha1.RolloutCompleted, "v2", "v2")
		waitDecision("v2", wavegate.ReasonReleased)
		environment.Eventually(t, waitFor, "the source queues on wds-a's completion", func() error {
			if got := drain(); len(got) == 0 {
				return errors.New("nothing queued")
			}
			return nil
		})
		// A heartbeat of a fresh report changes no decision: nothing is queued.
		clockA.Step(staleAfter / 3)
		waitEntry("wds-a's second heartbeat", spaceA, func(e *hostingv1alpha1.WaveSpaceReport) error {
			if want := begin.Add(2 * staleAfter / 3); !e.HeartbeatTime.Time.Equal(want) {
				return fmt.Errorf("heartbeat %s, want %s", e.HeartbeatTime, want)
			}
			return nil
		})
		environment.Eventually(t, waitFor, "the gates' cache sees the heartbeat", func() error {
			got := &hostingv1alpha1.RolloutWave{}
			if err := waves.Get(ctx, client.ObjectKey{Name: "regions"}, got); err != nil {
				return err
			}
			if e := entry(got, spaceA); e == nil || !e.HeartbeatTime.Time.Equal(begin.Add(2*staleAfter/3)) {
				return fmt.Errorf("entry %+v", e)
			}
			return nil
		})
		if got := drain(); len(got) != 0 {
			t.Errorf("a heartbeat queued %v", got)
		}
		// The gate's clock past the report's heartbeat: wds-a is down.
		clockG.SetTime(begin.Add(2*staleAfter/3 + staleAfter + time.Second))
		if d := decide("v2"); d.Released || d.Reason != wavegate.ReasonEarlierSpaceDown {
			t.Errorf("v2 with wds-a's report stale: %+v, want held as not reporting", d)
		}
		// wds-a's replica catches up: its next heartbeat releases again.
		clockA.SetTime(clockG.Now())
		waitDecision("v2", wavegate.ReasonReleased)
	})

	t.Run("a space let go reports engaged false", func(t *testing.T) {
		stopA()
		e := waitEntry("wds-a let go", spaceA, func(e *hostingv1alpha1.WaveSpaceReport) error {
			if e.Engaged {
				return errors.New("still engaged")
			}
			return nil
		})
		if len(e.Policies) != 1 || e.Policies[0].CurrentRevision != "v2" {
			t.Errorf("the entry let go %+v, want its policies kept", e)
		}
		// The gate reads the wave from its cache, which may not hold the
		// entry just read from the API server yet.
		waitDecision("v2", wavegate.ReasonEarlierSpaceDown)
	})

	t.Run("a replica without the space's fence writes nothing for it", func(t *testing.T) {
		direct, err := client.NewWithWatch(hosting.Config, client.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		const prefix = "workload-stager-shard"
		tenures := sharding.NewTenures(prefix, "replica-c", testr.New(t))
		leases := tenures.Client(direct)
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: prefix + "-" + string(sharding.FenceKey(spaceA))},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("replica-c"), LeaseDurationSeconds: ptr.To[int32](3600),
				RenewTime: &metav1.MicroTime{Time: clockA.Now()}}}
		if err := leases.Create(ctx, lease); err != nil {
			t.Fatal(err)
		}
		clockC := clocktesting.NewFakeClock(clockA.Now())
		stopC := serve(t, reporter(clockC), spaceA, cacheA, tenures.Of(multicluster.ClusterName(spaceA)))
		waitEntry("wds-a served by replica C", spaceA, policyIs("Completed", "v2", "v2"))

		// Another replica takes the fence: C's tenure ends.
		lease.Spec.HolderIdentity = ptr.To("replica-d")
		if err := leases.Update(ctx, lease); err != nil {
			t.Fatal(err)
		}
		n := obs.count(spaceA)
		setStatus(t, wdsA.Client, v1alpha1.RolloutAborted, "v3", "v2")
		environment.Eventually(t, waitFor, "C's report of the change refused by the fence", func() error {
			for _, err := range obs.since(spaceA, n) {
				var lapsed *sharding.LapsedError
				if errors.As(err, &lapsed) {
					return nil
				}
			}
			return fmt.Errorf("attempts %v, want one refused by the fence", obs.since(spaceA, n))
		})
		n = obs.count(spaceA)
		stopC()
		if got := obs.since(spaceA, n); len(got) != 1 || got[0] == nil {
			t.Errorf("the report let go: %v, want one attempt refused by the fence", got)
		}
		if e := entry(get(), spaceA); e == nil || !e.Engaged || e.Policies[0].Phase != "Completed" || e.Policies[0].Revision != "v2" {
			t.Errorf("wds-a's entry %+v, want C's last report within its tenure (Completed v2, engaged)", e)
		}
	})
}

// TestReporterWaitsForTheKind: a stager started before the RolloutWave CRD
// is installed reports its spaces once it is, without a restart.
func TestReporterWaitsForTheKind(t *testing.T) {
	scheme, hostingCRDs := setUp(t)
	// One API server is both the bare hosting cluster and the space.
	both := start(t, "hosting-and-wds", scheme, environment.WithStagerCRDs())
	ctx := t.Context()
	if err := both.Client.Create(ctx, policytest.ThreeStages("web", "nginx")); err != nil {
		t.Fatal(err)
	}
	setStatus(t, both.Client, v1alpha1.RolloutCompleted, "v1", "v1")
	waves, policies := startCache(t, both, scheme), startCache(t, both, scheme)
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	serve(t, &wave.Reporter{Client: both.Client, Waves: waves, Clock: clk, Log: testr.New(t)}, spaceA, policies, nil)
	environment.Eventually(t, waitFor, "the reporter waiting for the kind", func() error {
		if !clk.HasWaiters() {
			return errors.New("no timer")
		}
		return nil
	})
	if _, err := envtest.InstallCRDs(both.Config, envtest.CRDInstallOptions{Paths: []string{hostingCRDs}, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
	w := &hostingv1alpha1.RolloutWave{ObjectMeta: metav1.ObjectMeta{Name: "late"}, Spec: hostingv1alpha1.RolloutWaveSpec{
		Policies: []string{"web"}, Steps: []hostingv1alpha1.WaveStep{{Name: "one", Spaces: []string{spaceA}}}}}
	if err := both.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	environment.Eventually(t, waitFor, "the report once the kind exists", func() error {
		clk.Step(30 * time.Second) // the reporter looks for the kind again every 30s
		got := &hostingv1alpha1.RolloutWave{}
		if err := both.Client.Get(ctx, client.ObjectKey{Name: "late"}, got); err != nil {
			return err
		}
		if len(got.Status.Spaces) != 1 || got.Status.Spaces[0].Space != spaceA || len(got.Status.Spaces[0].Policies) != 1 {
			return fmt.Errorf("status %+v", got.Status)
		}
		return nil
	})
}

// TestReporterIsNotHeldByAnUnreadableSpace: a space whose cache of
// policies never syncs (here its identity may not list them, as a hung
// API server would leave it) does not hold the space's report loop in a
// read: each read is bounded, and once the space is known unreachable its
// entry says engaged false without reading its policies.
func TestReporterIsNotHeldByAnUnreadableSpace(t *testing.T) {
	scheme, hostingCRDs := setUp(t)
	hosting := start(t, "hosting", scheme, environment.WithCRDDirs(hostingCRDs), environment.WithStagerCRDs())
	ctx := t.Context()
	unsynced := startCacheOf(t, userConfig(t, hosting, "no-policies"), cache.Options{Scheme: scheme})

	w := &hostingv1alpha1.RolloutWave{ObjectMeta: metav1.ObjectMeta{Name: "regions"}, Spec: hostingv1alpha1.RolloutWaveSpec{
		Policies: []string{"web"},
		Steps:    []hostingv1alpha1.WaveStep{{Name: "one", Spaces: []string{spaceA}}, {Name: "two", Spaces: []string{spaceB}}}}}
	if err := hosting.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	obs := &observed{}
	r := &wave.Reporter{Client: hosting.Client, Waves: startCache(t, hosting, scheme), Clock: clock.RealClock{}, Log: testr.New(t),
		Observe: obs.observe, ReadTimeout: time.Second}
	serve(t, r, spaceA, unsynced, nil)
	environment.Eventually(t, waitFor, "a bounded read of the unsynced space", func() error {
		if obs.count(spaceA) == 0 {
			return errors.New("no attempt ended")
		}
		return nil
	})
	r.SetReachable(spaceA, false)
	environment.Eventually(t, waitFor, "the unreachable space reported engaged false", func() error {
		got := &hostingv1alpha1.RolloutWave{}
		if err := hosting.Client.Get(ctx, client.ObjectKey{Name: "regions"}, got); err != nil {
			return err
		}
		if e := wavegate.SpaceReport(got, spaceA); e == nil || e.Engaged {
			return fmt.Errorf("entry %+v, want engaged false", e)
		}
		return nil
	})
}
