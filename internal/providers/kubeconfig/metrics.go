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

package kubeconfig

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Verdicts is a gauge with one series per object the stager refuses to make
// a space of, labelled with why; an object's series goes once it is
// accepted or gone. The Auditor's refused Secrets and the kubeflex
// provider's unusable ControlPlanes are both Verdicts.
type Verdicts struct {
	vec    *prometheus.GaugeVec
	object string
}

// NewVerdicts returns a Verdicts gauge named name, whose objects are
// labelled objectLabel and whose reasons are labelled "reason".
func NewVerdicts(name, help, objectLabel string) Verdicts {
	vec := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{objectLabel, "reason"})
	return Verdicts{vec: vec, object: objectLabel}
}

// Refused records why an object is refused, replacing an earlier reason.
func (v Verdicts) Refused(object, reason string) {
	v.vec.DeletePartialMatch(prometheus.Labels{v.object: object})
	v.vec.WithLabelValues(object, reason).Set(1)
}

// Accepted forgets an object's refusal.
func (v Verdicts) Accepted(object string) {
	v.vec.DeletePartialMatch(prometheus.Labels{v.object: object})
}

// Collector returns the gauge, to register.
func (v Verdicts) Collector() prometheus.Collector {
	return v.vec
}

// refusedSecrets is the Auditor's metric: one series per refused kubeconfig
// Secret, gone once the Secret is accepted or deleted. docs/metrics.md
// documents it; the StagerKubeconfigSecretRefused alert fires on it.
var refusedSecrets = NewVerdicts("stager_kubeconfig_secret_refused",
	"1 for every kubeconfig Secret the stager refuses to make a space of, with the reason of its first offending field (Exec, FileReference, InsecureTLS, Malformed, ...).",
	"secret")

func init() {
	ctrlmetrics.Registry.MustRegister(MetricCollectors()...)
}

// MetricCollectors returns the Auditor's metrics, registered with
// controller-runtime's registry.
func MetricCollectors() []prometheus.Collector {
	return []prometheus.Collector{refusedSecrets.Collector()}
}
