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

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// ---------------------------------------------------------------------------
// Revisions (spec.revision) and abort (spec.abort)
// ---------------------------------------------------------------------------

// revisionBP returns the BindingPolicy of a stage at a revision as the
// policy generated it and KubeStellar resolved it.
func revisionBP(p *v1alpha1.StagedBindingPolicy, stage, revision string) *ksv1alpha1.BindingPolicy {
	desired := RevisionBindingPolicy(p, *p.Spec.StageNamed(stage), revision)
	bp := ownedBP(p, stage, types.UID("bp-"+stage+"-"+revision))
	bp.Name, bp.Labels, bp.Spec = desired.Name, desired.Labels, desired.Spec
	return bp
}

// revisioned returns a policy rolling out revision update, at the named
// stage, each stage's record keeping the given revision (by stage name);
// the BindingPolicies of every kept revision and of the active stage at
// update are in place.
func revisioned(placement v1alpha1.Placement, active, current, update string, keeps map[string]string) fixture {
	p := atStage(newPolicy(), active)
	p.Spec.Placement = placement
	p.Spec.Revision = &v1alpha1.Revision{Name: update}
	p.Status.CurrentRevision, p.Status.UpdateRevision = current, update
	for i := range p.Status.Stages {
		r := &p.Status.Stages[i]
		r.Revision = keeps[r.Name]
		if r.BindingPolicy != "" {
			r.BindingPolicy = v1alpha1.StagePlacement(p.Name, r.Name).At(p.Status.UpdateRevision).String()
		}
	}
	var bps []*ksv1alpha1.BindingPolicy
	for _, s := range p.Spec.Stages {
		if rev := keeps[s.Name]; rev != "" {
			bps = append(bps, revisionBP(p, s.Name, rev))
		}
		if s.Name == active && keeps[s.Name] != update {
			bps = append(bps, revisionBP(p, s.Name, update))
		}
	}
	return fixture{newSnapshot(p, bps...)}
}

// keepsAll is every stage keeping revision.
func keepsAll(revision string) map[string]string {
	return map[string]string{"dev": revision, "test": revision, "prod": revision}
}

// recordRevisions returns "<stage>=<revision>" of each record.
func recordRevisions(status *v1alpha1.StagedBindingPolicyStatus) []string {
	out := make([]string, 0, len(status.Stages))
	for _, r := range status.Stages {
		out = append(out, r.Name+"="+r.Revision)
	}
	return out
}

func TestRevisionBindingPolicy(t *testing.T) {
	p := newPolicy()
	p.Spec.Downsync[0].ObjectSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"app": "web"}}}
	p.Spec.Revision = &v1alpha1.Revision{Name: "v2"}

	bp := RevisionBindingPolicy(p, p.Spec.Stages[0], "v2")
	if bp.Name != "web.stage.dev.v2" || bp.Labels[v1alpha1.RevisionLabel] != "v2" || bp.Labels[v1alpha1.StageLabel] != "dev" {
		t.Errorf("name %s, labels %v: want web.stage.dev.v2 labelled revision v2, stage dev", bp.Name, bp.Labels)
	}
	key := v1alpha1.DefaultRevisionLabelKey
	want := [][]metav1.LabelSelector{
		{ // the clause's own selector, once with the revision and once with none
			{MatchLabels: map[string]string{"app": "web"}, MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpIn, Values: []string{"v2"}}}},
			{MatchLabels: map[string]string{"app": "web"}, MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpDoesNotExist}}},
		},
		{ // a clause without selectors, which selects every object, gets both
			{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpIn, Values: []string{"v2"}}}},
			{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpDoesNotExist}}},
		},
	}
	for i, clause := range bp.Spec.Downsync {
		if !equality.Semantic.DeepEqual(clause.ObjectSelectors, want[i]) {
			t.Errorf("clause %d selects %+v, want %+v", i, clause.ObjectSelectors, want[i])
		}
		if !equality.Semantic.DeepEqual(clause.DownsyncModulation, p.Spec.Downsync[i].DownsyncModulation) ||
			!equality.Semantic.DeepEqual(clause.Resources, p.Spec.Downsync[i].Resources) {
			t.Errorf("clause %d lost the rest of the policy's clause: %+v", i, clause)
		}
	}
	if len(p.Spec.Downsync[0].ObjectSelectors[0].MatchExpressions) != 0 {
		t.Errorf("narrowing changed the policy's own downsync: %+v", p.Spec.Downsync[0].ObjectSelectors)
	}

	p.Spec.Revision.LabelKey = "example.com/release"
	if got := RevisionBindingPolicy(p, p.Spec.Stages[0], "v2").Spec.Downsync[0].ObjectSelectors[0].MatchExpressions[0].Key; got != "example.com/release" {
		t.Errorf("labelKey example.com/release narrows by %q", got)
	}
	seed := RevisionBindingPolicy(p, p.Spec.Stages[0], "")
	if seed.Name != "web.stage.dev" || !equality.Semantic.DeepEqual(seed.Spec.Downsync, p.Spec.Downsync) || seed.Labels[v1alpha1.RevisionLabel] != "" {
		t.Errorf("revision \"\" gives %s %+v, want the seed's BindingPolicy", seed.Name, seed.Spec.Downsync)
	}
}

