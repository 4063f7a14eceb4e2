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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"pgregory.net/rapid"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
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
	// The next cluster of a batched stage, sealed, with its batch's
	// Event; the next stage, marked by the handover.
	prod := p.Spec.Stages[2]
	cluster := func() *ksv1alpha1.BindingPolicy {
		bp := ClusterBindingPolicy(p, test, "store-a")
		bp.UID = "bp-store-a"
		return bp
	}
	sealed := ClusterBindingPolicy(p, test, "store-a")
	sealed.Annotations = map[string]string{v1alpha1.PlacedAnnotation: "seal"}
	started := []Event{{Type: "Normal", Reason: v1alpha1.EventReasonBatchStarted, Note: "batch 1 started"}}
	nextCluster := Placement{BP: sealed, Reason: ReasonCluster, Marked: true, Events: started}
	marked := DesiredBindingPolicy(p, prod)
	marked.Annotations = map[string]string{v1alpha1.HandedOverFromAnnotation: "test@2026-01-01T00:00:00Z/seal"}
	handedOver := Placement{BP: marked, Reason: ReasonHandedOver, Marked: true}
	foreign := func(bp *ksv1alpha1.BindingPolicy) *ksv1alpha1.BindingPolicy {
		bp.OwnerReferences[0].UID = "someone-else"
		return bp
	}
	cases := []struct {
		name     string
		want     []Placement
		bps      []*ksv1alpha1.BindingPolicy
		wantType ActionType
		wantBP   string
		wantOK   bool
		// wantMark is the annotation the write carries, wantWhy part of
		// its Why, wantEvents how many of the batch's start go with it.
		wantMark, wantWhy string
		wantEvents        int
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
		{name: "held is never written", want: []Placement{{BP: DesiredBindingPolicy(p, prod), Reason: ReasonKeptRevision, Held: true}},
			bps: []*ksv1alpha1.BindingPolicy{outOfLine(ownedBP(p, "prod", "p"))}},
		{name: "next cluster is created sealed, with its batch's Event", want: []Placement{nextCluster},
			wantOK: true, wantType: ActionCreateBindingPolicy, wantBP: sealed.Name, wantMark: v1alpha1.PlacedAnnotation,
			wantWhy: `stage "test" places cluster store-a`, wantEvents: 1},
		{name: "next cluster owned unsealed is taken over, sealed", want: []Placement{nextCluster}, bps: []*ksv1alpha1.BindingPolicy{cluster()},
			wantOK: true, wantType: ActionUpdateBindingPolicy, wantBP: sealed.Name, wantMark: v1alpha1.PlacedAnnotation,
			wantWhy: "which it had not placed", wantEvents: 1},
		{name: "next cluster being deleted is waited for", want: []Placement{nextCluster}, bps: []*ksv1alpha1.BindingPolicy{beingDeleted(cluster())},
			wantOK: true, wantType: ActionNone, wantWhy: "waiting to create it again"},
		{name: "next cluster's name taken blocks", want: []Placement{nextCluster}, bps: []*ksv1alpha1.BindingPolicy{foreign(cluster())},
			wantOK: true, wantType: ActionUpdateStatus, wantWhy: `stage "test" places cluster store-a: the name is taken`},
		{name: "placed clusters first, then the next",
			want: []Placement{{BP: ClusterBindingPolicy(p, test, "store-b"), Reason: ReasonCluster}, nextCluster},
			bps:  []*ksv1alpha1.BindingPolicy{outOfLine(ClusterBindingPolicy(p, test, "store-b"))}, wantOK: true, wantType: ActionUpdateBindingPolicy,
			wantBP: "web.stage.test.on.store-b"},
		{name: "next stage is created marked", want: []Placement{handedOver},
			wantOK: true, wantType: ActionCreateBindingPolicy, wantBP: "web.stage.prod", wantMark: v1alpha1.HandedOverFromAnnotation,
			wantWhy: `stage "test" is done: placing stage "prod" before the status records it`},
		{name: "next stage's name taken blocks", want: []Placement{handedOver}, bps: []*ksv1alpha1.BindingPolicy{foreignBP(p, "prod", "p")},
			wantOK: true, wantType: ActionUpdateStatus},
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
			if tc.wantMark != "" && action.BindingPolicy.Annotations[tc.wantMark] == "" {
				t.Errorf("writes %s without %s: %v", action.BindingPolicy.Name, tc.wantMark, action.BindingPolicy.Annotations)
			}
			if !strings.Contains(action.Why, tc.wantWhy) {
				t.Errorf("Why %q, want it to say %q", action.Why, tc.wantWhy)
			}
			if n := len(slices.DeleteFunc(slices.Clone(action.Events), func(e Event) bool { return e.Reason != v1alpha1.EventReasonBatchStarted })); n != tc.wantEvents {
				t.Errorf("Events %v, want %d of the batch's start", action.Events, tc.wantEvents)
			}
		})
	}
}

