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
	"fmt"
	"testing"
	"time"

	"github.com/kubestellar/workload-stager/internal/controller/spaces"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// startProxiedSpace starts a WDS with KubeStellar that the stager reaches
// only through a FaultProxy, and registers it.
func startProxiedSpace(t *testing.T, name string) (*space, *environment.FaultProxy) {
	t.Helper()
	s := newSpace(t, name, true)
	user, err := s.AddUser(stagerUser)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := s.StartFaultProxy(user)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	kubeconfig, err := proxy.Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	if err := environment.RegisterKubeconfigSecret(suite.ctx, suite.hosting.Client, secretNamespace, name, "", kubeconfig); err != nil {
		t.Fatalf("registering %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = environment.UnregisterKubeconfigSecret(suite.ctx, suite.hosting.Client, secretNamespace, name)
	})
	waitForSpace(t, suite.stager, name, true, spaces.ReasonReady)
	return s, proxy
}

// setFault changes the proxy's fault.
func setFault(t *testing.T, proxy *environment.FaultProxy, fault environment.Fault) {
	t.Helper()
	if err := proxy.Set(fault); err != nil {
		t.Fatal(err)
	}
}

// TestHungAPIServerReleasesWorkers makes a space's API server take writes and
// never answer, just as a stage's condition comes true: the status write
// hangs, but only for the reconcile timeout, after which the worker is free
// and the failure counted. Once the API server answers, the rollout goes on.
func TestHungAPIServerReleasesWorkers(t *testing.T) {
	const name = "hung"
	s, proxy := startProxiedSpace(t, "hung")
	createWorkload(t, s, name)
	create(t, s, newPolicy(name, name))
	policies(s).WaitForActiveStage(t, name, "dev")

	errorsBefore, _ := metricValue(t, "stager_reconcile_errors_total", map[string]string{"space": s.Name})
	setFault(t, proxy, environment.HangWrites)
	s.openGate(name, "dev")
	// Each reconcile that writes now hangs for reconcileTimeout, then fails.
	environment.Eventually(t, 6*reconcileTimeout, "hung writes to time out and count as reconcile errors", func() error {
		if v, _ := metricValue(t, "stager_reconcile_errors_total", map[string]string{"space": s.Name}); v < errorsBefore+2 {
			return fmt.Errorf("stager_reconcile_errors_total{space=%s} = %v, was %v", s.Name, v, errorsBefore)
		}
		return nil
	})
	if p := policies(s).Get(t, name); p.Status.ActiveStage != "dev" {
		t.Fatalf("the policy moved to %q while its API server hung", p.Status.ActiveStage)
	}

	setFault(t, proxy, environment.Pass)
	policies(s).WaitForActiveStage(t, name, "test")
	policies(s).Delete(t, name)
}

// TestSpaceResumesAfterOutage cuts a space's API server off for a while in the
// middle of a rollout; the stage's condition comes true meanwhile. Once the
// API server is back and the space is reported ready again, the rollout moves
// on within a few seconds (the caches are not left stale until client-go's
// watch backoff ends).
func TestSpaceResumesAfterOutage(t *testing.T) {
	const name = "outage"
	// Up to 30 s of client-go's watch backoff, with jitter, is what a stale
	// cache costs; a fresh start costs a list and a reconcile.
	const resumeWithin = 10 * time.Second
	s, proxy := startProxiedSpace(t, "outage")
	createWorkload(t, s, name)
	create(t, s, newPolicy(name, name))
	policies(s).WaitForActiveStage(t, name, "dev")

	setFault(t, proxy, environment.Down)
	waitForSpace(t, suite.stager, s.Name, false, spaces.ReasonUnreachable)
	s.openGate(name, "dev")
	// A long enough outage for every retry to back off a while.
	time.Sleep(15 * time.Second)

	setFault(t, proxy, environment.Pass)
	waitForSpace(t, suite.stager, s.Name, true, spaces.ReasonReady)
	back := time.Now()
	environment.Eventually(t, resumeWithin, fmt.Sprintf("the rollout to move on within %s of the space being ready again", resumeWithin), func() error {
		if p := policies(s).Get(t, name); p.Status.ActiveStage != "test" {
			return fmt.Errorf("active stage %q", p.Status.ActiveStage)
		}
		return nil
	})
	t.Logf("the rollout moved on %s after the space was ready again", time.Since(back).Round(time.Millisecond))
	policies(s).Delete(t, name)
}
