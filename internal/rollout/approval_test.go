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

// The approval rules of Plan: rules 9 to 12, and the withdrawn handover of
// rule 17.

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// gated returns the default three stages with test's approval Required.
func gated() []v1alpha1.Stage {
	test := stage("test")
	test.Approval = v1alpha1.ApprovalRequired
	return []v1alpha1.Stage{stage("dev"), test, stage("prod")}
}

// awaitingAt is a policy with gated stages whose rollout has reached test,
// which awaits approval since earlier; dev's BindingPolicy is still placed.
func awaitingAt() fixture {
	p := atStage(newPolicy(gated()...), "test")
	p.Status.Phase = v1alpha1.RolloutAwaitingApproval
	record := &p.Status.Stages[1]
	record.Phase, record.StartTime, record.BindingPolicy = v1alpha1.StageAwaitingApproval, nil, ""
	record.Approval, record.ApprovalRequestedTime = "web.stage.test", ptr.To(earlier)
	return fixture{newSnapshot(p, ownedBP(p, "dev", "bp-dev"))}
}

// approvalOf returns the StageApproval of a stage as the stager made it for
// the policy's current rollout, at generation 1, not approved.
func approvalOf(p *v1alpha1.StagedBindingPolicy, stage string) v1alpha1.StageApproval {
	for _, s := range p.Spec.Stages {
		if s.Name == stage {
			a := desiredApproval(p, s, specDigest(p))
			a.Generation, a.UID = 1, types.UID("approval-"+stage)
			return *a
		}
	}
	panic("no stage " + stage)
}

// approved sets the Approved condition, observed at generation observed.
func approved(a v1alpha1.StageApproval, observed int64, by string) v1alpha1.StageApproval {
	a.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionApproved, Status: metav1.ConditionTrue,
		ObservedGeneration: observed, Reason: "Approved", LastTransitionTime: muchEarlier}}
	a.Status.ApprovedBy = by
	return a
}

// withApprovals adds StageApprovals to the snapshot; each is made from the
// snapshot's policy as it is when the change runs.
func withApprovals(make ...func(*v1alpha1.StagedBindingPolicy) v1alpha1.StageApproval) func(*Snapshot) {
	return func(s *Snapshot) {
		for _, m := range make {
			s.Approvals = append(s.Approvals, m(s.Policy))
		}
	}
}

// testUnapproved is test's StageApproval, not approved.
func testUnapproved(p *v1alpha1.StagedBindingPolicy) v1alpha1.StageApproval {
	return approvalOf(p, "test")
}

func approvedBy(stage, by string) func(*v1alpha1.StagedBindingPolicy) v1alpha1.StageApproval {
	return func(p *v1alpha1.StagedBindingPolicy) v1alpha1.StageApproval {
		return approved(approvalOf(p, stage), 1, by)
	}
}

