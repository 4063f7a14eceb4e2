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
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// ---------------------------------------------------------------------------
// Rule 19a: status.history (keepHistory)
// ---------------------------------------------------------------------------

// entry is a history entry; end zero means none (Progressing).
func entry(revision string, outcome v1alpha1.RolloutOutcome, start, end metav1.Time, approvedBy ...string) v1alpha1.RevisionHistory {
	h := v1alpha1.RevisionHistory{Revision: revision, Outcome: outcome, StartTime: start, ApprovedBy: approvedBy}
	if !end.IsZero() {
		h.EndTime = ptr.To(end)
	}
	return h
}

// describeHistory is "<revision> <outcome> <start>-<end> [approvers]" per
// entry, times as offsets from now, for messages and comparisons.
func describeHistory(history []v1alpha1.RevisionHistory) string {
	out := make([]string, 0, len(history))
	at := func(t *metav1.Time) string {
		if t == nil {
			return "_"
		}
		return t.Sub(now.Time).String()
	}
	for _, h := range history {
		e := fmt.Sprintf("%s %s %s..%s %v", h.Revision, h.Outcome, at(&h.StartTime), at(h.EndTime), h.ApprovedBy)
		if len(h.PromotedBy) > 0 {
			e += fmt.Sprintf(" promoted by %v", h.PromotedBy)
		}
		for _, s := range h.Stages {
			e += fmt.Sprintf(" %s:%s..%s", s.Name, at(&s.StartTime), at(&s.CompletionTime))
		}
		out = append(out, e)
	}
	return strings.Join(out, "; ")
}

