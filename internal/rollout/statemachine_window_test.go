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
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// The change windows of the state-machine test (docs/proposals/windows.md):
// a user gives a stage windows, or takes them away, at any time; the
// windows open often enough against the model's clock (a step moves it by
// up to ten minutes, settle by the requeue) that rollouts both wait and go
// on. A stage of the model starts, and a batch starts, only inside one of
// its windows.

// modelWindows are the sets of windows the model draws from: none, one
// window of a minute every quarter of an hour, two in other zones. They
// are short against the model's steps of time (up to ten minutes), so a
// window that let a stage start is often closed by its next batch.
var modelWindows = [][]v1alpha1.ChangeWindow{
	nil,
	{{Schedule: "*/15 * * * *", Duration: metav1.Duration{Duration: time.Minute}}},
	{{Schedule: "7,37 * * * *", Duration: metav1.Duration{Duration: time.Minute}, TimeZone: "Asia/Kolkata"},
		{Schedule: "@hourly", Duration: metav1.Duration{Duration: 2 * time.Minute}, TimeZone: "America/New_York"}},
}

// windowActions are what users do with windows.
func (m *machine) windowActions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"stageWindows": m.userEdit(func(t *rapid.T, p *v1alpha1.StagedBindingPolicy) {
			s := &p.Spec.Stages[rapid.IntRange(0, len(p.Spec.Stages)-1).Draw(t, "stage")]
			s.Windows = modelWindows[rapid.IntRange(0, len(modelWindows)-1).Draw(t, "windows")]
		}),
		// The clock goes to a window's next opening, or just past a
		// window's end: steps of time that open and close windows far
		// more often than "time" alone.
		"windowTime": func(t *rapid.T) {
			m.needPolicy(t)
			s := m.w.policy.Spec.Stages[rapid.IntRange(0, len(m.w.policy.Spec.Stages)-1).Draw(t, "stage")]
			if len(s.Windows) == 0 {
				t.Skip("no windows")
			}
			state, err := rollout.NextWindow(s.Windows, m.w.now)
			switch {
			case err != nil:
				m.fatalf(t, "windows: the model's windows of stage %q do not read: %v", s.Name, err)
			case state.Open:
				m.w.now = m.w.now.Add(time.Duration(rapid.IntRange(61, 150).Draw(t, "past the window")) * time.Second)
			default:
				m.w.now = state.OpensAt
			}
		},
	}
}

// windowOpen reports whether the stage's windows let it start at at.
func (m *machine) windowOpen(t *rapid.T, stage v1alpha1.Stage, at time.Time) bool {
	state, err := rollout.NextWindow(stage.Windows, at)
	if err != nil {
		m.fatalf(t, "windows: the model's windows of stage %q do not read: %v", stage.Name, err)
	}
	return state.Open
}

// checkWindowStep checks one change planned on snap against the stages'
// windows: no stage starts (its record started now, or its BindingPolicy
// handed over to) and no batch starts (BatchStarted) while all its
// windows are closed at the snapshot's time; WaitingForWindow and
// status.window are written together, naming a stage whose windows are
// closed.
func (m *machine) checkWindowStep(t *rapid.T, snap *rollout.Snapshot, action rollout.Action) {
	policy := snap.Policy
	if policy.DeletionTimestamp != nil {
		return
	}
	now := snap.Now.Time
	stageOf := func(name string) *v1alpha1.Stage { return policy.Spec.StageNamed(name) }
	switch action.Type {
	case rollout.ActionCreateBindingPolicy:
		bp := action.BindingPolicy
		s := stageOf(bp.Labels[v1alpha1.StageLabel])
		if s == nil || len(s.Windows) == 0 {
			break
		}
		if bp.Annotations[v1alpha1.HandedOverFromAnnotation] != "" {
			seen["windows: handover"]++
			if !m.windowOpen(t, *s, now) {
				m.fatalf(t, "windows: stage %q starts by a handover (%s) at %s while all its windows are closed", s.Name, action.Why, now)
			}
		}
		// A done stage made batched since moves the clusters it runs
		// onto BindingPolicies of their own: no start.
		done := policy.Status.StageNamed(s.Name) != nil && policy.Status.StageNamed(s.Name).Phase == v1alpha1.StageSucceeded
		for _, e := range action.Events {
			if e.Reason == v1alpha1.EventReasonBatchStarted && !done {
				seen["windows: batch started"]++
				if !m.windowOpen(t, *s, now) {
					m.fatalf(t, "windows: stage %q starts a batch (%s) at %s while all its windows are closed", s.Name, e.Note, now)
				}
			}
		}
	case rollout.ActionUpdateStatus:
		for _, s := range policy.Spec.Stages {
			before, after := policy.Status.StageNamed(s.Name), action.Status.StageNamed(s.Name)
			starts := after != nil && after.Phase == v1alpha1.StageActive && after.StartTime != nil && after.StartTime.Equal(&snap.Now) &&
				(before == nil || before.StartTime == nil || !before.StartTime.Equal(after.StartTime))
			// A handover recorded now was checked when it was made.
			handedOver := snap.NextBindingPolicy != nil && snap.NextBindingPolicy.Labels[v1alpha1.StageLabel] == s.Name
			if !starts || handedOver || len(s.Windows) == 0 {
				continue
			}
			seen["windows: stage started"]++
			if !m.windowOpen(t, s, now) {
				m.fatalf(t, "windows: stage %q starts (%s) at %s while all its windows are closed", s.Name, action.Why, now)
			}
		}
		c := meta.FindStatusCondition(action.Status.Conditions, v1alpha1.ConditionWaitingForWindow)
		w := action.Status.Window
		if (c != nil) != (w != nil) {
			m.fatalf(t, "windows: WaitingForWindow %v and status.window %v are not written together (%s)", c, w, action.Why)
		}
		if w == nil {
			break
		}
		seen["windows: waiting"]++
		s := stageOf(w.Stage)
		if s == nil || m.windowOpen(t, *s, now) || !w.OpensAt.After(now) {
			m.fatalf(t, "windows: status.window %+v written (%s) at %s, but that stage's window is open or gone", *w, action.Why, now)
		}
	}
}

// drawWindows draws a new stage's windows: none as often as some.
func drawWindows(t *rapid.T) []v1alpha1.ChangeWindow {
	if rapid.Bool().Draw(t, "windowed") {
		return nil
	}
	return modelWindows[rapid.IntRange(1, len(modelWindows)-1).Draw(t, "windows")]
}