func TestPlanStartsARevision(t *testing.T) {
	engine := newEngine(t)
	completedOn := func(revision string) fixture {
		f := revisioned(v1alpha1.PlacementAccumulate, "prod", revision, revision, keepsAll(revision)).bound().reporting(deployment, "1")
		f.Policy.Status.Phase = v1alpha1.RolloutCompleted
		f.Policy.Status.Stages[2].Phase = v1alpha1.StageSucceeded
		return f
	}
	tests := []struct {
		name        string
		snap        *Snapshot
		wantEvents  []string
		wantRecords []string
	}{
		{name: "a new revision after a completed rollout starts at the first stage, every stage keeping the old one",
			snap:        completedOn("v1").with(func(s *Snapshot) { s.Policy.Spec.Revision.Name = "v2" }).Snapshot,
			wantEvents:  []string{"Normal/" + v1alpha1.EventReasonRevisionStarted, "Normal/StageStarted"},
			wantRecords: []string{"dev=v1", "test=v1", "prod=v1"}},
		{name: "a newer revision mid-rollout supersedes the one in flight",
			snap: revisioned(v1alpha1.PlacementAccumulate, "test", "v1", "v2", map[string]string{"dev": "v2", "test": "v1", "prod": "v1"}).
				bound().with(func(s *Snapshot) { s.Policy.Spec.Revision.Name = "v3" }).Snapshot,
			wantEvents:  []string{"Normal/" + v1alpha1.EventReasonRevisionSuperseded, "Normal/StageStarted"},
			wantRecords: []string{"dev=v2", "test=v1", "prod=v1"}},
		{name: "a policy's first revision starts its rollout",
			snap: fixture{newSnapshot(newPolicy())}.with(func(s *Snapshot) {
				s.Policy.Spec.Revision = &v1alpha1.Revision{Name: "v1"}
			}).Snapshot,
			wantEvents:  []string{"Normal/" + v1alpha1.EventReasonRevisionStarted, "Normal/StageStarted"},
			wantRecords: []string{"dev=", "test=", "prod="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			action := Plan(tt.snap, engine)
			want := tt.snap.Policy.Spec.Revision.Name
			if action.Type != ActionUpdateStatus || action.Status.UpdateRevision != want || action.Status.ActiveStage != "dev" {
				t.Fatalf("action %s (%s): want the status to start revision %s at dev", action.Type, action.Why, want)
			}
			if got := eventKeys(action.Events); !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events %v, want %v", got, tt.wantEvents)
			}
			if got := recordRevisions(action.Status); !slices.Equal(got, tt.wantRecords) {
				t.Errorf("records keep %v, want %v", got, tt.wantRecords)
			}
			if got := action.Status.Stages[0].BindingPolicy; got != "web.stage.dev."+want {
				t.Errorf("dev's record names BindingPolicy %s, want web.stage.dev.%s", got, want)
			}
			if action.Status.CurrentRevision != tt.snap.Policy.Status.CurrentRevision {
				t.Errorf("currentRevision %q, want it left at %q until the rollout completes", action.Status.CurrentRevision, tt.snap.Policy.Status.CurrentRevision)
			}
			// Next: the first stage's BindingPolicy at the new revision,
			// nothing kept deleted.
			next := replan(t, tt.snap, engine, action)
			if next.Type != ActionCreateBindingPolicy || next.BindingPolicy.Name != "web.stage.dev."+want {
				t.Errorf("planned again: %s %v (%s), want BindingPolicy web.stage.dev.%s created", next.Type, next.BindingPolicy, next.Why, want)
			}
		})
	}

	t.Run("adding spec.revision keeps the placement made before until the rollout reaches each stage", func(t *testing.T) {
		for _, tt := range []struct {
			placement   v1alpha1.Placement
			wantRecords []string
		}{
			{v1alpha1.PlacementAccumulate, []string{"dev=-", "test=-", "prod=-"}},
			{v1alpha1.PlacementReplace, []string{"dev=", "test=", "prod=-"}},
		} {
			f := at("prod").bound().reporting(deployment, "1")
			f.Policy.Spec.Placement = tt.placement
			f.Policy.Status.Phase = v1alpha1.RolloutCompleted
			f.Policy.Status.Stages[2].Phase = v1alpha1.StageSucceeded
			f = f.alsoBP(ownedBP(f.Policy, "dev", "bp-dev")).alsoBP(ownedBP(f.Policy, "test", "bp-test"))
			f.Policy.Spec.Revision = &v1alpha1.Revision{Name: "v1"}
			action := Plan(f.Snapshot, engine)
			if action.Type != ActionUpdateStatus || action.Status.UpdateRevision != "v1" {
				t.Fatalf("%s: action %s (%s), want revision v1 started", tt.placement, action.Type, action.Why)
			}
			if got := recordRevisions(action.Status); !slices.Equal(got, tt.wantRecords) {
				t.Errorf("%s: records keep %v, want %v", tt.placement, got, tt.wantRecords)
			}
			if action.Status.CurrentRevision != v1alpha1.Unrevisioned {
				t.Errorf("%s: currentRevision %q, want %q: abort goes back to what was placed before", tt.placement, action.Status.CurrentRevision, v1alpha1.Unrevisioned)
			}
			// dev at v1 placed, not done: the unrevisioned placements kept
			// stay, narrowed to the objects of no revision, so that no
			// revision's objects reach a stage before the rollout does.
			next := f.with(func(s *Snapshot) {
				s.Policy.Status = *action.Status
				s.BindingPolicies = append(s.BindingPolicies, *revisionBP(s.Policy, "dev", "v1"))
				resync(s)
				s.Binding = bindingFor(s.ActiveBindingPolicy)
				s.CombinedStatuses = []ksv1alpha1.CombinedStatus{combinedStatus(s.ActiveBindingPolicy, deployment, "0")}
			}).Snapshot
			var narrowed []string
			for range 5 {
				got := Plan(next, engine)
				if got.Type == ActionDeleteBindingPolicy {
					if kept := got.BindingPolicy.Name == "web.stage.prod" || tt.placement == v1alpha1.PlacementAccumulate; kept {
						t.Errorf("%s: deletes %s, which its stage keeps until the rollout of v1 reaches it", tt.placement, got.BindingPolicy.Name)
					}
					break
				}
				if got.Type != ActionUpdateBindingPolicy {
					break
				}
				for _, clause := range got.BindingPolicy.Spec.Downsync {
					for _, sel := range clause.ObjectSelectors {
						if len(sel.MatchExpressions) != 1 || sel.MatchExpressions[0].Operator != metav1.LabelSelectorOpDoesNotExist {
							t.Errorf("%s: %s selects %+v, want only the objects of no revision", tt.placement, got.BindingPolicy.Name, sel)
						}
					}
				}
				narrowed = append(narrowed, got.BindingPolicy.Name)
				*findBindingPolicy(next.BindingPolicies, got.BindingPolicy.Name) = *got.BindingPolicy
			}
			want := []string{"web.stage.dev", "web.stage.test", "web.stage.prod"}
			if tt.placement == v1alpha1.PlacementReplace {
				want = []string{"web.stage.prod"}
			}
			if !slices.Equal(narrowed, want) {
				t.Errorf("%s: narrowed %v, want %v", tt.placement, narrowed, want)
			}
		}
	})

	t.Run("the rollout of no revision after revisions keeps what it places", func(t *testing.T) {
		// v2 completed everywhere, then spec.revision removed: dev is done on "".
		snap := revisioned(v1alpha1.PlacementAccumulate, "dev", "v2", "", keepsAll("v2")).Snapshot
		snap.Policy.Spec.Revision = nil
		action := advance(snap.Policy, 0, assessment{message: "done"}, now)
		if got := recordRevisions(action.Status); !slices.Equal(got, []string{"dev=-", "test=v2", "prod=v2"}) {
			t.Errorf("records keep %v, want dev=- (what abort puts back) test=v2 prod=v2", got)
		}
	})

	t.Run("a new revision soaks and is approved anew", func(t *testing.T) {
		// v2 soaks in dev; test, approved for v2 already, needs approval.
		f := revisioned(v1alpha1.PlacementAccumulate, "dev", "v1", "v2", keepsAll("v1")).bound().reporting(deployment, "1")
		f.Policy.Spec.Stages[0].SoakDuration = &metav1.Duration{Duration: time.Hour}
		f.Policy.Spec.Stages[1].Approval = v1alpha1.ApprovalRequired
		f.Policy.Status.Stages[0].ConditionMetTime = ptr.To(earlier)
		f.Policy.Status.Stages[1].ApprovedTime, f.Policy.Status.Stages[1].ApprovedBy = ptr.To(earlier), "alice"
		f.Policy.Spec.Revision.Name = "v3"
		action := Plan(f.Snapshot, engine)
		if action.Type != ActionUpdateStatus || action.Status.UpdateRevision != "v3" {
			t.Fatalf("action %s (%s), want v3 started", action.Type, action.Why)
		}
		dev, test := action.Status.Stages[0], action.Status.Stages[1]
		if dev.ConditionMetTime != nil || test.ApprovedTime != nil || test.ApprovedBy != "" {
			t.Errorf("v3's records carry v2's soak (%v) or approval (%v by %q)", dev.ConditionMetTime, test.ApprovedTime, test.ApprovedBy)
		}
	})

	t.Run("a seed policy without spec.revision starts no revision", func(t *testing.T) {
		snap := at("test").bound().Snapshot
		if action := Plan(snap, engine); action.Status != nil && action.Status.ActiveStage != "test" {
			t.Errorf("action %s (%s) moved the rollout to %q", action.Type, action.Why, action.Status.ActiveStage)
		}
	})
}

