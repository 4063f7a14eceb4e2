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
	"fmt"
	"reflect"
	"runtime"
	"testing"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	apitypes "k8s.io/apimachinery/pkg/types"
)

func pointer(v ref.Val) uintptr { return reflect.ValueOf(v).Pointer() }

// versioned returns a CombinedStatus as read from an API server: with a UID
// and a resourceVersion, reporting count available replicas.
func versioned(uid, resourceVersion, count string) *ksv1alpha1.CombinedStatus {
	cs := combinedStatus("deployments-aggregator", []ksv1alpha1.Value{number(count)})
	cs.UID, cs.ResourceVersion = apitypes.UID(uid), resourceVersion
	return cs
}

// TestConversionsAreShared checks that one version of a CombinedStatus is
// converted once, a new version again, an object without UID or
// resourceVersion every time, and that the cache stays within its size.
func TestConversionsAreShared(t *testing.T) {
	c := newConversions(2, DefaultConversionCacheBytes)
	first, err := c.of(versioned("a", "1", "1"))
	if err != nil {
		t.Fatal(err)
	}
	again, _ := c.of(versioned("a", "1", "1"))
	if pointer(first.obj) != pointer(again.obj) {
		t.Error("the same version was converted twice")
	}
	newer, _ := c.of(versioned("a", "2", "0"))
	if pointer(newer.obj) == pointer(first.obj) || newer.obj.Equal(first.obj) == types.True {
		t.Error("a new resourceVersion got the old version's form")
	}
	unread := versioned("", "", "1")
	x, _ := c.of(unread)
	y, _ := c.of(unread)
	if pointer(x.obj) == pointer(y.obj) {
		t.Error("a CombinedStatus without UID was cached")
	}
	for i := range 5 {
		if _, err := c.of(versioned(fmt.Sprint("b", i), "1", "1")); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.len(); n != 2 {
		t.Errorf("%d conversions cached, want the size, 2", n)
	}
}

// TestCachedConversionsKeepTheSemantics evaluates conditions on the same
// CombinedStatus versions with and without the cache, several times: the
// results are the same, and an evaluation never changes the cached form.
func TestCachedConversionsKeepTheSemantics(t *testing.T) {
	cached, uncached := newEngine(t), newEngine(t, WithConversionCacheSize(0))
	conditions := []string{
		seedCondition,
		`combinedStatus.results.all(r, r.rowErrors.size() == 0 && r.aggregationErrors.size() == 0)`,
		`obj.results[0].rows[0].columns[0].float == '1'`,
		`obj.results.exists(r, r.columnNames.size() >= 0)`,
	}
	statuses := []*ksv1alpha1.CombinedStatus{versioned("a", "1", "1"), versioned("a", "2", "0"), versioned("b", "7", "1")}
	for _, src := range conditions {
		pc, err := cached.Compile(KindCondition, src)
		if err != nil {
			t.Fatal(err)
		}
		pu, err := uncached.Compile(KindCondition, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, cs := range statuses {
			want, wantErr := pu.EvalCondition(cs)
			for range 3 {
				got, gotErr := pc.EvalCondition(cs)
				if got != want || (gotErr == nil) != (wantErr == nil) {
					t.Errorf("%s on %s/%s: %v, %v with the cache; %v, %v without", src, cs.UID, cs.ResourceVersion, got, gotErr, want, wantErr)
				}
			}
		}
	}
	form, _ := cached.conversions.of(statuses[0])
	fresh, _ := combinedStatusToJSON(statuses[0])
	if form.obj.Equal(celValue(fresh)) != types.True {
		t.Error("an evaluation changed the cached form")
	}
}

// TestCELValuesAdapter checks that the condition environment's adapter
// gives CEL values back as they are and converts other values as cel-go's
// own adapter does, and that conditions are planned with it.
func TestCELValuesAdapter(t *testing.T) {
	if got := newEngine(t).conditionEnv.CELTypeAdapter(); reflect.TypeOf(got) != reflect.TypeFor[celValuesAdapter]() {
		t.Errorf("the condition environment's adapter is a %T, want a celValuesAdapter", got)
	}
	a := celValuesAdapter{types.DefaultTypeAdapter}
	list := celValue([]any{"a", int64(1)})
	for _, v := range []ref.Val{types.String("s"), types.Int(1), types.True, types.NullValue, list} {
		if got := a.NativeToValue(v); got != v {
			t.Errorf("NativeToValue(%v) = %v, want the value itself", v, got)
		}
	}
	for _, native := range []any{"s", int64(1), true, nil, map[string]any{"k": []any{"v"}}, []string{"x", "y"}} {
		got, want := a.NativeToValue(native), types.DefaultTypeAdapter.NativeToValue(native)
		if got.Type() != want.Type() || got.Equal(want) != types.True {
			t.Errorf("NativeToValue(%#v) = %v (%s), want %v (%s)", native, got, got.Type(), want, want.Type())
		}
	}
}

// TestConversionsKeepOneVersionPerObject: a new version of a CombinedStatus
// replaces the old one's conversion, rather than keeping every version of
// an object that is updated often.
func TestConversionsKeepOneVersionPerObject(t *testing.T) {
	c := newConversions(DefaultConversionCacheSize, DefaultConversionCacheBytes)
	for v := range 40 {
		if _, err := c.of(versioned("a", fmt.Sprint(v), fmt.Sprint(v))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.of(versioned("b", "1", "1")); err != nil {
		t.Fatal(err)
	}
	if n := c.len(); n != 2 {
		t.Errorf("%d conversions cached after 40 versions of one object and one of another, want 2", n)
	}
}

// largeStatus is a CombinedStatus of one version with the given number of
// rows of two columns, about 130 bytes of JSON a row.
func largeStatus(uid, resourceVersion string, rows int) *ksv1alpha1.CombinedStatus {
	all := make([][]ksv1alpha1.Value, rows)
	for i := range all {
		all[i] = []ksv1alpha1.Value{number(fmt.Sprint(i)), str(fmt.Sprintf("wec-%06d-of-the-fleet", i))}
	}
	cs := combinedStatus("deployments-aggregator", all...)
	cs.UID, cs.ResourceVersion = apitypes.UID(uid), resourceVersion
	return cs
}

// TestConversionsAreBoundedByBytes: the cache keeps conversions within its
// bytes, dropping the least recently used, and does not keep one larger
// than all its bytes.
func TestConversionsAreBoundedByBytes(t *testing.T) {
	one, err := convert(largeStatus("x", "1", 1000))
	if err != nil {
		t.Fatal(err)
	}
	c := newConversions(DefaultConversionCacheSize, 3*one.memory)
	for i := range 10 {
		if _, err := c.of(largeStatus(fmt.Sprint(i), "1", 1000)); err != nil {
			t.Fatal(err)
		}
		if m := c.memory(); m > 3*one.memory {
			t.Fatalf("after %d objects the cache holds %d bytes, above its %d", i+1, m, 3*one.memory)
		}
	}
	if n := c.len(); n != 3 {
		t.Errorf("%d conversions kept, want the 3 that fit", n)
	}
	first, _ := c.of(largeStatus("9", "1", 1000))
	again, _ := c.of(largeStatus("9", "1", 1000))
	if pointer(first.obj) != pointer(again.obj) {
		t.Error("the most recent object was evicted")
	}
	if _, err := c.of(largeStatus("huge", "1", 4000)); err != nil {
		t.Fatal(err)
	}
	if n, m := c.len(), c.memory(); n != 3 || m > 3*one.memory {
		t.Errorf("after a conversion larger than the cache: %d kept, %d bytes; want it not kept", n, m)
	}
}

// TestMemoryOfIsAnUpperBound: the estimate the cache is bounded by is at
// least the heap a conversion keeps.
func TestMemoryOfIsAnUpperBound(t *testing.T) {
	for _, rows := range []int{10, 1000, 20000} {
		cs := largeStatus("a", "1", rows)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		conv, err := convert(cs)
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		kept := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		runtime.KeepAlive(conv)
		t.Logf("%d rows: estimated %d bytes, kept %d", rows, conv.memory, kept)
		if rows >= 1000 && kept > int64(conv.memory) {
			t.Errorf("%d rows: the conversion kept %d bytes of heap, above the estimate %d", rows, kept, conv.memory)
		}
	}
}
