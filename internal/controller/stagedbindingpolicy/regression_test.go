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

package stagedbindingpolicy

import (
	"testing"

	"github.com/kubestellar/workload-stager/internal/controller/metrics"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// TestRegressionResultsAreTheMetricsResults: the reconciler counts Plan's
// regression checks under their result, which must be one the metric
// creates at zero when a space is engaged.
func TestRegressionResultsAreTheMetricsResults(t *testing.T) {
	for plan, metric := range map[string]string{
		rollout.RegressionHealthy:      metrics.RegressionHealthy,
		rollout.RegressionRegressed:    metrics.RegressionRegressed,
		rollout.RegressionInconclusive: metrics.RegressionInconclusive,
	} {
		if plan != metric {
			t.Errorf("Plan's result %q is counted as %q", plan, metric)
		}
	}
}
