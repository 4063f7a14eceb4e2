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

package kubeconfig

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// refusedSecrets is the Auditor's metric: one series per refused kubeconfig
// Secret, gone once the Secret is accepted or deleted. docs/metrics.md
// documents it; the StagerKubeconfigSecretRefused alert fires on it.
var refusedSecrets = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "stager_kubeconfig_secret_refused",
	Help: "1 for every kubeconfig Secret the stager refuses to make a space of, with the reason of its first offending field (Exec, FileReference, InsecureTLS, Malformed, ...).",
}, []string{"secret", "reason"})

func init() {
	ctrlmetrics.Registry.MustRegister(MetricCollectors()...)
}

// MetricCollectors returns the Auditor's metrics, registered with
// controller-runtime's registry.
func MetricCollectors() []prometheus.Collector {
	return []prometheus.Collector{refusedSecrets}
}

// recordRefused records a Secret's refusal, with the reason of its first
// offending field.
func recordRefused(secret, reason string) {
	refusedSecrets.DeletePartialMatch(prometheus.Labels{"secret": secret})
	refusedSecrets.WithLabelValues(secret, reason).Set(1)
}

// recordAccepted forgets a Secret's refusal.
func recordAccepted(secret string) {
	refusedSecrets.DeletePartialMatch(prometheus.Labels{"secret": secret})
}