// TestPlanApproval table-tests the rules for stages whose approval is
// Required: the StageApprovals the stager keeps, and the gate.
func TestPlanApproval(t *testing.T) {
	engine := newEngine(t)
	tests := []struct {
		name       string
		snap       *Snapshot
		wantType   ActionType
		wantPhase  v1alpha1.RolloutPhase // of the status written, if any
		wantRecord v1alpha1.StagePhase   // of the active stage's record, if a status is written
		wantEvents []string
		wantMsg    string // substring of Progressing's message, if a status is written
		check      func(t *testing.T, a Action)
	}{
		{name: "the rollout starts at a stage that needs approval: it awaits it",
			snap:     fixture{newSnapshot(newPolicy(gated()[1], stage("prod")))}.Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutAwaitingApproval, wantRecord: v1alpha1.StageAwaitingApproval,
			wantEvents: []string{"Normal/ApprovalRequested"}, wantMsg: "StageApproval web.stage.test",
			check: func(t *testing.T, a Action) {
				if r := a.Status.Stages[0]; r.StartTime != nil || r.BindingPolicy != "" || !timeEqual(r.ApprovalRequestedTime, now) {
					t.Errorf("record %+v: want no start, no BindingPolicy, approval requested now", r)
				}
			}},
		{name: "dev is done: the rollout reaches test, which awaits approval",
			snap: at("dev", gated()...).bound().reporting(deployment, "1").reporting(configMap, "1").reporting(namespaceObj, "1").
				with(withApprovals(testUnapproved)).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutAwaitingApproval, wantRecord: v1alpha1.StageAwaitingApproval,
			wantEvents: []string{"Normal/StageSucceeded", "Normal/ApprovalRequested"}, wantMsg: `stage "dev" is done; stage "test": waiting for approval`},
		{name: "a stage ahead that needs approval gets its StageApproval early, so it can be approved before it is reached",
			snap:     at("dev", gated()...).Snapshot,
			wantType: ActionCreateStageApproval,
			check: func(t *testing.T, a Action) {
				want := approvalOf(newPolicy(gated()...), "test")
				if a.StageApproval.Name != "web.stage.test" || a.StageApproval.Spec != want.Spec ||
					a.StageApproval.Labels[v1alpha1.StageLabel] != "test" || !OwnedBy(a.StageApproval, newPolicy()) {
					t.Errorf("StageApproval %+v, want %+v", a.StageApproval, want)
				}
			}},
		{name: "awaiting, not approved: says what to do",
			snap:     awaitingAt().with(withApprovals(testUnapproved)).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutAwaitingApproval, wantRecord: v1alpha1.StageAwaitingApproval,
			wantMsg: "set the Approved condition of StageApproval web.stage.test to True",
			check: func(t *testing.T, a Action) {
				if r := a.Status.Stages[1]; !timeEqual(r.ApprovalRequestedTime, earlier) {
					t.Errorf("approvalRequestedTime %v, want it kept at %v", r.ApprovalRequestedTime, earlier)
				}
			}},
		{name: "awaiting, while dev's BindingPolicy stays placed (Replace deletes it only once test is placed)",
			snap:     awaitingAt().with(withApprovals(testUnapproved)).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutAwaitingApproval, wantRecord: v1alpha1.StageAwaitingApproval},
		{name: "approved for the current rollout: the stage starts, recording who and when",
			snap:     awaitingAt().with(withApprovals(approvedBy("test", "alice"))).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutProgressing, wantRecord: v1alpha1.StageActive,
			wantEvents: []string{"Normal/StageApproved", "Normal/StageStarted"}, wantMsg: "approved by alice",
			check: func(t *testing.T, a Action) {
				r := a.Status.Stages[1]
				if !timeEqual(r.StartTime, now) || !timeEqual(r.ApprovedTime, muchEarlier) || r.ApprovedBy != "alice" ||
					r.BindingPolicy != "web.stage.test" || !timeEqual(r.ApprovalRequestedTime, earlier) {
					t.Errorf("record %+v: want started now, approved by alice at the condition's time", r)
				}
			}},
		{name: "approved at an older generation of the StageApproval: it does not count",
			snap: awaitingAt().with(withApprovals(func(p *v1alpha1.StagedBindingPolicy) v1alpha1.StageApproval {
				a := approved(approvalOf(p, "test"), 1, "alice")
				a.Generation = 2
				return a
			})).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutAwaitingApproval, wantRecord: v1alpha1.StageAwaitingApproval,
			wantMsg: "approved at its generation 1, for an earlier rollout; it is at generation 2"},
		{name: "approved, then the policy changed: the StageApproval is renewed and the approval no longer counts",
			snap: awaitingAt().with(withApprovals(approvedBy("test", "alice"))).with(func(s *Snapshot) {
				s.Policy.Spec.Stages[2].ClusterSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"env": "prod-eu"}}}
				s.Policy.Generation++
			}).Snapshot,
			wantType: ActionUpdateStageApproval,
			check: func(t *testing.T, a Action) {
				if a.StageApproval.Spec.PolicyGeneration != testGeneration+1 || a.StageApproval.Spec.SpecDigest == approvalOf(newPolicy(gated()...), "test").Spec.SpecDigest {
					t.Errorf("spec %+v: want the new generation and spec digest", a.StageApproval.Spec)
				}
				if a.StageApproval.Status.ApprovedBy != "alice" {
					t.Errorf("the update dropped the approver's status")
				}
			}},
		{name: "approved, then suspended and resumed: the approval still counts",
			snap: awaitingAt().with(withApprovals(approvedBy("test", "alice"))).with(func(s *Snapshot) {
				s.Policy.Generation += 2 // spec.suspend set, then unset
			}).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutProgressing, wantRecord: v1alpha1.StageActive,
			wantEvents: []string{"Normal/StageApproved", "Normal/StageStarted"}},
		{name: "approved, then restarted: the StageApprovals are renewed",
			snap:     awaitingAt().with(withApprovals(approvedBy("test", "alice"))).with(restart).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutProgressing, wantRecord: v1alpha1.StageActive,
			wantEvents: []string{"Normal/RolloutRestarted", "Normal/StageStarted"},
			check: func(t *testing.T, a Action) {
				if a.Status.ActiveStage != "dev" {
					t.Errorf("restarted at %q, want dev", a.Status.ActiveStage)
				}
			}},
		{name: "awaiting, the StageApproval not created yet",
			snap:     awaitingAt().Snapshot,
			wantType: ActionCreateStageApproval},
		// Issue 32: setting approval None removed a gate the rollout had
		// reached; it binds until it is approved or the rollout restarts.
		{name: "awaiting, approval set to None: it still awaits approval, its StageApproval kept",
			snap: awaitingAt().with(withApprovals(testUnapproved)).with(func(s *Snapshot) {
				s.Policy.Spec.Stages[1].Approval = v1alpha1.ApprovalNone
			}).Snapshot,
			wantType: ActionUpdateStageApproval},
		{name: "awaiting, approval set to None, its StageApproval renewed: still awaits approval",
			snap: awaitingAt().with(func(s *Snapshot) {
				s.Policy.Spec.Stages[1].Approval = v1alpha1.ApprovalNone
			}).with(withApprovals(testUnapproved)).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutAwaitingApproval, wantRecord: v1alpha1.StageAwaitingApproval,
			wantMsg: "set the Approved condition of StageApproval web.stage.test to True"},
		{name: "awaiting, approval set to None, then approved: the stage starts",
			snap: awaitingAt().with(func(s *Snapshot) {
				s.Policy.Spec.Stages[1].Approval = v1alpha1.ApprovalNone
			}).with(withApprovals(approvedBy("test", "alice"))).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutProgressing, wantRecord: v1alpha1.StageActive,
			wantEvents: []string{"Normal/StageApproved", "Normal/StageStarted"}, wantMsg: "approved by alice"},
		{name: "a StageApproval of the name owned by someone else: Blocked",
			snap: awaitingAt().with(withApprovals(func(p *v1alpha1.StagedBindingPolicy) v1alpha1.StageApproval {
				a := approved(approvalOf(p, "test"), 1, "mallory")
				a.OwnerReferences[0].UID = "another-policy"
				return a
			})).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutBlocked, wantRecord: v1alpha1.StageAwaitingApproval,
			wantEvents: []string{"Warning/StageApprovalConflict"}, wantMsg: "does not belong to this policy"},
		{name: "a StageApproval of a stage removed from the spec is deleted",
			snap: at("dev", gated()...).with(withApprovals(testUnapproved)).with(func(s *Snapshot) {
				a := approvalOf(s.Policy, "test")
				a.Name, a.Spec.Stage, a.UID = "web.stage.qa", "qa", "approval-qa"
				s.Approvals = append(s.Approvals, a)
			}).Snapshot,
			wantType: ActionDeleteStageApproval,
			check: func(t *testing.T, a Action) {
				if a.StageApproval.Name != "web.stage.qa" {
					t.Errorf("deletes %s, want web.stage.qa", a.StageApproval.Name)
				}
			}},
		{name: "test started: its StageApproval is a record, kept as it is",
			snap: at("test", gated()...).with(withApprovals(approvedBy("test", "alice"))).with(func(s *Snapshot) {
				s.Policy.Generation++
				s.Policy.Spec.Stages[2].ClusterSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"env": "prod-eu"}}}
			}).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutProgressing, wantRecord: v1alpha1.StageActive,
			wantMsg: "to resolve BindingPolicy web.stage.test"},
		{name: "the policy is deleted: its StageApprovals go before its finalizer",
			snap: at("dev", gated()...).with(withApprovals(testUnapproved)).with(func(s *Snapshot) {
				s.Policy.DeletionTimestamp = ptr.To(now)
				s.BindingPolicies = nil
				resync(s)
			}).Snapshot,
			wantType: ActionDeleteStageApproval},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			action := Plan(tt.snap, engine)
			if action.Type != tt.wantType {
				t.Fatalf("action %s (%s), want %s", action.Type, action.Why, tt.wantType)
			}
			if got := eventKeys(action.Events); !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events %v, want %v", got, tt.wantEvents)
			}
			if action.Status != nil {
				if action.Status.Phase != tt.wantPhase {
					t.Errorf("phase %s, want %s", action.Status.Phase, tt.wantPhase)
				}
				if r := action.Status.StageNamed(action.Status.ActiveStage); r == nil || r.Phase != tt.wantRecord {
					t.Errorf("active stage's record %+v, want phase %s", r, tt.wantRecord)
				}
				if c := condition(t, action.Status, v1alpha1.ConditionProgressing); !strings.Contains(c.Message, tt.wantMsg) {
					t.Errorf("Progressing %s %q, want it to say %q", c.Reason, c.Message, tt.wantMsg)
				}
				if tt.wantPhase == v1alpha1.RolloutAwaitingApproval {
					if again := replan(t, tt.snap, engine, action); again.Type == ActionUpdateStatus && len(again.Events) > 0 {
						t.Errorf("planned again: %s with events %v", again.Type, eventKeys(again.Events))
					}
				}
			}
			if tt.check != nil {
				tt.check(t, action)
			}
		})
	}
}

