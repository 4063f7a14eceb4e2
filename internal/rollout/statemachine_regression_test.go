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
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// The regression watch of the state-machine test
// (docs/proposals/regression.md): a stage may keep judging itself once
// done; the model's WECs turn unhealthy (wecHealth, activeWECFails) and
// time passes as the other actions make it.

// drawRegressionWatch gives a stage a regressionWatch, or none.
func drawRegressionWatch(t *rapid.T, s *v1alpha1.Stage) {
	if rapid.IntRange(0, 2).Draw(t, "regressionWatch") == 0 {
		return
	}
	w := &v1alpha1.RegressionWatch{
		Interval:     &metav1.Duration{Duration: rapid.SampledFrom([]time.Duration{time.Minute, 5 * time.Minute}).Draw(t, "regression interval")},
		OnRegression: rapid.SampledFrom([]v1alpha1.RegressionAction{"", v1alpha1.RegressionNone, v1alpha1.RegressionAbort}).Draw(t, "onRegression"),
	}
	if s.FailureCondition != "" && rapid.Bool().Draw(t, "regression on failureCondition") {
		w.Judge = v1alpha1.RegressionOnFailureCondition
	}
	s.RegressionWatch = w
}

// checkRegressionStep checks one change planned on snap against rule
// 15b: a stage is checked only once done, at most once per interval (from
// its last check, or its completion); a regression records a failure
// only with onRegression Abort, of a stage done, while the rollout is in
// flight; StageRegressed is True exactly while a record says regressed.
func (m *machine) checkRegressionStep(t *rapid.T, snap *rollout.Snapshot, action rollout.Action) {
	if action.Status == nil || snap.Policy.DeletionTimestamp != nil {
		return
	}
	before, after := &snap.Policy.Status, action.Status
	checked := map[string]int{}
	for _, c := range action.RegressionChecks {
		checked[c.Stage]++
		seen["regression: "+c.Result]++
	}
	regressed := false
	for _, r := range after.Stages {
		was := before.StageNamed(r.Name)
		s := snap.Policy.Spec.StageNamed(r.Name)
		if r.Regressed != nil {
			regressed = true
		}
		if checked[r.Name] > 1 {
			m.fatalf(t, "regression: stage %q checked %d times in one run", r.Name, checked[r.Name])
		}
		newCheck := r.LastRegressionCheckTime != nil && (was == nil || was.LastRegressionCheckTime == nil || !was.LastRegressionCheckTime.Equal(r.LastRegressionCheckTime))
		if !newCheck {
			continue
		}
		seen["regression: check recorded"]++
		if s == nil || s.RegressionWatch == nil || was == nil || was.Phase != v1alpha1.StageSucceeded {
			m.fatalf(t, "regression: stage %q checked (%s) while not done with a regressionWatch (record %+v)", r.Name, action.Why, was)
		}
		last := was.CompletionTime
		if was.LastRegressionCheckTime != nil && (last == nil || was.LastRegressionCheckTime.After(last.Time)) {
			last = was.LastRegressionCheckTime
		}
		if last != nil && r.LastRegressionCheckTime.Sub(last.Time) < s.RegressionWatch.CheckInterval() {
			m.fatalf(t, "regression: stage %q checked at %v, %v after its last check or completion (%v), within its interval %v",
				r.Name, r.LastRegressionCheckTime.Time, r.LastRegressionCheckTime.Sub(last.Time), last.Time, s.RegressionWatch.CheckInterval())
		}
	}
	if c := meta.FindStatusCondition(after.Conditions, v1alpha1.ConditionStageRegressed); (c != nil) != regressed {
		m.fatalf(t, "regression: StageRegressed %v written (%s) while a record says regressed: %v", c, action.Why, regressed)
	}
	f := after.Failure
	if f == nil || f.Reason != v1alpha1.ReasonStageRegressed || before.Failure != nil && before.Failure.Reason == v1alpha1.ReasonStageRegressed {
		return
	}
	seen["regression: abort"]++
	s, was := snap.Policy.Spec.StageNamed(f.Stage), before.StageNamed(f.Stage)
	if s == nil || s.RegressionWatch == nil || s.RegressionWatch.OnRegression != v1alpha1.RegressionAbort {
		m.fatalf(t, "regression: stage %q's regression stops the rollout (%s) without onRegression Abort", f.Stage, action.Why)
	}
	if was == nil || was.Phase != v1alpha1.StageSucceeded || checked[f.Stage] != 1 {
		m.fatalf(t, "regression: stage %q's regression stops the rollout (%s), but it was not done and checked in this run", f.Stage, action.Why)
	}
	active := before.StageNamed(before.ActiveStage)
	if before.Phase == v1alpha1.RolloutCompleted || before.Phase == v1alpha1.RolloutAborted || active == nil ||
		active.Phase == v1alpha1.StageSucceeded || before.Failure != nil || snap.Policy.Spec.Abort {
		m.fatalf(t, "regression: stage %q's regression stops a rollout not in flight (phase %s, active %q)", f.Stage, before.Phase, before.ActiveStage)
	}
}

