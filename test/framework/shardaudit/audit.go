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

// Package shardaudit checks the rule of sharded replicas (--coordination=sharded)
// while they run: every write a replica makes to a space falls in its tenure of
// the space's fence Lease, so no two replicas ever write one space, and no
// rollout goes back to a stage it passed. The suites feed it what their
// watches see of the fence Leases and of the spaces' policies and
// BindingPolicies, and check it at the end.
package shardaudit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	stagerapp "github.com/kubestellar/workload-stager/cmd/stager/app"
	"github.com/kubestellar/workload-stager/internal/controller/sharding"
)

// slack widens a write's second (managedFields keep whole seconds) on both
// sides when it is matched with the tenures.
const slack = 2 * time.Second

// write is one write of a replica to a space, as the objects' managedFields
// record it (to the second).
type write struct {
	space, object, replica string
	at                     time.Time
}

// tenure is a replica's holding of a space's fence Lease, from its
// acquireTime; an empty replica is a released Lease.
type tenure struct {
	replica string
	since   time.Time
}

// Audit collects every write the replicas make to the spaces, every holder
// of the spaces' fence Leases, and the active stages each rollout goes
// through. It is safe for concurrent use.
type Audit struct {
	mu      sync.Mutex
	writes  map[write]bool
	tenures map[string][]tenure // by fence (FenceOf the space)
	stages  map[string][]string // by rollout ("<space>/<policy>/<restartedAt>"): the active stages seen, in order
}

// New returns an empty audit.
func New() *Audit {
	return &Audit{writes: map[write]bool{}, tenures: map[string][]tenure{}, stages: map[string][]string{}}
}

// FenceOf is what follows the prefix in the name of a space's fence Lease,
// and what the coordinator hashes the space by: its sharding.FenceKey.
func FenceOf(space string) string {
	return string(sharding.FenceKey(multicluster.ClusterName(space)))
}

// RecordObject records the replicas' writes to an object of a space, from
// its managedFields, and, for a policy, its active stage.
func (a *Audit) RecordObject(space string, obj runtime.Object) {
	o, ok := obj.(client.Object)
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, f := range o.GetManagedFields() {
		if replica, ok := strings.CutPrefix(f.Manager, stagerapp.FieldOwnerPrefix); ok && f.Time != nil {
			a.writes[write{space: space, object: fmt.Sprintf("%T %s", o, o.GetName()), replica: replica, at: f.Time.Time}] = true
		}
	}
	if p, ok := obj.(*v1alpha1.StagedBindingPolicy); ok && p.Status.ActiveStage != "" {
		key := space + "/" + p.Name + "/" + p.Status.RestartedAt
		if seen := a.stages[key]; len(seen) == 0 || seen[len(seen)-1] != p.Status.ActiveStage {
			a.stages[key] = append(seen, p.Status.ActiveStage)
		}
	}
}

// RecordLease records the holder of a fence Lease; other objects are
// ignored. A watch must deliver a Lease's changes in order: tenures are
// kept in that order, each ending where the next begins.
func (a *Audit) RecordLease(obj runtime.Object) {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok || l.Spec.HolderIdentity == nil || l.Spec.AcquireTime == nil {
		return
	}
	fence, ok := strings.CutPrefix(l.Name, stagerapp.ShardFenceLeasePrefix+"-")
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	ts := a.tenures[fence]
	next := tenure{replica: *l.Spec.HolderIdentity, since: l.Spec.AcquireTime.Time}
	switch {
	case len(ts) > 0 && ts[len(ts)-1] == next:
		return // a renewal
	case next.replica == "":
		// A released Lease keeps its acquireTime: the tenure ended by now.
		if len(ts) > 0 && ts[len(ts)-1].replica == "" {
			return
		}
		next.since = time.Now()
	case len(ts) > 0 && ts[len(ts)-1].replica == "" && ts[len(ts)-1].since.After(next.since):
		// The release was seen after the next holder took the Lease: it
		// happened before.
		ts[len(ts)-1].since = next.since
	}
	a.tenures[fence] = append(ts, next)
}

// holders returns the replicas that held a space's fence at some moment of
// [from, to]; the caller holds a.mu.
func (a *Audit) holders(space string, from, to time.Time) []string {
	var out []string
	ts := a.tenures[FenceOf(space)]
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

// Holder returns the replica whose tenure of the space's fence was last to
// begin, or "" (also for a released fence).
func (a *Audit) Holder(space string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ts := a.tenures[FenceOf(space)]; len(ts) > 0 {
		return ts[len(ts)-1].replica
	}
	return ""
}

// Check checks what was recorded: no rollout went back in stages (their
// order), and every write since began by a replica ours accepts came from
// the holder of its space's fence then. Writes of other replicas, or
// before began, are left out: earlier runs' writes stay in the objects'
// managedFields. It returns how many writes were audited, and a problem
// for each breach. ours is called with the audit locked: it must not call
// the audit.
func (a *Audit) Check(stages []string, began time.Time, ours func(replica string) bool) (audited int, problems []error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for key, seen := range a.stages {
		for i, stage := range seen {
			if !slices.Contains(stages, stage) {
				problems = append(problems, fmt.Errorf("rollout %s went through stage %q, not one of %v", key, stage, stages))
				break
			}
			if i > 0 && slices.Index(stages, stage) <= slices.Index(stages, seen[i-1]) {
				problems = append(problems, fmt.Errorf("rollout %s went back: active stages %v", key, seen))
				break
			}
		}
	}
	for w := range a.writes {
		if !ours(w.replica) || w.at.Before(began.Truncate(time.Second)) {
			continue
		}
		audited++
		if holders := a.holders(w.space, w.at.Add(-slack), w.at.Add(time.Second+slack)); !slices.Contains(holders, w.replica) {
			problems = append(problems, fmt.Errorf("%s wrote %s in %s at %s without holding its fence (holders then: %q)",
				w.replica, w.object, w.space, w.at.Format(time.RFC3339), holders))
		}
	}
	return audited, problems
}

// WatchForever calls watchOnce again whenever its watch ends, until ctx
// ends, and hands every added or modified object to seen. A failing
// watch is retried promptly, so that a restarted API server is seen again
// at once, and logged (with logf) once per outage. The channel it returns
// is closed once the first watch is open; the goroutine it starts is
// counted in running, which it leaves soon after ctx ends: waiting for
// running tells when neither logf nor seen will be called again.
func WatchForever(ctx context.Context, running *sync.WaitGroup, logf func(format string, args ...any), what string,
	watchOnce func(context.Context) (watch.Interface, error), seen func(runtime.Object)) <-chan struct{} {
	opened := make(chan struct{})
	running.Add(1)
	go func() {
		defer running.Done()
		failing, first := false, true
		for ctx.Err() == nil {
			w, err := watchOnce(ctx)
			if err != nil {
				if !failing && ctx.Err() == nil {
					logf("watching %s: %v (retrying)", what, err)
				}
				failing = true
				time.Sleep(200 * time.Millisecond)
				continue
			}
			if first {
				close(opened)
				first = false
			}
			failing = false
			for e := range w.ResultChan() {
				if e.Type == watch.Added || e.Type == watch.Modified {
					seen(e.Object)
				}
			}
			w.Stop()
		}
	}()
	return opened
}
