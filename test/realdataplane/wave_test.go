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

package realdataplane

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/cmd/stager/app"
	"github.com/kubestellar/workload-stager/test/framework/dataplane"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// TestWaveOrdersWhatTheWECsRun runs a RolloutWave [first: wds1] → [second:
// wds2] over policy "waved" on the real data plane, each WDS placing its
// own workload (namespace wave-one from wds1, wave-two from wds2) on dev1
// and dev2, then prod1 (Accumulate, every stage with a condition), and
// reads at every step what the WECs run:
//   - v1: no WEC gets anything of wds2 until wds1 has completed v1;
//   - v2, set in both WDSes at once: while wds1 rolls v2 out, wds2's WECs
//     run v1 and only v1;
//   - once wds1 has completed v2, wds2's WECs move to v2, and none of them
//     ever runs neither revision on the way (make-before-break).
//
// Every stage has a condition: a stage without one lets the old revision go
// once KubeStellar has resolved the new one, and OCM's work agent, removing
// the old ManifestWork while it applies the new one, may delete the
// namespace both place, and the new revision with it (seen on prod1).
func TestWaveOrdersWhatTheWECsRun(t *testing.T) {
	const name = "waved"
	first, second := waveSpace{"wds1", "wave-one"}, waveSpace{"wds2", "wave-two"}
	wecs := []string{"dev1", "dev2", "prod1"}
	createWave(t, &hostingv1alpha1.RolloutWave{
		ObjectMeta: metav1.ObjectMeta{Name: "realdp"},
		Spec: hostingv1alpha1.RolloutWaveSpec{Policies: []string{name}, Steps: []hostingv1alpha1.WaveStep{
			{Name: "first", Spaces: []string{first.space}}, {Name: "second", Spaces: []string{second.space}},
		}},
	})
	for _, s := range []waveSpace{first, second} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.app, Labels: map[string]string{policytest.AppLabel: s.app}}}
		for _, obj := range []client.Object{ns, versionedDeployment(s.app, "v1"), versionedDeployment(s.app, "v2")} {
			if err := wds(s.space).Create(suite.ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("creating %T %s in %s: %v", obj, obj.GetName(), s.space, err)
			}
		}
		p := policytest.Policy(name, map[string]string{policytest.AppLabel: s.app},
			policytest.Stage("dev", policytest.Deployments, policytest.Available),
			policytest.Stage("prod", policytest.Deployments, policytest.Available))
		p.Spec.Placement = v1alpha1.PlacementAccumulate
		p.Spec.Revision = &v1alpha1.Revision{Name: "v1"}
		createPolicy(t, s.space, p)
	}
	completedAt := func(space, revision string) bool {
		p := policies(space).Get(t, name)
		return p.Status.Phase == v1alpha1.RolloutCompleted && p.Status.CurrentRevision == revision
	}
	only := func(revision string) map[string][]string {
		out := map[string][]string{}
		for _, wec := range wecs {
			out[wec] = []string{revision}
		}
		return out
	}

	// v1: wds2 gets nothing placed until wds1 completed v1.
	watchWave(t, "wds1 to complete v1", func() error {
		if got := runs(t, second.app, false); len(got) != 0 {
			return fmt.Errorf("%s's workload reached WECs %v before %s completed v1", second.space, got, first.space)
		}
		return nil
	}, func() bool { return completedAt(first.space, "v1") })
	if c := meta.FindStatusCondition(policies(second.space).Get(t, name).Status.Conditions, v1alpha1.ConditionWaitingForWave); c != nil && c.Status == metav1.ConditionTrue {
		t.Logf("%s still held once %s completed v1 (the release is on its way): %s", second.space, first.space, c.Message)
	}
	watchWave(t, "wds2 to complete v1, its WECs running it", nil, func() bool {
		return completedAt(second.space, "v1") && maps.EqualFunc(runs(t, second.app, true), only("v1"), slices.Equal)
	})

	// v2 in both: wds2's WECs keep v1, and only v1, until wds1 completed v2.
	for _, s := range []waveSpace{first, second} {
		p := policies(s.space).Get(t, name)
		orig := p.DeepCopy()
		p.Spec.Revision.Name = "v2"
		if err := wds(s.space).Patch(suite.ctx, p, client.MergeFrom(orig)); err != nil {
			t.Fatalf("setting the revision of %s in %s to v2: %v", name, s.space, err)
		}
	}
	sawV2InFirst := false
	watchWave(t, "wds1 to complete v2", func() error {
		if got, want := runs(t, second.app, false), only("v1"); !maps.EqualFunc(got, want, slices.Equal) {
			return fmt.Errorf("while %s rolls v2 out, %s's WECs hold %v, want %v", first.space, second.space, got, want)
		}
		if got, want := runs(t, second.app, true), only("v1"); !maps.EqualFunc(got, want, slices.Equal) {
			return fmt.Errorf("while %s rolls v2 out, %s's WECs run %v available, want %v", first.space, second.space, got, want)
		}
		sawV2InFirst = sawV2InFirst || slices.ContainsFunc(wecs, func(wec string) bool { return slices.Contains(runs(t, first.app, true)[wec], "v2") })
		return nil
	}, func() bool { return completedAt(first.space, "v2") })
	if !sawV2InFirst {
		t.Errorf("%s completed v2 without its WECs ever seen running it", first.space)
	}
	// Released: wds2's WECs move to v2, none ever running neither; wds1's
	// lose the v1 they kept once v2 is complete there, just after.
	var last map[string][]string
	watchWave(t, "wds2's WECs to run v2 alone", func() error {
		got := runs(t, second.app, true)
		if !maps.EqualFunc(got, last, slices.Equal) {
			t.Logf("%s's WECs run %v available", second.space, got)
			last = got
		}
		for _, wec := range wecs {
			if len(got[wec]) == 0 {
				return fmt.Errorf("%s runs neither v1 nor v2 of %s's workload: %v", wec, second.space, got)
			}
		}
		return nil
	}, func() bool {
		return completedAt(second.space, "v2") && maps.EqualFunc(runs(t, second.app, false), only("v2"), slices.Equal) &&
			maps.EqualFunc(runs(t, first.app, false), only("v2"), slices.Equal)
	})
}

