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

// Package waves runs RolloutWaves (issue 56, docs/proposals/waves.md) end
// to end: the stager binary, one process or sharded replicas, serving
// three WDSes (real kube-apiservers, each with the KubeStellar simulator of
// test/framework/kubestellar) through a hosting space that holds the waves.
// Each test orders a policy of its own through a wave of its own, and
// starts and stops its own stager processes; the spaces are shared.
package waves

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	// leaseDuration is the sharded replicas' fence Lease duration.
	leaseDuration = 6 * time.Second
	// simulatorInterval is the KubeStellar simulators' pass interval.
	simulatorInterval = 500 * time.Millisecond
)

// clusters are the simulated WECs of every space: one per stage of the
// suite's policies.
var clusters = kubestellar.EnvClusters("dev1", "prod1")

// space is a WDS of the suite with its KubeStellar simulator, whose WECs
// report a stage's workload available once the test says so.
type space struct {
	*environment.Space
	availability *kubestellar.Availability
	sim          *kubestellar.Simulator
}

// openDev has the WECs of the dev stage of policy at revision report its
// workload available, promptly: the policies' first stage is then done.
func (s *space) openDev(policy, revision string) {
	s.availability.SetAvailable(stagePlacement(policy, "dev", revision), true)
	s.sim.Resync()
}

// suite is the environment shared by the tests of this package.
var suite struct {
	ctx       context.Context
	workDir   string
	binary    string
	hosting   *environment.Space
	hostingKC string // the stager's kubeconfig of the hosting space
	spaces    []*space
}

func TestMain(m *testing.M) {
	os.Exit(stack.Main(m, "waves", setUp))
}

// setUp starts the hosting space (with the RolloutWave kind) and three
// WDSes, wds1 to wds3, side by side, each registered with the stager and
// run by a KubeStellar simulator; no stager runs until a test starts one.
func setUp(s *stack.Suite) error {
	suite.ctx, suite.workDir, suite.binary = s.Ctx, s.WorkDir, s.Binary
	var err error
	if suite.hosting, suite.hostingKC, err = s.StartHosting(); err != nil {
		return err
	}
	suite.spaces = make([]*space, 3)
	errs := make([]error, len(suite.spaces))
	var wg sync.WaitGroup
	for i := range suite.spaces {
		wg.Go(func() { suite.spaces[i], errs[i] = startSpace(s, fmt.Sprintf("wds%d", i+1)) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// startSpace starts a WDS served to the stager, with its workload
// namespace and a KubeStellar simulator, both stopped with the suite.
func startSpace(s *stack.Suite, name string) (*space, error) {
	wds, err := s.StartWDS(suite.hosting, name, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})
	if err != nil {
		return nil, err
	}
	sp := &space{Space: wds, availability: kubestellar.NewAvailability(policytest.Collector)}
	sp.sim = kubestellar.New(wds.Client, clusters, kubestellar.WithReporter(sp.availability.Report),
		kubestellar.WithInterval(simulatorInterval), kubestellar.WithLogger(s.Logger.WithName(name)))
	ctx, cancel := context.WithCancel(s.Ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = sp.sim.Run(ctx) }()
	s.Defer(func() error { cancel(); <-done; return nil })
	return sp, nil
}

// stagerArgs are the arguments every stager process of the suite shares.
func stagerArgs() []string {
	return []string{
		"--kubeconfig=" + suite.hostingKC,
		"--provider=kubeconfig", "--kubeconfig-namespace=" + secretNamespace,
		"--space-probe-interval=1s", "--metrics-bind-address=0",
	}
}

// startStager starts one stager process serving every space, named name in
// its log's file name, and waits until it answers its health probe. The
// test's clean-up stops it (see cleanUpAfter for the order).
func startStager(t *testing.T, name string) *process.Process {
	t.Helper()
	p, err := stack.StartStager(suite.ctx, suite.binary, func() ([]string, error) {
		addr, err := process.FreeAddress()
		if err != nil {
			return nil, err
		}
		return append(stagerArgs(), "--health-probe-bind-address="+addr), nil
	}, filepath.Join(suite.workDir, name+".log"))
	if err != nil {
		t.Fatalf("starting the stager: %v", err)
	}
	return p
}

// startReplica starts the stager binary as replica id of
// --coordination=sharded.
func startReplica(t *testing.T, id string) *process.Process {
	t.Helper()
	args := append(stagerArgs(),
		"--coordination=sharded", "--replica-id="+id, "--leader-election-namespace="+secretNamespace,
		"--shard-lease-duration="+leaseDuration.String(), "--shard-lease-renew=2s", "--shard-probe-interval=1s",
		"--health-probe-bind-address=0")
	p, err := stack.StartProcess(suite.binary, args, filepath.Join(suite.workDir, id+".log"))
	if err != nil {
		t.Fatalf("starting replica %s: %v", id, err)
	}
	return p
}
