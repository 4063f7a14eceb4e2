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

// Package freeze reads the hosting cluster's RolloutFreezes for the
// spaces' reconcilers (docs/proposals/freezes.md): what they decide of a
// policy at a time (internal/freeze.Decide over the cached freezes), and
// a source that queues a space's policies a freeze may select when it is
// created, changed or deleted.
package freeze

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/controller/hostingwatch"
	freezes "github.com/kubestellar/workload-stager/internal/freeze"
)

// DefaultReadTimeout bounds a Decision's read of the freezes when
// Freezes.ReadTimeout is not set: the first read waits for the cache's
// watch, which a stager without list and watch on RolloutFreezes never gets.
const DefaultReadTimeout = hostingwatch.DefaultReadTimeout

// retryKind is how often Source looks again for the RolloutFreeze kind on
// a hosting cluster that has none.
const retryKind = time.Minute

// Freezes decides what the hosting cluster's RolloutFreezes hold of a
// policy, and queues a space's policies when a freeze changes. Its zero
// value is not usable: set Cache.
type Freezes struct {
	// Cache reads and watches the hosting cluster's RolloutFreezes; its
	// DefaultWatchErrorHandler should be WatchErrorHandler.
	Cache cache.Cache
	// ReadTimeout bounds each read of the freezes; zero means DefaultReadTimeout.
	ReadTimeout time.Duration
	// Clock times Source's retries; nil is the real clock.
	Clock clock.Clock

	failures hostingwatch.Failures
}

// WatchErrorHandler records a failed list or watch of the freezes'
// cache, then logs it as client-go does, so that Decision fails at once,
// rather than at its read timeout, while the cache has never synced and
// its last list failed (no list on RolloutFreezes, say).
func (f *Freezes) WatchErrorHandler(ctx context.Context, r *toolscache.Reflector, err error) {
	f.failures.WatchErrorHandler(ctx, r, err)
}

// Decision is freeze.Decide over the freezes the cache holds, for policy
// of space at now (the reconciler's clock). A hosting cluster without
// the RolloutFreeze kind has no freeze; any other failure to read the
// freezes is an error, on which the caller holds what would start (fail
// closed). While the cache has not synced, Decision waits for it, up to
// ReadTimeout, unless its list failed: then it fails at once.
func (f *Freezes) Decision(ctx context.Context, space, policy string, now time.Time) (freezes.Decision, error) {
	var list hostingv1alpha1.RolloutFreezeList
	installed, err := f.failures.List(ctx, f.Cache, &hostingv1alpha1.RolloutFreeze{}, &list, f.ReadTimeout)
	if err != nil {
		return freezes.Decision{}, fmt.Errorf("reading the RolloutFreezes for policy %s of space %s: %w", policy, space, err)
	}
	if !installed {
		return freezes.Decision{}, nil
	}
	return freezes.Decide(list.Items, space, policy, now), nil
}

// Source is the source of space's controller that queues the space's
// policies a freeze selects when the freeze is created, deleted or its
// spec changes (a freeze naming no policy selects every policy of the
// space, which policies, the space's cache, lists). The end of a freeze
// queues nothing: the run that it held is due then (RecheckAfter). On a
// hosting cluster without the kind it starts all the same, and looks for
// the kind again every retryKind until it watches the freezes or ctx ends.
func (f *Freezes) Source(space string, policies client.Reader) source.Source {
	return hostingwatch.Source(f.Cache, &hostingv1alpha1.RolloutFreeze{}, f.Clock, retryKind, "RolloutFreezes", space,
		func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) toolscache.ResourceEventHandler {
			return handler(ctx, space, policies, q)
		})
}

// handler queues space's policies on the changes of the freezes that
// select them.
func handler(ctx context.Context, space string, policies client.Reader,
	q workqueue.TypedRateLimitingInterface[reconcile.Request]) toolscache.ResourceEventHandler {
	queue := func(fs ...*hostingv1alpha1.RolloutFreeze) {
		for _, fz := range fs {
			if fz == nil || len(fz.Spec.Spaces) > 0 && !slices.Contains(fz.Spec.Spaces, space) {
				continue
			}
			if len(fz.Spec.Policies) > 0 {
				for _, p := range fz.Spec.Policies {
					q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: p}})
				}
				continue
			}
			var list v1alpha1.StagedBindingPolicyList
			if err := policies.List(ctx, &list); err != nil {
				continue // the cache is the space's: it fails only as the space goes
			}
			for _, p := range list.Items {
				q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
			}
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { queue(asFreeze(obj)) },
		UpdateFunc: func(oldObj, newObj any) {
			o, n := asFreeze(oldObj), asFreeze(newObj)
			if o == nil || n == nil || o.Generation != n.Generation {
				queue(o, n)
			}
		},
		DeleteFunc: func(obj any) { queue(asFreeze(obj)) },
	}
}

// asFreeze returns obj as a freeze, or nil (a tombstone's object, else nil).
func asFreeze(obj any) *hostingv1alpha1.RolloutFreeze {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	fz, _ := obj.(*hostingv1alpha1.RolloutFreeze)
	return fz
}
