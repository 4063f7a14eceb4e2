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
	"testing"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// TestDiffPlacement walks the one write of the placement model over each
// Reason: the first Placement that needs a change decides; a foreign name
// blocks, a missing one is created, one out of line is updated, and one
// being deleted is waited for (active stage, abort) or let go (the rest).
func TestDiffPlacement(t *testing.T) {
	p := atStage(newPolicy(stage("dev"), stage("test"), stage("prod")), "test")
	p.Spec.Placement = v1alpha1.PlacementAccumulate
	dev, test := p.Spec.Stages[0], p.Spec.Stages[1]
	want := func(r Reason, s v1alpha1.Stage) Placement {
		return Placement{BP: DesiredBindingPolicy(p, s), Reason: r}
	}
	outOfLine := func(bp *ksv1alpha1.BindingPolicy) *ksv1alpha1.BindingPolicy {
		bp.Spec.ClusterSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"someone": "else"}}}
		return bp
	}
	cases := []struct {
		name     string
		want     []Placement
		bps      []*ksv1alpha1.BindingPolicy
		wantType ActionType
		wantBP   string
		wantOK   bool
	}{
		{name: "all in line", want: []Placement{want(ReasonActive, test), want(ReasonAccumulated, dev)},
			bps: []*ksv1alpha1.BindingPolicy{ownedBP(p, "test", "t"), ownedBP(p, "dev", "d")}},
		{name: "missing is created", want: []Placement{want(ReasonActive, test), want(ReasonAccumulated, dev)},
			bps: []*ksv1alpha1.BindingPolicy{ownedBP(p, "test", "t")}, wantOK: true, wantType: ActionCreateBindingPolicy, wantBP: "web.stage.dev"},
		{name: "first in order decides", want: []Placement{want(ReasonActive, test), want(ReasonAccumulated, dev)},
			bps: []*ksv1alpha1.BindingPolicy{outOfLine(ownedBP(p, "test", "t"))}, wantOK: true, wantType: ActionUpdateBindingPolicy, wantBP: "web.stage.test"},
		{name: "foreign active blocks", want: []Placement{want(ReasonActive, test)},
			bps: []*ksv1alpha1.BindingPolicy{foreignBP(p, "test", "t")}, wantOK: true, wantType: ActionUpdateStatus},
		{name: "foreign accumulated blocks", want: []Placement{want(ReasonAccumulated, dev)},
			bps: []*ksv1alpha1.BindingPolicy{foreignBP(p, "dev", "d")}, wantOK: true, wantType: ActionUpdateStatus},
		{name: "active being deleted is waited for", want: []Placement{want(ReasonActive, test), want(ReasonAccumulated, dev)},
			bps: []*ksv1alpha1.BindingPolicy{beingDeleted(ownedBP(p, "test", "t"))}, wantOK: true, wantType: ActionNone},
		{name: "abort target being deleted is waited for", want: []Placement{want(ReasonAbortTarget, dev), want(ReasonAbortTarget, test)},
			bps: []*ksv1alpha1.BindingPolicy{beingDeleted(ownedBP(p, "dev", "d"))}, wantOK: true, wantType: ActionNone},
		{name: "accumulated being deleted is let go", want: []Placement{want(ReasonAccumulated, dev), want(ReasonKeptRevision, test)},
			bps: []*ksv1alpha1.BindingPolicy{beingDeleted(ownedBP(p, "dev", "d"))}, wantOK: true, wantType: ActionCreateBindingPolicy, wantBP: "web.stage.test"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			action, ok := diffPlacement(newSnapshot(p, tc.bps...), tc.want)
			if ok != tc.wantOK || action.Type != tc.wantType {
				t.Fatalf("diffPlacement = %s, %v (%s), want %s, %v", action.Type, ok, action.Why, tc.wantType, tc.wantOK)
			}
			if tc.wantBP != "" && (action.BindingPolicy == nil || action.BindingPolicy.Name != tc.wantBP) {
				t.Errorf("writes %v, want %s", action.BindingPolicy, tc.wantBP)
			}
			if tc.wantType == ActionUpdateStatus && condition(t, action.Status, v1alpha1.ConditionReady).Reason != v1alpha1.ReasonBindingPolicyConflict {
				t.Errorf("status %v, want BindingPolicyConflict", action.Status.Conditions)
			}
		})
	}
}
