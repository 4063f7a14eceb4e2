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

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// TestPlanHeldStartKeepsAFailureOfTheRunningRevision is rule 6 for a
// start a freeze (rule 6c) or the first stage's change windows (rule 6b)
// hold, as TestPlanWaveKeepsAFailureOfTheRunningRevision is for a wave: a
// failure of the revision the rollout runs, which the spec's new revision
// or a new restartedAt would release, stays while that start is held.
// Released, the rollout goes on with the failed revision, whose stage
// fails again, and the two writes alternate for ever (found by
// TestPlanStateMachine: "the stager alone makes 20 changes and goes on").
func TestPlanHeldStartKeepsAFailureOfTheRunningRevision(t *testing.T) {
	engine := newEngine(t)
	holds := map[string]func(*Snapshot){
		"a freeze":        func(s *Snapshot) { s.Freeze = frozenFor() },
		"a closed window": func(s *Snapshot) { s.Policy.Spec.Stages[0].Windows = []v1alpha1.ChangeWindow{closedNow} },
	}
	starts := map[string]func() *Snapshot{
		"a new revision, midway":   func() *Snapshot { return midway("v2").Snapshot },
		"a new revision, complete": func() *Snapshot { return completedAt("v2").Snapshot },
		"a restart, complete":      func() *Snapshot { return completedAt("v1").with(restart).Snapshot },
	}
	for holdName, hold := range holds {
		for startName, start := range starts {
			for _, action := range []v1alpha1.FailureAction{v1alpha1.FailureHold, v1alpha1.FailureAbort} {
				t.Run(holdName+"/"+startName+"/"+string(action), func(t *testing.T) {
					snap := start()
					stage := snap.Policy.Status.ActiveStage
					if stage == "" {
						stage = snap.Policy.Spec.Stages[len(snap.Policy.Spec.Stages)-1].Name
					}
					failure := &v1alpha1.RolloutFailure{Stage: stage, Reason: v1alpha1.ReasonFailureConditionMet, Action: action,
						Revision: snap.Policy.Status.UpdateRevision, Time: earlier}
					snap.Policy.Status.Failure = failure
					hold(snap)
					// The digest of the spec as it failed: the new revision, or
					// the window added since, changed it.
					failure.SpecDigest = "as-it-failed"
					got := Plan(snap, engine)
					if got.Status != nil && got.Status.Failure == nil {
						t.Fatalf("%s holds the start, yet the failure is released: %s", holdName, got.Why)
					}
				})
			}
		}
	}
}
