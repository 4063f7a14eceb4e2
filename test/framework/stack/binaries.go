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
	"github.com/kubestellar/workload-stager/test/framework/process"
)

const (
	// ControllerManagerEnvVar names the environment variable that holds the
	// path of KubeStellar's controller-manager binary; `make test` sets it.
	ControllerManagerEnvVar = "STAGER_KS_CONTROLLER_MANAGER"

	// toolsModule is the tools module (hack/tools/kubestellar) that pins
	// KubeStellar's controller-manager; its module graph also holds the
	// KubeFlex and OCM API modules whose CRDs the stack installs.
	toolsModule = "kubestellar"

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
// `hack/tool.sh ks-controller-manager` (see process.Tool).
func ControllerManagerBinary() (string, error) {
	return process.Tool(ControllerManagerEnvVar, "ks-controller-manager")
}

// toolsModuleDirOf returns the directory, in the module cache, of a module
// of hack/tools/kubestellar's graph (see process.ModuleDir).
func toolsModuleDirOf(module string) (string, error) {
	return process.ModuleDir(toolsModule, module, noSumDBModules)
}

// KubeFlexCRDDir returns KubeFlex's CRD directory (ControlPlane,
// PostCreateHook) in the module cache.
func KubeFlexCRDDir() (string, error) {
	mod, err := toolsModuleDirOf(kubeFlexModulePath)
	if err != nil {
		return "", err
	}
	return process.ExistingDir(mod, "config", "crd", "bases")
}

// managedClusterCRDDir returns the directory of OCM's ManagedCluster CRD
// (cluster.open-cluster-management.io/v1) in the module cache.
func managedClusterCRDDir() (string, error) {
	mod, err := toolsModuleDirOf(ocmAPIModulePath)
	if err != nil {
		return "", err
	}
	return process.ExistingDir(mod, "cluster", "v1")
}
