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

// Package chaos runs several replicas of the stager binary with
// --coordination=sharded against real API servers and breaks them while
// rollouts run in every space, checking that every rollout completes, no
// stage is skipped or repeated, and no two replicas ever write one space.
// `make test` runs it sized for CI (STAGER_CHAOS_SPACES, STAGER_CHAOS_KILLS);
// `make chaos` runs the larger fault run.
package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/kubestellar"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
	"github.com/kubestellar/workload-stager/test/framework/process"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

const (
	// secretNamespace holds the spaces' kubeconfig Secrets and the sharding Leases.
	secretNamespace = stack.StagerSecretNamespace
	// namespace holds the workload objects in every space.
	namespace = "web"
	// replicas is how many stager processes share the spaces.
	replicas = 3
	// leaseDuration is the replicas' fence Lease duration (--shard-lease-duration).
	leaseDuration = 6 * time.Second
)

// clusters are the simulated WECs of every space.
var clusters = kubestellar.EnvClusters("dev1", "test1", "prod1")

// space is a WDS of the suite with its KubeStellar.
type space struct {
	*environment.Space
	kubeStellar
}

// kubeStellar is a space's KubeStellar as the suite drives it: the
// test/framework/kubestellar simulator in most spaces, the real
// controller-manager with simulated WECs in wds2. Either can be stopped, as
// an outage, and started again.
type kubeStellar interface {
	// setAvailable says whether the WECs of a BindingPolicy report its
	// workload available, and has them report it promptly.
	setAvailable(bindingPolicy string, available bool)
	// stop stops it; start starts it again.
	stop() error
	start(ctx context.Context) error
}

// simulated is a space's KubeStellar simulator.
type simulated struct {
	client       client.Client
	availability *kubestellar.Availability

	mu      sync.Mutex
	sim     *kubestellar.Simulator
	stopSim func()
}

func (s *simulated) start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sim := kubestellar.New(s.client, clusters, kubestellar.WithReporter(s.availability.Report), kubestellar.WithInterval(500*time.Millisecond))
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = sim.Run(ctx) }()
	s.sim, s.stopSim = sim, func() { cancel(); <-done }
	return nil
}

func (s *simulated) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopSim != nil {
		s.stopSim()
		s.stopSim = nil
	}
	return nil
}

func (s *simulated) setAvailable(bindingPolicy string, available bool) {
	s.availability.SetAvailable(bindingPolicy, available)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopSim != nil {
		s.sim.Resync()
	}
}

// controllerManager is a WDS's real KubeStellar controller-manager in a
// test/framework/stack, with the stack's simulated WECs.
type controllerManager struct {
	stack *stack.Stack
	wds   string
}

func (c controllerManager) start(ctx context.Context) error {
	return c.stack.StartControllerManager(ctx, c.wds)
}

func (c controllerManager) stop() error { return c.stack.StopControllerManager(c.wds) }

func (c controllerManager) setAvailable(bindingPolicy string, available bool) {
	replicas := int32(0)
	if available {
		replicas = 1
	}
	c.stack.WECs.SetAvailable(stack.Match{WDS: c.wds, BindingPolicy: bindingPolicy}, replicas)
}

// realKubeStellar is the space served by the real KubeStellar
// controller-manager rather than the simulator.
const realKubeStellar = "wds2"

// suite is the environment shared by the tests of this package.
var suite struct {
	ctx       context.Context
	workDir   string
	hosting   *environment.Space
	spaces    []*space
	binary    string
	hostingKC string // the replicas' kubeconfig of the hosting space
}

func TestMain(m *testing.M) {
	os.Exit(stack.Main(m, "chaos", setUp))
}

// envInt reads a positive number from the environment, or returns def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// setUp starts the hosting space the replicas coordinate through and
// STAGER_CHAOS_SPACES (at least 2) WDSes registered with them: wds2 in a
// test/framework/stack with the real KubeStellar controller-manager, the
// others with the simulator.
func setUp(s *stack.Suite) error {
	ctx := s.Ctx
	suite.ctx, suite.workDir, suite.binary = ctx, s.WorkDir, s.Binary
	var err error
	if suite.hosting, suite.hostingKC, err = s.StartHosting(); err != nil {
		return err
	}
	// The stack's own hosting space, which its controller-managers read,
	// stays up while the replicas' is cut.
	ks, err := s.StartStack(stack.Options{
		WDSes:      []string{realKubeStellar},
		Clusters:   clusters,
		WorkDir:    filepath.Join(s.WorkDir, "kubestellar"),
		WDSOptions: []environment.SpaceOption{environment.WithStagerCRDs()},
	})
	if err != nil {
		return err
	}
	for i := range max(envInt("STAGER_CHAOS_SPACES", 4), 2) {
		name := fmt.Sprintf("wds%d", i+1)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
		sp := &space{}
		if name == realKubeStellar {
			sp.Space, sp.kubeStellar = ks.WDS[name], controllerManager{stack: ks, wds: name}
			if err := stack.ServeSpace(ctx, suite.hosting, sp.Space, stack.NewDeploymentsAggregator(policytest.Collector), ns); err != nil {
				return err
			}
		} else {
			if sp.Space, err = s.StartWDS(suite.hosting, name, ns); err != nil {
				return err
			}
			sim := &simulated{client: sp.Client, availability: kubestellar.NewAvailability(policytest.Collector)}
			if err := sim.start(ctx); err != nil {
				return err
			}
			s.Defer(sim.stop)
			sp.kubeStellar = sim
		}
		suite.spaces = append(suite.spaces, sp)
	}
	return nil
}

// startReplica starts the stager binary as the named replica, sharded with
// its peers.
func startReplica(id string) (*process.Process, error) {
	args := []string{
		"--kubeconfig=" + suite.hostingKC,
		"--provider=kubeconfig", "--kubeconfig-namespace=" + secretNamespace,
		"--coordination=sharded", "--replica-id=" + id, "--leader-election-namespace=" + secretNamespace,
		"--shard-lease-duration=" + leaseDuration.String(), "--shard-lease-renew=2s", "--shard-probe-interval=1s",
		"--space-probe-interval=1s", "--metrics-bind-address=0", "--health-probe-bind-address=0",
	}
	return stack.StartProcess(suite.binary, args, filepath.Join(suite.workDir, id+".log"))
}
