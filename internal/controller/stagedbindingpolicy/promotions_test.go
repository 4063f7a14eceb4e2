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
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// TestPromotedStages: a status write counts the stages whose record gains
// a promotion, or a promotion of another time; a record kept as it was
// counts no more.
func TestPromotedStages(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	status := func(promoted map[string]metav1.Time) *v1alpha1.StagedBindingPolicyStatus {
		s := &v1alpha1.StagedBindingPolicyStatus{}
		for _, name := range []string{"dev", "test", "prod"} {
			r := v1alpha1.StageStatus{Name: name}
			if at, ok := promoted[name]; ok {
				r.Promotion = &v1alpha1.StagePromotion{By: "alice", Time: at}
			}
			s.Stages = append(s.Stages, r)
		}
		return s
	}
	tests := []struct {
		name          string
		before, after map[string]metav1.Time
		want          []string
	}{
		{name: "none", want: nil},
		{name: "dev promoted", after: map[string]metav1.Time{"dev": t0}, want: []string{"dev"}},
		{name: "dev kept, test promoted", before: map[string]metav1.Time{"dev": t0},
			after: map[string]metav1.Time{"dev": t0, "test": t1}, want: []string{"test"}},
		{name: "dev promoted again, in another rollout", before: map[string]metav1.Time{"dev": t0},
			after: map[string]metav1.Time{"dev": t1}, want: []string{"dev"}},
		{name: "a record dropped", before: map[string]metav1.Time{"dev": t0}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PromotedStages(status(tt.before), status(tt.after)); !slices.Equal(got, tt.want) {
				t.Errorf("PromotedStages = %v, want %v", got, tt.want)
			}
		})
	}
}
