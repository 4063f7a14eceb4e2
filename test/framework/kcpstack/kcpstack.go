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

// Package kcpstack sets up a real kcp (test/framework/kcp) to serve WDS workspaces to
// the stager, as a user of config/kcp would: a provider workspace with
// KubeStellar's APIExport, the stager's (claiming KubeStellar's resources by
// the identity hash of its export) and the stager's minimal RBAC, whose
// ServiceAccount the stager runs as; and WDS workspaces binding both exports
// and accepting the claims, each with the KubeStellar simulator
// (test/framework/kubestellar) playing KubeStellar's part inside it.
// SaveSnapshot saves kcp's data once WDS workspaces are bound, and
// StartFromSnapshot starts a Stack on a copy of it, so that a scale run
// need not create its workspaces again.
package kcpstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/kcp"
	"github.com/kubestellar/workload-stager/test/framework/kubestellar"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

const (
	// ProviderWorkspace is the name of the provider workspace under root.
	ProviderWorkspace = "provider"
	// Collector is the StatusCollector created in every WDS workspace.
	Collector = "deployments-aggregator"
	// Namespace is the workload namespace created in every WDS workspace.
	Namespace = "apps"
	// SpacePrefix starts the stager's name of a workspace when it serves
	// several kinds of provider.
	SpacePrefix = "kcp#"

	// serviceAccount and tokenSecret are the stager's identity in the
	// provider workspace (config/kcp/rbac) and its token.
	serviceAccount = "workload-stager"
	tokenSecret    = "workload-stager-token"
	// user is the user config/kcp/rbac is bound to (its ${STAGER_USER}),
	// and tokenFile the file of kcp's static tokens (--token-auth-file) in
	// WorkDir that names it.
	user      = "workload-stager"
	tokenFile = "stager-token.csv"
	// waitTimeout bounds the waits of the set-up.
	waitTimeout = 2 * time.Minute
)

// Options configure Start.
type Options struct {
	// WorkDir holds kcp's data and log.
	WorkDir string
	// Scheme is the scheme of the workspace clients; it needs the stager's
	// and KubeStellar's types.
	Scheme *runtime.Scheme
	// Clusters are the simulated WECs of every workspace.
	Clusters []kubestellar.Cluster
	// SimulatorInterval is the simulators' pass interval; zero means
	// kubestellar.DefaultInterval.
	SimulatorInterval time.Duration
	// StagerIdentity is who StagerKubeconfig is; zero means IdentityUser.
	StagerIdentity Identity
}

// Identity is an identity of the stager in kcp, as config/kcp/rbac binds it.
type Identity string

const (
	// IdentityUser is the user, with a static token kcp reads from a
	// token file: a user without extra attributes, as config/kcp/README.md
	// advises on kcp v0.28.0.
	IdentityUser Identity = "user"
	// IdentityServiceAccount is the ServiceAccount, with a token of a
	// service-account-token Secret.
	IdentityServiceAccount Identity = "serviceaccount"
)

// Stack is a kcp serving WDS workspaces to the stager.
type Stack struct {
	// KCP is the kcp server.
	KCP *kcp.Server
	// ProviderPath is the path of the provider workspace.
	ProviderPath string
	// IdentityHash is the identity hash of KubeStellar's APIExport.
	IdentityHash string
	// StagerKubeconfig is a kubeconfig of the stager's identity
	// (Options.StagerIdentity) in the provider workspace: its
	// --kcp-kubeconfig.
	StagerKubeconfig []byte
	// ServiceAccountKubeconfig and UserKubeconfig are kubeconfigs of each
	// identity in the provider workspace.
	ServiceAccountKubeconfig, UserKubeconfig []byte

	opts      Options
	userToken string

	mu         sync.Mutex
	workspaces map[string]*Workspace
}

// Workspace is a WDS workspace bound to the exports.
type Workspace struct {
	// Name is the workspace's name under root; Path its path; ClusterID
	// the name of its logical cluster (what the annotation kcp.io/cluster
	// of its objects holds).
	Name, Path, ClusterID string
	// Client has admin rights in the workspace.
	Client client.Client
	// Availability says what the simulated WECs report.
	Availability *kubestellar.Availability
	// Simulator plays KubeStellar's part in the workspace.
	Simulator *kubestellar.Simulator

	cancel context.CancelFunc
}

// Start starts kcp and sets up the provider workspace.
func Start(ctx context.Context, o Options) (*Stack, error) {
	return start(ctx, o, kcp.Ports{}, (*Stack).setUpProvider)
}

