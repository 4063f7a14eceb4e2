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
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// requireApproval makes the named stages of a policy wait for approval.
func requireApproval(stages ...string) func(*v1alpha1.StagedBindingPolicy) {
	return func(p *v1alpha1.StagedBindingPolicy) {
		for i := range p.Spec.Stages {
			for _, s := range stages {
				if p.Spec.Stages[i].Name == s {
					p.Spec.Stages[i].Approval = v1alpha1.ApprovalRequired
				}
			}
		}
	}
}

// approve approves a stage of a policy in wds1 through its StageApproval.
func approve(t *testing.T, name, stage, by string) *v1alpha1.StageApproval {
	t.Helper()
	var approval *v1alpha1.StageApproval
	policies("wds1").WaitFor(t, name, "the StageApproval of stage "+stage, func(*v1alpha1.StagedBindingPolicy) bool {
		return wds("wds1").Get(suite.ctx, types.NamespacedName{Name: v1alpha1.StagePlacement(name, stage).String()}, &v1alpha1.StageApproval{}) == nil
	})
	approval, err := policytest.Approve(suite.ctx, wds("wds1"), name, stage, by)
	if err != nil {
		t.Fatal(err)
	}
	return approval
}

// record returns the named stage's record in a policy's status.
func record(p *v1alpha1.StagedBindingPolicy, stage string) v1alpha1.StageStatus {
	for _, r := range p.Status.Stages {
		if r.Name == stage {
			return r
		}
	}
	return v1alpha1.StageStatus{}
}

// TestApprovalBeforeAndAfterTheStage rolls out with test and prod needing
// approval, with the real KubeStellar controller-manager. prod is approved
// while dev is still active; test is reached unapproved and waits with dev
// still placed; the stager is restarted meanwhile and keeps waiting from the
// same moment; approved, test starts; once test is done prod starts at once,
// its approval given before the rollout reached it.
func TestApprovalBeforeAndAfterTheStage(t *testing.T) {
	const space, name = "wds1", "approvals"
	startRollout(t, name, requireApproval("test", "prod"))
	approve(t, name, "prod", "release-bot")

	makeAvailable(space, name, "dev")
	p := policies(space).WaitForPhase(t, name, v1alpha1.RolloutAwaitingApproval)
	requested := record(p, "test").ApprovalRequestedTime
	if p.Status.ActiveStage != "test" || requested == nil {
		t.Fatalf("want test awaiting approval: %s", policytest.Describe(p))
	}
	stays(t, policies(space), name, "test", 5*time.Second)
	waitForOnlyBindingPolicy(t, space, name, "dev", "dev1", "dev2") // nothing of test is placed; dev stays

	// Approvals live in the API: a restarted stager waits on, from the same moment.
	if err := suite.stager.Stop(); err != nil {
		t.Fatalf("stopping the stager: %v", err)
	}
	restarted, err := startStager()
	if err != nil {
		t.Fatalf("restarting the stager: %v", err)
	}
	suite.stager = restarted
	stays(t, policies(space), name, "test", 5*time.Second)
	if p := policies(space).Get(t, name); p.Status.Phase != v1alpha1.RolloutAwaitingApproval ||
		!record(p, "test").ApprovalRequestedTime.Equal(requested) {
		t.Fatalf("after the restart: %s, approval requested at %v (was %v)", policytest.Describe(p), record(p, "test").ApprovalRequestedTime, requested)
	}

	approve(t, name, "test", "alice")
	policies(space).WaitFor(t, name, "test to start once approved", func(p *v1alpha1.StagedBindingPolicy) bool {
		return record(p, "test").Phase == v1alpha1.StageActive
	})
	waitForOnlyBindingPolicy(t, space, name, "test", "test1")
	makeAvailable(space, name, "test")
	p = policies(space).WaitForPhase(t, name, v1alpha1.RolloutCompleted)
	prod := record(p, "prod")
	if prod.ApprovedBy != "release-bot" || prod.ApprovedTime == nil || prod.ApprovalRequestedTime == nil ||
		prod.ApprovedTime.After(prod.ApprovalRequestedTime.Time) {
		t.Errorf("prod's record %+v: want approved by release-bot before the rollout reached it", prod)
	}
	if r := record(p, "test"); r.ApprovedBy != "alice" || r.ApprovedTime.Before(requested) {
		t.Errorf("test's record %+v: want approved by alice after %s", r, requested)
	}
}

// TestStaleApprovalIsIgnored approves test early, then changes the policy's
// spec, with the real KubeStellar controller-manager: the stager renews the
// StageApproval, so the approval given for the earlier spec does not count
// and test waits when reached, saying why, until approved again.
func TestStaleApprovalIsIgnored(t *testing.T) {
	const space, name = "wds1", "stale-approval"
	startRollout(t, name, requireApproval("test"))
	given := approve(t, name, "test", "alice")

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := policies(space).Get(t, name)
		p.Spec.Stages[2].ClusterSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"location-group": "edge", "env": "prod"}}}
		return wds(space).Update(suite.ctx, p)
	})
	if err != nil {
		t.Fatalf("changing prod's clusters: %v", err)
	}
	policies(space).WaitFor(t, name, "the StageApproval to be renewed", func(*v1alpha1.StagedBindingPolicy) bool {
		current := &v1alpha1.StageApproval{}
		err := wds(space).Get(suite.ctx, types.NamespacedName{Name: given.Name}, current)
		return err == nil && current.Generation > given.Generation && current.Approved() == nil
	})

	makeAvailable(space, name, "dev")
	p := policies(space).WaitForPhase(t, name, v1alpha1.RolloutAwaitingApproval)
	stays(t, policies(space), name, "test", 5*time.Second)
	if msg := record(policies(space).Get(t, name), "test").Message; !strings.Contains(msg, "approve it again") {
		t.Errorf("test's message %q does not say the approval is stale (%s)", msg, policytest.Describe(p))
	}
	approve(t, name, "test", "alice")
	policies(space).WaitFor(t, name, "test to start once approved again", func(p *v1alpha1.StagedBindingPolicy) bool {
		return record(p, "test").Phase == v1alpha1.StageActive
	})
}