func TestPlanKeepsHistory(t *testing.T) {
	engine := newEngine(t)
	zero := metav1.Time{}
	// completedOn is revision done everywhere, history saying so.
	completedOn := func(revision string) fixture {
		f := revisioned(v1alpha1.PlacementAccumulate, "prod", revision, revision, keepsAll(revision)).bound().reporting(deployment, "1")
		f.Policy.Status.Phase = v1alpha1.RolloutCompleted
		f.Policy.Status.Stages[2].Phase = v1alpha1.StageSucceeded
		f.Policy.Status.History = []v1alpha1.RevisionHistory{entry(revision, v1alpha1.OutcomeCompleted, muchEarlier, earlier)}
		return f
	}
	// inTest is v2 done in dev and active in test, v1 kept elsewhere.
	inTest := func() fixture {
		f := revisioned(v1alpha1.PlacementAccumulate, "test", "v1", "v2", map[string]string{"dev": "v2", "test": "v1", "prod": "v1"}).bound()
		f.Policy.Status.History = []v1alpha1.RevisionHistory{
			entry("v1", v1alpha1.OutcomeCompleted, muchEarlier, muchEarlier),
			entry("v2", v1alpha1.OutcomeProgressing, earlier, zero),
		}
		return f
	}
	tests := []struct {
		name string
		snap *Snapshot
		want []v1alpha1.RevisionHistory
	}{
		{name: "a policy's first revision starts its first entry",
			snap: fixture{newSnapshot(newPolicy())}.with(func(s *Snapshot) {
				s.Policy.Spec.Revision = &v1alpha1.Revision{Name: "v1"}
			}).Snapshot,
			want: []v1alpha1.RevisionHistory{entry("v1", v1alpha1.OutcomeProgressing, now, zero)}},
		{name: "a new revision after a completed one starts an entry after it",
			snap: completedOn("v1").with(func(s *Snapshot) { s.Policy.Spec.Revision.Name = "v2" }).Snapshot,
			want: []v1alpha1.RevisionHistory{entry("v1", v1alpha1.OutcomeCompleted, muchEarlier, earlier), entry("v2", v1alpha1.OutcomeProgressing, now, zero)}},
		{name: "a newer revision mid-rollout supersedes the one in flight",
			snap: inTest().with(func(s *Snapshot) { s.Policy.Spec.Revision.Name = "v3" }).Snapshot,
			want: []v1alpha1.RevisionHistory{entry("v1", v1alpha1.OutcomeCompleted, muchEarlier, muchEarlier),
				entry("v2", v1alpha1.OutcomeSuperseded, earlier, now), entry("v3", v1alpha1.OutcomeProgressing, now, zero)}},
		{name: "the final stage done completes the entry, with who approved its stages",
			snap: func() *Snapshot {
				f := revisioned(v1alpha1.PlacementAccumulate, "prod", "v1", "v2", keepsAll("v2")).bound().reporting(deployment, "1")
				f.Policy.Status.History = []v1alpha1.RevisionHistory{entry("v2", v1alpha1.OutcomeProgressing, earlier, zero)}
				f.Policy.Status.Stages[1].ApprovedBy = "alice"
				f.Policy.Status.Stages[2].ApprovedBy = "bob"
				return f.Snapshot
			}(),
			want: []v1alpha1.RevisionHistory{func() v1alpha1.RevisionHistory {
				// dev and test were done before the entry started (the
				// fixture's times): only prod is this rollout's.
				h := entry("v2", v1alpha1.OutcomeCompleted, earlier, now, "alice", "bob")
				h.Stages = []v1alpha1.StageHistory{{Name: "prod", StartTime: earlier, CompletionTime: now}}
				return h
			}()}},
		{name: "the final stage done after a promotion completes the entry Promoted, with who promoted",
			snap: func() *Snapshot {
				f := revisioned(v1alpha1.PlacementAccumulate, "prod", "v1", "v2", keepsAll("v2")).bound().reporting(deployment, "1")
				f.Policy.Status.History = []v1alpha1.RevisionHistory{entry("v2", v1alpha1.OutcomeProgressing, earlier, zero)}
				f.Policy.Status.Stages[0].Promotion = &v1alpha1.StagePromotion{By: "rm", Time: earlier, RequestedAt: earlier, Reason: "hotfix"}
				f.Policy.Status.Stages[1].Promotion = &v1alpha1.StagePromotion{By: "rm", Time: earlier, RequestedAt: earlier, Reason: "hotfix"}
				f.Policy.Status.Stages[1].ApprovedBy = "alice"
				return f.Snapshot
			}(),
			want: []v1alpha1.RevisionHistory{func() v1alpha1.RevisionHistory {
				h := entry("v2", v1alpha1.OutcomePromoted, earlier, now, "alice")
				h.PromotedBy = []string{"rm"}
				h.Stages = []v1alpha1.StageHistory{{Name: "prod", StartTime: earlier, CompletionTime: now}}
				return h
			}()}},
		{name: "spec.abort ends the entry Aborted",
			snap: inTest().with(func(s *Snapshot) { s.Policy.Spec.Abort = true }).Snapshot,
			want: []v1alpha1.RevisionHistory{entry("v1", v1alpha1.OutcomeCompleted, muchEarlier, muchEarlier), entry("v2", v1alpha1.OutcomeAborted, earlier, now)}},
		{name: "an abort lifted starts the revision again in a new entry",
			snap: inTest().with(func(s *Snapshot) {
				s.Policy.Status.Phase, s.Policy.Status.ActiveStage = v1alpha1.RolloutAborted, ""
				s.Policy.Status.History[1] = entry("v2", v1alpha1.OutcomeAborted, earlier, earlier)
			}).Snapshot,
			want: []v1alpha1.RevisionHistory{entry("v1", v1alpha1.OutcomeCompleted, muchEarlier, muchEarlier),
				entry("v2", v1alpha1.OutcomeAborted, earlier, earlier), entry("v2", v1alpha1.OutcomeProgressing, now, zero)}},
		{name: "a restart of a completed revision starts it again in a new entry",
			snap: completedOn("v2").with(func(s *Snapshot) {
				s.Policy.Annotations = map[string]string{v1alpha1.RestartedAtAnnotation: "2026-01-01T00:00:00Z"}
			}).Snapshot,
			want: []v1alpha1.RevisionHistory{entry("v2", v1alpha1.OutcomeCompleted, muchEarlier, earlier), entry("v2", v1alpha1.OutcomeProgressing, now, zero)}},
		{name: "a restart mid-rollout supersedes the entry in flight",
			snap: inTest().with(func(s *Snapshot) {
				s.Policy.Annotations = map[string]string{v1alpha1.RestartedAtAnnotation: "2026-01-01T00:00:00Z"}
			}).Snapshot,
			want: []v1alpha1.RevisionHistory{entry("v1", v1alpha1.OutcomeCompleted, muchEarlier, muchEarlier),
				entry("v2", v1alpha1.OutcomeSuperseded, earlier, now), entry("v2", v1alpha1.OutcomeProgressing, now, zero)}},
		{name: "removing spec.revision records the rollout of what it places as -",
			snap: completedOn("v1").with(func(s *Snapshot) { s.Policy.Spec.Revision = nil }).Snapshot,
			want: []v1alpha1.RevisionHistory{entry("v1", v1alpha1.OutcomeCompleted, muchEarlier, earlier), entry(v1alpha1.Unrevisioned, v1alpha1.OutcomeProgressing, now, zero)}},
		{name: "a policy that never had spec.revision records nothing",
			snap: fixture{newSnapshot(newPolicy())}.Snapshot,
			want: nil},
		{name: "a rollout found without an entry gets one from its first stage's start",
			snap: inTest().with(func(s *Snapshot) {
				s.Policy.Status.History = nil
				s.Policy.Status.Stages[0].StartTime = ptr.To(muchEarlier)
				s.Policy.Status.Stages[1].Message = "stale" // some status write to make
			}).Snapshot,
			want: []v1alpha1.RevisionHistory{func() v1alpha1.RevisionHistory {
				// dev, done in the rollout found, is listed.
				h := entry("v2", v1alpha1.OutcomeProgressing, muchEarlier, zero)
				h.Stages = []v1alpha1.StageHistory{{Name: "dev", StartTime: muchEarlier, CompletionTime: earlier}}
				return h
			}()}},
		{name: "the oldest entry goes beyond ten",
			snap: completedOn("v10").with(func(s *Snapshot) {
				s.Policy.Status.History = nil
				for i := range v1alpha1.MaxHistory {
					s.Policy.Status.History = append(s.Policy.Status.History,
						entry(fmt.Sprintf("v%d", i+1), v1alpha1.OutcomeCompleted, muchEarlier, muchEarlier))
				}
				s.Policy.Spec.Revision.Name = "v11"
			}).Snapshot,
			want: func() []v1alpha1.RevisionHistory {
				var h []v1alpha1.RevisionHistory
				for i := 1; i < v1alpha1.MaxHistory; i++ {
					h = append(h, entry(fmt.Sprintf("v%d", i+1), v1alpha1.OutcomeCompleted, muchEarlier, muchEarlier))
				}
				return append(h, entry("v11", v1alpha1.OutcomeProgressing, now, zero))
			}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			action := Plan(tt.snap, engine)
			if action.Type != ActionUpdateStatus {
				t.Fatalf("action %s (%s), want a status write", action.Type, action.Why)
			}
			if got := action.Status.History; !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("history\n  %s\nwant\n  %s", describeHistory(got), describeHistory(tt.want))
			}
			// Written, the same snapshot planned again a minute later
			// writes the same history: nothing is recorded twice.
			next := *tt.snap
			next.Policy = tt.snap.Policy.DeepCopy()
			next.Policy.Status = *action.Status.DeepCopy()
			again := Plan(&next, engine)
			if again.Status != nil && !equality.Semantic.DeepEqual(again.Status.History, action.Status.History) {
				t.Errorf("planned again (%s): history\n  %s\nwant it as written\n  %s", again.Why,
					describeHistory(again.Status.History), describeHistory(action.Status.History))
			}
		})
	}
}

