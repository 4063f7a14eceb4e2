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
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// ---------------------------------------------------------------------------
// All rules: a whole rollout, one action at a time
// ---------------------------------------------------------------------------

// applyAction changes the snapshot as the API server would on the action.
// It fails the test on a change the API server would refuse.
func applyAction(t *testing.T, snap *Snapshot, action Action, uid types.UID) {
	t.Helper()
	find := func(name string) int {
		return slices.IndexFunc(snap.BindingPolicies, func(bp ksv1alpha1.BindingPolicy) bool { return bp.Name == name })
	}
	switch action.Type {
	case ActionNone:
	case ActionAddFinalizer:
		snap.Policy.Finalizers = append(snap.Policy.Finalizers, v1alpha1.CleanupFinalizer)
	case ActionRemoveFinalizer:
		snap.Policy.Finalizers = slices.DeleteFunc(snap.Policy.Finalizers, func(f string) bool { return f == v1alpha1.CleanupFinalizer })
	case ActionCreateBindingPolicy:
		if find(action.BindingPolicy.Name) >= 0 {
			t.Fatalf("create %s: already exists", action.BindingPolicy.Name)
		}
		bp := action.BindingPolicy.DeepCopy()
		bp.UID, bp.Generation, bp.ResourceVersion = uid, 1, "1"
		snap.BindingPolicies = append(snap.BindingPolicies, *bp)
	case ActionUpdateBindingPolicy:
		i := find(action.BindingPolicy.Name)
		if i < 0 || snap.BindingPolicies[i].UID != action.BindingPolicy.UID {
			t.Fatalf("update %s: not found", action.BindingPolicy.Name)
		}
		bp := action.BindingPolicy.DeepCopy()
		if !equality.Semantic.DeepEqual(bp.Spec, snap.BindingPolicies[i].Spec) {
			bp.Generation++
		}
		snap.BindingPolicies[i] = *bp
	case ActionDeleteBindingPolicy:
		i := find(action.BindingPolicy.Name)
		if i < 0 || snap.BindingPolicies[i].UID != action.BindingPolicy.UID {
			t.Fatalf("delete %s: precondition failed", action.BindingPolicy.Name)
		}
		snap.BindingPolicies = slices.Delete(snap.BindingPolicies, i, i+1)
	case ActionUpdateStatus:
		snap.Policy.Status = *action.Status.DeepCopy()
	default:
		t.Fatalf("unknown action %s", action.Type)
	}
	resync(snap)
}

// kubestellarStep makes KubeStellar's next move for the active stage: first
// resolve its BindingPolicy into a Binding, then report the CombinedStatuses
// (the Deployment ready, the ConfigMap not). It returns what it did, or ""
// when it has nothing left to do.
func kubestellarStep(snap *Snapshot) string {
	bp := snap.ActiveBindingPolicy
	if bp == nil {
		return ""
	}
	if snap.Binding == nil || bp.Status.ObservedGeneration != bp.Generation {
		for i := range snap.BindingPolicies {
			if snap.BindingPolicies[i].UID == bp.UID {
				snap.BindingPolicies[i].Status.ObservedGeneration = bp.Generation
			}
		}
		resync(snap)
		snap.Binding = bindingFor(snap.ActiveBindingPolicy)
		return "ks:bind " + bp.Name
	}
	if len(snap.CombinedStatuses) == 0 {
		snap.CombinedStatuses = []ksv1alpha1.CombinedStatus{
			combinedStatus(bp, deployment, "1"), combinedStatus(bp, configMap, "0"), combinedStatus(bp, namespaceObj, "0"),
		}
		return "ks:report " + bp.Name
	}
	return ""
}

// describe sums up an action for the walk's log.
func describe(a Action) string {
	switch a.Type {
	case ActionUpdateStatus:
		reason := ""
		if c := meta.FindStatusCondition(a.Status.Conditions, v1alpha1.ConditionProgressing); c != nil {
			reason = c.Reason
		}
		return fmt.Sprintf("UpdateStatus %s %s %s", a.Status.ActiveStage, a.Status.Phase, reason)
	case ActionCreateBindingPolicy, ActionUpdateBindingPolicy, ActionDeleteBindingPolicy:
		return string(a.Type) + " " + a.BindingPolicy.Name
	default:
		return string(a.Type)
	}
}

// quoted returns the first double-quoted word of s.
func quoted(s string) string {
	_, rest, _ := strings.Cut(s, `"`)
	word, _, _ := strings.Cut(rest, `"`)
	return word
}

// TestPlanFirstResolutionIsOneWait: KubeStellar writes a new BindingPolicy's
// Binding before it records the resolution in the BindingPolicy's status.
// Between the two the stage still waits for the same thing, so the status
// says the same and Plan writes nothing: a write per stage saved.
func TestPlanFirstResolutionIsOneWait(t *testing.T) {
	engine := newEngine(t)
	unresolved := func(s *Snapshot) {
		for i := range s.BindingPolicies {
			s.BindingPolicies[i].Status.ObservedGeneration = 0
		}
		resync(s)
	}
	waiting := Plan(at("dev").with(unresolved).Snapshot, engine)
	if waiting.Type != ActionUpdateStatus {
		t.Fatalf("no Binding yet: %s (%s), want UpdateStatus", waiting.Type, waiting.Why)
	}
	snap := at("dev").with(unresolved).bound().Snapshot
	snap.Policy.Status = *waiting.Status.DeepCopy()
	if snap.ActiveBindingPolicy.Status.ObservedGeneration != 0 || snap.Binding == nil {
		t.Fatal("the fixture is not between the Binding and the resolution's record")
	}
	if got := Plan(snap, engine); got.Type != ActionNone {
		t.Errorf("Binding written, resolution not yet recorded: %s (%s), want None", got.Type, got.Why)
	}
}

