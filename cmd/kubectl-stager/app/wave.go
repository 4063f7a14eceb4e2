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
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// maxWaveCell is the most characters of a wave's name in get's WAVE
// column: a name may have 63, which would double the table's width.
const maxWaveCell = 24

// waveShown reports whether any policy found is in a wave, or held by
// one: get shows its WAVE column only then, so that a WDS without waves
// keeps its table as narrow as before.
func waveShown(found []located) bool {
	for i := range found {
		if p := &found[i].policy; p.Status.Wave != nil || waitingForWave(p) != nil {
			return true
		}
	}
	return false
}

// waitingForWave returns the policy's WaitingForWave condition while it
// is True, or nil.
func waitingForWave(p *v1alpha1.StagedBindingPolicy) *metav1.Condition {
	c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionWaitingForWave)
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	return c
}

// heldByWave reports whether a wave holds the policy's revision.
func heldByWave(p *v1alpha1.StagedBindingPolicy) bool {
	return p.Status.Wave != nil && p.Status.Wave.State == v1alpha1.WaveHeld || waitingForWave(p) != nil
}

// waveCell renders the policy's place in its wave for the WAVE column:
// "regions 2/3" (the wave's name, cut, and the step's position), then
// " held" while the wave holds the revision the spec names; "held" alone
// when the stager cannot tell which wave holds it; "-" in no wave.
func waveCell(p *v1alpha1.StagedBindingPolicy) string {
	ws := p.Status.Wave
	cell := "-"
	if ws != nil && ws.Name != "" {
		cell = cutRunes(ws.Name, maxWaveCell)
		if ws.Position != "" {
			cell += " " + ws.Position
		}
	}
	if heldByWave(p) {
		if cell == "-" {
			return "held"
		}
		cell += " held"
	}
	return cell
}

// cutRunes cuts s to at most n runes, the last one an ellipsis.
func cutRunes(s string, n int) string {
	runes := []rune(s)
	if len(runes) <= n {
		return s
	}
	return string(runes[:n-1]) + "…"
}

// printWave prints explain's Wave lines, for a policy in a wave or held by
// one: the wave, the step and its position, whether it holds or released
// the spec's revision, and, while it holds, the WaitingForWave condition
// (which names the earlier spaces it waits for).
func printWave(w io.Writer, p *v1alpha1.StagedBindingPolicy) {
	ws, c := p.Status.Wave, waitingForWave(p)
	if ws == nil && c == nil {
		return
	}
	where := "a wave the stager cannot name"
	if ws != nil && ws.Name != "" {
		where = ws.Name
		if ws.Step != "" {
			where += ", step " + ws.Step
		}
		if ws.Position != "" {
			where += " (" + ws.Position + ")"
		}
	}
	revision := "the whole downsync (no spec.revision)"
	if ws != nil && ws.Revision != "" {
		revision = "revision " + ws.Revision
	}
	switch {
	case heldByWave(p):
		fprintf(w, "Wave:\t%s: holds %s\n", where, revision)
	default:
		fprintf(w, "Wave:\t%s: released %s\n", where, revision)
	}
	if c != nil {
		fprintf(w, "Waits for wave:\t%s: %s\n", c.Reason, c.Message)
	}
}

// waveTitle is the watch view's note of the policy's wave: "  wave
// regions 2/3 held", or nothing in no wave.
func waveTitle(p *v1alpha1.StagedBindingPolicy) string {
	if cell := waveCell(p); cell != "-" {
		return fmt.Sprintf("  wave %s", printable(cell))
	}
	return ""
}
