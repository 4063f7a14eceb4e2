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

package spaces

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The Runner's metrics: one series per engaged space, labelled space, gone
// when the space is disengaged. docs/metrics.md documents them.
var (
	spaceEngaged = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stager_space_engaged",
		Help: "1 for every space the stager's providers have engaged.",
	}, []string{"space"})

	spaceReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stager_space_ready",
		Help: "Whether an engaged space is ready (1) or not (0): it serves KubeStellar's and the stager's APIs, its caches are synced and its API server answers.",
	}, []string{"space"})

	spaceCacheBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stager_space_cache_bytes",
		Help: "The estimated bytes of the objects a space's cache holds (their JSON, plus 1 KiB each), which --space-cache-max-bytes bounds; absent for spaces whose caches the provider shares (kcp).",
	}, []string{"space"})

	spaceCacheOverLimit = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stager_space_cache_over_limit",
		Help: "1 while a space is not served because its cache went over --space-cache-max-bytes, else 0.",
	}, []string{"space"})

	spaceOwner = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stager_space_owner",
		Help: "1 for every space this replica serves, labelled with the replica: summed over the replicas, which replica serves which space.",
	}, []string{"space", "replica"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(MetricCollectors()...)
}

// MetricCollectors returns the Runner's metrics, registered with
// controller-runtime's registry.
func MetricCollectors() []prometheus.Collector {
	return []prometheus.Collector{spaceEngaged, spaceReady, spaceOwner, spaceCacheBytes, spaceCacheOverLimit}
}

// recordState keeps a space's series in line with its state; replica is
// the replica serving it.
func recordState(s State, replica string) {
	if s.Reason == ReasonDisengaged {
		spaceEngaged.DeleteLabelValues(s.Name)
		spaceReady.DeleteLabelValues(s.Name)
		spaceOwner.DeletePartialMatch(prometheus.Labels{"space": s.Name})
		spaceCacheBytes.DeleteLabelValues(s.Name)
		spaceCacheOverLimit.DeleteLabelValues(s.Name)
		return
	}
	over := 0.0
	if s.Reason == ReasonCacheOverLimit {
		over = 1
	}
	spaceCacheOverLimit.WithLabelValues(s.Name).Set(over)
	spaceEngaged.WithLabelValues(s.Name).Set(1)
	spaceOwner.WithLabelValues(s.Name, replica).Set(1)
	ready := 0.0
	if s.Ready {
		ready = 1
	}
	spaceReady.WithLabelValues(s.Name).Set(ready)
}
