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
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var promotions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "stager_promotions_total",
	Help: "Stages promoted past their gates by a break-glass promotion (spec.promotion), by the stage promoted.",
}, []string{LabelSpace, LabelPolicy, LabelStage})

func init() {
	ctrlmetrics.Registry.MustRegister(promotions)
	collectors = append(collectors, promotions)
}

// StagePromoted records that a stage of a policy was promoted past its
// gates: the status write that records it succeeded.
func (s *Space) StagePromoted(policy, stage string) {
	promotions.WithLabelValues(s.name, policy, stage).Inc()
}
