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
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	// Registers controller-runtime's controller and work queue metrics, as
	// the stager's controllers do.
	_ "sigs.k8s.io/controller-runtime/pkg/controller"
)

// TestControllerRuntimeMetricsAreFound: every per-controller metric of
// controller-runtime is found in its registry, as ForgetController needs.
// It fails when an upgrade renames one or changes its help or labels.
func TestControllerRuntimeMetricsAreFound(t *testing.T) {
	vectors, err := controllerRuntimeVectors()
	if err != nil {
		t.Fatalf("finding controller-runtime's metrics: %v", err)
	}
	if len(vectors) != len(controllerRuntimeMetrics) {
		t.Errorf("found %d vectors for %d metrics", len(vectors), len(controllerRuntimeMetrics))
	}
	if err := ForgetController("no-such-controller"); err != nil {
		t.Errorf("ForgetController: %v", err)
	}
}

// TestFindVectorsRefusesAMetricNotRegistered: a metric the registry does not
// hold is an error, and the probe is not left registered in its place.
func TestFindVectorsRefusesAMetricNotRegistered(t *testing.T) {
	reg := prometheus.NewRegistry()
	missing := controllerRuntimeMetric{name: "absent_total", help: "Not registered.", labels: []string{"controller"}}
	if _, err := findVectors(reg, []controllerRuntimeMetric{missing}); err == nil {
		t.Fatal("findVectors found a metric the registry does not hold")
	}
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: missing.name, Help: missing.help}, missing.labels)
	if err := reg.Register(vec); err != nil {
		t.Errorf("registering the metric after the search: %v (the probe was left registered)", err)
	}
	if _, err := findVectors(reg, []controllerRuntimeMetric{missing}); err != nil {
		t.Errorf("findVectors once the metric is registered: %v", err)
	}
	changed := missing
	changed.help = "Another help."
	if _, err := findVectors(reg, []controllerRuntimeMetric{changed}); err == nil {
		t.Error("findVectors found a metric whose help differs")
	}
}