// TestPlanApprovedBeforeReached approves prod's StageApproval while dev is
// active and runs the rollout on: prod starts as soon as test is done,
// without waiting, and its BindingPolicy follows.
func TestPlanApprovedBeforeReached(t *testing.T) {
	engine := newEngine(t)
	stages := []v1alpha1.Stage{stage("dev"), stage("test"), stage("prod")}
	stages[2].Approval = v1alpha1.ApprovalRequired
	snap := at("test", stages...).bound().reporting(deployment, "1").reporting(configMap, "1").reporting(namespaceObj, "1").
		with(withApprovals(approvedBy("prod", "bob"))).Snapshot

	var got []string
	for step := 0; step < 3; step++ {
		action := Plan(snap, engine)
		got = append(got, string(action.Type)+":"+strings.Join(eventKeys(action.Events), ","))
		if action.Type != ActionUpdateStatus {
			break
		}
		next := cloneSnapshot(snap)
		next.Policy.Status = *action.Status.DeepCopy()
		next.Now = metav1.NewTime(snap.Now.Add(time.Second))
		resync(next)
		snap = next
	}
	want := []string{
		"UpdateStatus:Normal/StageSucceeded,Normal/ApprovalRequested",
		"UpdateStatus:Normal/StageApproved,Normal/StageStarted",
		"CreateBindingPolicy:",
	}
	if !slices.Equal(got, want) {
		t.Errorf("steps %v, want %v", got, want)
	}
	if r := snap.Policy.Status.StageNamed("prod"); r.ApprovedBy != "bob" || r.Phase != v1alpha1.StageActive {
		t.Errorf("prod's record %+v: want Active, approved by bob", r)
	}
}

