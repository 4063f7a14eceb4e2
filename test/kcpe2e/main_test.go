/*
Copyright 2026 The KubeStellar Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package kcpe2e tests the stager with kcp workspaces as spaces: a real kcp
// v0.28.0 (test/kcp) serves KubeStellar's control API and the stager's from
// a provider workspace, through the generated objects of config/kcp; WDS
// workspaces bind both exports and accept the claims; the KubeStellar
// simulator (test/kubestellar) plays KubeStellar's part inside each
// workspace; and the stager binary serves the kcp workspaces, as the
// provider workspace's ServiceAccount with the generated minimal RBAC,
// together with a WDS registered by kubeconfig Secret (--provider=kubeconfig,kcp).
//
// One kcp, one hosting apiserver, one kubeconfig WDS and one stager process
// are shared by the package (TestMain).
package kcpe2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubestellar/workload-stager/cmd/stager/app"
	"github.com/kubestellar/workload-stager/test/environment"
	"github.com/kubestellar/workload-stager/test/kcp"
	"github.com/kubestellar/workload-stager/test/kubestellar"
	"github.com/kubestellar/workload-stager/test/stack"
)

const (
	// providerWorkspace holds the exports.
	providerWorkspace = "provider"
	// collector is the StatusCollector the conditions read.
	collector = "deployments-aggregator"
	// namespace holds the workload objects.
	namespace = "apps"
	// secretNamespace holds the kubeconfig Secrets in the hosting space.
	secretNamespace = "kubestellar-stager"
	// stagerUser is the stager's identity in the kubeconfig WDS.
	stagerUser = "kubestellar-stager"
	// timeout bounds every wait.
	timeout = 2 * time.Minute
)

// clusters are the simulated WECs of every WDS.
var clusters = []kubestellar.Cluster{
	{Name: "dev1", Labels: map[string]string{"env": "dev"}},
	{Name: "dev2", Labels: map[string]string{"env": "dev"}},
	{Name: "prod1", Labels: map[string]string{"env": "prod"}},
}

// wds is one WDS of the suite: a kcp workspace or a kubeconfig space.
type wds struct {
	// space is the stager's name for it ("kcp#root:wds1", "kubeconfig#wds0").
	space        string
	client       client.Client
	availability *kubestellar.Availability
	sim          *kubestellar.Simulator
	cancel       context.CancelFunc
}

var suite struct {
	ctx          context.Context
	workDir      string
	kcp          *kcp.Server
	providerPath string
	identityHash string
	hosting      *environment.Space
	stager       *stack.Process

	mu   sync.Mutex
	wdss map[string]*wds
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	suite.ctx = ctx
	suite.wdss = map[string]*wds{}
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "FAIL: kcp end-to-end set-up: %v (logs in %s)\n", err, suite.workDir)
		return 1
	}
	var err error
	if suite.workDir, err = os.MkdirTemp("", "stager-kcp-e2e-"); err != nil {
		return fail(err)
	}
	logFile, err := os.Create(filepath.Join(suite.workDir, "suite.log"))
	if err != nil {
		return fail(err)
	}
	defer func() { _ = logFile.Close() }()
	log.SetLogger(zap.New(zap.WriteTo(logFile), zap.UseDevMode(true)))

	binary, err := stack.StagerBinary(suite.workDir)
	if err != nil {
		return fail(err)
	}
	scheme, err := app.NewScheme()
	if err != nil {
		return fail(err)
	}
	if suite.kcp, err = kcp.Start(ctx, kcp.Options{WorkDir: suite.workDir, Scheme: scheme}); err != nil {
		return fail(err)
	}
	defer func() { _ = suite.kcp.Stop() }()
	stagerKubeconfig, err := setUpProvider(ctx)
	if err != nil {
		return fail(err)
	}
	for _, name := range []string{"wds1", "wds2"} {
		if _, err := addWorkspace(ctx, name); err != nil {
			return fail(err)
		}
	}

	// The hosting space holds the kubeconfig Secret of wds0, a plain WDS.
	if suite.hosting, err = environment.StartSpace("hosting", environment.WithScheme(scheme)); err != nil {
		return fail(err)
	}
	defer func() { _ = suite.hosting.Stop() }()
	wds0, err := environment.StartSpace("wds0", environment.WithKubeStellarCRDs(), environment.WithStagerCRDs(), environment.WithScheme(scheme))
	if err != nil {
		return fail(err)
	}
	defer func() { _ = wds0.Stop() }()
	if err := wds0.GrantStagerRole(ctx, stagerUser); err != nil {
		return fail(err)
	}
	userKubeconfig, err := wds0.AddUser(stagerUser)
	if err != nil {
		return fail(err)
	}
	if err := environment.RegisterKubeconfigSecret(ctx, suite.hosting.Client, secretNamespace, "wds0", "", userKubeconfig); err != nil {
		return fail(err)
	}
	if err := startWDS(ctx, "wds0", "kubeconfig#wds0", wds0.Client); err != nil {
		return fail(err)
	}
	defer stopWDSes()

	hostingKubeconfig := filepath.Join(suite.workDir, "hosting.kubeconfig")
	if err := os.WriteFile(hostingKubeconfig, suite.hosting.Kubeconfig(), 0o600); err != nil {
		return fail(err)
	}
	kcpKubeconfig := filepath.Join(suite.workDir, "stager-kcp.kubeconfig")
	if err := os.WriteFile(kcpKubeconfig, stagerKubeconfig, 0o600); err != nil {
		return fail(err)
	}
	args, err := stagerArgs(hostingKubeconfig, kcpKubeconfig)
	if err != nil {
		return fail(err)
	}
	if suite.stager, err = stack.StartProcess(binary, args, filepath.Join(suite.workDir, "stager.log")); err != nil {
		return fail(err)
	}
	defer func() { _ = suite.stager.Stop(15 * time.Second) }()

	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, "kcp end-to-end logs are in", suite.workDir)
	}
	return code
}

// setUpProvider creates the provider workspace, applies KubeStellar's
// export, the stager's (with the identity hash of KubeStellar's) and the
// stager's RBAC, and returns a kubeconfig of the stager's ServiceAccount there.
func setUpProvider(ctx context.Context) ([]byte, error) {
	path, _, err := suite.kcp.CreateWorkspace(ctx, kcp.RootPath, providerWorkspace)
	if err != nil {
		return nil, err
	}
	suite.providerPath = path
	c, err := suite.kcp.Client(path)
	if err != nil {
		return nil, err
	}
	if err := apply(ctx, c, "kubestellar", nil); err != nil {
		return nil, err
	}
	export := &unstructured.Unstructured{}
	export.SetAPIVersion("apis.kcp.io/v1alpha2")
	export.SetKind("APIExport")
	if err := poll(ctx, "the identity hash of KubeStellar's export", func() error {
		if err := c.Get(ctx, types.NamespacedName{Name: "control.kubestellar.io"}, export); err != nil {
			return err
		}
		suite.identityHash, _, _ = unstructured.NestedString(export.Object, "status", "identityHash")
		if suite.identityHash == "" {
			return fmt.Errorf("no status.identityHash yet")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := apply(ctx, c, "stager", placeholders()); err != nil {
		return nil, err
	}
	if err := apply(ctx, c, "rbac", nil); err != nil {
		return nil, err
	}
	return serviceAccountKubeconfig(ctx, c, path)
}

// placeholders are the values of config/kcp's placeholders.
func placeholders() map[string]string {
	return map[string]string{
		"${KUBESTELLAR_IDENTITY_HASH}": suite.identityHash,
		"${PROVIDER_WORKSPACE_PATH}":   suite.providerPath,
	}
}

// apply creates every object of config/kcp/<dir> (but its kustomization),
// with the placeholders replaced.
func apply(ctx context.Context, c client.Client, dir string, values map[string]string) error {
	root, err := environment.RepoRoot()
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "kcp", dir, "*.yaml"))
	if err != nil {
		return err
	}
	for _, file := range files {
		if filepath.Base(file) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		text := string(data)
		for k, v := range values {
			text = strings.ReplaceAll(text, k, v)
		}
		decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(text)), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := decoder.Decode(&obj.Object); err != nil {
				if err.Error() == "EOF" {
					break
				}
				return fmt.Errorf("decoding %s: %w", file, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			if strings.Contains(text, "${") {
				return fmt.Errorf("%s has a placeholder without value", file)
			}
			if err := c.Create(ctx, obj); err != nil {
				return fmt.Errorf("creating %s %s from %s: %w", obj.GetKind(), obj.GetName(), file, err)
			}
		}
	}
	return nil
}

// serviceAccountKubeconfig returns a kubeconfig of the stager's
// ServiceAccount (created by config/kcp/rbac) in a workspace, with a token
// from a service-account-token Secret.
func serviceAccountKubeconfig(ctx context.Context, c client.Client, path string) ([]byte, error) {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "workload-stager-token",
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "workload-stager"}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	if err := c.Create(ctx, secret); err != nil {
		return nil, fmt.Errorf("creating the ServiceAccount's token Secret: %w", err)
	}
	if err := poll(ctx, "the ServiceAccount's token", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
			return err
		}
		if len(secret.Data[corev1.ServiceAccountTokenKey]) == 0 {
			return fmt.Errorf("no token yet")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	admin, err := suite.kcp.KubeconfigFor(path)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.Load(admin)
	if err != nil {
		return nil, fmt.Errorf("parsing the admin kubeconfig: %w", err)
	}
	for name := range cfg.AuthInfos {
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: string(secret.Data[corev1.ServiceAccountTokenKey])}
	}
	return clientcmd.Write(*cfg)
}

// addWorkspace creates a WDS workspace under root, binds the exports
// (accepting the claims), creates the workload namespace and starts the
// simulator in it. It returns the stager's name for the space.
func addWorkspace(ctx context.Context, name string) (*wds, error) {
	path, _, err := suite.kcp.CreateWorkspace(ctx, kcp.RootPath, name)
	if err != nil {
		return nil, err
	}
	c, err := suite.kcp.Client(path)
	if err != nil {
		return nil, err
	}
	if err := apply(ctx, c, "consumer", placeholders()); err != nil {
		return nil, err
	}
	for _, list := range []string{"community.kubestellar.io/v1alpha1 StagedBindingPolicyList", "control.kubestellar.io/v1alpha1 StatusCollectorList"} {
		apiVersion, kind, _ := strings.Cut(list, " ")
		if err := poll(ctx, kind+" served in "+path, func() error {
			return c.List(ctx, &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}})
		}); err != nil {
			return nil, err
		}
	}
	if err := startWDS(ctx, name, "kcp#"+path, c); err != nil {
		return nil, err
	}
	return wdsNamed(name), nil
}

// startWDS creates the workload namespace and the StatusCollector of a WDS
// and starts the simulator in it.
func startWDS(ctx context.Context, name, space string, c client.Client) error {
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		stack.NewDeploymentsAggregator(collector),
	} {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T in %s: %w", obj, name, err)
		}
	}
	w := &wds{space: space, client: c, availability: kubestellar.NewAvailability(collector)}
	simCtx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	w.sim = kubestellar.New(c, clusters, kubestellar.WithReporter(w.availability.Report))
	go func() { _ = w.sim.Run(simCtx) }()
	suite.mu.Lock()
	suite.wdss[name] = w
	suite.mu.Unlock()
	return nil
}

func wdsNamed(name string) *wds {
	suite.mu.Lock()
	defer suite.mu.Unlock()
	return suite.wdss[name]
}

func stopWDSes() {
	suite.mu.Lock()
	defer suite.mu.Unlock()
	for _, w := range suite.wdss {
		w.cancel()
	}
}

// stagerArgs serve the kubeconfig Secrets of the hosting space and the kcp
// workspaces bound to the stager's export.
func stagerArgs(hostingKubeconfig, kcpKubeconfig string) ([]string, error) {
	metrics, err := freeAddress()
	if err != nil {
		return nil, err
	}
	probes, err := freeAddress()
	if err != nil {
		return nil, err
	}
	return []string{
		"--kubeconfig=" + hostingKubeconfig,
		"--provider=kubeconfig,kcp",
		"--kubeconfig-namespace=" + secretNamespace,
		"--kcp-kubeconfig=" + kcpKubeconfig,
		"--metrics-bind-address=" + metrics,
		"--health-probe-bind-address=" + probes,
		"--space-probe-interval=2s",
		"--zap-devel",
	}, nil
}

// poll calls check every 250ms until it succeeds or a minute passes.
func poll(ctx context.Context, what string, check func() error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// freeAddress returns a loopback address with a port nobody listens on.
func freeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}
