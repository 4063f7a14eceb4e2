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
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	stagerapp "github.com/kubestellar/workload-stager/cmd/stager/app"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

// write is one write of a replica to a space, as the objects' managedFields
// record it (to the second).
type write struct {
	space, object, replica string
	at                     time.Time
}

// tenure is a replica's holding of a space's fence Lease, from its acquireTime.
type tenure struct {
	replica string
	since   time.Time
}

// audit collects, while the test runs, every write the replicas make to the
// spaces, every holder of the spaces' fence Leases, and the active stages
// each rollout goes through.
type audit struct {
	mu      sync.Mutex
	writes  map[write]bool
	tenures map[string][]tenure // by space
	stages  map[string][]string // by space and rollout ("<space>/<restartedAt>"): the active stages seen, in order
}

func newAudit() *audit {
	return &audit{writes: map[write]bool{}, tenures: map[string][]tenure{}, stages: map[string][]string{}}
}

// watchForever calls watchOnce again whenever its watch ends, until ctx ends.
func watchForever(ctx context.Context, t *testing.T, what string, watchOnce func(context.Context) (watch.Interface, error), seen func(runtime.Object)) {
	go func() {
		for ctx.Err() == nil {
			w, err := watchOnce(ctx)
			if err != nil {
				t.Logf("watching %s: %v", what, err)
				time.Sleep(time.Second)
				continue
			}
			for e := range w.ResultChan() {
				if e.Type == watch.Added || e.Type == watch.Modified {
					seen(e.Object)
				}
			}
			w.Stop()
		}
	}()
}

