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

// Package scale holds the scale harness of `make bench`: one stager serving
// many kcp workspaces (test/framework/kcpstack), one rollout in each. It measures, in
// one run, the time until the stager has engaged every workspace, the time
// until every rollout has converged, and the stager's memory. It is a
// benchmark, not a test: it runs only with -bench.
package scale

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/cmd/stager/app"
	"github.com/kubestellar/workload-stager/test/framework"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/kcpstack"
	"github.com/kubestellar/workload-stager/test/framework/kubestellar"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

const (
	// WorkspacesEnv overrides the number of workspaces (default 100).
	WorkspacesEnv = "STAGER_SCALE_WORKSPACES"
	// KeepEnv, when set, keeps a run's logs (the stager's, the harness's)
	// in the directory it names at the end.
	KeepEnv = "STAGER_SCALE_KEEP"
	// defaultWorkspaces is the number of workspaces of the scale run.
	defaultWorkspaces = 100
	// HeapProfilesEnv, when set, names a directory that receives each replica's
	// heap profile once the spaces are engaged and once the rollouts have
	// converged.
	HeapProfilesEnv = "STAGER_SCALE_HEAP_PROFILES"
	// CPUProfileDirEnv, when set, names a directory that receives each
	// replica's CPU profile over cpuProfileSeconds from the rollouts' start
	// (<id>-converging.cpu.pb.gz), while they converge.
	CPUProfileDirEnv = "STAGER_SCALE_CPU_PROFILE_DIR"
	// cpuProfileSeconds is how long each CPU profile lasts.
	cpuProfileSeconds = 60
	// SimulatorIntervalEnv sets the milliseconds between two passes of each
	// workspace's KubeStellar simulator (default 1000); each pass lists
	// every kind of object the simulator reads.
	SimulatorIntervalEnv = "STAGER_SCALE_SIMULATOR_INTERVAL_MS"
	// IdentityEnv picks the replicas' identity in kcp: "user" (the
	// default, as config/kcp/README.md advises) or "serviceaccount".
	IdentityEnv = "STAGER_SCALE_IDENTITY"
	// ReplicasEnv overrides the number of replicas (default 3), sharded
	// when more than one.
	ReplicasEnv = "STAGER_SCALE_REPLICAS"
	// KCPDataEnv names a directory of kcp data (kcpstack.SaveSnapshot) with
	// the workspaces created and bound: a run starts kcp from a copy of it
	// when it was made for the same workspaces, kcp binary and set-up, and
	// otherwise creates them and saves them there.
	KCPDataEnv = "STAGER_SCALE_KCP_DATA"
	// KCPBaseEnv names a directory of kcp data saved for fewer workspaces
	// (the first of this run's): when $STAGER_SCALE_KCP_DATA holds no
	// snapshot for this run, kcp starts from a copy of this one and only
	// the rest are created.
	KCPBaseEnv = "STAGER_SCALE_KCP_BASE"
	// SnapshotOnlyEnv, when set, ends the run once the workspaces are saved
	// in $STAGER_SCALE_KCP_DATA, before any replica starts: it makes the
	// snapshots that measured runs then start from alike.
	SnapshotOnlyEnv = "STAGER_SCALE_SNAPSHOT_ONLY"
	// NoFailoverEnv, when set, ends the run once the rollouts have
	// converged, without killing a replica.
	NoFailoverEnv = "STAGER_SCALE_NO_FAILOVER"
	// CreateParallelismEnv overrides how many workspaces are created at a
	// time (default parallelism).
	CreateParallelismEnv = "STAGER_SCALE_CREATE_PARALLELISM"
	// parallelism bounds the concurrent workspace set-ups and writes.
	parallelism = 10
)

var clusters = kubestellar.EnvClusters("dev1", "test1", "prod1")

