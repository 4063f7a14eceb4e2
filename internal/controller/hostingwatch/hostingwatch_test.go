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

package hostingwatch_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/controller/hostingwatch"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// TestFailuresWakeEveryWaiter: over random sequences of waits (Next) and
// failures (WatchErrorHandler), every channel Next returned before a
// failure is closed by it, none returned since the last failure is, and
// Last is the last failure: a read waiting for a cache's sync is never
// left waiting out its timeout by a failure it should have seen.
func TestFailuresWakeEveryWaiter(t *testing.T) {
	// The handler logs as client-go does; not here.
	ctx := klog.NewContext(context.Background(), logr.Discard())
	reflector := toolscache.NewReflector(&toolscache.ListWatch{}, &hostingv1alpha1.RolloutFreeze{},
		toolscache.NewStore(toolscache.MetaNamespaceKeyFunc), 0)
	rapid.Check(t, func(t *rapid.T) {
		var f hostingwatch.Failures
		var woken, waiting []<-chan struct{}
		var last error
		for i := range rapid.IntRange(1, 40).Draw(t, "steps") {
			if rapid.Bool().Draw(t, fmt.Sprintf("fail%d", i)) {
				last = fmt.Errorf("failure %d", i)
				f.WatchErrorHandler(ctx, reflector, last)
				woken, waiting = append(woken, waiting...), nil
			} else {
				waiting = append(waiting, f.Next())
			}
			for _, ch := range woken {
				select {
				case <-ch:
				default:
					t.Fatalf("step %d: a wait begun before the failure %v is still waiting", i, last)
				}
			}
			for _, ch := range waiting {
				select {
				case <-ch:
					t.Fatalf("step %d: a wait begun after the last failure has ended", i)
				default:
				}
			}
			if got := f.Last(); !errors.Is(got, last) || (got == nil) != (last == nil) {
				t.Fatalf("step %d: Last() = %v, want %v", i, got, last)
			}
		}
	})
}

// waitFor bounds every wait of the tests against API servers; a read
// that waits for its timeout (an hour) fails it.
const waitFor = 30 * time.Second

