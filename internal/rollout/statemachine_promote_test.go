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
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// The break-glass promotion of the state-machine test (rule 15a,
// docs/proposals/promote.md): a release manager writes spec.promotion,
// of the active stage, of any stage, or full, and takes it away. The
// invariants: a stage is recorded promoted only by a request the stager
// had not taken (or a full one it took for the same rollout), that names
// it (or is full), never while it awaits approval; each request promotes
// a stage at most once; a stage done without its condition is a promoted
// one (checkStep leaves those to checkPromotionStep).

// promoteActions are what a release manager does.
func (m *machine) promoteActions() map[string]func(*rapid.T) {
	request := func(t *rapid.T, stage string, full bool) {
		m.needPolicy(t)
		m.w.editSpec(func(p *v1alpha1.StagedBindingPolicy) {
			p.Spec.Promotion = &v1alpha1.Promotion{Stage: stage, Full: full, Reason: "break glass", RequestedBy: "rm",
				RequestedAt: metav1.NewTime(m.w.now.Add(time.Duration(m.w.rv) * time.Millisecond))}
		})
	}
	return map[string]func(*rapid.T){
		"promoteActive": func(t *rapid.T) {
			m.needPolicy(t)
			request(t, m.w.policy.Status.ActiveStage, false)
		},
		"promoteAnyStage": func(t *rapid.T) {
			m.needPolicy(t)
			request(t, rapid.SampledFrom(stageNames).Draw(t, "promoted stage"), false)
		},
		"promoteFull":   func(t *rapid.T) { request(t, "", true) },
		"dropPromotion": m.userEdit(func(_ *rapid.T, p *v1alpha1.StagedBindingPolicy) { p.Spec.Promotion = nil }),
	}
}

// promotedNow reports whether a status write records the stage promoted
// where it was not: the stage is done by its promotion, not its condition.
func promotedNow(before, after *v1alpha1.StageStatus) bool {
	return after != nil && after.Promotion != nil && (before == nil || before.Promotion == nil)
}

// releasedForPromotion reports whether the failure that holds the
// policy's rollout is released for a request that promotes its stage.
func releasedForPromotion(policy *v1alpha1.StagedBindingPolicy) bool {
	p, f := policy.Spec.Promotion, policy.Status.Failure
	return p != nil && f != nil && (p.Full || p.Stage == f.Stage) && !takenAlready(policy)
}

// takenAlready reports whether the stager took the policy's spec.promotion.
func takenAlready(policy *v1alpha1.StagedBindingPolicy) bool {
	last := policy.Status.LastPromotion
	return last != nil && last.Digest == rollout.PromotionDigest(policy.Spec.Promotion)
}

// checkPromotionStep checks one change planned on snap against the
// promotion's invariants.
func (m *machine) checkPromotionStep(t *rapid.T, snap *rollout.Snapshot, action rollout.Action) {
	policy := snap.Policy
	if action.Status == nil || policy.DeletionTimestamp != nil {
		return
	}
	p := policy.Spec.Promotion
	for _, s := range policy.Spec.Stages {
		before, after := policy.Status.StageNamed(s.Name), action.Status.StageNamed(s.Name)
		if !promotedNow(before, after) {
			continue
		}
		seen["promotion: stage promoted"]++
		switch {
		case p == nil:
			m.fatalf(t, "promotion: stage %q promoted (%s) with no spec.promotion", s.Name, action.Why)
		case before == nil || before.Phase != v1alpha1.StageActive:
			m.fatalf(t, "promotion: stage %q promoted (%s) while it was %v, not active: an approval gate is never skipped", s.Name, action.Why, before)
		case !p.Full && p.Stage != s.Name:
			m.fatalf(t, "promotion: stage %q promoted (%s) by a request of stage %q", s.Name, action.Why, p.Stage)
		case after.Phase != v1alpha1.StageSucceeded || after.Promotion.By != p.RequestedBy || after.Promotion.Reason != p.Reason:
			m.fatalf(t, "promotion: stage %q's record %+v does not say it is done by %s for %q", s.Name, *after, p.RequestedBy, p.Reason)
		}
		// A request is the one written, on this policy: the digest
		// alone (requestedAt in seconds) is the same for one written
		// again in the same second, after another request or on a policy
		// deleted and created again, which is a new request.
		key := fmt.Sprintf("%s/%s/%d", policy.UID, rollout.PromotionDigest(p), p.RequestedAt.UnixNano())
		if p.Full {
			key += fmt.Sprintf(" %s@%s/%s", s.Name, policy.Status.UpdateRevision, policy.Status.RestartedAt)
		}
		if m.promotions[key] {
			m.fatalf(t, "promotion: request %s (%+v) applied twice (%s)", key, *p, action.Why)
		}
		if m.promotions == nil {
			m.promotions = map[string]bool{}
		}
		m.promotions[key] = true
		if takenAlready(policy) && !p.Full {
			m.fatalf(t, "promotion: stage %q promoted (%s) by a request the stager had taken already", s.Name, action.Why)
		}
	}
	if last := action.Status.LastPromotion; last != nil && last.Outcome == v1alpha1.PromotionIgnored && !takenAlready(policy) {
		seen["promotion: ignored"]++
	}
}
