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

package scale

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout"
	"github.com/kubestellar/workload-stager/test/framework"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/kubestellar"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
	"github.com/kubestellar/workload-stager/test/framework/process"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

const (
	// LatencySpacesEnv overrides the number of spaces of
	// BenchmarkStageAdvanceLatency (default 10).
	LatencySpacesEnv = "STAGER_LATENCY_SPACES"
	// LatencyPoliciesEnv overrides the number of policies per space of
	// BenchmarkStageAdvanceLatency (default 100) and of
	// BenchmarkOneSpaceManyPolicies (default 1000).
	LatencyPoliciesEnv = "STAGER_LATENCY_POLICIES"
	// LatencyPaceEnv overrides the rate, in policies a second over all
	// spaces, at which BenchmarkStageAdvanceLatencyPaced creates its
	// policies (default 10).
	LatencyPaceEnv = "STAGER_LATENCY_PACE"
	// StagerNiceEnv overrides how much BenchmarkStageAdvanceLatency/reserved
	// adds to the nice values of the stager and the harness (default
	// reservedNice).
	StagerNiceEnv = "STAGER_LATENCY_STAGER_NICE"
	// reservedNice is added to the stager's and the harness's nice values
	// in BenchmarkStageAdvanceLatency/reserved: each of their threads then
	// weighs 3.05 times a thread at nice 0 in the kernel's scheduler. By
	// those weights (an estimate, not a measurement), against the twenty or
	// so threads the servers keep runnable in these runs (inferred from
	// every process waiting about 10 s for a CPU per CPU-second it uses, on
	// 2 cores), the stager's two (GOMAXPROCS) get a good part of a core when
	// they want it: its request (250m in the chart) when it needs it, and
	// some of the spare CPU a node that is not full has. The harness gets
	// as much, so that its watches observe at the weight the stager works
	// at.
	reservedNice = -5

	// secretNamespace holds the spaces' kubeconfig Secrets in the hosting space.
	secretNamespace = "kubestellar-stager"
	// workloadNamespace holds the Deployments and their CombinedStatuses.
	workloadNamespace = "web"
	// StagerArgsEnv holds further arguments for the stager, separated by
	// spaces, to compare settings such as --max-concurrent-reconciles.
	StagerArgsEnv = "STAGER_SCALE_STAGER_ARGS"
	// ProfileEnv, when set, has the stager serve its profiles
	// (--pprof-bind-address) and the harness save its CPU profile over the
	// rollouts, in windows of profileWindow: cpu-NN.pprof in the run's
	// directory, kept with STAGER_SCALE_KEEP (go tool pprof takes them all).
	ProfileEnv = "STAGER_SCALE_PROFILE"
	// profileWindow is the length of one CPU profile of the stager.
	profileWindow = 20 * time.Second

	// floorNamespace holds the ConfigMaps of the round-trip floor.
	floorNamespace = "floor"
	// idleInterval is the time between two round-trip probes in a space
	// before the rollouts; loadedInterval while they run, where the probes
	// must not add much load of their own (10 spaces: 10 writes a second).
	idleInterval   = 100 * time.Millisecond
	loadedInterval = time.Second
	// idleProbes is the number of round-trip probes per space before the rollouts.
	idleProbes = 20
)

// stageClusters are the WECs of the three stages of policytest.ThreeStages.
var stageClusters = kubestellar.EnvClusters("dev1", "test1", "prod1")

// stages are the stages of policytest.ThreeStages, in order.
var stages = []string{"dev", "test", "prod"}

