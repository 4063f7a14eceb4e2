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
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	apitypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
)

// DefaultConversionCacheSize is how many CombinedStatuses an Engine keeps
// converted unless WithConversionCacheSize says otherwise.
const DefaultConversionCacheSize = 4096

// conversionKey identifies one version of one CombinedStatus.
type conversionKey struct {
	uid             apitypes.UID
	resourceVersion string
}

// converted is a CombinedStatus as the CEL value of its JSON form, with the
// sizes that bound the cost of evaluating a condition on it (see costBound).
type converted struct {
	obj   ref.Val
	sizes inputSizes
}

// conversions keeps the CombinedStatuses evaluated lately, converted,
// by UID and resourceVersion, so that the conditions of every stage and
// every reconcile share one conversion of each version. The forms are only
// read (CEL does not change its inputs). Safe for concurrent use.
type conversions struct {
	cache *lru.Cache // of conversionKey to converted; nil converts every time
}

func newConversions(size int) *conversions {
	if size <= 0 {
		return &conversions{}
	}
	return &conversions{cache: lru.New(size)}
}

// of returns cs converted, converting it only when this version of it is
// not cached. A CombinedStatus without UID or resourceVersion (one not read
// from an API server) is converted every time.
func (c *conversions) of(cs *ksv1alpha1.CombinedStatus) (converted, error) {
	if c == nil || c.cache == nil || cs.UID == "" || cs.ResourceVersion == "" {
		return convert(cs)
	}
	key := conversionKey{uid: cs.UID, resourceVersion: cs.ResourceVersion}
	if hit, ok := c.cache.Get(key); ok {
		return hit.(converted), nil
	}
	conv, err := convert(cs)
	if err != nil {
		return converted{}, err
	}
	c.cache.Add(key, conv)
	return conv, nil
}

// convert converts cs to the CEL value of its JSON form and measures it.
func convert(cs *ksv1alpha1.CombinedStatus) (converted, error) {
	obj, err := combinedStatusToJSON(cs)
	if err != nil {
		return converted{}, err
	}
	return converted{obj: celValue(obj), sizes: sizesOf(obj)}, nil
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

// len returns how many conversions are cached.
func (c *conversions) len() int {
	if c.cache == nil {
		return 0
	}
	return c.cache.Len()
}
