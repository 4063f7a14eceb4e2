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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// The gauges of what a policy waits for: a wave, a change window, a
// freeze. Each is its condition's, read from the policy's status at
// scrape time.
var (
	waitingDesc = prometheus.NewDesc("stager_policy_waiting",
		"1 while the policy's condition named by reason (WaitingForWave, WaitingForWindow, Frozen) is True, else 0: what holds the policy's next start.",
		[]string{LabelSpace, LabelPolicy, LabelReason}, nil)
	nextWindowDesc = prometheus.NewDesc("stager_policy_next_window_time_seconds",
		"Unix time at which the change window opens that the policy's waiting stage waits for (status.window.opensAt); absent when no stage waits for one.",
		[]string{LabelSpace, LabelPolicy}, nil)
)

// waitingReasons are the conditions stager_policy_waiting reports, each
// with a series per policy.
var waitingReasons = []string{v1alpha1.ConditionWaitingForWave, v1alpha1.ConditionWaitingForWindow, v1alpha1.ConditionFrozen}

// waitingOf returns a policy's stager_policy_waiting values by reason, and
// its next window's opening.
func waitingOf(policy *v1alpha1.StagedBindingPolicy) ([]labelled, gauge) {
	out := make([]labelled, 0, len(waitingReasons))
	for _, reason := range waitingReasons {
		value := 0.0
		if meta.IsStatusConditionPresentAndEqual(policy.Status.Conditions, reason, metav1.ConditionTrue) {
			value = 1
		}
		out = append(out, labelled{labels: []string{reason}, value: value})
	}
	var next gauge
	if w := policy.Status.Window; w != nil && !w.OpensAt.IsZero() {
		next = at(float64(w.OpensAt.Unix()))
	}
	return out, next
}
