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

// Package dashboardbrowser tests `kubectl stager dashboard` in a real
// headless Chromium (test/framework/browser): the dashboard runs in-process,
// as the plugin wires it, against a real kube-apiserver serving a WDS in
// which the KubeStellar simulator plays KubeStellar's part and a stager runs
// in-process; the tests click through the page as a user would. With
// -update-screenshots, TestScreenshots rewrites docs/screenshots/. See
// docs/testing.md#browser-tests for why this stack and not test/e2e's.
package dashboardbrowser

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/cmd/stager/app"
	"github.com/kubestellar/workload-stager/test/framework"
	"github.com/kubestellar/workload-stager/test/framework/browser"
	"github.com/kubestellar/workload-stager/test/framework/dashboardrun"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/kubestellar"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

const (
	// workloadNamespace holds the workload objects.
	workloadNamespace = "apps"
	// collector is the StatusCollector named in the downsync clauses.
	collector = policytest.Collector
	// timeout bounds every wait on the API server.
	timeout = 60 * time.Second
)

// suite is the environment the package's tests share.
var suite struct {
	ctx          context.Context
	wds          *environment.Space
	sim          *kubestellar.Simulator
	availability *kubestellar.Availability
}

// chromium is the headless Chromium the package's tests share.
var chromium = browser.Shared{Options: browser.Options{Width: 1280, Height: 900}}

func TestMain(m *testing.M) {
	code := framework.Main(m, "dashboardbrowser", setUp)
	chromium.Close()
	os.Exit(code)
}

// setUp starts one WDS (a kube-apiserver with the stager's and KubeStellar's
// CRDs and the shipped approvals), the KubeStellar simulator over five WECs
// dev1 dev2 test1 prod1 prod2, and a stager whose only space is that WDS.
func setUp(s *framework.Suite) error {
	suite.ctx = s.Ctx
	scheme, err := app.NewScheme()
	if err != nil {
		return err
	}
	wds, err := environment.StartSpace("wds1", environment.WithStagerCRDs(), environment.WithKubeStellarCRDs(), environment.WithScheme(scheme))
	if err != nil {
		return err
	}
	s.Defer(wds.Stop)
	suite.wds = wds
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workloadNamespace}}
	if err := wds.Client.Create(s.Ctx, ns); err != nil {
		return fmt.Errorf("creating namespace %s: %w", workloadNamespace, err)
	}
	if err := wds.InstallApprovals(s.Ctx); err != nil {
		return err
	}

	// ConfigMaps never become available: the stages' filter leaves them out.
	suite.availability = kubestellar.NewAvailability(collector, "configmaps")
	suite.sim = kubestellar.New(wds.Client, kubestellar.EnvClusters("dev1", "dev2", "test1", "prod1", "prod2"),
		kubestellar.WithReporter(suite.availability.Report))
	simCtx, stopSim := context.WithCancel(s.Ctx)
	simDone := make(chan struct{})
	go func() { defer close(simDone); _ = suite.sim.Run(simCtx) }()
	s.Defer(func() error { stopSim(); <-simDone; return nil })

	opts := app.NewOptions()
	opts.Providers.Kind = "single"
	opts.LeaderElectionNamespace = metav1.NamespaceDefault
	opts.MetricsBindAddress = "0"
	opts.HealthProbeBindAddress = "0"
	opts.SpaceProbeInterval = time.Second
	stagerCtx, stopStager := context.WithCancel(s.Ctx)
	stager, err := app.New(stagerCtx, wds.Config, opts, s.Logger)
	if err != nil {
		stopStager()
		return err
	}
	stagerDone := make(chan error, 1)
	go func() { stagerDone <- stager.Start(stagerCtx) }()
	s.Defer(func() error { stopStager(); return <-stagerDone })
	return nil
}

// newPolicy returns a dev -> test -> prod policy of the workload app: dev
// and test move on once the simulator reports the Deployment available
// (openGate), prod at once.
func newPolicy(name string) *v1alpha1.StagedBindingPolicy {
	return policytest.Policy(name, map[string]string{policytest.AppLabel: name},
		policytest.Stage("dev", policytest.Deployments, policytest.Available),
		policytest.Stage("test", policytest.Deployments, policytest.Available),
		policytest.Stage("prod", "", ""))
}

// startRollout creates the workload app (a Deployment and a ConfigMap) and
// the policy, deleted when the test ends.
func startRollout(t *testing.T, policy *v1alpha1.StagedBindingPolicy) {
	t.Helper()
	name := policy.Name
	for _, obj := range []client.Object{policytest.Deployment(workloadNamespace, name), policytest.ConfigMap(workloadNamespace, name), policy} {
		if err := suite.wds.Client.Create(suite.ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	t.Cleanup(func() { policies().Delete(t, name) })
}

// policies returns the policy helpers of the WDS.
func policies() policytest.Space {
	return policytest.Space{Name: suite.wds.Name, Client: suite.wds.Client, Ctx: suite.ctx, Timeout: timeout}
}

// openGate makes the WECs of a policy's stage report the workload available.
func openGate(policy, stage string) {
	suite.availability.SetAvailable(v1alpha1.StagePlacement(policy, stage).String(), true)
	suite.sim.Resync()
}

// runDashboard runs `kubectl stager dashboard` with the kubeconfig until the
// test ends, and returns the URL it serves at.
func runDashboard(t *testing.T, kubeconfig []byte) *url.URL {
	t.Helper()
	return dashboardrun.Run(suite.ctx, t, timeout, kubeconfig)
}