// TestAgainstAPIServers reads and watches a hosting cluster's
// RolloutFreezes through real caches. Without the kind, a read finds none,
// and no error, and a Source starts all the same; once the kind is
// installed, the Source's handler sees a new freeze, without a restart,
// and a read finds it. For a user who may not list them, a read fails with
// the list's Forbidden error at once, every time, not at its timeout.
func TestAgainstAPIServers(t *testing.T) {
	if testing.Short() {
		t.Skip("needs kube-apiservers; run without -short (make test)")
	}
	ctrllog.SetLogger(logr.Discard())
	scheme := environment.Scheme()
	if err := hostingv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	hostingCRDs, err := environment.HostingCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	// The kind is installed after the first subtest.
	hosting := environment.StartTestSpace(t, "hosting", environment.WithScheme(scheme))

	// newCache starts a cache of the hosting cluster, as user (a new one
	// without any role) unless user is empty, whose failures f records.
	newCache := func(t *testing.T, user string) (*hostingwatch.Failures, cache.Cache) {
		cfg := hosting.Config
		if user != "" {
			kubeconfig, err := hosting.AddUser(user)
			if err != nil {
				t.Fatal(err)
			}
			if cfg, err = clientcmd.RESTConfigFromKubeConfig(kubeconfig); err != nil {
				t.Fatal(err)
			}
		}
		f := &hostingwatch.Failures{}
		c, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultWatchErrorHandler: f.WatchErrorHandler})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = c.Start(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		if !c.WaitForCacheSync(t.Context()) { // started, with no informer yet
			t.Fatal("the cache did not start")
		}
		return f, c
	}
	// read lists the freezes of c twice: the first read starts the
	// cache's informer, the second finds it synced or failing.
	read := func(t *testing.T, f *hostingwatch.Failures, c cache.Cache) (installed [2]bool, lists [2]int, errs [2]error) {
		bounded, stop := context.WithTimeout(t.Context(), waitFor)
		defer stop()
		for i := range 2 {
			var list hostingv1alpha1.RolloutFreezeList
			installed[i], errs[i] = f.List(bounded, c, &hostingv1alpha1.RolloutFreeze{}, &list, time.Hour)
			lists[i] = len(list.Items)
			if bounded.Err() != nil {
				t.Fatalf("read %d waited out the test's bound (%v): %v", i, waitFor, errs[i])
			}
		}
		return installed, lists, errs
	}

	t.Run("a missing kind is asked for once a recheck", func(t *testing.T) {
		var discovery atomic.Int64
		cfg := rest.CopyConfig(hosting.Config)
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
				if strings.HasPrefix(req.URL.Path, "/api") {
					discovery.Add(1)
				}
				return rt.RoundTrip(req)
			})
		})
		c, err := cache.New(cfg, cache.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		clk := clocktesting.NewFakeClock(time.Now())
		kinds := hostingwatch.RememberMissingKinds(c, clk, time.Minute)
		// Every space's reconciler and watch asks; the hosting cluster is
		// asked once a recheck period, whatever their number.
		ask := func() {
			var wg sync.WaitGroup
			for range 20 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := kinds.GetInformer(t.Context(), &hostingv1alpha1.RolloutFreeze{}, cache.BlockUntilSynced(false)); !meta.IsNoMatchError(err) {
						t.Errorf("GetInformer = %v, want a no-match error", err)
					}
				}()
			}
			wg.Wait()
		}
		ask()
		first := discovery.Load()
		ask()
		if again := discovery.Load() - first; again != 0 {
			t.Errorf("asking again within the recheck period sent %d discovery requests, want none (%d the first time)", again, first)
		}
		if first > 4 {
			t.Errorf("20 asks at once sent %d discovery requests, want those of one", first)
		}
		clk.Step(time.Minute)
		ask()
		if discovery.Load() == first {
			t.Error("asking after the recheck period sent no discovery request")
		}
	})

	t.Run("until the kind is installed", func(t *testing.T) {
		f, c := newCache(t, "")
		installed, _, errs := read(t, f, c)
		for i := range 2 {
			if installed[i] || errs[i] != nil {
				t.Errorf("read %d = %v, %v; want not installed, no error", i, installed[i], errs[i])
			}
		}
		clk := clocktesting.NewFakeClock(time.Now())
		queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		t.Cleanup(queue.ShutDown)
		src := hostingwatch.Source(c, &hostingv1alpha1.RolloutFreeze{}, clk, time.Minute, "RolloutFreezes", "wds1",
			func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) toolscache.ResourceEventHandler {
				return toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
					q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: obj.(client.Object).GetName()}})
				}}
			})
		if err := src.Start(t.Context(), queue); err != nil {
			t.Fatalf("starting the Source without the kind: %v", err)
		}
		if _, err := envtest.InstallCRDs(hosting.Config, envtest.CRDInstallOptions{Paths: []string{hostingCRDs}, ErrorIfPathMissing: true}); err != nil {
			t.Fatal(err)
		}
		fz := &hostingv1alpha1.RolloutFreeze{ObjectMeta: metav1.ObjectMeta{Name: "holidays"}, Spec: hostingv1alpha1.RolloutFreezeSpec{
			Ranges: []hostingv1alpha1.FreezeRange{{Start: metav1.Now(), End: metav1.NewTime(time.Now().Add(time.Hour))}}}}
		if err := hosting.Client.Create(t.Context(), fz); err != nil {
			t.Fatal(err)
		}
		environment.Eventually(t, waitFor, "the Source to see the freeze once the kind exists", func() error {
			clk.Step(time.Minute) // it looks for the kind again every minute
			if queue.Len() == 0 {
				return errors.New("nothing queued")
			}
			if req, _ := queue.Get(); req.Name != fz.Name {
				return errors.New("queued " + req.Name)
			}
			return nil
		})
		environment.Eventually(t, waitFor, "a read to find the freeze", func() error {
			var list hostingv1alpha1.RolloutFreezeList
			if installed, err := f.List(t.Context(), c, &hostingv1alpha1.RolloutFreeze{}, &list, 0); !installed || err != nil || len(list.Items) != 1 {
				return fmt.Errorf("read = %v, %d freezes, %w; want the one freeze", installed, len(list.Items), err)
			}
			return nil
		})
	})

	t.Run("a synced cache", func(t *testing.T) {
		f, c := newCache(t, "")
		installed, lists, errs := read(t, f, c)
		for i := range 2 {
			if !installed[i] || errs[i] != nil || lists[i] != 1 {
				t.Errorf("read %d = %v, %d freezes, %v; want the one freeze", i, installed[i], lists[i], errs[i])
			}
		}
	})

	t.Run("a list refused", func(t *testing.T) {
		f, c := newCache(t, "no-freezes")
		installed, _, errs := read(t, f, c)
		for i := range 2 {
			if !installed[i] || !apierrors.IsForbidden(errs[i]) {
				t.Errorf("read %d = %v, %v; want the list's Forbidden error at once", i, installed[i], errs[i])
			}
		}
	})
}

// roundTripperFunc is a function as an http.RoundTripper.
type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
