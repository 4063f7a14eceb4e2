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
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"pgregory.net/rapid"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// The history of the state-machine test (rule 19a, docs/proposals/history.md):
// every status write Plan makes on the model's world keeps status.history
// bounded, with at most one rollout running (the update revision's, the
// newest), times in order, the past unchanged but for its oldest entries
// going, and every completed rollout recorded as it completes.

// checkHistoryStep checks the status.history of one change planned on snap.
func (m *machine) checkHistoryStep(t *rapid.T, snap *rollout.Snapshot, action rollout.Action) {
	if action.Status == nil || snap.Policy.DeletionTimestamp != nil {
		return
	}
	before, after := &snap.Policy.Status, action.Status
	b, a := before.History, after.History
	seen["history: write"]++
	if len(a) == v1alpha1.MaxHistory {
		seen["history: full"]++
	}
	if len(a) > v1alpha1.MaxHistory {
		m.fatalf(t, "history: %d entries written (%s), more than %d", len(a), action.Why, v1alpha1.MaxHistory)
	}
	revision := rolloutRevision(after)
	if revision == "" {
		if !equality.Semantic.DeepEqual(a, b) {
			m.fatalf(t, "history: a policy that never had spec.revision records %s (%s)", historyString(a), action.Why)
		}
		return
	}
	for i, h := range a {
		if h.Outcome == v1alpha1.OutcomeProgressing {
			seen["history: progressing"]++
			if i != len(a)-1 || h.Revision != revision || h.EndTime != nil {
				m.fatalf(t, "history: entry %d of %s is Progressing (%s); only the newest may be, of the update revision %q, with no end",
					i, historyString(a), action.Why, revision)
			}
		} else if h.EndTime == nil {
			m.fatalf(t, "history: entry %d of %s ended %s without an end time (%s)", i, historyString(a), h.Outcome, action.Why)
		}
		if h.EndTime != nil && h.EndTime.Before(&h.StartTime) || h.StartTime.After(snap.Now.Time) {
			m.fatalf(t, "history: entry %d of %s ends before it starts, or starts after now %v (%s)", i, historyString(a), snap.Now, action.Why)
		}
		if i > 0 && (a[i-1].EndTime == nil || h.StartTime.Before(a[i-1].EndTime)) {
			m.fatalf(t, "history: entry %d of %s starts before the one before it ended (%s)", i, historyString(a), action.Why)
		}
		m.checkHistoryStages(t, snap, action, i, h)
	}
	// The stages the newest entry before listed are kept, first, in what
	// becomes of it (pastKept checks the entries that had ended; with no
	// entry gone, it is at the same place, or the one before a new one).
	if n, k := len(a), len(b); k > 0 && n < v1alpha1.MaxHistory && (n == k || n == k+1) {
		was, is := b[k-1].Stages, a[k-1].Stages
		if len(is) < len(was) || !equality.Semantic.DeepEqual(is[:len(was)], was) {
			m.fatalf(t, "history: the write (%s) changes the stages the rollout did: before %+v, after %+v", action.Why, was, is)
		}
	}
	if !pastKept(b, a) {
		m.fatalf(t, "history: the write (%s) changes the past:\n  before %s\n  after  %s", action.Why, historyString(b), historyString(a))
	}
	switch {
	case after.Phase == v1alpha1.RolloutCompleted && before.Phase != v1alpha1.RolloutCompleted && (len(b) == 0 || b[len(b)-1].Outcome == v1alpha1.OutcomeProgressing):
		// A rollout in flight completes (a completed one may be
		// Completed again after a suspension).
		seen["history: completed"]++
		want := v1alpha1.OutcomeCompleted
		if slices.ContainsFunc(after.Stages, func(r v1alpha1.StageStatus) bool { return r.Promotion != nil }) {
			want = v1alpha1.OutcomePromoted
		}
		if n := len(a); n == 0 || a[n-1].Revision != after.CurrentRevision || a[n-1].Outcome != want || !a[n-1].EndTime.Equal(&snap.Now) {
			m.fatalf(t, "history: the rollout of %q completes %s (%s) and the history says %s", after.CurrentRevision, want, action.Why, historyString(a))
		}
	case after.Phase == v1alpha1.RolloutAborted && before.Phase != v1alpha1.RolloutAborted && len(b) > 0 && b[len(b)-1].Outcome == v1alpha1.OutcomeProgressing:
		// An abort of a rollout in flight; one after the rollout
		// completed leaves its Completed entry as it is.
		seen["history: aborted"]++
		if n := len(a); n == 0 || a[n-1].Revision != revision || a[n-1].Outcome != v1alpha1.OutcomeAborted {
			m.fatalf(t, "history: the rollout of %q is aborted (%s) and the history says %s", revision, action.Why, historyString(a))
		}
	case after.Phase != v1alpha1.RolloutCompleted && after.Phase != v1alpha1.RolloutAborted &&
		(after.UpdateRevision != before.UpdateRevision || after.RestartedAt != before.RestartedAt):
		seen["history: started"]++
		if n := len(a); n == 0 || a[n-1].Revision != revision || a[n-1].Outcome != v1alpha1.OutcomeProgressing || !a[n-1].StartTime.Equal(&snap.Now) {
			m.fatalf(t, "history: the rollout of %q starts (%s) and the history says %s", revision, action.Why, historyString(a))
		}
	}
}