func TestKeepHistoryApprovers(t *testing.T) {
	running := func(approvers ...string) *v1alpha1.StagedBindingPolicyStatus {
		s := &v1alpha1.StagedBindingPolicyStatus{UpdateRevision: "v2", CurrentRevision: "v1", ActiveStage: "prod", Phase: v1alpha1.RolloutProgressing,
			History: []v1alpha1.RevisionHistory{entry("v2", v1alpha1.OutcomeProgressing, earlier, metav1.Time{})}}
		for i, a := range approvers {
			s.Stages = append(s.Stages, v1alpha1.StageStatus{Name: fmt.Sprintf("s%d", i), ApprovedBy: a})
		}
		return s
	}
	long := strings.Repeat("u", 300)
	many := make([]string, 0, 40)
	for i := range 40 {
		many = append(many, fmt.Sprintf("user%d", i))
	}
	tests := []struct {
		name   string
		before []string // approvers the entry lists
		after  *v1alpha1.StagedBindingPolicyStatus
		want   []string
	}{
		{name: "each stage's approver, in stage order, each once",
			after: running("alice", "", "bob", "alice"), want: []string{"alice", "bob"}},
		{name: "an approver listed stays when its stage's record forgets it",
			before: []string{"carol"}, after: running("alice"), want: []string{"carol", "alice"}},
		{name: "a name longer than an entry holds is cut",
			after: running(long), want: []string{cutMessage(long, v1alpha1.MaxHistoryUser)}},
		{name: "at most 32 names",
			after: running(many...), want: many[:v1alpha1.MaxHistoryUsers]},
		{name: "an entry that ended lists no new approver",
			before: []string{"carol"}, after: func() *v1alpha1.StagedBindingPolicyStatus {
				s := running("alice")
				s.Phase = v1alpha1.RolloutCompleted
				s.History[0].Outcome, s.History[0].EndTime = v1alpha1.OutcomeCompleted, ptr.To(earlier)
				return s
			}(), want: []string{"carol"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.after.DeepCopy()
			tt.after.History[0].ApprovedBy = tt.before
			before.History[0].ApprovedBy = tt.before
			keepHistory(before, tt.after, now)
			if got := tt.after.History[len(tt.after.History)-1].ApprovedBy; !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("approvedBy %v, want %v", got, tt.want)
			}
			for _, by := range tt.after.History[0].ApprovedBy {
				if len(by) > v1alpha1.MaxHistoryUser {
					t.Errorf("approvedBy holds %d bytes, more than %d", len(by), v1alpha1.MaxHistoryUser)
				}
			}
		})
	}
}

