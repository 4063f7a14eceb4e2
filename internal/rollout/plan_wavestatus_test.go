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

package rollout

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/wave"
)

// ---------------------------------------------------------------------------
// Rule 6a: the policy's place in its wave (status.wave)
// ---------------------------------------------------------------------------

// inWave is a status.wave of the wave regions, step eu (2/3).
func inWave(state v1alpha1.WaveState, revision string) *v1alpha1.WaveStatus {
	return &v1alpha1.WaveStatus{Name: "regions", Step: "eu", Position: "2/3", State: state, Revision: revision}
}

// unreadable is the decision of waves that cannot be read (the reconciler's).
var unreadable = &wave.Decision{StepIndex: -1, Reason: "WavesUnreadable", RecheckAfter: 10 * time.Second,
	Message: "the stager cannot read the hosting cluster's RolloutWaves: no revision starts until it can"}

// TestPlanWaveStatus checks the status.wave that rule 6a keeps, case by
// case: the wave, step and position of the decision, Held while the wave
// holds the revision the spec would start, else Released, with that
// revision; none when no wave orders the policy. A status.wave that is
// already right makes no write, and once written it stays: the next run
// keeps it, and a steady policy plans nothing more.
func TestPlanWaveStatus(t *testing.T) {
	engine := newEngine(t)
	// settled is the snapshot once Plan, without a wave, has nothing
	// more to write.
	settled := func(f fixture) *Snapshot {
		snap := f.Snapshot
		for range 5 {
			action := Plan(snap, engine)
			if action.Type == ActionNone {
				return snap
			}
			snap = applied(snap, action)
		}
		t.Fatalf("the fixture does not settle")
		return nil
	}
	// given is a rollout settled at v1, its spec then naming revision.
	given := func(revision string) *Snapshot {
		snap := settled(completedAt("v1"))
		snap.Policy.Spec.Revision.Name = revision
		return snap
	}
	withWave := func(f fixture, ws *v1alpha1.WaveStatus) *Snapshot {
		snap := settled(f)
		snap.Policy.Status.Wave = ws
		return snap
	}
	heldBefore := func(snap *Snapshot) *Snapshot {
		snap.Wave = heldBy(wave.ReasonWaitingForEarlierSteps, 0)
		return applied(snap, Plan(snap, engine))
	}
	firstStep := &wave.Decision{Released: true, Wave: "regions", Step: "canary", StepIndex: 0, Steps: 3, Reason: wave.ReasonFirstStep}
	for _, tt := range []struct {
		name     string
		snap     *Snapshot
		decision *wave.Decision
		want     *v1alpha1.WaveStatus
		// write: the run writes status (for the wave or anything else).
		write bool
		// steady: once the action is applied, the next run plans nothing.
		steady bool
	}{
		{name: "no wave, none recorded", snap: settled(completedAt("v1")), want: nil, steady: true},
		{name: "no wave, a start", snap: notStarted("v2").Snapshot, want: nil, write: true},
		{name: "removed from its wave", snap: withWave(completedAt("v1"), inWave(v1alpha1.WaveReleased, "v1")), want: nil, write: true, steady: true},
		{name: "removed from its wave while held", snap: heldBefore(given("v2")), want: nil, write: true},
		{name: "held, not started", snap: notStarted("v2").Snapshot, decision: heldBy(wave.ReasonWaitingForEarlierSteps, 0),
			want: inWave(v1alpha1.WaveHeld, "v2"), write: true, steady: true},
		{name: "held, revisionless", snap: notStarted("").Snapshot, decision: heldBy(wave.ReasonNeedsRevision, 0),
			want: inWave(v1alpha1.WaveHeld, ""), write: true, steady: true},
		{name: "held, completed given v2", snap: given("v2"), decision: heldBy(wave.ReasonSoaking, time.Minute),
			want: inWave(v1alpha1.WaveHeld, "v2"), write: true, steady: true},
		{name: "held, midway given v2", snap: midway("v2").Snapshot, decision: heldBy(wave.ReasonEarlierStepFailed, 0),
			want: inWave(v1alpha1.WaveHeld, "v2"), write: true},
		{name: "held already", snap: heldBefore(given("v2")), decision: heldBy(wave.ReasonWaitingForEarlierSteps, 0),
			want: inWave(v1alpha1.WaveHeld, "v2"), steady: true},
		{name: "released after held", snap: heldBefore(given("v2")), decision: releasedBy(),
			want: inWave(v1alpha1.WaveReleased, "v2"), write: true},
		{name: "first step, a start", snap: notStarted("v2").Snapshot, decision: firstStep,
			want: &v1alpha1.WaveStatus{Name: "regions", Step: "canary", Position: "1/3", State: v1alpha1.WaveReleased, Revision: "v2"}, write: true},
		{name: "first step, revisionless", snap: notStarted("").Snapshot, decision: firstStep,
			want: &v1alpha1.WaveStatus{Name: "regions", Step: "canary", Position: "1/3", State: v1alpha1.WaveReleased}, write: true},
		{name: "running its revision, the wave holding", snap: settled(completedAt("v1")), decision: heldBy(wave.ReasonEarlierSpaceDown, 0),
			want: inWave(v1alpha1.WaveReleased, "v1"), write: true, steady: true},
		{name: "running its revision, recorded", snap: withWave(completedAt("v1"), inWave(v1alpha1.WaveReleased, "v1")),
			decision: releasedBy(), want: inWave(v1alpha1.WaveReleased, "v1"), steady: true},
		{name: "moved to another step", snap: withWave(completedAt("v1"), inWave(v1alpha1.WaveReleased, "v1")),
			decision: &wave.Decision{Released: true, Wave: "regions", Step: "us", StepIndex: 2, Steps: 3, Reason: wave.ReasonReleased},
			want:     &v1alpha1.WaveStatus{Name: "regions", Step: "us", Position: "3/3", State: v1alpha1.WaveReleased, Revision: "v1"}, write: true, steady: true},
		{name: "two waves, not started", snap: notStarted("v2").Snapshot,
			decision: &wave.Decision{StepIndex: -1, Reason: wave.ReasonConflict, Message: "ordered by 2 waves (a, b)"},
			want:     &v1alpha1.WaveStatus{State: v1alpha1.WaveHeld, Revision: "v2"}, write: true, steady: true},
		{name: "waves unreadable, not started", snap: notStarted("v2").Snapshot, decision: unreadable,
			want: &v1alpha1.WaveStatus{State: v1alpha1.WaveHeld, Revision: "v2"}, write: true, steady: true},
		{name: "waves unreadable, running, recorded", snap: withWave(completedAt("v1"), inWave(v1alpha1.WaveReleased, "v1")), decision: unreadable,
			want: inWave(v1alpha1.WaveReleased, "v1"), steady: true},
		{name: "waves unreadable, running, none recorded", snap: settled(completedAt("v1")), decision: unreadable,
			want: nil, steady: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			snap := tt.snap
			snap.Wave = tt.decision
			action := Plan(snap, engine)
			if wrote := action.Status != nil; wrote != tt.write {
				t.Fatalf("status written: %t, want %t (%s: %s)", wrote, tt.write, action.Type, action.Why)
			}
			got := snap.Policy.Status.Wave
			if action.Status != nil {
				got = action.Status.Wave
			}
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Fatalf("status.wave %+v, want %+v (%s: %s)", deref(got), deref(tt.want), action.Type, action.Why)
			}

			next := applied(snap, action)
			again := Plan(next, engine)
			if again.Status != nil && !equality.Semantic.DeepEqual(again.Status.Wave, tt.want) {
				t.Errorf("the next run (%s) changes status.wave to %+v", again.Why, deref(again.Status.Wave))
			}
			if tt.steady && again.Type != ActionNone {
				t.Errorf("steady, yet the next run plans %s (%s)", again.Type, again.Why)
			}
		})
	}
}

