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

package wave_test

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/controller/wave"
	wavegate "github.com/kubestellar/workload-stager/internal/wave"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// TestGatesWaitForTheKind: on a hosting cluster without the RolloutWave
// kind, a space's Source starts (its controller runs, nothing is ordered),
// and once the kind is installed it queues the policies a new wave orders,
// without a restart.
func TestGatesWaitForTheKind(t *testing.T) {
	scheme, hostingCRDs := setUp(t)
	bare := start(t, "bare-hosting", scheme)
	ctx := t.Context()
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	gates := &wave.Gates{Waves: startCache(t, bare, scheme), Clock: clk}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(queue.ShutDown)
	if err := gates.Source(spaceB).Start(ctx, queue); err != nil {
		t.Fatalf("starting the Source without the kind: %v", err)
	}
	if d, err := gates.Decision(ctx, spaceB, "web", "v1", clk.Now()); err != nil || d.Reason != wavegate.ReasonNotOrdered {
		t.Fatalf("Decision without the kind = %+v, %v; want NotOrdered", d, err)
	}
	if _, err := envtest.InstallCRDs(bare.Config, envtest.CRDInstallOptions{Paths: []string{hostingCRDs}, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
	w := &hostingv1alpha1.RolloutWave{ObjectMeta: metav1.ObjectMeta{Name: "late"}, Spec: hostingv1alpha1.RolloutWaveSpec{
		Policies: []string{"web"},
		Steps:    []hostingv1alpha1.WaveStep{{Name: "one", Spaces: []string{spaceA}}, {Name: "two", Spaces: []string{spaceB}}}}}
	if err := bare.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	environment.Eventually(t, waitFor, "the Source to queue web once the kind exists", func() error {
		clk.Step(30 * time.Second) // the Source looks for the kind again every 30s
		if queue.Len() == 0 {
			return errors.New("nothing queued")
		}
		if req, _ := queue.Get(); req.Name != "web" {
			return errors.New("queued " + req.Name)
		}
		return nil
	})
}

// TestDecisionFailsAtOnceWithoutReadAccess: a stager whose hosting
// identity may not list RolloutWaves never gets its cache of them synced;
// Decision then fails at once with the list's error, which the reconciler
// turns into WavesUnreadable, instead of waiting out its read timeout on
// every run of every policy.
func TestDecisionFailsAtOnceWithoutReadAccess(t *testing.T) {
	scheme, hostingCRDs := setUp(t)
	hosting := start(t, "hosting", scheme, environment.WithCRDDirs(hostingCRDs))
	// A read timeout far past the test's bound: only failing at once passes.
	gates := &wave.Gates{ReadTimeout: time.Hour}
	gates.Waves = startCacheOf(t, userConfig(t, hosting, "no-waves"), cache.Options{Scheme: scheme, DefaultWatchErrorHandler: gates.WatchErrorHandler})

	decide, stop := context.WithTimeout(t.Context(), waitFor)
	defer stop()
	for range 2 { // the first read starts the informer, the second finds it failing
		d, err := gates.Decision(decide, spaceB, "web", "v1", time.Now())
		if !apierrors.IsForbidden(err) {
			t.Fatalf("Decision without list access = %+v, %v; want the list's Forbidden error at once", d, err)
		}
		// The cache's error, found only once the bound ended the read, is
		// no failure at once.
		if decide.Err() != nil {
			t.Fatalf("Decision waited out the test's bound (%v): %v", waitFor, err)
		}
	}
}
