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

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// ---------------------------------------------------------------------------
// Rule 9: starting (and restarting) the rollout
// ---------------------------------------------------------------------------

func TestPlanStartsRollout(t *testing.T) {
	engine := newEngine(t)

	// reset is a policy whose recorded active stage "qa" was removed from the spec.
	reset := newPolicy()
	reset.Status = v1alpha1.StagedBindingPolicyStatus{
		ObservedGeneration: 2, ActiveStage: "qa", Phase: v1alpha1.RolloutProgressing,
		Stages: []v1alpha1.StageStatus{
			{Name: "dev", Phase: v1alpha1.StageSucceeded, StartTime: ptr.To(muchEarlier), CompletionTime: ptr.To(earlier),
				BindingPolicy: "web.stage.dev", Message: "old"},
			{Name: "qa", Phase: v1alpha1.StageActive, StartTime: ptr.To(earlier), BindingPolicy: "web.stage.qa"},
			{Name: "prod", Phase: v1alpha1.StagePending},
		},
	}

	tests := []struct {
		name       string
		snap       *Snapshot
		wantEvents []string
		wantNotes  []string // substrings of the first event's note
	}{
		{name: "not started",
			snap:       newSnapshot(newPolicy()),
			wantEvents: []string{"Normal/StageStarted"},
			wantNotes:  []string{`"dev"`}},
		{name: "not started, leftover BindingPolicy does not matter",
			snap:       newSnapshot(newPolicy(), ownedBP(newPolicy(), "prod", "bp-old-prod")),
			wantEvents: []string{"Normal/StageStarted"},
			wantNotes:  []string{`"dev"`}},
		{name: "active stage removed from the spec",
			snap:       newSnapshot(reset, ownedBP(reset, "qa", "bp-qa")),
			wantEvents: []string{"Warning/ActiveStageReset", "Normal/StageStarted"},
			wantNotes:  []string{`"qa"`, `"dev"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.snap, engine)
			if got.Type != ActionUpdateStatus {
				t.Fatalf("Plan() = %s (%s), want %s", got.Type, got.Why, ActionUpdateStatus)
			}
			if got.BindingPolicy != nil {
				t.Errorf("Plan() names BindingPolicy %s", got.BindingPolicy.Name)
			}
			s := got.Status
			if s.ActiveStage != "dev" || s.Phase != v1alpha1.RolloutProgressing || s.ObservedGeneration != testGeneration {
				t.Errorf("status activeStage/phase/observedGeneration = %q/%q/%d, want dev/Progressing/%d",
					s.ActiveStage, s.Phase, s.ObservedGeneration, testGeneration)
			}
			want := []v1alpha1.StageStatus{
				{Name: "dev", Phase: v1alpha1.StageActive, StartTime: ptr.To(now), BindingPolicy: "web.stage.dev",
					Message: "creating the stage's BindingPolicy"},
				{Name: "test", Phase: v1alpha1.StagePending},
				{Name: "prod", Phase: v1alpha1.StagePending},
			}
			if !equality.Semantic.DeepEqual(s.Stages, want) {
				t.Errorf("stage records differ (-want +got):\n%s", diff.Diff(want, s.Stages))
			}
			if c := condition(t, s, v1alpha1.ConditionReady); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonBindingPolicyPending {
				t.Errorf("Ready = %s/%s, want False/%s", c.Status, c.Reason, v1alpha1.ReasonBindingPolicyPending)
			}
			if c := condition(t, s, v1alpha1.ConditionCompleted); c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonStagesRemaining {
				t.Errorf("Completed = %s/%s, want False/%s", c.Status, c.Reason, v1alpha1.ReasonStagesRemaining)
			}
			if keys := eventKeys(got.Events); !slices.Equal(keys, tt.wantEvents) {
				t.Fatalf("events = %v, want %v", keys, tt.wantEvents)
			}
			for _, sub := range tt.wantNotes {
				if !strings.Contains(got.Events[0].Note, sub) {
					t.Errorf("event note %q does not contain %s", got.Events[0].Note, sub)
				}
			}

			// Once the start is written, the next run creates dev's
			// BindingPolicy and does not start the stage again.
			again := replan(t, tt.snap, engine, got)
			if again.Type != ActionCreateBindingPolicy || again.BindingPolicy.Name != "web.stage.dev" {
				t.Fatalf("after the start, Plan() = %s %v (%s), want CreateBindingPolicy web.stage.dev",
					again.Type, again.BindingPolicy, again.Why)
			}
			if len(again.Events) != 0 {
				t.Errorf("after the start, events = %v, want none", eventKeys(again.Events))
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Rule 9: stages added to the spec behind the rollout
// ---------------------------------------------------------------------------

// cloneSnapshot returns a deep copy of a snapshot.
func cloneSnapshot(s *Snapshot) *Snapshot {
	c := *s
	c.Policy = s.Policy.DeepCopy()
	c.BindingPolicies = nil
	for i := range s.BindingPolicies {
		c.BindingPolicies = append(c.BindingPolicies, *s.BindingPolicies[i].DeepCopy())
	}
	if s.ActiveBindingPolicy != nil {
		c.ActiveBindingPolicy = s.ActiveBindingPolicy.DeepCopy()
	}
	if s.Binding != nil {
		c.Binding = s.Binding.DeepCopy()
	}
	c.CombinedStatuses = nil
	for i := range s.CombinedStatuses {
		c.CombinedStatuses = append(c.CombinedStatuses, *s.CombinedStatuses[i].DeepCopy())
	}
	c.Approvals = nil
	for i := range s.Approvals {
		c.Approvals = append(c.Approvals, *s.Approvals[i].DeepCopy())
	}
	return &c
}

// respec replaces the stages of the snapshot's policy by stage(name) for
// each name, as a new generation of the spec; the status stays as it was.
func respec(names ...string) func(*Snapshot) {
	return func(s *Snapshot) {
		s.Policy.Spec.Stages = nil
		for _, name := range names {
			s.Policy.Spec.Stages = append(s.Policy.Spec.Stages, stage(name))
		}
		s.Policy.Generation++
	}
}

func TestPlanStageAddedBeforeActive(t *testing.T) {
	engine := newEngine(t)

	// The records atStage writes for dev, test and prod.
	devDone := v1alpha1.StageStatus{Name: "dev", Phase: v1alpha1.StageSucceeded, StartTime: ptr.To(muchEarlier),
		CompletionTime: ptr.To(earlier), BindingPolicy: "web.stage.dev"}
	testDone := v1alpha1.StageStatus{Name: "test", Phase: v1alpha1.StageSucceeded, StartTime: ptr.To(earlier),
		CompletionTime: ptr.To(now), BindingPolicy: "web.stage.test"}
	testActive := v1alpha1.StageStatus{Name: "test", Phase: v1alpha1.StageActive, StartTime: ptr.To(earlier), BindingPolicy: "web.stage.test"}
	prodPending := v1alpha1.StageStatus{Name: "prod", Phase: v1alpha1.StagePending}
	prodActive := v1alpha1.StageStatus{Name: "prod", Phase: v1alpha1.StageActive, StartTime: ptr.To(now), BindingPolicy: "web.stage.prod"}
	prodDone := v1alpha1.StageStatus{Name: "prod", Phase: v1alpha1.StageSucceeded, StartTime: ptr.To(earlier),
		CompletionTime: ptr.To(now), BindingPolicy: "web.stage.prod"}
	skipped := func(name string) v1alpha1.StageStatus {
		return v1alpha1.StageStatus{Name: name, Phase: v1alpha1.StageSkipped}
	}

	tests := []struct {
		name string
		snap *Snapshot
		// wantActive and wantPhase are the status's active stage and phase.
		wantActive string
		wantPhase  v1alpha1.RolloutPhase
		// wantRecords are the stage records, messages left out.
		wantRecords []v1alpha1.StageStatus
		// advances is true when the run moves to the next stage.
		advances bool
	}{
		{name: "stage added before the first stage while test waits",
			snap:       at("test").bound().with(respec("canary", "dev", "test", "prod")).Snapshot,
			wantActive: "test", wantPhase: v1alpha1.RolloutProgressing,
			wantRecords: []v1alpha1.StageStatus{skipped("canary"), devDone, testActive, prodPending}},
		{name: "stage added between dev and the active test",
			snap:       at("test").bound().reporting(deployment, "0").with(respec("dev", "canary", "test", "prod")).Snapshot,
			wantActive: "test", wantPhase: v1alpha1.RolloutProgressing,
			wantRecords: []v1alpha1.StageStatus{devDone, skipped("canary"), testActive, prodPending}},
		{name: "two stages added before the active one",
			snap:       at("test").bound().with(respec("dev", "qa", "staging", "test", "prod")).Snapshot,
			wantActive: "test", wantPhase: v1alpha1.RolloutProgressing,
			wantRecords: []v1alpha1.StageStatus{devDone, skipped("qa"), skipped("staging"), testActive, prodPending}},
		{name: "pending stage moved before the active one",
			snap:       at("test").bound().with(respec("dev", "prod", "test")).Snapshot,
			wantActive: "test", wantPhase: v1alpha1.RolloutProgressing,
			wantRecords: []v1alpha1.StageStatus{devDone, skipped("prod"), testActive}},
		{name: "stage added before the active one as the active one advances",
			snap:       at("test").bound().reporting(deployment, "1").with(respec("dev", "canary", "test", "prod")).Snapshot,
			wantActive: "prod", wantPhase: v1alpha1.RolloutProgressing, advances: true,
			wantRecords: []v1alpha1.StageStatus{devDone, skipped("canary"), testDone, prodActive}},
		{name: "stage added before the final one as it completes",
			snap:       at("prod").bound().reporting(deployment, "1").with(respec("dev", "test", "canary", "prod")).Snapshot,
			wantActive: "prod", wantPhase: v1alpha1.RolloutCompleted,
			wantRecords: []v1alpha1.StageStatus{devDone, {Name: "test", Phase: v1alpha1.StageSucceeded, StartTime: ptr.To(muchEarlier),
				CompletionTime: ptr.To(earlier), BindingPolicy: "web.stage.test"}, skipped("canary"), prodDone}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := tt.snap
			if tt.advances { // the next stage is placed first
				handover := Plan(snap, engine)
				if handover.Type != ActionCreateBindingPolicy {
					t.Fatalf("Plan() = %s (%s), want CreateBindingPolicy", handover.Type, handover.Why)
				}
				snap = placed(snap, handover.BindingPolicy)
			}
			got := Plan(snap, engine)
			if got.Type != ActionUpdateStatus {
				t.Fatalf("Plan() = %s (%s), want UpdateStatus", got.Type, got.Why)
			}
			s := got.Status
			if s.ActiveStage != tt.wantActive || s.Phase != tt.wantPhase || s.ObservedGeneration != testGeneration+1 {
				t.Errorf("activeStage/phase/observedGeneration = %s/%s/%d, want %s/%s/%d",
					s.ActiveStage, s.Phase, s.ObservedGeneration, tt.wantActive, tt.wantPhase, testGeneration+1)
			}
			records := slices.Clone(s.Stages)
			for i := range records {
				if records[i].Phase == v1alpha1.StageSkipped && records[i].Message != "" {
					t.Errorf("skipped record %s has message %q, want none", records[i].Name, records[i].Message)
				}
				records[i].Message = ""
			}
			if !equality.Semantic.DeepEqual(records, tt.wantRecords) {
				t.Errorf("stage records differ (-want +got):\n%s", diff.Diff(tt.wantRecords, records))
			}
			for _, e := range got.Events {
				for _, r := range s.Stages {
					if r.Phase == v1alpha1.StageSkipped && strings.Contains(e.Note, `"`+r.Name+`"`) {
						t.Errorf("event %s/%s %q names skipped stage %s", e.Type, e.Reason, e.Note, r.Name)
					}
				}
			}

			// The next run keeps the Skipped records as they are.
			again := replan(t, tt.snap, engine, got)
			if tt.advances {
				if again.Type != ActionCreateBindingPolicy || again.BindingPolicy.Name != "web.stage."+tt.wantActive {
					t.Errorf("after advancing, Plan() = %s (%s), want CreateBindingPolicy web.stage.%s", again.Type, again.Why, tt.wantActive)
				}
				return
			}
			if again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("with the status written, Plan() = %s with events %v (%s), want None without events",
					again.Type, eventKeys(again.Events), again.Why)
			}
		})
	}
}