// BenchmarkStageAdvanceLatency runs, once whatever b.N, one stager binary
// serving 10 spaces (real kube-apiservers, each with the KubeStellar
// simulator resynced on every change, so without added delay) and rolls 100
// three-stage policies out in each at once. For every stage transition it
// records the time from the CombinedStatus write that satisfies the stage's
// condition to the create of the next stage's BindingPolicy, both as a watch
// sees them; beside it, in the same run and under the same load, the raw
// create→watch round trip of a ConfigMap in every space, the floor. It also
// reports the stager's memory per engaged space beside the resident memory
// of one KubeStellar controller-manager (for one WDS), the time to converge,
// CPU seconds and peak RSS.
//
// It does so twice, one after the other, so that the two CPU models are
// measured side by side under the same machine state:
//   - equal: every process at the same CPU weight. The stager is one of 24
//     processes on 2 cores that 22 servers keep busy, which no deployment
//     does: there, the servers of ten WDSes run on CPUs of their own or
//     within their requests, and the stager gets its request when it needs
//     it.
//   - reserved: the stager and this harness (its watches, which time the
//     advances and the round trips, its probes and its simulators) at a
//     higher weight than the API servers and etcds: their nice value 5
//     below (reservedNice, or $STAGER_LATENCY_STAGER_NICE), standing for
//     the CPU the stager's request reserves. The floor is then measured at
//     the weight the stager works at. Lowering a nice value takes root
//     (CAP_SYS_NICE); the run fails, saying so, if a process or thread does
//     not run at the value asked for.
func BenchmarkStageAdvanceLatency(b *testing.B) {
	spaces, policies := envInt(b, LatencySpacesEnv, 10), envInt(b, LatencyPoliciesEnv, 100)
	nice := envNice(b, StagerNiceEnv, reservedNice)
	var equal, reserved float64
	b.Run("equal", func(b *testing.B) {
		equal = runRollouts(b, rollouts{spaces: spaces, policies: policies, compareKubeStellar: true})
	})
	b.Run("reserved", func(b *testing.B) {
		reserved = runRollouts(b, rollouts{spaces: spaces, policies: policies, stagerNice: nice, harnessNice: nice})
	})
	if equal > 0 && reserved > 0 {
		b.Logf("p99 advance / p99 round trip, side by side: equal %.2f, reserved %.2f (the goal is judged on reserved)", equal, reserved)
	}
}

// BenchmarkStageAdvanceLatencyPaced is BenchmarkStageAdvanceLatency with the
// policies created at a steady rate (10 a second over the 10 spaces, taking
// turns) instead of all at once. All at once, each space's 100 policies
// advance in lockstep and the API servers use nearly all of the machine, so
// an advance mostly waits for CPU; paced, the same 1,000 rollouts tell what
// the stager itself adds to the round trip.
func BenchmarkStageAdvanceLatencyPaced(b *testing.B) {
	runRollouts(b, rollouts{spaces: envInt(b, LatencySpacesEnv, 10), policies: envInt(b, LatencyPoliciesEnv, 100),
		pace: envInt(b, LatencyPaceEnv, 10)})
}

// BenchmarkOneSpaceManyPolicies is BenchmarkStageAdvanceLatency with 1,000
// policies in a single space.
func BenchmarkOneSpaceManyPolicies(b *testing.B) {
	runRollouts(b, rollouts{spaces: 1, policies: envInt(b, LatencyPoliciesEnv, 1000)})
}

// rollouts describes one run of runRollouts.
type rollouts struct {
	// spaces is the number of spaces, policies the number of three-stage
	// policies in each.
	spaces, policies int
	// pace, when positive, is how many policies a second are created, the
	// spaces taking turns; otherwise every policy is created at once.
	pace int
	// compareKubeStellar measures one KubeStellar controller-manager's
	// memory beside the stager's per engaged space.
	compareKubeStellar bool
	// stagerNice, when not zero, is added to the stager's nice value
	// (nice -n); every other process of the run keeps this process's.
	stagerNice int
	// harnessNice, when not zero, is added to this process's nice value
	// once every other process has started, for the watches, probes and
	// simulators of the measurement.
	harnessNice int
}

// latencySpace is one WDS of the run, with its simulator.
type latencySpace struct {
	*environment.Space
	sim          *kubestellar.Simulator
	availability *kubestellar.Availability
}

// timeline records, as the run's watches see them, when each BindingPolicy
// was created and when a CombinedStatus first said its workload was
// available, by "<space>/<BindingPolicy>"; and the round-trip probes.
type timeline struct {
	mu        sync.Mutex
	created   map[string]time.Time
	satisfied map[string]time.Time
	recorded  map[string]time.Time // the stage's record first seen Succeeded in the policy's status
	sent      map[string]time.Time // probe ConfigMap "<space>/<name>" → before its create
	trips     []time.Duration
	// resumed counts the watches resumed after the API server ended them,
	// restarted those resumed from now on, events between being lost.
	resumed, restarted int
}

// restart counts a watch resumed, or restarted from now on.
func (tl *timeline) restart(lost bool) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if lost {
		tl.restarted++
	} else {
		tl.resumed++
	}
}

func newTimeline() *timeline {
	return &timeline{created: map[string]time.Time{}, satisfied: map[string]time.Time{}, recorded: map[string]time.Time{}, sent: map[string]time.Time{}}
}

