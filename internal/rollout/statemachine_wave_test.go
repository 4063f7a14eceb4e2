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

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout"
	"github.com/kubestellar/workload-stager/internal/wave"
)

// The wave of the state-machine test (docs/proposals/waves.md): the
// policy's space, "here", is in a RolloutWave of the hosting cluster with
// one earlier space, "earlier", whose report of the same-named policy the
// model moves (it completes a revision, rolls one out, gives one up, goes
// quiet or disengages). The snapshot's decision is the real gate's
// (wave.GateAll) on that wave at the snapshot's time, as the reconciler
// takes it.

// The spaces of the model's wave.
const (
	hereSpace    = "here"
	earlierSpace = "earlier"
)

// waveModel is the wave ordering the model's policy, and the earlier
// space's report of it.
type waveModel struct {
	// later is true when the policy's space is in the second step; else
	// it is in the first, beside the earlier space.
	later bool
	soak  time.Duration

	reported  bool // the earlier space has reported at all
	engaged   bool
	quietFrom *time.Time // its heartbeat stopped then (nil: fresh)
	report    hostingv1alpha1.WavePolicyReport
}

// object is the RolloutWave as the hosting cluster holds it at now.
func (wm *waveModel) object(policy string, now time.Time) hostingv1alpha1.RolloutWave {
	w := hostingv1alpha1.RolloutWave{ObjectMeta: metav1.ObjectMeta{Name: "regions"}}
	w.Spec.Policies = []string{policy}
	w.Spec.Steps = []hostingv1alpha1.WaveStep{{Name: "first", Spaces: []string{earlierSpace}}, {Name: "second", Spaces: []string{"elsewhere"}}}
	if wm.later {
		w.Spec.Steps[1].Spaces = []string{hereSpace}
		if wm.soak > 0 {
			w.Spec.Steps[1].SoakDuration = &metav1.Duration{Duration: wm.soak}
		}
	} else {
		w.Spec.Steps[0].Spaces = append(w.Spec.Steps[0].Spaces, hereSpace)
	}
	if !wm.reported {
		return w
	}
	heartbeat := now
	if wm.quietFrom != nil {
		heartbeat = *wm.quietFrom
	}
	report := wm.report
	report.Name = policy
	w.Status.Spaces = []hostingv1alpha1.WaveSpaceReport{{Space: earlierSpace, Engaged: wm.engaged,
		HeartbeatTime: metav1.NewTime(heartbeat), Policies: []hostingv1alpha1.WavePolicyReport{report}}}
	return w
}

// waveDecision is the snapshot's Wave for the policy: nil when the model
// has no wave or the wave does not order it.
func (w *world) waveDecision(policy *v1alpha1.StagedBindingPolicy, now time.Time) *wave.Decision {
	if w.wave == nil {
		return nil
	}
	d := wave.GateAll([]hostingv1alpha1.RolloutWave{w.wave.object(policy.Name, now)}, hereSpace, policy.Name, policy.Spec.SpecRevision(), now)
	if d.Reason == wave.ReasonNotOrdered {
		return nil
	}
	return &d
}

// drawWave gives the world a wave ordering its policy in the first or
// second step, or none.
func (m *machine) drawWave(t *rapid.T) {
	switch rapid.IntRange(0, 2).Draw(t, "wave") {
	case 0:
		m.w.wave = nil
	case 1:
		m.w.wave = &waveModel{}
	default:
		m.w.wave = &waveModel{later: true, soak: rapid.SampledFrom([]time.Duration{0, 5 * time.Minute}).Draw(t, "soak")}
	}
}

// waveActions are what the earlier space does, as its reports say.
func (m *machine) waveActions() map[string]func(*rapid.T) {
	need := func(t *rapid.T) *waveModel {
		if m.w.wave == nil {
			t.Skip("no wave")
		}
		return m.w.wave
	}
	revision := func(t *rapid.T) string { return rapid.SampledFrom(m.w.revisions).Draw(t, "earlier revision") }
	return map[string]func(*rapid.T){
		"waveEarlierCompletes": func(t *rapid.T) {
			wm, rev := need(t), revision(t)
			wm.reported, wm.engaged, wm.quietFrom = true, true, nil
			wm.report.Phase, wm.report.Revision, wm.report.CurrentRevision = string(v1alpha1.RolloutCompleted), rev, rev
			wm.report.CompletedTime = &metav1.Time{Time: m.w.now.Truncate(time.Second)}
		},
		"waveEarlierProgresses": func(t *rapid.T) {
			wm, rev := need(t), revision(t)
			wm.reported, wm.engaged, wm.quietFrom = true, true, nil
			wm.report.Phase, wm.report.Revision = string(v1alpha1.RolloutProgressing), rev
		},
		"waveEarlierGivesUp": func(t *rapid.T) {
			wm, rev := need(t), revision(t)
			wm.reported, wm.engaged, wm.quietFrom = true, true, nil
			wm.report.Phase, wm.report.Revision = rapid.SampledFrom([]string{string(v1alpha1.RolloutAborted), string(v1alpha1.RolloutStalled)}).Draw(t, "gives up as"), rev
			if !slices.Contains(wm.report.FailedRevisions, rev) {
				wm.report.FailedRevisions = append(wm.report.FailedRevisions, rev)
			}
		},
		"waveEarlierQuiet": func(t *rapid.T) {
			wm := need(t)
			if wm.quietFrom == nil {
				wm.quietFrom = ptrTo(m.w.now.Truncate(time.Second))
			} else {
				wm.quietFrom = nil
			}
		},
		"waveEarlierDisengages": func(t *rapid.T) {
			wm := need(t)
			wm.reported, wm.engaged = true, !wm.engaged
		},
	}
}

