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

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// ---------------------------------------------------------------------------
// Rule 7: restart
// ---------------------------------------------------------------------------

// restartedAt is the value of the restartedAt annotation in the restart tests.
const restartedAt = "2026-11-23T14:00:00Z"

// restart sets the restartedAt annotation on the snapshot's policy.
func restart(s *Snapshot) {
	s.Policy.Annotations = map[string]string{v1alpha1.RestartedAtAnnotation: restartedAt}
}

func TestPlanRestart(t *testing.T) {
	engine := newEngine(t)
	const value = restartedAt
	// completed is a rollout done in prod.
	completed := func() fixture {
		f := at("prod").bound().reporting(deployment, "1")
		f.Policy.Status.Phase = v1alpha1.RolloutCompleted
		f.Policy.Status.Stages = []v1alpha1.StageStatus{
			{Name: "dev", Phase: v1alpha1.StageSucceeded, StartTime: ptr.To(muchEarlier), CompletionTime: ptr.To(earlier)},
			{Name: "test", Phase: v1alpha1.StageSucceeded, StartTime: ptr.To(earlier), CompletionTime: ptr.To(earlier)},
			{Name: "prod", Phase: v1alpha1.StageSucceeded, StartTime: ptr.To(earlier), CompletionTime: ptr.To(earlier), BindingPolicy: "web.stage.prod"},
		}
		return f
	}
	tests := []struct {
		name       string
		snap       *Snapshot
		wantStage  string
		wantEvents []string
	}{
		{name: "a completed rollout restarts from the first stage",
			snap: completed().with(restart).Snapshot, wantStage: "dev",
			wantEvents: []string{"Normal/RolloutRestarted", "Normal/StageStarted"}},
		{name: "a rollout in its second stage restarts too",
			snap: at("test").bound().with(restart).Snapshot, wantStage: "dev",
			wantEvents: []string{"Normal/RolloutRestarted", "Normal/StageStarted"}},
		{name: "a new policy with the annotation starts, recording the value",
			snap: fixture{newSnapshot(newPolicy())}.with(restart).Snapshot, wantStage: "dev",
			wantEvents: []string{"Normal/RolloutRestarted", "Normal/StageStarted"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			action := Plan(tt.snap, engine)
			if action.Type != ActionUpdateStatus || action.Status.ActiveStage != tt.wantStage || action.Status.RestartedAt != value {
				t.Fatalf("action %s (%s) to stage %q recording %q, want the rollout restarted in %q recording %q",
					action.Type, action.Why, action.Status.ActiveStage, action.Status.RestartedAt, tt.wantStage, value)
			}
			if got := eventKeys(action.Events); !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events %v, want %v", got, tt.wantEvents)
			}
			for i, r := range action.Status.Stages {
				if i > 0 && r.Phase != v1alpha1.StagePending {
					t.Errorf("stage %s is %s after the restart, want Pending", r.Name, r.Phase)
				}
			}
			// The same value again restarts nothing: the first stage's
			// BindingPolicy comes next, the old one stays until it is placed.
			next := replan(t, tt.snap, engine, action)
			if next.Status != nil && next.Status.ActiveStage != tt.wantStage || slices.Contains(eventKeys(next.Events), "Normal/RolloutRestarted") {
				t.Errorf("planned again: %s (%s), events %v; want no second restart", next.Type, next.Why, eventKeys(next.Events))
			}
			if next.Type == ActionDeleteBindingPolicy {
				t.Errorf("planned again: deletes %s before the first stage is placed", next.BindingPolicy.Name)
			}
		})
	}

	t.Run("a value already handled restarts nothing", func(t *testing.T) {
		snap := completed().with(restart).with(func(s *Snapshot) { s.Policy.Status.RestartedAt = value }).Snapshot
		if action := Plan(snap, engine); slices.Contains(eventKeys(action.Events), "Normal/RolloutRestarted") || action.Status != nil && action.Status.ActiveStage != "prod" {
			t.Errorf("action %s (%s), events %v: want the completed rollout left alone", action.Type, action.Why, eventKeys(action.Events))
		}
	})
	// The status records the value handled, and the API server refuses a
	// status whose restartedAt is over 256 bytes: such a value failed
	// every status write, with no Event.
	t.Run("a value too long to record blocks the rollout and says why", func(t *testing.T) {
		long := strings.Repeat("x", v1alpha1.MaxRestartedAtLength+1)
		snap := at("test").bound().with(func(s *Snapshot) {
			s.Policy.Annotations = map[string]string{v1alpha1.RestartedAtAnnotation: long}
		}).Snapshot
		action := Plan(snap, engine)
		if action.Type != ActionUpdateStatus || action.Status.RestartedAt != "" || action.Status.ActiveStage != "test" ||
			action.Status.Phase != v1alpha1.RolloutBlocked {
			t.Fatalf("action %s (%s), status %+v: want the rollout blocked where it is, the value not recorded", action.Type, action.Why, action.Status)
		}
		progressing := meta.FindStatusCondition(action.Status.Conditions, v1alpha1.ConditionProgressing)
		if progressing == nil || progressing.Reason != v1alpha1.ReasonInvalidAnnotation || !strings.Contains(progressing.Message, "257 bytes") {
			t.Errorf("Progressing %+v, want reason %s saying the value's length", progressing, v1alpha1.ReasonInvalidAnnotation)
		}
		if got := eventKeys(action.Events); !slices.Equal(got, []string{"Warning/" + v1alpha1.ReasonInvalidAnnotation}) {
			t.Errorf("events %v, want one Warning %s", got, v1alpha1.ReasonInvalidAnnotation)
		}
		if next := replan(t, snap, engine, action); next.Type != ActionNone {
			t.Errorf("planned again: %s (%s), want nothing more until the annotation changes", next.Type, next.Why)
		}
	})
	t.Run("a suspended rollout restarts once resumed", func(t *testing.T) {
		snap := completed().with(restart).with(suspend).Snapshot
		if action := Plan(snap, engine); action.Status == nil || action.Status.Phase != v1alpha1.RolloutSuspended || action.Status.ActiveStage != "prod" {
			t.Errorf("action %s (%s): want the suspension to hold the restart", action.Type, action.Why)
		}
	})
}
