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
	"time"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// TestPrintRegressionWatchSaysWhatItJudges checks the line explain prints
// for a stage's regressionWatch names what its checks judge: the
// expressions, and the analyses when the watch runs them.
func TestPrintRegressionWatchSaysWhatItJudges(t *testing.T) {
	analysis := []v1alpha1.Analysis{{Name: "errors", Provider: "prom", Query: "q", SuccessCondition: "true"}}
	for _, tc := range []struct {
		name  string
		stage v1alpha1.Stage
		want  string
	}{
		{"condition", v1alpha1.Stage{Name: "dev", Condition: "true", Analysis: analysis, RegressionWatch: &v1alpha1.RegressionWatch{}},
			"on its condition (or failureCondition);"},
		{"condition and analyses", v1alpha1.Stage{Name: "dev", Condition: "true", Analysis: analysis,
			RegressionWatch: &v1alpha1.RegressionWatch{Analyses: true}},
			"on its condition (or failureCondition) and its analyses (one measurement each per check);"},
		{"analyses alone", v1alpha1.Stage{Name: "dev", Analysis: analysis, RegressionWatch: &v1alpha1.RegressionWatch{Analyses: true}},
			"on its analyses (one measurement each per check);"},
		{"failureCondition judge, analyses alone", v1alpha1.Stage{Name: "dev", Condition: "true", Analysis: analysis,
			RegressionWatch: &v1alpha1.RegressionWatch{Analyses: true, Judge: v1alpha1.RegressionOnFailureCondition}},
			"on its analyses (one measurement each per check);"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			printRegressionWatch(&b, &v1alpha1.StagedBindingPolicy{}, &tc.stage, nil, time.Now())
			if !strings.Contains(b.String(), tc.want) {
				t.Errorf("printed %q, want it to say %q", b.String(), tc.want)
			}
		})
	}
}