// TestDesiredPlacementGivesOneReasonEach checks desiredPlacement over the
// random snapshots of TestPlanNeverDeletesAHeldOrWaitingBindingPolicy,
// the stage's batches assessed as Plan does and the batch and the stage
// done or not: no two Placements name the same BindingPolicy (each has
// one Reason), every Placement has one, and every BindingPolicy of the
// policy, owned and not being deleted, is either named by a Placement or
// surplus, never both, which is what `kubectl stager explain` may print.
func TestDesiredPlacementGivesOneReasonEach(t *testing.T) {
	engine := newEngine(t)
	var placed, surplus, held int
	seen := map[Reason]int{}
	reasons := []Reason{ReasonActive, ReasonCensus, ReasonCluster, ReasonAccumulated, ReasonKeptRevision, ReasonHandedOver}
	reached := func() bool {
		return surplus > 0 && held > 0 && !slices.ContainsFunc(reasons, func(r Reason) bool { return seen[r] == 0 })
	}
	// The property holds on every snapshot; that the generator reaches each
	// Reason is a matter of enough of them: a round of checks that misses
	// one (about one run in 300) is followed by another, up to five.
	for round := 0; round == 0 || !reached() && round < 5; round++ {
		checkPlacementReasons(t, engine, seen, &placed, &surplus, &held)
	}
	for _, r := range reasons {
		if seen[r] == 0 {
			t.Errorf("no Placement with Reason %s: the generator does not reach it", r)
		}
	}
	if surplus == 0 || held == 0 {
		t.Errorf("%d surplus, %d held: the generator does not reach them", surplus, held)
	}
	t.Logf("%d Placements (%v, %d held), %d surplus checked", placed, seen, held, surplus)
}

// checkPlacementReasons is one round of TestDesiredPlacementGivesOneReasonEach,
// counting what it reaches into seen, placed, surplus and held.
func checkPlacementReasons(t *testing.T, engine *expression.Engine, seen map[Reason]int, placed, surplus, held *int) {
	rapid.Check(t, func(rt *rapid.T) {
		snap := randomPlacementSnapshot(rt)
		if Aborting(snap.Policy) {
			return // abort's Placements are its targets (abortPlacements)
		}
		snap.key = HandoverKey{}
		active, _, _ := ActiveStage(snap.Policy)
		want := desiredPlacement(snap, active)
		// Only a stage that is not the last hands over.
		final := active == len(snap.Policy.Spec.Stages)-1
		a := assessed{soaked: rapid.Bool().Draw(rt, "soaked"), done: rapid.Bool().Draw(rt, "done") && !final}
		if want.batched() {
			programs, _, err := compileStages(engine, snap.Policy.Spec.Stages)
			if err != nil {
				rt.Fatalf("compileStages: %v", err)
			}
			b := assessBatches(snap, active, clock.RealClock{}, programs[active], snap.ActiveBindingPolicy, engine.NewBudget())
			a.b = &b
		}
		want.assess(a)
		reasons := map[string]Reason{}
		for _, p := range want.all() {
			if p.Reason == "" {
				rt.Fatalf("Placement %s has no Reason", p.BP.Name)
			}
			if r, ok := reasons[p.BP.Name]; ok {
				rt.Fatalf("BindingPolicy %s is kept twice: %s and %s", p.BP.Name, r, p.Reason)
			}
			reasons[p.BP.Name] = p.Reason
			seen[p.Reason]++
			if p.Held {
				*held++
			}
		}
		gone := map[string]bool{}
		for _, s := range want.surplus() {
			if _, ok := reasons[s.BP.Name]; ok {
				rt.Fatalf("BindingPolicy %s is both kept (%s) and surplus", s.BP.Name, reasons[s.BP.Name])
			}
			gone[s.BP.Name] = true
		}
		for _, bp := range snap.BindingPolicies {
			if !OwnedBy(&bp, snap.Policy) || bp.DeletionTimestamp != nil {
				continue
			}
			if _, ok := reasons[bp.Name]; !ok && !gone[bp.Name] {
				rt.Fatalf("BindingPolicy %s is neither kept nor surplus", bp.Name)
			}
		}
		*placed, *surplus = *placed+len(reasons), *surplus+len(gone)
	})
}
