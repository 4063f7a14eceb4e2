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

package v1alpha1_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
)

// newWave is a valid wave of three steps ordering the policy web.
func newWave(name string) *v1alpha1.RolloutWave {
	return &v1alpha1.RolloutWave{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.RolloutWaveSpec{
			Policies:         []string{"web", "api.v2"},
			ReportStaleAfter: &metav1.Duration{Duration: time.Minute},
			Steps: []v1alpha1.WaveStep{
				{Name: "canary", Spaces: []string{"wds-canary"}},
				{Name: "eu", Spaces: []string{"kubeconfig#wds-eu", "kcp#root:org:wds-eu2"}, SoakDuration: &metav1.Duration{Duration: 10 * time.Minute}},
				{Name: "us", Spaces: []string{"wds-us"}},
			},
		},
	}
}

// spaceNames returns n distinct space names.
func spaceNames(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return names
}

// TestRolloutWaveOfTheAPIServer checks the RolloutWave CRD against a real
// API server: a valid wave round-trips; each bound and rule of the spec
// refuses what it should, as do the bounds of a report; and two replicas
// reporting two spaces into the wave's status, each under its space's own
// field manager, keep each other's reports (the shared medium of
// docs/proposals/waves.md).
func TestRolloutWaveOfTheAPIServer(t *testing.T) {
	c := startHosting(t)
	ctx := t.Context()

	t.Run("a valid wave round-trips", func(t *testing.T) {
		want := newWave("valid")
		if err := c.Create(ctx, want.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		got := &v1alpha1.RolloutWave{}
		if err := c.Get(ctx, client.ObjectKey{Name: "valid"}, got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Spec, want.Spec) {
			t.Errorf("stored spec %+v, want %+v", got.Spec, want.Spec)
		}
		if got.Spec.StaleAfter() != time.Minute || (&v1alpha1.RolloutWaveSpec{}).StaleAfter() != v1alpha1.DefaultReportStaleAfter {
			t.Errorf("StaleAfter: %v, and %v unset", got.Spec.StaleAfter(), (&v1alpha1.RolloutWaveSpec{}).StaleAfter())
		}
		// The largest wave the bounds allow is admitted: the rules' cost
		// fits the API server's budget at the bounds.
		largest := newWave("largest")
		largest.Spec.Policies = spaceNames("p", 16)
		largest.Spec.Steps = nil
		for i := range 16 {
			largest.Spec.Steps = append(largest.Spec.Steps, v1alpha1.WaveStep{Name: fmt.Sprintf("s%d", i), Spaces: spaceNames(fmt.Sprintf("%s-%d-", strings.Repeat("x", 400), i), 4)})
		}
		if err := c.Create(ctx, largest); err != nil {
			t.Errorf("the largest wave: %v", err)
		}
	})

	t.Run("invalid waves are refused", func(t *testing.T) {
		checkRefusals(t, c, func() *v1alpha1.RolloutWave { return newWave("invalid") }, map[string]refusal[*v1alpha1.RolloutWave]{
			"no policy":               {func(w *v1alpha1.RolloutWave) { w.Spec.Policies = nil }, "spec.policies"},
			"17 policies":             {func(w *v1alpha1.RolloutWave) { w.Spec.Policies = spaceNames("p", 17) }, "spec.policies"},
			"a policy name not DNS":   {func(w *v1alpha1.RolloutWave) { w.Spec.Policies = []string{"Web"} }, "spec.policies[0]"},
			"a policy name too long":  {func(w *v1alpha1.RolloutWave) { w.Spec.Policies = []string{strings.Repeat("a", 64)} }, "spec.policies[0]"},
			"a policy named twice":    {func(w *v1alpha1.RolloutWave) { w.Spec.Policies = []string{"web", "web"} }, "Duplicate value"},
			"no step":                 {func(w *v1alpha1.RolloutWave) { w.Spec.Steps = nil }, "spec.steps"},
			"17 steps":                {func(w *v1alpha1.RolloutWave) { w.Spec.Steps = manySteps(17) }, "spec.steps"},
			"two steps of one name":   {func(w *v1alpha1.RolloutWave) { w.Spec.Steps[2].Name = "eu" }, "Duplicate value"},
			"a step name not a label": {func(w *v1alpha1.RolloutWave) { w.Spec.Steps[0].Name = "can.ary" }, "spec.steps[0].name"},
			"a step without spaces":   {func(w *v1alpha1.RolloutWave) { w.Spec.Steps[0].Spaces = nil }, "spec.steps[0].spaces"},
			"an empty space name":     {func(w *v1alpha1.RolloutWave) { w.Spec.Steps[0].Spaces = []string{""} }, "spec.steps[0].spaces[0]"},
			"a space name too long":   {func(w *v1alpha1.RolloutWave) { w.Spec.Steps[0].Spaces = []string{strings.Repeat("s", 513)} }, "spec.steps[0].spaces[0]"},
			"a space twice in a step": {func(w *v1alpha1.RolloutWave) { w.Spec.Steps[0].Spaces = []string{"a", "a"} }, "Duplicate value"},
			"a space in two steps": {func(w *v1alpha1.RolloutWave) { w.Spec.Steps[2].Spaces = append(w.Spec.Steps[2].Spaces, "wds-canary") },
				"a space may be in one step only"},
			"65 spaces in all": {func(w *v1alpha1.RolloutWave) {
				w.Spec.Steps[0].Spaces, w.Spec.Steps[1].Spaces = spaceNames("a", 33), spaceNames("b", 32)
			}, "at most 64 spaces"},
			"a negative soak":         {func(w *v1alpha1.RolloutWave) { w.Spec.Steps[1].SoakDuration = &metav1.Duration{Duration: -time.Second} }, "soakDuration may not be negative"},
			"a stale bound under 30s": {func(w *v1alpha1.RolloutWave) { w.Spec.ReportStaleAfter = &metav1.Duration{Duration: 10 * time.Second} }, "reportStaleAfter must be at least 30s"},
			"a wave name over 63":     {func(w *v1alpha1.RolloutWave) { w.Name = strings.Repeat("w", 64) }, "the wave name must be at most 63 characters"},
		})
	})

	t.Run("replicas keep each other's reports", func(t *testing.T) {
		w := newWave("reported")
		if err := c.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		now := metav1.NewTime(time.Now().Truncate(time.Second))
		report := func(space, manager, revision string) {
			t.Helper()
			patch := &v1alpha1.RolloutWave{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "RolloutWave"},
				ObjectMeta: metav1.ObjectMeta{Name: "reported"},
				Status: v1alpha1.RolloutWaveStatus{Spaces: []v1alpha1.WaveSpaceReport{{Space: space, Engaged: true, HeartbeatTime: now,
					Policies: []v1alpha1.WavePolicyReport{{Name: "web", Phase: "Completed", Revision: revision, CurrentRevision: revision, CompletedTime: &now}}}}}}
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(patch)
			if err != nil {
				t.Fatal(err)
			}
			delete(u, "spec") // a report applies its own entry of the status only
			ac := client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u})
			if err := c.Status().Apply(ctx, ac, client.FieldOwner(manager), client.ForceOwnership); err != nil {
				t.Fatalf("report of %s: %v", space, err)
			}
		}
		report("wds-canary", "stager-wave-space-a", "v1")
		report("kubeconfig#wds-eu", "stager-wave-space-b", "v1")
		report("wds-canary", "stager-wave-space-a", "v2") // the same space again, by whichever replica serves it now
		got := &v1alpha1.RolloutWave{}
		if err := c.Get(ctx, client.ObjectKey{Name: "reported"}, got); err != nil {
			t.Fatal(err)
		}
		revisions := map[string]string{}
		for _, s := range got.Status.Spaces {
			revisions[s.Space] = s.Policies[0].CurrentRevision
		}
		if want := map[string]string{"wds-canary": "v2", "kubeconfig#wds-eu": "v1"}; !reflect.DeepEqual(revisions, want) {
			t.Errorf("reports %v, want %v", revisions, want)
		}
		if !reflect.DeepEqual(got.Spec, w.Spec) {
			t.Errorf("a report changed the spec: %+v", got.Spec)
		}
		bad := got.DeepCopy()
		bad.Status.Spaces[0].Policies[0].Phase = "Done"
		if err := c.Status().Update(ctx, bad); err == nil || !strings.Contains(err.Error(), "phase") {
			t.Errorf("a report of phase Done: %v, want it refused", err)
		}
		bad = got.DeepCopy()
		bad.Status.Spaces[0].Policies[0].FailedRevisions = spaceNames("r", 17)
		if err := c.Status().Update(ctx, bad); err == nil || !strings.Contains(err.Error(), "failedRevisions") {
			t.Errorf("a report of 17 given-up revisions: %v, want it refused", err)
		}
	})
}

// manySteps returns n valid steps of one space each.
func manySteps(n int) []v1alpha1.WaveStep {
	steps := make([]v1alpha1.WaveStep, n)
	for i := range steps {
		steps[i] = v1alpha1.WaveStep{Name: fmt.Sprintf("s%d", i), Spaces: []string{fmt.Sprintf("wds%d", i)}}
	}
	return steps
}

// TestRolloutWaveIsTheHostingClustersOnly: no space gets the RolloutWave's
// CRD, from the space chart or kcp's APIExport, so no policy author can
// create a wave where the stager would read it; the stager reads waves
// from its hosting cluster only.
func TestRolloutWaveIsTheHostingClustersOnly(t *testing.T) {
	checkHostingClustersOnly(t, "RolloutWave", "rolloutwaves")
}