// start checks o, writes kcp's token file, starts kcp on ports (free ones
// when zero) in o.WorkDir and prepares the provider workspace with
// provider.
func start(ctx context.Context, o Options, ports kcp.Ports, provider func(*Stack, context.Context) error) (*Stack, error) {
	if o.StagerIdentity != "" && o.StagerIdentity != IdentityUser && o.StagerIdentity != IdentityServiceAccount {
		return nil, fmt.Errorf("unknown stager identity %q", o.StagerIdentity)
	}
	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		return nil, fmt.Errorf("making the user's token: %w", err)
	}
	userToken := hex.EncodeToString(token)
	tokens := filepath.Join(o.WorkDir, tokenFile)
	if err := os.MkdirAll(o.WorkDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", o.WorkDir, err)
	}
	if err := os.WriteFile(tokens, []byte(fmt.Sprintf("%s,%s,%s\n", userToken, user, user)), 0o600); err != nil {
		return nil, fmt.Errorf("writing kcp's token file: %w", err)
	}
	args := []string{"--token-auth-file=" + tokens}
	server, err := kcp.Start(ctx, kcp.Options{WorkDir: o.WorkDir, Scheme: o.Scheme, ExtraArgs: args, Ports: ports})
	if err != nil {
		return nil, err
	}
	s := &Stack{KCP: server, opts: o, workspaces: map[string]*Workspace{}, userToken: userToken}
	if err := provider(s, ctx); err != nil {
		return nil, errors.Join(err, server.Stop())
	}
	return s, nil
}

// StartSuite starts kcp for a test package (stack.Main): in the suite's
// work directory and with its scheme unless o says otherwise, stopped with
// the suite.
func StartSuite(s *stack.Suite, o Options) (*Stack, error) {
	if o.WorkDir == "" {
		o.WorkDir = s.WorkDir
	}
	if o.Scheme == nil {
		o.Scheme = s.Scheme
	}
	st, err := Start(s.Ctx, o)
	if err != nil {
		return nil, err
	}
	s.Defer(st.Stop)
	return st, nil
}

// Stop stops the simulators and kcp.
func (s *Stack) Stop() error {
	s.mu.Lock()
	for _, w := range s.workspaces {
		w.cancel()
	}
	s.mu.Unlock()
	return s.KCP.Stop()
}

// setUpProvider creates the provider workspace, applies KubeStellar's
// export, the stager's (with the identity hash of KubeStellar's) and the
// stager's RBAC, and makes the stager's kubeconfig.
func (s *Stack) setUpProvider(ctx context.Context) error {
	path, _, err := s.KCP.CreateWorkspace(ctx, kcp.RootPath, ProviderWorkspace)
	if err != nil {
		return err
	}
	s.ProviderPath = path
	c, err := s.KCP.Client(path)
	if err != nil {
		return err
	}
	if err := s.apply(ctx, c, "kubestellar"); err != nil {
		return err
	}
	if err := s.readIdentityHash(ctx, c); err != nil {
		return err
	}
	if err := s.apply(ctx, c, "stager"); err != nil {
		return err
	}
	if err := s.apply(ctx, c, "rbac"); err != nil {
		return err
	}
	return s.makeKubeconfigs(ctx, c)
}

// loadProvider reads what setUpProvider made from a kcp started on its
// data: the identity hash and the stager's kubeconfigs.
func (s *Stack) loadProvider(ctx context.Context) error {
	s.ProviderPath = kcp.RootPath + ":" + ProviderWorkspace
	c, err := s.KCP.Client(s.ProviderPath)
	if err != nil {
		return err
	}
	if err := s.readIdentityHash(ctx, c); err != nil {
		return err
	}
	return s.makeKubeconfigs(ctx, c)
}

// readIdentityHash waits for the identity hash of KubeStellar's export in
// the provider workspace and keeps it.
func (s *Stack) readIdentityHash(ctx context.Context, c client.Client) error {
	export := &unstructured.Unstructured{}
	export.SetAPIVersion("apis.kcp.io/v1alpha2")
	export.SetKind("APIExport")
	return environment.Poll(ctx, environment.PollInterval, waitTimeout, "the identity hash of KubeStellar's export", func() error {
		if err := c.Get(ctx, types.NamespacedName{Name: "control.kubestellar.io"}, export); err != nil {
			return err
		}
		s.IdentityHash, _, _ = unstructured.NestedString(export.Object, "status", "identityHash")
		if s.IdentityHash == "" {
			return errors.New("no status.identityHash yet")
		}
		return nil
	})
}

