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

// Package hostingwatch reads one kind of the hosting cluster's objects
// (the RolloutWaves, the RolloutFreezes) from a cache of its own, for the
// decisions the spaces' reconcilers take on them, and records that
// cache's failed lists and watches: so that a read fails at once, rather
// than at its timeout, while the cache has never synced and its last
// list failed (a hosting identity without list on the kind, say).
package hostingwatch

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
