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

package wave_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/wave"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// at returns t0 plus d, as a metav1.Time.
func at(d time.Duration) *metav1.Time {
	t := metav1.NewTime(t0.Add(d))
	return &t
}

// threeSteps is the wave of the issue: canary (c1), then eu (e1, e2) after
// a 10m soak, then us (u1) after a 1m soak, ordering web and api.
func threeSteps() *hostingv1alpha1.RolloutWave {
	return &hostingv1alpha1.RolloutWave{
		ObjectMeta: metav1.ObjectMeta{Name: "regions"},
		Spec: hostingv1alpha1.RolloutWaveSpec{
			Policies: []string{"web", "api"},
			Steps: []hostingv1alpha1.WaveStep{
				{Name: "canary", Spaces: []string{"c1"}},
				{Name: "eu", Spaces: []string{"e1", "e2"}, SoakDuration: &metav1.Duration{Duration: 10 * time.Minute}},
				{Name: "us", Spaces: []string{"u1"}, SoakDuration: &metav1.Duration{Duration: time.Minute}},
			},
		},
	}
}

// live is a fresh, engaged report of space holding policies.
func live(space string, policies ...hostingv1alpha1.WavePolicyReport) hostingv1alpha1.WaveSpaceReport {
	return hostingv1alpha1.WaveSpaceReport{Space: space, Engaged: true, HeartbeatTime: *at(-10 * time.Second), Policies: policies}
}

// done is web completed at revision, at t0+when.
func done(revision string, when time.Duration) hostingv1alpha1.WavePolicyReport {
	return hostingv1alpha1.WavePolicyReport{Name: "web", Phase: "Completed", Revision: revision, CurrentRevision: revision, CompletedTime: at(when)}
}

// rolling is web in phase at revision, having completed current before.
func rolling(phase, revision, current string) hostingv1alpha1.WavePolicyReport {
	return hostingv1alpha1.WavePolicyReport{Name: "web", Phase: phase, Revision: revision, CurrentRevision: current, CompletedTime: at(-time.Hour)}
}