// firstAt records t under key in m unless a time is there already.
func (tl *timeline) firstAt(m map[string]time.Time, key string, t time.Time) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if _, ok := m[key]; !ok {
		m[key] = t
	}
}

// watchSpace follows a space's BindingPolicies, CombinedStatuses and probe
// ConfigMaps until ctx ends. A new stage BindingPolicy has the simulated
// WECs report its workload available at once.
func (tl *timeline) watchSpace(ctx context.Context, b *testing.B, sp *latencySpace) {
	wc, err := client.NewWithWatch(sp.Config, client.Options{Scheme: sp.Client.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	// follow watches a list until ctx ends. The API server ends a watch
	// whose client falls behind; it is resumed from the last
	// resourceVersion seen, or from now when that is too old (events
	// missed then make the figures worse, not better; they are counted).
	follow := func(list client.ObjectList, opts []client.ListOption, seen func(runtime.Object, time.Time)) {
		watchOnce := func(rv string) (watch.Interface, error) {
			return wc.Watch(ctx, list, append(slices.Clone(opts), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})...)
		}
		w, err := watchOnce("")
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			rv := ""
			for {
				for e := range w.ResultChan() {
					now := time.Now()
					if e.Type == watch.Error {
						rv = "" // too old: from now on
						tl.restart(true)
						continue // the server ends the watch after the error
					}
					if o, ok := e.Object.(client.Object); ok {
						rv = o.GetResourceVersion()
					}
					if e.Type == watch.Added || e.Type == watch.Modified {
						seen(e.Object, now)
					}
				}
				w.Stop()
				if ctx.Err() == nil {
					tl.restart(false)
				}
				for ctx.Err() == nil {
					if w, err = watchOnce(rv); err == nil {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				if ctx.Err() != nil {
					return
				}
			}
		}()
	}
	follow(&ksv1alpha1.BindingPolicyList{}, nil, func(obj runtime.Object, now time.Time) {
		bp, ok := obj.(*ksv1alpha1.BindingPolicy)
		if !ok || bp.Labels[v1alpha1.PolicyLabel] == "" {
			return
		}
		tl.firstAt(tl.created, sp.Name+"/"+bp.Name, now)
		sp.availability.SetAvailable(bp.Name, true)
		sp.sim.Resync()
	})
	follow(&ksv1alpha1.CombinedStatusList{}, []client.ListOption{client.InNamespace(workloadNamespace)}, func(obj runtime.Object, now time.Time) {
		cs, ok := obj.(*ksv1alpha1.CombinedStatus)
		if ok && reportsAvailable(cs) {
			tl.firstAt(tl.satisfied, sp.Name+"/"+cs.Labels[rollout.StatusLabelBindingPolicy], now)
		}
	})
	follow(&v1alpha1.StagedBindingPolicyList{}, nil, func(obj runtime.Object, now time.Time) {
		p, ok := obj.(*v1alpha1.StagedBindingPolicy)
		if !ok {
			return
		}
		for _, st := range p.Status.Stages {
			if st.Phase == v1alpha1.StageSucceeded {
				tl.firstAt(tl.recorded, sp.Name+"/"+v1alpha1.StagePlacement(p.Name, st.Name).String(), now)
			}
		}
	})
	follow(&corev1.ConfigMapList{}, []client.ListOption{client.InNamespace(floorNamespace)}, func(obj runtime.Object, now time.Time) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			return
		}
		tl.mu.Lock()
		defer tl.mu.Unlock()
		key := sp.Name + "/" + cm.Name
		if sent, ok := tl.sent[key]; ok {
			tl.trips = append(tl.trips, now.Sub(sent))
			delete(tl.sent, key)
		}
	})
}

// reportsAvailable says whether a CombinedStatus, as the simulator's
// Availability writes it, counts an available replica.
func reportsAvailable(cs *ksv1alpha1.CombinedStatus) bool {
	for _, r := range cs.Results {
		for _, row := range r.Rows {
			for _, col := range row.Columns {
				if col.Number != nil && *col.Number == "1" {
					return true
				}
			}
		}
	}
	return false
}

// probe creates the probe ConfigMap name in a space and records when.
func (tl *timeline) probe(ctx context.Context, sp *latencySpace, name string) error {
	tl.mu.Lock()
	tl.sent[sp.Name+"/"+name] = time.Now()
	tl.mu.Unlock()
	return sp.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: floorNamespace, Name: name}})
}

