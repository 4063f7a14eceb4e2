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

package kcpe2e

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// TestApprovalsAreGuardedInWorkspaces: a WDS workspace made from
// config/kcp/consumer holds the approvals' admission policy, which kcp runs
// on the workspace's StageApprovals. An approval in another's name is refused (the policy's other
// rules are TestApprovalThroughStatusOnly's, test/integration); a change
// that approves nothing passes.
func TestApprovalsAreGuardedInWorkspaces(t *testing.T) {
	w := wdsNamed("wds2")
	ctx := suite.ctx
	approval := &v1alpha1.StageApproval{ObjectMeta: metav1.ObjectMeta{Name: "guarded.stage.dev"},
		Spec: v1alpha1.StageApprovalSpec{Policy: "guarded", Stage: "dev", SpecDigest: "r1"}}
	if err := w.client.Create(ctx, approval); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.client.Delete(ctx, approval) })
	// kcp starts a workspace's admission policies with its first request,
	// and reads new ones from its informers.
	environment.Eventually(t, timeout, "an approval in bob's name refused in "+w.space, func() error {
		current := &v1alpha1.StageApproval{}
		if err := w.client.Get(ctx, client.ObjectKeyFromObject(approval), current); err != nil {
			return err
		}
		current.SetApproved("bob", metav1.Now())
		err := w.client.Status().Update(ctx, current)
		if err == nil {
			return fmt.Errorf("it was accepted")
		}
		if !strings.Contains(err.Error(), "own user name") {
			return fmt.Errorf("%w, want the admission policy's refusal", err)
		}
		return nil
	})
	current := &v1alpha1.StageApproval{}
	if err := w.client.Get(ctx, client.ObjectKeyFromObject(approval), current); err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&current.Status.Conditions, metav1.Condition{Type: "Reviewed", Status: metav1.ConditionTrue,
		Reason: "Looked", LastTransitionTime: metav1.Now(), ObservedGeneration: current.Generation})
	if err := w.client.Status().Update(ctx, current); err != nil {
		t.Errorf("a status change that approves nothing: %v, want it accepted", err)
	}
}