// TestRolloutRevision checks what an approval is bound to: the spec but
// spec.suspend, and the restartedAt annotation.
func TestRolloutRevision(t *testing.T) {
	base := newPolicy(gated()...)
	same := base.DeepCopy()
	same.Spec.Suspend = true
	same.Generation++
	if specDigest(base) != specDigest(same) {
		t.Error("spec.suspend changed the revision")
	}
	for name, change := range map[string]func(*v1alpha1.StagedBindingPolicy){
		"a stage's clusters": func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Stages[2].ClusterSelectors = nil },
		"the downsync":       func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Downsync = nil },
		"restartedAt": func(p *v1alpha1.StagedBindingPolicy) {
			p.Annotations = map[string]string{v1alpha1.RestartedAtAnnotation: "x"}
		},
	} {
		p := base.DeepCopy()
		change(p)
		if specDigest(p) == specDigest(base) {
			t.Errorf("changing %s kept the revision", name)
		}
	}
}

// approvedAt is a policy with gated stages whose stage test was approved by
// alice for what it places now, and is active, its BindingPolicy placed.
func approvedAt() fixture {
	f := at("test", gated()...).bound()
	record := &f.Policy.Status.Stages[1]
	record.Approval, record.ApprovalRequestedTime = "web.stage.test", ptr.To(muchEarlier)
	record.ApprovedBy, record.ApprovedTime = "alice", ptr.To(muchEarlier)
	record.ApprovedPlacement = placementDigest(f.Policy, f.Policy.Spec.Stages[1])
	return f.with(withApprovals(approvedBy("test", "alice")))
}