// TestGate walks every rule of Gate, for the spaces of each step.
func TestGate(t *testing.T) {
	allDone := []hostingv1alpha1.WaveSpaceReport{
		live("c1", done("v2", -time.Hour)), live("e1", done("v2", -20*time.Minute)), live("e2", done("v2", -15*time.Minute)),
	}
	with := func(reports ...hostingv1alpha1.WaveSpaceReport) []hostingv1alpha1.WaveSpaceReport { return reports }
	for name, tc := range map[string]struct {
		change                 func(*hostingv1alpha1.RolloutWave)
		reports                []hostingv1alpha1.WaveSpaceReport
		space, policy, revison string
		released               bool
		reason                 string
		message                []string
		recheck                time.Duration
	}{
		"1. a policy the wave does not name":  {space: "u1", policy: "other", revison: "v2", released: true, reason: wave.ReasonNotOrdered},
		"1. a space of no step":               {space: "x9", policy: "web", revison: "v2", released: true, reason: wave.ReasonNotOrdered},
		"2. the first step, nothing reported": {space: "c1", policy: "web", revison: "v2", released: true, reason: wave.ReasonFirstStep},
		"2. the first step, without revision": {space: "c1", policy: "web", released: true, reason: wave.ReasonFirstStep},
		"3. a later step without revision": {reports: allDone, space: "u1", policy: "web", reason: wave.ReasonNeedsRevision,
			message: []string{"wave regions step 3/3 (us) orders revisions", "spec.revision"}},
		"4. aborted at the revision in an earlier step": {
			reports: with(live("c1", done("v2", -time.Hour)), live("e1", rolling("Aborted", "v2", "v1")), live("e2", done("v2", -time.Hour))),
			space:   "u1", policy: "web", revison: "v2", reason: wave.ReasonEarlierStepFailed,
			message: []string{"revision v2 was given up in an earlier step, in e1 (Aborted v2)", "new revision"}},
		"4. stalled at the revision in an earlier step": {
			reports: with(live("c1", rolling("Stalled", "v2", "v1"))),
			space:   "e1", policy: "web", revison: "v2", reason: wave.ReasonEarlierStepFailed, message: []string{"c1 (Stalled v2)"}},
		"4. given up before, completed since: held for ever": {
			reports: with(live("c1", func() hostingv1alpha1.WavePolicyReport {
				r := done("v2", -time.Hour)
				r.FailedRevisions = []string{"v1", "v2"}
				return r
			}())),
			space: "e2", policy: "web", revison: "v2", reason: wave.ReasonEarlierStepFailed, message: []string{"c1 (Completed v2)"}},
		"4. given up in a space that is down": {
			reports: with(hostingv1alpha1.WaveSpaceReport{Space: "c1", HeartbeatTime: *at(-time.Hour), Policies: []hostingv1alpha1.WavePolicyReport{rolling("Aborted", "v2", "v1")}}),
			space:   "e2", policy: "web", revison: "v2", reason: wave.ReasonEarlierStepFailed},
		"4. another revision given up does not hold this one": {
			reports: with(live("c1", func() hostingv1alpha1.WavePolicyReport {
				r := done("v2", -time.Hour)
				r.FailedRevisions = []string{"v1"}
				return r
			}())),
			space: "e2", policy: "web", revison: "v2", released: true, reason: wave.ReasonReleased},
		"5. an earlier space never reported": {reports: with(live("c1", done("v2", -time.Hour)), live("e2", done("v2", -time.Hour))),
			space: "u1", policy: "web", revison: "v2", reason: wave.ReasonEarlierSpaceDown,
			message: []string{"waiting for revision v2 to complete in 1 of 3 earlier spaces: e1 (not reporting)"}},
		"5. an earlier space disengaged": {
			reports: with(live("c1", done("v2", -time.Hour)), hostingv1alpha1.WaveSpaceReport{Space: "e1", HeartbeatTime: *at(0), Policies: []hostingv1alpha1.WavePolicyReport{done("v2", -time.Hour)}}, live("e2", done("v2", -time.Hour))),
			space:   "u1", policy: "web", revison: "v2", reason: wave.ReasonEarlierSpaceDown, message: []string{"e1 (disengaged)"}},
		"5. an earlier space's report stale": {
			reports: with(live("c1", done("v2", -time.Hour)), hostingv1alpha1.WaveSpaceReport{Space: "e1", Engaged: true, HeartbeatTime: *at(-3 * time.Minute), Policies: []hostingv1alpha1.WavePolicyReport{done("v2", -time.Hour)}}, live("e2", done("v2", -time.Hour))),
			space:   "u1", policy: "web", revison: "v2", reason: wave.ReasonEarlierSpaceDown, message: []string{"e1 (no report since 2026-11-29T11:57:00Z)"}},
		"5. a report at the stale bound is fresh": {
			reports: with(live("c1", done("v2", -time.Hour)), hostingv1alpha1.WaveSpaceReport{Space: "e1", Engaged: true, HeartbeatTime: *at(-2 * time.Minute), Policies: []hostingv1alpha1.WavePolicyReport{done("v2", -time.Hour)}}, live("e2", done("v2", -time.Hour))),
			space:   "u1", policy: "web", revison: "v2", released: true, reason: wave.ReasonReleased},
		"5. a stale bound of the wave's own": {change: func(w *hostingv1alpha1.RolloutWave) {
			w.Spec.ReportStaleAfter = &metav1.Duration{Duration: 5 * time.Minute}
		},
			reports: with(live("c1", done("v2", -time.Hour)), hostingv1alpha1.WaveSpaceReport{Space: "e1", Engaged: true, HeartbeatTime: *at(-3 * time.Minute), Policies: []hostingv1alpha1.WavePolicyReport{done("v2", -time.Hour)}}, live("e2", done("v2", -time.Hour))),
			space:   "u1", policy: "web", revison: "v2", released: true, reason: wave.ReasonReleased},
		"5. a report from a clock far ahead": {
			reports: with(live("c1", done("v2", -time.Hour)), hostingv1alpha1.WaveSpaceReport{Space: "e1", Engaged: true, HeartbeatTime: *at(time.Hour), Policies: []hostingv1alpha1.WavePolicyReport{done("v2", -time.Hour)}}, live("e2", done("v2", -time.Hour))),
			space:   "u1", policy: "web", revison: "v2", reason: wave.ReasonEarlierSpaceDown},
		"5. an earlier space still on the revision": {
			reports: with(live("c1", done("v2", -time.Hour)), live("e1", rolling("Progressing", "v2", "v1")), live("e2", rolling("AwaitingApproval", "v2", "v1"))),
			space:   "u1", policy: "web", revison: "v2", reason: wave.ReasonWaitingForEarlierSteps,
			message: []string{"wave regions step 3/3 (us): waiting for revision v2 to complete in 2 of 3 earlier spaces: e1 (Progressing v2), e2 (AwaitingApproval v2)"}},
		"5. an earlier space not on it yet": {
			reports: with(live("c1", done("v1", -time.Hour))),
			space:   "e1", policy: "web", revison: "v2", reason: wave.ReasonWaitingForEarlierSteps, message: []string{"c1 (Completed v1)"}},
		"5. an earlier space without the policy": {
			reports: with(live("c1")),
			space:   "e1", policy: "web", revison: "v2", reason: wave.ReasonWaitingForEarlierSteps, message: []string{"c1 (no policy web)"}},
		"5. another policy's completion does not count": {
			reports: with(live("c1", hostingv1alpha1.WavePolicyReport{Name: "api", Phase: "Completed", Revision: "v2", CurrentRevision: "v2", CompletedTime: at(-time.Hour)})),
			space:   "e1", policy: "web", revison: "v2", reason: wave.ReasonWaitingForEarlierSteps},
		"5. down spaces are named first": {
			reports: with(live("e1", rolling("Progressing", "v2", "v1"))),
			space:   "u1", policy: "web", revison: "v2", reason: wave.ReasonEarlierSpaceDown,
			message: []string{"3 of 3 earlier spaces: c1 (not reporting), e2 (not reporting), e1 (Progressing v2)"}},
		"6. soaking after the earlier step": {reports: with(live("c1", done("v2", -4*time.Minute))),
			space: "e1", policy: "web", revison: "v2", reason: wave.ReasonSoaking, recheck: 6 * time.Minute,
			message: []string{"completed in every earlier space at 2026-11-29T11:56:00Z; soaking 10m0s, until 2026-11-29T12:06:00Z"}},
		"6. the soak counts from the latest completion": {
			reports: with(live("c1", done("v2", -time.Hour)), live("e1", done("v2", -time.Hour)), live("e2", done("v2", -20*time.Second))),
			space:   "u1", policy: "web", revison: "v2", reason: wave.ReasonSoaking, recheck: 40 * time.Second},
		"6. a completion without its time": {reports: with(live("c1", hostingv1alpha1.WavePolicyReport{Name: "web", Phase: "Completed", Revision: "v2", CurrentRevision: "v2"})),
			space: "e1", policy: "web", revison: "v2", reason: wave.ReasonSoaking, message: []string{"not yet reported"}},
		"6. no soak, no time needed": {change: func(w *hostingv1alpha1.RolloutWave) { w.Spec.Steps[1].SoakDuration = nil },
			reports: with(live("c1", hostingv1alpha1.WavePolicyReport{Name: "web", Phase: "Completed", Revision: "v2", CurrentRevision: "v2"})),
			space:   "e1", policy: "web", revison: "v2", released: true, reason: wave.ReasonReleased},
		"7. the soak just over": {reports: with(live("c1", done("v2", -10*time.Minute))),
			space: "e1", policy: "web", revison: "v2", released: true, reason: wave.ReasonReleased,
			message: []string{"wave regions step 2/3 (eu): revision v2 completed in every space of the 1 earlier steps"}},
		"7. completed, then on to the next revision": {
			reports: with(live("c1", rolling("Progressing", "v3", "v2"))),
			space:   "e1", policy: "web", revison: "v2", released: true, reason: wave.ReasonReleased},
		"7. the last step, everything done":    {reports: allDone, space: "u1", policy: "web", revison: "v2", released: true, reason: wave.ReasonReleased},
		"its own step's spaces do not hold it": {reports: with(live("c1", done("v2", -time.Hour))), space: "e2", policy: "web", revison: "v2", released: true, reason: wave.ReasonReleased},
		"later steps do not hold it": {reports: with(live("c1", done("v2", -time.Hour)), live("u1", rolling("Aborted", "v2", "v1"))),
			space: "e1", policy: "web", revison: "v2", released: true, reason: wave.ReasonReleased},
	} {
		t.Run(name, func(t *testing.T) {
			w := threeSteps()
			if tc.change != nil {
				tc.change(w)
			}
			w.Status.Spaces = tc.reports
			d := wave.Gate(w, tc.space, tc.policy, tc.revison, t0)
			if d.Released != tc.released || d.Reason != tc.reason || d.RecheckAfter != tc.recheck {
				t.Errorf("released %v, %s, recheck %v (%s); want %v, %s, recheck %v", d.Released, d.Reason, d.RecheckAfter, d.Message, tc.released, tc.reason, tc.recheck)
			}
			for _, m := range tc.message {
				if !strings.Contains(d.Message, m) {
					t.Errorf("message %q does not say %q", d.Message, m)
				}
			}
			if len(d.Message) > wave.MaxMessage {
				t.Errorf("message of %d bytes", len(d.Message))
			}
		})
	}
}

