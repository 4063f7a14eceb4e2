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

// Package integration tests the stager against real kube-apiservers: a
// hosting cluster holding the kubeconfig Secrets of the spaces, and several
// WDS spaces in which a simulator plays KubeStellar v0.30.0's part. The stager
// runs in-process, exactly as cmd/stager wires it, and reaches every space
// through a restricted identity bound to the generated RBAC.
//
// One environment is shared by the whole package (TestMain); every test uses
// its own policy names, so tests do not see each other's objects.
package integration

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/cmd/stager/app"
	"github.com/kubestellar/workload-stager/test/framework"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/kubestellar"
)

const (
	// secretNamespace holds the spaces' kubeconfig Secrets in the hosting cluster.
	secretNamespace = "kubestellar-stager"
	// stagerUser is the identity the stager uses in every space.
	stagerUser = "kubestellar-stager"
	// workloadNamespace holds the workload objects in every space.
	workloadNamespace = "apps"
	// collector is the StatusCollector named in the downsync clauses.
	collector = "deployments-aggregator"
)

// clusters is the simulated inventory of WECs of every space.
var clusters = kubestellar.EnvClusters("dev1", "dev2", "test1", "prod1", "prod2")

// deletionWarningAfter is the suite's stager's threshold for reporting a
// deletion held by finalizers as blocked (5 minutes by default).
const deletionWarningAfter = 2 * time.Second

// suite is the environment shared by the tests of this package.
var suite struct {
	ctx     context.Context
	hosting *environment.Space
	wds1    *space
	wds2    *space
	stager  *runningStager
	// logger writes the log of every stager of the suite to the suite's work directory.
	logger logr.Logger
}

// space is a WDS with its simulator and the availability its simulated WECs report.
type space struct {
	*environment.Space
	sim          *kubestellar.Simulator
	availability *kubestellar.Availability
	cancel       context.CancelFunc
}

func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, "integration", setUp))
}

// setUp starts the hosting space, wds1 and wds2 with their simulators,
// registers both WDSes and starts a stager serving them.
func setUp(s *framework.Suite) error {
	suite.ctx, suite.logger = s.Ctx, s.Logger
	// The hosting cluster has the stager's hosting CRDs (MetricProvider,
	// RolloutWave), as the stager chart installs them.
	hostingCRDs, err := environment.HostingCRDDir()
	if err != nil {
		return err
	}
	hostingScheme, err := app.NewScheme()
	if err != nil {
		return err
	}
	if suite.hosting, err = environment.StartSpace("hosting", environment.WithCRDDirs(hostingCRDs), environment.WithScheme(hostingScheme)); err != nil {
		return err
	}
	s.Defer(suite.hosting.Stop)
	if suite.wds1, err = startSpace(s.Ctx, "wds1", true); err != nil {
		return err
	}
	s.Defer(suite.wds1.stop)
	if suite.wds2, err = startSpace(s.Ctx, "wds2", true); err != nil {
		return err
	}
	s.Defer(suite.wds2.stop)
	for _, sp := range []*space{suite.wds1, suite.wds2} {
		if err := register(s.Ctx, sp); err != nil {
			return err
		}
	}
	if suite.stager, err = startStager(s.Ctx, suite.hosting, suite.logger); err != nil {
		return err
	}
	s.Defer(func() error { suite.stager.stop(); return nil }) // the restart test replaces suite.stager
	return nil
}

