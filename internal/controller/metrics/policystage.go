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
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// PolicyStageDurationName is the name of the per-policy stage duration
// histogram, which `kubectl stager --prometheus` reads for its forecast.
const PolicyStageDurationName = "stager_policy_stage_duration_seconds"

// PolicyStageBuckets are the upper bounds of the per-policy stage duration
// histogram: few, since it has a series per bucket for every stage of
// every policy (docs/metrics.md), from 30 s to 12 h, each about twice the
// one before.
var PolicyStageBuckets = []float64{30, 60, 120, 300, 600, 1200, 1800, 3600, 3 * 3600, 12 * 3600}

var policyStageDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    PolicyStageDurationName,
	Help:    "Time each stage of a policy was active until it completed, less the time the rollout was suspended in it, as status.history records it; promoted stages are not observed.",
	Buckets: PolicyStageBuckets,
}, []string{LabelSpace, LabelPolicy, LabelStage})

func init() {
	ctrlmetrics.Registry.MustRegister(policyStageDuration)
	collectors = append(collectors, policyStageDuration)
}

// PolicyStages creates the per-policy stage duration series of each of
// the policy's stages at zero, if they do not exist yet, so that
// increase() sees a stage's first completion as an increase: a series
// born at 1 has no earlier sample to increase from.
func (s *Space) PolicyStages(policy string, stages []string) {
	for _, stage := range stages {
		policyStageDuration.WithLabelValues(s.name, policy, stage)
	}
}

// StageDone records how long a stage of a policy was active until it
// completed, less its suspended time (the record's duration), for the
// forecast. A promoted stage is not done this way and is not recorded.
func (s *Space) StageDone(policy, stage string, active time.Duration) {
	policyStageDuration.WithLabelValues(s.name, policy, stage).Observe(max(active, 0).Seconds())
}