func TestPlanKeepsEachStagesRevision(t *testing.T) {
	engine := newEngine(t)
	for _, placement := range []v1alpha1.Placement{v1alpha1.PlacementAccumulate, v1alpha1.PlacementReplace} {
		t.Run(string(placement), func(t *testing.T) {
			keeps := keepsAll("v1")
			if placement == v1alpha1.PlacementReplace {
				keeps = map[string]string{"prod": "v1"} // only the last stage held the completed revision
			}
			// dev runs v2 beside v1, not done yet: nothing kept goes away.
			snap := revisioned(placement, "dev", "v1", "v2", keeps).bound().reporting(deployment, "0").Snapshot
			action := Plan(snap, engine)
			if action.Type == ActionDeleteBindingPolicy || action.Type == ActionCreateBindingPolicy {
				t.Fatalf("action %s %s (%s): want the kept BindingPolicies %v left alone", action.Type, action.BindingPolicy.Name, action.Why, bpNames(snap.BindingPolicies))
			}
			if action.Status != nil && action.Status.ActiveStage != "dev" {
				t.Errorf("the stage moved on with its condition unmet: %s", action.Why)
			}
		})
	}

	t.Run("a stale status of the old revision never counts", func(t *testing.T) {
		// dev's v1 BindingPolicy reports available; v2 has not reported.
		f := revisioned(v1alpha1.PlacementAccumulate, "dev", "v1", "v2", keepsAll("v1")).bound()
		old := revisionBP(f.Policy, "dev", "v1")
		f.CombinedStatuses = append(f.CombinedStatuses, combinedStatus(old, deployment, "1"))
		resync(f.Snapshot) // the reconciler reads the statuses of the active stage's BindingPolicy at v2 only
		action := Plan(f.Snapshot, engine)
		if action.Status != nil && action.Status.ActiveStage != "dev" || action.Type == ActionCreateBindingPolicy {
			t.Fatalf("action %s (%s): the stage moved on, judged on v1's status", action.Type, action.Why)
		}
		if action.Status != nil && action.Status.Stages[0].Message == "" {
			t.Errorf("dev's record does not say what it waits for")
		}
	})

	t.Run("a done stage hands over at the update revision and keeps it", func(t *testing.T) {
		snap := revisioned(v1alpha1.PlacementAccumulate, "dev", "v1", "v2", keepsAll("v1")).bound().reporting(deployment, "1").Snapshot
		action := Plan(snap, engine)
		if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.test.v2" {
			t.Fatalf("action %s (%s), want test's BindingPolicy at v2 created", action.Type, action.Why)
		}
		// The status records the advance: dev keeps v2 now.
		snap.BindingPolicies = append(snap.BindingPolicies, *action.BindingPolicy)
		resync(snap)
		record := Plan(snap, engine)
		if record.Type != ActionUpdateStatus || record.Status.ActiveStage != "test" {
			t.Fatalf("action %s (%s), want the advance recorded", record.Type, record.Why)
		}
		if got := recordRevisions(record.Status); !slices.Equal(got, []string{"dev=v2", "test=v1", "prod=v1"}) {
			t.Errorf("records keep %v, want dev=v2 test=v1 prod=v1", got)
		}
	})

	t.Run("under Replace a done stage keeps nothing", func(t *testing.T) {
		snap := revisioned(v1alpha1.PlacementReplace, "dev", "v1", "v2", map[string]string{"prod": "v1"}).bound().reporting(deployment, "1").Snapshot
		action := advance(snap.Policy, 0, assessment{message: "done"}, now)
		if got := recordRevisions(action.Status); !slices.Equal(got, []string{"dev=", "test=", "prod=v1"}) {
			t.Errorf("records keep %v, want dev= test= prod=v1", got)
		}
	})

	t.Run("the old revision of a later stage goes once the rollout is done there", func(t *testing.T) {
		// test is done on v2 and prod active at v2, prod still keeping v1.
		f := revisioned(v1alpha1.PlacementAccumulate, "prod", "v1", "v2", map[string]string{"dev": "v2", "test": "v2", "prod": "v1"})
		f = f.alsoBP(revisionBP(f.Policy, "dev", "v2")).alsoBP(revisionBP(f.Policy, "test", "v2"))
		f.BindingPolicies = slices.DeleteFunc(f.BindingPolicies, func(bp ksv1alpha1.BindingPolicy) bool {
			return bp.Name == "web.stage.dev.v1" || bp.Name == "web.stage.test.v1"
		})
		snap := f.bound().Snapshot
		snap.Policy.Spec.Stages[2].Condition, snap.Policy.Spec.Stages[2].Filter = "", "" // done once placed
		action := Plan(snap, engine)
		if action.Type != ActionUpdateStatus || action.Status.Phase != v1alpha1.RolloutCompleted || action.Status.CurrentRevision != "v2" {
			t.Fatalf("action %s (%s): want the rollout completed on v2", action.Type, action.Why)
		}
		if got := recordRevisions(action.Status); !slices.Equal(got, []string{"dev=v2", "test=v2", "prod=v2"}) {
			t.Errorf("records keep %v, want every stage on v2", got)
		}
		next := replan(t, snap, engine, action)
		if next.Type != ActionDeleteBindingPolicy || next.BindingPolicy.Name != "web.stage.prod.v1" {
			t.Errorf("planned again: %s (%s), want BindingPolicy web.stage.prod.v1 deleted", next.Type, next.Why)
		}
	})
}