// makeKubeconfigs makes the kubeconfigs of the stager's identities in the
// provider workspace.
func (s *Stack) makeKubeconfigs(ctx context.Context, c client.Client) error {
	var err error
	if s.ServiceAccountKubeconfig, err = s.serviceAccountKubeconfig(ctx, c, s.ProviderPath); err != nil {
		return err
	}
	if s.UserKubeconfig, err = s.tokenKubeconfig(s.ProviderPath, s.userToken); err != nil {
		return err
	}
	s.StagerKubeconfig = s.UserKubeconfig
	if s.opts.StagerIdentity == IdentityServiceAccount {
		s.StagerKubeconfig = s.ServiceAccountKubeconfig
	}
	return nil
}

// placeholders are the values of config/kcp's placeholders.
func (s *Stack) placeholders() map[string]string {
	return map[string]string{
		"${KUBESTELLAR_IDENTITY_HASH}": s.IdentityHash,
		"${PROVIDER_WORKSPACE_PATH}":   s.ProviderPath,
		"${STAGER_USER}":               user,
	}
}

// apply creates every object of config/kcp/<dir> (but its kustomization),
// with the placeholders replaced; dir may lead out of config/kcp
// ("../approval").
func (s *Stack) apply(ctx context.Context, c client.Client, dir string) error {
	root, err := environment.RepoRoot()
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "kcp", dir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no files in config/kcp/%s", dir)
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
		for k, v := range s.placeholders() {
			text = strings.ReplaceAll(text, k, v)
		}
		if strings.Contains(text, "${") {
			return fmt.Errorf("%s has a placeholder without value", file)
		}
		decoder := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(text), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := decoder.Decode(&obj.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return fmt.Errorf("decoding %s: %w", file, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			if err := c.Create(ctx, obj); err != nil {
				return fmt.Errorf("creating %s %s from %s: %w", obj.GetKind(), obj.GetName(), file, err)
			}
		}
	}
	return nil
}

// serviceAccountKubeconfig returns a kubeconfig of the stager's
// ServiceAccount (config/kcp/rbac) in a workspace, with the token of a
// service-account-token Secret.
func (s *Stack) serviceAccountKubeconfig(ctx context.Context, c client.Client, path string) ([]byte, error) {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: tokenSecret,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: serviceAccount}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	// A kcp started on saved data has the Secret already.
	if err := c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating the ServiceAccount's token Secret: %w", err)
	}
	if err := environment.Poll(ctx, environment.PollInterval, waitTimeout, "the ServiceAccount's token", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
			return err
		}
		if len(secret.Data[corev1.ServiceAccountTokenKey]) == 0 {
			return errors.New("no token yet")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return s.tokenKubeconfig(path, string(secret.Data[corev1.ServiceAccountTokenKey]))
}

// tokenKubeconfig returns a kubeconfig of the workspace path that
// authenticates with token.
func (s *Stack) tokenKubeconfig(path, token string) ([]byte, error) {
	admin, err := s.KCP.KubeconfigFor(path)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.Load(admin)
	if err != nil {
		return nil, fmt.Errorf("parsing the admin kubeconfig: %w", err)
	}
	for name := range cfg.AuthInfos {
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	}
	return clientcmd.Write(*cfg)
}

// AddWorkspace creates a WDS workspace under root, binds the exports
// (accepting the claims), creates the workload namespace and StatusCollector
// and starts the simulator in it: CreateWorkspace, then Attach.
func (s *Stack) AddWorkspace(ctx context.Context, name string) (*Workspace, error) {
	w, err := s.CreateWorkspace(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := s.Attach(ctx, w); err != nil {
		return nil, err
	}
	return w, nil
}

// CreateWorkspace creates a WDS workspace under root, binds the exports
// (accepting the claims) and creates the workload namespace and
// StatusCollector, without starting its simulator (Attach does): what a
// snapshot (SaveSnapshot) holds.
func (s *Stack) CreateWorkspace(ctx context.Context, name string) (*Workspace, error) {
	path, id, err := s.KCP.CreateWorkspace(ctx, kcp.RootPath, name)
	if err != nil {
		return nil, err
	}
	c, err := s.KCP.Client(path)
	if err != nil {
		return nil, err
	}
	if err := s.apply(ctx, c, "consumer"); err != nil {
		return nil, err
	}
	for _, list := range []string{"community.kubestellar.io/v1alpha1 StagedBindingPolicyList", "control.kubestellar.io/v1alpha1 StatusCollectorList"} {
		apiVersion, kind, _ := strings.Cut(list, " ")
		if err := environment.Poll(ctx, environment.PollInterval, waitTimeout, kind+" served in "+path, func() error {
			return c.List(ctx, &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}})
		}); err != nil {
			return nil, err
		}
	}
	// What config/kcp/consumer's kustomization adds: the approvals' role
	// and admission policy (config/approval).
	if err := s.apply(ctx, c, "../approval"); err != nil {
		return nil, err
	}
	for _, obj := range workspaceObjects() {
		if err := c.Create(ctx, obj); err != nil {
			return nil, fmt.Errorf("creating %T in %s: %w", obj, path, err)
		}
	}
	return &Workspace{Name: name, Path: path, ClusterID: id, Client: c}, nil
}