// TestPlanApprovedPlacement: an approval binds what the approved stage
// places. A change to the active stage's cluster selectors or to
// the downsync takes it back to AwaitingApproval, its BindingPolicy left as
// it was approved, and an approval of the new rollout starts it again.
func TestPlanApprovedPlacement(t *testing.T) {
	engine := newEngine(t)
	everyCluster := func(s *Snapshot) {
		s.Policy.Spec.Stages[1].ClusterSelectors = []metav1.LabelSelector{{}}
		s.Policy.Generation++
	}
	moreObjects := func(s *Snapshot) {
		s.Policy.Spec.Downsync = append(s.Policy.Spec.Downsync, s.Policy.Spec.Downsync[0])
		s.Policy.Spec.Downsync[len(s.Policy.Spec.Downsync)-1].ObjectSelectors = []metav1.LabelSelector{{}}
		s.Policy.Generation++
	}
	noGate := func(s *Snapshot) { s.Policy.Spec.Stages[1].Approval = v1alpha1.ApprovalNone }
	for name, change := range map[string][]func(*Snapshot){
		"its cluster selectors":                       {everyCluster},
		"the downsync":                                {moreObjects},
		"its cluster selectors, with approval None":   {everyCluster, noGate},
		"the downsync, with approval None set before": {noGate, moreObjects},
	} {
		t.Run("an approved stage whose spec changes "+name+" awaits approval again", func(t *testing.T) {
			f := approvedAt()
			for _, c := range change {
				f = f.with(c)
			}
			snap := f.Snapshot
			action := Plan(snap, engine)
			if action.Type != ActionUpdateStatus {
				t.Fatalf("action %s (%s), want the stage back to awaiting approval; the BindingPolicy left alone", action.Type, action.Why)
			}
			r := action.Status.StageNamed("test")
			if action.Status.Phase != v1alpha1.RolloutAwaitingApproval || r.Phase != v1alpha1.StageAwaitingApproval || r.ApprovedBy != "" ||
				!timeEqual(r.ApprovalRequestedTime, now) {
				t.Errorf("phase %s, test's record %+v: want AwaitingApproval again, requested now, no approver", action.Status.Phase, r)
			}
			if got := eventKeys(action.Events); !slices.Equal(got, []string{"Warning/" + v1alpha1.ReasonApprovedPlacementChanged}) {
				t.Errorf("events %v, want one Warning %s", got, v1alpha1.ReasonApprovedPlacementChanged)
			}
			// Then the StageApproval is renewed for the new rollout, and
			// the BindingPolicy stays as approved until it is approved again.
			next := replan(t, snap, engine, action)
			if next.Type != ActionUpdateStageApproval {
				t.Fatalf("planned again: %s (%s), want the StageApproval renewed", next.Type, next.Why)
			}
		})
	}
	t.Run("approved again for the new rollout: the stage starts, placing the change", func(t *testing.T) {
		snap := approvedAt().with(everyCluster).Snapshot
		regated := Plan(snap, engine)
		snap.Policy.Status = *regated.Status
		renewed := approvalOf(snap.Policy, "test")
		snap.Approvals = []v1alpha1.StageApproval{approved(renewed, renewed.Generation, "bob")}
		action := Plan(snap, engine)
		if action.Type != ActionUpdateStatus || action.Status.StageNamed("test").Phase != v1alpha1.StageActive ||
			action.Status.StageNamed("test").ApprovedBy != "bob" {
			t.Fatalf("action %s (%s): want test started again, approved by bob", action.Type, action.Why)
		}
		snap.Policy.Status = *action.Status
		if place := Plan(snap, engine); place.Type != ActionUpdateBindingPolicy {
			t.Errorf("then %s (%s), want test's BindingPolicy brought in line with the change", place.Type, place.Why)
		}
	})
	t.Run("a change that places the same keeps the approval", func(t *testing.T) {
		snap := approvedAt().with(func(s *Snapshot) {
			s.Policy.Spec.Stages[1].Condition = "true"
			s.Policy.Generation++
		}).Snapshot
		if action := Plan(snap, engine); action.Status != nil && action.Status.Phase == v1alpha1.RolloutAwaitingApproval {
			t.Errorf("action %s (%s): a new condition took the stage back to awaiting approval", action.Type, action.Why)
		}
	})
	t.Run("a stage that needed no approval takes changes at once", func(t *testing.T) {
		snap := at("test").bound().with(everyCluster).Snapshot
		if action := Plan(snap, engine); action.Type != ActionUpdateBindingPolicy {
			t.Errorf("action %s (%s), want test's BindingPolicy updated", action.Type, action.Why)
		}
	})
}

