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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// user provisions a user of the WDS bound to the given ClusterRole and
// returns the path of its kubeconfig.
func user(t *testing.T, name, clusterRole string) string {
	t.Helper()
	kubeconfig, err := suite.wds.AddUser(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := suite.wds.Grant(suite.ctx, name, clusterRole); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSteer approves, suspends, resumes, aborts, retries and restarts
// rollouts through the API: an approver bound to the shipped role approves
// the stage a rollout awaits, in her own name (the shipped admission policy checks it); a user
// who may only read is told clearly why he may not.
func TestSteer(t *testing.T) {
	ctx := suite.ctx
	if err := suite.wds.InstallApprovals(ctx); err != nil {
		t.Fatal(err)
	}
	viewer := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "stager-viewer"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"stagedbindingpolicies", "stageapprovals"},
		Verbs: []string{"get", "list", "watch"}}}}
	if err := suite.wds.Client.Create(ctx, viewer); err != nil {
		t.Fatal(err)
	}
	alice, bob := user(t, "alice", environment.ApproverRole), user(t, "bob", viewer.Name)

	p := rollout(t, "gated", func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Stages[0].Approval = v1alpha1.ApprovalRequired })
	now := time.Now().Truncate(time.Second)
	setStatus(t, p, v1alpha1.StagedBindingPolicyStatus{ActiveStage: "dev", Phase: v1alpha1.RolloutAwaitingApproval,
		Stages: []v1alpha1.StageStatus{
			{Name: "dev", Phase: v1alpha1.StageAwaitingApproval, Approval: "gated.stage.dev", ApprovalRequestedTime: at(now)},
			{Name: "test", Phase: v1alpha1.StagePending}, {Name: "prod", Phase: v1alpha1.StagePending}}})
	approval := &v1alpha1.StageApproval{ObjectMeta: metav1.ObjectMeta{Name: "gated.stage.dev"},
		Spec: v1alpha1.StageApprovalSpec{Policy: "gated", Stage: "dev", PolicyGeneration: 1, SpecDigest: "r1"}}
	if err := suite.wds.Client.Create(ctx, approval); err != nil {
		t.Fatal(err)
	}

	out, err := run(t, now, bob, "approve", "gated")
	if err == nil || !strings.Contains(out, `bob may not approve StageApproval gated.stage.dev`) || !strings.Contains(out, "workload-stager-approver") {
		t.Errorf("bob approving: %v: %s, want a refusal naming the role he lacks", err, out)
	}
	// The approver names the spec digest she looked at (kubectl get sbpa -o
	// wide shows it): another one is refused, with the current one.
	out, err = run(t, now, alice, "approve", "gated", "--spec-digest", "r0")
	if err == nil || !strings.Contains(out, `StageApproval gated.stage.dev is for spec digest "r1", not "r0"`) {
		t.Errorf("alice approving spec digest r0: %v: %s, want a refusal naming the current digest", err, out)
	}
	out, err = run(t, now, alice, "approve", "gated", "--spec-digest", "r1")
	if err != nil {
		t.Fatalf("alice approving: %v: %s", err, out)
	}
	golden(t, "approve", out)
	if err := suite.wds.Client.Get(ctx, types.NamespacedName{Name: approval.Name}, approval); err != nil {
		t.Fatal(err)
	}
	if c := approval.Approved(); c == nil || approval.Status.ApprovedBy != "alice" || approval.Status.ApprovedSpecDigest != "r1" {
		t.Errorf("StageApproval status %+v: want Approved at its generation, by alice", approval.Status)
	}
	if out, err := run(t, now, alice, "suspend", "gated"); err == nil || !strings.Contains(out, "alice may not suspend") {
		t.Errorf("alice suspending: %v: %s, want a refusal", err, out)
	}

	for _, step := range []struct {
		verb  string
		check func(*v1alpha1.StagedBindingPolicy) bool
	}{
		{"suspend", func(p *v1alpha1.StagedBindingPolicy) bool { return p.Spec.Suspend }},
		{"resume", func(p *v1alpha1.StagedBindingPolicy) bool { return !p.Spec.Suspend }},
		{"abort", func(p *v1alpha1.StagedBindingPolicy) bool { return p.Spec.Abort }},
		{"retry", func(p *v1alpha1.StagedBindingPolicy) bool { return !p.Spec.Abort }},
		{"restart", func(p *v1alpha1.StagedBindingPolicy) bool {
			return p.Annotations[v1alpha1.RestartedAtAnnotation] == now.UTC().Format(time.RFC3339)
		}},
	} {
		out, err := run(t, now, "", step.verb, "gated")
		if err != nil {
			t.Fatalf("%s: %v: %s", step.verb, err, out)
		}
		current := &v1alpha1.StagedBindingPolicy{}
		if err := suite.wds.Client.Get(ctx, types.NamespacedName{Name: "gated"}, current); err != nil {
			t.Fatal(err)
		}
		if !step.check(current) {
			t.Errorf("after %s (%q) the policy is %+v %v", step.verb, out, current.Spec, current.Annotations)
		}
	}
}