func deref(ws *v1alpha1.WaveStatus) any {
	if ws == nil {
		return nil
	}
	return *ws
}

// positionPattern is the CRD's pattern of status.wave.position.
var positionPattern = regexp.MustCompile(`^[0-9]{1,3}/[0-9]{1,3}$`)

// TestPlanWaveStatusIsBoundedAndSaysNoMore draws decisions with any names,
// positions, reasons and messages on policies in every situation of a
// wave: the status.wave Plan writes always fits the CRD's bounds (so the
// write is never refused), and is the same whatever the decision's
// reason, message and recheck time, which carry the earlier spaces'
// state: status.wave tells nothing of other spaces.
func TestPlanWaveStatusIsBoundedAndSaysNoMore(t *testing.T) {
	engine := newEngine(t)
	situations := []func() *Snapshot{
		func() *Snapshot { return notStarted("v2").Snapshot },
		func() *Snapshot { return notStarted("").Snapshot },
		func() *Snapshot { return completedAt("v1").Snapshot },
		func() *Snapshot { return completedAt("v2").Snapshot },
		func() *Snapshot { return midway("v2").Snapshot },
	}
	reasons := []string{wave.ReasonFirstStep, wave.ReasonReleased, wave.ReasonConflict, wave.ReasonNeedsRevision,
		wave.ReasonEarlierStepFailed, wave.ReasonEarlierSpaceDown, wave.ReasonWaitingForEarlierSteps, wave.ReasonSoaking, "WavesUnreadable"}
	name := rapid.StringMatching(`[a-z0-9.é-]{0,100}`)
	rapid.Check(t, func(t *rapid.T) {
		situation := rapid.IntRange(0, len(situations)-1).Draw(t, "situation")
		d := wave.Decision{Released: rapid.Bool().Draw(t, "released"), Wave: name.Draw(t, "wave"), Step: name.Draw(t, "step"),
			StepIndex: rapid.IntRange(-1, 1200).Draw(t, "index"), Steps: rapid.IntRange(0, 1200).Draw(t, "steps"),
			Reason: rapid.SampledFrom(reasons).Draw(t, "reason"), Message: rapid.String().Draw(t, "message"),
			RecheckAfter: time.Duration(rapid.Int64Range(0, int64(time.Hour)).Draw(t, "recheck"))}
		other := d
		other.Reason, other.Message = rapid.SampledFrom(reasons).Draw(t, "other reason"), rapid.String().Draw(t, "other message")
		other.RecheckAfter = time.Duration(rapid.Int64Range(0, int64(time.Hour)).Draw(t, "other recheck"))

		plan := func(d wave.Decision) *v1alpha1.WaveStatus {
			snap := situations[situation]()
			snap.Wave = &d
			action := Plan(snap, engine)
			if action.Status == nil {
				return snap.Policy.Status.Wave
			}
			return action.Status.Wave
		}
		ws := plan(d)
		if ws == nil {
			if d.Wave != "" {
				t.Fatalf("a decision of wave %q and no status.wave", d.Wave)
			}
			return // no wave named, none held: the run keeps what status says
		}
		switch {
		case len(ws.Name) > 63, len(ws.Step) > 63, len(ws.Revision) > 63:
			t.Fatalf("status.wave %+v is over the CRD's 63 bytes", *ws)
		case ws.Position != "" && (len(ws.Position) > v1alpha1.MaxWavePosition || !positionPattern.MatchString(ws.Position)):
			t.Fatalf("status.wave position %q is not the CRD's", ws.Position)
		case ws.State != v1alpha1.WaveHeld && ws.State != v1alpha1.WaveReleased:
			t.Fatalf("status.wave state %q", ws.State)
		case !strings.HasPrefix(d.Wave, ws.Name) || !strings.HasPrefix(d.Step, ws.Step):
			t.Fatalf("status.wave %+v names what the decision does not (%q, %q)", *ws, d.Wave, d.Step)
		}
		if again := plan(other); !equality.Semantic.DeepEqual(ws, again) {
			t.Fatalf("status.wave moves with the decision's reason, message or recheck:\n %+v\n %+v", *ws, deref(again))
		}
	})
}

// TestPlanWaveStatusKeepsTheHeldCondition checks that the status.wave of
// a held policy goes with its WaitingForWave condition: both say Held for
// the same revision.
func TestPlanWaveStatusKeepsTheHeldCondition(t *testing.T) {
	engine := newEngine(t)
	snap := completedAt("v2").Snapshot
	snap.Wave = heldBy(wave.ReasonWaitingForEarlierSteps, 0)
	action := Plan(snap, engine)
	if action.Status == nil || action.Status.Wave == nil || action.Status.Wave.State != v1alpha1.WaveHeld {
		t.Fatalf("held: %s (%s), status.wave not Held", action.Type, action.Why)
	}
	c := meta.FindStatusCondition(action.Status.Conditions, v1alpha1.ConditionWaitingForWave)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.HasPrefix(c.Message, heldPrefix(action.Status.Wave.Revision)) {
		t.Errorf("status.wave holds %q, the condition says %+v", action.Status.Wave.Revision, c)
	}
}
