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

// Package kcpe2e tests the stager with kcp workspaces as spaces: a real kcp
// v0.28.0 (test/framework/kcp) serves KubeStellar's control API and the stager's from
// a provider workspace, through the generated objects of config/kcp; WDS
// workspaces bind both exports and accept the claims; the KubeStellar
// simulator (test/framework/kubestellar) plays KubeStellar's part inside each
// workspace; and the stager binary serves the kcp workspaces, as the
// generated minimal RBAC's user (a static token kcp reads from a file, as
// config/kcp/README.md advises over the ServiceAccount), together with a WDS registered by kubeconfig Secret (--provider=kubeconfig,kcp).
//
// One kcp, one hosting apiserver, one kubeconfig WDS and one stager process
// are shared by the package (TestMain).
package kcpe2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/kcpstack"
	"github.com/kubestellar/workload-stager/test/framework/kubestellar"
	"github.com/kubestellar/workload-stager/test/framework/process"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

const (
	// namespace holds the workload objects.
	namespace = kcpstack.Namespace
	// collector is the StatusCollector the conditions read.
	collector = kcpstack.Collector
	// timeout bounds every wait.
	timeout = 2 * time.Minute
)

// clusters are the simulated WECs of every WDS.
var clusters = kubestellar.EnvClusters("dev1", "dev2", "prod1")

// wds is one WDS of the suite: a kcp workspace or a kubeconfig space.
type wds struct {
	// space is the stager's name for it ("kcp#root:wds1", "kubeconfig#wds0").
	space        string
	client       client.Client
	availability *kubestellar.Availability
	sim          *kubestellar.Simulator
	// workspace is the kcp workspace, if it is one.
	workspace *kcpstack.Workspace
}

var suite struct {
	ctx     context.Context
	workDir string
	kcp     *kcpstack.Stack
	hosting *environment.Space
	stager  *process.Process
	// metricsToken is a token of a ServiceAccount of the hosting space bound
	// to the metrics-reader ClusterRole, to scrape the stager's metrics.
	metricsToken string

	mu   sync.Mutex
	wdss map[string]*wds
}

func TestMain(m *testing.M) {
	os.Exit(stack.Main(m, "kcpe2e", setUp))
}

// setUp starts kcp with wds1 and wds2 as workspaces, a hosting space and
// wds0 as a plain WDS, and the stager binary serving all three.
func setUp(s *stack.Suite) error {
	ctx := s.Ctx
	suite.ctx, suite.workDir = s.Ctx, s.WorkDir
	suite.wdss = map[string]*wds{}
	var err error
	if suite.kcp, err = kcpstack.StartSuite(s, kcpstack.Options{Clusters: clusters}); err != nil {
		return err
	}
	for _, name := range []string{"wds1", "wds2"} {
		if _, err := addWorkspace(ctx, name); err != nil {
			return err
		}
	}

	// The hosting space holds the kubeconfig Secret of wds0, a plain WDS.
	var hostingKubeconfig string
	if suite.hosting, hostingKubeconfig, err = s.StartHosting(); err != nil {
		return err
	}
	wds0, err := s.StartWDS(suite.hosting, "wds0", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		stack.NewDeploymentsAggregator(collector))
	if err != nil {
		return err
	}
	w := &wds{space: "kubeconfig#wds0", client: wds0.Client, availability: kubestellar.NewAvailability(collector)}
	w.sim = kubestellar.New(wds0.Client, clusters, kubestellar.WithReporter(w.availability.Report))
	go func() { _ = w.sim.Run(ctx) }()
	suite.wdss["wds0"] = w

	if suite.metricsToken, err = stack.HostingMetricsReaderToken(ctx, suite.hosting); err != nil {
		return err
	}
	kcpKubeconfig, err := suite.kcp.WriteStagerKubeconfig(suite.workDir)
	if err != nil {
		return err
	}
	args := func() ([]string, error) { return stagerArgs(hostingKubeconfig, kcpKubeconfig) }
	if suite.stager, err = stack.StartStager(s.Ctx, s.Binary, args, filepath.Join(suite.workDir, "stager.log")); err != nil {
		return err
	}
	s.Defer(func() error { return suite.stager.Stop() })
	return nil
}

// addWorkspace adds a bound WDS workspace to the kcp stack and the suite.
func addWorkspace(ctx context.Context, name string) (*wds, error) {
	ws, err := suite.kcp.AddWorkspace(ctx, name)
	if err != nil {
		return nil, err
	}
	w := &wds{space: kcpstack.SpacePrefix + ws.Path, client: ws.Client, availability: ws.Availability, sim: ws.Simulator, workspace: ws}
	suite.mu.Lock()
	suite.wdss[name] = w
	suite.mu.Unlock()
	return w, nil
}

func wdsNamed(name string) *wds {
	suite.mu.Lock()
	defer suite.mu.Unlock()
	return suite.wdss[name]
}

// stagerArgs serve the kubeconfig Secrets of the hosting space and the kcp
// workspaces bound to the stager's export.
func stagerArgs(hostingKubeconfig, kcpKubeconfig string) ([]string, error) {
	addrs, err := process.FreeAddresses(2)
	if err != nil {
		return nil, err
	}
	metrics, probes := addrs[0], addrs[1]
	return []string{
		"--kubeconfig=" + hostingKubeconfig,
		"--provider=kubeconfig,kcp",
		"--kubeconfig-namespace=" + stack.StagerSecretNamespace,
		"--kcp-kubeconfig=" + kcpKubeconfig,
		"--metrics-bind-address=" + metrics,
		"--health-probe-bind-address=" + probes,
		"--space-probe-interval=2s",
		fmt.Sprintf("--space-cache-max-bytes=%d", cacheBound),
		"--zap-devel",
	}, nil
}
