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

// Package install installs the stager as shipped and rolls out through it:
// helm renders both charts; every object is applied to real API servers
// with server-side apply; the stager binary stands in for the chart's pod
// (there is no kubelet here), with exactly the chart's container arguments
// and the identity of the chart's ServiceAccount (a TokenRequest token); and
// each WDS is served through an identity bound only to the space chart's
// role. KubeStellar's real controller-manager runs in both WDSes
// (test/framework/stack).
package install

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/helm"
	"github.com/kubestellar/workload-stager/test/framework/kubestellar"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
	"github.com/kubestellar/workload-stager/test/framework/process"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

const (
	// releaseNamespace is where the stager's chart is installed, and where
	// the WDSes' kubeconfig Secrets go.
	releaseNamespace = "workload-stager"
	// spaceUser is the stager's identity in every WDS, bound to the space
	// chart's role alone.
	spaceUser = "installed-stager"
	// namespace holds the workload objects in every WDS.
	namespace = "apps"
	// timeout bounds every wait: KubeStellar takes ~2s to make a Binding
	// and ~5s to turn a WorkStatus into a CombinedStatus.
	timeout = 3 * time.Minute
)

// wdses are the WDSes the installed stager serves.
var wdses = []string{"wds1", "wds2"}

// clusters are the simulated WECs.
var clusters = kubestellar.EnvClusters("dev1", "test1", "prod1")

var suite struct {
	ctx   context.Context
	stack *stack.Stack
	// stager is the binary standing in for the chart's pod.
	stager *process.Process
	// spaceChart is what the space chart renders, applied in every WDS.
	spaceChart []*unstructured.Unstructured
}

func TestMain(m *testing.M) {
	os.Exit(stack.Main(m, "install", setUp))
}

// setUp starts KubeStellar with two WDSes, installs the stager's chart in
// the hosting space and the space chart in both WDSes, registers both WDSes,
// and starts the stager as the chart's pod would run.
func setUp(s *stack.Suite) error {
	suite.ctx = s.Ctx
	// No stager CRD in the WDSes: the space chart brings it.
	st, err := s.StartStack(stack.Options{WDSes: wdses, Clusters: clusters})
	if err != nil {
		return err
	}
	suite.stack = st

	args, err := installStager(s.Ctx, s.WorkDir)
	if err != nil {
		return err
	}
	if suite.spaceChart, err = helm.Template(helm.SpaceChart, "space", "default",
		"subjects[0].apiGroup=rbac.authorization.k8s.io,subjects[0].kind=User,subjects[0].name="+spaceUser); err != nil {
		return err
	}
	for _, name := range wdses {
		if err := installSpace(s.Ctx, name); err != nil {
			return err
		}
	}
	if suite.stager, err = stack.StartProcess(s.Binary, args, filepath.Join(s.WorkDir, "stager.log")); err != nil {
		return err
	}
	s.Defer(func() error { return suite.stager.Stop() })
	return nil
}

// installStager renders the stager's chart (with free ports for metrics and
// probes: the stager runs on this machine's network), applies every object
// to the hosting space, and returns the Deployment's container arguments
// with a kubeconfig holding a token of the chart's ServiceAccount: what the
// pod would run with.
func installStager(ctx context.Context, dir string) ([]string, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	metricsPort, probesPort := ports[0], ports[1]
	objs, err := helm.Template(helm.StagerChart, "stager", releaseNamespace,
		fmt.Sprintf("metrics.port=%d,probes.port=%d,metrics.serviceMonitor.enabled=false", metricsPort, probesPort))
	if err != nil {
		return nil, err
	}
	hosting := suite.stack.Hosting
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}} // helm install --create-namespace
	if err := hosting.Client.Create(ctx, ns); err != nil {
		return nil, fmt.Errorf("creating the release namespace: %w", err)
	}
	if err := helm.Apply(ctx, hosting.Client, objs); err != nil {
		return nil, fmt.Errorf("installing the stager's chart: %w", err)
	}

	deployment := helm.Find(objs, "Deployment", "stager")
	if deployment == nil {
		return nil, fmt.Errorf("the chart renders no Deployment stager")
	}
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(deployment.Object, d); err != nil {
		return nil, err
	}
	pod := d.Spec.Template.Spec
	token, err := hosting.ServiceAccountToken(ctx, releaseNamespace, pod.ServiceAccountName)
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "stager-serviceaccount.kubeconfig")
	if err := writeTokenKubeconfig(kubeconfig, hosting, token); err != nil {
		return nil, err
	}
	return append(pod.Containers[0].Args, "--kubeconfig="+kubeconfig), nil
}

// installSpace applies the space chart in a WDS and registers the WDS with
// the stager: a kubeconfig of spaceUser (bound only to the chart's role) in
// a labelled Secret of the release's namespace, as the README says.
func installSpace(ctx context.Context, name string) error {
	wds := suite.stack.WDS[name]
	if err := helm.Apply(ctx, wds.Client, suite.spaceChart); err != nil {
		return fmt.Errorf("installing the space chart in %s: %w", name, err)
	}
	kubeconfig, err := wds.AddUser(spaceUser)
	if err != nil {
		return err
	}
	if err := environment.RegisterKubeconfigSecret(ctx, suite.stack.Hosting.Client, releaseNamespace, name, "", kubeconfig); err != nil {
		return err
	}
	for _, obj := range []client.Object{
		stack.NewDeploymentsAggregator(policytest.Collector),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
	} {
		if err := wds.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T in %s: %w", obj, name, err)
		}
	}
	return nil
}

// writeTokenKubeconfig writes a kubeconfig for the space's API server that
// authenticates with a bearer token, as a pod's in-cluster configuration does.
func writeTokenKubeconfig(path string, space *environment.Space, token string) error {
	config := clientcmdapi.NewConfig()
	config.Clusters["hosting"] = &clientcmdapi.Cluster{Server: space.Config.Host, CertificateAuthorityData: space.Config.CAData}
	config.AuthInfos["stager"] = &clientcmdapi.AuthInfo{Token: token}
	config.Contexts["stager"] = &clientcmdapi.Context{Cluster: "hosting", AuthInfo: "stager"}
	config.CurrentContext = "stager"
	return clientcmd.WriteToFile(*config, path)
}

// freePorts returns n distinct free loopback ports.
func freePorts(n int) ([]int, error) {
	addrs, err := process.FreeAddresses(n)
	if err != nil {
		return nil, err
	}
	ports := make([]int, 0, n)
	for _, addr := range addrs {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return nil, fmt.Errorf("the port of %s: %w", addr, err)
		}
		ports = append(ports, p)
	}
	return ports, nil
}