// TestPlanApprovalRecordedBeforeApprovedPlacement: a stage approved by a
// stager that did not record approvedPlacement yet (before an upgrade)
// keeps its approval only for what its BindingPolicy places: the record is
// completed from it; a spec that would place anything else, or a stage
// whose placement cannot be read, awaits approval again.
func TestPlanApprovalRecordedBeforeApprovedPlacement(t *testing.T) {
	engine := newEngine(t)
	legacy := func(s *Snapshot) { s.Policy.Status.Stages[1].ApprovedPlacement = "" }
	everyCluster := func(s *Snapshot) {
		s.Policy.Spec.Stages[1].ClusterSelectors = []metav1.LabelSelector{{}}
		s.Policy.Generation++
	}
	noGate := func(s *Snapshot) { s.Policy.Spec.Stages[1].Approval = v1alpha1.ApprovalNone }
	noBP := func(s *Snapshot) { s.ActiveBindingPolicy, s.BindingPolicies = nil, nil }

	t.Run("placing what it placed, the record is completed", func(t *testing.T) {
		snap := approvedAt().with(legacy).Snapshot
		action := Plan(snap, engine)
		if action.Type != ActionUpdateStatus || action.Status.StageNamed("test").ApprovedPlacement != placementDigest(snap.Policy, snap.Policy.Spec.Stages[1]) {
			t.Fatalf("action %s (%s), want the approved placement recorded", action.Type, action.Why)
		}
		if r := action.Status.StageNamed("test"); r.Phase != v1alpha1.StageActive || r.ApprovedBy != "alice" || len(action.Events) != 0 {
			t.Errorf("test's record %+v, events %v: want it active, approved by alice, quietly", r, eventKeys(action.Events))
		}
		// Then a change to what it places awaits approval as for any other.
		snap.Policy.Status = *action.Status
		everyCluster(snap)
		if again := Plan(snap, engine); again.Status == nil || again.Status.Phase != v1alpha1.RolloutAwaitingApproval {
			t.Errorf("then, widened: action %s (%s), want AwaitingApproval", again.Type, again.Why)
		}
	})
	for name, change := range map[string][]func(*Snapshot){
		"a spec that places more":                     {everyCluster},
		"a spec that places more, with approval None": {noGate, everyCluster},
		"no BindingPolicy to read what it placed":     {noBP},
	} {
		t.Run(name+" awaits approval again", func(t *testing.T) {
			f := approvedAt().with(legacy)
			for _, c := range change {
				f = f.with(c)
			}
			action := Plan(f.Snapshot, engine)
			if action.Type != ActionUpdateStatus {
				t.Fatalf("action %s (%s), want the stage back to awaiting approval", action.Type, action.Why)
			}
			r := action.Status.StageNamed("test")
			if action.Status.Phase != v1alpha1.RolloutAwaitingApproval || r.Phase != v1alpha1.StageAwaitingApproval || r.ApprovedBy != "" {
				t.Errorf("phase %s, test's record %+v: want AwaitingApproval again, no approver", action.Status.Phase, r)
			}
			if got := eventKeys(action.Events); !slices.Equal(got, []string{"Warning/" + v1alpha1.ReasonApprovedPlacementChanged}) {
				t.Errorf("events %v, want one Warning %s", got, v1alpha1.ReasonApprovedPlacementChanged)
			}
		})
	}
	t.Run("a stage started without an approval takes changes at once", func(t *testing.T) {
		snap := approvedAt().with(legacy).with(noGate).with(everyCluster).with(func(s *Snapshot) {
			s.Policy.Status.Stages[1].ApprovedBy, s.Policy.Status.Stages[1].ApprovedTime = "", nil
			s.Approvals = nil
		}).Snapshot
		if action := Plan(snap, engine); action.Type != ActionUpdateBindingPolicy {
			t.Errorf("action %s (%s), want test's BindingPolicy updated", action.Type, action.Why)
		}
	})
}