// TestGatePosition: a decision names the wave and the policy's step.
func TestGatePosition(t *testing.T) {
	d := wave.Gate(threeSteps(), "e2", "api", "v2", t0)
	if d.Wave != "regions" || d.Step != "eu" || d.StepIndex != 1 || d.Steps != 3 {
		t.Errorf("position %s %s %d/%d, want regions eu 1/3", d.Wave, d.Step, d.StepIndex, d.Steps)
	}
	if d := wave.Gate(threeSteps(), "e2", "other", "v2", t0); d.Wave != "" || d.StepIndex != -1 {
		t.Errorf("an unordered policy is placed at %s %d", d.Wave, d.StepIndex)
	}
}

// TestGateAll: no wave, one wave, and two waves ordering one policy.
func TestGateAll(t *testing.T) {
	other := threeSteps()
	other.Name, other.Spec.Policies = "other", []string{"db"}
	if d := wave.GateAll(nil, "u1", "web", "v2", t0); !d.Released || d.Reason != wave.ReasonNotOrdered {
		t.Errorf("no wave: %+v", d)
	}
	if d := wave.GateAll([]hostingv1alpha1.RolloutWave{*other, *threeSteps()}, "u1", "web", "v2", t0); d.Released || d.Wave != "regions" || d.Reason != wave.ReasonEarlierSpaceDown {
		t.Errorf("one wave of two orders it: %+v", d)
	}
	twice := threeSteps()
	twice.Name = "again"
	d := wave.GateAll([]hostingv1alpha1.RolloutWave{*threeSteps(), *twice}, "c1", "web", "v2", t0)
	if d.Released || d.Reason != wave.ReasonConflict || !strings.Contains(d.Message, "ordered by 2 waves (again, regions)") {
		t.Errorf("two waves order it: %+v", d)
	}
}

