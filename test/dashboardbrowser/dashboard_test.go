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

package dashboardbrowser

import (
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

// The page helpers are test/framework/dashboardrun's, which test/e2e
// shares; submit waits as long as the suite's other waits.
var (
	card             = dashboardrun.Card
	markPage         = dashboardrun.MarkPage
	checkNotReloaded = dashboardrun.CheckNotReloaded
	waitActive       = dashboardrun.WaitActive
	waitStage        = dashboardrun.WaitStage
	checkClean       = dashboardrun.CheckClean
)

func submit(t *testing.T, b *browser.Browser, button, view string) {
	t.Helper()
	dashboardrun.Submit(suite.ctx, t, b, timeout, button, view)
}

// TestRolloutMovesLive opens the overview while a rollout is in dev and
// makes each stage healthy through the simulator: the card shows test, then
// prod, then the rollout Completed, without the page being reloaded.
func TestRolloutMovesLive(t *testing.T) {
	const name = "live-rollout"
	startRollout(t, newPolicy(name))
	policies().WaitForActiveStage(t, name, "dev")
	base := runDashboard(t, suite.wds.Kubeconfig())

	b := chromium.New(t)
	b.Open(base.String())
	waitActive(b, name, "dev")
	markPage(b)
	for _, step := range []struct{ healthy, next string }{{"dev", "test"}, {"test", "prod"}} {
		openGate(name, step.healthy)
		waitActive(b, name, step.next)
		waitStage(b, name, step.healthy, v1alpha1.StageSucceeded)
	}
	b.WaitText(card(name)+" .phase", string(v1alpha1.RolloutCompleted))
	if n := browser.Evaluate[int](b, `document.querySelectorAll(`+strconv.Quote(card(name)+" li.stage.phase-Succeeded")+`).length`); n != 3 {
		t.Errorf("%d stages shown Succeeded once Completed, want 3", n)
	}
	checkNotReloaded(t, b)
	checkClean(t, b)
}

// TestApproveAndRefuseByClick runs the dashboard with the kubeconfig of the
// approver dave: clicking approve on the card and confirming approves dev in
// dave's name, and the card, live, shows the rollout go on; clicking suspend,
// which dave's RBAC refuses, shows the API server's refusal as text.
func TestApproveAndRefuseByClick(t *testing.T) {
	const user, name = "dave", "click-approve"
	kubeconfig, err := suite.wds.AddUser(user)
	if err != nil {
		t.Fatal(err)
	}
	if err := suite.wds.Grant(suite.ctx, user, environment.ApproverRole); err != nil {
		t.Fatal(err)
	}
	policy := newPolicy(name)
	policy.Spec.Stages[0].Approval = v1alpha1.ApprovalRequired
	startRollout(t, policy)
	policies().WaitForPhase(t, name, v1alpha1.RolloutAwaitingApproval)
	base := runDashboard(t, kubeconfig)

	b := chromium.New(t)
	b.Open(base.String())
	b.WaitText(card(name)+" .approval.awaiting", "awaiting approval")
	submit(t, b, card(name)+" button.verb-approve", "confirm")
	if stage := browser.Evaluate[string](b, `document.querySelector('form.confirm select[name=stage]').value`); stage != "dev" {
		t.Errorf("the confirmation offers to approve %q, want dev", stage)
	}
	submit(t, b, `form.confirm button[type=submit]`, "result")
	if got := b.Text("main"); !strings.Contains(got, "Done.") {
		t.Fatalf("the approval's result page says %q", got)
	}
	p := policies().WaitFor(t, name, "dev to start once approved", func(p *v1alpha1.StagedBindingPolicy) bool {
		return len(p.Status.Stages) > 0 && p.Status.Stages[0].Phase == v1alpha1.StageActive
	})
	if by := p.Status.Stages[0].ApprovedBy; by != user {
		t.Errorf("dev approved by %q, want %q", by, user)
	}

	// Back on the overview, the rollout goes on live.
	b.Open(base.String())
	b.WaitText(card(name)+" li.stage.phase-Active .approval", "approved by "+user)
	markPage(b)
	openGate(name, "dev")
	waitActive(b, name, "test")
	checkNotReloaded(t, b)

	submit(t, b, card(name)+" button.verb-suspend", "confirm")
	submit(t, b, `form.confirm button[type=submit]`, "result")
	want := fmt.Sprintf(`User "%s" cannot patch resource "stagedbindingpolicies"`, user)
	b.WaitText("pre.refusal", want)
	if got := b.Text("p.refused"); !strings.Contains(got, "Refused") {
		t.Errorf("the result page's verdict is %q, want Refused", got)
	}
	if policies().Get(t, name).Spec.Suspend {
		t.Error("the refused suspend suspended the rollout")
	}
	checkClean(t, b)
}

// TestHostileStringsRenderAsText writes every browser.HostileStrings into
// what the dashboard shows of a policy from the WDS: Events about it on the
// policy page, and its active stage's condition, which explain's output on
// that page quotes. No string runs (the DOM
// probe), nothing is blocked by the CSP (nothing tried to run), and each
// string is visible as the text it is.
func TestHostileStringsRenderAsText(t *testing.T) {
	const name = "hostile"
	policy := newPolicy(name)
	var conditions []string
	for _, s := range browser.HostileStrings {
		conditions = append(conditions, fmt.Sprintf(`obj.metadata.name != %q`, s))
	}
	policy.Spec.Stages[0].Condition += " && " + strings.Join(conditions, " && ")
	startRollout(t, policy)
	p := policies().WaitForActiveStage(t, name, "dev")
	for i, s := range browser.HostileStrings {
		event := &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: fmt.Sprintf("%s.hostile-%d", name, i)},
			InvolvedObject: corev1.ObjectReference{Kind: "StagedBindingPolicy", APIVersion: v1alpha1.GroupVersion.String(),
				Name: name, UID: p.UID},
			Reason:  "Hostile" + strconv.Itoa(i),
			Message: "message " + s,
			Type:    corev1.EventTypeWarning,
			Source:  corev1.EventSource{Component: "a-hostile-writer"},
		}
		if err := suite.wds.Client.Create(suite.ctx, event); err != nil {
			t.Fatalf("creating an Event: %v", err)
		}
		t.Cleanup(func() { _ = suite.wds.Client.Delete(suite.ctx, event) })
	}
	base := runDashboard(t, suite.wds.Kubeconfig())

	b := chromium.New(t)
	b.Open(base.JoinPath("policy").String() + "?" + url.Values{"space": {""}, "name": {name}}.Encode())
	b.WaitJS(`document.body.dataset.view === 'record'`)
	b.WaitText("body", "Hostile0")
	text := b.Text("body")
	for _, s := range browser.HostileStrings {
		if n := strings.Count(text, "message "+s); n != 1 {
			t.Errorf("the policy page shows the Event message %q %d times as text, want once", s, n)
		}
		if n := strings.Count(text, fmt.Sprintf("%q", s)); n < 1 {
			t.Errorf("the policy page shows %q %d times as text, want at least once (explain's condition)", s, n)
		}
	}
	// The card takes the live path too: a change swaps in a fresh record.
	markPage(b)
	openGate(name, "dev")
	b.WaitText("div.record li.stage.active .stage-name", "test")
	checkNotReloaded(t, b)
	if n := b.ScriptRuns(); n != 0 {
		t.Errorf("a hostile string ran %d times in the policy page", n)
	}
	checkClean(t, b)
}
