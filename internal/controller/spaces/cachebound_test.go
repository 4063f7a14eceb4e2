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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// TestCacheMeterAddsUpWhatTheInformersHold feeds a meter random sequences
// of adds, updates and deletes (some as DeletedFinalStateUnknown) of
// ConfigMaps of random sizes under a few names of two kinds, and checks at
// every step that it holds the sum of the cost of the objects a store fed
// the same events holds, and that it calls over exactly once, at the first
// event that takes the sum past the limit, and nothing once stopped.
func TestCacheMeterAddsUpWhatTheInformersHold(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for run := range 200 {
		limit := int64(rng.IntN(40_000))
		overs, overAt, step := 0, -1, 0
		m := newCacheMeter(limit, func(int64) { overs++; overAt = step }, nil)
		handlers := map[string]toolscache.ResourceEventHandler{"a": m.handler("a"), "b": m.handler("b")}
		stores := map[string]map[string]*corev1.ConfigMap{"a": {}, "b": {}}
		firstOver := -1
		for step = range 60 {
			kind := []string{"a", "b"}[rng.IntN(2)]
			name := fmt.Sprintf("cm%d", rng.IntN(4))
			store := stores[kind]
			old, exists := store[name]
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
				Data: map[string]string{"k": strings.Repeat("x", rng.IntN(8_000))}}
			switch op := rng.IntN(3); {
			case !exists || op == 0:
				store[name] = cm
				if exists {
					handlers[kind].OnUpdate(old, cm)
				} else {
					handlers[kind].OnAdd(cm, false)
				}
			case op == 1:
				store[name] = cm
				handlers[kind].OnUpdate(old, cm)
			default:
				delete(store, name)
				if rng.IntN(2) == 0 {
					handlers[kind].OnDelete(old)
				} else {
					handlers[kind].OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/" + name, Obj: old})
				}
			}
			var want int64
			for _, s := range stores {
				for _, obj := range s {
					want += cacheCost(obj)
				}
			}
			if got := m.Held(); got != want {
				t.Fatalf("run %d, step %d: the meter holds %d, the stores %d", run, step, got, want)
			}
			if want > limit && firstOver < 0 {
				firstOver = step
			}
		}
		if firstOver >= 0 && (overs != 1 || overAt != firstOver) {
			t.Fatalf("run %d: over called %d times, at step %d; want once, at step %d", run, overs, overAt, firstOver)
		}
		if firstOver < 0 && overs != 0 {
			t.Fatalf("run %d: over called %d times, never over the limit %d", run, overs, limit)
		}
		held := m.stop()
		handlers["a"].OnAdd(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "late"}}, false)
		if m.Held() != held {
			t.Fatalf("run %d: a stopped meter counted an add: %d, then %d", run, held, m.Held())
		}
	}
}

// TestCacheCostIsTheJSONAndTheOverhead checks the estimate against the
// object's JSON.
func TestCacheCostIsTheJSONAndTheOverhead(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"},
		Data: map[string]string{"k": strings.Repeat("x", 100_000)}}
	raw, err := json.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cacheCost(cm), int64(len(raw))+1+objectOverhead; got != want { // +1: the Encoder's newline
		t.Errorf("cacheCost = %d, want %d", got, want)
	}
}

// TestSpaceOverItsCacheBoundIsNotServed engages a space whose ConfigMaps
// (the Required kind here) come to hold more than MaxCacheBytes: its
// controller stops, it is reported CacheOverLimit with its metrics and a
// Warning Event in the space, and once the ConfigMaps are gone it is served
// again at a later attempt.
func TestSpaceOverItsCacheBoundIsNotServed(t *testing.T) {
	needsAPIServer(t)
	const name = "over-bound"
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "over-bound-"}}
	if err := sharedSpace.Client.Create(ctx, ns); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	h := newHarnessWith(t, func(o *Options) {
		o.MaxCacheBytes = 1 << 20
		o.OverLimitBackoff = &wait.Backoff{Duration: 200 * time.Millisecond, Factor: 1, Steps: 1 << 30, Cap: time.Second}
	}, &corev1.ConfigMap{})
	cl := h.newCluster()
	h.start()
	h.engage(name, cl)
	waitFor(t, "the space served", func() error { return h.serving(name, 1, cl) })
	if v := gauge(t, spaceCacheOverLimit); v != 0 {
		t.Errorf("stager_space_cache_over_limit = %v while served, want 0", v)
	}
	if v := gauge(t, spaceCacheBytes); v <= 0 || v > 1<<20 {
		t.Errorf("stager_space_cache_bytes = %v while served, want some, under the bound", v)
	}

	big := strings.Repeat("x", 400<<10)
	for i := range 3 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: fmt.Sprintf("big-%d", i)}, Data: map[string]string{"k": big}}
		if err := sharedSpace.Client.Create(ctx, cm); err != nil {
			t.Fatalf("creating ConfigMap %s: %v", cm.Name, err)
		}
	}
	waitFor(t, "the space held off", func() error {
		s, err := h.state(name)
		if err != nil {
			return err
		}
		if s.Ready || s.Reason != ReasonCacheOverLimit || !strings.Contains(s.Message, "--space-cache-max-bytes") {
			return fmt.Errorf("state %+v", s)
		}
		if n := h.ctrls.runningOf(name); n != 0 {
			return fmt.Errorf("%d controllers run", n)
		}
		if v := gauge(t, spaceCacheOverLimit); v != 1 {
			return fmt.Errorf("stager_space_cache_over_limit = %v", v)
		}
		return nil
	})
	waitFor(t, "the Warning Event in the space", func() error {
		list := &eventsv1.EventList{}
		if err := sharedSpace.Client.List(ctx, list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Reason == EventReasonCacheOverLimit && e.Type == corev1.EventTypeWarning && e.Regarding.Kind == "Namespace" &&
				strings.Contains(e.Note, "--space-cache-max-bytes") {
				return nil
			}
		}
		return errors.New("none yet")
	})

	for i := range 3 {
		if err := sharedSpace.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: fmt.Sprintf("big-%d", i)}}); err != nil {
			t.Fatalf("deleting a ConfigMap: %v", err)
		}
	}
	waitFor(t, "the space served again", func() error {
		s, err := h.state(name)
		if err != nil {
			return err
		}
		if !s.Ready {
			return fmt.Errorf("state %+v", s)
		}
		if v := gauge(t, spaceCacheOverLimit); v != 0 {
			return fmt.Errorf("stager_space_cache_over_limit = %v", v)
		}
		return nil
	})
}

// gauge returns the value of the Runner's gauge vec's series of the
// space of TestSpaceOverItsCacheBoundIsNotServed.
func gauge(t *testing.T, vec *prometheus.GaugeVec) float64 {
	t.Helper()
	return testutil.ToFloat64(vec.WithLabelValues("over-bound"))
}

// waitFor waits for check to pass within waitTimeout.
func waitFor(t *testing.T, what string, check func() error) {
	t.Helper()
	if err := environment.Poll(context.Background(), environment.PollInterval, waitTimeout, what, check); err != nil {
		t.Fatal(err)
	}
}
