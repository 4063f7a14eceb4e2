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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/controller/metrics"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// requestPromotion writes spec.promotion as kubectl stager promote does:
// a merge patch of the policy, as the client's user.
func requestPromotion(c client.Client, name string, p *v1alpha1.Promotion) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"promotion": p}})
	if err != nil {
		return err
	}
	policy := &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return c.Patch(suite.ctx, policy, client.RawPatch(types.MergePatchType, patch))
}

// neverDone is a dev -> test -> prod policy whose every stage has a
// condition the suite's WECs never meet (nobody opens its gates).
func neverDone(name string) *v1alpha1.StagedBindingPolicy {
	return policytest.Policy(name, map[string]string{policytest.AppLabel: name},
		policytest.Stage("dev", policytest.Deployments, policytest.Available),
		policytest.Stage("test", policytest.Deployments, policytest.Available),
		policytest.Stage("prod", policytest.Deployments, policytest.Available))
}

// installPromotions installs the approvals' and the promotions' roles and
// admission policies in the space.
func installPromotions(t *testing.T, s *space) {
	t.Helper()
	if err := s.InstallApprovals(suite.ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.InstallPromotions(suite.ctx); err != nil {
		t.Fatal(err)
	}
}

// TestPromotionAdmission installs config/approval's promotion policy and
// role in a space: a user who may update policies but lacks the verb
// promote is refused; a promoter is refused a requestedBy other than her
// own name, and any other change of the spec; her own request promotes
// the active stage, whose condition does not hold: it is recorded done,
// with who, when, why and the gates skipped, a Promoted Event and the
// stager_promotions_total counter.
func TestPromotionAdmission(t *testing.T) {
	s := suite.wds2
	ctx := suite.ctx
	installPromotions(t, s)
	editor := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "promotion-test-editor"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"stagedbindingpolicies"},
		Verbs: []string{"get", "list", "watch", "update", "patch"}}}}
	if err := s.Client.Create(ctx, editor); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	carol, err := s.AddUserWithRoles(ctx, "carol", editor.Name)
	if err != nil {
		t.Fatal(err)
	}
	alice, err := s.AddPromoter(ctx, "alice-promoter")
	if err != nil {
		t.Fatal(err)
	}
	const name = "promoted"
	createWorkload(t, s, name)
	create(t, s, neverDone(name))
	t.Cleanup(func() { policies(s).Delete(t, name) })
	policies(s).WaitForActiveStage(t, name, "dev")
	waitForBindingPolicies(t, s, name, "dev")

	request := func(by string) *v1alpha1.Promotion {
		return &v1alpha1.Promotion{Stage: "dev", Reason: "the metrics backend is down; checked by hand", RequestedBy: by,
			RequestedAt: metav1.NewTime(time.Now().Truncate(time.Second))}
	}
	if err := requestPromotion(carol, name, request("carol")); err == nil || !strings.Contains(err.Error(), "verb promote") {
		t.Errorf("carol, without the promoter role, promoted: %v, want the admission policy's refusal", err)
	}
	if err := requestPromotion(alice, name, request("bob")); err == nil || !strings.Contains(err.Error(), "own user name") {
		t.Errorf("alice promoted in bob's name: %v, want the admission policy's refusal", err)
	}
	suspend, _ := json.Marshal(map[string]any{"spec": map[string]any{"suspend": true}})
	if err := alice.Patch(ctx, &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}},
		client.RawPatch(types.MergePatchType, suspend)); err == nil || !strings.Contains(err.Error(), "may only promote") {
		t.Errorf("alice, a promoter, suspended the policy: %v, want the admission policy's refusal", err)
	}
	if p := policies(s).Get(t, name); p.Status.ActiveStage != "dev" || p.Spec.Promotion != nil || p.Spec.Suspend {
		t.Fatalf("a refused request changed the policy: active %q, promotion %+v, suspend %v", p.Status.ActiveStage, p.Spec.Promotion, p.Spec.Suspend)
	}

	req := request("alice-promoter")
	if err := requestPromotion(alice, name, req); err != nil {
		t.Fatalf("alice promoting dev: %v", err)
	}
	p := policies(s).WaitFor(t, name, "dev promoted", func(p *v1alpha1.StagedBindingPolicy) bool {
		r := p.Status.StageNamed("dev")
		return r != nil && r.Promotion != nil && p.Status.ActiveStage == "test"
	})
	r := p.Status.StageNamed("dev")
	if r.Phase != v1alpha1.StageSucceeded || r.Promotion.By != "alice-promoter" || r.Promotion.Reason != req.Reason ||
		!r.Promotion.RequestedAt.Equal(&req.RequestedAt) || !slices.Equal(r.Promotion.Skipped, []string{v1alpha1.GateCondition}) {
		t.Errorf("dev's record %+v (promotion %+v): want Succeeded, promoted by alice-promoter for the reason given, Condition skipped", r, *r.Promotion)
	}
	if last := p.Status.LastPromotion; last == nil || last.Outcome != v1alpha1.PromotionApplied || last.RequestedBy != "alice-promoter" {
		t.Errorf("lastPromotion %+v, want alice's request Applied", last)
	}
	waitForBindingPolicies(t, s, name, "test")
	waitFor(t, "the Promoted Event and the promotions counter", func() error {
		if n := policytest.EventsWithReason(policies(s).EventCounts(t, p), v1alpha1.EventReasonPromoted); n == 0 {
			return fmt.Errorf("no Promoted Event")
		}
		if v, ok := metricValue(t, "stager_promotions_total", map[string]string{metrics.LabelSpace: s.Name, metrics.LabelPolicy: name,
			metrics.LabelStage: "dev"}); !ok || v != 1 {
			return fmt.Errorf("stager_promotions_total for dev is %v (found %v), want 1", v, ok)
		}
		return nil
	})
	// Taken once: test stays, its condition unmet.
	time.Sleep(time.Second)
	if p := policies(s).Get(t, name); p.Status.ActiveStage != "test" || p.Status.StageNamed("test").Promotion != nil {
		t.Errorf("the request taken promoted again: active %q", p.Status.ActiveStage)
	}
}

