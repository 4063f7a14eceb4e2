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

package e2e

// The release manager's controls (issue 57) with the stager binary and
// KubeStellar's real controller-manager. test/integration covers each rule
// in more detail with an injected clock; here each runs on wall time. The
// regression watch is in TestAnalyses, where a real Prometheus answers the
// analysis it runs again.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	plugin "github.com/kubestellar/workload-stager/cmd/kubectl-stager/app"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

// TestFreezeAcrossTwoWDSes freezes prod in wds1 and wds2 with one
// RolloutFreeze of the hosting cluster: both policies finish test and wait,
// Frozen, with nothing of prod placed, until the freeze is deleted; then
// both complete.
func TestFreezeAcrossTwoWDSes(t *testing.T) {
	const name = "frozen"
	spaces := []string{"wds1", "wds2"}
	ensureWDS2(t)
	hosting := hostingClient(t)
	freeze := &hostingv1alpha1.RolloutFreeze{ObjectMeta: metav1.ObjectMeta{Name: "e2e-prod-freeze"}, Spec: hostingv1alpha1.RolloutFreezeSpec{
		Spaces: spaces, Stages: []string{"prod"}, Reason: "year-end freeze",
		Ranges: []hostingv1alpha1.FreezeRange{{Start: metav1.NewTime(time.Now().Add(-time.Hour)), End: metav1.NewTime(time.Now().Add(24 * time.Hour))}}}}
	if err := hosting.Create(suite.ctx, freeze); err != nil {
		t.Fatalf("creating RolloutFreeze %s: %v", freeze.Name, err)
	}
	t.Cleanup(func() { _ = client.IgnoreNotFound(hosting.Delete(context.Background(), freeze)) })
	for _, space := range spaces {
		createWorkload(t, space, name, false)
		if err := wds(space).Create(suite.ctx, policytest.ThreeStages(name, name)); err != nil {
			t.Fatalf("creating %s in %s: %v", name, space, err)
		}
		t.Cleanup(func() { policies(space).Delete(t, name) })
	}
	for _, space := range spaces {
		policies(space).WaitForActiveStage(t, name, "dev")
		makeAvailable(space, name, "dev")
		policies(space).WaitForActiveStage(t, name, "test")
		makeAvailable(space, name, "test")
	}
	frozen := func(space string) error {
		p := policies(space).Get(t, name)
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionFrozen)
		if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, freeze.Name) || !strings.Contains(c.Message, freeze.Spec.Reason) {
			return fmt.Errorf("%s: not frozen by %s: %s", space, freeze.Name, policytest.Describe(p))
		}
		if p.Status.ActiveStage != "test" || p.Status.Phase == v1alpha1.RolloutCompleted {
			return fmt.Errorf("%s: moved past test while frozen: %s", space, policytest.Describe(p))
		}
		if bps := bindingPolicyNames(t, space, name); slices.Contains(bps, v1alpha1.StagePlacement(name, "prod").String()) {
			return fmt.Errorf("%s: prod placed while frozen: %v", space, bps)
		}
		return nil
	}
	for _, space := range spaces {
		environment.Eventually(t, timeout, space+"'s "+name+" to be held before prod by the freeze", func() error { return frozen(space) })
	}
	environment.Consistently(t, 5*time.Second, "both WDSes to stay frozen", func() error {
		for _, space := range spaces {
			if err := frozen(space); err != nil {
				return err
			}
		}
		return nil
	})

	if err := hosting.Delete(suite.ctx, freeze); err != nil {
		t.Fatalf("deleting RolloutFreeze %s: %v", freeze.Name, err)
	}
	for _, space := range spaces {
		p := policies(space).WaitForPhase(t, name, v1alpha1.RolloutCompleted)
		if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionFrozen); c != nil && c.Status == metav1.ConditionTrue {
			t.Errorf("%s: completed and still Frozen: %s", space, c.Message)
		}
		waitForOnlyBindingPolicy(t, space, name, "prod", "prod1", "prod2")
	}
}

