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

package integration

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// versionLabel is the default spec.revision.labelKey.
const versionLabel = "app.kubernetes.io/version"

// createRevisions creates in s a Deployment of app for each revision,
// labelled with app and, under versionLabel, the revision.
func createRevisions(t *testing.T, s *space, app string, revisions ...string) {
	t.Helper()
	for _, rev := range revisions {
		d := policytest.Deployment(workloadNamespace, app+"-"+rev)
		d.Labels = map[string]string{policytest.AppLabel: app, versionLabel: rev}
		if err := s.Client.Create(suite.ctx, d); err != nil {
			t.Fatalf("creating Deployment %s in %s: %v", d.Name, s.Name, err)
		}
	}
}

// devThenProd is a policy of app's Deployments at revision: dev, done once
// they are available, then prod.
func devThenProd(name, app, revision string) *v1alpha1.StagedBindingPolicy {
	p := policytest.Policy(name, map[string]string{policytest.AppLabel: app},
		policytest.Stage("dev", policytest.Deployments, policytest.Available),
		policytest.Stage("prod", "", ""))
	p.Spec.Revision = &v1alpha1.Revision{Name: revision}
	return p
}

// TestWaveOrdersRevisionsAcrossSpaces runs a RolloutWave [a: wds-a] → [b:
// wds-b] over policy web end to end: the stager reports each space into the
// wave's status and gates wds-b's starts on it. wds-b's v1 waits, Pending
// and WaitingForWave, while wds-a rolls v1 out, and starts once wds-a has
// completed it; v2, set in both, waits in wds-b (which keeps v1) until
// wds-a completes v2.
func TestWaveOrdersRevisionsAcrossSpaces(t *testing.T) {
	const name, app = "web", "wavy"
	wdsA := newSpace(t, "wds-a", true)
	wdsB := newSpace(t, "wds-b", true)
	for _, s := range []*space{wdsA, wdsB} {
		if err := register(suite.ctx, s); err != nil {
			t.Fatalf("registering %s: %v", s.Name, err)
		}
		t.Cleanup(func() {
			if err := environment.UnregisterKubeconfigSecret(suite.ctx, suite.hosting.Client, secretNamespace, s.Name); err != nil {
				t.Errorf("unregistering %s: %v", s.Name, err)
			}
		})
	}
	w := &hostingv1alpha1.RolloutWave{ObjectMeta: metav1.ObjectMeta{Name: "ab"}, Spec: hostingv1alpha1.RolloutWaveSpec{
		Policies: []string{name},
		Steps:    []hostingv1alpha1.WaveStep{{Name: "a", Spaces: []string{wdsA.Name}}, {Name: "b", Spaces: []string{wdsB.Name}}},
	}}
	if err := suite.hosting.Client.Create(suite.ctx, w); err != nil {
		t.Fatalf("creating the RolloutWave: %v", err)
	}
	t.Cleanup(func() {
		if err := suite.hosting.Client.Delete(suite.ctx, w); err != nil {
			t.Errorf("deleting the RolloutWave: %v", err)
		}
	})
	for _, s := range []*space{wdsA, wdsB} {
		createRevisions(t, s, app, "v1", "v2")
		create(t, s, devThenProd(name, app, "v1"))
	}
	a, b := policies(wdsA), policies(wdsB)
	completedAt := func(s policytest.Space, revision string) func() error {
		return func() error {
			p := s.Get(t, name)
			if p.Status.Phase != v1alpha1.RolloutCompleted || p.Status.CurrentRevision != revision {
				return fmt.Errorf("%s: %s", s.Name, policytest.Describe(p))
			}
			return nil
		}
	}
	// openDev makes the WECs of dev at revision report the workload available.
	openDev := func(s *space, revision string) {
		s.availability.SetAvailable(v1alpha1.StagePlacement(name, "dev").At(revision).String(), true)
		s.sim.Resync()
	}

	// v1: wds-a rolls out, wds-b waits with nothing placed.
	a.WaitForActiveStage(t, name, "dev")
	heldAt := func(phase v1alpha1.RolloutPhase, current string) func() error {
		return func() error {
			p := b.Get(t, name)
			c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionWaitingForWave)
			if c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Errorf("wds-b not held by the wave: %s", policytest.Describe(p))
			}
			if p.Status.Phase != phase || p.Status.CurrentRevision != current {
				return fmt.Errorf("wds-b is not %s at %q: %s", phase, current, policytest.Describe(p))
			}
			return wavePlace(p, v1alpha1.WaveHeld, p.Spec.SpecRevision())
		}
	}
	waitFor(t, "wds-b's web to wait for the wave", heldAt(v1alpha1.RolloutPending, ""))
	if got := bindingPolicies(t, wdsB, name); len(got) != 0 {
		t.Fatalf("wds-b placed %v while held", got)
	}
	environment.Consistently(t, 2*time.Second, "wds-b to stay held while wds-a is in dev", heldAt(v1alpha1.RolloutPending, ""))

	openDev(wdsA, "v1")
	waitFor(t, "wds-a to complete v1", completedAt(a, "v1"))
	b.WaitForActiveStage(t, name, "dev")
	openDev(wdsB, "v1")
	waitFor(t, "wds-b to complete v1", completedAt(b, "v1"))
	if c := meta.FindStatusCondition(b.Get(t, name).Status.Conditions, v1alpha1.ConditionWaitingForWave); c != nil {
		t.Fatalf("wds-b still has %s once released: %+v", v1alpha1.ConditionWaitingForWave, c)
	}
	if err := wavePlace(b.Get(t, name), v1alpha1.WaveReleased, "v1"); err != nil {
		t.Fatal(err)
	}
	if p := a.Get(t, name); p.Status.Wave == nil || p.Status.Wave.Position != "1/2" || p.Status.Wave.State != v1alpha1.WaveReleased {
		t.Fatalf("wds-a's status.wave is %+v, want step a at 1/2, Released", p.Status.Wave)
	}

	// v2 in both: wds-b keeps v1 until wds-a completes v2.
	for _, s := range []*space{wdsA, wdsB} {
		updateObject(t, s, name, func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Revision.Name = "v2" })
	}
	a.WaitFor(t, name, "wds-a to start v2", func(p *v1alpha1.StagedBindingPolicy) bool {
		return p.Status.UpdateRevision == "v2" && p.Status.ActiveStage == "dev"
	})
	waitFor(t, "wds-b's v2 to wait for the wave", heldAt(v1alpha1.RolloutCompleted, "v1"))
	environment.Consistently(t, 2*time.Second, "wds-b to keep v1 while wds-a rolls v2 out", func() error {
		if err := heldAt(v1alpha1.RolloutCompleted, "v1")(); err != nil {
			return err
		}
		if p := b.Get(t, name); p.Status.UpdateRevision != "v1" {
			return fmt.Errorf("wds-b started %q", p.Status.UpdateRevision)
		}
		return nil
	})
	openDev(wdsA, "v2")
	waitFor(t, "wds-a to complete v2", completedAt(a, "v2"))
	b.WaitFor(t, name, "wds-b to start v2", func(p *v1alpha1.StagedBindingPolicy) bool { return p.Status.UpdateRevision == "v2" })
	openDev(wdsB, "v2")
	waitFor(t, "wds-b to complete v2", completedAt(b, "v2"))
	if err := wavePlace(b.Get(t, name), v1alpha1.WaveReleased, "v2"); err != nil {
		t.Fatal(err)
	}
}

// wavePlace checks the policy's status.wave, as the reconciler wrote it
// through the API server: wave ab, step b, 2/2, in state at revision.
func wavePlace(p *v1alpha1.StagedBindingPolicy, state v1alpha1.WaveState, revision string) error {
	w := p.Status.Wave
	if w == nil || w.Name != "ab" || w.Step != "b" || w.Position != "2/2" || w.State != state || w.Revision != revision {
		return fmt.Errorf("wds-b's status.wave is %+v, want wave ab step b 2/2 %s at %q", w, state, revision)
	}
	return nil
}