// takeTrips returns the round trips recorded so far and forgets them.
func (tl *timeline) takeTrips() []time.Duration {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	trips := tl.trips
	tl.trips = nil
	return trips
}

// write writes, for the logs kept, when each BindingPolicy was seen created,
// satisfied and recorded, one line each: kind, "<space>/<BindingPolicy>",
// time (RFC 3339, nanoseconds).
func (tl *timeline) write(path string) error {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var out strings.Builder
	for kind, m := range map[string]map[string]time.Time{"created": tl.created, "satisfied": tl.satisfied, "recorded": tl.recorded} {
		for key, t := range m {
			fmt.Fprintf(&out, "%s\t%s\t%s\n", kind, key, t.UTC().Format(time.RFC3339Nano))
		}
	}
	return os.WriteFile(path, []byte(out.String()), 0o600)
}

// advanceTimes are the times of a run's stage advances.
type advanceTimes struct {
	// all are, for every policy and every stage but the last, the time
	// from the satisfying CombinedStatus to the next stage's
	// BindingPolicy; from holds them by the stage advanced from.
	all  []time.Duration
	from [][]time.Duration
	// toRecord is the time from the satisfying CombinedStatus to the stage
	// recorded Succeeded in the policy's status; placedToRecord from the
	// next stage's BindingPolicy to that record (the stager places the
	// next stage first, then records the advance: negative if it recorded
	// it first).
	toRecord, placedToRecord []time.Duration
	// met are the times the advances' conditions were met, in the order of all before sorting;
	// unsorted are the advances in that order.
	met      []time.Time
	unsorted []time.Duration
}

// byWindow says, for each window of width since began in which conditions
// were met, how many advances there were and their p50 and p99: whether the
// slow advances are those of a burst.
func (a *advanceTimes) byWindow(began time.Time, width time.Duration) string {
	windows := map[int][]time.Duration{}
	last := 0
	for i, t := range a.met {
		w := int(t.Sub(began) / width)
		windows[w] = append(windows[w], a.unsorted[i])
		last = max(last, w)
	}
	var parts []string
	for w := 0; w <= last; w++ {
		d := windows[w]
		if len(d) == 0 {
			continue
		}
		slices.Sort(d)
		parts = append(parts, fmt.Sprintf("%s–%s: %d, p50 %s p99 %s", time.Duration(w)*width, time.Duration(w+1)*width, len(d),
			percentile(d, 0.5).Round(time.Millisecond), percentile(d, 0.99).Round(time.Millisecond)))
	}
	return strings.Join(parts, "; ")
}

// sort sorts every list of times.
func (a *advanceTimes) sort() {
	for _, d := range append([][]time.Duration{a.all, a.toRecord, a.placedToRecord}, a.from...) {
		slices.Sort(d)
	}
}

// advances returns the times of every advance of every policy.
func (tl *timeline) advances(spaces []*latencySpace, policies int) (advanceTimes, error) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	a := advanceTimes{from: make([][]time.Duration, len(stages)-1)}
	for _, sp := range spaces {
		for i := range policies {
			policy := policyName(i)
			for s := 1; s < len(stages); s++ {
				from := sp.Name + "/" + v1alpha1.StagePlacement(policy, stages[s-1]).String()
				to := sp.Name + "/" + v1alpha1.StagePlacement(policy, stages[s]).String()
				satisfied, ok1 := tl.satisfied[from]
				created, ok2 := tl.created[to]
				recorded, ok3 := tl.recorded[from]
				if !ok1 || !ok2 || !ok3 {
					return advanceTimes{}, fmt.Errorf("%s → %s: satisfied seen %v, next created seen %v, recorded seen %v", from, to, ok1, ok2, ok3)
				}
				a.all = append(a.all, created.Sub(satisfied))
				a.unsorted = append(a.unsorted, created.Sub(satisfied))
				a.met = append(a.met, satisfied)
				a.from[s-1] = append(a.from[s-1], created.Sub(satisfied))
				a.toRecord = append(a.toRecord, recorded.Sub(satisfied))
				a.placedToRecord = append(a.placedToRecord, recorded.Sub(created))
			}
		}
	}
	a.sort()
	return a, nil
}