// TestWindowOpensDuringRollout gives test a change window that opens at the
// next whole minute (UTC): test waits for it with WaitingForWindow, naming
// the opening, and starts once it opens, with no other change.
func TestWindowOpensDuringRollout(t *testing.T) {
	const space, name = "wds1", "windowed"
	// 30 to 90 s ahead: dev is done well before the window opens.
	opens := time.Now().UTC().Add(90 * time.Second).Truncate(time.Minute)
	startRollout(t, name, func(p *v1alpha1.StagedBindingPolicy) {
		p.Spec.Stages[1].Windows = []v1alpha1.ChangeWindow{{Schedule: fmt.Sprintf("%d %d * * *", opens.Minute(), opens.Hour()),
			Duration: metav1.Duration{Duration: 10 * time.Minute}, TimeZone: "UTC"}}
	})
	makeAvailable(space, name, "dev")
	p := policies(space).WaitForCondition(t, name, v1alpha1.ConditionWaitingForWindow, metav1.ConditionTrue, v1alpha1.ReasonWaitingForWindow)
	if time.Now().After(opens) {
		t.Fatalf("dev was done only after test's window opened at %s", opens.Format(time.TimeOnly))
	}
	c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionWaitingForWindow)
	if want := opens.Format("15:04"); !strings.Contains(c.Message, want) || !strings.Contains(c.Message, "UTC") {
		t.Errorf("WaitingForWindow says %q, want the opening %s UTC", c.Message, want)
	}
	if p.Status.ActiveStage != "dev" || slices.Contains(bindingPolicyNames(t, space, name), v1alpha1.StagePlacement(name, "test").String()) {
		t.Fatalf("test started before its window: %s", policytest.Describe(p))
	}
	p = policies(space).WaitForActiveStage(t, name, "test")
	if now := time.Now(); now.Before(opens) {
		t.Fatalf("test started at %s, before its window opened at %s", now.Format(time.TimeOnly), opens.Format(time.TimeOnly))
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionWaitingForWindow); c != nil && c.Status == metav1.ConditionTrue {
		t.Errorf("test started, still WaitingForWindow: %s", c.Message)
	}
	waitForOnlyBindingPolicy(t, space, name, "test", "test1")
}

