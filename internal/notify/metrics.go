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

package notify

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The results of stager_notifications_total.
const (
	// ResultDelivered is a notice the receiver took (2xx).
	ResultDelivered = "delivered"
	// ResultFailed is a post that failed and is tried again.
	ResultFailed = "failed"
	// ResultGivenUp is a notice given up: refused, or past the bound of
	// attempts or time.
	ResultGivenUp = "given_up"
	// ResultQueueFull is an offer refused because the queue was full; the
	// reconciler offers it again later.
	ResultQueueFull = "queue_full"
)

// dispatcherMetrics are the Dispatcher's series.
type dispatcherMetrics struct {
	total *prometheus.CounterVec
	queue *prometheus.GaugeVec
}

// defaultMetrics are registered with controller-runtime's registry.
var defaultMetrics = &dispatcherMetrics{
	total: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stager_notifications_total",
		Help: "Notifications of rollout events to NotificationDestinations, by space, destination and result (delivered; failed: a post to be tried again; given_up; queue_full: an offer the queue refused, offered again later).",
	}, []string{"space", "destination", "result"}),
	queue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stager_notification_queue_length",
		Help: "Notifications queued for a NotificationDestination, by space and destination.",
	}, []string{"space", "destination"}),
}

func init() {
	ctrlmetrics.Registry.MustRegister(defaultMetrics.total, defaultMetrics.queue)
}

// result counts one result.
func (m *dispatcherMetrics) result(space, destination, result string) {
	m.total.WithLabelValues(space, destination, result).Inc()
}

// queueLength sets the length of a queue.
func (m *dispatcherMetrics) queueLength(space, destination string, n int) {
	m.queue.WithLabelValues(space, destination).Set(float64(n))
}

// forgetQueue drops the series of a queue gone idle.
func (m *dispatcherMetrics) forgetQueue(space, destination string) {
	m.queue.DeleteLabelValues(space, destination)
}