// TestPromoteFull promotes every stage of a three-stage rollout whose
// conditions never hold, as a promoter who is an approver too: the stage
// that needs approval is not promoted until it is approved; then the
// rollout completes.
func TestPromoteFull(t *testing.T) {
	s := suite.wds2
	ctx := suite.ctx
	installPromotions(t, s)
	erin, err := s.AddPromoter(ctx, "erin-promoter", environment.ApproverRole)
	if err != nil {
		t.Fatal(err)
	}
	const name = "promoted-full"
	createWorkload(t, s, name)
	policy := neverDone(name)
	policy.Spec.Stages[1].Approval = v1alpha1.ApprovalRequired
	create(t, s, policy)
	t.Cleanup(func() { policies(s).Delete(t, name) })
	policies(s).WaitForActiveStage(t, name, "dev")
	waitForBindingPolicies(t, s, name, "dev")

	if err := requestPromotion(erin, name, &v1alpha1.Promotion{Full: true, Reason: "hotfix for an outage",
		RequestedBy: "erin-promoter", RequestedAt: metav1.NewTime(time.Now().Truncate(time.Second))}); err != nil {
		t.Fatalf("erin promoting: %v", err)
	}
	policies(s).WaitFor(t, name, "test awaiting approval", func(p *v1alpha1.StagedBindingPolicy) bool {
		r := p.Status.StageNamed("test")
		return p.Status.ActiveStage == "test" && r != nil && r.Phase == v1alpha1.StageAwaitingApproval
	})
	// The stager acts in milliseconds: a second later the gate still holds.
	time.Sleep(time.Second)
	if p := policies(s).Get(t, name); p.Status.ActiveStage != "test" || p.Status.StageNamed("test").Phase != v1alpha1.StageAwaitingApproval {
		t.Fatalf("the full promotion passed the approval gate: active %q, test %s", p.Status.ActiveStage, p.Status.StageNamed("test").Phase)
	}
	if got := bindingPolicies(t, s, name); slices.ContainsFunc(got, func(n string) bool { return strings.Contains(n, ".test") }) {
		t.Errorf("test placed before its approval: %v", got)
	}

	if _, err := policytest.Approve(ctx, erin, name, "test", "erin-promoter"); err != nil {
		t.Fatal(err)
	}
	p := policies(s).WaitForPhase(t, name, v1alpha1.RolloutCompleted)
	for _, stage := range []string{"dev", "test", "prod"} {
		r := p.Status.StageNamed(stage)
		if r.Phase != v1alpha1.StageSucceeded || r.Promotion == nil || !r.Promotion.Full || r.Promotion.By != "erin-promoter" {
			t.Errorf("stage %s's record %+v: want Succeeded by erin-promoter's full promotion", stage, r)
		}
	}
	if r := p.Status.StageNamed("test"); r.ApprovedBy != "erin-promoter" {
		t.Errorf("test approved by %q, want erin-promoter", r.ApprovedBy)
	}
}

// TestPromotionValidation: the CRD refuses a promotion that names both a
// stage and full, or neither, and a reason empty or over 256 bytes
// (dry runs: nothing is created).
func TestPromotionValidation(t *testing.T) {
	s := suite.wds1
	valid := func() *v1alpha1.Promotion {
		return &v1alpha1.Promotion{Stage: "dev", Reason: "why", RequestedBy: environment.SpaceUserName, RequestedAt: metav1.Now()}
	}
	for name, change := range map[string]func(*v1alpha1.Promotion){
		"stage and full":          func(p *v1alpha1.Promotion) { p.Full = true },
		"neither stage nor full":  func(p *v1alpha1.Promotion) { p.Stage = "" },
		"an empty reason":         func(p *v1alpha1.Promotion) { p.Reason = "" },
		"a reason of 257 bytes":   func(p *v1alpha1.Promotion) { p.Reason = strings.Repeat("a", 257) },
		"a reason of 129 runes":   func(p *v1alpha1.Promotion) { p.Reason = strings.Repeat("é", 129) },
		"a requestedBy too long":  func(p *v1alpha1.Promotion) { p.RequestedBy = strings.Repeat("u", 257) },
		"a stage that is no name": func(p *v1alpha1.Promotion) { p.Stage = "Dev!" },
	} {
		t.Run(name, func(t *testing.T) {
			policy := neverDone("promotion-validation")
			policy.Spec.Promotion = valid()
			change(policy.Spec.Promotion)
			if err := s.Client.Create(suite.ctx, policy, client.DryRunAll); !apierrors.IsInvalid(err) {
				t.Errorf("created a policy with %s: %v, want Invalid", name, err)
			}
		})
	}
	policy := neverDone("promotion-validation")
	policy.Spec.Promotion = valid()
	if err := s.Client.Create(suite.ctx, policy, client.DryRunAll); err != nil {
		t.Errorf("a valid promotion refused: %v", err)
	}
}
