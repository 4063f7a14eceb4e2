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
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/dataplane"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// TestRollingOutAChange rolls revision v1 of a workload out with placement
// Accumulate, then v2 beside it, reading each WEC's Deployments from its
// API server at every step:
//   - v2 failing in dev holds the rollout there (Stalled past dev's
//     deadline), test and prod running v1 only;
//   - abort puts dev back on v1 alone, v1 placed before v2 goes;
//   - retried with v2 healthy, v2 reaches dev's WECs first, then test's,
//     then prod's, each only once the stage before runs it available, and
//     every WEC runs v2 alone at the end, no WEC ever running neither
//     (every stage has a condition: each keeps v1 until v2 is available);
//   - v3, done in dev and failing in test, is aborted: v2 comes back to
//     dev's WECs before v3 leaves them, and test and prod keep v2.
func TestRollingOutAChange(t *testing.T) {
	const space, name, app = "wds1", "change", "change"
	v1, v2 := app+"-v1=nginx:v1", app+"-v2=nginx:v2"
	setSpec := func(spec map[string]any) {
		t.Helper()
		patch, err := json.Marshal(map[string]any{"spec": spec})
		if err != nil {
			t.Fatal(err)
		}
		p := &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := wds(space).Patch(suite.ctx, p, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatalf("patching policy %s with %s: %v", name, patch, err)
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app, Labels: map[string]string{policytest.AppLabel: app}}}
	for _, obj := range []client.Object{ns, versionedDeployment(app, "v1")} {
		if err := wds(space).Create(suite.ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	startPolicy(t, space, name, app, func(p *v1alpha1.StagedBindingPolicy) {
		p.Spec.Placement = v1alpha1.PlacementAccumulate
		p.Spec.Revision = &v1alpha1.Revision{Name: "v1"}
		p.Spec.Stages[0].ProgressDeadline = &metav1.Duration{Duration: 20 * time.Second}
		// prod waits for the workload too: a stage without a condition is
		// done once the new revision is placed, and lets the old one go
		// then, before its WECs run the new one.
		p.Spec.Stages[2].Filter, p.Spec.Stages[2].Condition = policytest.Deployments, policytest.Available
	})
	p := policies(space).WaitForPhase(t, name, v1alpha1.RolloutCompleted)
	if p.Status.CurrentRevision != "v1" || p.Status.UpdateRevision != "v1" {
		t.Errorf("completed on v1 with currentRevision %q, updateRevision %q", p.Status.CurrentRevision, p.Status.UpdateRevision)
	}
	everywhere := func(images ...string) map[string][]string {
		return map[string][]string{"dev1": images, "dev2": images, "test1": images, "prod1": images}
	}
	waitForImages(t, app, everywhere(v1))

	// v2 fails in dev: dev runs both and holds; test and prod keep v1.
	failing := dataplane.PodLabel{Key: versionLabel, Value: "v2"}
	for _, wec := range []string{"dev1", "dev2"} {
		if err := suite.stack.RealWECs[wec].FailPods(suite.ctx, app, failing); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = suite.stack.RealWECs[wec].RecoverPods(suite.ctx, app, failing) })
	}
	if err := wds(space).Create(suite.ctx, versionedDeployment(app, "v2")); err != nil {
		t.Fatal(err)
	}
	setSpec(map[string]any{"revision": map[string]any{"name": "v2"}})
	held := map[string][]string{"dev1": {v1, v2}, "dev2": {v1, v2}, "test1": {v1}, "prod1": {v1}}
	waitForImages(t, app, held)
	p = policies(space).WaitForPhase(t, name, v1alpha1.RolloutStalled)
	if p.Status.ActiveStage != "dev" || p.Status.UpdateRevision != "v2" || p.Status.CurrentRevision != "v1" {
		t.Errorf("stalled at %q rolling out %q over %q, want dev, v2 over v1", p.Status.ActiveStage, p.Status.UpdateRevision, p.Status.CurrentRevision)
	}
	if got := stageRevisions(p); !slices.Equal(got, []string{"dev=v1", "test=v1", "prod=v1"}) {
		t.Errorf("stage records %v, want every stage keeping v1", got)
	}
	if err := imagesAre(t, app, held); err != nil {
		t.Errorf("once stalled: %v", err)
	}

	// Abort: dev goes back to v1 alone; v1 never leaves it.
	setSpec(map[string]any{"abort": true})
	watchImages(t, app, func(got map[string][]string) error {
		for _, wec := range []string{"dev1", "dev2", "test1", "prod1"} {
			if !slices.Contains(got[wec], v1) {
				return fmt.Errorf("%s lost v1 during the abort: %v", wec, got[wec])
			}
		}
		return nil
	}, everywhere(v1))
	p = policies(space).WaitForPhase(t, name, v1alpha1.RolloutAborted)
	if got := stageRevisions(p); !slices.Equal(got, []string{"dev=v1", "test=v1", "prod=v1"}) {
		t.Errorf("aborted with stage records %v, want every stage on v1", got)
	}
	for _, wec := range []string{"dev1", "dev2"} {
		if err := suite.stack.RealWECs[wec].RecoverPods(suite.ctx, app, failing); err != nil {
			t.Fatal(err)
		}
	}

	// Retry with v2 healthy: stage by stage, each after the one before runs it.
	firstV2 := map[string]time.Time{}
	var devReadyAt time.Time
	setSpec(map[string]any{"abort": false})
	watchImages(t, app, func(got map[string][]string) error {
		for _, wec := range []string{"dev1", "dev2", "test1", "prod1"} {
			if len(got[wec]) == 0 {
				return fmt.Errorf("%s runs neither revision", wec)
			}
			if slices.Contains(got[wec], v2) && firstV2[wec].IsZero() {
				firstV2[wec] = time.Now()
			}
		}
		if devReadyAt.IsZero() && availableV2(t, app, "dev1", "dev2") {
			devReadyAt = time.Now()
		}
		if !firstV2["test1"].IsZero() && devReadyAt.IsZero() {
			return fmt.Errorf("v2 reached test1 before dev ran it available: %v", got)
		}
		if !firstV2["prod1"].IsZero() && firstV2["test1"].IsZero() {
			return fmt.Errorf("v2 reached prod1 before test1: %v", got)
		}
		return nil
	}, everywhere(v2))
	if !firstV2["dev1"].Before(firstV2["test1"]) || !firstV2["dev2"].Before(firstV2["test1"]) || !firstV2["test1"].Before(firstV2["prod1"]) {
		t.Errorf("v2 reached the WECs at %v: want dev's, then test's, then prod's", firstV2)
	}
	p = policies(space).WaitForPhase(t, name, v1alpha1.RolloutCompleted)
	if p.Status.CurrentRevision != "v2" || !slices.Equal(stageRevisions(p), []string{"dev=v2", "test=v2", "prod=v2"}) {
		t.Errorf("completed with currentRevision %q and records %v, want v2 everywhere", p.Status.CurrentRevision, stageRevisions(p))
	}
	environment.Eventually(t, timeout, "only v2's BindingPolicies left", func() error {
		return onlyBindingPolicies(space, name, "v2")
	})

	// v3 is done in dev (v2 gone there) and fails in test: abort brings v2
	// back to dev's WECs before v3 leaves them, and test and prod keep v2.
	v3 := app + "-v3=nginx:v3"
	failing = dataplane.PodLabel{Key: versionLabel, Value: "v3"}
	if err := suite.stack.RealWECs["test1"].FailPods(suite.ctx, app, failing); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = suite.stack.RealWECs["test1"].RecoverPods(suite.ctx, app, failing) })
	if err := wds(space).Create(suite.ctx, versionedDeployment(app, "v3")); err != nil {
		t.Fatal(err)
	}
	setSpec(map[string]any{"revision": map[string]any{"name": "v3"}})
	waitForImages(t, app, map[string][]string{"dev1": {v3}, "dev2": {v3}, "test1": {v2, v3}, "prod1": {v2}})
	setSpec(map[string]any{"abort": true})
	watchImages(t, app, func(got map[string][]string) error {
		for _, wec := range []string{"dev1", "dev2"} {
			if len(got[wec]) == 0 {
				return fmt.Errorf("%s runs neither v2 nor v3 during the abort", wec)
			}
		}
		for _, wec := range []string{"test1", "prod1"} {
			if !slices.Contains(got[wec], v2) {
				return fmt.Errorf("%s lost v2 during the abort: %v", wec, got[wec])
			}
		}
		return nil
	}, everywhere(v2))
	p = policies(space).WaitForPhase(t, name, v1alpha1.RolloutAborted)
	if p.Status.CurrentRevision != "v2" || !slices.Equal(stageRevisions(p), []string{"dev=v2", "test=v2", "prod=v2"}) {
		t.Errorf("aborted with currentRevision %q and records %v, want v2 everywhere", p.Status.CurrentRevision, stageRevisions(p))
	}
	environment.Eventually(t, timeout, "only v2's BindingPolicies left after the abort", func() error {
		return onlyBindingPolicies(space, name, "v2")
	})
}

