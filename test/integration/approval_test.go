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
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// TestApprovalThroughStatusOnly installs config/approval in a space and
// approves a stage as a user bound to the shipped approvers' ClusterRole:
// the stage waits, with nothing placed, until approved; the approver can
// write neither the policy nor the StageApproval's spec, nor approve in
// another's name (the admission policy); approved in her own name, the
// stage starts and its record says who approved it.
func TestApprovalThroughStatusOnly(t *testing.T) {
	s := suite.wds2
	ctx := suite.ctx
	if err := s.InstallApprovals(ctx); err != nil {
		t.Fatal(err)
	}
	alice, err := s.AddApprover(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	const name = "approved"
	createWorkload(t, s, name)
	policy := newPolicy(name, name)
	policy.Spec.Stages[0].Approval = v1alpha1.ApprovalRequired
	create(t, s, policy)
	t.Cleanup(func() { policies(s).Delete(t, name) })

	p := policies(s).WaitForPhase(t, name, v1alpha1.RolloutAwaitingApproval)
	approval := &v1alpha1.StageApproval{}
	key := types.NamespacedName{Name: v1alpha1.StagePlacement(name, "dev").String()}
	policies(s).WaitFor(t, name, "dev's StageApproval", func(*v1alpha1.StagedBindingPolicy) bool {
		return alice.Get(ctx, key, approval) == nil
	})
	if got := bindingPolicies(t, s, name); len(got) != 0 {
		t.Fatalf("BindingPolicies %v placed before approval", got)
	}

	p.Spec.Suspend = true
	if err := alice.Update(ctx, p); !apierrors.IsForbidden(err) {
		t.Errorf("the approver updated the policy: %v, want Forbidden", err)
	}
	forged := approval.DeepCopy()
	forged.Spec.SpecDigest = "forged"
	if err := alice.Update(ctx, forged); !apierrors.IsForbidden(err) {
		t.Errorf("the approver updated the StageApproval's spec: %v, want Forbidden", err)
	}
	impersonated := approval.DeepCopy()
	impersonated.SetApproved("bob", metav1.Now())
	err = alice.Status().Update(ctx, impersonated)
	if err == nil || !strings.Contains(err.Error(), "own user name") {
		t.Errorf("alice approved as bob: %v, want the admission policy's refusal", err)
	}

	// Issue 32: an Approved condition observed at a later generation would
	// count once the policy's next change moved the StageApproval on: an
	// approval of a rollout nobody has seen yet.
	ahead := approval.DeepCopy()
	ahead.SetApproved("alice", metav1.Now())
	ahead.Status.Conditions[0].ObservedGeneration = approval.Generation + 1
	if err := alice.Status().Update(ctx, ahead); err == nil || !strings.Contains(err.Error(), "current generation") {
		t.Errorf("alice approved a later generation: %v, want the admission policy's refusal", err)
	}
	// An approval names the revision it approves; it must be the current one.
	if err := alice.Get(ctx, key, approval); err != nil {
		t.Fatal(err)
	}
	stale := approval.DeepCopy()
	stale.SetApproved("alice", metav1.Now())
	stale.Status.ApprovedSpecDigest = "0123456789abcdef0123456789abcdef"
	if err := alice.Status().Update(ctx, stale); err == nil || !strings.Contains(err.Error(), "spec.specDigest") {
		t.Errorf("alice approved another spec digest: %v, want the admission policy's refusal", err)
	}

	if _, err := policytest.Approve(ctx, alice, name, "dev", "alice"); err != nil {
		t.Fatal(err)
	}
	p = policies(s).WaitFor(t, name, "dev to start once approved", func(p *v1alpha1.StagedBindingPolicy) bool {
		return len(p.Status.Stages) > 0 && p.Status.Stages[0].Phase == v1alpha1.StageActive
	})
	waitForBindingPolicies(t, s, name, "dev")
	if r := p.Status.Stages[0]; r.ApprovedBy != "alice" || r.ApprovedTime == nil || r.ApprovalRequestedTime == nil || r.StartTime == nil {
		t.Errorf("dev's record %+v: want when approval was asked for, when and by whom it was given, and the start", r)
	}
	// Events are recorded in the background.
	waitFor(t, "the ApprovalRequested and StageApproved Events", func() error {
		counts := policies(s).EventCounts(t, p)
		for _, reason := range []string{v1alpha1.EventReasonApprovalRequested, v1alpha1.EventReasonStageApproved} {
			if policytest.EventsWithReason(counts, reason) == 0 {
				return fmt.Errorf("no %s Event; Events: %v", reason, counts)
			}
		}
		return nil
	})
}
