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

// Package plugin tests `kubectl stager` (cmd/kubectl-stager) against a real
// API server: a WDS with the stager's and KubeStellar's CRDs, where the
// KubeStellar simulator resolves BindingPolicies into Bindings and
// CombinedStatuses. The tests write the policies and their status as the
// stager would, at times they choose, so that the outputs are stable and
// compared with golden files (go test ./test/plugin/ -update rewrites them).
package plugin

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubestellar/workload-stager/cmd/kubectl-stager/app"
	stagerapp "github.com/kubestellar/workload-stager/cmd/stager/app"
	"github.com/kubestellar/workload-stager/test/framework"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/kubestellar"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/ with the outputs")

// namespace holds the workload objects.
const namespace = "web"

// clusters are the simulated WECs.
var clusters = kubestellar.EnvClusters("dev1", "dev2", "test1", "prod1")

// suite is the environment shared by the tests of this package.
var suite struct {
	ctx          context.Context
	wds          *environment.Space
	availability *kubestellar.Availability
	sim          *kubestellar.Simulator
	kubeconfig   string // the WDS's kubeconfig file, for --kubeconfig
	logger       logr.Logger
}

func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, "plugin", setUp))
}

func setUp(s *framework.Suite) error {
	suite.ctx, suite.logger = s.Ctx, s.Logger
	scheme, err := stagerapp.NewScheme()
	if err != nil {
		return err
	}
	hostingCRDs, err := environment.HostingCRDDir()
	if err != nil {
		return err
	}
	// The WDS is the stager's hosting cluster too, holding MetricProviders.
	if suite.wds, err = environment.StartSpace("wds", environment.WithStagerCRDs(), environment.WithKubeStellarCRDs(),
		environment.WithCRDDirs(hostingCRDs), environment.WithScheme(scheme)); err != nil {
		return err
	}
	s.Defer(suite.wds.Stop)
	suite.kubeconfig = filepath.Join(s.WorkDir, "kubeconfig")
	if err := os.WriteFile(suite.kubeconfig, suite.wds.Kubeconfig(), 0o600); err != nil {
		return err
	}
	if err := suite.wds.Client.Create(s.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return err
	}
	suite.availability = kubestellar.NewAvailability(policytest.Collector, "configmaps")
	suite.sim = kubestellar.New(suite.wds.Client, clusters, kubestellar.WithReporter(suite.availability.Report))
	ctx, cancel := context.WithCancel(s.Ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = suite.sim.Run(ctx) }()
	s.Defer(func() error { cancel(); <-done; return nil })
	return nil
}

// run runs `kubectl stager` with args against the suite's WDS (as kubeconfig
// when given, else as the space's admin) with the clock at now, and returns
// what it printed and its error.
func run(t *testing.T, now time.Time, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	if kubeconfig == "" {
		kubeconfig = suite.kubeconfig
	}
	var out bytes.Buffer
	cmd := app.New(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, func() time.Time { return now })
	cmd.SetArgs(append([]string{"--kubeconfig=" + kubeconfig}, args...))
	err := cmd.ExecuteContext(suite.ctx)
	return out.String(), err
}

// golden compares got with testdata/<name>.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("output of %s differs from %s:\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}
