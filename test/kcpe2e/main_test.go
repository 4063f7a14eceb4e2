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

	"github.com/kubestellar/workload-stager/cmd/stager/app"
	"github.com/kubestellar/workload-stager/test/framework"
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
	// secretNamespace holds the kubeconfig Secrets in the hosting space.
	secretNamespace = "kubestellar-stager"
	// stagerUser is the stager's identity in the kubeconfig WDS.
	stagerUser = "kubestellar-stager"
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
	os.Exit(framework.Main(m, "kcpe2e", setUp))
}

// setUp starts kcp with wds1 and wds2 as workspaces, a hosting space and
// wds0 as a plain WDS, and the stager binary serving all three.
func setUp(s *framework.Suite) error {
	ctx := s.Ctx
	suite.ctx, suite.workDir = s.Ctx, s.WorkDir
	suite.wdss = map[string]*wds{}
	var err error

	binary, err := stack.StagerBinary(suite.workDir)
	if err != nil {
		return err
	}
	scheme, err := app.NewScheme()
	if err != nil {
		return err
	}
	suite.kcp, err = kcpstack.Start(ctx, kcpstack.Options{WorkDir: suite.workDir, Scheme: scheme, Clusters: clusters})
	if err != nil {
		return err
	}
	s.Defer(suite.kcp.Stop)
	for _, name := range []string{"wds1", "wds2"} {
		if _, err := addWorkspace(ctx, name); err != nil {
			return err
		}
	}

	// The hosting space holds the kubeconfig Secret of wds0, a plain WDS.
	if suite.hosting, err = environment.StartSpace("hosting", environment.WithScheme(scheme)); err != nil {
		return err
	}
	s.Defer(suite.hosting.Stop)
	wds0, err := environment.StartSpace("wds0", environment.WithKubeStellarCRDs(), environment.WithStagerCRDs(), environment.WithScheme(scheme))
	if err != nil {
		return err
	}
	s.Defer(wds0.Stop)
	if err := registerWDS0(ctx, wds0); err != nil {
		return err
	}

	if err := suite.hosting.GrantMetricsReader(ctx, stack.MetricsReaderNamespace, stack.MetricsReaderName); err != nil {
		return err
	}
	if suite.metricsToken, err = suite.hosting.ServiceAccountToken(ctx, stack.MetricsReaderNamespace, stack.MetricsReaderName); err != nil {
		return err
	}
	hostingKubeconfig := filepath.Join(suite.workDir, "hosting.kubeconfig")
	if err := os.WriteFile(hostingKubeconfig, suite.hosting.Kubeconfig(), 0o600); err != nil {
		return err
	}
	kcpKubeconfig, err := suite.kcp.WriteStagerKubeconfig(suite.workDir)
	if err != nil {
		return err
	}
	args := func() ([]string, error) { return stagerArgs(hostingKubeconfig, kcpKubeconfig) }
	if suite.stager, err = stack.StartStager(s.Ctx, binary, args, filepath.Join(suite.workDir, "stager.log")); err != nil {
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

// registerWDS0 gives the stager an identity bound to its role in wds0,
// registers its kubeconfig Secret in the hosting space, and starts the
// simulator in wds0.
func registerWDS0(ctx context.Context, wds0 *environment.Space) error {
	if err := wds0.RegisterWithStager(ctx, suite.hosting.Client, secretNamespace, stagerUser); err != nil {
		return err
	}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		stack.NewDeploymentsAggregator(collector),
	} {
		if err := wds0.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T in wds0: %w", obj, err)
		}
	}
	w := &wds{space: "kubeconfig#wds0", client: wds0.Client, availability: kubestellar.NewAvailability(collector)}
	w.sim = kubestellar.New(wds0.Client, clusters, kubestellar.WithReporter(w.availability.Report))
	go func() { _ = w.sim.Run(ctx) }()
	suite.mu.Lock()
	suite.wdss["wds0"] = w
	suite.mu.Unlock()
	return nil
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
		"--kubeconfig-namespace=" + secretNamespace,
		"--kcp-kubeconfig=" + kcpKubeconfig,
		"--metrics-bind-address=" + metrics,
		"--health-probe-bind-address=" + probes,
		"--space-probe-interval=2s",
		fmt.Sprintf("--space-cache-max-bytes=%d", cacheBound),
		"--zap-devel",
	}, nil
}
