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

package plugin

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// TestPromote promotes rollouts through the API with the shipped roles and
// admission policies: an approver who is no promoter is told which role
// she lacks; a stage that is not the active one, a missing reason and a
// complete rollout are refused before anything is written; a promoter
// who is an approver too promotes the active stage awaiting approval with
// --approve, in his own name, and every stage left with --full.
func TestPromote(t *testing.T) {
	ctx := suite.ctx
	if err := suite.wds.InstallApprovals(ctx); err != nil {
		t.Fatal(err)
	}
	if err := suite.wds.InstallPromotions(ctx); err != nil {
		t.Fatal(err)
	}
	quinn := user(t, "quinn", environment.ApproverRole)
	priya := user(t, "priya", environment.PromoterRole)
	if err := suite.wds.Grant(ctx, "priya", environment.ApproverRole); err != nil {
		t.Fatal(err)
	}

	p := rollout(t, "hotfix", func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Stages[0].Approval = v1alpha1.ApprovalRequired })
	now := time.Now().Truncate(time.Second)
	setStatus(t, p, v1alpha1.StagedBindingPolicyStatus{ActiveStage: "dev", Phase: v1alpha1.RolloutAwaitingApproval, UpdateRevision: "",
		Stages: []v1alpha1.StageStatus{
			{Name: "dev", Phase: v1alpha1.StageAwaitingApproval, Approval: "hotfix.stage.dev", ApprovalRequestedTime: at(now)},
			{Name: "test", Phase: v1alpha1.StagePending}, {Name: "prod", Phase: v1alpha1.StagePending}}})
	approval := &v1alpha1.StageApproval{ObjectMeta: metav1.ObjectMeta{Name: "hotfix.stage.dev"},
		Spec: v1alpha1.StageApprovalSpec{Policy: "hotfix", Stage: "dev", PolicyGeneration: 1, SpecDigest: "r1"}}
	if err := suite.wds.Client.Create(ctx, approval); err != nil {
		t.Fatal(err)
	}

	reason := "metrics backend down; checked by hand"
	for _, refused := range []struct {
		who  string
		args []string
		want string
	}{
		{quinn, []string{"--reason", reason}, "quinn may not promote StagedBindingPolicy hotfix"},
		{priya, []string{"--stage", "prod", "--reason", reason}, `stage "prod" of hotfix is not the active stage ("dev" is)`},
		{priya, nil, "--reason is required"},
		{priya, []string{"--reason", strings.Repeat("x", 257)}, "--reason is 257 bytes"},
		{priya, []string{"--stage", "dev", "--full", "--reason", reason}, "none of the others can be"},
	} {
		out, err := run(t, now, refused.who, append([]string{"promote", "hotfix"}, refused.args...)...)
		if err == nil || !strings.Contains(out, refused.want) {
			t.Errorf("promote %v: %v: %s, want a refusal saying %q", refused.args, err, out, refused.want)
		}
	}
	if out, _ := run(t, now, quinn, "promote", "hotfix", "--reason", reason); !strings.Contains(out, "workload-stager-promoter") {
		t.Errorf("quinn's refusal does not name the role she lacks: %s", out)
	}
	current := &v1alpha1.StagedBindingPolicy{}
	if err := suite.wds.Client.Get(ctx, types.NamespacedName{Name: "hotfix"}, current); err != nil {
		t.Fatal(err)
	}
	if current.Spec.Promotion != nil {
		t.Fatalf("a refused promotion was written: %+v", *current.Spec.Promotion)
	}

	out, err := run(t, now, priya, "promote", "hotfix", "--approve", "--reason", reason)
	if err != nil {
		t.Fatalf("priya promoting: %v: %s", err, out)
	}
	golden(t, "promote", out)
	if err := suite.wds.Client.Get(ctx, types.NamespacedName{Name: "hotfix"}, current); err != nil {
		t.Fatal(err)
	}
	want := v1alpha1.Promotion{Stage: "dev", Reason: reason, RequestedBy: "priya", RequestedAt: metav1.NewTime(now)}
	if got := current.Spec.Promotion; got == nil || got.Stage != want.Stage || got.Full || got.Reason != want.Reason ||
		got.RequestedBy != want.RequestedBy || !got.RequestedAt.Equal(&want.RequestedAt) {
		t.Errorf("spec.promotion %+v, want %+v", got, want)
	}
	if err := suite.wds.Client.Get(ctx, types.NamespacedName{Name: approval.Name}, approval); err != nil {
		t.Fatal(err)
	}
	if approval.Approved() == nil || approval.Status.ApprovedBy != "priya" {
		t.Errorf("StageApproval status %+v: want approved by priya", approval.Status)
	}

	out, err = run(t, now.Add(time.Minute), priya, "promote", "hotfix", "--full", "--reason", "hotfix for INC-1234")
	if err != nil {
		t.Fatalf("priya promoting --full: %v: %s", err, out)
	}
	golden(t, "promote-full", out)
	if err := suite.wds.Client.Get(ctx, types.NamespacedName{Name: "hotfix"}, current); err != nil {
		t.Fatal(err)
	}
	if got := current.Spec.Promotion; got == nil || !got.Full || got.Stage != "" || got.RequestedBy != "priya" {
		t.Errorf("spec.promotion %+v, want full, by priya", got)
	}

	// explain says who promoted a stage, when, why and what it skipped.
	setStatus(t, current, v1alpha1.StagedBindingPolicyStatus{ActiveStage: "test", Phase: v1alpha1.RolloutProgressing,
		Stages: []v1alpha1.StageStatus{
			{Name: "dev", Phase: v1alpha1.StageSucceeded, StartTime: at(now.Add(-time.Hour)), CompletionTime: at(now.Add(-5 * time.Minute)),
				Message: "promoted by priya", Promotion: &v1alpha1.StagePromotion{By: "priya", Time: metav1.NewTime(now.Add(-5 * time.Minute)),
					RequestedAt: metav1.NewTime(now.Add(-6 * time.Minute)), Reason: reason, Skipped: []string{v1alpha1.GateCondition}}},
			{Name: "test", Phase: v1alpha1.StageActive, StartTime: at(now.Add(-5 * time.Minute))}, {Name: "prod", Phase: v1alpha1.StagePending}}})
	out, err = run(t, now, "", "explain", "hotfix", "--stage", "dev")
	if err != nil {
		t.Fatalf("explain: %v: %s", err, out)
	}
	if !strings.Contains(out, "Promoted:") {
		t.Errorf("explain does not say dev was promoted:\n%s", out)
	}
	golden(t, "explain-promoted", out)

	setStatus(t, current, v1alpha1.StagedBindingPolicyStatus{ActiveStage: "prod", Phase: v1alpha1.RolloutCompleted,
		Stages: []v1alpha1.StageStatus{{Name: "dev", Phase: v1alpha1.StageSucceeded}, {Name: "test", Phase: v1alpha1.StageSucceeded},
			{Name: "prod", Phase: v1alpha1.StageSucceeded}}})
	if out, err := run(t, now, priya, "promote", "hotfix", "--reason", reason); err == nil || !strings.Contains(out, "is complete") {
		t.Errorf("promoting a complete rollout: %v: %s, want a refusal", err, out)
	}
}
