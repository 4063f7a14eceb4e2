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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// ---------------------------------------------------------------------------
// Rule 6: suspend and resume
// ---------------------------------------------------------------------------

// suspend sets spec.suspend on the snapshot's policy.
func suspend(s *Snapshot) { s.Policy.Spec.Suspend = true }

func TestPlanSuspend(t *testing.T) {
	engine := newEngine(t)
	dev := func() fixture { return at("dev") }
	tests := []struct {
		name       string
		snap       *Snapshot
		wantType   ActionType
		wantPhase  v1alpha1.RolloutPhase
		wantEvents []string
		wantMsg    string // substring of the Progressing condition's message
	}{
		{name: "suspended before the first stage: nothing is placed",
			snap:     fixture{newSnapshot(newPolicy())}.with(suspend).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutSuspended, wantEvents: []string{"Normal/Suspended"},
			wantMsg: "before its first stage"},
		{name: "suspended with the active stage's BindingPolicy missing: it is not created",
			snap:     fixture{newSnapshot(atStage(newPolicy(), "dev"))}.with(suspend).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutSuspended, wantEvents: []string{"Normal/Suspended"},
			wantMsg: `in stage "dev"`},
		{name: "suspended with the stage's condition holding: no stage starts",
			snap:     dev().bound().reporting(deployment, "1").with(suspend).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutSuspended, wantEvents: []string{"Normal/Suspended"},
			wantMsg: `in stage "dev"`},
		{name: "suspended with an earlier stage's BindingPolicy left: it is not deleted",
			snap:     at("test").bound().reporting(deployment, "1").alsoBP(ownedBP(newPolicy(), "dev", "bp-dev")).with(suspend).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutSuspended, wantEvents: []string{"Normal/Suspended"},
			wantMsg: `in stage "test"`},
		{name: "suspended with a spec change: the BindingPolicy is not updated",
			snap: dev().bound().with(func(s *Snapshot) {
				s.Policy.Spec.Stages[0].ClusterSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"env": "qa"}}}
			}).with(suspend).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutSuspended, wantEvents: []string{"Normal/Suspended"},
			wantMsg: `in stage "dev"`},
		{name: "an invalid expression is reported before the suspension",
			snap:     fixture{newSnapshot(newPolicy(stageWith("dev", "", "obj.results.exists("), stage("prod")))}.with(suspend).Snapshot,
			wantType: ActionUpdateStatus, wantPhase: v1alpha1.RolloutBlocked, wantEvents: []string{"Warning/InvalidExpression"},
			wantMsg: "dev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			action := Plan(tt.snap, engine)
			if action.Type != tt.wantType {
				t.Fatalf("action %s (%s), want %s", action.Type, action.Why, tt.wantType)
			}
			if action.Status.Phase != tt.wantPhase {
				t.Errorf("phase %s, want %s", action.Status.Phase, tt.wantPhase)
			}
			if got := eventKeys(action.Events); !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events %v, want %v", got, tt.wantEvents)
			}
			if c := condition(t, action.Status, v1alpha1.ConditionProgressing); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, tt.wantMsg) {
				t.Errorf("Progressing %s (%s: %q), want False naming %q", c.Status, c.Reason, c.Message, tt.wantMsg)
			}
			if action.Status.ActiveStage != tt.snap.Policy.Status.ActiveStage {
				t.Errorf("the active stage moved from %q to %q", tt.snap.Policy.Status.ActiveStage, action.Status.ActiveStage)
			}
			if tt.wantPhase != v1alpha1.RolloutSuspended {
				return
			}
			// Once written, the suspension holds with nothing more to do.
			if again := replan(t, tt.snap, engine, action); again.Type != ActionNone {
				t.Errorf("planned again while suspended: %s (%s), want None", again.Type, again.Why)
			}
		})
	}
}

// TestPlanResume resumes a rollout suspended with its stage's condition
// holding: it goes on where it stopped, with a Resumed Event.
func TestPlanResume(t *testing.T) {
	engine := newEngine(t)
	const deadline, pause = 30 * time.Minute, 10 * time.Minute
	snap := at("dev", stage("dev"), deadlined("test", seedCondition, deadline), stage("prod")).bound().reporting(deployment, "1").with(suspend).Snapshot
	held := Plan(snap, engine)
	if held.Status == nil || held.Status.Phase != v1alpha1.RolloutSuspended {
		t.Fatalf("suspending: %s (%s)", held.Type, held.Why)
	}
	resumed := *snap
	resumed.Policy = snap.Policy.DeepCopy()
	resumed.Policy.Status = *held.Status.DeepCopy()
	resumed.Policy.Spec.Suspend = false
	resumed.Now = metav1.NewTime(snap.Now.Add(pause))
	handover := Plan(&resumed, engine)
	if handover.Type != ActionCreateBindingPolicy || handover.BindingPolicy.Name != "web.stage.test" {
		t.Fatalf("resumed: %s (%s), want the next stage placed", handover.Type, handover.Why)
	}
	action := Plan(placed(&resumed, handover.BindingPolicy), engine)
	if action.Type != ActionUpdateStatus || action.Status.ActiveStage != "test" {
		t.Fatalf("resumed: %s (%s) to stage %q, want the rollout to move on to test", action.Type, action.Why, action.Status.ActiveStage)
	}
	if got := eventKeys(action.Events); !slices.Contains(got, "Normal/Resumed") || !slices.Contains(got, "Normal/StageStarted") {
		t.Errorf("events %v, want Resumed and StageStarted", got)
	}
	// The suspension was dev's: test, started as it ended, was not
	// suspended, and its deadline runs from its start.
	dev, test := action.Status.Stages[0], action.Status.Stages[1]
	if dev.SuspendedDuration == nil || dev.SuspendedDuration.Duration != pause {
		t.Errorf("dev's suspendedDuration %v, want %s", dev.SuspendedDuration, pause)
	}
	if test.SuspendedDuration != nil {
		t.Errorf("test's suspendedDuration %v, want none", test.SuspendedDuration)
	}
	if !timeEqual(test.ProgressDeadlineTime, metav1.NewTime(resumed.Now.Add(deadline))) {
		t.Errorf("test's progressDeadlineTime %v, want %s after its start at %s", test.ProgressDeadlineTime, deadline, resumed.Now)
	}
	if action.Status.SuspendedTime != nil {
		t.Errorf("suspendedTime %v after the resume, want none", action.Status.SuspendedTime)
	}
}
