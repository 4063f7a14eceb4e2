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
	"sync"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	apitypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
)

// DefaultConversionCacheSize is how many CombinedStatuses an Engine keeps
// converted unless WithConversionCacheSize says otherwise.
const DefaultConversionCacheSize = 4096

// DefaultConversionCacheBytes is how much memory, by memoryOf's estimate,
// the conversions an Engine keeps may take unless WithConversionCacheBytes
// says otherwise: a converted CombinedStatus takes several times its JSON
// size (docs/security.md).
const DefaultConversionCacheBytes = 64 << 20

// converted is a CombinedStatus as the CEL value of its JSON form, with the
// sizes that bound the cost of evaluating a condition on it (see costBound)
// and an estimate of the memory it takes.
type converted struct {
	obj    ref.Val
	sizes  inputSizes
	memory uint64
}

// conversions keeps the CombinedStatuses evaluated lately, converted, one
// version of each by UID, so that the conditions of every stage and every
// reconcile share one conversion of each version. It holds at most
// maxEntries conversions and maxBytes of memory by memoryOf's estimate,
// evicting the least recently used first; a conversion larger than maxBytes
// is not kept. The forms are only read (CEL does not change its inputs).
// Safe for concurrent use.
type conversions struct {
	maxBytes uint64

	// mu guards bytes, and every use of cache, whose eviction function
	// counts the evicted conversion out of bytes.
	mu    sync.Mutex
	bytes uint64
	cache *lru.Cache // of UID to *conversionEntry; nil converts every time
}

// conversionEntry is the conversion of one version of one CombinedStatus.
type conversionEntry struct {
	resourceVersion string
	converted
}

func newConversions(maxEntries int, maxBytes uint64) *conversions {
	c := &conversions{maxBytes: maxBytes}
	if maxEntries > 0 {
		c.cache = lru.NewWithEvictionFunc(maxEntries, func(_ lru.Key, value any) {
			c.bytes -= value.(*conversionEntry).memory
		})
	}
	return c
}

// of returns cs converted, converting it only when this version of it is
// not cached. A CombinedStatus without UID or resourceVersion (one not read
// from an API server) is converted every time.
func (c *conversions) of(cs *ksv1alpha1.CombinedStatus) (converted, error) {
	if c == nil || c.cache == nil || cs.UID == "" || cs.ResourceVersion == "" {
		return convert(cs)
	}
	c.mu.Lock()
	if hit, ok := c.cache.Get(cs.UID); ok && hit.(*conversionEntry).resourceVersion == cs.ResourceVersion {
		c.mu.Unlock()
		return hit.(*conversionEntry).converted, nil
	}
	c.mu.Unlock()
	conv, err := convert(cs)
	if err != nil {
		return converted{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cache.Remove(cs.UID)
	if conv.memory > c.maxBytes {
		return conv, nil
	}
	c.cache.Add(cs.UID, &conversionEntry{resourceVersion: cs.ResourceVersion, converted: conv})
	c.bytes += conv.memory
	for c.bytes > c.maxBytes {
		c.cache.RemoveOldest()
	}
	return conv, nil
}

// cached returns the conversion of version resourceVersion of the
// CombinedStatus with uid, if the cache has it.
func (c *conversions) cached(uid apitypes.UID, resourceVersion string) (converted, bool) {
	if c == nil || c.cache == nil || uid == "" || resourceVersion == "" {
		return converted{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if hit, ok := c.cache.Get(uid); ok && hit.(*conversionEntry).resourceVersion == resourceVersion {
		return hit.(*conversionEntry).converted, true
	}
	return converted{}, false
}

// convert converts cs to the CEL value of its JSON form and measures it.
func convert(cs *ksv1alpha1.CombinedStatus) (converted, error) {
	obj, err := combinedStatusToJSON(cs)
	if err != nil {
		return converted{}, err
	}
	return converted{obj: celValue(obj), sizes: sizesOf(obj), memory: memoryOf(obj)}, nil
}

// celValue converts a value in JSON form to CEL values all the way down,
// once, where cel-go's adapter would wrap each map and list again at every
// access. The values are those the adapter gives (a map of strings to
// values, a list, string, int, double, bool, null); only their Go types
// differ.
func celValue(v any) ref.Val {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[ref.Val]ref.Val, len(v))
		for k, el := range v {
			m[types.String(k)] = celValue(el)
		}
		return types.NewRefValMap(types.DefaultTypeAdapter, m)
	case []any:
		l := make([]ref.Val, len(v))
		for i, el := range v {
			l[i] = celValue(el)
		}
		return types.NewRefValList(types.DefaultTypeAdapter, l)
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

// celValuesAdapter is the condition environment's type adapter: it gives
// back a value that is already a CEL value as it is, and converts others as
// the environment's own adapter does. cel-go adapts the value of every
// attribute it reads (obj.results, r.name, ...), and the CombinedStatus is
// converted to CEL values all the way down (celValue), so most values are
// CEL values; the adapter's type switch tries some forty Go types before
// ref.Val, and was about a tenth of an evaluation's time.
type celValuesAdapter struct{ types.Adapter }

// NativeToValue implements types.Adapter.
func (a celValuesAdapter) NativeToValue(value any) ref.Val {
	if v, ok := value.(ref.Val); ok {
		return v
	}
	return a.Adapter.NativeToValue(value)
}

// Estimated memory of celValue's forms, in bytes, after Go's runtime: a
// value boxed in an interface; the wrapper cel-go puts around a list or
// map; a map's header, and a slot (key, value and control byte, with
// room) of the groups of eight it allocates at most seven-eighths full.
const (
	boxBytes     = 16
	wrapperBytes = 64
	mapBytes     = 48
	slotBytes    = 2*boxBytes + 8
)

// memoryOf estimates the memory celValue's form of v takes, strings
// included, rounding up; TestMemoryOfIsAnUpperBound holds it against the
// heap.
func memoryOf(v any) uint64 {
	switch v := v.(type) {
	case string:
		return boxBytes + roundUp8(len(v))
	case []any:
		m := uint64(wrapperBytes + 24 + boxBytes*len(v))
		for _, el := range v {
			m += memoryOf(el)
		}
		return m
	case map[string]any:
		slots := uint64(8)
		for slots*7/8 < uint64(len(v)) {
			slots *= 2
		}
		m := wrapperBytes + mapBytes + slots*slotBytes
		for k, el := range v {
			m += boxBytes + roundUp8(len(k)) + memoryOf(el)
		}
		return m
	}
	return boxBytes
}

func roundUp8(n int) uint64 { return (uint64(n) + 7) &^ 7 }

// len returns how many conversions are cached.
func (c *conversions) len() int {
	if c.cache == nil {
		return 0
	}
	return c.cache.Len()
}

// memory returns the estimated memory of the cached conversions.
func (c *conversions) memory() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}
