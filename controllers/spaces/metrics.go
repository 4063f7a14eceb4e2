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

package spaces

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// readyGauge is 1 for a ready space and 0 for one that is not.
var readyGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "stager_space_ready",
	Help: "Whether an engaged space is ready (1) or not (0): it serves KubeStellar's and the stager's APIs, its caches are synced and its API server answers.",
}, []string{"space"})

func init() {
	metrics.Registry.MustRegister(readyGauge)
}

// RecordReadiness keeps the stager_space_ready gauge in line with a space's
// state, and deletes the space's series when it is disengaged. It is meant
// as, or to be called from, Options.OnChange.
func RecordReadiness(s State) {
	if s.Reason == ReasonDisengaged {
		readyGauge.DeleteLabelValues(s.Name)
		return
	}
	v := 0.0
	if s.Ready {
		v = 1
	}
	readyGauge.WithLabelValues(s.Name).Set(v)
}