// workspaceObjects are the objects CreateWorkspace creates in every WDS
// workspace besides config/kcp's and config/approval's.
func workspaceObjects() []client.Object {
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}},
		stack.NewDeploymentsAggregator(Collector),
	}
}

// Attach starts the simulator in a workspace made by CreateWorkspace (or
// read from a snapshot), with a new admin client of the running kcp (kcp
// changes its admin token at every start).
func (s *Stack) Attach(ctx context.Context, w *Workspace) error {
	c, err := s.KCP.Client(w.Path)
	if err != nil {
		return err
	}
	w.Client = c
	// The simulator reads through informers, as KubeStellar's controllers
	// do: its passes would otherwise list every kind of the workspace from
	// kcp time and again, loading kcp under what the scale runs measure.
	cached, err := cluster.New(s.KCP.Config(w.Path), func(o *cluster.Options) {
		o.Scheme = s.KCP.Scheme()
		o.Client.Cache = &client.CacheOptions{Unstructured: true}
	})
	if err != nil {
		return fmt.Errorf("creating the simulator's cache of %s: %w", w.Path, err)
	}
	w.Availability = kubestellar.NewAvailability(Collector)
	simOpts := []kubestellar.Option{kubestellar.WithReporter(w.Availability.Report)}
	if s.opts.SimulatorInterval > 0 {
		simOpts = append(simOpts, kubestellar.WithInterval(s.opts.SimulatorInterval))
	}
	w.Simulator = kubestellar.New(cached.GetClient(), s.opts.Clusters, simOpts...)
	simCtx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	go func() { _ = cached.Start(simCtx) }()
	go func() { _ = w.Simulator.Run(simCtx) }()
	s.mu.Lock()
	s.workspaces[w.Name] = w
	s.mu.Unlock()
	return nil
}

// Unbind deletes a workspace's binding to the stager's export, which
// disengages it, and stops its simulator.
func (s *Stack) Unbind(ctx context.Context, w *Workspace) error {
	binding := &unstructured.Unstructured{}
	binding.SetAPIVersion("apis.kcp.io/v1alpha2")
	binding.SetKind("APIBinding")
	binding.SetName("community.kubestellar.io")
	if err := w.Client.Delete(ctx, binding); err != nil {
		return fmt.Errorf("deleting the APIBinding in %s: %w", w.Path, err)
	}
	w.cancel()
	return nil
}

// EndpointSlice is the APIExportEndpointSlice of the stager's export, in
// the provider workspace.
const EndpointSlice = "community.kubestellar.io"

// StagerExportConfig returns a config of config/kcp/rbac's user for the
// virtual workspace of the stager's export across every bound workspace
// (its URL followed by /clusters/*): what the stager sees, in one watch
// per resource. Objects read through it carry their logical cluster in the
// annotation kcp.io/cluster. It is the user's whatever the stager's
// identity, so that an observer never shares kcp's cached ServiceAccount
// user with the stager.
func (s *Stack) StagerExportConfig(ctx context.Context) (*rest.Config, error) {
	c, err := s.KCP.Client(s.ProviderPath)
	if err != nil {
		return nil, err
	}
	slice := &unstructured.Unstructured{}
	slice.SetAPIVersion("apis.kcp.io/v1alpha1")
	slice.SetKind("APIExportEndpointSlice")
	var url string
	if err := environment.Poll(ctx, environment.PollInterval, waitTimeout, "the URL of the stager's export", func() error {
		if err := c.Get(ctx, types.NamespacedName{Name: EndpointSlice}, slice); err != nil {
			return err
		}
		endpoints, _, _ := unstructured.NestedSlice(slice.Object, "status", "endpoints")
		if len(endpoints) == 0 {
			return errors.New("no status.endpoints yet")
		}
		first, _ := endpoints[0].(map[string]any)
		url, _, _ = unstructured.NestedString(first, "url")
		if url == "" {
			return errors.New("no URL in the first endpoint")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(s.UserKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("parsing the user's kubeconfig: %w", err)
	}
	cfg.Host = strings.TrimSuffix(url, "/") + "/clusters/*"
	return cfg, nil
}

// WriteStagerKubeconfig writes StagerKubeconfig into dir and returns its path.
func (s *Stack) WriteStagerKubeconfig(dir string) (string, error) {
	path := filepath.Join(dir, "stager-kcp.kubeconfig")
	if err := os.WriteFile(path, s.StagerKubeconfig, 0o600); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}
