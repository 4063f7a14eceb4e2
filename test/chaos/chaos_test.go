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

package chaos

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/sharder"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/controller/sharding"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
	"github.com/kubestellar/workload-stager/test/framework/process"
	"github.com/kubestellar/workload-stager/test/framework/shardaudit"
)

// watchSpace records the replicas' writes to a space's policies and
// BindingPolicies, and the policies' active stages.
func watchSpace(ctx context.Context, t *testing.T, running *sync.WaitGroup, a *shardaudit.Audit, s *space) {
	wc, err := client.NewWithWatch(s.Config, client.Options{Scheme: s.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	record := func(obj runtime.Object) { a.RecordObject(s.Name, obj) }
	shardaudit.WatchForever(ctx, running, t.Logf, s.Name+"'s policies", func(ctx context.Context) (watch.Interface, error) {
		return wc.Watch(ctx, &v1alpha1.StagedBindingPolicyList{})
	}, record)
	shardaudit.WatchForever(ctx, running, t.Logf, s.Name+"'s BindingPolicies", func(ctx context.Context) (watch.Interface, error) {
		return wc.Watch(ctx, &ksv1alpha1.BindingPolicyList{})
	}, record)
}

// watchFences records every holder of the spaces' fence Leases.
func watchFences(ctx context.Context, t *testing.T, running *sync.WaitGroup, a *shardaudit.Audit) {
	wc, err := client.NewWithWatch(suite.hosting.Config, client.Options{Scheme: suite.hosting.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	shardaudit.WatchForever(ctx, running, t.Logf, "the fence Leases", func(ctx context.Context) (watch.Interface, error) {
		return wc.Watch(ctx, &coordinationv1.LeaseList{}, client.InNamespace(secretNamespace))
	}, a.RecordLease)
}

// run is one fault run: sharded replicas serving every space while each
// space rolls out the policy name again and again, and the audit of it all.
type run struct {
	t      *testing.T
	ctx    context.Context
	cancel context.CancelFunc
	// running counts the audit's watches and the rollouts' loop, which
	// end with ctx.
	running   sync.WaitGroup
	name      string
	a         *shardaudit.Audit
	ids       []string
	started   time.Time // when the run's first replica started
	procs     map[string]*process.Process
	rollouts  *sync.Map // space name → rollouts begun
	keepGoing chan struct{}
	// restarts is held while a rollout is restarted, so that once finish
	// has closed keepGoing under it, no restart can follow.
	restarts sync.Mutex
}

// startRun starts the audit, the replicas (named prefix1, prefix2, ...), and
// the rollouts of a policy named name in every space, and waits until every
// space is served.
func startRun(t *testing.T, name, prefix string) *run {
	ctx, cancel := context.WithCancel(suite.ctx)
	r := &run{t: t, ctx: ctx, cancel: cancel, name: name, a: shardaudit.New(), procs: map[string]*process.Process{},
		rollouts: &sync.Map{}, keepGoing: make(chan struct{})}
	t.Cleanup(r.stop)
	watchFences(ctx, t, &r.running, r.a)
	for _, s := range suite.spaces {
		watchSpace(ctx, t, &r.running, r.a, s)
	}
	r.started = time.Now()
	for i := range replicas {
		id := fmt.Sprintf("%s%d", prefix, i+1)
		r.ids = append(r.ids, id)
		r.start(id)
	}
	t.Cleanup(func() {
		for _, p := range r.procs {
			_ = p.Stop()
		}
	})
	for _, s := range suite.spaces {
		if err := s.Client.Create(ctx, policytest.Deployment(namespace, name)); err != nil {
			t.Fatal(err)
		}
		if err := s.Client.Create(ctx, policytest.ThreeStages(name, name)); err != nil {
			t.Fatal(err)
		}
	}
	r.waitServed("every space's fence held")
	t.Logf("spaces per replica: %v", r.serving())

	// Rollouts go on until finish: each stage's WECs turn healthy 2s after
	// it starts, and a completed rollout restarts.
	r.running.Add(1)
	go func() {
		defer r.running.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
			for _, s := range suite.spaces {
				advance(ctx, s, name, r.keepGoing, &r.restarts, r.rollouts)
			}
		}
	}()
	return r
}

// stop ends the run's context and waits for the audit's watches and the
// rollouts' loop to end, so that the audit is complete and nothing of the
// run logs or writes after the test.
func (r *run) stop() {
	r.cancel()
	r.running.Wait()
}

// start starts (or starts again) the replica id.
func (r *run) start(id string) {
	r.t.Helper()
	p, err := startReplica(id)
	if err != nil {
		r.t.Fatal(err)
	}
	r.procs[id] = p
}

// serving returns the spaces each replica holds the fence of.
func (r *run) serving() map[string][]string {
	serving := map[string][]string{}
	for _, s := range suite.spaces {
		if h := r.a.Holder(s.Name); h != "" {
			serving[h] = append(serving[h], s.Name)
		}
	}
	return serving
}

// waitServed waits until every space's fence is held.
func (r *run) waitServed(what string) {
	r.t.Helper()
	environment.Eventually(r.t, 2*time.Minute, what, func() error {
		for _, s := range suite.spaces {
			if r.a.Holder(s.Name) == "" {
				return fmt.Errorf("no holder of %s's fence", s.Name)
			}
		}
		return nil
	})
}

// begun returns how many rollouts a space has begun.
func (r *run) begun(space string) int {
	n, ok := r.rollouts.Load(space)
	if !ok {
		return 0
	}
	return n.(int)
}

// resumes brings back what of a space was stopped, with start, and waits
// until the space begins a rollout again; it returns how long that took.
func (r *run) resumes(space, what string, start func() error) time.Duration {
	r.t.Helper()
	stuck := r.begun(space)
	if err := start(); err != nil {
		r.t.Fatal(err)
	}
	mended := time.Now()
	environment.Eventually(r.t, 2*time.Minute, space+" to resume", func() error {
		if r.begun(space) <= stuck {
			return fmt.Errorf("no rollout begun in %s since %s came back", space, what)
		}
		return nil
	})
	return time.Since(mended).Round(100 * time.Millisecond)
}

// othersProgress waits until every space but skip has begun another
// rollout since counts were taken.
func (r *run) othersProgress(what, skip string, counts map[string]int) {
	r.t.Helper()
	environment.Eventually(r.t, 2*time.Minute, what, func() error {
		for _, s := range suite.spaces {
			if s.Name != skip && r.begun(s.Name) <= counts[s.Name] {
				return fmt.Errorf("%s has begun no rollout since (%d)", s.Name, counts[s.Name])
			}
		}
		return nil
	})
}

// counts returns how many rollouts each space has begun.
func (r *run) counts() map[string]int {
	out := map[string]int{}
	for _, s := range suite.spaces {
		out[s.Name] = r.begun(s.Name)
	}
	return out
}

// finish stops restarting rollouts, waits until every space's last rollout
// completes, and checks the run: no rollout went back a stage, and every
// write came from the holder of its space's fence. It returns how many
// rollouts were begun (and so completed) and how many writes were audited.
func (r *run) finish() (completed, writes int) {
	t := r.t
	t.Helper()
	r.restarts.Lock()
	close(r.keepGoing)
	r.restarts.Unlock()
	for _, s := range suite.spaces {
		p := policytest.Space{Name: s.Name, Client: s.Client, Ctx: r.ctx, Timeout: 3 * time.Minute}.WaitForPhase(t, r.name, v1alpha1.RolloutCompleted)
		for i, rec := range p.Status.Stages {
			if rec.Phase != v1alpha1.StageSucceeded || rec.StartTime == nil || rec.CompletionTime == nil ||
				i > 0 && rec.StartTime.Before(p.Status.Stages[i-1].CompletionTime) {
				t.Errorf("%s: stage record %+v of the last rollout is not done in order", s.Name, rec)
			}
		}
		completed += r.begun(s.Name)
	}
	r.stop()

	audited, problems := r.a.Check([]string{"dev", "test", "prod"}, r.started, func(replica string) bool {
		_, ours := r.procs[replica]
		return ours
	})
	for _, p := range problems {
		t.Error(p)
	}
	if audited == 0 {
		t.Error("no write of the replicas was audited")
	}
	return completed, audited
}

// TestKilledReplicasNeverShareASpace runs three sharded replicas while every
// space rolls out three stages again and again, and SIGKILLs a replica
// serving a space, at random points (STAGER_CHAOS_KILLS times): its spaces
// move to the survivors once its Leases expire, and it takes a share back
// when it starts again; then a fourth replica joins and takes the share the
// hash gives it. Every rollout completes, no rollout goes back to a
// stage it passed, and every write to a space comes from the replica that
// held the space's fence Lease then.
func TestKilledReplicasNeverShareASpace(t *testing.T) {
	kills := envInt("STAGER_CHAOS_KILLS", 2)
	r := startRun(t, "chaos", "r")
	var failovers, rebalances []time.Duration
	for k := range kills {
		time.Sleep(time.Duration(1+rand.IntN(4)) * time.Second)
		serving := r.serving()
		candidates := slices.Sorted(maps.Keys(serving))
		victim := candidates[rand.IntN(len(candidates))]
		held := serving[victim]
		killed := time.Now()
		if err := r.procs[victim].Kill(); err != nil {
			t.Fatal(err)
		}
		environment.Eventually(t, 2*time.Minute, fmt.Sprintf("kill %d: %s's spaces %v to move", k+1, victim, held), func() error {
			for _, s := range held {
				if h := r.a.Holder(s); h == victim {
					return fmt.Errorf("%s still held by %s", s, h)
				}
			}
			return nil
		})
		failovers = append(failovers, time.Since(killed).Round(100*time.Millisecond))
		restarted := time.Now()
		r.start(victim)
		environment.Eventually(t, 2*time.Minute, fmt.Sprintf("kill %d: %s to take a share back", k+1, victim), func() error {
			if len(r.serving()[victim]) == 0 {
				return fmt.Errorf("%s holds no space", victim)
			}
			return nil
		})
		rebalances = append(rebalances, time.Since(restarted).Round(100*time.Millisecond))
	}
	// A new replica joins: it takes the share the hash gives it among four,
	// handed over by its holders as they stay alive.
	const newcomer = "r4"
	peers := []sharder.PeerInfo{{ID: newcomer, Weight: 1}}
	for _, id := range r.ids {
		peers = append(peers, sharder.PeerInfo{ID: id, Weight: 1})
	}
	var share []string
	for _, s := range suite.spaces {
		if (sharding.SlotRendezvous{}).ShouldOwn(shardaudit.FenceOf(s.Name), peers, peers[0]) {
			share = append(share, s.Name)
		}
	}
	joined := time.Now()
	r.start(newcomer)
	environment.Eventually(t, 2*time.Minute, fmt.Sprintf("%s to take its share %v", newcomer, share), func() error {
		if got := r.serving()[newcomer]; !slices.Equal(got, share) {
			return fmt.Errorf("it serves %v", got)
		}
		return nil
	})
	joining := time.Since(joined).Round(100 * time.Millisecond)

	completed, writes := r.finish()
	t.Logf("%d replicas, %d spaces, %d kills: %d rollouts begun and completed, %d writes audited; "+
		"failover (kill to every space of the victim held by a survivor) %v; rebalance (restart to a share back) %v; "+
		"a fourth replica took its share of %d space(s) in %s",
		replicas, len(suite.spaces), kills, completed, writes, failovers, rebalances, len(share), joining)
}

// TestOutagesStayInTheirSpace cuts, one after the other, for
// STAGER_CHAOS_OUTAGE each: wds1's API server, wds2's KubeStellar (the real
// controller-manager) and the hosting API server the replicas coordinate
// through, each process stopped and started again. The other spaces' rollouts go on through the first
// two; each broken space resumes once mended, wds2 saying meanwhile what it
// waits for; after the hosting outage every space is served again; and the
// audit finds every write in its writer's tenure throughout.
func TestOutagesStayInTheirSpace(t *testing.T) {
	outage := time.Duration(envInt("STAGER_CHAOS_OUTAGE", 20)) * time.Second
	r := startRun(t, "outage", "o")
	wds1, wds2 := suite.spaces[0], suite.spaces[1]

	// (c) wds1's API server stops.
	before := r.counts()
	down := time.Now()
	if err := wds1.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	r.othersProgress("the other spaces to go on while wds1 is down", wds1.Name, before)
	time.Sleep(time.Until(down.Add(outage)))
	wds1Resumed := r.resumes(wds1.Name, "its API server", func() error { return wds1.StartAPIServer(r.ctx) })

	// (d) wds2's KubeStellar is gone.
	before = r.counts()
	down = time.Now()
	if err := wds2.stop(); err != nil {
		t.Fatal(err)
	}
	r.othersProgress("the other spaces to go on while wds2's KubeStellar is down", wds2.Name, before)
	time.Sleep(time.Until(down.Add(outage)))
	p := &v1alpha1.StagedBindingPolicy{}
	if err := wds2.Client.Get(r.ctx, types.NamespacedName{Name: r.name}, p); err != nil {
		t.Fatal(err)
	}
	if c := progressingOf(p); c == nil || !slices.Contains([]string{v1alpha1.ReasonWaitingForBinding, v1alpha1.ReasonWaitingForStatus,
		v1alpha1.ReasonConditionNotMet, v1alpha1.ReasonStageAdvanced, v1alpha1.ReasonBindingPolicyPending}, c.Reason) || p.Status.Phase == v1alpha1.RolloutCompleted {
		t.Errorf("wds2 while its KubeStellar is down: %s, want a rollout waiting with the reason", policytest.Describe(p))
	} else {
		t.Logf("wds2 while its KubeStellar is down: %s: %s", c.Reason, c.Message)
	}
	wds2Resumed := r.resumes(wds2.Name, "its KubeStellar", func() error { return wds2.start(suite.ctx) })

	// (b) the hosting API server stops: no replica can renew a fence.
	down = time.Now()
	if err := suite.hosting.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(down.Add(outage)))
	if err := suite.hosting.StartAPIServer(r.ctx); err != nil {
		t.Fatal(err)
	}
	mended := time.Now()
	before = r.counts()
	r.othersProgress("every space to go on after the hosting outage", "", before)
	hostingResumed := time.Since(mended).Round(100 * time.Millisecond)

	completed, writes := r.finish()
	t.Logf("%d replicas, %d spaces, outages of %s: %d rollouts begun and completed, %d writes audited; resumed after wds1's API server "+
		"came back %s, after wds2's KubeStellar %s, every space after the hosting API server %s",
		replicas, len(suite.spaces), outage, completed, writes, wds1Resumed, wds2Resumed, hostingResumed)
}

// progressingOf returns a policy's Progressing condition.
func progressingOf(p *v1alpha1.StagedBindingPolicy) *metav1.Condition {
	return meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionProgressing)
}

// advance moves a space's rollout on: the WECs of the active stage turn
// healthy 2s after it starts, and, until keepGoing is closed, a completed
// rollout restarts (restartedAt "r<n>"), under restarts.
func advance(ctx context.Context, s *space, name string, keepGoing chan struct{}, restarts *sync.Mutex, rollouts *sync.Map) {
	p := &v1alpha1.StagedBindingPolicy{}
	if err := s.Client.Get(ctx, types.NamespacedName{Name: name}, p); err != nil {
		return
	}
	if _, ok := rollouts.Load(s.Name); !ok {
		rollouts.Store(s.Name, 1)
	}
	for _, r := range p.Status.Stages {
		if r.Phase == v1alpha1.StageActive && r.StartTime != nil && time.Since(r.StartTime.Time) > 2*time.Second {
			s.setAvailable(v1alpha1.StagePlacement(name, r.Name).String(), true)
		}
	}
	restarts.Lock()
	defer restarts.Unlock()
	select {
	case <-keepGoing:
		return
	default:
	}
	if p.Status.Phase != v1alpha1.RolloutCompleted {
		return
	}
	n, _ := rollouts.Load(s.Name)
	next := n.(int) + 1
	for _, stage := range []string{"dev", "test", "prod"} {
		s.setAvailable(v1alpha1.StagePlacement(name, stage).String(), false)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current := &v1alpha1.StagedBindingPolicy{}
		if err := s.Client.Get(ctx, types.NamespacedName{Name: name}, current); err != nil {
			return err
		}
		if current.Annotations == nil {
			current.Annotations = map[string]string{}
		}
		current.Annotations[v1alpha1.RestartedAtAnnotation] = fmt.Sprintf("r%d", next)
		return s.Client.Update(ctx, current)
	})
	if err == nil {
		rollouts.Store(s.Name, next)
	}
}