func TestPlanKeepsKeptBindingPoliciesInPlace(t *testing.T) {
	engine := newEngine(t)
	t.Run("a kept BindingPolicy deleted by someone is placed again", func(t *testing.T) {
		f := revisioned(v1alpha1.PlacementAccumulate, "dev", "v1", "v2", keepsAll("v1")).bound().reporting(deployment, "0")
		f.BindingPolicies = slices.DeleteFunc(f.BindingPolicies, func(bp ksv1alpha1.BindingPolicy) bool { return bp.Name == "web.stage.test.v1" })
		action := Plan(f.Snapshot, engine)
		if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.test.v1" {
			t.Fatalf("action %s (%s), want web.stage.test.v1 created again", action.Type, action.Why)
		}
	})

	// v3 supersedes v2, which had reached test: test keeps v1, and its v2
	// goes only once its v1 is resolved.
	superseded := func() fixture {
		f := revisioned(v1alpha1.PlacementAccumulate, "dev", "v1", "v3", map[string]string{"dev": "v2", "test": "v1", "prod": "v1"})
		return f.alsoBP(revisionBP(f.Policy, "test", "v2")).bound().reporting(deployment, "0")
	}
	t.Run("a superseded revision of a later stage waits for the kept one", func(t *testing.T) {
		snap := superseded().Snapshot // no Binding of web.stage.test.v1 yet
		if action := Plan(snap, engine); action.Type == ActionDeleteBindingPolicy {
			t.Fatalf("deletes %s before web.stage.test.v1 is resolved", action.BindingPolicy.Name)
		}
		snap.Bindings = []ksv1alpha1.Binding{*bindingFor(revisionBP(snap.Policy, "test", "v1"))}
		if action := Plan(snap, engine); action.Type != ActionDeleteBindingPolicy || action.BindingPolicy.Name != "web.stage.test.v2" {
			t.Errorf("action %s (%s), want web.stage.test.v2 deleted once test's v1 is resolved", action.Type, action.Why)
		}
	})
}