// onlyBindingPolicies says how the BindingPolicies of a policy differ from
// one per stage (dev, test, prod) at the given revision.
func onlyBindingPolicies(space, name, revision string) error {
	var bps ksv1alpha1.BindingPolicyList
	if err := wds(space).List(suite.ctx, &bps, client.MatchingLabels{v1alpha1.PolicyLabel: name}); err != nil {
		return err
	}
	var got []string
	for _, bp := range bps.Items {
		got = append(got, bp.Name)
	}
	slices.Sort(got)
	want := []string{name + ".stage.dev." + revision, name + ".stage.prod." + revision, name + ".stage.test." + revision}
	if !slices.Equal(got, want) {
		return fmt.Errorf("BindingPolicies %v, want %v", got, want)
	}
	return nil
}

// stageRevisions returns "<stage>=<revision>" of each stage record.
func stageRevisions(p *v1alpha1.StagedBindingPolicy) []string {
	out := make([]string, 0, len(p.Status.Stages))
	for _, r := range p.Status.Stages {
		out = append(out, r.Name+"="+r.Revision)
	}
	return out
}

// availableV2 reports whether Deployment <app>-v2 is available on every
// one of the WECs.
func availableV2(t testing.TB, app string, wecs ...string) bool {
	t.Helper()
	for _, wec := range wecs {
		deps, err := suite.stack.RealWECs[wec].Deployments(suite.ctx, app)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(deps, func(d dataplane.Deployment) bool { return d.Name == app+"-v2" && d.AvailableReplicas == 1 }) {
			return false
		}
	}
	return true
}

// watchImages reads the WECs' Deployments in namespace every 100 ms until
// they are want, failing the test as soon as check refuses what they run.
func watchImages(t testing.TB, namespace string, check func(map[string][]string) error, want map[string][]string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var got map[string][]string
	for {
		var err error
		if got, err = wecImages(namespace); err != nil {
			t.Fatal(err)
		}
		if err := check(got); err != nil {
			t.Fatal(err)
		}
		if imagesAre(t, namespace, want) == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s the WECs run %v, want %v", timeout, got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
