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
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/wave"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// authorRole is what the tests grant a policy author in a WDS: every verb
// on StagedBindingPolicies, which in RBAC does not reach their status
// subresource. The space chart ships no author role; a WDS admin writes one
// like it.
var authorRole = &rbacv1.ClusterRole{
	ObjectMeta: metav1.ObjectMeta{Name: "test-policy-author"},
	Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{v1alpha1.GroupVersion.Group},
		Resources: []string{"stagedbindingpolicies"},
		Verbs:     []string{rbacv1.VerbAll},
	}, {
		// The hosting kinds, were their CRD installed in the WDS.
		APIGroups: []string{hostingv1alpha1.GroupVersion.Group},
		Resources: []string{"rolloutwaves", "rolloutwaves/status"},
		Verbs:     []string{rbacv1.VerbAll},
	}},
}

// TestWaveTrustOfALaterSpace runs a RolloutWave [early] → [late] over
// policy web and gives late's policy author (authorRole, no access to the
// hosting cluster) every move the issue names, against real API servers.
// The author cannot make a wave: the kind is not in the WDS, and a wave the
// WDS's admin writes there once the CRD is installed is not read. The
// author cannot speed the wave up: their policy's status is refused to
// them, and labels, annotations, a restart or another revision name leave
// web held, Pending with nothing placed. The author cannot name early's
// other policies: a policy named like one and labelled with the wave is
// not ordered, and nothing of early's other policy, its stages or its
// revision reaches late's policies, their Events or the wave's status.
// Once early completes v1, late's web starts: the hold was the wave's.
func TestWaveTrustOfALaterSpace(t *testing.T) {
	const ordered, other, app = "web", "private", "trusty"
	// secrets are what late must never see of early: the stage names of
	// early's web and the name and revision of its unordered policy.
	const hiddenStage, secretRevision = "hidden-canary", "secret-rev"
	early := newSpace(t, "wds-early", true)
	late := newSpace(t, "wds-late", true)
	for _, s := range []*space{early, late} {
		if err := register(suite.ctx, s); err != nil {
			t.Fatalf("registering %s: %v", s.Name, err)
		}
		t.Cleanup(func() {
			if err := environment.UnregisterKubeconfigSecret(suite.ctx, suite.hosting.Client, secretNamespace, s.Name); err != nil {
				t.Errorf("unregistering %s: %v", s.Name, err)
			}
		})
	}
	w := &hostingv1alpha1.RolloutWave{ObjectMeta: metav1.ObjectMeta{Name: "trust"}, Spec: hostingv1alpha1.RolloutWaveSpec{
		Policies: []string{ordered},
		Steps:    []hostingv1alpha1.WaveStep{{Name: "early", Spaces: []string{early.Name}}, {Name: "late", Spaces: []string{late.Name}}},
	}}
	if err := suite.hosting.Client.Create(suite.ctx, w); err != nil {
		t.Fatalf("creating the RolloutWave: %v", err)
	}
	t.Cleanup(func() {
		if err := suite.hosting.Client.Delete(suite.ctx, w); err != nil {
			t.Errorf("deleting the RolloutWave: %v", err)
		}
	})
	policy := func(name, revision, firstStage string) *v1alpha1.StagedBindingPolicy {
		p := devThenProd(name, app, revision)
		p.Spec.Stages[0].Name = firstStage
		return p
	}

	// early: web at v1 in its first stage, and a policy the wave does not order.
	createRevisions(t, early, app, "v1", secretRevision)
	create(t, early, policy(ordered, "v1", hiddenStage))
	create(t, early, policy(other, secretRevision, hiddenStage))
	policies(early).WaitForActiveStage(t, ordered, hiddenStage)
	policies(early).WaitForActiveStage(t, other, hiddenStage)

	// late: the author writes web at v1, and a policy named like early's
	// other one, labelled and annotated with the wave as if to join it.
	createRevisions(t, late, app, "v1", "v1-hotfix")
	author := addAuthor(t, late)
	if err := author.Create(suite.ctx, policy(ordered, "v1", "dev")); err != nil {
		t.Fatalf("the author creating %s: %v", ordered, err)
	}
	joining := policy(other, "v1", "dev")
	joining.Labels = map[string]string{"community.kubestellar.io/wave": w.Name}
	joining.Annotations = map[string]string{"community.kubestellar.io/wave": w.Name + "/" + early.Name}
	if err := author.Create(suite.ctx, joining); err != nil {
		t.Fatalf("the author creating %s: %v", other, err)
	}
	lates := policies(late)
	held := func(revision string) func() error {
		return func() error {
			p := lates.Get(t, ordered)
			c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionWaitingForWave)
			if c == nil || c.Status != metav1.ConditionTrue || c.Reason != wave.ReasonWaitingForEarlierSteps {
				return fmt.Errorf("%s/%s not waiting for early: %s", late.Name, ordered, policytest.Describe(p))
			}
			if !strings.Contains(c.Message, fmt.Sprintf("%q", revision)) {
				return fmt.Errorf("%s/%s is not held at %s: %s", late.Name, ordered, revision, c.Message)
			}
			if p.Status.Phase != v1alpha1.RolloutPending || p.Status.UpdateRevision != "" {
				return fmt.Errorf("%s/%s started: %s", late.Name, ordered, policytest.Describe(p))
			}
			if bps := bindingPolicies(t, late, ordered); len(bps) != 0 {
				return fmt.Errorf("%s/%s placed %v", late.Name, ordered, bps)
			}
			return nil
		}
	}
	waitFor(t, "late's web to wait for early", held("v1"))
	t.Logf("%s/%s: %s", late.Name, ordered, meta.FindStatusCondition(lates.Get(t, ordered).Status.Conditions, v1alpha1.ConditionWaitingForWave).Message)

	t.Run("the author cannot name early's other policies", func(t *testing.T) {
		p := lates.WaitForActiveStage(t, other, "dev")
		if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionWaitingForWave); c != nil {
			t.Errorf("%s, labelled with the wave, is ordered by it: %+v", other, c)
		}
		waitFor(t, "each space to report web alone", func() error {
			got := &hostingv1alpha1.RolloutWave{}
			if err := suite.hosting.Client.Get(suite.ctx, client.ObjectKeyFromObject(w), got); err != nil {
				return err
			}
			for _, s := range []*space{early, late} {
				i := slices.IndexFunc(got.Status.Spaces, func(r hostingv1alpha1.WaveSpaceReport) bool { return r.Space == s.Name })
				if i < 0 {
					return fmt.Errorf("no report of %s", s.Name)
				}
				if r := got.Status.Spaces[i]; len(r.Policies) != 1 || r.Policies[0].Name != ordered {
					return fmt.Errorf("%s reports %+v, want %s alone", s.Name, r.Policies, ordered)
				}
			}
			if data, _ := json.Marshal(got.Status); strings.Contains(string(data), secretRevision) || strings.Contains(string(data), hiddenStage) {
				return fmt.Errorf("the wave's status shows what early's other policy or stages hold: %s", data)
			}
			return nil
		})
		for _, name := range []string{ordered, other} {
			p := lates.Get(t, name)
			shown, _ := json.Marshal(p.Status)
			events, _ := json.Marshal(lates.EventCounts(t, p))
			for _, secret := range []string{secretRevision, hiddenStage} {
				if strings.Contains(string(shown), secret) || strings.Contains(string(events), secret) {
					t.Errorf("late's %s shows %q of early: status %s, Events %s", name, secret, shown, events)
				}
			}
		}
	})

	t.Run("the author cannot make a wave", func(t *testing.T) {
		// The wave a later author would want: their space first, nothing before.
		mine := &hostingv1alpha1.RolloutWave{ObjectMeta: metav1.ObjectMeta{Name: "mine"}, Spec: hostingv1alpha1.RolloutWaveSpec{
			Policies: []string{ordered},
			Steps:    []hostingv1alpha1.WaveStep{{Name: "first", Spaces: []string{late.Name}}, {Name: "then", Spaces: []string{early.Name}}},
		}}
		if err := author.Create(suite.ctx, mine.DeepCopy()); !meta.IsNoMatchError(err) {
			t.Errorf("the author creating a RolloutWave in %s: %v, want no such kind", late.Name, err)
		}
		// Even the WDS's admin, who may install the kind there, makes a wave
		// the stager never reads: it reads the hosting cluster's alone.
		hostingCRDs, err := environment.HostingCRDDir()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := envtest.InstallCRDs(late.Config, envtest.CRDInstallOptions{Paths: []string{hostingCRDs}, ErrorIfPathMissing: true}); err != nil {
			t.Fatalf("installing the hosting CRDs in %s: %v", late.Name, err)
		}
		waitFor(t, "the author to create a RolloutWave in "+late.Name, func() error {
			return client.IgnoreAlreadyExists(author.Create(suite.ctx, mine.DeepCopy()))
		})
		// The next subtest's edits make the stager run web again with it.
		environment.Consistently(t, 2*time.Second, "late's web to stay held beside the WDS's wave", held("v1"))
	})

	t.Run("the author cannot speed the wave up", func(t *testing.T) {
		p := lates.Get(t, ordered)
		p.Status.Phase, p.Status.UpdateRevision, p.Status.CurrentRevision = v1alpha1.RolloutCompleted, "v1", "v1"
		if err := author.Status().Update(suite.ctx, p); !apierrors.IsForbidden(err) {
			t.Errorf("the author updating %s's status: %v, want Forbidden", ordered, err)
		}
		patch := []byte(`{"status":{"phase":"Completed","updateRevision":"v1","currentRevision":"v1"}}`)
		if err := author.Status().Patch(suite.ctx, lates.Get(t, ordered), client.RawPatch("application/merge-patch+json", patch)); !apierrors.IsForbidden(err) {
			t.Errorf("the author patching %s's status: %v, want Forbidden", ordered, err)
		}
		// Everything else the author may write: the wave's name in a label
		// and an annotation, a restart, another revision name. The run that
		// holds v1-hotfix has seen all of it.
		edit := func(change func(*v1alpha1.StagedBindingPolicy)) {
			t.Helper()
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error { // the stager writes the status meanwhile
				p := lates.Get(t, ordered)
				change(p)
				return author.Update(suite.ctx, p)
			})
			if err != nil {
				t.Fatalf("the author updating %s: %v", ordered, err)
			}
		}
		edit(func(p *v1alpha1.StagedBindingPolicy) {
			p.Labels = map[string]string{"community.kubestellar.io/wave": w.Name}
			p.Annotations = map[string]string{
				"community.kubestellar.io/wave":   w.Name,
				v1alpha1.RestartedAtAnnotation:    time.Now().UTC().Format(time.RFC3339),
				"community.kubestellar.io/step":   "early",
				"community.kubestellar.io/status": "Completed",
			}
			p.Spec.Revision.Name = "v1-hotfix"
		})
		waitFor(t, "late's web to be held at v1-hotfix", held("v1-hotfix"))
		environment.Consistently(t, 2*time.Second, "late's web to stay held", held("v1-hotfix"))
		edit(func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Revision.Name = "v1" })
		waitFor(t, "late's web to be held at v1 again", held("v1"))
	})

	// early completes v1: late's web starts it.
	early.availability.SetAvailable(v1alpha1.StagePlacement(ordered, hiddenStage).At("v1").String(), true)
	early.sim.Resync()
	lates.WaitFor(t, ordered, "to start v1 once early completed it", func(p *v1alpha1.StagedBindingPolicy) bool {
		return p.Status.UpdateRevision == "v1" && p.Status.ActiveStage == "dev"
	})
}

// addAuthor binds a new user of s to authorRole and returns a client acting
// as that user: a policy author of the space.
func addAuthor(t *testing.T, s *space) client.Client {
	t.Helper()
	const user = "policy-author"
	if err := client.IgnoreAlreadyExists(s.Client.Create(suite.ctx, authorRole.DeepCopy())); err != nil {
		t.Fatalf("creating %s in %s: %v", authorRole.Name, s.Name, err)
	}
	if err := s.Grant(suite.ctx, user, authorRole.Name); err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := s.AddUser(user)
	if err != nil {
		t.Fatal(err)
	}
	config, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatalf("the kubeconfig of %s: %v", user, err)
	}
	c, err := client.New(config, client.Options{Scheme: s.Client.Scheme()})
	if err != nil {
		t.Fatalf("a client of %s in %s: %v", user, s.Name, err)
	}
	return c
}
