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

package spaces

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
)

// DefaultMaxCacheBytes is the default bound of what one space's cache may
// hold, by cacheCost: 64 MiB of objects' JSON, about 150 MiB of heap
// (docs/security.md, "What one space's cache holds").
const DefaultMaxCacheBytes = 64 << 20

// objectOverhead is what cacheCost charges every object beyond its JSON:
// the decoded object's structs, maps and the informer's index entries,
// which an object of a few hundred bytes of JSON takes several times over.
const objectOverhead = 1024

// errCacheOverLimit ends an attempt to serve a space whose cache holds more
// than Options.MaxCacheBytes.
var errCacheOverLimit = errors.New("the space's cache holds more than its bound")

// cacheCost estimates what obj takes in a cache: the bytes of its JSON,
// plus objectOverhead. The decoded object takes about 2–3 times its JSON
// (issue 54: a BindingPolicy of 1.3 MiB took 3.1 MiB); the bound is on the
// estimate, which is cheap to compute and the same on every platform.
func cacheCost(obj any) int64 {
	var n byteCounter
	if err := json.NewEncoder(&n).Encode(obj); err != nil {
		return objectOverhead
	}
	return int64(n) + objectOverhead
}

// byteCounter counts the bytes written to it.
type byteCounter int64

func (c *byteCounter) Write(p []byte) (int, error) {
	*c += byteCounter(len(p))
	return len(p), nil
}

// cacheMeter adds up cacheCost over the objects a space's informers hold,
// from their events, and calls over once, the first time the sum exceeds
// limit. It is fed by one handler per kind (handler), which must see every
// event of that kind's informer from its start, or the replay of its store
// that AddEventHandler makes. Safe for concurrent use.
type cacheMeter struct {
	limit int64
	over  func(held int64)
	// report, when set, is called with the sum after every change.
	report func(held int64)

	mu      sync.Mutex
	sizes   map[string]int64 // by kind and key
	held    int64
	fired   bool
	stopped bool
}

// stop makes the meter ignore further events (its handlers may still be
// delivering some) and returns what it held.
func (m *cacheMeter) stop() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopped = true
	return m.held
}

// newCacheMeter returns a meter of limit bytes calling over when it is
// exceeded and report after every change (nil: none).
func newCacheMeter(limit int64, over, report func(held int64)) *cacheMeter {
	return &cacheMeter{limit: limit, over: over, report: report, sizes: map[string]int64{}}
}

// Held returns the sum of the costs of the objects held.
func (m *cacheMeter) Held() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.held
}

// set records that the object of kind under key costs size (0: gone).
func (m *cacheMeter) set(kind, key string, size int64) {
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return
	}
	id := kind + "/" + key
	m.held += size - m.sizes[id]
	if size == 0 {
		delete(m.sizes, id)
	} else {
		m.sizes[id] = size
	}
	held := m.held
	fire := !m.fired && held > m.limit
	if fire {
		m.fired = true
	}
	m.mu.Unlock()
	if m.report != nil {
		m.report(held)
	}
	if fire {
		m.over(held)
	}
}

// handler returns the event handler that feeds the meter with the events
// of kind's informer.
func (m *cacheMeter) handler(kind string) toolscache.ResourceEventHandler {
	put := func(obj any) {
		key, err := toolscache.MetaNamespaceKeyFunc(obj)
		if err != nil {
			return
		}
		m.set(kind, key, cacheCost(obj))
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    put,
		UpdateFunc: func(_, obj any) { put(obj) },
		DeleteFunc: func(obj any) {
			key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			if err != nil {
				return
			}
			m.set(kind, key, 0)
		},
	}
}

// overLimitMessage says why a space is not served: its cache went over
// its bound.
func overLimitMessage(held, limit int64) string {
	return fmt.Sprintf("the space's cache grew to about %d bytes of objects, over the bound of %d (--space-cache-max-bytes): "+
		"the space is not served until it holds less; delete BindingPolicies, Bindings, CombinedStatuses, StagedBindingPolicies or StageApprovals, or raise the bound",
		held, limit)
}
