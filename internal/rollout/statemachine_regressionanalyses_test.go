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

package rollout_test

import (
	"pgregory.net/rapid"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// The analyses of the regression watch in the state-machine test
// (regressionWatch.analyses, docs/proposals/regression.md): the model
// measures them as the reconciler does, after a plan without them, for
// the checks that plan made, and plans again.

// drawRegressionAnalyses asks a stage's regressionWatch to run its
// analyses, sometimes, when it has both.
func drawRegressionAnalyses(t *rapid.T, s *v1alpha1.Stage) {
	if s.RegressionWatch != nil && len(s.Analysis) > 0 {
		s.RegressionWatch.Analyses = rapid.Bool().Draw(t, "regression analyses")
	}
}

// measureWatched is the reconciler's second plan: the analyses of the
// done stages that action (planned on snap) checked, measured once each
// with the model's metric into snap, then planned again. It checks that a
// query is made only for a check the final plan records, of a stage
// whose watch runs analyses, once per analysis, never a dryRun one.
func (m *machine) measureWatched(t *rapid.T, snap *rollout.Snapshot, action rollout.Action) rollout.Action {
	watched := rollout.RegressionAnalyses(snap.Policy, action.RegressionChecks)
	if len(watched) == 0 {
		return action
	}
	queried := map[string]int{}
	for _, w := range watched {
		for _, a := range w.Analyses {
			queried[w.Stage+"/"+a.Name]++
			snap.WatchedMeasurements = append(snap.WatchedMeasurements, rollout.Measurement{Stage: w.Stage, Analysis: a.Name,
				Time: snap.Now, Values: []float64{m.w.metric}})
		}
	}
	final := rollout.Plan(snap, m.w.engine, m.planOptions()...)
	for _, w := range watched {
		s := snap.Policy.Spec.StageNamed(w.Stage)
		if s == nil || !s.RegressionWatch.RunsAnalyses() {
			m.fatalf(t, "regression analyses: stage %q's analyses queried, its watch does not run them", w.Stage)
		}
		var record *v1alpha1.StageStatus
		if final.Status != nil {
			record = final.Status.StageNamed(w.Stage)
		}
		if record == nil || record.LastRegressionCheckTime == nil || !record.LastRegressionCheckTime.Equal(&snap.Now) {
			m.fatalf(t, "regression analyses: stage %q's analyses queried, and the plan (%s: %s) records no check of it now", w.Stage, final.Type, final.Why)
		}
		for _, a := range w.Analyses {
			if a.DryRun || queried[w.Stage+"/"+a.Name] != 1 {
				m.fatalf(t, "regression analyses: analysis %q of stage %q queried %d times (dryRun %v)", a.Name, w.Stage, queried[w.Stage+"/"+a.Name], a.DryRun)
			}
		}
	}
	for _, c := range final.RegressionChecks {
		seen["regression analyses: "+c.Result]++
	}
	return final
}
