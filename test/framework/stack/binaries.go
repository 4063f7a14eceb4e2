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
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kubestellar/workload-stager/test/framework/environment"
)

const (
	// ControllerManagerEnvVar names the environment variable that holds the
	// path of KubeStellar's controller-manager binary; `make test` sets it.
	ControllerManagerEnvVar = "STAGER_KS_CONTROLLER_MANAGER"

	// toolsModuleDir is the tools module (relative to the repository root)
	// that pins KubeStellar's controller-manager; its module graph also holds
	// the KubeFlex and OCM API modules whose CRDs the stack installs.
	toolsModuleDir = "hack/tools/kubestellar"

	// kubeFlexModulePath is the Go module holding KubeFlex's CRDs
	// (ControlPlane) in config/crd/bases.
	kubeFlexModulePath = "github.com/kubestellar/kubeflex"

	// ocmAPIModulePath is the Go module holding OCM's ManagedCluster CRD in
	// cluster/v1.
	ocmAPIModulePath = "open-cluster-management.io/api"

	// noSumDBModules is what GONOSUMDB says when a module of the tools
	// module graph has to be downloaded, as for hack/tool.sh's build of the
	// controller-manager: kubeflex's checksums come from go.sum only.
	noSumDBModules = "github.com/kubestellar/kubeflex"
)

// ControllerManagerBinary returns the path of KubeStellar's controller-manager
// binary: $STAGER_KS_CONTROLLER_MANAGER when set, otherwise the path printed by
// `hack/tool.sh ks-controller-manager`, which builds the binary from the pinned
// module the first time (that takes minutes). It fails with a message naming
// `make test`, which prepares the binary, when neither works.
func ControllerManagerBinary() (string, error) {
	if path := os.Getenv(ControllerManagerEnvVar); path != "" {
		if err := checkExecutable(path); err != nil {
			return "", fmt.Errorf("$%s: %w; run the tests through `make test`, which builds KubeStellar's controller-manager and sets %s", ControllerManagerEnvVar, err, ControllerManagerEnvVar)
		}
		return path, nil
	}
	root, err := environment.RepoRoot()
	if err != nil {
		return "", fmt.Errorf("$%s is not set and the repository (for hack/tool.sh) was not found: %w; run the tests through `make test`, which builds KubeStellar's controller-manager and sets %s", ControllerManagerEnvVar, err, ControllerManagerEnvVar)
	}
	cmd := exec.Command(filepath.Join(root, "hack", "tool.sh"), "ks-controller-manager")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("$%s is not set and `hack/tool.sh ks-controller-manager` failed: %w: %s; run the tests through `make test`, which builds KubeStellar's controller-manager and sets %s", ControllerManagerEnvVar, err, strings.TrimSpace(stderr.String()), ControllerManagerEnvVar)
	}
	path := strings.TrimSpace(string(out))
	if err := checkExecutable(path); err != nil {
		return "", fmt.Errorf("`hack/tool.sh ks-controller-manager` printed an unusable path: %w; run the tests through `make test`", err)
	}
	return path, nil
}

// checkExecutable fails unless path names an executable regular file.
func checkExecutable(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

var moduleDirs struct {
	sync.Mutex
	dirs map[string]string
}

// toolsModuleDirOf returns the directory, in the module cache, of a module
// of the tools module's graph (at the version that graph selects), running
// `go list -m` in hack/tools/kubestellar and, when the module is not in the
// cache yet, `go mod download` there. Results are cached for the process.
func toolsModuleDirOf(module string) (string, error) {
	moduleDirs.Lock()
	defer moduleDirs.Unlock()
	if dir, ok := moduleDirs.dirs[module]; ok {
		return dir, nil
	}
	root, err := environment.RepoRoot()
	if err != nil {
		return "", err
	}
	toolsDir := filepath.Join(root, toolsModuleDir)
	goCmd := func(args ...string) (string, error) {
		cmd := exec.Command("go", args...)
		cmd.Dir = toolsDir
		cmd.Env = append(os.Environ(), "GONOSUMDB="+noSumDBModules)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("go %s in %s: %w: %s", strings.Join(args, " "), toolsDir, err, strings.TrimSpace(stderr.String()))
		}
		return strings.TrimSpace(string(out)), nil
	}
	dir, err := goCmd("list", "-m", "-f", "{{.Dir}}", module)
	if err != nil {
		return "", err
	}
	if dir == "" {
		if _, err := goCmd("mod", "download", module); err != nil {
			return "", err
		}
		if dir, err = goCmd("list", "-m", "-f", "{{.Dir}}", module); err != nil {
			return "", err
		}
		if dir == "" {
			return "", fmt.Errorf("module %s is not in the module cache even after `go mod download` in %s", module, toolsDir)
		}
	}
	if moduleDirs.dirs == nil {
		moduleDirs.dirs = map[string]string{}
	}
	moduleDirs.dirs[module] = dir
	return dir, nil
}

// existingDir returns filepath.Join(elem...) if it is a directory.
func existingDir(elem ...string) (string, error) {
	dir := filepath.Join(elem...)
	info, err := os.Stat(dir)
	if err != nil {
		return "", err
	}
	if !info.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	return dir, nil
}

// KubeFlexCRDDir returns KubeFlex's CRD directory (ControlPlane,
// PostCreateHook) in the module cache.
func KubeFlexCRDDir() (string, error) {
	mod, err := toolsModuleDirOf(kubeFlexModulePath)
	if err != nil {
		return "", err
	}
	return existingDir(mod, "config", "crd", "bases")
}

// managedClusterCRDDir returns the directory of OCM's ManagedCluster CRD
// (cluster.open-cluster-management.io/v1) in the module cache.
func managedClusterCRDDir() (string, error) {
	mod, err := toolsModuleDirOf(ocmAPIModulePath)
	if err != nil {
		return "", err
	}
	return existingDir(mod, "cluster", "v1")
}
