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

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/browser"
	"github.com/kubestellar/workload-stager/test/framework/dashboardrun"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// TestDashboardInBrowser opens `kubectl stager dashboard` in headless
// Chromium against this package's stack (the stager binary, KubeStellar's
// controller-manager, the WECs' status through WorkStatuses and
// CombinedStatuses) with one rollout dev → test → prod, test needing an
// approval. One overview page, opened while dev runs and never reloaded,
// shows dev succeed, test wait for and get its approval, and the rollout
// complete. As an approver with his own kubeconfig, a click on approve and
// its confirmation approves test in his name; a suspend, which his RBAC
// refuses, shows the API server's refusal. Every browser.HostileStrings, in
// Events about the policy and in dev's condition, shows as text, with the
// DOM probe at 0. test/dashboardbrowser tests the dashboard in more detail
// against the integration layer.
func TestDashboardInBrowser(t *testing.T) {
	const space, name, approver = "wds1", "dashboard-e2e", "e2e-dashboard-approver"
	ctx := suite.ctx
	var chromium browser.Shared
	t.Cleanup(chromium.Close)
	watcher := chromium.New(t) // first: without a Chromium the test skips before it starts anything

	s := suite.stack.WDS[space]
	// The approvers' role without the approvals' admission policy: the
	// other tests of this WDS approve as its admin in others' names.
	if err := s.InstallApproverRole(ctx); err != nil {
		t.Fatal(err)
	}
	approverKubeconfig, err := s.AddUser(approver)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Grant(ctx, approver, environment.ApproverRole); err != nil {
		t.Fatal(err)
	}
	startRollout(t, name, func(p *v1alpha1.StagedBindingPolicy) {
		requireApproval("test")(p)
		// Always true, and quoted by explain on the policy's page.
		for _, h := range browser.HostileStrings {
			p.Spec.Stages[0].Condition += fmt.Sprintf(` && obj.metadata.name != %q`, h)
		}
	})
	postHostileEvents(t, space, name)
	asAdmin := dashboardrun.Run(ctx, t, timeout, s.Kubeconfig())
	asApprover := dashboardrun.Run(ctx, t, timeout, approverKubeconfig)
	card := dashboardrun.Card(name)

	watcher.Open(asAdmin.String())
	dashboardrun.WaitActive(watcher, name, "dev")
	dashboardrun.MarkPage(watcher)

	if !t.Run("hostile strings render as text", func(t *testing.T) {
		b := chromium.New(t)
		b.Open(asAdmin.JoinPath("policy").String() + "?" + url.Values{"space": {""}, "name": {name}}.Encode())
		b.WaitJS(`document.body.dataset.view === 'record'`)
		b.WaitText("body", "Hostile0")
		text := b.Text("body")
		for _, h := range browser.HostileStrings {
			if n := strings.Count(text, "message "+h); n != 1 {
				t.Errorf("the policy page shows the Event message %q %d times as text, want once", h, n)
			}
			if !strings.Contains(text, strconv.Quote(h)) {
				t.Errorf("the policy page does not show dev's condition's %q as text", h)
			}
		}
		if n := b.ScriptRuns(); n != 0 {
			t.Errorf("a hostile string ran %d times in the policy page", n)
		}
		dashboardrun.CheckClean(t, b)
	}) {
		return
	}

	makeAvailable(space, name, "dev")
	policies(space).WaitForPhase(t, name, v1alpha1.RolloutAwaitingApproval)
	dashboardrun.WaitStage(watcher, name, "dev", v1alpha1.StageSucceeded)
	dashboardrun.WaitActive(watcher, name, "test")
	watcher.WaitText(card+" .approval.awaiting", "awaiting approval")
	dashboardrun.CheckNotReloaded(t, watcher)

	if !t.Run("an approver approves test with a click", func(t *testing.T) {
		b := chromium.New(t)
		b.Open(asApprover.String())
		b.WaitText(card+" .approval.awaiting", "awaiting approval")
		dashboardrun.Submit(ctx, t, b, timeout, card+" button.verb-approve", "confirm")
		if stage := browser.Evaluate[string](b, `document.querySelector('form.confirm select[name=stage]').value`); stage != "test" {
			t.Fatalf("the confirmation offers to approve %q, want test", stage)
		}
		dashboardrun.Submit(ctx, t, b, timeout, `form.confirm button[type=submit]`, "result")
		if got := b.Text("main"); !strings.Contains(got, "Done.") {
			t.Fatalf("the approval's result page says %q", got)
		}
		p := policies(space).WaitFor(t, name, "test to start once approved", func(p *v1alpha1.StagedBindingPolicy) bool {
			return record(p, "test").Phase == v1alpha1.StageActive
		})
		if by := record(p, "test").ApprovedBy; by != approver {
			t.Errorf("test approved by %q, want %q", by, approver)
		}
		b.Open(asApprover.String())
		b.WaitText(card+" li.stage.phase-Active .approval", "approved by "+approver)
		dashboardrun.CheckClean(t, b)
	}) {
		return
	}

	watcher.WaitText(card+" li.stage.phase-Active .approval", "approved by "+approver)
	makeAvailable(space, name, "test")
	policies(space).WaitForPhase(t, name, v1alpha1.RolloutCompleted)
	watcher.WaitText(card+" .phase", string(v1alpha1.RolloutCompleted))
	for _, stage := range []string{"dev", "test", "prod"} {
		dashboardrun.WaitStage(watcher, name, stage, v1alpha1.StageSucceeded)
	}
	dashboardrun.CheckNotReloaded(t, watcher)

	t.Run("a refused action shows the API server's message", func(t *testing.T) {
		b := chromium.New(t)
		b.Open(asApprover.String())
		dashboardrun.Submit(ctx, t, b, timeout, card+" button.verb-suspend", "confirm")
		dashboardrun.Submit(ctx, t, b, timeout, `form.confirm button[type=submit]`, "result")
		b.WaitText("pre.refusal", fmt.Sprintf(`User "%s" cannot patch resource "stagedbindingpolicies"`, approver))
		if got := b.Text("p.refused"); !strings.Contains(got, "Refused") {
			t.Errorf("the result page's verdict is %q, want Refused", got)
		}
		if policies(space).Get(t, name).Spec.Suspend {
			t.Error("the refused suspend suspended the rollout")
		}
		dashboardrun.CheckClean(t, b)
	})

	if n := watcher.ScriptRuns(); n != 0 {
		t.Errorf("a hostile string ran %d times in the overview", n)
	}
	dashboardrun.CheckClean(t, watcher)
}

// postHostileEvents posts, about a policy, one Warning Event per
// browser.HostileStrings, reason Hostile<i> and message "message <string>",
// deleted when the test ends.
func postHostileEvents(t *testing.T, space, name string) {
	t.Helper()
	p := policies(space).Get(t, name)
	for i, h := range browser.HostileStrings {
		event := &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: fmt.Sprintf("%s.hostile-%d", name, i)},
			InvolvedObject: corev1.ObjectReference{Kind: "StagedBindingPolicy", APIVersion: v1alpha1.GroupVersion.String(),
				Name: name, UID: p.UID},
			Reason:  "Hostile" + strconv.Itoa(i),
			Message: "message " + h,
			Type:    corev1.EventTypeWarning,
			Source:  corev1.EventSource{Component: "a-hostile-writer"},
		}
		if err := wds(space).Create(suite.ctx, event); err != nil {
			t.Fatalf("creating an Event: %v", err)
		}
		t.Cleanup(func() { _ = wds(space).Delete(context.Background(), event) })
	}
}
