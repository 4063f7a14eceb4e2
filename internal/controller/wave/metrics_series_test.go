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

package wave

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	wavegate "github.com/kubestellar/workload-stager/internal/wave"
)

// seriesNow is the time of the series tests.
var seriesNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// policyAt is a policy named name with the given phase and revisions, held
// by the wave for the reason waiting ("": not held), asking for spec.
func policyAt(name string, phase v1alpha1.RolloutPhase, update, current, spec, waiting string) *v1alpha1.StagedBindingPolicy {
	p := &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if spec != "" {
		p.Spec.Revision = &v1alpha1.Revision{Name: spec}
	}
	p.Status.Phase, p.Status.UpdateRevision, p.Status.CurrentRevision = phase, update, current
	if waiting != "" {
		meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: wavegate.ConditionWaitingForWave,
			Status: metav1.ConditionTrue, Reason: waiting, Message: "held"})
	}
	return p
}

// TestStateOf: each state of stager_wave_step, from the space's report in
// the wave and its policy.
func TestStateOf(t *testing.T) {
	const staleAfter = 2 * time.Minute
	report := func(engaged bool, beat time.Duration, policies ...hostingv1alpha1.WavePolicyReport) *hostingv1alpha1.WaveSpaceReport {
		return &hostingv1alpha1.WaveSpaceReport{Space: "eu", Engaged: engaged, HeartbeatTime: metav1.NewTime(seriesNow.Add(beat)), Policies: policies}
	}
	web := hostingv1alpha1.WavePolicyReport{Name: "web", Phase: "Progressing", Revision: "v2", CurrentRevision: "v1"}
	cases := []struct {
		name           string
		entry          *hostingv1alpha1.WaveSpaceReport
		policy         *v1alpha1.StagedBindingPolicy
		revision, want string
	}{
		{"no report", nil, policyAt("web", v1alpha1.RolloutCompleted, "v1", "v1", "v1", ""), "", StateDown},
		{"disengaged, with its last revision", report(false, 0, web), policyAt("web", v1alpha1.RolloutCompleted, "v1", "v1", "v1", ""), "v2", StateDown},
		{"stale", report(true, -staleAfter-time.Second, web), policyAt("web", v1alpha1.RolloutCompleted, "v2", "v2", "v2", ""), "v2", StateDown},
		{"from a clock far ahead", report(true, staleAfter+time.Second), policyAt("web", v1alpha1.RolloutCompleted, "v2", "v2", "v2", ""), "", StateDown},
		{"just fresh", report(true, -staleAfter), policyAt("web", v1alpha1.RolloutCompleted, "v2", "v2", "v2", ""), "v2", StateCompleted},
		{"no policy", report(true, 0), nil, "", StateMissing},
		{"held for earlier steps", report(true, 0), policyAt("web", v1alpha1.RolloutCompleted, "v1", "v1", "v2", wavegate.ReasonWaitingForEarlierSteps), "v2", StateWaiting},
		{"held as given up earlier", report(true, 0), policyAt("web", v1alpha1.RolloutPending, "", "", "v2", wavegate.ReasonEarlierStepFailed), "v2", StateWaiting},
		{"soaking", report(true, 0), policyAt("web", v1alpha1.RolloutCompleted, "v1", "v1", "v2", wavegate.ReasonSoaking), "v2", StateSoaking},
		{"aborted", report(true, 0), policyAt("web", v1alpha1.RolloutAborted, "v2", "v1", "v2", ""), "v2", StateGivenUp},
		{"stalled", report(true, 0), policyAt("web", v1alpha1.RolloutStalled, "v2", "v1", "v2", ""), "v2", StateGivenUp},
		{"completed", report(true, 0), policyAt("web", v1alpha1.RolloutCompleted, "v2", "v2", "v2", ""), "v2", StateCompleted},
		{"rolling out", report(true, 0), policyAt("web", v1alpha1.RolloutProgressing, "v2", "v1", "v2", ""), "v2", StateProgressing},
		{"awaiting approval", report(true, 0), policyAt("web", v1alpha1.RolloutAwaitingApproval, "v2", "v1", "v2", ""), "v2", StateProgressing},
		{"released, not started", report(true, 0), policyAt("web", v1alpha1.RolloutPending, "", "", "v2", ""), "", StateProgressing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := &hostingv1alpha1.RolloutWave{Spec: hostingv1alpha1.RolloutWaveSpec{Policies: []string{"web"},
				ReportStaleAfter: &metav1.Duration{Duration: staleAfter},
				Steps:            []hostingv1alpha1.WaveStep{{Name: "one", Spaces: []string{"eu"}}}}}
			if c.entry != nil {
				w.Status.Spaces = []hostingv1alpha1.WaveSpaceReport{*c.entry}
			}
			revision, state := stateOf(w, "eu", "web", c.policy, seriesNow)
			if revision != c.revision || state != c.want {
				t.Errorf("stateOf = %q, %s; want %q, %s", revision, state, c.revision, c.want)
			}
		})
	}
}