// TestPromoteAndUndo rolls revision v1 out, then v2, whose conditions never
// hold: a policy editor without the promoter role cannot promote it; a promoter
// promotes it through every stage (--full). `kubectl stager undo` then rolls
// v1 out again stage by stage, and refuses to go back to v2 once v2's
// objects are gone from the WDS.
func TestPromoteAndUndo(t *testing.T) {
	const space, name = "wds1", "undone-e2e"
	s := suite.stack.WDS[space]
	ctx := suite.ctx
	if err := s.InstallPromotions(ctx); err != nil {
		t.Fatalf("installing the promotions' admission policy: %v", err)
	}
	promoter, err := s.AddPromoter(ctx, "e2e-promoter")
	if err != nil {
		t.Fatal(err)
	}
	editor := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-policy-editor"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"stagedbindingpolicies"},
		Verbs: []string{"get", "list", "watch", "update", "patch"}}}}
	if err := s.Client.Create(ctx, editor); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	editorOnly, err := s.AddUserWithRoles(ctx, "e2e-editor", editor.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, rev := range []string{"v1", "v2"} {
		d := policytest.Deployment(namespace, name+"-"+rev)
		d.Labels = map[string]string{policytest.AppLabel: name, v1alpha1.DefaultRevisionLabelKey: rev}
		if err := wds(space).Create(ctx, d); err != nil {
			t.Fatalf("creating Deployment %s: %v", d.Name, err)
		}
	}
	p := policytest.ThreeStages(name, name)
	p.Spec.Revision = &v1alpha1.Revision{Name: "v1"}
	if err := wds(space).Create(ctx, p); err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	t.Cleanup(func() { policies(space).Delete(t, name) })
	completeRevision(t, space, name, "v1")

	setRevision(t, space, name, "v2")
	policies(space).WaitFor(t, name, "v2 in dev", func(p *v1alpha1.StagedBindingPolicy) bool {
		return p.Status.UpdateRevision == "v2" && p.Status.ActiveStage == "dev"
	})
	request := func(by string) *v1alpha1.Promotion {
		return &v1alpha1.Promotion{Full: true, Reason: "e2e: v2's checks are broken", RequestedBy: by,
			RequestedAt: metav1.NewTime(time.Now().Truncate(time.Second))}
	}
	if err := promote(ctx, editorOnly, name, request("e2e-editor")); err == nil || !strings.Contains(err.Error(), "verb promote") {
		t.Fatalf("a policy editor without the promoter role promoted: %v, want the admission policy's refusal", err)
	}
	if err := promote(ctx, promoter, name, request("e2e-promoter")); err != nil {
		t.Fatalf("the promoter promoting: %v", err)
	}
	p = policies(space).WaitFor(t, name, "v2 completed by the promotion", func(p *v1alpha1.StagedBindingPolicy) bool {
		return p.Status.Phase == v1alpha1.RolloutCompleted && p.Status.CurrentRevision == "v2"
	})
	for _, stage := range []string{"dev", "test", "prod"} {
		if r := p.Status.StageNamed(stage); r == nil || r.Promotion == nil || !r.Promotion.Full || r.Promotion.By != "e2e-promoter" {
			t.Errorf("stage %s's record %+v: want promoted in full by e2e-promoter", stage, r)
		}
	}
	if n := len(p.Status.History); n < 2 || p.Status.History[n-1].Revision != "v2" || p.Status.History[n-1].Outcome != v1alpha1.OutcomePromoted ||
		!slices.Contains(p.Status.History[n-1].PromotedBy, "e2e-promoter") {
		t.Errorf("history %+v: want v2 last, Promoted by e2e-promoter", p.Status.History)
	}

	kubeconfig := filepath.Join(t.TempDir(), "wds1.kubeconfig")
	if err := os.WriteFile(kubeconfig, s.Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runPlugin(ctx, "--kubeconfig", kubeconfig, "undo", name)
	if err != nil || !strings.Contains(out, "spec.revision v2 -> v1") {
		t.Fatalf("kubectl stager undo %s: %v; printed %q", name, err, out)
	}
	policies(space).WaitFor(t, name, "v1 rolling out again from dev", func(p *v1alpha1.StagedBindingPolicy) bool {
		return p.Status.UpdateRevision == "v1" && p.Status.ActiveStage == "dev"
	})
	p = completeRevision(t, space, name, "v1")
	if last := p.Status.History[len(p.Status.History)-1]; last.Revision != "v1" || last.Outcome != v1alpha1.OutcomeCompleted {
		t.Errorf("history ends with %+v, want v1 Completed", last)
	}

	if err := wds(space).Delete(ctx, policytest.Deployment(namespace, name+"-v2")); err != nil {
		t.Fatalf("deleting v2's Deployment: %v", err)
	}
	environment.Eventually(t, timeout, "undo --to-revision v2 to be refused, v2's objects gone", func() error {
		out, err := runPlugin(ctx, "--kubeconfig", kubeconfig, "undo", name, "--to-revision", "v2")
		if err == nil {
			return fmt.Errorf("undo to v2 went ahead: %q", out)
		}
		if !strings.Contains(err.Error(), "v2") || !strings.Contains(err.Error(), "no object") {
			return fmt.Errorf("undo to v2 refused with %q, want a message that v2 has no object left", err.Error())
		}
		return nil
	})
	if p := policies(space).Get(t, name); p.Spec.Revision.Name != "v1" {
		t.Fatalf("a refused undo changed spec.revision to %q", p.Spec.Revision.Name)
	}
}

// completeRevision makes each stage of the policy available at revision in
// turn, and waits until the policy completed it.
func completeRevision(t *testing.T, space, name, revision string) *v1alpha1.StagedBindingPolicy {
	t.Helper()
	for _, stage := range []string{"dev", "test", "prod"} {
		suite.stack.WECs.SetAvailable(stack.Match{WDS: space, BindingPolicy: v1alpha1.StagePlacement(name, stage).At(revision).String(), Resource: "deployments"}, 1)
	}
	suite.stack.WECs.Resync()
	return policies(space).WaitFor(t, name, revision+" completed", func(p *v1alpha1.StagedBindingPolicy) bool {
		return p.Status.Phase == v1alpha1.RolloutCompleted && p.Status.CurrentRevision == revision
	})
}

// setRevision points the policy's spec.revision at revision.
func setRevision(t *testing.T, space, name, revision string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := policies(space).Get(t, name)
		p.Spec.Revision.Name = revision
		return wds(space).Update(suite.ctx, p)
	})
	if err != nil {
		t.Fatalf("setting spec.revision of %s/%s to %s: %v", space, name, revision, err)
	}
}

// promote writes a promotion request as the user of c.
func promote(ctx context.Context, c client.Client, name string, request *v1alpha1.Promotion) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := &v1alpha1.StagedBindingPolicy{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			return err
		}
		before := p.DeepCopy()
		p.Spec.Promotion = request
		return c.Patch(ctx, p, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	})
}

// runPlugin runs `kubectl stager` in-process with args and returns what it
// printed.
func runPlugin(ctx context.Context, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := plugin.New(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}, time.Now)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.ExecuteContext(ctx)
	return out.String() + errOut.String(), err
}

// bindingPolicyNames lists the names of a policy's BindingPolicies in a WDS.
func bindingPolicyNames(t *testing.T, space, name string) []string {
	t.Helper()
	list := &ksv1alpha1.BindingPolicyList{}
	if err := wds(space).List(suite.ctx, list, client.MatchingLabels{v1alpha1.PolicyLabel: name}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("listing the BindingPolicies of %s/%s: %v", space, name, err)
	}
	names := make([]string, 0, len(list.Items))
	for _, bp := range list.Items {
		names = append(names, bp.Name)
	}
	return names
}
