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

package integration

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/cmd/stager/app"
	"github.com/kubestellar/workload-stager/internal/controller/spaces"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// The sizes of TestSpaceCacheIsBounded: 400 BindingPolicies of 96 KiB of
// annotation each (37.5 MiB) that the stager never caches, then 32 that it
// does (3 MiB), past a bound of 2 MiB.
const (
	cacheTestBound          = 2 << 20
	cacheTestForeign        = 400
	cacheTestLabelled       = 32
	cacheTestAnnotationSize = 96 << 10
)

// TestSpaceCacheIsBounded writes 400 large BindingPolicies that no policy
// generated into one WDS (a) while another (b) rolls out: the stager's
// cache of a never holds them (its metered bytes stay under a MiB, the
// process's heap does not grow by their size) and a stays served. Then
// BindingPolicies labelled as a policy's, which the cache does hold, take a
// past the stager's bound: a is not served, with its state, metric and
// Warning Event, while b's rollout goes on to the end; once they are
// deleted, a is served again.
func TestSpaceCacheIsBounded(t *testing.T) {
	const name = "cachebound"
	ctx := suite.ctx
	a, b := newSpace(t, "cache-a", true), newSpace(t, "cache-b", true)
	a.cancel() // no simulator in a: nothing else in this process caches its BindingPolicies

	// A stager of its own, with a small bound, serving a and b alone.
	opts := app.NewOptions()
	opts.Providers.Kubeconfig.Namespace = "stager-cache"
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
	opts.SpaceProbeInterval, opts.ReconcileTimeout = time.Second, reconcileTimeout
	opts.AllowSeveralInProcess = true
	opts.SpaceCacheMaxBytes, opts.SpaceCacheRetry = cacheTestBound, time.Second
	for _, s := range []*space{a, b} {
		kubeconfig, err := s.AddUser(stagerUser)
		if err != nil {
			t.Fatal(err)
		}
		if err := environment.RegisterKubeconfigSecret(ctx, suite.hosting.Client, opts.Providers.Kubeconfig.Namespace, s.Name, "", kubeconfig); err != nil {
			t.Fatal(err)
		}
	}
	stager, err := startStagerWith(ctx, suite.hosting, opts, suite.logger.WithName("cachebound"))
	if err != nil {
		t.Fatalf("starting the stager: %v", err)
	}
	t.Cleanup(stager.stop)
	waitForSpace(t, stager, a.Name, true, spaces.ReasonReady)
	waitForSpace(t, stager, b.Name, true, spaces.ReasonReady)

	createWorkload(t, b, name)
	create(t, b, newPolicy(name, name))
	policies(b).WaitForActiveStage(t, name, "dev")

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	writeBindingPolicies(t, a, "foreign", cacheTestForeign, nil)
	t.Logf("wrote %d BindingPolicies of %d KiB in %s", cacheTestForeign, cacheTestAnnotationSize>>10, time.Since(start).Round(time.Millisecond))
	b.openGate(name, "dev")
	policies(b).WaitForActiveStage(t, name, "test")
	environment.Consistently(t, 2*time.Second, "a served, its cache holding no foreign BindingPolicy", func() error {
		if state, _ := spaceState(stager, a.Name); !state.Ready {
			return fmt.Errorf("a is not served: %+v", state)
		}
		if held, ok := metricValue(t, "stager_space_cache_bytes", map[string]string{"space": a.Name}); !ok || held > 1<<20 {
			return fmt.Errorf("stager_space_cache_bytes{space=a} = %v (present %t), want under a MiB", held, ok)
		}
		return nil
	})
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("heap in use: %d MiB before the writes, %d MiB after", before.HeapInuse>>20, after.HeapInuse>>20)
	if written := int64(cacheTestForeign * cacheTestAnnotationSize); grown > written/2 {
		t.Errorf("the heap grew by %d MiB over %d MiB of BindingPolicies the stager should not cache", grown>>20, written>>20)
	}

	// BindingPolicies labelled as a policy's are cached, and take a past
	// its bound.
	writeBindingPolicies(t, a, "labelled", cacheTestLabelled, map[string]string{v1alpha1.PolicyLabel: "squatter"})
	state := waitForSpace(t, stager, a.Name, false, spaces.ReasonCacheOverLimit)
	if !strings.Contains(state.Message, "--space-cache-max-bytes") {
		t.Errorf("a's state message %q does not name the bound", state.Message)
	}
	if v, ok := metricValue(t, "stager_space_cache_over_limit", map[string]string{"space": a.Name}); !ok || v != 1 {
		t.Errorf("stager_space_cache_over_limit{space=a} = %v (present %t), want 1", v, ok)
	}
	if v, ok := metricValue(t, "stager_space_ready", map[string]string{"space": a.Name}); !ok || v != 0 {
		t.Errorf("stager_space_ready{space=a} = %v (present %t), want 0", v, ok)
	}
	waitFor(t, "the Warning Event in a", func() error {
		list := &eventsv1.EventList{}
		if err := a.Client.List(ctx, list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Reason == spaces.EventReasonCacheOverLimit && e.Type == corev1.EventTypeWarning {
				return nil
			}
		}
		return errors.New("none yet")
	})

	// b goes on to the end meanwhile.
	b.openGate(name, "test")
	b.openGate(name, "prod")
	policies(b).WaitForPhase(t, name, v1alpha1.RolloutCompleted)
	if state, _ := spaceState(stager, a.Name); state.Ready {
		t.Errorf("a is served again while its cache is over the bound: %+v", state)
	}

	// Without the labelled BindingPolicies, a is served again.
	if err := a.Client.DeleteAllOf(ctx, &ksv1alpha1.BindingPolicy{}, client.MatchingLabels{v1alpha1.PolicyLabel: "squatter"}); err != nil {
		t.Fatalf("deleting the labelled BindingPolicies: %v", err)
	}
	waitForSpace(t, stager, a.Name, true, spaces.ReasonReady)
	if v, ok := metricValue(t, "stager_space_cache_over_limit", map[string]string{"space": a.Name}); !ok || v != 0 {
		t.Errorf("stager_space_cache_over_limit{space=a} = %v (present %t) once served again, want 0", v, ok)
	}
}

// writeBindingPolicies creates n BindingPolicies of cacheTestAnnotationSize
// named prefix-<i> in s, with the given labels.
func writeBindingPolicies(t *testing.T, s *space, prefix string, n int, labels map[string]string) {
	t.Helper()
	if err := policytest.CreateBindingPolicies(suite.ctx, s.Client, prefix, n, cacheTestAnnotationSize, labels); err != nil {
		t.Fatalf("writing BindingPolicies in %s: %v", s.Name, err)
	}
}