// regressionActions are what makes a done stage regress: the WECs of a
// done, watched stage fail, KubeStellar reports it, and its interval
// passes.
func (m *machine) regressionActions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"doneStageRegresses": func(t *rapid.T) {
			m.needPolicy(t)
			var done []string
			for _, r := range m.w.policy.Status.Stages {
				if s := m.w.policy.Spec.StageNamed(r.Name); s != nil && s.RegressionWatch != nil && r.Phase == v1alpha1.StageSucceeded {
					done = append(done, r.Name)
				}
			}
			if len(done) == 0 {
				t.Skip("no done stage with a regressionWatch")
			}
			stage := rapid.SampledFrom(done).Draw(t, "regressing stage")
			for _, c := range m.w.wecs {
				if c.stage == stage {
					c.health = failing
				}
			}
			m.w.report()
			m.w.now = m.w.now.Add(5*time.Minute + time.Second)
			m.stagerRuns(t)
		},
		// A done stage's regression while a later one rolls out: the
		// later stages' WECs stay progressing while a new revision rolls
		// out until the watched stage is done, then it fails.
		"regressionInFlight": func(t *rapid.T) {
			m.needPolicy(t)
			p := m.w.policy
			watched := -1
			for i, s := range p.Spec.Stages[:len(p.Spec.Stages)-1] {
				if s.RegressionWatch != nil {
					watched = i
					break
				}
			}
			if watched < 0 || p.DeletionTimestamp != nil || p.Spec.Placement != v1alpha1.PlacementAccumulate {
				t.Skip("no earlier stage with a regressionWatch under Accumulate")
			}
			if m.w.wave != nil {
				// The new revision it publishes is the wave's to release
				// (statemachine_wave_test.go), which the loop below does
				// not wait for.
				t.Skip("a wave orders the policy")
			}
			stage := p.Spec.Stages[watched].Name
			for _, c := range m.w.wecs {
				c.health = progressing
				if slices.IndexFunc(p.Spec.Stages, func(s v1alpha1.Stage) bool { return s.Name == c.stage }) <= watched {
					c.health = healthy
				}
			}
			m.w.editSpec(func(p *v1alpha1.StagedBindingPolicy) {
				rev := fmt.Sprintf("r%d", len(m.w.revisions)+1)
				m.w.revisions = append(m.w.revisions, rev)
				p.Spec.Revision = &v1alpha1.Revision{Name: rev}
				p.Spec.Suspend, p.Spec.Abort = false, false
			})
			for range 60 {
				m.keepsRunning(t, "KubeStellar resolving", m.w.resolve)
				m.w.report()
				for _, name := range slicesSortedKeys(m.w.approvals) {
					m.approve(m.w.approvals[name])
				}
				m.stagerStep(t)
				if r := m.w.policy.Status.StageNamed(stage); r != nil && r.Phase == v1alpha1.StageSucceeded {
					break
				}
				m.w.now = m.w.now.Add(time.Minute)
			}
			seen["regression: in flight, "+string(m.w.policy.Status.Phase)]++
			for _, c := range m.w.wecs {
				if c.stage == stage {
					c.health = failing
				}
			}
			m.w.report()
			m.w.now = m.w.now.Add(5*time.Minute + time.Second)
			m.stagerRuns(t)
		},
	}
}

// stagerRuns is the run the regression's CombinedStatus queues: a few
// steps, until the stager waits.
func (m *machine) stagerRuns(t *rapid.T) {
	for range 4 {
		if m.stagerStep(t).Type == rollout.ActionNone {
			return
		}
	}
}