// waveSpace is a WDS of a wave and the workload (namespace and app) it
// places.
type waveSpace struct{ space, app string }

// createWave creates a RolloutWave in the hosting space, deleted when the
// test ends.
func createWave(t testing.TB, w *hostingv1alpha1.RolloutWave) {
	t.Helper()
	scheme, err := app.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(suite.stack.Hosting.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("making a client of the hosting space: %v", err)
	}
	if err := c.Create(suite.ctx, w); err != nil {
		t.Fatalf("creating RolloutWave %s: %v", w.Name, err)
	}
	t.Cleanup(func() {
		if err := c.Delete(suite.ctx, w); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting RolloutWave %s: %v", w.Name, err)
		}
	})
}

// runs returns, for each WEC that holds a Deployment of app (in namespace
// app), the revisions (versionLabel of versionedDeployment) it holds, or
// with available only those it runs available, sorted.
func runs(t testing.TB, app string, available bool) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, c := range clusters {
		deps, err := suite.stack.RealWECs[c.Name].Deployments(suite.ctx, app)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range deps {
			if !available || d.AvailableReplicas >= 1 {
				out[c.Name] = append(out[c.Name], revisionOf(app, d))
			}
		}
		slices.Sort(out[c.Name])
	}
	return out
}

// revisionOf returns the revision of a Deployment <app>-<revision>.
func revisionOf(app string, d dataplane.Deployment) string {
	return d.Name[min(len(app)+1, len(d.Name)):]
}

// watchWave samples the WECs every 100 ms until done, failing the test as
// soon as check (if any) refuses what they run, or after timeout.
func watchWave(t testing.TB, what string, check func() error, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if check != nil {
			if err := check(); err != nil {
				t.Fatal(err)
			}
		}
		if done() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting %s for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