func ptrTo[T any](v T) *T { return &v }

// releaseWave is settle's part for the wave: a revision the earlier step
// gave up, or no revision at all, gets a new one (the way on); the
// earlier space completes it and reports. The soak then passes as settle
// lets time go by.
func (m *machine) releaseWave() {
	wm, p := m.w.wave, m.w.policy
	if wm == nil || !wm.later || p.DeletionTimestamp != nil {
		return
	}
	if p.Spec.SpecRevision() == "" || slices.Contains(wm.report.FailedRevisions, p.Spec.SpecRevision()) {
		rev := fmt.Sprintf("r%d", len(m.w.revisions)+1)
		m.w.revisions = append(m.w.revisions, rev)
		m.w.editSpec(func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Revision = &v1alpha1.Revision{Name: rev} })
	}
	rev := m.w.policy.Spec.SpecRevision()
	wm.reported, wm.engaged, wm.quietFrom = true, true, nil
	wm.report.Phase, wm.report.Revision, wm.report.CurrentRevision = string(v1alpha1.RolloutCompleted), rev, rev
	wm.report.CompletedTime = &metav1.Time{Time: m.w.now.Truncate(time.Second)}
}

// checkWaveStep checks one change planned on snap against the wave: a
// revision starts only when the wave released it, and the revision it
// released is remembered; WaitingForWave is written only while the wave
// holds.
func (m *machine) checkWaveStep(t *rapid.T, snap *rollout.Snapshot, action rollout.Action) {
	if action.Status == nil || snap.Policy.DeletionTimestamp != nil {
		return
	}
	before, after := snap.Policy.Status, action.Status
	starts := after.UpdateRevision != before.UpdateRevision || before.ActiveStage == "" && after.ActiveStage != ""
	held := snap.Wave != nil && !snap.Wave.Released
	if starts {
		seen["wave: start"]++
		if held {
			m.fatalf(t, "wave: revision %q starts (%s) while wave %s holds spec revision %q: %s",
				after.UpdateRevision, action.Why, snap.Wave.Wave, snap.Policy.Spec.SpecRevision(), snap.Wave.Message)
		}
		if m.released == nil {
			m.released = map[string]bool{}
		}
		m.released[snap.Policy.Spec.SpecRevision()] = true
	}
	if c := meta.FindStatusCondition(after.Conditions, v1alpha1.ConditionWaitingForWave); c != nil {
		seen["wave: held"]++
		if !held || !startsRevisionOf(snap.Policy) {
			m.fatalf(t, "wave: WaitingForWave (%s) written (%s) while no wave holds a revision to start", c.Reason, action.Why)
		}
	}
	m.checkWaveStatus(t, snap, action)
}

// checkWaveStatus checks the status.wave of a status write against the
// decision it was planned with: none without a wave; Held, at the spec's
// revision, exactly while the wave holds a revision to start (as
// WaitingForWave, when written, says); else Released at the wave's step.
func (m *machine) checkWaveStatus(t *rapid.T, snap *rollout.Snapshot, action rollout.Action) {
	ws, d := action.Status.Wave, snap.Wave
	if d == nil {
		if ws != nil {
			m.fatalf(t, "wave: status.wave %+v written (%s) with no wave ordering the policy", *ws, action.Why)
		}
		return
	}
	holds := !d.Released && startsRevisionOf(snap.Policy)
	want := &v1alpha1.WaveStatus{Name: d.Wave, Step: d.Step, Position: fmt.Sprintf("%d/%d", d.StepIndex+1, d.Steps),
		State: v1alpha1.WaveReleased, Revision: snap.Policy.Spec.SpecRevision()}
	if holds {
		seen["wave: status held"]++
		want.State = v1alpha1.WaveHeld
	}
	if ws == nil || *ws != *want {
		m.fatalf(t, "wave: status.wave %v written (%s), want %+v", ws, action.Why, *want)
	}
	// Rules 1 to 6 (an abort, a suspension) write no WaitingForWave, but
	// the wave holds the revision all the same.
	if meta.FindStatusCondition(action.Status.Conditions, v1alpha1.ConditionWaitingForWave) != nil && !holds {
		m.fatalf(t, "wave: status.wave says %s (%s) and WaitingForWave is there", ws.State, action.Why)
	}
}

// startsRevisionOf reports whether the policy's next rollout starts a
// revision: the spec names a new one, or the rollout has not started.
func startsRevisionOf(p *v1alpha1.StagedBindingPolicy) bool {
	_, started, reset := rollout.ActiveStage(p)
	return p.Spec.SpecRevision() != p.Status.UpdateRevision || !started && !reset
}

// checkWaveRuns holds after every action: with the policy in the wave's
// second step, no WEC runs a revision the wave has not released at a
// start of this policy.
func (m *machine) checkWaveRuns(t *rapid.T) {
	if m.w.wave == nil || !m.w.wave.later {
		return
	}
	for c, revs := range m.w.runs() {
		for _, rev := range revs {
			// The unlabelled Deployment is no revision: every
			// revision's BindingPolicy places it.
			if rev != v1alpha1.Unrevisioned && !m.released[rev] {
				m.fatalf(t, "wave: WEC %s runs revision %q, which the wave never released (released: %v)", c, rev, m.released)
			}
		}
	}
}