// BenchmarkKCPWorkspaces runs the scale harness once, whatever b.N.
func BenchmarkKCPWorkspaces(b *testing.B) {
	n := envInt(b, WorkspacesEnv, defaultWorkspaces)
	replicas := envInt(b, ReplicasEnv, 3)
	h := startHarness(b, "stager-kcp-scale-")
	ctx, dir, binary, scheme := h.ctx, h.dir, h.binary, h.scheme
	identity := kcpstack.Identity(os.Getenv(IdentityEnv))
	if identity == "" {
		identity = kcpstack.IdentityUser
	}
	simInterval := time.Duration(envInt(b, SimulatorIntervalEnv, 1000)) * time.Millisecond
	kcp, workspaces := startWorkspaces(ctx, b, n, kcpstack.Options{WorkDir: dir, Scheme: scheme, Clusters: clusters,
		SimulatorInterval: simInterval, StagerIdentity: identity})
	defer func() { _ = kcp.Stop() }()
	if os.Getenv(SnapshotOnlyEnv) != "" {
		b.Logf("%s is set: the snapshot is made, no replica runs", SnapshotOnlyEnv)
		return
	}

	kubeconfig, err := kcp.WriteStagerKubeconfig(dir)
	if err != nil {
		b.Fatal(err)
	}
	// The observer's watches open before kcp's count of watches is read,
	// so that the count with the replicas engaged, less this one, is theirs.
	// The observer stops before kcp does (deferred later, run earlier),
	// and before the benchmark ends, as it logs.
	obs, err := observe(ctx, b.Logf, kcp, workspaces, scheme)
	if err != nil {
		b.Fatal(err)
	}
	defer obs.stop()
	watchesBefore, err := kcpWatches(ctx, kcp.KCP.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	kcpBefore, err := kcpWork(ctx, kcp.KCP.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	// Where the machine's CPU went, beside the fleet's: kcp's, and this
	// process's (the simulators and the observer).
	others := func() otherCPU {
		return otherCPU{kcp: cpuSeconds(kcp.KCP.Process().Pid()), harness: cpuSeconds(os.Getpid())}
	}
	othersBefore := others()
	started := time.Now()
	b.ResetTimer()
	profiles, cpuProfiles := os.Getenv(HeapProfilesEnv), os.Getenv(CPUProfileDirEnv)
	f, err := startFleet(binary, dir, kubeconfig, replicas, profiles != "" || cpuProfiles != "")
	defer f.stop()
	if err != nil {
		b.Fatal(err)
	}

	// readyWhileAllAlive counts the ready spaces, and fails once a replica has
	// exited: a fleet short of a replica would be measured as a smaller one.
	readyWhileAllAlive := func() (int, error) {
		if err := f.lost(); err != nil {
			return 0, err
		}
		return f.readySpaces(ctx)
	}
	if err := pollUntilAll(ctx, bound(15*time.Minute, n), n, "spaces ready", readyWhileAllAlive); err != nil {
		b.Fatal(err)
	}
	firstReady := time.Since(started)
	// The first replica up may serve every space until its peers' Leases
	// appear, then hands over: engaged means settled, each space served by
	// the replica the hash gives it, and ready.
	spaces := make([]string, n)
	for i, w := range workspaces {
		spaces[i] = w.Path
	}
	if err := environment.Poll(ctx, scalePollInterval, bound(15*time.Minute, n), "the spaces settled on their replicas", func() error {
		if err := f.unsettled(ctx, spaces); err != nil {
			return err
		}
		ready, err := readyWhileAllAlive()
		if err != nil {
			return err
		}
		if ready < n {
			return fmt.Errorf("%d of %d spaces ready", ready, n)
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	engaged := time.Since(started)
	engagedUse := f.usage()
	othersEngaged := others()
	if profiles != "" {
		if err := f.saveHeapProfiles(ctx, profiles, "engaged"); err != nil {
			b.Fatal(err)
		}
	}
	engagedShares, err := f.shares(ctx)
	if err != nil {
		b.Fatal(err)
	}
	engagedRequests, err := f.requests(ctx)
	if err != nil {
		b.Fatal(err)
	}
	watchesEngaged, err := kcpWatches(ctx, kcp.KCP.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	kcpEngaged, err := kcpWork(ctx, kcp.KCP.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	stagerEngaged, err := f.apiRequests(ctx)
	if err != nil {
		b.Fatal(err)
	}

	rollout := time.Now()
	if err := forEach(n, func(i int) error { return startRollout(ctx, workspaces[i]) }); err != nil {
		b.Fatal(err)
	}
	cpuProfiled := func() error { return nil }
	if cpuProfiles != "" {
		cpuProfiled = f.startCPUProfiles(ctx, cpuProfiles, "converging", cpuProfileSeconds)
	}
	if err := pollUntilAll(ctx, bound(20*time.Minute, n), n, "rollouts completed", func() (int, error) {
		if err := f.lost(); err != nil {
			return 0, err
		}
		return obs.completed(""), nil
	}); err != nil {
		b.Fatal(err)
	}
	converged := time.Since(rollout)
	b.StopTimer()
	if err := f.lost(); err != nil {
		b.Fatal(err)
	}
	convergedUse := f.usage()
	othersConverged := others()
	if profiles != "" {
		if err := f.saveHeapProfiles(ctx, profiles, "converged"); err != nil {
			b.Fatal(err)
		}
	}
	shares, err := f.shares(ctx)
	if err != nil {
		b.Fatal(err)
	}
	convergedRequests, err := f.requests(ctx)
	if err != nil {
		b.Fatal(err)
	}
	convergeRequests := convergedRequests.since(engagedRequests)
	kcpConverged, err := kcpWork(ctx, kcp.KCP.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	stagerConverged, err := f.apiRequests(ctx)
	if err != nil {
		b.Fatal(err)
	}
	// kcp counts every client's requests (the replicas', the simulators',
	// the observer's) by verb and resource, where the replicas' own count
	// has only the verb: which reads grow is told here.
	// The replicas' own count (stager_api_requests_total) has their
	// requests alone, by verb and class, through the virtual workspace
	// too, fence renewals apart; the engaging window's start is the
	// replicas' start, where they had sent nothing.
	for _, window := range []struct {
		name         string
		work, stager apiServerWork
		others       otherCPU
	}{{"engaging", kcpEngaged.minus(kcpBefore), stagerEngaged, othersEngaged.minus(othersBefore)},
		{"converging", kcpConverged.minus(kcpEngaged), stagerConverged.minus(stagerEngaged), othersConverged.minus(othersEngaged)}} {
		b.Logf("kcp's requests while %s, every client, by verb and resource: %s; refused: %s; kcp used %.1f CPU-s, the harness (simulators, observer) %.1f",
			window.name, top(window.work.requests, 16), top(window.work.refused, 8), window.others.kcp, window.others.harness)
		b.Logf("the replicas' requests while %s, by verb and class: %s; per space: %s; refused or unanswered: %s; times to answer: %s",
			window.name, top(window.stager.requests, 16), topPer(window.stager.requests, n, 16), top(window.stager.refused, 8), latency(window.stager))
	}
	if err := cpuProfiled(); err != nil {
		b.Fatal(err)
	}
	renewals, err := f.renewals(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("fence renewals since the replicas started, by result and time to answer: %s", renewals)
	// The watches the replicas hold: kcp's open watches with the spaces
	// engaged, less those before they started (the simulators' and the
	// observer's).
	watches := watchesEngaged - watchesBefore

	engagedCPU, engagedRSS, _ := engagedUse.totals()
	convergedCPU, rss, peak := convergedUse.totals()
	b.ReportMetric(float64(n), "workspaces")
	b.ReportMetric(float64(replicas), "replicas")
	b.ReportMetric(firstReady.Seconds(), "s-to-first-all-ready")
	b.ReportMetric(engaged.Seconds(), "s-to-engage-all")
	b.ReportMetric(converged.Seconds(), "s-to-converge-all")
	b.ReportMetric(float64(engagedRSS)/1024, "MiB-rss-engaged")
	b.ReportMetric(float64(rss)/1024, "MiB-rss-converged")
	b.ReportMetric(float64(peak)/1024, "MiB-rss-peak-replica")
	b.ReportMetric(float64(rss)/float64(n), "KiB-rss-per-space")
	b.ReportMetric(engagedCPU, "cpu-s-to-engage-all")
	b.ReportMetric(convergedCPU-engagedCPU, "cpu-s-to-converge-all")
	b.ReportMetric(watches, "watches-open")
	b.ReportMetric(engagedRequests.total(), "requests-to-engage-all")
	b.ReportMetric(convergeRequests.total(), "requests-to-converge-all")
	b.Logf("%d workspaces, %d replicas: every space ready %s, and served by its own replica and ready %s after the replicas started (RSS %d MiB, %.1f CPU-s, %.0f requests: %s; %s); "+
		"%d three-stage rollouts converged in %s (%.1f CPU-s, %.0f requests: %s); RSS %d MiB, largest peak %d MiB; "+
		"kcp holds %.0f more watches with the spaces engaged (%.2f a workspace); converged: %s",
		n, replicas, firstReady.Round(time.Millisecond), engaged.Round(time.Millisecond), engagedRSS/1024, engagedCPU, engagedRequests.total(), engagedRequests, engagedUse.describe(engagedShares),
		n, converged.Round(time.Millisecond), convergedCPU-engagedCPU, convergeRequests.total(), convergeRequests, rss/1024, peak/1024,
		watches, watches/float64(n), convergedUse.describe(shares))

	watchAtRest(ctx, b, f, n, others)

	if replicas > 1 && os.Getenv(NoFailoverEnv) == "" {
		killOneReplica(ctx, b, f, obs, workspaces, started)
	}
}

// restWindow is how long watchAtRest watches the fleet.
const restWindow = time.Minute

// watchAtRest reports the replicas' requests and CPU a second over
// restWindow with every rollout converged: what the fleet costs kcp and
// the machine for holding its spaces, the simulators still passing.
func watchAtRest(ctx context.Context, b *testing.B, f *fleet, n int, others func() otherCPU) {
	before, err := f.apiRequests(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cpuBefore, _, _ := f.usage().totals()
	othersBefore := others()
	select {
	case <-time.After(restWindow):
	case <-ctx.Done():
		b.Fatal(ctx.Err())
	}
	if err := f.lost(); err != nil {
		b.Fatal(err)
	}
	after, err := f.apiRequests(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cpuAfter, _, _ := f.usage().totals()
	othersAt := others().minus(othersBefore)
	requests := after.minus(before)
	sum := 0.0
	for _, v := range requests.requests {
		sum += v
	}
	perSecond, cpuPerSecond := sum/restWindow.Seconds(), 1000*(cpuAfter-cpuBefore)/restWindow.Seconds()
	b.ReportMetric(perSecond, "requests-per-s-at-rest")
	b.ReportMetric(cpuPerSecond, "cpu-ms-per-s-at-rest")
	b.Logf("at rest for %s, every rollout converged: %.2f requests a second (%.4f a space), by verb and class: %s; times to answer: %s; "+
		"%.1f CPU-ms a second (%.3f a space); kcp %.0f CPU-ms a second, the harness %.0f",
		restWindow, perSecond, perSecond/float64(n), top(requests.requests, 16), latency(requests), cpuPerSecond, cpuPerSecond/float64(n),
		1000*othersAt.kcp/restWindow.Seconds(), 1000*othersAt.harness/restWindow.Seconds())
}

// otherCPU is the CPU-seconds used by the processes beside the fleet.
type otherCPU struct{ kcp, harness float64 }

// minus returns what was used since before.
func (c otherCPU) minus(before otherCPU) otherCPU {
	return otherCPU{kcp: c.kcp - before.kcp, harness: c.harness - before.harness}
}

// bound is a wait's limit for n workspaces: limit up to 300, growing with
// n past it, as kcp's share of the waits does.
func bound(limit time.Duration, n int) time.Duration {
	if n <= 300 {
		return limit
	}
	return limit * time.Duration(n) / 300
}

// killOneReplica SIGKILLs the first replica and restarts every rollout at
// once. It reports the time until every space the victim held is held by a
// survivor, until every space is ready again, and until every restarted
// rollout completes; then it checks the shard audit's rule over the whole
// run: every write came from the holder of its space's fence then, and no
// rollout went back a stage.
func killOneReplica(ctx context.Context, b *testing.B, f *fleet, obs *observer, workspaces []*kcpstack.Workspace, started time.Time) {
	n := len(workspaces)
	victim := f.replicas[0]
	held := obs.heldBy(victim.id)
	if len(held) == 0 {
		b.Fatalf("%s holds no space's fence: nothing to fail over", victim.id)
	}
	killed := time.Now()
	if err := victim.proc.Kill(); err != nil {
		b.Fatal(err)
	}
	// The restarts go on while the failover is timed, not before it.
	restarted := make(chan error, 1)
	go func() {
		restarted <- forEach(n, func(i int) error { return restartRollout(ctx, workspaces[i], "after-kill") })
	}()
	var moved, served time.Duration
	if err := environment.Poll(ctx, scalePollInterval, 10*time.Minute, fmt.Sprintf("%s's %d spaces served again", victim.id, len(held)), func() error {
		if moved == 0 {
			for _, s := range held {
				if h := obs.audit.Holder(s); h == victim.id || h == "" {
					return fmt.Errorf("%s held by %q", s, h)
				}
			}
			moved = time.Since(killed)
		}
		ready, err := f.readySpaces(ctx)
		if err != nil {
			return err
		}
		if ready < n {
			return fmt.Errorf("%d of %d spaces ready", ready, n)
		}
		served = time.Since(killed)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	if err := <-restarted; err != nil {
		b.Fatal(err)
	}
	if err := pollUntilAll(ctx, bound(20*time.Minute, n), n, "restarted rollouts completed", func() (int, error) { return obs.completed("after-kill"), nil }); err != nil {
		b.Fatal(err)
	}
	reconverged := time.Since(killed)
	shares, err := f.shares(ctx)
	if err != nil {
		b.Fatal(err)
	}
	obs.stop()
	audited, problems := obs.audit.Check([]string{"dev", "test", "prod"}, started, func(string) bool { return true })
	for _, p := range problems {
		b.Error(p)
	}
	if audited < 2*n {
		b.Errorf("%d writes audited, fewer than two rollouts in each of %d spaces make", audited, n)
	}
	b.ReportMetric(float64(len(held)), "spaces-of-killed")
	b.ReportMetric(moved.Seconds(), "s-kill-to-fences-moved")
	b.ReportMetric(served.Seconds(), "s-kill-to-all-ready")
	b.ReportMetric(reconverged.Seconds(), "s-kill-to-reconverged")
	b.ReportMetric(float64(audited), "writes-audited")
	b.Logf("%s (serving %d spaces) killed with every rollout restarted: its fences held by survivors after %s, every space ready after %s, "+
		"every rollout completed again after %s; shares then %v; %d writes audited, %d out of their writer's tenure",
		victim.id, len(held), moved.Round(100*time.Millisecond), served.Round(100*time.Millisecond), reconverged.Round(time.Second),
		shares, audited, len(problems))
	if renewals, err := f.renewals(ctx); err != nil {
		b.Error(err)
	} else {
		b.Logf("the survivors' fence renewals since they started, by result and time to answer: %s", renewals)
	}
}

// restartRollout restarts a workspace's rollout, with restartedAt as its
// restart's name.
func restartRollout(ctx context.Context, w *kcpstack.Workspace, restartedAt string) error {
	return retry.OnError(environment.OverloadRetry, func(err error) bool { return apierrors.IsConflict(err) || environment.Overloaded(err) }, func() error {
		p := &v1alpha1.StagedBindingPolicy{}
		if err := w.Client.Get(ctx, types.NamespacedName{Name: "web"}, p); err != nil {
			return err
		}
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[v1alpha1.RestartedAtAnnotation] = restartedAt
		return w.Client.Update(ctx, p)
	})
}

// startRollout creates a ConfigMap, a dev -> test -> prod policy for it,
// and makes the dev and test WECs report it available.
func startRollout(ctx context.Context, w *kcpstack.Workspace) error {
	objs := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: kcpstack.Namespace, Name: "web", Labels: map[string]string{"app": "web"}}},
		policytest.Policy("web", map[string]string{"app": "web"},
			policytest.Stage("dev", "", policytest.Available),
			policytest.Stage("test", "", policytest.Available),
			policytest.Stage("prod", "", "")),
	}
	for _, stage := range []string{"dev", "test"} {
		w.Availability.SetAvailable(v1alpha1.StagePlacement("web", stage).String(), true)
	}
	for _, obj := range objs {
		if err := environment.CreateRetrying(ctx, w.Client, obj); err != nil {
			return fmt.Errorf("creating %T in %s: %w", obj, w.Path, err)
		}
	}
	return nil
}

// pollUntilAll polls count until it reaches n, for at most timeout; what
// names what count counts, in the error.
func pollUntilAll(ctx context.Context, timeout time.Duration, n int, what string, count func() (int, error)) error {
	return environment.Poll(ctx, scalePollInterval, timeout, fmt.Sprintf("all %d %s", n, what), func() error {
		got, err := count()
		if err != nil {
			return err
		}
		if got < n {
			return fmt.Errorf("%d of %d %s", got, n, what)
		}
		return nil
	})
}

// envInt reads a positive number from the environment, or returns def.
func envInt(b *testing.B, name string, def int) int {
	return envIntIn(b, name, def, 1, math.MaxInt, "a positive number")
}

// envNice returns the nice increment (as nice -n takes it) in the
// environment variable name, or def when it is unset.
func envNice(b *testing.B, name string, def int) int {
	return envIntIn(b, name, def, -20, 19, "a nice increment (-20 to 19)")
}

// envIntIn reads a whole number from lo to hi, which what says in words,
// from the environment variable name, or returns def when it is unset.
func envIntIn(b *testing.B, name string, def, lo, hi int, what string) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		b.Fatalf("$%s=%q is not %s", name, v, what)
	}
	return n
}

// harness is what every run of the package starts with: a context that
// ends with the run, a directory for the logs, the stager binary and the
// stager's scheme.
type harness struct {
	ctx    context.Context
	dir    string
	binary string
	scheme *runtime.Scheme
}

// startHarness makes the run's directory (removed at the end unless the run
// failed or $STAGER_SCALE_KEEP is set), sends the harness's own logs to
// harness.log there, and builds or finds the stager binary.
func startHarness(b *testing.B, prefix string) *harness {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if b.Failed() || os.Getenv(KeepEnv) != "" {
			b.Logf("logs kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	logFile, err := os.Create(filepath.Join(dir, "harness.log"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = logFile.Close() })
	log.SetLogger(zap.New(zap.WriteTo(logFile)))
	binary, err := stack.StagerBinary(dir)
	if err != nil {
		b.Fatal(err)
	}
	scheme, err := app.NewScheme()
	if err != nil {
		b.Fatal(err)
	}
	return &harness{ctx: ctx, dir: dir, binary: binary, scheme: scheme}
}

// startWorkspaces starts kcp with n bound workspaces, each with its
// simulator: from a copy of the kcp data in $STAGER_SCALE_KCP_DATA when it
// holds them, otherwise created (and then saved there when it is set),
// beginning from $STAGER_SCALE_KCP_BASE's when that holds the first ones.
func startWorkspaces(ctx context.Context, b *testing.B, n int, o kcpstack.Options) (*kcpstack.Stack, []*kcpstack.Workspace) {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("wds%03d", i)
	}
	data := os.Getenv(KCPDataEnv)
	var key kcpstack.SnapshotKey
	if data != "" {
		var err error
		if key, err = kcpstack.NewSnapshotKey("", names); err != nil {
			b.Fatal(err)
		}
		kcp, workspaces, snap, err := kcpstack.StartFromSnapshot(ctx, data, key, o)
		switch {
		case err == nil:
			b.Logf("%d workspaces reused from %s (created in %s on %s); kcp ready after %s", n, data,
				snap.CreatedIn.Round(time.Second), snap.SavedAt.Format(time.DateOnly), kcp.KCP.ReadyAfter().Round(time.Millisecond))
			return kcp, workspaces
		case errors.Is(err, kcpstack.ErrNoSnapshot) || errors.Is(err, kcpstack.ErrSnapshotMismatch):
			b.Logf("creating the workspaces: %v", err)
		default:
			b.Fatal(err)
		}
	}
	kcp, earlier := startEarlier(ctx, b, key, o)
	workspaces, err := createWorkspaces(ctx, b, kcp, names[len(earlier.list):])
	workspaces.list = append(earlier.list, workspaces.list...)
	workspaces.took += earlier.took
	if err == nil && data != "" {
		// Saved before the simulators start: the snapshot holds what
		// CreateWorkspace made, nothing a run did.
		if err = kcp.SaveSnapshot(ctx, data, key, workspaces.list, workspaces.took); err == nil {
			b.Logf("%d workspaces saved in %s", n, data)
		}
	}
	for i := 0; err == nil && i < n; i++ {
		err = kcp.Attach(ctx, workspaces.list[i])
	}
	if err != nil {
		_ = kcp.Stop()
		b.Fatal(err)
	}
	return kcp, workspaces.list
}

// startEarlier starts kcp from a copy of $STAGER_SCALE_KCP_BASE's snapshot
// when it holds the first of key's workspaces, and otherwise with none.
func startEarlier(ctx context.Context, b *testing.B, key kcpstack.SnapshotKey, o kcpstack.Options) (*kcpstack.Stack, created) {
	if base := os.Getenv(KCPBaseEnv); base != "" && len(key.Workspaces) > 0 {
		kcp, workspaces, snap, err := kcpstack.StartFromEarlierSnapshot(ctx, base, key, o)
		switch {
		case err == nil:
			b.Logf("%d workspaces begun from %s (created in %s)", len(workspaces), base, snap.CreatedIn.Round(time.Second))
			return kcp, created{list: workspaces, took: snap.CreatedIn}
		case errors.Is(err, kcpstack.ErrNoSnapshot) || errors.Is(err, kcpstack.ErrSnapshotMismatch):
			b.Logf("not beginning from %s: %v", base, err)
		default:
			b.Fatal(err)
		}
	}
	kcp, err := kcpstack.Start(ctx, o)
	if err != nil {
		b.Fatal(err)
	}
	return kcp, created{}
}

// created are workspaces created by createWorkspaces and how long that took.
type created struct {
	list []*kcpstack.Workspace
	took time.Duration
}

// createWorkspaces creates and binds the named workspaces,
// $STAGER_SCALE_CREATE_PARALLELISM (default parallelism) at a time.
func createWorkspaces(ctx context.Context, b *testing.B, kcp *kcpstack.Stack, names []string) (created, error) {
	limit := envInt(b, CreateParallelismEnv, parallelism)
	began := time.Now()
	out := created{list: make([]*kcpstack.Workspace, len(names))}
	err := forEachAt(limit, len(names), func(i int) error {
		w, err := kcp.CreateWorkspace(ctx, names[i])
		out.list[i] = w
		return err
	})
	out.took = time.Since(began)
	b.Logf("%d workspaces created and bound in %s, %d at a time", len(names), out.took.Round(time.Millisecond), limit)
	return out, err
}

// forEach calls f for 0..n-1, parallelism at a time, and returns the first error.
func forEach(n int, f func(i int) error) error {
	return forEachAt(parallelism, n, f)
}

// forEachAt calls f for 0..n-1, limit at a time, and returns the first error.
func forEachAt(limit, n int, f func(i int) error) error {
	var g errgroup.Group
	g.SetLimit(limit)
	for i := range n {
		g.Go(func() error { return f(i) })
	}
	return g.Wait()
}

// readySpaces counts the stager's spaces reported ready.
func readySpaces(ctx context.Context, addr string) (int, error) {
	ready, err := spacesAtOne(ctx, addr, "stager_space_ready")
	return len(ready), err
}

// memory returns a process's resident set size and its peak, in KiB.
func memory(pid int) (rss, peak int) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		v, _ := strconv.Atoi(fields[1])
		switch fields[0] {
		case "VmRSS:":
			rss = v
		case "VmHWM:":
			peak = v
		}
	}
	return rss, peak
}

// cpuSeconds returns the CPU time (user and system) a process has used.
func cpuSeconds(pid int) float64 {
	_, cpu, _ := framework.ProcessUsage(pid)
	return cpu
}

// statFields returns the fields of /proc/<pid>/stat after the command
// name (which may hold spaces): the first is the third field, the state.
func statFields(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	_, rest, ok := strings.Cut(string(data), ") ")
	if !ok {
		return nil, fmt.Errorf("/proc/%d/stat has no command name", pid)
	}
	return strings.Fields(rest), nil
}

// niceness returns the nice value of a process's main thread (the
// nineteenth field of /proc/<pid>/stat).
func niceness(pid int) (int, error) {
	fields, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	if len(fields) < 17 {
		return 0, fmt.Errorf("/proc/%d/stat has %d fields after the command name", pid, len(fields))
	}
	return strconv.Atoi(fields[16])
}

// cpuUse is what a process has used of the CPUs: the CPU seconds it ran,
// and the seconds its threads were runnable but waited for a CPU, which a
// busy machine's scheduler adds to every step of a latency.
type cpuUse struct {
	used, wait float64
}

// processCPU returns the CPU use of a process so far. The wait is the sum
// of its threads' run-queue time (/proc/<pid>/task/*/schedstat, kept by
// kernels built with CONFIG_SCHED_INFO); it misses threads that have
// exited, which Go programs' threads rarely do.
func processCPU(pid int) cpuUse {
	use := cpuUse{used: cpuSeconds(pid)}
	stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	for _, stat := range stats {
		data, err := os.ReadFile(stat)
		if err != nil {
			continue // the thread has gone
		}
		// on-CPU ns, run-queue ns, time slices
		if fields := strings.Fields(string(data)); len(fields) >= 2 {
			ns, _ := strconv.ParseFloat(fields[1], 64)
			use.wait += ns / 1e9
		}
	}
	return use
}

// minus returns the use since before.
func (u cpuUse) minus(before cpuUse) cpuUse {
	return cpuUse{used: u.used - before.used, wait: u.wait - before.wait}
}

// waiting tells the wait, and the wait per CPU second used.
func (u cpuUse) waiting() string {
	if u.used <= 0 {
		return fmt.Sprintf("%.1f s", u.wait)
	}
	return fmt.Sprintf("%.1f s (%.2f)", u.wait, u.wait/u.used)
}

// scalePollInterval is how often the scale run checks its workspaces: not
// environment.PollInterval, since reading 100 workspaces that often would
// load kcp and skew the figures.
const scalePollInterval = time.Second
