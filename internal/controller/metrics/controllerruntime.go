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

package metrics

import (
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// controllerRuntimeMetric is the shape of one of the metrics controller-runtime
// keeps per controller: enough of its descriptor (name, help and labels) for
// its registry to hand back the registered vector.
type controllerRuntimeMetric struct {
	name, help string
	labels     []string
}

// controllerRuntimeMetrics are controller-runtime's per-controller metrics:
// those of its controllers (pkg/internal/controller/metrics) and of their
// work queues (pkg/internal/metrics/workqueue.go), all labelled
// "controller". Their vectors are not exported, and a space's controller
// leaves about 90 series in them; TestControllerRuntimeMetricsAreFound
// fails when an upgrade changes one.
var controllerRuntimeMetrics = []controllerRuntimeMetric{
	{"controller_runtime_reconcile_total", "Total number of reconciliations per controller", []string{"controller", "result"}},
	{"controller_runtime_reconcile_errors_total", "Total number of reconciliation errors per controller", []string{"controller"}},
	{"controller_runtime_terminal_reconcile_errors_total", "Total number of terminal reconciliation errors per controller", []string{"controller"}},
	{"controller_runtime_reconcile_panics_total", "Total number of reconciliation panics per controller", []string{"controller"}},
	{"controller_runtime_reconcile_time_seconds", "Length of time per reconciliation per controller", []string{"controller"}},
	{"controller_runtime_max_concurrent_reconciles", "Maximum number of concurrent reconciles per controller", []string{"controller"}},
	{"controller_runtime_active_workers", "Number of currently used workers per controller", []string{"controller"}},
	{"controller_runtime_reconcile_timeouts_total", "Total number of reconciliation timeouts per controller", []string{"controller"}},
	{"workqueue_depth", "Current depth of workqueue by workqueue and priority", []string{"name", "controller", "priority"}},
	{"workqueue_adds_total", "Total number of adds handled by workqueue", []string{"name", "controller"}},
	{"workqueue_queue_duration_seconds", "How long in seconds an item stays in workqueue before being requested", []string{"name", "controller"}},
	{"workqueue_work_duration_seconds", "How long in seconds processing an item from workqueue takes.", []string{"name", "controller"}},
	{"workqueue_unfinished_work_seconds", "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. " +
		"Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
		[]string{"name", "controller"}},
	{"workqueue_longest_running_processor_seconds", "How many seconds has the longest running processor for workqueue been running.",
		[]string{"name", "controller"}},
	{"workqueue_retries_total", "Total number of items added to the workqueue with a non-zero delay (rate-limited requeues, explicit RequeueAfter or AddAfter calls)",
		[]string{"name", "controller"}},
}

// partialDeleter is what every metric vector offers.
type partialDeleter interface {
	DeletePartialMatch(prometheus.Labels) int
}

// probe is a collector that only describes a metric: registering it where
// the metric is registered fails with the registered collector.
type probe struct{ desc *prometheus.Desc }

func (p probe) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }
func (probe) Collect(chan<- prometheus.Metric)      {}

// controllerRuntimeVectors are the vectors of controllerRuntimeMetrics in
// controller-runtime's registry, found once: Prometheus hands back the
// collector already registered for a descriptor (AlreadyRegisteredError).
var controllerRuntimeVectors = sync.OnceValues(func() ([]partialDeleter, error) {
	return findVectors(ctrlmetrics.Registry, controllerRuntimeMetrics)
})

// findVectors returns the vectors registered in reg for metrics.
func findVectors(reg prometheus.Registerer, metrics []controllerRuntimeMetric) ([]partialDeleter, error) {
	var vectors []partialDeleter
	for _, m := range metrics {
		p := probe{desc: prometheus.NewDesc(m.name, m.help, m.labels, nil)}
		err := reg.Register(p)
		if err == nil {
			reg.Unregister(p)
			return nil, fmt.Errorf("controller-runtime registers no metric %s", m.name)
		}
		var registered prometheus.AlreadyRegisteredError
		if !errors.As(err, &registered) {
			return nil, fmt.Errorf("finding controller-runtime's metric %s: %w", m.name, err)
		}
		vector, ok := registered.ExistingCollector.(partialDeleter)
		if !ok {
			return nil, fmt.Errorf("controller-runtime's metric %s is a %T, not a vector", m.name, registered.ExistingCollector)
		}
		vectors = append(vectors, vector)
	}
	return vectors, nil
}

// ForgetController deletes the series controller-runtime keeps of the
// controller named name, of its reconciles and its work queue. A space's
// controller calls it once its workers have stopped, so that a space that
// goes away leaves none of them behind.
func ForgetController(name string) error {
	vectors, err := controllerRuntimeVectors()
	if err != nil {
		return err
	}
	labels := prometheus.Labels{"controller": name}
	for _, v := range vectors {
		v.DeletePartialMatch(labels)
	}
	return nil
}
