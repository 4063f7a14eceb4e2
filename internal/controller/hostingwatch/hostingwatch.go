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

// Package hostingwatch reads and watches one kind of the hosting cluster's
// objects (the RolloutWaves, the RolloutFreezes) from a cache of its own,
// for the decisions the spaces' reconcilers take on them. It records that
// cache's failed lists and watches, so that a read fails at once, rather
// than at its timeout, while the cache has never synced and its last list
// failed (a hosting identity without list on the kind, say); and it waits
// for a kind the hosting cluster does not have yet, which can be installed
// without a restart of the stager.
package hostingwatch

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// DefaultReadTimeout bounds a List whose timeout is not set: the first
// read waits for the cache's watch, which a stager without list and
// watch on the kind never gets.
const DefaultReadTimeout = 5 * time.Second

// Failures records the failed lists and watches of one cache. Its zero
// value is ready to use; set its WatchErrorHandler as the cache's
// DefaultWatchErrorHandler.
type Failures struct {
	mu sync.Mutex
	// last is the last error recorded, and next is closed when the next
	// one comes (nil until someone waits).
	last error
	next chan struct{}
}

// WatchErrorHandler records a failed list or watch of the cache, then
// logs it as client-go does.
func (f *Failures) WatchErrorHandler(ctx context.Context, r *toolscache.Reflector, err error) {
	f.mu.Lock()
	f.last = err
	if f.next != nil {
		close(f.next)
		f.next = nil
	}
	f.mu.Unlock()
	toolscache.DefaultWatchErrorHandler(ctx, r, err)
}

// Next returns a channel closed when WatchErrorHandler next records an
// error.
func (f *Failures) Next() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.next == nil {
		f.next = make(chan struct{})
	}
	return f.next
}

// Last returns the last error WatchErrorHandler recorded, nil if none.
func (f *Failures) Last() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

// List reads into list what c, the cache whose failures f records, holds
// of obj's kind. It returns false, and no error, when the hosting cluster
// has no such kind. While c's informer of the kind has not synced, List
// waits for it, up to timeout (zero: DefaultReadTimeout), unless a list
// or watch of c failed: then it fails at once with that error, and again
// on every call until the informer has synced.
func (f *Failures) List(ctx context.Context, c cache.Cache, obj client.Object, list client.ObjectList, timeout time.Duration) (bool, error) {
	if timeout <= 0 {
		timeout = DefaultReadTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	informer, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if meta.IsNoMatchError(err) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	if !informer.HasSynced() {
		next := f.Next()
		if last := f.Last(); last != nil {
			return true, fmt.Errorf("the cache has not synced: %w", last)
		}
		// The first failure of the list ends the wait for the sync.
		go func() {
			select {
			case <-next:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	if err := c.List(ctx, list); err != nil {
		if last := f.Last(); last != nil && !informer.HasSynced() {
			return true, fmt.Errorf("the cache has not synced: %w", last)
		}
		return true, err
	}
	return true, nil
}

// Informer returns c's informer of obj's kind. While the hosting cluster
// has no such kind it looks again every retry on timers (nil: the real
// clock), calling missing (if not nil) the first time; it returns nil,
// and no error, once ctx ends first.
func Informer(ctx context.Context, c cache.Cache, obj client.Object, timers clock.Clock, retry time.Duration, missing func()) (cache.Informer, error) {
	if timers == nil {
		timers = clock.RealClock{}
	}
	for {
		informer, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if !meta.IsNoMatchError(err) {
			return informer, err
		}
		if missing != nil {
			missing()
			missing = nil
		}
		timer := timers.NewTimer(retry)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, nil
		case <-timer.C():
		}
	}
}

// Source is a source of a space's controller that adds the handler
// handlerFor makes (of the source's context and queue) to c's informer of
// obj's kind, until the source's context ends. On a hosting cluster
// without the kind it starts all the same, and adds the handler once
// Informer finds the kind. Its errors name kind (plural, "RolloutWaves")
// and space.
func Source(c cache.Cache, obj client.Object, timers clock.Clock, retry time.Duration, kind, space string,
	handlerFor func(context.Context, workqueue.TypedRateLimitingInterface[reconcile.Request]) toolscache.ResourceEventHandler) source.Source {
	watch := func(ctx context.Context, informer cache.Informer, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		reg, err := informer.AddEventHandler(handlerFor(ctx, q))
		if err != nil {
			return fmt.Errorf("watching the %s for space %s: %w", kind, space, err)
		}
		context.AfterFunc(ctx, func() { _ = informer.RemoveEventHandler(reg) })
		return nil
	}
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		informer, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if meta.IsNoMatchError(err) {
			go func() {
				// An object made once the kind is installed is queued by
				// its creation, which the informer replays.
				if informer, err := Informer(ctx, c, obj, timers, retry, nil); err == nil && informer != nil {
					_ = watch(ctx, informer, q) // fails only once the informer stops
				}
			}()
			return nil
		}
		if err != nil {
			return fmt.Errorf("watching the %s for space %s: %w", kind, space, err)
		}
		return watch(ctx, informer, q)
	})
}