// checkHistoryStages checks the stages entry i of the written history
// lists: each once, no more than a spec lists, each done after it started,
// within the entry's rollout and by now.
func (m *machine) checkHistoryStages(t *rapid.T, snap *rollout.Snapshot, action rollout.Action, i int, h v1alpha1.RevisionHistory) {
	if len(h.Stages) > 0 {
		seen["history: stage recorded"]++
	}
	if len(h.Stages) > v1alpha1.MaxHistoryStages || len(h.Stages) > len(stageNames) {
		m.fatalf(t, "history: entry %d lists %d stages, more than a spec has (%s)", i, len(h.Stages), action.Why)
	}
	names := map[string]bool{}
	for _, s := range h.Stages {
		if names[s.Name] {
			m.fatalf(t, "history: entry %d lists stage %s twice: %+v (%s)", i, s.Name, h.Stages, action.Why)
		}
		names[s.Name] = true
		if s.CompletionTime.Before(&s.StartTime) || s.StartTime.Before(&h.StartTime) || s.CompletionTime.After(snap.Now.Time) ||
			h.EndTime != nil && s.CompletionTime.After(h.EndTime.Time) {
			m.fatalf(t, "history: entry %d (%s..%v) lists stage %s done %s..%s: not within the rollout and by now %s (%s)", i,
				h.StartTime.UTC().Format("15:04:05"), h.EndTime, s.Name, s.StartTime.UTC().Format("15:04:05"),
				s.CompletionTime.UTC().Format("15:04:05"), snap.Now.UTC().Format("15:04:05"), action.Why)
		}
	}
	if i == len(action.Status.History)-1 && h.Outcome == v1alpha1.OutcomeCompleted && len(h.Stages) > 0 {
		seen["history: completed with stages"]++
	}
}

// pastKept reports whether after is before with, at most, its newest
// entry brought up to date, one entry added and the oldest going beyond
// MaxHistory: every entry of before but its newest is kept as it is,
// unless it went off the front.
func pastKept(before, after []v1alpha1.RevisionHistory) bool {
	if len(before) == 0 {
		return len(after) <= 1
	}
	for dropped := 0; dropped <= 1 && dropped <= len(before); dropped++ {
		kept := before[dropped:]
		if len(after) < len(kept) || len(after) > len(kept)+1 || len(after) > v1alpha1.MaxHistory {
			continue
		}
		// The entries before before's newest, unchanged.
		if len(kept) > 0 && !equality.Semantic.DeepEqual(after[:len(kept)-1], kept[:len(kept)-1]) {
			continue
		}
		// before's newest, unchanged if it had ended; if it ran, the
		// same rollout (revision and start).
		if len(kept) > 0 {
			old, now := kept[len(kept)-1], after[len(kept)-1]
			if old.Outcome != v1alpha1.OutcomeProgressing && !equality.Semantic.DeepEqual(old, now) ||
				old.Revision != now.Revision || !old.StartTime.Equal(&now.StartTime) ||
				!slices.Equal(now.ApprovedBy[:min(len(old.ApprovedBy), len(now.ApprovedBy))], old.ApprovedBy) {
				continue
			}
		}
		if dropped == 1 && len(after) != v1alpha1.MaxHistory {
			continue
		}
		return true
	}
	return false
}

// rolloutRevision is the revision whose rollout the status describes, as
// the history records it: the update revision, "-" for none when the
// policy had revisions, "" for a policy that never had one.
func rolloutRevision(s *v1alpha1.StagedBindingPolicyStatus) string {
	if s.UpdateRevision != "" {
		return s.UpdateRevision
	}
	if s.CurrentRevision != "" || slices.ContainsFunc(s.Stages, func(r v1alpha1.StageStatus) bool { return r.Revision != "" }) {
		return v1alpha1.Unrevisioned
	}
	return ""
}

func historyString(h []v1alpha1.RevisionHistory) string {
	out := "["
	for i, e := range h {
		if i > 0 {
			out += ", "
		}
		end := "_"
		if e.EndTime != nil {
			end = e.EndTime.UTC().Format("15:04:05")
		}
		out += fmt.Sprintf("%s %s %s..%s", e.Revision, e.Outcome, e.StartTime.UTC().Format("15:04:05"), end)
	}
	return out + "]"
}