func TestPlanFullRollout(t *testing.T) {
	engine := newEngine(t)
	p := newPolicy()
	p.Finalizers = nil
	snap := newSnapshot(p)

	var log, events []string
	created := 0
	// run plans and applies until Plan waits and KubeStellar has nothing left to do.
	run := func() {
		for step := 0; ; step++ {
			if step > 50 {
				t.Fatalf("no end after 50 steps:\n%s", strings.Join(log, "\n"))
			}
			snap.Now = metav1.NewTime(now.Add(time.Duration(len(log)) * time.Minute))
			a := Plan(snap, engine)
			for _, e := range a.Events {
				events = append(events, e.Reason+" "+quoted(e.Note))
			}
			if a.Type == ActionDeleteBindingPolicy && snap.Policy.DeletionTimestamp == nil {
				// make-before-break: the active stage's Binding is in place
				active := snap.ActiveBindingPolicy
				if active == nil || snap.Binding == nil || !OwnedBy(snap.Binding, active) || active.Status.ObservedGeneration != active.Generation {
					t.Fatalf("deleting %s before the active stage's Binding is observed", a.BindingPolicy.Name)
				}
			}
			if a.Type != ActionNone {
				log = append(log, describe(a))
				if a.Type == ActionCreateBindingPolicy {
					created++
				}
				applyAction(t, snap, a, types.UID(fmt.Sprintf("bp-uid-%d", created)))
				if created > 0 && snap.Policy.DeletionTimestamp == nil && len(snap.BindingPolicies) == 0 {
					t.Fatalf("after %s nothing is placed", describe(a))
				}
				continue
			}
			if did := kubestellarStep(snap); did != "" {
				log = append(log, did)
				continue
			}
			log = append(log, "None")
			return
		}
	}

	run()
	want := []string{
		"AddFinalizer",
		"UpdateStatus dev Progressing BindingPolicyPending",
		"CreateBindingPolicy web.stage.dev",
		"UpdateStatus dev Progressing WaitingForBinding",
		"ks:bind web.stage.dev",
		"UpdateStatus dev Progressing WaitingForStatus",
		"ks:report web.stage.dev",
		"CreateBindingPolicy web.stage.test",
		"UpdateStatus test Progressing WaitingForBinding",
		"ks:bind web.stage.test",
		"DeleteBindingPolicy web.stage.dev",
		"UpdateStatus test Progressing WaitingForStatus",
		"ks:report web.stage.test",
		"CreateBindingPolicy web.stage.prod",
		"UpdateStatus prod Progressing WaitingForBinding",
		"ks:bind web.stage.prod",
		"DeleteBindingPolicy web.stage.test",
		"UpdateStatus prod Progressing WaitingForStatus",
		"ks:report web.stage.prod",
		"UpdateStatus prod Completed RolloutCompleted",
		"None",
	}
	if !slices.Equal(log, want) {
		t.Fatalf("rollout steps differ (-want +got):\n%s", diff.Diff(want, log))
	}
	wantEvents := []string{
		"StageStarted dev",
		"StageSucceeded dev", "StageStarted test",
		"StageSucceeded test", "StageStarted prod",
		"RolloutCompleted prod",
	}
	if !slices.Equal(events, wantEvents) {
		t.Errorf("events differ (-want +got):\n%s", diff.Diff(wantEvents, events))
	}

	s := snap.Policy.Status
	if s.Phase != v1alpha1.RolloutCompleted || s.ActiveStage != "prod" {
		t.Errorf("phase/activeStage = %s/%s, want Completed/prod", s.Phase, s.ActiveStage)
	}
	if names := bpNames(snap.BindingPolicies); !slices.Equal(names, []string{"web.stage.prod"}) {
		t.Errorf("BindingPolicies left = %v, want [web.stage.prod]", names)
	}
	if got := snap.BindingPolicies[0]; got.UID != "bp-uid-3" || got.Spec.ClusterSelectors[0].MatchLabels["stage"] != "prod" {
		t.Errorf("prod BindingPolicy = %s selecting %v, want bp-uid-3 selecting stage=prod", got.UID, got.Spec.ClusterSelectors)
	}
	if len(s.Stages) != 3 {
		t.Fatalf("%d stage records, want 3", len(s.Stages))
	}
	for i, r := range s.Stages {
		if r.Phase != v1alpha1.StageSucceeded || r.StartTime == nil || r.CompletionTime == nil || r.CompletionTime.Before(r.StartTime) {
			t.Errorf("record %d = %+v, want Succeeded with start before completion", i, r)
		}
		if i > 0 && !r.StartTime.Equal(s.Stages[i-1].CompletionTime) {
			t.Errorf("stage %s started at %v, want when %s completed (%v)", r.Name, r.StartTime, s.Stages[i-1].Name, s.Stages[i-1].CompletionTime)
		}
	}

	// Deleting the policy removes prod's BindingPolicy, then the finalizer.
	snap.Policy.DeletionTimestamp = ptr.To(metav1.NewTime(now.Add(time.Hour)))
	resync(snap)
	log = nil
	run()
	wantDeletion := []string{"DeleteBindingPolicy web.stage.prod", "RemoveFinalizer", "None"}
	if !slices.Equal(log, wantDeletion) {
		t.Errorf("deletion steps = %v, want %v", log, wantDeletion)
	}
}
