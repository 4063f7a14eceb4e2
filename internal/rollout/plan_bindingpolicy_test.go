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

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// ---------------------------------------------------------------------------
// Rule 13: the active stage's BindingPolicy
// ---------------------------------------------------------------------------

func TestPlanActiveBindingPolicy(t *testing.T) {
	engine := newEngine(t)
	p := newPolicy()

	// wantCreated is the BindingPolicy a stage of p needs, built by hand.
	wantCreated := func(stageName string) *ksv1alpha1.BindingPolicy {
		return &ksv1alpha1.BindingPolicy{
			TypeMeta: metav1.TypeMeta{APIVersion: "control.kubestellar.io/v1alpha1", Kind: "BindingPolicy"},
			ObjectMeta: metav1.ObjectMeta{
				Name: "web.stage." + stageName,
				Labels: map[string]string{
					"community.kubestellar.io/staged-binding-policy": "web",
					"community.kubestellar.io/stage":                 stageName,
				},
				OwnerReferences: []metav1.OwnerReference{policyOwnerRef(p)},
			},
			Spec: ksv1alpha1.BindingPolicySpec{
				ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"stage": stageName}}},
				Downsync:         p.Spec.Downsync,
			},
		}
	}
	// stale is dev's BindingPolicy with a foreign label and a change.
	stale := func(change func(bp *ksv1alpha1.BindingPolicy)) *ksv1alpha1.BindingPolicy {
		bp := ownedBP(p, "dev", "bp-dev")
		bp.Labels["team"] = "payments"
		change(bp)
		return bp
	}
	// wantUpdated is dev's stale BindingPolicy brought in line: identity and
	// foreign labels kept, our labels, owner and spec restored.
	wantUpdated := func(bp *ksv1alpha1.BindingPolicy) *ksv1alpha1.BindingPolicy {
		want := ownedBP(p, "dev", "bp-dev")
		want.Labels["team"] = "payments"
		want.TypeMeta, want.Generation, want.Status = bp.TypeMeta, bp.Generation, bp.Status
		return want
	}
	oldSelectors := stale(func(bp *ksv1alpha1.BindingPolicy) {
		bp.Spec.ClusterSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"stage": "staging"}}}
	})
	oldDownsync := stale(func(bp *ksv1alpha1.BindingPolicy) { bp.Spec.Downsync = bp.Spec.Downsync[:1] })
	lostLabel := stale(func(bp *ksv1alpha1.BindingPolicy) { delete(bp.Labels, "community.kubestellar.io/stage") })
	notController := stale(func(bp *ksv1alpha1.BindingPolicy) { bp.OwnerReferences[0].Controller = nil })

	tests := []struct {
		name       string
		snap       *Snapshot
		want       ActionType
		wantBP     *ksv1alpha1.BindingPolicy
		wantReason string // for a Blocked status
	}{
		{name: "missing for the first stage",
			snap: newSnapshot(atStage(newPolicy(), "dev")),
			want: ActionCreateBindingPolicy, wantBP: wantCreated("dev")},
		{name: "missing for a later stage, earlier one still placed",
			snap: newSnapshot(atStage(newPolicy(), "test"), ownedBP(p, "dev", "bp-dev")),
			want: ActionCreateBindingPolicy, wantBP: wantCreated("test")},
		{name: "cluster selectors differ",
			snap: newSnapshot(atStage(newPolicy(), "dev"), oldSelectors),
			want: ActionUpdateBindingPolicy, wantBP: wantUpdated(oldSelectors)},
		{name: "downsync differs",
			snap: newSnapshot(atStage(newPolicy(), "dev"), oldDownsync),
			want: ActionUpdateBindingPolicy, wantBP: wantUpdated(oldDownsync)},
		{name: "stage label removed",
			snap: newSnapshot(atStage(newPolicy(), "dev"), lostLabel),
			want: ActionUpdateBindingPolicy, wantBP: wantUpdated(lostLabel)},
		{name: "owner reference no longer the controller",
			snap: newSnapshot(atStage(newPolicy(), "dev"), notController),
			want: ActionUpdateBindingPolicy, wantBP: wantUpdated(notController)},
		{name: "same name owned by another policy",
			snap: newSnapshot(atStage(newPolicy(), "dev"), foreignBP(p, "dev", "bp-foreign")),
			want: ActionUpdateStatus, wantReason: v1alpha1.ReasonBindingPolicyConflict},
		{name: "same name owned by nobody, not labelled",
			snap: fixture{newSnapshot(atStage(newPolicy(), "dev"))}.with(func(s *Snapshot) {
				s.ActiveBindingPolicy = &ksv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web.stage.dev", UID: "bp-hand-made"}}
			}).Snapshot,
			want: ActionUpdateStatus, wantReason: v1alpha1.ReasonBindingPolicyConflict},
		{name: "being deleted",
			snap: newSnapshot(atStage(newPolicy(), "dev"), beingDeleted(ownedBP(p, "dev", "bp-dev"))),
			want: ActionNone},
		{name: "being deleted and out of date",
			snap: newSnapshot(atStage(newPolicy(), "dev"), beingDeleted(stale(func(bp *ksv1alpha1.BindingPolicy) { bp.Spec.Downsync = nil }))),
			want: ActionNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.snap, engine)
			if got.Type != tt.want {
				t.Fatalf("Plan() = %s (%s), want %s", got.Type, got.Why, tt.want)
			}
			if tt.wantBP != nil {
				if got.BindingPolicy == nil {
					t.Fatalf("Plan() has no BindingPolicy")
				}
				if !equality.Semantic.DeepEqual(got.BindingPolicy, tt.wantBP) {
					t.Errorf("BindingPolicy differs:\n%s", diff.Diff(tt.wantBP, got.BindingPolicy))
				}
			}
			if tt.wantReason == "" {
				return
			}
			if got.BindingPolicy != nil {
				t.Errorf("Plan() names BindingPolicy %s; a conflict must not touch it", got.BindingPolicy.Name)
			}
			if got.Status.Phase != v1alpha1.RolloutBlocked {
				t.Errorf("phase = %s, want Blocked", got.Status.Phase)
			}
			ready := condition(t, got.Status, v1alpha1.ConditionReady)
			if ready.Status != metav1.ConditionFalse || ready.Reason != tt.wantReason || !strings.Contains(ready.Message, "web.stage.dev") {
				t.Errorf("Ready = %s/%s %q, want False/%s naming web.stage.dev", ready.Status, ready.Reason, ready.Message, tt.wantReason)
			}
			if keys := eventKeys(got.Events); !slices.Equal(keys, []string{"Warning/" + tt.wantReason}) {
				t.Errorf("events = %v, want [Warning/%s]", keys, tt.wantReason)
			}
			if again := replan(t, tt.snap, engine, got); again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("with the Blocked status written, Plan() = %s %v, want None without events", again.Type, eventKeys(again.Events))
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Rules 14 and 17: placement Replace and Accumulate
// ---------------------------------------------------------------------------

// accumulating sets spec.placement Accumulate on the snapshot's policy.
func accumulating(s *Snapshot) { s.Policy.Spec.Placement = v1alpha1.PlacementAccumulate }

func TestPlanPlacement(t *testing.T) {
	engine := newEngine(t)
	p := newPolicy()
	devBP := ownedBP(p, "dev", "bp-dev")
	tests := []struct {
		name     string
		snap     *Snapshot
		wantType ActionType
		wantBP   string // the BindingPolicy the action writes
	}{
		{name: "Replace (the default): the earlier stage's BindingPolicy goes once the active one is placed",
			snap:     at("test").bound().alsoBP(devBP).Snapshot,
			wantType: ActionDeleteBindingPolicy, wantBP: "web.stage.dev"},
		{name: "Accumulate: the earlier stage's BindingPolicy stays",
			snap:     at("test").bound().alsoBP(devBP).with(accumulating).Snapshot,
			wantType: ActionUpdateStatus},
		{name: "Accumulate: a missing earlier stage's BindingPolicy is created (a switch from Replace)",
			snap:     at("test").bound().with(accumulating).Snapshot,
			wantType: ActionCreateBindingPolicy, wantBP: "web.stage.dev"},
		{name: "Accumulate: an earlier stage's BindingPolicy follows the spec",
			snap: at("test").bound().alsoBP(devBP).with(accumulating).with(func(s *Snapshot) {
				s.Policy.Spec.Downsync[0].ObjectSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"app": "other"}}}
				s.ActiveBindingPolicy.Spec.Downsync = s.Policy.Spec.Downsync
				for i := range s.BindingPolicies {
					if s.BindingPolicies[i].Name == "web.stage.test" {
						s.BindingPolicies[i].Spec.Downsync = s.Policy.Spec.Downsync
					}
				}
			}).Snapshot,
			wantType: ActionUpdateBindingPolicy, wantBP: "web.stage.dev"},
		{name: "Accumulate: a later stage's BindingPolicy (a restart) still goes",
			snap:     at("dev").bound().alsoBP(ownedBP(p, "prod", "bp-prod")).with(accumulating).Snapshot,
			wantType: ActionDeleteBindingPolicy, wantBP: "web.stage.prod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			action := Plan(tt.snap, engine)
			if action.Type != tt.wantType {
				t.Fatalf("action %s (%s), want %s", action.Type, action.Why, tt.wantType)
			}
			if tt.wantBP != "" && (action.BindingPolicy == nil || action.BindingPolicy.Name != tt.wantBP) {
				t.Errorf("action writes %v, want %s", action.BindingPolicy, tt.wantBP)
			}
		})
	}
}