// watchSpace records the replicas' writes to a space's policies and
// BindingPolicies, and the policies' active stages.
func (a *audit) watchSpace(ctx context.Context, t *testing.T, s *space) {
	wc, err := client.NewWithWatch(s.Config, client.Options{Scheme: s.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	record := func(obj runtime.Object) {
		o, ok := obj.(client.Object)
		if !ok {
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, f := range o.GetManagedFields() {
			if replica, ok := strings.CutPrefix(f.Manager, stagerapp.FieldOwnerPrefix); ok && f.Time != nil {
				a.writes[write{space: s.Name, object: fmt.Sprintf("%T %s", o, o.GetName()), replica: replica, at: f.Time.Time}] = true
			}
		}
		if p, ok := obj.(*v1alpha1.StagedBindingPolicy); ok && p.Status.ActiveStage != "" {
			key := s.Name + "/" + p.Status.RestartedAt
			if seen := a.stages[key]; len(seen) == 0 || seen[len(seen)-1] != p.Status.ActiveStage {
				a.stages[key] = append(seen, p.Status.ActiveStage)
			}
		}
	}
	watchForever(ctx, t, s.Name+"'s policies", func(ctx context.Context) (watch.Interface, error) {
		return wc.Watch(ctx, &v1alpha1.StagedBindingPolicyList{})
	}, record)
	watchForever(ctx, t, s.Name+"'s BindingPolicies", func(ctx context.Context) (watch.Interface, error) {
		return wc.Watch(ctx, &ksv1alpha1.BindingPolicyList{})
	}, record)
}

// watchFences records every holder of the spaces' fence Leases.
func (a *audit) watchFences(ctx context.Context, t *testing.T) {
	wc, err := client.NewWithWatch(suite.hosting.Config, client.Options{Scheme: suite.hosting.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	watchForever(ctx, t, "the fence Leases", func(ctx context.Context) (watch.Interface, error) {
		return wc.Watch(ctx, &coordinationv1.LeaseList{}, client.InNamespace(secretNamespace))
	}, func(obj runtime.Object) {
		l, ok := obj.(*coordinationv1.Lease)
		if !ok || l.Spec.HolderIdentity == nil || l.Spec.AcquireTime == nil {
			return
		}
		space, ok := strings.CutPrefix(l.Name, stagerapp.ShardFenceLeasePrefix+"-")
		if !ok {
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		next := tenure{replica: *l.Spec.HolderIdentity, since: l.Spec.AcquireTime.Time}
		if next.replica == "" {
			// A released Lease keeps its acquireTime: the tenure ended about now.
			next.since = time.Now()
			if ts := a.tenures[space]; len(ts) > 0 && ts[len(ts)-1].replica == "" {
				return
			}
		}
		if !slices.Contains(a.tenures[space], next) {
			a.tenures[space] = append(a.tenures[space], next)
			sort.SliceStable(a.tenures[space], func(i, j int) bool { return a.tenures[space][i].since.Before(a.tenures[space][j].since) })
		}
	})
}

// holders returns the replicas that held a space's fence at some moment of [from, to].
func (a *audit) holders(space string, from, to time.Time) []string {
	var out []string
	ts := a.tenures[space]
	for i, t := range ts {
		end := time.Time{}
		if i+1 < len(ts) {
			end = ts[i+1].since
		}
		if !t.since.After(to) && (end.IsZero() || !end.Before(from)) {
			out = append(out, t.replica)
		}
	}
	return out
}

// holder returns the replica whose tenure of the space's fence was last to
// begin, or "".
func (a *audit) holder(space string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ts := a.tenures[space]; len(ts) > 0 {
		return ts[len(ts)-1].replica
	}
	return ""
}

// TestKilledReplicasNeverShareASpace runs three sharded replicas while every
// space rolls out three stages again and again, and SIGKILLs a random
// replica at random points (STAGER_CHAOS_KILLS times): its spaces move to the
// survivors once its Leases expire, and come back when it is started again.
// Every rollout completes, no rollout goes back to a stage it passed, and
// every write to a space comes from the replica that held the space's fence
// Lease then.
func TestKilledReplicasNeverShareASpace(t *testing.T) {
	ctx, cancel := context.WithCancel(suite.ctx)
	defer cancel()
	kills := envInt("STAGER_CHAOS_KILLS", 2)
	a := newAudit()
	a.watchFences(ctx, t)
	for _, s := range suite.spaces {
		a.watchSpace(ctx, t, s)
	}

	ids := make([]string, replicas)
	procs := map[string]*stack.Process{}
	for i := range ids {
		ids[i] = fmt.Sprintf("r%d", i+1)
		p, err := startReplica(ids[i])
		if err != nil {
			t.Fatal(err)
		}
		procs[ids[i]] = p
	}
	t.Cleanup(func() {
		for _, p := range procs {
			_ = p.Stop(15 * time.Second)
		}
	})

	const name = "chaos"
	for _, s := range suite.spaces {
		if err := s.Client.Create(ctx, policytest.Deployment(namespace, name)); err != nil {
			t.Fatal(err)
		}
		if err := s.Client.Create(ctx, policytest.ThreeStages(name, name)); err != nil {
			t.Fatal(err)
		}
	}
	environment.Eventually(t, 2*time.Minute, "every space's fence held", func() error {
		for _, s := range suite.spaces {
			if a.holder(s.Name) == "" {
				return fmt.Errorf("no holder of %s's fence yet", s.Name)
			}
		}
		return nil
	})
	share := map[string][]string{}
	for _, s := range suite.spaces {
		share[a.holder(s.Name)] = append(share[a.holder(s.Name)], s.Name)
	}
	t.Logf("spaces per replica: %v", share)

	// Rollouts go on until the kills are done: each stage's WECs turn
	// healthy 2s after it starts, and a completed rollout restarts.
	var rollouts sync.Map // space name → rollouts begun
	keepGoing := make(chan struct{})
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
			for _, s := range suite.spaces {
				advance(ctx, s, name, keepGoing, &rollouts)
			}
		}
	}()

	// The kills: a random replica at a random moment; its spaces move once
	// its Leases expire; then it starts again and takes its share back.
	var failovers, rebalances []time.Duration
	for k := range kills {
		time.Sleep(time.Duration(1+rand.IntN(4)) * time.Second)
		// The victim serves a space at least, so that its spaces must move.
		serving := map[string][]string{}
		for _, s := range suite.spaces {
			if h := a.holder(s.Name); h != "" {
				serving[h] = append(serving[h], s.Name)
			}
		}
		candidates := slices.Sorted(maps.Keys(serving))
		victim := candidates[rand.IntN(len(candidates))]
		held := serving[victim]
		killed := time.Now()
		if err := procs[victim].Kill(); err != nil {
			t.Fatal(err)
		}
		environment.Eventually(t, 2*time.Minute, fmt.Sprintf("kill %d: %s's spaces %v to move", k+1, victim, held), func() error {
			for _, s := range held {
				if h := a.holder(s); h == victim {
					return fmt.Errorf("%s still held by %s", s, h)
				}
			}
			return nil
		})
		failovers = append(failovers, time.Since(killed))
		restarted := time.Now()
		p, err := startReplica(victim)
		if err != nil {
			t.Fatal(err)
		}
		procs[victim] = p
		environment.Eventually(t, 2*time.Minute, fmt.Sprintf("kill %d: %s to take a share back", k+1, victim), func() error {
			for _, s := range suite.spaces {
				if a.holder(s.Name) == victim {
					return nil
				}
			}
			return fmt.Errorf("%s holds no space", victim)
		})
		rebalances = append(rebalances, time.Since(restarted))
	}
	close(keepGoing)

	completed := 0
	for _, s := range suite.spaces {
		p := policytest.Space{Name: s.Name, Client: s.Client, Ctx: ctx, Timeout: 3 * time.Minute}.WaitForPhase(t, name, v1alpha1.RolloutCompleted)
		for i, r := range p.Status.Stages {
			if r.Phase != v1alpha1.StageSucceeded || r.StartTime == nil || r.CompletionTime == nil ||
				i > 0 && r.StartTime.Before(p.Status.Stages[i-1].CompletionTime) {
				t.Errorf("%s: stage record %+v of the last rollout is not done in order", s.Name, r)
			}
		}
		n, _ := rollouts.Load(s.Name)
		completed += n.(int)
	}
	cancel()

	a.mu.Lock()
	defer a.mu.Unlock()
	for key, seen := range a.stages {
		order := map[string]int{"dev": 0, "test": 1, "prod": 2}
		for i := 1; i < len(seen); i++ {
			if order[seen[i]] <= order[seen[i-1]] {
				t.Errorf("rollout %s went back: active stages %v", key, seen)
			}
		}
	}
	const slack = 2 * time.Second // managedFields keep whole seconds
	foreign := 0
	for w := range a.writes {
		if holders := a.holders(w.space, w.at.Add(-slack), w.at.Add(time.Second+slack)); !slices.Contains(holders, w.replica) {
			foreign++
			t.Errorf("%s wrote %s in %s at %s without holding its fence (holders then: %v)", w.replica, w.object, w.space,
				w.at.Format(time.RFC3339), holders)
		}
	}
	if foreign > 0 {
		for space, ts := range a.tenures {
			t.Logf("tenures of %s: %v", space, ts)
		}
	}
	t.Logf("%d replicas, %d spaces, %d kills: %d rollouts begun and completed, %d writes audited, %d by a replica without the fence; "+
		"failover (kill to every space of the victim held by a survivor) %v; rebalance (restart to a share back) %v",
		replicas, len(suite.spaces), kills, completed, len(a.writes), foreign, failovers, rebalances)
}

// advance moves a space's rollout on: the WECs of the active stage turn
// healthy 2s after it starts, and, until keepGoing is closed, a completed
// rollout restarts (restartedAt "r<n>").
func advance(ctx context.Context, s *space, name string, keepGoing chan struct{}, rollouts *sync.Map) {
	p := &v1alpha1.StagedBindingPolicy{}
	if err := s.Client.Get(ctx, types.NamespacedName{Name: name}, p); err != nil {
		return
	}
	if _, ok := rollouts.Load(s.Name); !ok {
		rollouts.Store(s.Name, 1)
	}
	for _, r := range p.Status.Stages {
		if r.Phase == v1alpha1.StageActive && r.StartTime != nil && time.Since(r.StartTime.Time) > 2*time.Second {
			s.availability.SetAvailable(v1alpha1.BindingPolicyName(name, r.Name), true)
			s.sim.Resync()
		}
	}
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
		s.availability.SetAvailable(v1alpha1.BindingPolicyName(name, stage), false)
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
