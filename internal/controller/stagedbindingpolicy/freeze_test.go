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

package stagedbindingpolicy

import (
	"context"
	"errors"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/freeze"
)

// fakeFreezes answers every Decision with decision or err, and records
// what it was asked.
type fakeFreezes struct {
	decision freeze.Decision
	err      error
	asked    []string // "space policy now"
}

func (f *fakeFreezes) Decision(_ context.Context, space, policy string, now time.Time) (freeze.Decision, error) {
	f.asked = append(f.asked, space+" "+policy+" "+now.UTC().Format(time.RFC3339Nano))
	return f.decision, f.err
}

func (f *fakeFreezes) Source(string, client.Reader) source.Source { return nil }

// TestReconcileHoldsStartsWhileTheFreezesCannotBeRead runs a new policy
// through the reconciler while its Freezes fail: it is asked at the
// reconciler's now, the policy is held Pending with Frozen
// (FreezesUnreadable), places nothing and is requeued; once the freezes
// answer that none holds it, it starts and Frozen goes.
func TestReconcileHoldsStartsWhileTheFreezesCannotBeRead(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	r := newTestReconciler(t, time.Now())
	freezes := &fakeFreezes{err: errors.New("hosting cluster: connection refused")}
	r.Freezes = freezes
	p := createPolicy(t, "freeze-unreadable-run")
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}}
	var result reconcile.Result
	for range 3 {
		var err error
		if result, err = r.Reconcile(ctx, req); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	if len(freezes.asked) == 0 || freezes.asked[0][:len("reconciler "+p.Name)] != "reconciler "+p.Name {
		t.Fatalf("asked %q, want the reconciler's space and %s", freezes.asked, p.Name)
	}
	got := getPolicy(t, p.Name)
	c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFrozen)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != freeze.ReasonFreezesUnreadable {
		t.Fatalf("Frozen = %+v, want True (%s); status %+v", c, freeze.ReasonFreezesUnreadable, got.Status)
	}
	if got.Status.Phase != v1alpha1.RolloutPending || got.Status.ActiveStage != "" {
		t.Fatalf("status = %+v, want Pending with nothing started", got.Status)
	}
	if result.RequeueAfter <= 0 || result.RequeueAfter > freezesUnreadableRetry {
		t.Fatalf("result = %+v, want a requeue within %v", result, freezesUnreadableRetry)
	}
	bps := &ksv1alpha1.BindingPolicyList{}
	if err := testSpace.Client.List(ctx, bps, client.MatchingLabels{v1alpha1.PolicyLabel: p.Name}); err != nil {
		t.Fatalf("listing BindingPolicies: %v", err)
	}
	if len(bps.Items) != 0 {
		t.Fatalf("%d BindingPolicies placed while the freezes could not be read", len(bps.Items))
	}

	freezes.err = nil
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	got = getPolicy(t, p.Name)
	if got.Status.ActiveStage == "" || meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionFrozen) != nil {
		t.Fatalf("status = %+v, want started without Frozen", got.Status)
	}
}
