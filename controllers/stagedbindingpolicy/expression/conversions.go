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

package expression

import (
	"container/list"
	"sync"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
)

// DefaultConversionCacheSize is how many CombinedStatuses an Engine keeps in
// their JSON form unless WithConversionCacheSize says otherwise.
const DefaultConversionCacheSize = 4096

// conversionKey identifies one version of one CombinedStatus.
type conversionKey struct {
	uid             types.UID
	resourceVersion string
}

// conversions keeps the JSON form of the CombinedStatuses evaluated lately,
// by UID and resourceVersion, so that the conditions of every stage and
// every reconcile share one conversion of each version. The forms are only
// read (CEL does not change its inputs). Safe for concurrent use.
type conversions struct {
	size int

	mu      sync.Mutex
	lru     *list.List // of conversionKey, most recently used first
	entries map[conversionKey]conversion
}

// conversion is a cached JSON form and its place in the LRU list.
type conversion struct {
	obj  map[string]any
	elem *list.Element
}

func newConversions(size int) *conversions {
	return &conversions{size: size, lru: list.New(), entries: map[conversionKey]conversion{}}
}

// of returns cs in JSON form, converting it only when this version of it is
// not cached. A CombinedStatus without UID or resourceVersion (one not read
// from an API server) is converted every time.
func (c *conversions) of(cs *ksv1alpha1.CombinedStatus) (map[string]any, error) {
	if c == nil || c.size <= 0 || cs.UID == "" || cs.ResourceVersion == "" {
		return combinedStatusToJSON(cs)
	}
	key := conversionKey{uid: cs.UID, resourceVersion: cs.ResourceVersion}
	c.mu.Lock()
	if hit, ok := c.entries[key]; ok {
		c.lru.MoveToFront(hit.elem)
		c.mu.Unlock()
		return hit.obj, nil
	}
	c.mu.Unlock()

	obj, err := combinedStatusToJSON(cs)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if hit, ok := c.entries[key]; ok { // converted meanwhile by another evaluation
		return hit.obj, nil
	}
	c.entries[key] = conversion{obj: obj, elem: c.lru.PushFront(key)}
	for c.lru.Len() > c.size {
		oldest := c.lru.Back()
		c.lru.Remove(oldest)
		delete(c.entries, oldest.Value.(conversionKey))
	}
	return obj, nil
}

// len returns how many conversions are cached.
func (c *conversions) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
