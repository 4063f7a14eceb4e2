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
	"io"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// markRegressed marks, in the STAGES column, a done stage whose
// regressionWatch found it unhealthy (its record's regressed).
const markRegressed = "!"

// printRegressionWatch prints a stage's regressionWatch and what its
// checks found: when it was last checked, and since when it is regressed.
func printRegressionWatch(w io.Writer, p *v1alpha1.StagedBindingPolicy, stage *v1alpha1.Stage, record *v1alpha1.StageStatus, now time.Time) {
	watch := stage.RegressionWatch
	if watch == nil {
		return
	}
	on := "its condition (or failureCondition)"
	if watch.OnFailureConditionOnly() {
		on = "its failureCondition"
	}
	if watch.RunsAnalyses() && len(stage.Analysis) > 0 {
		const analyses = "its analyses (one measurement each per check)"
		switch {
		case watch.OnFailureConditionOnly() && stage.FailureCondition == "",
			!watch.OnFailureConditionOnly() && stage.Condition == "" && stage.FailureCondition == "":
			on = analyses
		default:
			on += " and " + analyses
		}
	}
	onRegression := watch.OnRegression
	if onRegression == "" {
		onRegression = v1alpha1.RegressionNone
	}
	checked := "not checked yet"
	if record != nil && record.LastRegressionCheckTime != nil {
		checked = "last checked " + age(record.LastRegressionCheckTime.Time, now) + " ago"
	}
	fprintf(w, "Regression watch:\tevery %s once done, on %s; onRegression %s; %s\n", watch.CheckInterval(), on, onRegression, checked)
	if record != nil && record.Regressed != nil {
		fprintf(w, "Regressed:\t%s ago: %s\n", age(record.Regressed.Time.Time, now), record.Regressed.Message)
	}
	// printFailureGates says it for a stage with a failureCondition or analyses.
	if f := p.Status.Failure; f != nil && f.Stage == stage.Name && f.Reason == v1alpha1.ReasonStageRegressed &&
		stage.FailureCondition == "" && len(stage.Analysis) == 0 {
		fprintf(w, "Failed:\t%s, %s ago (%s): %s\n", f.Reason, age(f.Time.Time, now), f.Action, f.Message)
	}
}

// withRegression is a policy's message in get -o wide: the Progressing
// condition's, and the StageRegressed condition's after it.
func withRegression(p *v1alpha1.StagedBindingPolicy, message string) string {
	c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionStageRegressed)
	if c == nil || c.Status != metav1.ConditionTrue {
		return message
	}
	if message == "" {
		return c.Message
	}
	return message + "; " + c.Message
}
