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
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/controller/hostingwatch"
	wavegate "github.com/kubestellar/workload-stager/internal/wave"
)

// DefaultReadTimeout bounds a Decision's read of the waves when
// Gates.ReadTimeout is not set: the first read waits for the cache's
// watch, which a stager without list and watch on RolloutWaves never gets.
const DefaultReadTimeout = hostingwatch.DefaultReadTimeout

// Gates decides whether the hosting cluster's RolloutWaves let a policy of
// a space start a revision, and queues a space's ordered policies again
// when a wave changes. Its zero value is not usable: set Waves.
type Gates struct {
	// Waves reads and watches the hosting cluster's RolloutWaves.
	Waves cache.Cache
	// Clock tells Source's filter what now is (a stale report renewed);
	// nil is the real clock. Decision takes the reconciler's now instead.
	Clock clock.PassiveClock
	// ReadTimeout bounds each read of the waves; zero means DefaultReadTimeout.
	ReadTimeout time.Duration

	failures hostingwatch.Failures
}

// WatchErrorHandler records a failed list or watch of the waves' cache,
// then logs it as client-go does: set it as the cache's
// DefaultWatchErrorHandler, so that Decision fails at once, rather than at
// its read timeout, while the cache has never synced and its last list
// failed (a hosting identity without list on RolloutWaves, say).
func (g *Gates) WatchErrorHandler(ctx context.Context, r *toolscache.Reflector, err error) {
	g.failures.WatchErrorHandler(ctx, r, err)
}

// Decision is wave.GateAll over the waves the cache holds, at now (the
// reconciler's clock): what the reconciler puts in its Snapshot for the
// policy. A hosting cluster without the RolloutWave kind has no wave, so
// nothing is ordered; any other failure to read the waves is an error, and
// the caller holds what it would have started. While the cache of the
// waves has not synced, Decision waits for it, up to ReadTimeout, unless
// its list failed (WatchErrorHandler): then it fails at once with that
// error, and again as long as the cache has not synced.
func (g *Gates) Decision(ctx context.Context, space, policy, revision string, now time.Time) (wavegate.Decision, error) {
	var waves hostingv1alpha1.RolloutWaveList
	installed, err := g.failures.List(ctx, g.Waves, &hostingv1alpha1.RolloutWave{}, &waves, g.ReadTimeout)
	if err != nil {
		readFailed(space)
		return wavegate.Decision{}, fmt.Errorf("reading the RolloutWaves for policy %s of space %s: %w", policy, space, err)
	}
	if !installed {
		return wavegate.GateAll(nil, space, policy, revision, now), nil
	}
	return wavegate.GateAll(waves.Items, space, policy, revision, now), nil
}

// Source is the source of space's controller that queues the space's
// policies a wave orders whenever the wave changes in a way that may
// change their Decision (Affects): its creation or deletion, its spec, or
// the report of a space of an earlier step. The other spaces' heartbeats,
// 1.6 writes a second for a wave of 64 spaces, queue nothing. On a hosting
// cluster without the RolloutWave kind it starts all the same, as no wave
// can order anything there, and looks for the kind again every retryMax
// until it watches the waves or ctx ends.
func (g *Gates) Source(space string) source.Source {
	return hostingwatch.Source(g.Waves, &hostingv1alpha1.RolloutWave{}, g.timers(), retryMax, "RolloutWaves", space,
		func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) toolscache.ResourceEventHandler {
			return g.handler(space, q)
		})
}

// timers is Clock when it has timers, else the real clock.
func (g *Gates) timers() clock.Clock {
	if c, ok := g.Clock.(clock.Clock); ok {
		return c
	}
	return clock.RealClock{}
}

// handler queues space's ordered policies on the changes of the waves that
// may change their Decision.
func (g *Gates) handler(space string, q workqueue.TypedRateLimitingInterface[reconcile.Request]) toolscache.ResourceEventHandler {
	queue := func(ws ...*hostingv1alpha1.RolloutWave) {
		for _, w := range ws {
			if w == nil || wavegate.StepOf(w, space) < 0 {
				continue
			}
			for _, p := range w.Spec.Policies {
				q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: p}})
			}
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { queue(asWave(obj)) },
		UpdateFunc: func(oldObj, newObj any) {
			o, n := asWave(oldObj), asWave(newObj)
			if Affects(o, n, space, g.now()) {
				queue(o, n)
			}
		},
		DeleteFunc: func(obj any) { queue(asWave(obj)) },
	}
}

// asWave returns obj as a wave, or nil (a tombstone, say).
func asWave(obj any) *hostingv1alpha1.RolloutWave {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	w, _ := obj.(*hostingv1alpha1.RolloutWave)
	return w
}

// Affects reports whether an update of a wave, from o to n, may change a
// Decision of a policy of space at now: a change of spec, or, for a space
// of a later step than the first, a change of an earlier step's report
// other than its heartbeat, or a heartbeat that was not fresh at now
// before (a space reporting again). A nil wave affects the spaces the
// other names.
func Affects(o, n *hostingv1alpha1.RolloutWave, space string, now time.Time) bool {
	if o == nil || n == nil {
		return (o != nil && wavegate.StepOf(o, space) >= 0) || (n != nil && wavegate.StepOf(n, space) >= 0)
	}
	if o.Generation != n.Generation {
		return wavegate.StepOf(o, space) >= 0 || wavegate.StepOf(n, space) >= 0
	}
	staleAfter := n.Spec.StaleAfter()
	for i := range n.Spec.Steps {
		step := &n.Spec.Steps[i]
		for _, s := range step.Spaces {
			if s == space {
				return false // only earlier steps' reports count
			}
		}
		for _, s := range step.Spaces {
			before, after := wavegate.SpaceReport(o, s), wavegate.SpaceReport(n, s)
			if (before == nil) != (after == nil) {
				return true
			}
			if before == nil {
				continue
			}
			if !sameReport(before, after) {
				return true
			}
			if !wavegate.Fresh(before.HeartbeatTime.Time, now, staleAfter) && !before.HeartbeatTime.Equal(&after.HeartbeatTime) {
				return true
			}
		}
	}
	return false
}

// now is the time by Clock, or the real clock.
func (g *Gates) now() time.Time {
	if g.Clock == nil {
		return time.Now()
	}
	return g.Clock.Now()
}
