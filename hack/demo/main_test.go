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

package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// TestWorkDir: --workdir names a directory that may not exist yet; without
// it the demo makes a temporary one.
func TestWorkDir(t *testing.T) {
	wanted := filepath.Join(t.TempDir(), "not", "yet")
	got, err := prepareWorkDir(wanted)
	if err != nil || got != wanted {
		t.Fatalf("prepareWorkDir(%q) = %q, %v", wanted, got, err)
	}
	if info, err := os.Stat(wanted); err != nil || !info.IsDir() {
		t.Errorf("%s after prepareWorkDir: %v", wanted, err)
	}
	temp, err := prepareWorkDir("")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(temp) }()
	if info, err := os.Stat(temp); err != nil || !info.IsDir() {
		t.Errorf("temporary work directory %q: %v", temp, err)
	}
}

// TestDemoWave: the demo's wave orders the sample policy through the WDSes
// one step each, in the order given.
func TestDemoWave(t *testing.T) {
	w := DemoWave([]string{"wds1", "wds2"})
	if w.Name != WaveName || !slices.Equal(w.Spec.Policies, []string{PolicyName}) {
		t.Fatalf("wave %s over %v, want %s over %s", w.Name, w.Spec.Policies, WaveName, PolicyName)
	}
	var steps []string
	for _, s := range w.Spec.Steps {
		steps = append(steps, s.Name+"="+strings.Join(s.Spaces, "+"))
	}
	if want := []string{"wds1=wds1", "wds2=wds2"}; !slices.Equal(steps, want) {
		t.Errorf("steps %v, want %v", steps, want)
	}
}

// TestWaveLine renders each step's spaces with the phase and revision they
// report of the demo's policy, and says when a space has not reported, is
// not served, has not the policy or gave a revision up.
func TestWaveLine(t *testing.T) {
	report := func(space string, engaged bool, policies ...hostingv1alpha1.WavePolicyReport) hostingv1alpha1.WaveSpaceReport {
		return hostingv1alpha1.WaveSpaceReport{Space: space, Engaged: engaged, Policies: policies}
	}
	sample := func(phase, revision, current string, failed ...string) hostingv1alpha1.WavePolicyReport {
		return hostingv1alpha1.WavePolicyReport{Name: PolicyName, Phase: phase, Revision: revision, CurrentRevision: current, FailedRevisions: failed}
	}
	for _, tc := range []struct {
		name    string
		reports []hostingv1alpha1.WaveSpaceReport
		want    string
	}{
		{"no reports", nil, "wave  nginx-wave: 1/2 wds1 [wds1 no report yet] → 2/2 wds2 [wds2 no report yet]"},
		{"policies not yet seen by the stager", []hostingv1alpha1.WaveSpaceReport{
			report("wds1", true, sample("", "", "")), report("wds2", true, sample("", "", ""))},
			"wave  nginx-wave: 1/2 wds1 [wds1 no phase yet] → 2/2 wds2 [wds2 no phase yet]"},
		{"first rolls v1, second pending", []hostingv1alpha1.WaveSpaceReport{
			report("wds1", true, sample("Progressing", "v1", "")), report("wds2", true, sample("Pending", "", ""))},
			"wave  nginx-wave: 1/2 wds1 [wds1 Progressing v1] → 2/2 wds2 [wds2 Pending]"},
		{"first rolls v2 over v1, second completed v1", []hostingv1alpha1.WaveSpaceReport{
			report("wds1", true, sample("Progressing", "v2", "v1")), report("wds2", true, sample("Completed", "v1", "v1"))},
			"wave  nginx-wave: 1/2 wds1 [wds1 Progressing v1→v2] → 2/2 wds2 [wds2 Completed v1]"},
		{"first gave v2 up and is not served; second without the policy", []hostingv1alpha1.WaveSpaceReport{
			report("wds1", false, sample("Aborted", "v2", "v1", "v2")), report("wds2", true,
				hostingv1alpha1.WavePolicyReport{Name: "other", Phase: "Completed", Revision: "v9", CurrentRevision: "v9"})},
			"wave  nginx-wave: 1/2 wds1 [wds1 not served, Aborted v1→v2 (gave up v2)] → 2/2 wds2 [wds2 no policy " + PolicyName + "]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := DemoWave([]string{"wds1", "wds2"})
			w.Status.Spaces = tc.reports
			if got := waveLine(w, PolicyName); got != tc.want {
				t.Errorf("waveLine:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestProgressLineSaysTheWaveHolds: a policy the wave holds says so, with
// the condition's message, in place of its active stage's message.
func TestProgressLineSaysTheWaveHolds(t *testing.T) {
	p := RevisionedPolicy("v2")
	p.Status = v1alpha1.StagedBindingPolicyStatus{
		Phase: v1alpha1.RolloutCompleted, UpdateRevision: "v1", CurrentRevision: "v1",
		Stages: []v1alpha1.StageStatus{{Name: "dev", Phase: v1alpha1.StageSucceeded, Revision: "v1", Message: "dev's message"}},
	}
	if got := progressLine("wds2", p); strings.Contains(got, "wave") {
		t.Errorf("not held, yet: %s", got)
	}
	const msg = `revision "v2" is held: wave nginx-wave step 2/2 (wds2): waiting for revision v2 to complete in 1 of 1 earlier spaces: wds1 (Progressing v2)`
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionWaitingForWave, Status: metav1.ConditionTrue, Reason: "WaitingForEarlierSteps", Message: msg})
	want := "wds2  Completed   [✓ dev@v1]  held by the wave: " + msg
	if got := progressLine("wds2", p); got != want {
		t.Errorf("progressLine:\n got %s\nwant %s", got, want)
	}
	// Held before its first revision: Pending, no stage recorded yet.
	p.Status.Phase, p.Status.Stages, p.Status.UpdateRevision, p.Status.CurrentRevision = v1alpha1.RolloutPending, nil, "", ""
	want = "wds2  Pending     held by the wave: " + msg
	if got := progressLine("wds2", p); got != want {
		t.Errorf("progressLine of a policy held before it started:\n got %s\nwant %s", got, want)
	}
}
