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

// Package environment starts real kube-apiservers ("spaces") for integration
// tests, end-to-end tests and demos of the workload stager.
//
// Each space is one controller-runtime envtest.Environment (kube-apiserver +
// etcd, no controller-manager and therefore no garbage collector) with an
// optional set of CRDs installed. The binaries are taken from
// $KUBEBUILDER_ASSETS, which `make test` prepares; nothing is ever downloaded.
//
// Typical use:
//
//	space, err := environment.StartSpace("wds1", environment.WithKubeStellarCRDs())
//	if err != nil { ... }
//	defer space.Stop()
//	_ = space.Client.Create(ctx, obj)
package environment

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubestellar/workload-stager/test/framework"
)

const (
	// ModulePath is the Go module path of this repository; RepoRoot looks
	// for the go.mod that declares it.
	ModulePath = "github.com/kubestellar/workload-stager"

	// KubeStellarModulePath is the Go module whose CRDs KubeStellarCRDDir
	// locates (at the version that go.mod requires).
	KubeStellarModulePath = "github.com/kubestellar/kubestellar"

	// AssetsEnvVar is the environment variable that names the directory
	// holding the kube-apiserver and etcd binaries.
	AssetsEnvVar = "KUBEBUILDER_ASSETS"

	// SpaceUserName is the name of the user that StartSpace provisions in
	// every space; the user is a member of SpaceUserGroup.
	SpaceUserName = "workload-stager-tester"

	// SpaceUserGroup is the group of the user provisioned by StartSpace
	// (full administrative rights).
	SpaceUserGroup = "system:masters"

	// defaultStartTimeout is used for the control plane start-up unless
	// KUBEBUILDER_CONTROLPLANE_START_TIMEOUT is set; envtest's own default
	// (20s) is too short on a busy machine.
	defaultStartTimeout = 2 * time.Minute
)

// AssetsDir returns the directory holding the kube-apiserver and etcd
// binaries, as named by $KUBEBUILDER_ASSETS. It returns an error when the
// variable is unset or does not name a directory holding both binaries; run
// `make test`, which builds the binaries and sets the variable. AssetsDir
// never downloads anything.
func AssetsDir() (string, error) {
	dir := os.Getenv(AssetsEnvVar)
	if dir == "" {
		return "", fmt.Errorf("$%s is not set: run the tests through `make test`, which builds kube-apiserver and etcd and sets %s to their directory", AssetsEnvVar, AssetsEnvVar)
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		info, err := os.Stat(filepath.Join(dir, bin))
		if err != nil {
			return "", fmt.Errorf("$%s=%q does not hold %s (%w): run the tests through `make test`, which builds it", AssetsEnvVar, dir, bin, err)
		}
		if info.IsDir() {
			return "", fmt.Errorf("$%s=%q: %s is a directory, not an executable", AssetsEnvVar, dir, bin)
		}
	}
	return dir, nil
}

// RepoRoot returns the root directory of this repository: the nearest
// directory, walking up from the working directory, that holds a go.mod
// declaring module ModulePath.
func RepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("getting the working directory: %w", err)
	}
	for dir := wd; ; {
		if mod, err := modulePathOf(filepath.Join(dir, "go.mod")); err == nil && mod == ModulePath {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s in %s or any parent directory", ModulePath, wd)
		}
		dir = parent
	}
}