// TestWaveSeriesAreBoundedAndAgreeWithTheGate checks, over random waves
// (within the CRD's bounds), reports, served spaces and policies, that
// the waves' series are what docs/metrics.md says: per wave one
// stager_wave_spaces_not_reporting series per reason, and one
// stager_wave_step series, at 1, per (step's space this replica serves,
// ordered policy) and none for another space, with the space's step and a
// state of the fixed set, so at most 3 + 64 × 16 a wave; and that a space
// is Down, and counted not reporting, exactly when the gate itself holds a
// later step for it as not reporting.
func TestWaveSeriesAreBoundedAndAgreeWithTheGate(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		staleAfter := time.Duration(rapid.IntRange(30, 300).Draw(t, "staleAfter")) * time.Second
		var waves []hostingv1alpha1.RolloutWave
		served := map[string]policyReader{}
		policies := map[string]*v1alpha1.StagedBindingPolicy{} // by space/name
		for i := range rapid.IntRange(1, 3).Draw(t, "waves") {
			w := hostingv1alpha1.RolloutWave{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("wave%d", i)}}
			w.Spec.ReportStaleAfter = &metav1.Duration{Duration: staleAfter}
			w.Spec.Policies = rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"web", "api", "db", "cache"}), 1, 4, rapid.ID[string]).Draw(t, "policies")
			// Each wave has spaces of its own, so that no two waves order
			// a policy of one space (a conflict the gate holds).
			spaces := rapid.SliceOfNDistinct(rapid.IntRange(0, 63), 1, 12, rapid.ID[int]).Draw(t, "spaces")
			steps := rapid.IntRange(1, len(spaces)).Draw(t, "steps")
			for s := range steps {
				w.Spec.Steps = append(w.Spec.Steps, hostingv1alpha1.WaveStep{Name: fmt.Sprintf("step%d", s)})
			}
			for k, n := range spaces {
				space := fmt.Sprintf("w%d-s%d", i, n)
				step := k % steps
				if k >= steps {
					step = rapid.IntRange(0, steps-1).Draw(t, "step")
				}
				w.Spec.Steps[step].Spaces = append(w.Spec.Steps[step].Spaces, space)
				if rapid.Bool().Draw(t, "reported") {
					w.Status.Spaces = append(w.Status.Spaces, hostingv1alpha1.WaveSpaceReport{Space: space,
						Engaged:       rapid.Bool().Draw(t, "engaged"),
						HeartbeatTime: metav1.NewTime(seriesNow.Add(time.Duration(rapid.IntRange(-3, 3).Draw(t, "beat")) * staleAfter / 2))})
				}
				if rapid.Bool().Draw(t, "served") {
					for _, name := range w.Spec.Policies {
						if rapid.IntRange(0, 4).Draw(t, "exists") > 0 {
							policies[space+"/"+name] = policyAt(name,
								rapid.SampledFrom([]v1alpha1.RolloutPhase{v1alpha1.RolloutPending, v1alpha1.RolloutProgressing, v1alpha1.RolloutCompleted,
									v1alpha1.RolloutStalled, v1alpha1.RolloutAborted, v1alpha1.RolloutSuspended}).Draw(t, "phase"),
								rapid.SampledFrom([]string{"", "v1", "v2"}).Draw(t, "update"), rapid.SampledFrom([]string{"", "v1"}).Draw(t, "current"),
								rapid.SampledFrom([]string{"", "v2"}).Draw(t, "spec"),
								rapid.SampledFrom([]string{"", wavegate.ReasonWaitingForEarlierSteps, wavegate.ReasonSoaking}).Draw(t, "held"))
						}
					}
					served[space] = func(name string) *v1alpha1.StagedBindingPolicy { return policies[space+"/"+name] }
				}
			}
			waves = append(waves, w)
		}

		series := waveSeries(waves, served, seriesNow)
		type key struct{ wave, space, policy string }
		steps := map[key]string{}
		states := map[key]string{}
		perWave := map[string]int{}
		notReportingOf := map[string]map[string]float64{}
		for _, m := range series {
			perWave[m.labels[0]]++
			switch m.desc {
			case notReportingDesc:
				if notReportingOf[m.labels[0]] == nil {
					notReportingOf[m.labels[0]] = map[string]float64{}
				}
				if _, twice := notReportingOf[m.labels[0]][m.labels[1]]; twice || !slices.Contains(NotReportingReasons, m.labels[1]) {
					t.Fatalf("not reporting series %v repeated or of an unknown reason", m.labels)
				}
				notReportingOf[m.labels[0]][m.labels[1]] = m.value
			case stepDesc:
				k := key{m.labels[0], m.labels[2], m.labels[3]}
				if _, twice := steps[k]; twice {
					t.Fatalf("two series of %v", k)
				}
				if m.value != 1 || !slices.Contains(States, m.labels[5]) {
					t.Fatalf("series %v = %v, want 1 and a state of %v", m.labels, m.value, States)
				}
				steps[k], states[k] = m.labels[1], m.labels[5]
			default:
				t.Fatalf("unexpected series %v", m.desc)
			}
		}
		for i := range waves {
			w := &waves[i]
			if got := perWave[w.Name]; got > 3+64*16 {
				t.Fatalf("wave %s has %d series", w.Name, got)
			}
			down := 0
			for _, step := range w.Spec.Steps {
				for _, space := range step.Spaces {
					for _, policy := range w.Spec.Policies {
						k := key{w.Name, space, policy}
						got, ok := steps[k]
						if _, isServed := served[space]; ok != isServed || (ok && got != step.Name) {
							t.Fatalf("%v: series in step %q (%v), served %v, want step %s", k, got, ok, isServed, step.Name)
						}
					}
					// The gate, for a probe space in a step after this
					// space's alone, at a revision nobody gave up.
					probe := w.DeepCopy()
					probe.Spec.Steps = []hostingv1alpha1.WaveStep{{Name: "earlier", Spaces: []string{space}}, {Name: "later", Spaces: []string{"probe"}}}
					d := wavegate.Gate(probe, "probe", w.Spec.Policies[0], "probe-revision", seriesNow)
					isDown := d.Reason == wavegate.ReasonEarlierSpaceDown
					if isDown {
						down++
					}
					if state, ok := states[key{w.Name, space, w.Spec.Policies[0]}]; ok && (state == StateDown) != isDown {
						t.Fatalf("space %s of wave %s: state %s, while the gate says %s", space, w.Name, state, d.Reason)
					}
				}
			}
			sum := 0.0
			for _, v := range notReportingOf[w.Name] {
				sum += v
			}
			if len(notReportingOf[w.Name]) != len(NotReportingReasons) || sum != float64(down) {
				t.Fatalf("wave %s: not reporting %v, want the %d spaces the gate finds not reporting", w.Name, notReportingOf[w.Name], down)
			}
		}
		for k := range steps {
			if !strings.HasPrefix(k.space, "w"+strings.TrimPrefix(k.wave, "wave")+"-") {
				t.Fatalf("series %v of a space of another wave", k)
			}
		}
	})
}
