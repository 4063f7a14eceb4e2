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

package kubeflex

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubestellar/workload-stager/internal/providers/kubeconfig"
)

// unusableControlPlanes is the provider's metric: one series per selected
// ControlPlane that cannot be a space, gone once it is one or is no longer
// selected. docs/metrics.md documents it.
var unusableControlPlanes = kubeconfig.NewVerdicts("stager_kubeflex_controlplane_unusable",
	"1 for every selected KubeFlex ControlPlane the stager cannot make a space of, with the reason (NotReady, NoSecretRef, SecretUnreadable, NoKubeconfig, SecretNamespaceNotAllowed, or the kubeconfig guard's: Exec, FileReference, InsecureTLS, ...).",
	"controlplane")

func init() {
	ctrlmetrics.Registry.MustRegister(MetricCollectors()...)
}

// MetricCollectors returns the provider's metrics, registered with
// controller-runtime's registry.
func MetricCollectors() []prometheus.Collector {
	return []prometheus.Collector{unusableControlPlanes.Collector()}
}
