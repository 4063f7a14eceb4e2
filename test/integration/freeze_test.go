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
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// TestFreezeAcrossSpaces runs a RolloutFreeze of the hosting cluster over
// two WDSes: one freeze of prod, naming no space, holds the policy web of
// each space at its done dev stage, Frozen saying why, with nothing of
// prod placed, until the freeze is deleted; then both complete. v2 then
// meets a freeze that ends by itself a few seconds on: both wait for its
// end, and go on without anything else happening. A WDS has no
// RolloutFreeze kind: a freeze cannot be written there.
func TestFreezeAcrossSpaces(t *testing.T) {
	const name, app = "web", "frosty"
	wdsA := newSpace(t, "wds-fa", true)
	wdsB := newSpace(t, "wds-fb", true)
	spaces := []*space{wdsA, wdsB}
	for _, s := range spaces {
		if err := register(suite.ctx, s); err != nil {
			t.Fatalf("registering %s: %v", s.Name, err)
		}
		t.Cleanup(func() {
			if err := environment.UnregisterKubeconfigSecret(suite.ctx, suite.hosting.Client, secretNamespace, s.Name); err != nil {
				t.Errorf("unregistering %s: %v", s.Name, err)
			}
		})
	}

	t.Run("a WDS has no RolloutFreeze kind", func(t *testing.T) {
		f := &hostingv1alpha1.RolloutFreeze{ObjectMeta: metav1.ObjectMeta{Name: "mine"}, Spec: hostingv1alpha1.RolloutFreezeSpec{
			Ranges: []hostingv1alpha1.FreezeRange{{Start: metav1.Now(), End: metav1.NewTime(time.Now().Add(time.Hour))}}}}
		if err := wdsA.Client.Create(suite.ctx, f); !meta.IsNoMatchError(err) {
			t.Errorf("creating a RolloutFreeze in %s: %v, want no such kind", wdsA.Name, err)
		}
	})

	freezeProd := func(name string, end time.Time) *hostingv1alpha1.RolloutFreeze {
		f := &hostingv1alpha1.RolloutFreeze{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: hostingv1alpha1.RolloutFreezeSpec{
			Stages: []string{"prod"}, Reason: "code freeze",
			Ranges: []hostingv1alpha1.FreezeRange{{Start: metav1.NewTime(time.Now().Add(-time.Hour)), End: metav1.NewTime(end)}}}}
		if err := suite.hosting.Client.Create(suite.ctx, f); err != nil {
			t.Fatalf("creating RolloutFreeze %s: %v", name, err)
		}
		t.Cleanup(func() {
			if err := client.IgnoreNotFound(suite.hosting.Client.Delete(suite.ctx, f)); err != nil {
				t.Errorf("deleting RolloutFreeze %s: %v", name, err)
			}
		})
		return f
	}
	xmas := freezeProd("xmas-it", time.Now().Add(24*time.Hour))

	for _, s := range spaces {
		createRevisions(t, s, app, "v1", "v2")
		create(t, s, devThenProd(name, app, "v1"))
	}
	openDev := func(s *space, revision string) {
		s.availability.SetAvailable(v1alpha1.StagePlacement(name, "dev").At(revision).String(), true)
		s.sim.Resync()
	}
	// heldAtDev checks that web of s is done in dev, frozen by freeze, and
	// places nothing of prod at revision.
	heldAtDev := func(s *space, freeze, revision string) func() error {
		return func() error {
			p := policies(s).Get(t, name)
			c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionFrozen)
			if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, `stage "prod" does not start: frozen by `+freeze) ||
				!strings.Contains(c.Message, "code freeze") {
				return fmt.Errorf("%s: not frozen by %s: %s", s.Name, freeze, policytest.Describe(p))
			}
			if p.Status.ActiveStage != "dev" || p.Status.UpdateRevision != revision {
				return fmt.Errorf("%s: not held in dev at %s: %s", s.Name, revision, policytest.Describe(p))
			}
			if slices.Contains(bindingPolicies(t, s, name), v1alpha1.StagePlacement(name, "prod").At(revision).String()) {
				return fmt.Errorf("%s: prod placed at %s while frozen", s.Name, revision)
			}
			return nil
		}
	}
	completedAt := func(s *space, revision string) func() error {
		return func() error {
			p := policies(s).Get(t, name)
			if p.Status.Phase != v1alpha1.RolloutCompleted || p.Status.CurrentRevision != revision {
				return fmt.Errorf("%s: %s", s.Name, policytest.Describe(p))
			}
			if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionFrozen); c != nil {
				return fmt.Errorf("%s: completed, still %s: %s", s.Name, v1alpha1.ConditionFrozen, c.Message)
			}
			return nil
		}
	}

	// v1: dev is not frozen; prod is, in both spaces, until the freeze goes.
	for _, s := range spaces {
		policies(s).WaitForActiveStage(t, name, "dev")
		openDev(s, "v1")
	}
	for _, s := range spaces {
		waitFor(t, s.Name+"'s web to be held at prod by the freeze", heldAtDev(s, xmas.Name, "v1"))
	}
	environment.Consistently(t, 2*time.Second, "both spaces to stay frozen", func() error {
		for _, s := range spaces {
			if err := heldAtDev(s, xmas.Name, "v1")(); err != nil {
				return err
			}
		}
		return nil
	})
	if err := suite.hosting.Client.Delete(suite.ctx, xmas); err != nil {
		t.Fatalf("deleting the freeze: %v", err)
	}
	for _, s := range spaces {
		waitFor(t, s.Name+" to complete v1 once the freeze is deleted", completedAt(s, "v1"))
	}

	// v2: a freeze that ends by itself.
	const lasts = 10 * time.Second
	short := freezeProd("short-it", time.Now().Add(lasts))
	for _, s := range spaces {
		updateObject(t, s, name, func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Revision.Name = "v2" })
		policies(s).WaitFor(t, name, s.Name+" to start v2", func(p *v1alpha1.StagedBindingPolicy) bool {
			return p.Status.UpdateRevision == "v2" && p.Status.ActiveStage == "dev"
		})
		openDev(s, "v2")
	}
	for _, s := range spaces {
		waitFor(t, s.Name+"'s v2 to be held at prod by the short freeze", heldAtDev(s, short.Name, "v2"))
	}
	for _, s := range spaces {
		waitFor(t, s.Name+" to complete v2 once the freeze ends", completedAt(s, "v2"))
	}
}
