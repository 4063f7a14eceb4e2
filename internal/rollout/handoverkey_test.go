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
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// SealedMark is the handover mark under the zero HandoverKey, which Plan
// uses when no key is passed in, as the table tests plan.
func SealedMark(policy types.UID, stage string, start time.Time) string {
	return HandoverKey{}.Mark(policy, stage, start)
}

// SealedPlacement is a cluster's placement under the zero HandoverKey.
func SealedPlacement(policy types.UID, stage, revision, cluster string, at time.Time) string {
	return HandoverKey{}.Placement(policy, stage, revision, cluster, at)
}

func newKey(t *testing.T) HandoverKey {
	t.Helper()
	k, err := NewHandoverKey()
	if err != nil {
		t.Fatalf("making a handover key: %v", err)
	}
	return k
}

// TestPlanSealsUnderTheKeyItIsGiven checks that the key is an input of
// Plan (WithHandoverKey) and of HandedOver: a handover mark or a
// cluster's placement counts only under the key passed in, and what Plan
// writes is sealed under it, so two processes (a restarted stager,
// another replica) never take each other's seals, and a test can pass
// the key it seals with.
func TestPlanSealsUnderTheKeyItIsGiven(t *testing.T) {
	engine := newEngine(t)
	ours, theirs := newKey(t), newKey(t)
	if ours.IsZero() || theirs.IsZero() || ours.Mark(testPolicyUID, "dev", earlier.Time) == theirs.Mark(testPolicyUID, "dev", earlier.Time) {
		t.Fatalf("NewHandoverKey made a zero key or the same key twice")
	}
	markedBy := func(k HandoverKey) func(*v1alpha1.StagedBindingPolicy) *ksv1alpha1.BindingPolicy {
		return func(p *v1alpha1.StagedBindingPolicy) *ksv1alpha1.BindingPolicy {
			bp := ownedBP(p, "test", "bp-test")
			bp.Annotations = map[string]string{v1alpha1.HandedOverFromAnnotation: k.Mark(p.UID, "dev", earlier.Time)}
			return bp
		}
	}

	t.Run("the handover is marked under the key", func(t *testing.T) {
		action := planThrough(at("dev").bound().reporting(deployment, "1").Snapshot, engine, WithHandoverKey(ours))
		if action.Type != ActionCreateBindingPolicy ||
			action.BindingPolicy.Annotations[v1alpha1.HandedOverFromAnnotation] != ours.Mark(testPolicyUID, "dev", earlier.Time) {
			t.Fatalf("action = %s (%s), want test's BindingPolicy marked under the key given", action.Type, action.Why)
		}
	})
	t.Run("a mark under the key records the advance", func(t *testing.T) {
		snap := at("dev").bound().reporting(deployment, "0").with(withNextBP(markedBy(ours))).Snapshot
		action := planThrough(snap, engine, WithHandoverKey(ours))
		if action.Type != ActionUpdateStatus || action.Status.ActiveStage != "test" {
			t.Fatalf("action = %s (%s), want the advance recorded", action.Type, action.Why)
		}
		if !ours.HandedOver(snap.Policy, snap.NextBindingPolicy, 0) || theirs.HandedOver(snap.Policy, snap.NextBindingPolicy, 0) {
			t.Errorf("HandedOver takes a mark under another key, or not one under its own")
		}
	})
	t.Run("a mark under another key is taken away", func(t *testing.T) {
		for _, k := range []HandoverKey{theirs, {}} {
			action := planThrough(at("dev").bound().reporting(deployment, "0").with(withNextBP(markedBy(k))).Snapshot, engine, WithHandoverKey(ours))
			if action.Type != ActionDeleteBindingPolicy || action.BindingPolicy.Name != "web.stage.test" {
				t.Fatalf("action = %s (%s), want test's BindingPolicy taken away", action.Type, action.Why)
			}
		}
	})

	canary := fleetStage(func(s *v1alpha1.Stage) { s.Canary = ptr.To[int32](1) })
	sealedBy := func(k HandoverKey) fixture {
		f := batched(canary).forged("store-a", minutesAgo(30), "0")
		bp := &f.BindingPolicies[len(f.BindingPolicies)-1]
		bp.Annotations = map[string]string{v1alpha1.PlacedAnnotation: k.Placement(testPolicyUID, "prod", "", "store-a", minutesAgo(30).Time)}
		return f
	}
	t.Run("a cluster sealed under another key is taken over, sealed under the key", func(t *testing.T) {
		action := planThrough(sealedBy(theirs).Snapshot, engine, WithHandoverKey(ours))
		if action.Type != ActionUpdateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.on.store-a" ||
			action.BindingPolicy.Annotations[v1alpha1.PlacedAnnotation] != ours.Placement(testPolicyUID, "prod", "", "store-a", now.Time) {
			t.Fatalf("action = %s (%s), want store-a taken over and sealed under the key given", action.Type, action.Why)
		}
	})
	t.Run("a cluster sealed under the key counts as placed", func(t *testing.T) {
		action := planThrough(sealedBy(ours).Snapshot, engine, WithHandoverKey(ours))
		if action.Type == ActionUpdateBindingPolicy || action.Type == ActionCreateBindingPolicy {
			t.Fatalf("action = %s (%s), want store-a counted as placed", action.Type, action.Why)
		}
	})
}