// startSpace starts a WDS with the stager's and (when kubeStellar is true)
// KubeStellar's CRDs, the stager's restricted identity, the workload
// namespace and a simulator.
func startSpace(ctx context.Context, name string, kubeStellar bool) (*space, error) {
	scheme, err := app.NewScheme()
	if err != nil {
		return nil, err
	}
	opts := []environment.SpaceOption{environment.WithStagerCRDs(), environment.WithScheme(scheme)}
	if kubeStellar {
		opts = append(opts, environment.WithKubeStellarCRDs())
	}
	env, err := environment.StartSpace(name, opts...)
	if err != nil {
		return nil, err
	}
	// ConfigMaps never become available: the stages' filter must leave them out.
	s := &space{Space: env, availability: kubestellar.NewAvailability(collector, "configmaps")}
	if err := env.GrantStagerRole(ctx, stagerUser); err != nil {
		_ = env.Stop()
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workloadNamespace}}
	if err := env.Client.Create(ctx, ns); err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("creating namespace %s in %s: %w", workloadNamespace, name, err)
	}
	if !kubeStellar {
		return s, nil
	}
	simCtx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	s.sim = kubestellar.New(env.Client, clusters, kubestellar.WithReporter(s.availability.Report))
	go func() { _ = s.sim.Run(simCtx) }()
	return s, nil
}

// newSpace starts a space for one test (see startSpace), stopped when the
// test ends.
func newSpace(t *testing.T, name string, kubeStellar bool) *space {
	t.Helper()
	s, err := startSpace(suite.ctx, name, kubeStellar)
	if err != nil {
		t.Fatalf("starting space %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("stopping space %s: %v", name, err)
		}
	})
	return s
}

// stop stops the space's simulator and its API server.
func (s *space) stop() error {
	if s.cancel != nil {
		s.cancel()
	}
	return s.Stop()
}

// register creates the kubeconfig Secret of a space, for the stager's
// restricted identity, in the hosting cluster.
func register(ctx context.Context, s *space) error {
	kubeconfig, err := s.AddUser(stagerUser)
	if err != nil {
		return err
	}
	return environment.RegisterKubeconfigSecret(ctx, suite.hosting.Client, secretNamespace, s.Name, "", kubeconfig)
}

// reconcileTimeout bounds every reconcile of the suite's stagers, short enough
// for a test to see a hung API server let go of a worker.
const reconcileTimeout = 3 * time.Second

// runningStager is a stager running in this process.
type runningStager struct {
	*app.Stager
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// startStager starts a stager serving the spaces registered in hosting.
func startStager(ctx context.Context, hosting *environment.Space, logger logr.Logger) (*runningStager, error) {
	opts := app.NewOptions()
	opts.Providers.Kubeconfig.Namespace = secretNamespace
	opts.MetricsBindAddress = "0"
	opts.HealthProbeBindAddress = "0"
	opts.SpaceProbeInterval = time.Second
	opts.ReconcileTimeout = reconcileTimeout
	opts.AllowSeveralInProcess = true
	opts.DeletionWarningAfter = deletionWarningAfter
	return startStagerWith(ctx, hosting, opts, logger)
}

// singleOptions are the options of a stager whose only space is its own cluster.
func singleOptions() *app.Options {
	opts := app.NewOptions()
	opts.Providers.Kind = "single"
	opts.LeaderElectionNamespace = metav1.NamespaceDefault
	opts.MetricsBindAddress = "0"
	opts.HealthProbeBindAddress = "0"
	opts.SpaceProbeInterval = time.Second
	opts.AllowSeveralInProcess = true
	return opts
}

func startStagerWith(ctx context.Context, hosting *environment.Space, opts *app.Options, logger logr.Logger) (*runningStager, error) {
	ctx, cancel := context.WithCancel(ctx)
	stager, err := app.New(ctx, hosting.Config, opts, logger)
	if err != nil {
		cancel()
		return nil, err
	}
	r := &runningStager{Stager: stager, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- stager.Start(ctx) }()
	return r, nil
}

// stop stops the stager and waits until it has stopped.
func (r *runningStager) stop() {
	r.once.Do(func() {
		r.cancel()
		if err := <-r.done; err != nil {
			suite.logger.Error(err, "The stager stopped with an error")
		}
	})
}

// openGate makes the WECs of a policy's stage report the workload available.
func (s *space) openGate(policy, stage string) {
	s.availability.SetAvailable(v1alpha1.StagePlacement(policy, stage).String(), true)
	s.sim.Resync()
}
