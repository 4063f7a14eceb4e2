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

package app

import (
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// TestWaveCell checks the WAVE column's cell for each place a policy can
// be in: no wave, released, held, held by a wave the stager cannot name,
// and a wave's name long enough to widen the table, which is cut.
func TestWaveCell(t *testing.T) {
	held := metav1.Condition{Type: v1alpha1.ConditionWaitingForWave, Status: metav1.ConditionTrue, Reason: "WaveConflict"}
	long := strings.Repeat("a", 63)
	for _, tt := range []struct {
		name       string
		wave       *v1alpha1.WaveStatus
		conditions []metav1.Condition
		want       string
	}{
		{"no wave", nil, nil, "-"},
		{"released", &v1alpha1.WaveStatus{Name: "regions", Position: "1/3", State: v1alpha1.WaveReleased}, nil, "regions 1/3"},
		{"held", &v1alpha1.WaveStatus{Name: "regions", Position: "2/3", State: v1alpha1.WaveHeld}, []metav1.Condition{held}, "regions 2/3 held"},
		{"held, the wave unknown", &v1alpha1.WaveStatus{State: v1alpha1.WaveHeld}, []metav1.Condition{held}, "held"},
		{"held by an older stager", nil, []metav1.Condition{held}, "held"},
		{"a long name", &v1alpha1.WaveStatus{Name: long, Position: "16/16", State: v1alpha1.WaveHeld}, nil, strings.Repeat("a", maxWaveCell-1) + "… 16/16 held"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &v1alpha1.StagedBindingPolicy{Status: v1alpha1.StagedBindingPolicyStatus{Wave: tt.wave, Conditions: tt.conditions}}
			got := waveCell(p)
			if got != tt.want {
				t.Errorf("cell %q, want %q", got, tt.want)
			}
			if n := utf8.RuneCountInString(got); n > maxWaveCell+len(" 999/999 held") {
				t.Errorf("cell %q is %d characters wide", got, n)
			}
		})
	}
}
