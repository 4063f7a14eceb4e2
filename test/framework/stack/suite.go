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

package stack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/cmd/stager/app"
	"github.com/kubestellar/workload-stager/test/framework"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// Suite is the shared set-up of a test package that runs the stager binary
// (test/e2e, test/realdataplane, test/install, test/chaos, test/waves, test/kcpe2e):
// the framework's Suite with the stager binary and the stager's scheme
// ready. Its methods start what the package runs, each stopped with the
// package; kcpstack.StartSuite starts a kcp.
type Suite struct {
	*framework.Suite
	// Binary is the stager binary: $STAGER_BINARY, or cmd/stager built in
	// the work directory (StagerBinary).
	Binary string
	// Scheme holds the stager's types and KubeStellar's; the suite's spaces'
	// clients use it.
	Scheme *runtime.Scheme
}

// Main is framework.Main for a test package that runs the stager binary:
// setUp gets the Suite with the binary found or built and the scheme made.
// A TestMain is one line:
//
//	func TestMain(m *testing.M) { os.Exit(stack.Main(m, "e2e", setUp)) }
func Main(m *testing.M, name string, setUp func(*Suite) error) int {
	return framework.Main(m, name, func(fs *framework.Suite) error {
		binary, err := StagerBinary(fs.WorkDir)
		if err != nil {
			return err
		}
		scheme, err := app.NewScheme()
		if err != nil {
			return fmt.Errorf("making the stager's scheme: %w", err)
		}
		return setUp(&Suite{Suite: fs, Binary: binary, Scheme: scheme})
	})
}

// StartStack starts the stack o describes, its WDSes with the suite's
// scheme after o.WDSOptions, its logs in the work directory and its
// progress in the suite's log unless o says otherwise, stopped with the
// suite.
func (s *Suite) StartStack(o Options) (*Stack, error) {
	o.WDSOptions = append(o.WDSOptions, environment.WithScheme(s.Scheme))
	if o.WorkDir == "" {
		o.WorkDir = s.WorkDir
	}
	if o.Logger.GetSink() == nil {
		o.Logger = s.Logger
	}
	st, err := Start(s.Ctx, o)
	if err != nil {
		return nil, err
	}
	s.Defer(st.Stop)
	return st, nil
}

// StartHosting starts a hosting space of the suite's own, outside any
// stack, with the suite's scheme and the hosting cluster's CRDs
// (config/crd/hosting: MetricProvider, RolloutWave), as the stager chart
// installs them and a stack's hosting space has them, and writes its
// kubeconfig into the work directory as hosting.kubeconfig; it returns the
// space and that file, the stager's --kubeconfig. test/kcpe2e runs no
// stack; test/chaos stops its hosting space's API server, which a stack's
// controller-managers need; test/waves creates RolloutWaves in it.
func (s *Suite) StartHosting() (*environment.Space, string, error) {
	hostingCRDs, err := environment.HostingCRDDir()
	if err != nil {
		return nil, "", err
	}
	hosting, err := environment.StartSpace(DefaultHostingName, environment.WithCRDDirs(hostingCRDs), environment.WithScheme(s.Scheme))
	if err != nil {
		return nil, "", err
	}
	s.Defer(hosting.Stop)
	path, err := writeHostingKubeconfig(s.WorkDir, hosting)
	if err != nil {
		return nil, "", err
	}
	return hosting, path, nil
}

// writeHostingKubeconfig writes hosting's kubeconfig into dir as
// hosting.kubeconfig, the stager's --kubeconfig, and returns its path.
func writeHostingKubeconfig(dir string, hosting *environment.Space) (string, error) {
	path := filepath.Join(dir, DefaultHostingName+".kubeconfig")
	if err := os.WriteFile(path, hosting.Kubeconfig(), 0o600); err != nil {
		return "", fmt.Errorf("writing the hosting kubeconfig: %w", err)
	}
	return path, nil
}

// StartWDS starts a WDS outside any stack: a space with KubeStellar's and
// the stager's CRDs and the suite's scheme, and no KubeStellar (the suite
// runs the simulator of test/framework/kubestellar in it). It serves the
// WDS to the stager of hosting with objs (ServeSpace).
func (s *Suite) StartWDS(hosting *environment.Space, name string, objs ...client.Object) (*environment.Space, error) {
	wds, err := environment.StartSpace(name, environment.WithStagerCRDs(), environment.WithKubeStellarCRDs(),
		environment.WithScheme(s.Scheme))
	if err != nil {
		return nil, err
	}
	s.Defer(wds.Stop)
	if err := ServeSpace(s.Ctx, hosting, wds, objs...); err != nil {
		return nil, err
	}
	return wds, nil
}

// ServeSpace registers a WDS with the stager whose hosting space is
// hosting (Space.RegisterWithStager as StagerUser, in
// StagerSecretNamespace) and creates objs in it: its workload namespace,
// its StatusCollector.
func ServeSpace(ctx context.Context, hosting, wds *environment.Space, objs ...client.Object) error {
	if err := wds.RegisterWithStager(ctx, hosting.Client, StagerSecretNamespace, StagerUser); err != nil {
		return err
	}
	for _, obj := range objs {
		if err := wds.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s in %s: %w", obj, obj.GetName(), wds.Name, err)
		}
	}
	return nil
}

// ServeWDS serves a WDS of the stack to the stager (ServeSpace) with the
// DeploymentsAggregator StatusCollector named collector, which the suites'
// policies name.
func (s *Stack) ServeWDS(ctx context.Context, wds, collector string) error {
	s.mu.Lock()
	space, ok := s.WDS[wds]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("no WDS %q in the stack", wds)
	}
	return ServeSpace(ctx, s.Hosting, space, NewDeploymentsAggregator(collector))
}