// modulePathOf returns the module path declared in the given go.mod file.
func modulePathOf(goMod string) (string, error) {
	data, err := os.ReadFile(goMod)
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`), nil
		}
	}
	return "", fmt.Errorf("%s declares no module", goMod)
}

var ksCRDDir struct {
	sync.Mutex
	dir string
}

// KubeStellarCRDDir returns the directory holding the CRDs of the KubeStellar
// version that go.mod requires (config/crd/bases of that module). The module
// directory is found with `go list -m -f {{.Dir}}` run in the repository
// root, so the CRDs are read from the module cache and never copied into the
// repository. A successful result is cached for the life of the process.
func KubeStellarCRDDir() (string, error) {
	ksCRDDir.Lock()
	defer ksCRDDir.Unlock()
	if ksCRDDir.dir != "" {
		return ksCRDDir.dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", KubeStellarModulePath)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s in %s: %w: %s", KubeStellarModulePath, root, err, strings.TrimSpace(stderr.String()))
	}
	modDir := strings.TrimSpace(string(out))
	if modDir == "" {
		return "", fmt.Errorf("module %s is not in the module cache; run `go mod download %s` in %s", KubeStellarModulePath, KubeStellarModulePath, root)
	}
	dir := filepath.Join(modDir, "config", "crd", "bases")
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return "", fmt.Errorf("module %s at %s has no CRD directory %s", KubeStellarModulePath, modDir, dir)
	}
	ksCRDDir.dir = dir
	return dir, nil
}

// StagerCRDDir returns the directory of the workload stager's own CRDs,
// <repo root>/config/crd/bases. It does not check that the directory exists.
func StagerCRDDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "config", "crd", "bases"), nil
}

// HostingCRDDir returns the directory of the CRDs of the stager's hosting
// cluster (the MetricProvider), as `make manifests` generates them.
func HostingCRDDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "config", "crd", "hosting"), nil
}

// Scheme returns a new scheme holding the client-go (built-in Kubernetes)
// types, the KubeStellar control.kubestellar.io/v1alpha1 types and the
// apiextensions.k8s.io/v1 types. Callers add the workload stager's own API
// types (github.com/kubestellar/workload-stager/api/v1alpha1) themselves.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(ksv1alpha1.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}

// SpaceOption configures StartSpace.
type SpaceOption func(*spaceConfig)

type spaceConfig struct {
	kubeStellarCRDs bool
	stagerCRDs      bool
	crdDirs         []string
	scheme          *runtime.Scheme
}

// WithKubeStellarCRDs installs KubeStellar's CRDs (BindingPolicy, Binding,
// CombinedStatus, StatusCollector, CustomTransform) from KubeStellarCRDDir.
func WithKubeStellarCRDs() SpaceOption {
	return func(c *spaceConfig) { c.kubeStellarCRDs = true }
}

// WithStagerCRDs installs the workload stager's own CRDs from StagerCRDDir.
// StartSpace fails if that directory does not exist.
func WithStagerCRDs() SpaceOption {
	return func(c *spaceConfig) { c.stagerCRDs = true }
}

// WithCRDDirs installs the CRDs found in the given directories (files ending
// in .yaml, .yml or .json; other documents are ignored). StartSpace fails if
// a directory does not exist.
func WithCRDDirs(dirs ...string) SpaceOption {
	return func(c *spaceConfig) { c.crdDirs = append(c.crdDirs, dirs...) }
}

// WithScheme makes Space.Client use the given scheme instead of Scheme();
// use it to add further types, such as the workload stager's API types.
func WithScheme(s *runtime.Scheme) SpaceOption {
	return func(c *spaceConfig) { c.scheme = s }
}

// Space is one running kube-apiserver (with its etcd) started by StartSpace.
type Space struct {
	// Name is the name given to StartSpace; it only serves to tell spaces
	// apart in messages.
	Name string

	// Config is a REST config for a user (SpaceUserName) in group
	// system:masters.
	Config *rest.Config

	// Client is a controller-runtime client using Config and the scheme
	// from Scheme() (or the one given by WithScheme).
	Client client.Client

	// Environment is the underlying envtest environment, for advanced use.
	Environment *envtest.Environment

	kubeconfig []byte
	stopOnce   sync.Once
	stopErr    error

	// restart holds the kube-apiserver's command line while StopAPIServer
	// has it stopped, and the process StartAPIServer started.
	restart apiServerRestart
}

// StartSpace starts a kube-apiserver and etcd from AssetsDir, installs the
// CRDs selected by the options (waiting until they are established),
// provisions a user in group system:masters and returns the running space.
// Several spaces may run at the same time in one process. Call Stop when done.
func StartSpace(name string, opts ...SpaceOption) (*Space, error) {
	cfg := spaceConfig{}
	for _, o := range opts {
		o(&cfg)
	}
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	var dirs []string
	if cfg.kubeStellarCRDs {
		dir, err := KubeStellarCRDDir()
		if err != nil {
			return nil, fmt.Errorf("space %s: %w", name, err)
		}
		dirs = append(dirs, dir)
	}
	if cfg.stagerCRDs {
		dir, err := StagerCRDDir()
		if err != nil {
			return nil, fmt.Errorf("space %s: %w", name, err)
		}
		dirs = append(dirs, dir)
	}
	dirs = append(dirs, cfg.crdDirs...)
	seen := map[string]bool{}
	dirs = slices.DeleteFunc(dirs, func(dir string) bool {
		dir = filepath.Clean(dir)
		dup := seen[dir]
		seen[dir] = true
		return dup
	})
	for _, dir := range dirs {
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			return nil, fmt.Errorf("space %s: CRD directory %s does not exist", name, dir)
		}
	}
	scheme := cfg.scheme
	if scheme == nil {
		scheme = Scheme()
	}

	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     dirs,
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
	}
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
		env.ControlPlaneStartTimeout = defaultStartTimeout
	}
	if _, err := env.Start(); err != nil {
		stopErr := env.Stop()
		return nil, errors.Join(fmt.Errorf("starting space %s: %w", name, err), stopErr)
	}
	space := &Space{Name: name, Environment: env}
	fail := func(err error) (*Space, error) {
		return nil, errors.Join(fmt.Errorf("space %s: %w", name, err), env.Stop())
	}
	user, err := env.AddUser(envtest.User{Name: SpaceUserName, Groups: []string{SpaceUserGroup}},
		&rest.Config{QPS: 1000, Burst: 2000})
	if err != nil {
		return fail(fmt.Errorf("adding user: %w", err))
	}
	space.Config = user.Config()
	if space.kubeconfig, err = user.KubeConfig(); err != nil {
		return fail(fmt.Errorf("making kubeconfig: %w", err))
	}
	if space.Client, err = client.New(space.Config, client.Options{Scheme: scheme}); err != nil {
		return fail(fmt.Errorf("making client: %w", err))
	}
	return space, nil
}

// Kubeconfig returns a kubeconfig (YAML) for the space's system:masters user,
// with the credentials and CA embedded, usable from another process or as
// the content of a kubeconfig Secret (see RegisterKubeconfigSecret). The
// server is reached at 127.0.0.1.
func (s *Space) Kubeconfig() []byte {
	return bytes.Clone(s.kubeconfig)
}

// Stop stops the space's kube-apiserver and etcd and removes their data.
// Calling it more than once is harmless.
func (s *Space) Stop() error {
	s.stopOnce.Do(func() {
		restartedErr := s.stopRestartedAPIServer()
		if err := withoutKilledAfterTimeout(s.Environment.Stop()); err != nil || restartedErr != nil {
			s.stopErr = fmt.Errorf("stopping space %s: %w", s.Name, errors.Join(restartedErr, err))
		}
	})
	return s.stopErr
}

// withoutKilledAfterTimeout drops from envtest's stop errors the "timeout
// waiting for process ... to stop" ones: envtest returns them once its
// SIGKILL, sent after ControlPlaneStopTimeout, has succeeded (a failed kill
// is another error), so they tell of a slow graceful shutdown on a loaded
// machine, not of a process left running.
func withoutKilledAfterTimeout(err error) error {
	if err == nil {
		return nil
	}
	errs := []error{err}
	if agg, ok := err.(utilerrors.Aggregate); ok { //nolint:errorlint // envtest returns the aggregate itself
		errs = agg.Errors()
	}
	var kept []error
	for _, e := range errs {
		if strings.HasPrefix(e.Error(), "timeout waiting for process ") {
			log.Log.Info("A process of a space was killed after its graceful shutdown timed out", "error", e.Error())
			continue
		}
		kept = append(kept, e)
	}
	return errors.Join(kept...)
}

// SharedSpace returns the set-up (for framework.Main) of a test package
// whose tests share one space: it starts the space into *space and stops it
// with the package.
func SharedSpace(space **Space, name string, opts ...SpaceOption) func(*framework.Suite) error {
	return func(s *framework.Suite) error {
		started, err := StartSpace(name, opts...)
		if err != nil {
			return err
		}
		s.Defer(started.Stop)
		*space = started
		return nil
	}
}
