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

// Package dataplane runs what lies after KubeStellar's controller-manager,
// out of real programs built from pinned modules by hack/tool.sh:
//
//   - KubeStellar v0.30.0's OCM transport controller, one per WDS, which
//     turns Bindings into ManifestWorks in the ITS (StartTransport);
//   - WECs whose workloads really run (StartWEC): each a kube-apiserver
//     with its etcd, kube-controller-manager and kube-scheduler from
//     Kubernetes v1.36.3, kwok v0.8.0 faking one node and moving pods through
//     kwok's stages, and OCM v1.0.0's work agent applying the cluster's
//     ManifestWorks from the ITS;
//   - the Kubernetes garbage collector for spaces that have none (envtest
//     runs no kube-controller-manager): KubeStellar relies on it to delete a
//     deleted BindingPolicy's Binding (StartGarbageCollector).
//
// One part is a stand-in: KubeStellar's OCM status add-on
// (github.com/kubestellar/ocm-status-addon), whose module the module proxy
// here does not serve. StatusAgent does its job from the real parts: it reads
// the AppliedManifestWorks the work agent writes in a WEC and the objects
// they list, and writes their status into WorkStatuses in the ITS, named and
// labelled as the add-on v0.2.0-rc17 does.
//
// Clusters are registered the simplest real way: the stack creates their
// ManagedCluster objects and namespaces in the ITS, and each work agent gets
// the ITS's kubeconfig as its hub kubeconfig. OCM's registration agent and
// hub controllers do not run.
package dataplane

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/process"
)

const (
	// KwokEnvVar holds the path of kwok; `make test` sets it.
	KwokEnvVar = "STAGER_KWOK"
	// WorkAgentEnvVar holds the path of OCM's work agent; `make test` sets it.
	WorkAgentEnvVar = "STAGER_OCM_WORK"
	// TransportEnvVar holds the path of KubeStellar's OCM transport
	// controller; `make test` sets it.
	TransportEnvVar = "STAGER_KS_TRANSPORT_CONTROLLER"

	// ocmToolsModule pins OCM; its module graph holds OCM's API module,
	// with the ManifestWork and AppliedManifestWork CRDs.
	ocmToolsModule = "ocm"
	ocmNoSumDB     = "sigs.k8s.io/about-api"
	ocmAPIModule   = "open-cluster-management.io/api"

	// kwokToolsModule pins kwok; its module holds kwok's Stage CRD and
	// stages.
	kwokToolsModule = "kwok"
	kwokModule      = "sigs.k8s.io/kwok"
)

// Binaries are the programs of the data plane.
type Binaries struct {
	KubeControllerManager string
	KubeScheduler         string
	Kwok                  string
	WorkAgent             string
	Transport             string
}

// FindBinaries returns the data plane's programs: kube-controller-manager and
// kube-scheduler from $KUBEBUILDER_ASSETS (hack/tool.sh envtest builds them
// with kube-apiserver), the others from their environment variables or
// hack/tool.sh (see process.Tool).
func FindBinaries() (Binaries, error) {
	assets, err := environment.AssetsDir()
	if err != nil {
		return Binaries{}, fmt.Errorf("locating kube-controller-manager and kube-scheduler: %w", err)
	}
	b := Binaries{
		KubeControllerManager: filepath.Join(assets, "kube-controller-manager"),
		KubeScheduler:         filepath.Join(assets, "kube-scheduler"),
	}
	for _, path := range []string{b.KubeControllerManager, b.KubeScheduler} {
		if err := process.CheckExecutable(path); err != nil {
			return Binaries{}, fmt.Errorf("%w; $KUBEBUILDER_ASSETS must name the directory `hack/tool.sh envtest` builds (with it unset), which holds it beside kube-apiserver", err)
		}
	}
	if b.Kwok, err = process.Tool(KwokEnvVar, "kwok"); err != nil {
		return Binaries{}, err
	}
	if b.WorkAgent, err = process.Tool(WorkAgentEnvVar, "ocm-work"); err != nil {
		return Binaries{}, err
	}
	if b.Transport, err = process.Tool(TransportEnvVar, "ks-transport-controller"); err != nil {
		return Binaries{}, err
	}
	return b, nil
}

// WorkCRDDir returns the directory of OCM's ManifestWork and
// AppliedManifestWork CRDs (work.open-cluster-management.io/v1): the ITS
// needs the first, every WEC the second.
func WorkCRDDir() (string, error) {
	mod, err := process.ModuleDir(ocmToolsModule, ocmAPIModule, ocmNoSumDB)
	if err != nil {
		return "", fmt.Errorf("locating OCM's API module: %w", err)
	}
	return process.ExistingDir(mod, "work", "v1")
}

// kwokDir returns kwok's module directory.
func kwokDir() (string, error) {
	mod, err := process.ModuleDir(kwokToolsModule, kwokModule, "")
	if err != nil {
		return "", fmt.Errorf("locating kwok's module: %w", err)
	}
	return mod, nil
}

// writeFile writes data to dir/name (mode 0600) and returns the path.
func writeFile(dir, name string, data []byte) (string, error) {
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}
