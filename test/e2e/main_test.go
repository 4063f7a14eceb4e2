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

// Package e2e tests the stager end to end with the real KubeStellar v0.30.0
// controller-manager (one per WDS), a hosting space, an ITS and simulated
// WECs (test/framework/stack), and the stager as its built binary serving every WDS.
//
// One stack and one stager process are shared by the package (TestMain).
package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/kubestellar"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
	"github.com/kubestellar/workload-stager/test/framework/process"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

const (
	// collector is the StatusCollector the seed's condition reads.
	collector = "deployments-aggregator"
	// namespace holds the workload objects.
	namespace = "apps"
	// timeout bounds every wait: KubeStellar takes ~2s to make a Binding
	// and ~5s to turn a WorkStatus into a CombinedStatus.
	timeout = 3 * time.Minute
)

// clusters are the simulated WECs.
var clusters = kubestellar.EnvClusters("dev1", "dev2", "test1", "prod1", "prod2")

var suite struct {
	ctx     context.Context
	stack   *stack.Stack
	binary  string
	stager  *process.Process
	workDir string
}

func TestMain(m *testing.M) {
	os.Exit(stack.Main(m, "e2e", setUp))
}

// setUp starts the stack with wds1, prepares wds1 and starts the stager
// binary serving it.
func setUp(s *stack.Suite) error {
	suite.ctx, suite.workDir, suite.binary = s.Ctx, s.WorkDir, s.Binary
	var err error
	if suite.stack, err = s.StartStack(stack.Options{
		WDSes:      []string{"wds1"},
		Clusters:   clusters,
		WDSOptions: []environment.SpaceOption{environment.WithStagerCRDs()},
	}); err != nil {
		return err
	}
	if err := prepareWDS(s.Ctx, "wds1"); err != nil {
		return err
	}
	if suite.stager, err = startStager(); err != nil {
		return err
	}
	s.Defer(func() error { return suite.stager.Stop() })
	return nil
}

// prepareWDS registers a WDS with the stager and creates its StatusCollector
// and workload namespace.
func prepareWDS(ctx context.Context, name string) error {
	if err := suite.stack.ServeWDS(ctx, name, collector); err != nil {
		return err
	}
	if err := wds(name).Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return fmt.Errorf("creating namespace %s in %s: %w", namespace, name, err)
	}
	return nil
}

// startStager starts the stager binary serving the registered WDSes, with
// its profiles on a loopback port and its Events through a client and a
// broadcaster of their own (--space-event-qps; the integration suites post
// them through each space's recorder, the default), and waits until it
// answers its health probe.
func startStager() (*process.Process, error) {
	args := func() ([]string, error) {
		args, err := suite.stack.StagerArgs()
		if err != nil {
			return nil, err
		}
		pprof, err := process.FreeAddresses(1)
		if err != nil {
			return nil, err
		}
		// The suite's Prometheus serves plain http.
		return append(args, "--zap-devel", "--pprof-bind-address="+pprof[0], "--space-event-qps=50", "--allow-insecure-metric-providers"), nil
	}
	return stack.StartStager(suite.ctx, suite.binary, args, filepath.Join(suite.workDir, "stager.log"))
}

// wds returns a WDS's client.
func wds(name string) client.Client {
	return suite.stack.WDS[name].Client
}

// createWorkload creates a Deployment (and, with config, a ConfigMap) labelled app.kubernetes.io/name=<name>.
func createWorkload(t *testing.T, space, name string, config bool) {
	t.Helper()
	objs := []client.Object{policytest.Deployment(namespace, name)}
	if config {
		objs = append(objs, policytest.ConfigMap(namespace, name))
	}
	for _, obj := range objs {
		if err := wds(space).Create(suite.ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating %T %s in %s: %v", obj, obj.GetName(), space, err)
		}
	}
}

// startRollout creates, in wds1, a Deployment and its dev → test → prod
// policy (ThreeStages, changed by change when given), deleted when the test
// ends, and waits until dev is active.
func startRollout(t *testing.T, name string, change func(*v1alpha1.StagedBindingPolicy)) {
	t.Helper()
	const space = "wds1"
	createWorkload(t, space, name, false)
	policy := policytest.ThreeStages(name, name)
	if change != nil {
		change(policy)
	}
	if err := wds(space).Create(suite.ctx, policy); err != nil {
		t.Fatalf("creating policy %s in %s: %v", name, space, err)
	}
	t.Cleanup(func() { policies(space).Delete(t, name) })
	policies(space).WaitForActiveStage(t, name, "dev")
}

// makeAvailable makes the WECs of one stage of a policy report its Deployments available.
func makeAvailable(space, policy, stage string) {
	suite.stack.WECs.SetAvailable(stack.Match{WDS: space, BindingPolicy: v1alpha1.StagePlacement(policy, stage).String(), Resource: "deployments"}, 1)
	suite.stack.WECs.Resync()
}

// policies returns the policy helpers of a WDS.
func policies(space string) policytest.Space {
	return policytest.Space{Name: space, Client: wds(space), Ctx: suite.ctx, Timeout: timeout}
}

// stays checks that the policy stays in a stage for the duration.
func stays(t *testing.T, space policytest.Space, name, stage string, d time.Duration) {
	t.Helper()
	environment.Consistently(t, d, fmt.Sprintf("%s/%s staying in stage %q", space.Name, name, stage), func() error {
		if p := space.Get(t, name); p.Status.ActiveStage != stage {
			return fmt.Errorf("it moved to %q: %s", p.Status.ActiveStage, policytest.Describe(p))
		}
		return nil
	})
}

// waitForOnlyBindingPolicy waits until the policy's only BindingPolicy is the
// stage's and its Binding places the workload on exactly the given clusters.
func waitForOnlyBindingPolicy(t *testing.T, space, name, stage string, destinations ...string) {
	t.Helper()
	waitForPlacement(t, space, name, map[string][]string{stage: destinations})
}

// waitForPlacement waits until the policy's BindingPolicies are exactly
// those of the given stages, each one's Binding placing the workload on
// exactly the given clusters.
func waitForPlacement(t *testing.T, space, name string, stages map[string][]string) {
	t.Helper()
	want := map[string][]string{}
	for stage, destinations := range stages {
		want[v1alpha1.StagePlacement(name, stage).String()] = slices.Sorted(slices.Values(destinations))
	}
	environment.Eventually(t, timeout, fmt.Sprintf("the BindingPolicies of %s/%s placing %v", space, name, stages), func() error {
		list := &ksv1alpha1.BindingPolicyList{}
		if err := wds(space).List(suite.ctx, list, client.MatchingLabels{v1alpha1.PolicyLabel: name}); err != nil {
			return err
		}
		var names []string
		for _, bp := range list.Items {
			names = append(names, bp.Name)
		}
		if !slices.Equal(slices.Sorted(slices.Values(names)), slices.Sorted(maps.Keys(want))) {
			return fmt.Errorf("BindingPolicies %v", names)
		}
		for bpName, destinations := range want {
			got, err := policies(space).Destinations(bpName)
			if err != nil {
				return err
			}
			if !slices.Equal(got, destinations) {
				return fmt.Errorf("Binding %s destinations %v", bpName, got)
			}
		}
		return nil
	})
}
