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

package rollout_test

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/freeze"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// The freeze of the state-machine test (docs/proposals/freezes.md): the
// platform team freezes every stage, or one, from now for a long while,
// and lifts the freeze; settle lifts it. The snapshot's decision is the
// real one (freeze.Decide) on that RolloutFreeze at the snapshot's time.

// freezeModel is a RolloutFreeze of the hosting cluster selecting the
// model's policy.
type freezeModel struct {
	from   time.Time
	stages []string // nil: every stage
}

// freezeDecision is the snapshot's Freeze for the policy: nil without a freeze.
func (w *world) freezeDecision(policy *v1alpha1.StagedBindingPolicy, now time.Time) *freeze.Decision {
	if w.freeze == nil {
		return nil
	}
	f := hostingv1alpha1.RolloutFreeze{ObjectMeta: metav1.ObjectMeta{Name: "xmas"}, Spec: hostingv1alpha1.RolloutFreezeSpec{
		Stages: w.freeze.stages, Reason: "code freeze",
		Ranges: []hostingv1alpha1.FreezeRange{{Start: metav1.NewTime(w.freeze.from), End: metav1.NewTime(w.freeze.from.Add(1000 * time.Hour))}}}}
	d := freeze.Decide([]hostingv1alpha1.RolloutFreeze{f}, hereSpace, policy.Name, now)
	return &d
}

// freezeActions are the platform team's: freeze every stage or one, lift the freeze.
func (m *machine) freezeActions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"freeze": func(t *rapid.T) {
			fm := &freezeModel{from: m.w.now.Truncate(time.Second)}
			if s := rapid.SampledFrom(append([]string{""}, stageNames...)).Draw(t, "frozen stage"); s != "" {
				fm.stages = []string{s}
			}
			m.w.freeze = fm
		},
		"unfreeze": func(*rapid.T) { m.w.freeze = nil },
		// The rollout runs on healthy WECs under a freeze (one drawn
		// when there is none): its done
		// stages meet the freeze. settle lifts it later, and the
		// rollout must complete then.
		"runFrozen": func(t *rapid.T) {
			m.needPolicy(t)
			if m.w.freeze == nil {
				m.freezeActions()["freeze"](t)
			}
			for _, c := range m.w.wecs {
				c.health = healthy
			}
			for range quietSteps {
				m.keepsRunning(t, "KubeStellar resolving", m.w.resolve)
				m.w.report()
				m.w.now = m.w.now.Add(time.Minute)
				if m.stagerStep(t); m.w.policy == nil {
					return
				}
			}
		},
	}
}

// checkFreezeStep checks one change planned on snap against the freeze:
// no stage a freeze holds starts (a status write making it active, or
// starting its approved gate; a BindingPolicy created for it while it is
// not the active stage, other than one of rule 14 (keptPlacement); a
// batch of it started), unless a handover placed it before; a policy
// aborted, suspended or deleted is planned as if no freeze were there;
// Frozen is written only while a freeze is on.
func (m *machine) checkFreezeStep(t *rapid.T, snap *rollout.Snapshot, action rollout.Action) {
	if snap.Freeze == nil {
		if action.Status != nil {
			if c := meta.FindStatusCondition(action.Status.Conditions, v1alpha1.ConditionFrozen); c != nil {
				m.fatalf(t, "freeze: Frozen (%s) written (%s) with no freeze on", c.Message, action.Why)
			}
		}
		return
	}
	policy := snap.Policy
	if rollout.Aborting(policy) || policy.Spec.Suspend || policy.DeletionTimestamp != nil {
		seen["freeze: abort or suspension"]++
		free := *snap
		free.Freeze = nil
		if want := rollout.Plan(&free, m.w.engine, m.planOptions()...); !equality.Semantic.DeepEqual(action, want) {
			m.fatalf(t, "freeze: an aborted, suspended or deleted policy is frozen: %s (%s), unfrozen %s (%s)",
				action.Type, action.Why, want.Type, want.Why)
		}
		return
	}
	held := func(stage string) bool { return snap.Freeze.For(stage) != nil }
	if action.Status != nil {
		to := action.Status.ActiveStage
		before := policy.Status.StageNamed(to)
		after := action.Status.StageNamed(to)
		moved := to != "" && to != policy.Status.ActiveStage
		restarted := action.Status.UpdateRevision != policy.Status.UpdateRevision || action.Status.RestartedAt != policy.Status.RestartedAt
		approvedStart := after != nil && before != nil && before.Phase == v1alpha1.StageAwaitingApproval && after.Phase == v1alpha1.StageActive
		handedOver := snap.NextBindingPolicy != nil && rollout.OwnedBy(snap.NextBindingPolicy, policy) && snap.NextBindingPolicy.Labels[v1alpha1.StageLabel] == to
		if held(to) && (moved && !handedOver || restarted || approvedStart) {
			m.fatalf(t, "freeze: stage %q starts (%s) while a freeze holds it", to, action.Why)
		}
		seen["freeze: status"]++
	}
	if action.Type == rollout.ActionCreateBindingPolicy {
		stage := action.BindingPolicy.Labels[v1alpha1.StageLabel]
		if held(stage) && stage != policy.Status.ActiveStage && !keptPlacement(policy, action.BindingPolicy.Name) {
			m.fatalf(t, "freeze: BindingPolicy %s of stage %q, not active, created while a freeze holds it", action.BindingPolicy.Name, stage)
		}
		for _, e := range action.Events {
			if e.Reason == v1alpha1.EventReasonBatchStarted && held(stage) {
				m.fatalf(t, "freeze: a batch of stage %q starts while a freeze holds it: %s", stage, e.Note)
			}
		}
		seen["freeze: create"]++
	}
}

// keptPlacement reports whether name is a BindingPolicy rule 14 keeps
// placed, which places what a stage already runs and is no start
// (docs/proposals/freezes.md): the one of the revision the record of a
// stage from the active one on keeps, or, under Accumulate, the one at
// the update revision of a stage before the active one that is done. A
// stage placed in batches ran it through its clusters' own, which that
// one replaces, make-before-break.
func keptPlacement(policy *v1alpha1.StagedBindingPolicy, name string) bool {
	active, started, _ := rollout.ActiveStage(policy)
	if !started {
		return false
	}
	for i, stage := range policy.Spec.Stages {
		record := policy.Status.StageNamed(stage.Name)
		switch {
		case record == nil:
		case i >= active && record.Revision != "" && rollout.RevisionBindingPolicy(policy, stage, record.Revision).Name == name:
			return true
		case i < active && policy.Spec.Placement == v1alpha1.PlacementAccumulate && record.Phase == v1alpha1.StageSucceeded &&
			rollout.DesiredBindingPolicy(policy, stage).Name == name:
			return true
		}
	}
	return false
}
