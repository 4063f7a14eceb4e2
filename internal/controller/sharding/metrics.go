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

package sharding

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The results a fence's renewal is counted under.
const (
	renewalRenewed    = "renewed"
	renewalUnanswered = "unanswered"
	renewalFailed     = "failed"
	renewalThrottled  = "throttled"
)

// renewalDuration times the fences' renewals, one series per result and
// not per space, so that a fleet of many spaces keeps four. A tenure ends
// three quarters of the fence's duration after the last renewal answered
// was sent, and the space's changes are refused from then on: this is
// where an operator sees renewals come close to that (docs/metrics.md).
var renewalDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "stager_fence_renewal_duration_seconds",
	Help:    "Time from the send of a space's fence Lease renewal to its answer or its give-up, by result: renewed, throttled (answered 429), unanswered (no answer, a broken connection or 5xx), both keeping the fence, a 429 or 5xx tried again within a quarter period; failed (the fence is lost).",
	Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 45, 60, 90, 120},
}, []string{"result"})

// observeRenewal times a renewal in renewalDuration.
func observeRenewal(result string, took time.Duration) {
	renewalDuration.WithLabelValues(result).Observe(took.Seconds())
}

func init() {
	ctrlmetrics.Registry.MustRegister(MetricCollectors()...)
}

// MetricCollectors returns the sharding metrics, registered with
// controller-runtime's registry.
func MetricCollectors() []prometheus.Collector {
	return []prometheus.Collector{renewalDuration}
}