// TestGateMessagesAreBounded: the longest names and most spaces the CRD
// allows give a message within MaxMessage that counts what it leaves out.
func TestGateMessagesAreBounded(t *testing.T) {
	w := threeSteps()
	w.Spec.Steps[0].Spaces = nil
	for i := range 63 {
		w.Spec.Steps[0].Spaces = append(w.Spec.Steps[0].Spaces, fmt.Sprintf("%s%d", strings.Repeat("ü", 250), i))
	}
	w.Spec.Steps = []hostingv1alpha1.WaveStep{w.Spec.Steps[0], {Name: "last", Spaces: []string{"u1"}}}
	d := wave.Gate(w, "u1", "web", strings.Repeat("v", 63), t0)
	if len(d.Message) > wave.MaxMessage || !strings.Contains(d.Message, "and 55 more") || !strings.Contains(d.Message, "63 of 63") {
		t.Errorf("message of %d bytes: %s", len(d.Message), d.Message)
	}
	if !strings.HasSuffix(d.Message, "...") && !strings.Contains(d.Message, "...") {
		t.Errorf("long space names are not cut: %s", d.Message)
	}
}

// TestGateMessageStandsStillWhileNothingChanges: a held policy's condition
// carries the decision's message, and Plan writes the status whenever the
// condition differs, so a message that moves with the clock alone (an age,
// a time left) would rewrite the status on every run. While the reports
// stay as they are and the reason holds, the message does not change.
func TestGateMessageStandsStillWhileNothingChanges(t *testing.T) {
	stale := hostingv1alpha1.WaveSpaceReport{Space: "e1", Engaged: true, HeartbeatTime: *at(-3 * time.Minute),
		Policies: []hostingv1alpha1.WavePolicyReport{done("v2", -time.Hour)}}
	for name, tc := range map[string]struct {
		reports []hostingv1alpha1.WaveSpaceReport
		space   string
	}{
		"an earlier space's report stale": {reports: []hostingv1alpha1.WaveSpaceReport{live("c1", done("v2", -time.Hour)), stale,
			live("e2", done("v2", -time.Hour))}, space: "u1"},
		"soaking":                   {reports: []hostingv1alpha1.WaveSpaceReport{live("c1", done("v2", -4*time.Minute))}, space: "e1"},
		"waiting for earlier steps": {reports: []hostingv1alpha1.WaveSpaceReport{live("c1", rolling("Progressing", "v2", "v1"))}, space: "e1"},
	} {
		t.Run(name, func(t *testing.T) {
			w := threeSteps()
			w.Status.Spaces = tc.reports
			first := wave.Gate(w, tc.space, "web", "v2", t0)
			for _, later := range []time.Duration{time.Second, 7 * time.Second, time.Minute} {
				d := wave.Gate(w, tc.space, "web", "v2", t0.Add(later))
				if d.Reason == first.Reason && d.Message != first.Message {
					t.Errorf("%s later, the message moved with the clock alone:\n  %s\n  %s", later, first.Message, d.Message)
				}
			}
		})
	}
}