func TestPlanAbort(t *testing.T) {
	engine := newEngine(t)
	abort := func(s *Snapshot) { s.Policy.Spec.Abort = true }
	// inTest is v2 done in dev and active in test, v1 kept elsewhere.
	inTest := func() fixture {
		return revisioned(v1alpha1.PlacementAccumulate, "test", "v1", "v2", map[string]string{"dev": "v2", "test": "v1", "prod": "v1"}).bound()
	}

	t.Run("abort records the stages back on the current revision first", func(t *testing.T) {
		snap := inTest().with(abort).Snapshot
		action := Plan(snap, engine)
		if action.Type != ActionUpdateStatus || action.Status.Phase != v1alpha1.RolloutAborted || action.Status.ActiveStage != "" {
			t.Fatalf("action %s (%s), want the status to record the abort", action.Type, action.Why)
		}
		if got := recordRevisions(action.Status); !slices.Equal(got, []string{"dev=v1", "test=v1", "prod=v1"}) {
			t.Errorf("records keep %v, want every stage back on v1", got)
		}
		if got := eventKeys(action.Events); !slices.Equal(got, []string{"Warning/" + v1alpha1.ReasonRolloutAborted}) {
			t.Errorf("events %v, want one Warning RolloutAborted", got)
		}
		if c := condition(t, action.Status, v1alpha1.ConditionProgressing); c.Reason != v1alpha1.ReasonRolloutAborted || !strings.Contains(c.Message, `"v1"`) {
			t.Errorf("Progressing %+v, want RolloutAborted naming v1", c)
		}
	})

	// aborted is inTest once the abort is recorded.
	aborted := func() fixture {
		f := inTest().with(abort)
		f.Policy.Status = *Plan(f.Snapshot, engine).Status
		resync(f.Snapshot)
		return f
	}
	t.Run("then the current revision is placed again where it is missing", func(t *testing.T) {
		action := Plan(aborted().Snapshot, engine)
		if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.dev.v1" {
			t.Fatalf("action %s (%s), want web.stage.dev.v1 created", action.Type, action.Why)
		}
	})
	withV1Back := func() fixture {
		f := aborted()
		return f.alsoBP(revisionBP(f.Policy, "dev", "v1"))
	}
	t.Run("the newer revision stays until the current one is resolved", func(t *testing.T) {
		for name, change := range map[string]func(*Snapshot){
			"no Binding yet": func(s *Snapshot) {
				s.Bindings = slices.DeleteFunc(s.Bindings, func(b ksv1alpha1.Binding) bool { return b.Name == "web.stage.dev.v1" })
			},
			"a generation not yet observed": func(s *Snapshot) {
				bp := findBindingPolicy(s.BindingPolicies, "web.stage.dev.v1")
				bp.Generation = 2
			},
		} {
			snap := withV1Back().with(func(s *Snapshot) {
				for _, stage := range []string{"dev", "test", "prod"} {
					s.Bindings = append(s.Bindings, *bindingFor(revisionBP(s.Policy, stage, "v1")))
				}
			}).with(change).Snapshot
			if action := Plan(snap, engine); action.Type != ActionNone {
				t.Errorf("%s: action %s (%s), want to wait for dev's v1 to be resolved", name, action.Type, action.Why)
			}
		}
	})
	t.Run("a current revision's BindingPolicy being deleted is waited for, not counted", func(t *testing.T) {
		snap := aborted().with(func(s *Snapshot) {
			s.BindingPolicies = append(s.BindingPolicies, *beingDeleted(revisionBP(s.Policy, "dev", "v1")))
			for _, stage := range []string{"dev", "test", "prod"} {
				bp := revisionBP(s.Policy, stage, "v1")
				s.Bindings = append(s.Bindings, *bindingFor(bp))
				s.AbortStatuses = append(s.AbortStatuses, combinedStatus(bp, deployment, "1")) // healthy, but going
			}
			s.BindingPolicies = slices.DeleteFunc(s.BindingPolicies, func(bp ksv1alpha1.BindingPolicy) bool { return bp.Name == "web.stage.test.v2" })
		}).Snapshot
		if action := Plan(snap, engine); action.Type != ActionNone {
			t.Errorf("action %s (%s), want to wait for web.stage.dev.v1 to go before placing it again", action.Type, action.Why)
		}
	})
	// resolvedV1 is withV1Back with every stage's v1 resolved by KubeStellar,
	// and available on the stages given.
	resolvedV1 := func(healthy ...string) fixture {
		return withV1Back().with(func(s *Snapshot) {
			for _, stage := range []string{"dev", "test", "prod"} {
				bp := revisionBP(s.Policy, stage, "v1")
				s.Bindings = append(s.Bindings, *bindingFor(bp))
				if slices.Contains(healthy, stage) {
					s.AbortStatuses = append(s.AbortStatuses, combinedStatus(bp, deployment, "1"))
				}
			}
		})
	}
	placed := func() fixture { return resolvedV1("dev", "test", "prod") }
	t.Run("a stage's newer revision goes only once the current one is healthy there", func(t *testing.T) {
		if action := Plan(resolvedV1().Snapshot, engine); action.Type != ActionNone {
			t.Errorf("nowhere healthy: action %s (%s), want to wait", action.Type, action.Why)
		}
		action := Plan(resolvedV1("test").Snapshot, engine)
		if action.Type != ActionDeleteBindingPolicy || action.BindingPolicy.Name != "web.stage.test.v2" {
			t.Errorf("v1 healthy in test only: action %s (%s), want web.stage.test.v2 deleted, dev's v2 kept", action.Type, action.Why)
		}
		snap := resolvedV1("test").Snapshot
		snap.BindingPolicies = slices.DeleteFunc(snap.BindingPolicies, func(bp ksv1alpha1.BindingPolicy) bool { return bp.Name == "web.stage.test.v2" })
		if action := Plan(snap, engine); action.Type != ActionNone || !strings.Contains(action.Why, `stage "dev"`) {
			t.Errorf("then: action %s (%s), want to wait for dev", action.Type, action.Why)
		}
	})
	t.Run("then the newer revision's BindingPolicies go", func(t *testing.T) {
		snap := placed().Snapshot
		var deleted []string
		for range 5 {
			action := Plan(snap, engine)
			if action.Type != ActionDeleteBindingPolicy {
				break
			}
			deleted = append(deleted, action.BindingPolicy.Name)
			snap.BindingPolicies = slices.DeleteFunc(snap.BindingPolicies, func(bp ksv1alpha1.BindingPolicy) bool { return bp.Name == action.BindingPolicy.Name })
		}
		slices.Sort(deleted)
		if want := []string{"web.stage.dev.v2", "web.stage.test.v2"}; !slices.Equal(deleted, want) {
			t.Errorf("deleted %v, want %v", deleted, want)
		}
		if got := bpNames(snap.BindingPolicies); !sameSet(got, []string{"web.stage.dev.v1", "web.stage.test.v1", "web.stage.prod.v1"}) {
			t.Errorf("left %v, want every stage's v1", got)
		}
	})

	t.Run("an approval given before the abort counts no more", func(t *testing.T) {
		snap := aborted().with(func(s *Snapshot) {
			s.Policy.Spec.Stages[2].Approval = v1alpha1.ApprovalRequired
			unaborted := s.Policy.DeepCopy()
			unaborted.Spec.Abort = false
			s.Approvals = []v1alpha1.StageApproval{*desiredApproval(unaborted, unaborted.Spec.Stages[2], specDigest(unaborted))}
			s.Approvals[0].UID = "approval-prod"
		}).Snapshot
		action := Plan(snap, engine)
		if action.Type != ActionUpdateStageApproval || action.StageApproval.Spec.SpecDigest != specDigest(snap.Policy) {
			t.Fatalf("action %s (%s), want the StageApproval brought in line with the aborted spec", action.Type, action.Why)
		}
	})

	t.Run("retried before the abort is done, the stages' kept revisions are placed", func(t *testing.T) {
		f := aborted() // test.v1 and prod.v1 are there; dev.v1 is not placed again yet
		f.Policy.Spec.Abort = false
		start := Plan(f.Snapshot, engine)
		if start.Type != ActionUpdateStatus || start.Status.ActiveStage != "dev" {
			t.Fatalf("action %s (%s), want the rollout started again at dev", start.Type, start.Why)
		}
		next := replan(t, f.Snapshot, engine, start)
		if next.Type != ActionCreateBindingPolicy || next.BindingPolicy.Name != "web.stage.dev.v1" {
			t.Errorf("planned again: %s (%s), want web.stage.dev.v1, which dev keeps, created", next.Type, next.Why)
		}
	})

	t.Run("a rollout without a current revision is held where it is", func(t *testing.T) {
		f := revisioned(v1alpha1.PlacementAccumulate, "test", "", "v1", nil)
		f = f.alsoBP(revisionBP(f.Policy, "dev", "v1")).bound().with(abort)
		action := Plan(f.Snapshot, engine)
		if action.Type != ActionUpdateStatus || action.Status.Phase != v1alpha1.RolloutAborted || action.Status.ActiveStage != "test" {
			t.Fatalf("action %s (%s), want the status Aborted, the rollout where it is", action.Type, action.Why)
		}
		next := replan(t, f.Snapshot, engine, action)
		if next.Type != ActionNone {
			t.Errorf("planned again: %s (%s), want nothing changed", next.Type, next.Why)
		}
	})

	t.Run("abort goes before suspend and an expression that does not compile", func(t *testing.T) {
		snap := inTest().with(abort).with(func(s *Snapshot) {
			s.Policy.Spec.Suspend = true
			s.Policy.Spec.Stages[1].Condition = "obj.("
		}).Snapshot
		if action := Plan(snap, engine); action.Type != ActionUpdateStatus || action.Status.Phase != v1alpha1.RolloutAborted {
			t.Errorf("action %s (%s), want the abort recorded", action.Type, action.Why)
		}
	})

	t.Run("clearing abort rolls the revision out again from the first stage", func(t *testing.T) {
		f := placed()
		f.Policy.Spec.Abort = false
		action := Plan(f.Snapshot, engine)
		if action.Type != ActionUpdateStatus || action.Status.ActiveStage != "dev" || action.Status.UpdateRevision != "v2" ||
			action.Status.Phase != v1alpha1.RolloutProgressing {
			t.Fatalf("action %s (%s), want v2 rolled out again from dev", action.Type, action.Why)
		}
		if got := recordRevisions(action.Status); !slices.Equal(got, []string{"dev=v1", "test=v1", "prod=v1"}) {
			t.Errorf("records keep %v, want every stage on v1", got)
		}
	})
}

func TestApprovalIsPerRevision(t *testing.T) {
	p := newPolicy()
	p.Spec.Revision = &v1alpha1.Revision{Name: "v2"}
	v2 := specDigest(p)
	p.Spec.Revision.Name = "v3"
	if specDigest(p) == v2 {
		t.Errorf("revisions v2 and v3 give the same approval revision %s: an approval for v2 would open v3", v2)
	}
	p.Status.UpdateRevision = "v3"
	q := p.DeepCopy()
	q.Status.UpdateRevision = "v2"
	if placementDigest(p, p.Spec.Stages[0]) == placementDigest(q, q.Spec.Stages[0]) {
		t.Errorf("dev at v2 and at v3 has the same placement digest")
	}
}

// sameSet reports whether a and b hold the same strings.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