// TestKeepHistoryNeverMovesBack: an entry's times are never before the
// previous entry's end, even when a rollout found without an entry
// started, as its first stage says, before the last recorded one ended.
func TestKeepHistoryNeverMovesBack(t *testing.T) {
	before := &v1alpha1.StagedBindingPolicyStatus{UpdateRevision: "v3", ActiveStage: "dev", Phase: v1alpha1.RolloutProgressing,
		Stages:  []v1alpha1.StageStatus{{Name: "dev", StartTime: ptr.To(muchEarlier)}},
		History: []v1alpha1.RevisionHistory{entry("v2", v1alpha1.OutcomeCompleted, muchEarlier, earlier)}}
	after := before.DeepCopy()
	keepHistory(before, after, metav1.NewTime(now.Add(time.Minute)))
	if got := after.History[1]; got.Revision != "v3" || !got.StartTime.Equal(&earlier) {
		t.Errorf("history %s: want v3 started when v2 ended", describeHistory(after.History))
	}
}

// TestKeepHistoryRecordsStages: rule 19a lists, in the entry of the
// rollout running, each stage the rollout did, once, with its start and
// completion, and nothing it did not do.
func TestKeepHistoryRecordsStages(t *testing.T) {
	later := metav1.NewTime(now.Add(time.Minute))
	// running is v2 in flight since start: dev done on v2 from
	// muchEarlier to earlier, test active since earlier.
	running := func(start metav1.Time) *v1alpha1.StagedBindingPolicyStatus {
		return &v1alpha1.StagedBindingPolicyStatus{UpdateRevision: "v2", CurrentRevision: "v1", ActiveStage: "test", Phase: v1alpha1.RolloutProgressing,
			Stages: []v1alpha1.StageStatus{
				{Name: "dev", Phase: v1alpha1.StageSucceeded, Revision: "v2", StartTime: ptr.To(muchEarlier), CompletionTime: ptr.To(earlier)},
				{Name: "test", Phase: v1alpha1.StageActive, Revision: "v1", StartTime: ptr.To(earlier)},
				{Name: "prod", Phase: v1alpha1.StagePending, Revision: "v1"},
			},
			History: []v1alpha1.RevisionHistory{entry("v2", v1alpha1.OutcomeProgressing, start, metav1.Time{})}}
	}
	done := func(name string, start, end metav1.Time) v1alpha1.StageHistory {
		return v1alpha1.StageHistory{Name: name, StartTime: start, CompletionTime: end}
	}
	tests := []struct {
		name   string
		known  []v1alpha1.StageHistory // stages the entry lists before
		after  *v1alpha1.StagedBindingPolicyStatus
		want   []v1alpha1.StageHistory
		change func(s *v1alpha1.StagedBindingPolicyStatus)
	}{
		{name: "a stage done in the rollout is recorded with its start and completion",
			after: running(muchEarlier), want: []v1alpha1.StageHistory{done("dev", muchEarlier, earlier)}},
		{name: "a stage done before the rollout started is not",
			after: running(earlier)},
		{name: "a stage done that keeps no revision (placement Replace) is recorded",
			after: running(muchEarlier), change: func(s *v1alpha1.StagedBindingPolicyStatus) { s.Stages[0].Revision = "" },
			want: []v1alpha1.StageHistory{done("dev", muchEarlier, earlier)}},
		{name: "a promoted stage is not: its gates were skipped",
			after: running(muchEarlier), change: func(s *v1alpha1.StagedBindingPolicyStatus) {
				s.Stages[0].Promotion = &v1alpha1.StagePromotion{By: "rm", Time: earlier, RequestedAt: earlier}
			}},
		{name: "a stage done after now (a clock ahead) is not",
			after: running(muchEarlier), change: func(s *v1alpha1.StagedBindingPolicyStatus) { s.Stages[0].CompletionTime = ptr.To(later) }},
		{name: "a stage done before it started is not",
			after: running(muchEarlier), change: func(s *v1alpha1.StagedBindingPolicyStatus) {
				s.Stages[0].StartTime, s.Stages[0].CompletionTime = ptr.To(earlier), ptr.To(muchEarlier)
			}},
		{name: "a stage listed stays as it was when its record changes",
			known: []v1alpha1.StageHistory{done("dev", muchEarlier, muchEarlier)},
			after: running(muchEarlier), want: []v1alpha1.StageHistory{done("dev", muchEarlier, muchEarlier)}},
		{name: "its suspended time and batches are kept",
			after: running(muchEarlier), change: func(s *v1alpha1.StagedBindingPolicyStatus) {
				s.Stages[0].SuspendedDuration = &metav1.Duration{Duration: 10 * time.Minute}
				s.Stages[0].Clusters = &v1alpha1.StageClusters{Total: 5, Placed: 5, Succeeded: 5, Batch: 3, Batches: 3}
			}, want: []v1alpha1.StageHistory{{Name: "dev", StartTime: muchEarlier, CompletionTime: earlier,
				SuspendedDuration: &metav1.Duration{Duration: 10 * time.Minute}, Batches: 3}}},
		{name: "the write that completes the rollout records its final stage",
			after: running(muchEarlier), change: func(s *v1alpha1.StagedBindingPolicyStatus) {
				s.Phase, s.ActiveStage = v1alpha1.RolloutCompleted, "prod"
				s.Stages[1] = v1alpha1.StageStatus{Name: "test", Phase: v1alpha1.StageSucceeded, Revision: "v2", StartTime: ptr.To(earlier), CompletionTime: ptr.To(earlier)}
				s.Stages[2] = v1alpha1.StageStatus{Name: "prod", Phase: v1alpha1.StageSucceeded, Revision: "v2", StartTime: ptr.To(earlier), CompletionTime: ptr.To(now)}
			}, want: []v1alpha1.StageHistory{done("dev", muchEarlier, earlier), done("test", earlier, earlier), done("prod", earlier, now)}},
		{name: "an entry that ended lists no new stage",
			after: running(muchEarlier), change: func(s *v1alpha1.StagedBindingPolicyStatus) {
				s.Phase = v1alpha1.RolloutAborted
				s.History[0].Outcome, s.History[0].EndTime = v1alpha1.OutcomeAborted, ptr.To(earlier)
			}},
		{name: "at most 32 stages",
			after: running(muchEarlier), change: func(s *v1alpha1.StagedBindingPolicyStatus) {
				s.Stages = nil
				for i := range 40 {
					s.Stages = append(s.Stages, v1alpha1.StageStatus{Name: fmt.Sprintf("s%d", i), Phase: v1alpha1.StageSucceeded,
						Revision: "v2", StartTime: ptr.To(muchEarlier), CompletionTime: ptr.To(earlier)})
				}
			}, want: func() []v1alpha1.StageHistory {
				var out []v1alpha1.StageHistory
				for i := range v1alpha1.MaxHistoryStages {
					out = append(out, done(fmt.Sprintf("s%d", i), muchEarlier, earlier))
				}
				return out
			}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.change != nil {
				tt.change(tt.after)
			}
			tt.after.History[0].Stages = tt.known
			before := tt.after.DeepCopy()
			keepHistory(before, tt.after, now)
			if got := tt.after.History[len(tt.after.History)-1].Stages; !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("stages %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