// stopSpaces stops the spaces started, all at once: a kube-apiserver takes
// seconds to stop, ten of them one after another minutes.
func stopSpaces(spaces []*latencySpace) {
	_ = forEach(len(spaces), func(i int) error {
		if spaces[i] != nil {
			_ = spaces[i].Stop()
		}
		return nil
	})
}

func policyName(i int) string { return fmt.Sprintf("p%04d", i) }

// percentile returns the q-quantile (0 < q ≤ 1) of sorted durations.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// ms formats a duration in milliseconds for b.ReportMetric.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// runRollouts is the harness of BenchmarkStageAdvanceLatency,
// BenchmarkStageAdvanceLatencyPaced and BenchmarkOneSpaceManyPolicies: the
// spaces with their three-stage policies, rolled out at once or paced.
func runRollouts(b *testing.B, r rollouts) (ratio float64) {
	n, policies := r.spaces, r.policies
	h := startHarness(b, "stager-latency-")
	ctx, dir, binary, scheme := h.ctx, h.dir, h.binary, h.scheme

	// One KubeStellar controller-manager for one WDS, for its memory.
	ksRSS := 0
	if r.compareKubeStellar {
		ks, err := stack.Start(ctx, stack.Options{Clusters: stageClusters, WorkDir: filepath.Join(dir, "kubestellar")})
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(5 * time.Second) // past its start-up
		ksRSS, _ = memory(ks.ControllerManagerPid("wds1"))
		if err := ks.Stop(); err != nil {
			b.Fatal(err)
		}
	}

	hosting, err := environment.StartSpace("hosting", environment.WithScheme(scheme))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = hosting.Stop() }()
	// The simulators and their caches run until the spaces stop.
	simulating, stopSimulators := context.WithCancel(ctx)
	spaces := make([]*latencySpace, n)
	if err := forEach(n, func(i int) error {
		wds, err := environment.StartSpace(fmt.Sprintf("wds%02d", i+1), environment.WithStagerCRDs(), environment.WithKubeStellarCRDs(),
			environment.WithScheme(scheme))
		if err != nil {
			return err
		}
		// The simulator reads through informers, as KubeStellar's
		// controllers do: its passes would otherwise list every object of
		// the space from the API server, time and again.
		cached, err := cluster.New(wds.Config, func(o *cluster.Options) {
			o.Scheme = scheme
			o.Client.Cache = &client.CacheOptions{Unstructured: true}
		})
		if err != nil {
			return err
		}
		go func() { _ = cached.Start(simulating) }()
		availability := kubestellar.NewAvailability(policytest.Collector)
		spaces[i] = &latencySpace{Space: wds, availability: availability,
			sim: kubestellar.New(cached.GetClient(), stageClusters, kubestellar.WithReporter(availability.Report), kubestellar.WithInterval(time.Second))}
		for _, ns := range []string{workloadNamespace, floorNamespace} {
			if err := wds.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		stopSimulators()
		stopSpaces(spaces)
		b.Fatal(err)
	}
	defer func() {
		stopSimulators()
		stopSpaces(spaces)
	}()
	for _, sp := range spaces {
		go func() { _ = sp.sim.Run(simulating) }()
	}

	kubeconfig := filepath.Join(dir, "hosting.kubeconfig")
	if err := os.WriteFile(kubeconfig, hosting.Kubeconfig(), 0o600); err != nil {
		b.Fatal(err)
	}
	addrs, err := process.FreeAddresses(2)
	if err != nil {
		b.Fatal(err)
	}
	metricsAddr, pprofAddr := addrs[0], addrs[1]
	args := []string{
		"--kubeconfig=" + kubeconfig, "--provider=kubeconfig", "--kubeconfig-namespace=" + secretNamespace,
		"--leader-elect=false", "--zap-time-encoding=rfc3339nano",
		"--metrics-bind-address=" + metricsAddr, "--metrics-secure=false", "--health-probe-bind-address=0",
	}
	profile := os.Getenv(ProfileEnv) != ""
	if profile {
		args = append(args, "--pprof-bind-address="+pprofAddr)
	}
	command := append([]string{binary}, args...)
	command = append(command, strings.Fields(os.Getenv(StagerArgsEnv))...)
	if r.stagerNice != 0 {
		command = append([]string{"nice", "-n", strconv.Itoa(r.stagerNice)}, command...)
	}
	stager, err := stack.StartProcess(command[0], command[1:], filepath.Join(dir, "stager.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = stager.Stop() }()
	if err := environment.Poll(ctx, time.Second, time.Minute, "the stager's metrics", func() error {
		_, err := readySpaces(ctx, metricsAddr)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	own, err := niceness(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	if r.stagerNice != 0 {
		if nice, err := niceness(stager.Pid()); err != nil || nice != own+r.stagerNice {
			b.Fatalf("the stager runs at nice %d (%v), not %d: lowering a nice value takes root (CAP_SYS_NICE); see %s",
				nice, err, own+r.stagerNice, filepath.Join(dir, "stager.log"))
		}
		b.Logf("the stager runs at nice %d, the servers at %d", own+r.stagerNice, own)
	}
	time.Sleep(3 * time.Second)
	bareRSS, _ := memory(stager.Pid())

	// Register the spaces and wait until the stager serves them all.
	registered := time.Now()
	if err := forEach(n, func(i int) error {
		return spaces[i].RegisterWithStager(ctx, hosting.Client, secretNamespace, "kubestellar-stager")
	}); err != nil {
		b.Fatal(err)
	}
	if err := environment.Poll(ctx, time.Second, 5*time.Minute, "every space to be ready", func() error {
		ready, err := readySpaces(ctx, metricsAddr)
		if err == nil && ready < n {
			err = fmt.Errorf("%d of %d spaces ready", ready, n)
		}
		return err
	}); err != nil {
		b.Fatal(err)
	}
	engaged := time.Since(registered)
	time.Sleep(3 * time.Second)
	engagedRSS, _ := memory(stager.Pid())
	perSpace := float64(engagedRSS-bareRSS) / float64(n)

	if r.harnessNice != 0 {
		if err := setThreadsNice(own + r.harnessNice); err != nil {
			b.Fatalf("%v: lowering a nice value takes root (CAP_SYS_NICE)", err)
		}
		defer func() {
			if err := setThreadsNice(own); err != nil {
				b.Error(err)
			}
		}()
		b.Logf("this process (its watches, probes and simulators) runs at nice %d from here on", own+r.harnessNice)
	}

	tl := newTimeline()
	watching, stopWatching := context.WithCancel(ctx)
	defer stopWatching() // before the spaces stop
	for _, sp := range spaces {
		tl.watchSpace(watching, b, sp)
	}
	// The idle floor: round trips one after the other, before any policy.
	if err := forEach(n, func(i int) error {
		for k := range idleProbes {
			if err := tl.probe(ctx, spaces[i], fmt.Sprintf("idle-%d", k)); err != nil {
				return err
			}
			time.Sleep(idleInterval)
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	time.Sleep(time.Second)
	idle := tl.takeTrips()

	// The workload, then every policy at once.
	if err := forEach(n*policies, func(i int) error {
		sp, name := spaces[i/policies], policyName(i%policies)
		return sp.Client.Create(ctx, policytest.Deployment(workloadNamespace, name))
	}); err != nil {
		b.Fatal(err)
	}
	workBefore, workErr := spacesWork(ctx, spaces)
	queueBefore, queueErr := readQueueWork(ctx, metricsAddr)
	cpuBefore, othersBefore, harnessBefore := processCPU(stager.Pid()), apiServersCPU(), processCPU(os.Getpid())
	began := time.Now()
	b.ResetTimer()
	loaded := make(chan struct{})
	var probes sync.WaitGroup
	for _, sp := range spaces {
		probes.Go(func() {
			for k := 0; ; k++ {
				select {
				case <-loaded:
					return
				case <-time.After(loadedInterval):
				}
				if err := tl.probe(ctx, sp, fmt.Sprintf("load-%d", k)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	if profile {
		probes.Go(func() {
			if err := profileCPU(ctx, pprofAddr, dir, loaded); err != nil {
				b.Error(err)
			}
		})
	}
	if err := createPolicies(ctx, spaces, policies, r.pace); err != nil {
		b.Fatal(err)
	}
	if err := environment.Poll(ctx, time.Second, 30*time.Minute, "every rollout to complete", func() error {
		done := 0
		for _, sp := range spaces {
			list := &v1alpha1.StagedBindingPolicyList{}
			if err := sp.Client.List(ctx, list); err != nil {
				return err
			}
			for _, p := range list.Items {
				if p.Status.Phase == v1alpha1.RolloutCompleted {
					done++
				}
			}
		}
		if done < n*policies {
			return fmt.Errorf("%d of %d rollouts completed", done, n*policies)
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	converged := time.Since(began)
	b.StopTimer()
	close(loaded)
	probes.Wait()
	time.Sleep(time.Second)
	loadTrips := tl.takeTrips()
	stagerUse := processCPU(stager.Pid()).minus(cpuBefore)
	othersUse, harnessUse := apiServersCPU().minus(othersBefore), processCPU(os.Getpid()).minus(harnessBefore)
	rss, peak := memory(stager.Pid())

	workAfter, err := spacesWork(ctx, spaces)
	workErr = errors.Join(workErr, err)
	queueAfter, err := readQueueWork(ctx, metricsAddr)
	queueErr = errors.Join(queueErr, err)
	times, err := tl.advances(spaces, policies)
	if err != nil {
		b.Fatal(err)
	}
	if os.Getenv(KeepEnv) != "" {
		if err := tl.write(filepath.Join(dir, "timeline.tsv")); err != nil {
			b.Error(err)
		}
	}
	advances, toRecord, placedToRecord := times.all, times.toRecord, times.placedToRecord
	for _, d := range [][]time.Duration{idle, loadTrips} {
		slices.Sort(d)
	}
	report := func(name string, d time.Duration) { b.ReportMetric(ms(d), name) }
	report("advance-p50-ms", percentile(advances, 0.5))
	report("advance-p90-ms", percentile(advances, 0.9))
	report("advance-p99-ms", percentile(advances, 0.99))
	report("advance-max-ms", percentile(advances, 1))
	report("roundtrip-loaded-p50-ms", percentile(loadTrips, 0.5))
	report("roundtrip-loaded-p99-ms", percentile(loadTrips, 0.99))
	report("roundtrip-idle-p50-ms", percentile(idle, 0.5))
	report("roundtrip-idle-p99-ms", percentile(idle, 0.99))
	if len(loadTrips) == 0 {
		b.Fatal("no round trip was measured under load")
	}
	ratio = percentile(advances, 0.99).Seconds() / percentile(loadTrips, 0.99).Seconds()
	b.ReportMetric(ratio, "advance-p99/roundtrip-p99")
	b.ReportMetric(converged.Seconds(), "s-to-converge")
	b.ReportMetric(stagerUse.used, "cpu-s-to-converge")
	if stagerUse.used > 0 {
		b.ReportMetric(stagerUse.wait/stagerUse.used, "cpu-wait-s-per-cpu-s")
	}
	b.ReportMetric(float64(peak)/1024, "MiB-rss-peak")
	b.ReportMetric(perSpace/1024, "MiB-per-engaged-space")
	created := "all at once"
	if r.pace > 0 {
		created = fmt.Sprintf("%d a second", r.pace)
	}
	b.Logf("%d spaces × %d three-stage policies, created %s; %d stage advances: p50 %s p90 %s p99 %s max %s; "+
		"create→watch round trip under the same load (%d probes): p50 %s p99 %s, idle (%d): p50 %s p99 %s; "+
		"p99 advance / p99 round trip = %.2f",
		n, policies, created, len(advances), percentile(advances, 0.5), percentile(advances, 0.9), percentile(advances, 0.99), percentile(advances, 1),
		len(loadTrips), percentile(loadTrips, 0.5), percentile(loadTrips, 0.99), len(idle), percentile(idle, 0.5), percentile(idle, 0.99),
		percentile(advances, 0.99).Seconds()/percentile(loadTrips, 0.99).Seconds())
	b.Logf("the record of an advance: condition met → stage recorded Succeeded p50 %s p99 %s; next BindingPolicy created → stage recorded p50 %s p99 %s",
		percentile(toRecord, 0.5), percentile(toRecord, 0.99), percentile(placedToRecord, 0.5), percentile(placedToRecord, 0.99))
	for s, d := range times.from {
		b.Logf("advances from stage %q: p50 %s p90 %s p99 %s", stages[s], percentile(d, 0.5), percentile(d, 0.9), percentile(d, 0.99))
	}
	b.Logf("advances by when their condition was met, after the first policy was created: %s", times.byWindow(began, 10*time.Second))
	if queueErr != nil {
		b.Logf("the stager's work-queue metrics could not be read: %v", queueErr)
	} else {
		b.Logf("the stager's queues meanwhile: %s", queueAfter.minus(queueBefore))
	}
	b.Logf("CPU seconds meanwhile: the stager %.1f, the %d kube-apiservers and etcds %.1f, this process (simulators, watches, probes) %.1f",
		stagerUse.used, 2*(n+1), othersUse.used, harnessUse.used)
	b.Logf("seconds runnable but waiting for a CPU meanwhile, and per CPU second used: the stager %s, the kube-apiservers and etcds %s, this process %s",
		stagerUse.waiting(), othersUse.waiting(), harnessUse.waiting())
	if workErr != nil {
		b.Logf("the spaces' API servers' counters could not be read: %v", workErr)
	} else {
		work := workAfter.minus(workBefore)
		b.Logf("the spaces' API servers meanwhile (the stager's, the simulators' and this harness's requests): requests %s; "+
			"refused (by status) %s; watch events sent %s; their MiB %s", top(work.requests, 14), top(work.refused, 8),
			top(work.watchEvents, 6), top(mebibytes(work.watchBytes), 6))
	}
	b.Logf("watches resumed after the API server ended them: %d, of which restarted from then on (events lost): %d", tl.resumed, tl.restarted)
	b.Logf("all %d rollouts completed %s after the first policy was created, stager CPU %.1f s; RSS %d MiB at the end, peak %d MiB",
		n*policies, converged.Round(time.Millisecond), stagerUse.used, rss/1024, peak/1024)
	b.Logf("stager RSS: %d MiB with no space, %d MiB with %d engaged (in %s): %.2f MiB per engaged space",
		bareRSS/1024, engagedRSS/1024, n, engaged.Round(time.Millisecond), perSpace/1024)
	if ksRSS > 0 && perSpace > 0 {
		b.ReportMetric(float64(ksRSS)/1024, "MiB-ks-controller-manager")
		b.Logf("one KubeStellar controller-manager (one WDS, idle after start): RSS %d MiB, %.1f× the stager's per engaged space",
			ksRSS/1024, float64(ksRSS)/perSpace)
	}
	return ratio
}

// createPolicies creates the three-stage policies of every space: all at
// once when pace is not positive, else pace a second, the spaces taking
// turns (policy k of every space before policy k+1 of any).
func createPolicies(ctx context.Context, spaces []*latencySpace, policies, pace int) error {
	n := len(spaces)
	create := func(i int) error {
		sp, name := spaces[i%n], policyName(i/n)
		return sp.Client.Create(ctx, policytest.ThreeStages(name, name))
	}
	if pace <= 0 {
		return forEach(n*policies, create)
	}
	ticker := time.NewTicker(time.Second / time.Duration(pace))
	defer ticker.Stop()
	var g errgroup.Group
	for i := range n * policies {
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), g.Wait())
		case <-ticker.C:
		}
		g.Go(func() error { return create(i) })
	}
	return g.Wait()
}

// apiServersCPU returns the CPU this process's kube-apiservers and etcds
// have used and waited for.
func apiServersCPU() cpuUse {
	var total cpuUse
	for _, pid := range framework.ChildProcesses() {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil {
			continue
		}
		if name := strings.TrimSpace(string(comm)); name == "kube-apiserver" || name == "etcd" {
			use := processCPU(pid)
			total.used += use.used
			total.wait += use.wait
		}
	}
	return total
}

// profileCPU saves the stager's CPU profile, served at addr, in windows of
// profileWindow into dir/cpu-NN.pprof until done is closed.
func profileCPU(ctx context.Context, addr, dir string, done <-chan struct{}) error {
	for k := 0; ; k++ {
		select {
		case <-done:
			return nil
		default:
		}
		url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(profileWindow.Seconds()))
		body, err := httpGet(ctx, url)
		if err != nil {
			return fmt.Errorf("the stager's CPU profile: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("cpu-%02d.pprof", k)), body, 0o644); err != nil {
			return err
		}
	}
}

// setThreadsNice sets the nice value of every thread of this process to
// nice and checks it. Linux keeps a nice value per thread, and a new thread
// takes its creator's; the threads are walked until every one is seen at
// nice, as the Go runtime may start one meanwhile.
func setThreadsNice(nice int) error {
	for range 5 {
		entries, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		done := true
		for _, e := range entries {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if current, err := niceness(tid); err == nil && current == nice {
				continue
			}
			done = false
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("setting the nice value of thread %d to %d: %w", tid, nice, err)
			}
		}
		if done {
			return nil
		}
	}
	return fmt.Errorf("the threads of this process are not all at nice %d after 5 passes", nice)
}
