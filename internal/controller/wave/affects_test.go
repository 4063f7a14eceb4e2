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
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/controller/stagedbindingpolicy"
	wavegate "github.com/kubestellar/workload-stager/internal/wave"
)

var (
	t0      = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	spaces3 = []string{"a", "b", "c"}
	offsets = []time.Duration{-3 * time.Minute, -2*time.Minute - time.Second, -time.Minute, -10 * time.Second, 0, 2*time.Minute + time.Second}
)

// drawEntry draws a report of space, or nil.
func drawEntry(t *rapid.T, space string) *hostingv1alpha1.WaveSpaceReport {
	if rapid.IntRange(0, 5).Draw(t, "missing "+space) == 0 {
		return nil
	}
	e := &hostingv1alpha1.WaveSpaceReport{Space: space, Engaged: rapid.IntRange(0, 5).Draw(t, "down "+space) > 0,
		HeartbeatTime: metav1.NewTime(t0.Add(rapid.SampledFrom(offsets).Draw(t, "beat "+space)))}
	if rapid.IntRange(0, 5).Draw(t, "no policy "+space) > 0 {
		e.Policies = []hostingv1alpha1.WavePolicyReport{drawPolicy(t, space)}
	}
	return e
}

// drawPolicy draws a report of the policy web.
func drawPolicy(t *rapid.T, space string) hostingv1alpha1.WavePolicyReport {
	p := hostingv1alpha1.WavePolicyReport{Name: "web",
		Phase:           rapid.SampledFrom([]string{"Progressing", "Completed", "Stalled", "Aborted"}).Draw(t, "phase "+space),
		Revision:        rapid.SampledFrom([]string{"v1", "v2"}).Draw(t, "revision "+space),
		CurrentRevision: rapid.SampledFrom([]string{"", "v1", "v2"}).Draw(t, "current "+space),
	}
	if rapid.Bool().Draw(t, "completed time "+space) {
		p.CompletedTime = &metav1.Time{Time: t0.Add(rapid.SampledFrom(offsets).Draw(t, "completed "+space))}
	}
	if rapid.IntRange(0, 3).Draw(t, "failed "+space) == 0 {
		p.FailedRevisions = []string{rapid.SampledFrom([]string{"v1", "v2"}).Draw(t, "failed revision "+space)}
	}
	return p
}

// drawWave draws a wave of three steps a, b, c ordering web, with reports.
func drawWave(t *rapid.T) *hostingv1alpha1.RolloutWave {
	w := &hostingv1alpha1.RolloutWave{ObjectMeta: metav1.ObjectMeta{Name: "w", Generation: 1}, Spec: hostingv1alpha1.RolloutWaveSpec{
		Policies: []string{"web"},
		Steps: []hostingv1alpha1.WaveStep{{Name: "one", Spaces: []string{"a"}},
			{Name: "two", Spaces: []string{"b"}, SoakDuration: &metav1.Duration{Duration: time.Minute}}, {Name: "three", Spaces: []string{"c"}}},
	}}
	for _, s := range spaces3 {
		if e := drawEntry(t, s); e != nil {
			w.Status.Spaces = append(w.Status.Spaces, *e)
		}
	}
	return w
}

// TestAffectsEveryChangeOfDecision checks Affects, the filter of the
// requeues on wave changes, against the gate itself: over random waves and
// random changes of one space's report, whenever wave.GateAll decides
// otherwise (released or not, or for another reason) for a policy of a
// space after the change than before, Affects is true for that space: no
// release or hold is left waiting for the periodic requeue. And a
// heartbeat renewed while fresh affects no space: the heartbeats of a wave
// queue nothing.
func TestAffectsEveryChangeOfDecision(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		old := drawWave(t)
		now := t0.Add(rapid.SampledFrom([]time.Duration{0, 30 * time.Second, 2 * time.Minute}).Draw(t, "now"))
		n := old.DeepCopy()
		changed := rapid.SampledFrom(spaces3).Draw(t, "changed space")
		var before *hostingv1alpha1.WaveSpaceReport
		if e := wavegate.SpaceReport(old, changed); e != nil {
			before = e.DeepCopy()
		}
		heartbeatOnly := false
		switch rapid.IntRange(0, 3).Draw(t, "change") {
		case 0: // a new report, or none
			n.Status.Spaces = nil
			for _, s := range spaces3 {
				e := wavegate.SpaceReport(old, s)
				if s == changed {
					e = drawEntry(t, "new "+s)
				}
				if e != nil {
					n.Status.Spaces = append(n.Status.Spaces, *e)
				}
			}
		case 1: // a heartbeat
			if e := wavegate.SpaceReport(n, changed); e != nil {
				e.HeartbeatTime = metav1.NewTime(now)
				heartbeatOnly = true
			}
		case 2: // the spec
			n.Generation++
			n.Spec.Steps[1].SoakDuration = nil
		case 3: // one field of the report, its heartbeat kept
			e := wavegate.SpaceReport(n, changed)
			if e == nil {
				break
			}
			if len(e.Policies) == 0 || rapid.IntRange(0, 4).Draw(t, "engaged or policy") == 0 {
				e.Engaged = !e.Engaged
				break
			}
			fresh := drawPolicy(t, "changed "+changed)
			p := &e.Policies[0]
			switch rapid.IntRange(0, 4).Draw(t, "field") {
			case 0:
				p.Phase = fresh.Phase
			case 1:
				p.Revision = fresh.Revision
			case 2:
				p.CurrentRevision = fresh.CurrentRevision
			case 3:
				p.CompletedTime = fresh.CompletedTime
			case 4:
				p.FailedRevisions = fresh.FailedRevisions
			}
		}
		for _, space := range spaces3 {
			for _, rev := range []string{"", "v1", "v2"} {
				a := wavegate.GateAll([]hostingv1alpha1.RolloutWave{*old}, space, "web", rev, now)
				b := wavegate.GateAll([]hostingv1alpha1.RolloutWave{*n}, space, "web", rev, now)
				if (a.Released != b.Released || a.Reason != b.Reason) && !Affects(old, n, space, now) {
					t.Fatalf("space %s revision %s: decision %s/%v became %s/%v, but Affects is false", space, rev, a.Reason, a.Released, b.Reason, b.Released)
				}
			}
			if heartbeatOnly && before != nil && wavegate.Fresh(before.HeartbeatTime.Time, now, old.Spec.StaleAfter()) && Affects(old, n, space, now) {
				t.Fatalf("space %s: a fresh heartbeat of %s renewed affects it", space, changed)
			}
		}
	})
}

// Gates is what the space's reconciler may ask of the waves.
var _ stagedbindingpolicy.Waves = (*Gates)(nil)
