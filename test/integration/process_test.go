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
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubestellar/workload-stager/cmd/stager/app"
	"github.com/kubestellar/workload-stager/internal/controller/spaces"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/process"
)

// leaseName is the stager's leader election Lease, in the Secrets' namespace
// when the stager runs outside a pod.
const leaseName = "workload-stager.community.kubestellar.io"

// leaseHolder returns the holder of the stager's Lease.
func leaseHolder(t *testing.T) string {
	t.Helper()
	lease := &coordinationv1.Lease{}
	if err := suite.hosting.Client.Get(suite.ctx, types.NamespacedName{Namespace: secretNamespace, Name: leaseName}, lease); err != nil {
		t.Fatalf("reading the Lease: %v", err)
	}
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// readyz returns the status code of a stager's /readyz, or 0 when it does not answer.
func readyz(addr string) (int, string) {
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get("http://" + addr + "/readyz?verbose")
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestLeaderElectionHandsOver runs a second stager beside the suite's: by
// default only the elected one serves spaces, and a leader that stops releases
// its Lease so that the other takes over at once.
func TestLeaderElectionHandsOver(t *testing.T) {
	waitForSpace(t, suite.stager, "wds1", true, spaces.ReasonReady)
	var leader string
	waitFor(t, "the suite's stager to hold the Lease", func() error {
		if leader = leaseHolder(t); leader == "" {
			return fmt.Errorf("nobody holds it")
		}
		return nil
	})

	standby, err := startStager(suite.ctx, suite.hosting, suite.logger)
	if err != nil {
		t.Fatalf("starting a second stager: %v", err)
	}
	handedOver := false
	t.Cleanup(func() {
		if !handedOver {
			standby.stop()
		}
	})
	environment.Consistently(t, 3*time.Second, "the second stager to stand by", func() error {
		if standby.Spaces.Started() {
			return fmt.Errorf("it serves spaces while %s leads", leader)
		}
		if h := leaseHolder(t); h != leader {
			return fmt.Errorf("the Lease moved to %q", h)
		}
		return nil
	})

	suite.stager.stop()
	if h := leaseHolder(t); h == leader {
		t.Fatalf("the stopped leader %s still holds the Lease: it did not release it", leader)
	}
	suite.stager, handedOver = standby, true
	waitForSpace(t, standby, "wds1", true, spaces.ReasonReady)
	if h := leaseHolder(t); h == leader || h == "" {
		t.Fatalf("the Lease is held by %q after the hand-over", h)
	}
}

// TestReadinessWaitsForHostingCaches starts a stager whose identity in the
// hosting cluster may not read the kubeconfig Secrets: it never becomes
// ready, and says why. A stager that can read them becomes ready.
func TestReadinessWaitsForHostingCaches(t *testing.T) {
	raw, err := suite.hosting.AddUser("powerless")
	if err != nil {
		t.Fatal(err)
	}
	powerless, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	// start starts a stager on hosting and returns the address of its
	// probes. A stager stopped is stopped when the test ends. One that is
	// not is left running until the process ends: controller-runtime
	// v0.24.1's manager, stopped before its caches have synced (here, never:
	// the Secrets are forbidden), spins in runnableGroup.Start forever and
	// never returns (kubernetes-sigs/controller-runtime#3440), which hung
	// this test's cleanup in a CI run.
	start := func(hosting *environment.Space, stopped bool) string {
		t.Helper()
		addr, err := process.FreeAddress()
		if err != nil {
			t.Fatal(err)
		}
		opts := app.NewOptions()
		opts.Providers.Kubeconfig.Namespace = secretNamespace
		opts.MetricsBindAddress = "0"
		opts.HealthProbeBindAddress = addr
		opts.AllowSeveralInProcess = true
		ctx := suite.ctx
		if !stopped {
			ctx = context.WithoutCancel(ctx)
		}
		r, err := startStagerWith(ctx, hosting, opts, suite.logger)
		if err != nil {
			t.Fatalf("starting a stager: %v", err)
		}
		if stopped {
			t.Cleanup(r.stop)
		}
		return addr
	}

	blind := start(&environment.Space{Name: "hosting-as-powerless", Config: powerless}, false)
	waitFor(t, "the blind stager's probes to answer", func() error {
		if code, body := readyz(blind); code == 0 {
			return fmt.Errorf("%s", body)
		}
		return nil
	})
	environment.Consistently(t, 3*time.Second, "the blind stager to stay not ready", func() error {
		if code, body := readyz(blind); code != http.StatusInternalServerError || !strings.Contains(body, "[-]spaces") {
			return fmt.Errorf("/readyz answered %d: %s", code, body)
		}
		return nil
	})

	seeing := start(suite.hosting, true)
	waitFor(t, "the stager that reads the Secrets to be ready", func() error {
		if code, body := readyz(seeing); code != http.StatusOK {
			return fmt.Errorf("/readyz answered %d: %s", code, body)
		}
		return nil
	})
}
