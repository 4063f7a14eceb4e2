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

package rollout

import (
	"slices"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// ---------------------------------------------------------------------------
// Rules 1 and 2: finalizer and deletion
// ---------------------------------------------------------------------------

func TestPlanFinalizerAndDeletion(t *testing.T) {
	engine := newEngine(t)
	withoutFinalizer := func(p *v1alpha1.StagedBindingPolicy) *v1alpha1.StagedBindingPolicy {
		p.Finalizers = nil
		return p
	}
	deleting := func(p *v1alpha1.StagedBindingPolicy) *v1alpha1.StagedBindingPolicy {
		p.DeletionTimestamp = ptr.To(earlier)
		return p
	}
	p := newPolicy()

	tests := []struct {
		name    string
		snap    *Snapshot
		want    ActionType
		wantBP  string
		wantUID types.UID
	}{
		{name: "finalizer missing on a new policy",
			snap: newSnapshot(withoutFinalizer(newPolicy())),
			want: ActionAddFinalizer},
		{name: "finalizer missing comes before an invalid expression",
			snap: newSnapshot(withoutFinalizer(newPolicy(stageWith("dev", "", "obj.results.exists(")))),
			want: ActionAddFinalizer},
		{name: "finalizer missing mid-rollout comes before the BindingPolicy",
			snap: newSnapshot(withoutFinalizer(atStage(newPolicy(), "test"))),
			want: ActionAddFinalizer},
		{name: "deleted: deletes an owned BindingPolicy, skipping a foreign one",
			snap: newSnapshot(deleting(atStage(newPolicy(), "test")),
				foreignBP(p, "canary", "bp-foreign"), ownedBP(p, "dev", "bp-dev"), ownedBP(p, "test", "bp-test")),
			want: ActionDeleteBindingPolicy, wantBP: "web.stage.dev", wantUID: "bp-dev"},
		{name: "deleted: skips an owned BindingPolicy already being deleted",
			snap: newSnapshot(deleting(atStage(newPolicy(), "test")),
				beingDeleted(ownedBP(p, "dev", "bp-dev")), ownedBP(p, "test", "bp-test")),
			want: ActionDeleteBindingPolicy, wantBP: "web.stage.test", wantUID: "bp-test"},
		{name: "deleted: an invalid expression does not stop the cleanup",
			snap: newSnapshot(deleting(newPolicy(stageWith("dev", "", "obj.results.exists("))),
				ownedBP(p, "dev", "bp-dev")),
			want: ActionDeleteBindingPolicy, wantBP: "web.stage.dev", wantUID: "bp-dev"},
		{name: "deleted: held BindingPolicies but the finalizer was removed by hand",
			snap: newSnapshot(withoutFinalizer(deleting(atStage(newPolicy(), "test"))), beingDeleted(ownedBP(p, "test", "bp-test"))),
			want: ActionNone},
		{name: "deleted: only a foreign BindingPolicy left",
			snap: newSnapshot(deleting(atStage(newPolicy(), "test")), foreignBP(p, "canary", "bp-foreign")),
			want: ActionRemoveFinalizer},
		{name: "deleted: nothing left",
			snap: newSnapshot(deleting(atStage(newPolicy(), "prod"))),
			want: ActionRemoveFinalizer},
		{name: "deleted: nothing left and finalizer already gone",
			snap: newSnapshot(withoutFinalizer(deleting(newPolicy()))),
			want: ActionNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.snap, engine)
			if got.Type != tt.want {
				t.Fatalf("Plan() = %s (%s), want %s", got.Type, got.Why, tt.want)
			}
			if got.Status != nil {
				t.Errorf("Plan() wants to write status %+v", got.Status)
			}
			if tt.wantBP == "" {
				if got.BindingPolicy != nil {
					t.Errorf("Plan() names BindingPolicy %s, want none", got.BindingPolicy.Name)
				}
				return
			}
			if got.BindingPolicy == nil || got.BindingPolicy.Name != tt.wantBP || got.BindingPolicy.UID != tt.wantUID {
				t.Fatalf("Plan() BindingPolicy = %v, want %s (UID %s)", got.BindingPolicy, tt.wantBP, tt.wantUID)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Rule 1: deletion held by finalizers
// ---------------------------------------------------------------------------

// TestPlanDeletionBlocked covers a deletion that waits for the finalizers of
// the policy's BindingPolicies: the Deleting condition names them and the
// time the deletion began; past the threshold, computed from the policy's
// deletionTimestamp and the snapshot's time, it says DeletionBlocked and
// warns once.
func TestPlanDeletionBlocked(t *testing.T) {
	engine := newEngine(t)
	p := newPolicy()
	deletedAt := func(at metav1.Time) *v1alpha1.StagedBindingPolicy {
		policy := atStage(newPolicy(), "test")
		policy.DeletionTimestamp = ptr.To(at)
		return policy
	}
	// withDeleting gives the policy the status Plan writes under opts.
	withDeleting := func(policy *v1alpha1.StagedBindingPolicy, reason string, opts ...PlanOption) *v1alpha1.StagedBindingPolicy {
		first := Plan(newSnapshot(policy, beingDeleted(ownedBP(p, "test", "bp-test"))), engine, opts...)
		if first.Status == nil {
			t.Fatalf("no status to start from: %s (%s)", first.Type, first.Why)
		}
		policy.Status = *first.Status
		if c := meta.FindStatusCondition(policy.Status.Conditions, v1alpha1.ConditionDeleting); c == nil || c.Reason != reason {
			t.Fatalf("starting status has Deleting %+v, want reason %s", c, reason)
		}
		return policy
	}
	oneMinuteAgo := metav1.NewTime(now.Add(-time.Minute))

	tests := []struct {
		name       string
		snap       *Snapshot
		opts       []PlanOption
		want       ActionType
		wantReason string
		wantEvents []string
		// wantRequeue is Action.RequeueAfter.
		wantRequeue time.Duration
		wantMsg     []string
	}{
		{name: "held for a minute: waiting, due again when the default threshold passes",
			snap: newSnapshot(deletedAt(oneMinuteAgo), foreignBP(p, "canary", "bp-foreign"),
				beingDeleted(ownedBP(p, "dev", "bp-dev")), beingDeleted(ownedBP(p, "test", "bp-test"))),
			want: ActionUpdateStatus, wantReason: v1alpha1.ReasonWaitingForFinalizers,
			wantRequeue: 4*time.Minute + time.Second,
			wantMsg: []string{"deletion waits since 2026-03-01T11:59:00Z", "BindingPolicy web.stage.dev (finalizers example.com/hold)",
				"BindingPolicy web.stage.test (finalizers example.com/hold)"}},
		{name: "held for an hour: blocked, with a Warning Event",
			snap: newSnapshot(deletedAt(earlier), beingDeleted(ownedBP(p, "test", "bp-test"))),
			want: ActionUpdateStatus, wantReason: v1alpha1.ReasonDeletionBlocked, wantEvents: []string{"Warning/DeletionBlocked"},
			wantMsg: []string{"deletion waits since 2026-03-01T11:00:00Z", "web.stage.test (finalizers example.com/hold)",
				"more than 5m0s", "controller-manager", "README"}},
		{name: "held for an hour under a two-hour threshold: waiting",
			snap: newSnapshot(deletedAt(earlier), beingDeleted(ownedBP(p, "test", "bp-test"))),
			opts: []PlanOption{WithDeletionWarningAfter(2 * time.Hour)},
			want: ActionUpdateStatus, wantReason: v1alpha1.ReasonWaitingForFinalizers, wantRequeue: time.Hour + time.Second},
		{name: "waiting reported, then the threshold passed: blocked, with a Warning Event",
			snap: newSnapshot(withDeleting(deletedAt(earlier), v1alpha1.ReasonWaitingForFinalizers, WithDeletionWarningAfter(2*time.Hour)),
				beingDeleted(ownedBP(p, "test", "bp-test"))),
			want: ActionUpdateStatus, wantReason: v1alpha1.ReasonDeletionBlocked, wantEvents: []string{"Warning/DeletionBlocked"}},
		{name: "blocked reported: nothing more to say",
			snap: newSnapshot(withDeleting(deletedAt(earlier), v1alpha1.ReasonDeletionBlocked), beingDeleted(ownedBP(p, "test", "bp-test"))),
			want: ActionNone},
		{name: "a BindingPolicy without finalizers but still listed",
			snap: newSnapshot(deletedAt(oneMinuteAgo), func() *ksv1alpha1.BindingPolicy {
				bp := beingDeleted(ownedBP(p, "test", "bp-test"))
				bp.Finalizers = nil
				return bp
			}()),
			want: ActionUpdateStatus, wantReason: v1alpha1.ReasonWaitingForFinalizers, wantRequeue: 4*time.Minute + time.Second,
			wantMsg: []string{"web.stage.test (no finalizer left)"}},
		{name: "more BindingPolicies than a message names",
			snap: newSnapshot(deletedAt(oneMinuteAgo), beingDeleted(ownedBP(p, "a", "bp-a")), beingDeleted(ownedBP(p, "b", "bp-b")),
				beingDeleted(ownedBP(p, "c", "bp-c")), beingDeleted(ownedBP(p, "d", "bp-d")), beingDeleted(ownedBP(p, "e", "bp-e"))),
			want: ActionUpdateStatus, wantReason: v1alpha1.ReasonWaitingForFinalizers, wantRequeue: 4*time.Minute + time.Second,
			wantMsg: []string{"web.stage.a", "web.stage.c", "and 2 more"}},
		{name: "an undeleted BindingPolicy is deleted first",
			snap: newSnapshot(deletedAt(earlier), beingDeleted(ownedBP(p, "dev", "bp-dev")), ownedBP(p, "test", "bp-test")),
			want: ActionDeleteBindingPolicy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.snap, engine, tt.opts...)
			if got.Type != tt.want {
				t.Fatalf("Plan() = %s (%s), want %s", got.Type, got.Why, tt.want)
			}
			if keys := eventKeys(got.Events); !slices.Equal(keys, tt.wantEvents) {
				t.Errorf("events = %v, want %v", keys, tt.wantEvents)
			}
			if got.RequeueAfter != tt.wantRequeue {
				t.Errorf("RequeueAfter = %v, want %v", got.RequeueAfter, tt.wantRequeue)
			}
			if tt.want != ActionUpdateStatus {
				return
			}
			c := condition(t, got.Status, v1alpha1.ConditionDeleting)
			if c.Status != metav1.ConditionTrue || c.Reason != tt.wantReason {
				t.Errorf("Deleting = %s/%s, want True/%s", c.Status, c.Reason, tt.wantReason)
			}
			if !c.LastTransitionTime.Equal(tt.snap.Policy.DeletionTimestamp) {
				t.Errorf("Deleting since %v, want the deletionTimestamp %v", c.LastTransitionTime, tt.snap.Policy.DeletionTimestamp)
			}
			for _, sub := range tt.wantMsg {
				if !strings.Contains(c.Message, sub) {
					t.Errorf("Deleting message %q does not contain %q", c.Message, sub)
				}
			}
			if strings.Contains(c.Message, "canary") {
				t.Errorf("Deleting message %q names a foreign BindingPolicy", c.Message)
			}
			for _, e := range got.Events {
				if e.Note != c.Message {
					t.Errorf("event note %q, want the condition's message %q", e.Note, c.Message)
				}
			}
			// Written once, the same state a minute later makes no change and no Event.
			next := *tt.snap
			next.Policy = tt.snap.Policy.DeepCopy()
			next.Policy.Status = *got.Status.DeepCopy()
			next.Now = metav1.NewTime(tt.snap.Now.Add(time.Minute))
			if again := Plan(&next, engine, tt.opts...); again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("with the status written, Plan() = %s with events %v (%s), want None", again.Type, eventKeys(again.Events), again.Why)
			}
		})
	}
}
