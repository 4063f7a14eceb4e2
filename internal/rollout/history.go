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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// keepHistory is Plan's rule 19a: every status Plan writes carries
// status.history up to date with the rollout it describes. It reads only
// the status before (the policy's) and after the write, so that a
// restarted controller, or a write tried again, writes the same:
//   - a rollout starts when the write changes status.updateRevision, or
//     status.restartedAt, or gives a rollout without an active stage one
//     (the first start, or the start after an abort is lifted), or takes
//     the rollout out of phase Aborted (an abort without a revision to go
//     back to held it where it was, and lifted it goes on from there): the
//     newest entry, if still Progressing, ends Superseded, and a new
//     Progressing entry of the rollout's revision begins;
//   - the newest entry, while Progressing, ends Completed when the write's
//     phase is Completed, Aborted when it is Aborted;
//   - while an entry is Progressing, and on the write that ends it, its
//     approvedBy are the stage records' approvedBy and its promotedBy the
//     users of their promotions (the records of this rollout: a start
//     forgets the earlier ones), each once, at most MaxHistoryUsers; an
//     entry with a promoter ends Promoted where it would end Completed;
//   - while an entry is Progressing, and on the write that ends it, its
//     stages list each stage record done in this rollout (Succeeded,
//     started no earlier than the entry and done by now, not promoted)
//     once, with its start, completion, suspended time
//     and batches, in the order they were done, at most MaxHistoryStages:
//     the durations a forecast learns from (internal/forecast);
//   - a status whose history does not end with an entry of the rollout's
//     revision (a policy from before the history, or a history someone
//     else wrote) gets one, started now, or at its first stage's start;
//   - the oldest entries go beyond v1alpha1.MaxHistory.
//
// The rollout's revision is the one its stages keep (placedRevision): a
// policy that never had spec.revision records nothing (its rollouts have
// no name to record or to undo to); one that had and no longer names one
// records its rollouts as "-".
func keepHistory(before, after *v1alpha1.StagedBindingPolicyStatus, now metav1.Time) {
	revision := placedRevision(after)
	if revision == "" {
		return
	}
	history := slices.Clone(after.History)
	var top *v1alpha1.RevisionHistory
	if n := len(history); n > 0 {
		top = &history[n-1]
	}
	starts := after.UpdateRevision != before.UpdateRevision || after.RestartedAt != before.RestartedAt ||
		before.ActiveStage == "" && after.ActiveStage != "" ||
		before.Phase == v1alpha1.RolloutAborted && after.Phase != v1alpha1.RolloutAborted
	if starts || top == nil || top.Revision != revision {
		start := now
		if !starts {
			// Found running: the best start known is its first stage's.
			if len(after.Stages) > 0 && after.Stages[0].StartTime != nil && !after.Stages[0].StartTime.After(now.Time) {
				start = *after.Stages[0].StartTime
			}
			if top != nil && top.EndTime != nil && start.Before(top.EndTime) {
				start = *top.EndTime
			}
		}
		if top != nil && !top.Ended() {
			top.Outcome, top.EndTime = v1alpha1.OutcomeSuperseded, ptr.To(now)
		}
		history = append(history, v1alpha1.RevisionHistory{Revision: revision, Outcome: v1alpha1.OutcomeProgressing, StartTime: start})
		top = &history[len(history)-1]
	}
	if !top.Ended() {
		top.ApprovedBy = approvers(top.ApprovedBy, after.Stages)
		top.PromotedBy = promoters(top.PromotedBy, after.Stages)
		top.Stages = stagesDone(top.Stages, after, top.StartTime, now)
		switch after.Phase {
		case v1alpha1.RolloutCompleted:
			top.Outcome, top.EndTime = v1alpha1.OutcomeCompleted, ptr.To(now)
			if len(top.PromotedBy) > 0 {
				top.Outcome = v1alpha1.OutcomePromoted
			}
		case v1alpha1.RolloutAborted:
			top.Outcome, top.EndTime = v1alpha1.OutcomeAborted, ptr.To(now)
		}
	}
	if n := len(history); n > v1alpha1.MaxHistory {
		history = history[n-v1alpha1.MaxHistory:]
	}
	after.History = history
}

// approvers returns known with the approvedBy of every record added, in
// the records' order, each once, cut to the bounds of status.history.
func approvers(known []string, records []v1alpha1.StageStatus) []string {
	out := slices.Clone(known)
	for _, r := range records {
		by := cutUser(r.ApprovedBy)
		if by == "" || slices.Contains(out, by) || len(out) >= v1alpha1.MaxHistoryUsers {
			continue
		}
		out = append(out, by)
	}
	return out
}

// promoters returns known with the user of every record's promotion
// added, as approvers does for approvedBy.
func promoters(known []string, records []v1alpha1.StageStatus) []string {
	out := slices.Clone(known)
	for _, r := range records {
		if r.Promotion == nil {
			continue
		}
		by := cutUser(r.Promotion.By)
		if by == "" || slices.Contains(out, by) || len(out) >= v1alpha1.MaxHistoryUsers {
			continue
		}
		out = append(out, by)
	}
	return out
}

// stagesDone returns known with every stage record of status done in the
// rollout that started at start added, each once: a record Succeeded,
// started no earlier than the rollout and done no later than now, not
// promoted (a promotion skips the gates whose time a forecast would
// learn), cut to MaxHistoryStages. A start forgets the records of the
// rollout before (startRollout), so a Succeeded record is this rollout's;
// its revision says nothing (under Replace a stage done keeps none).
func stagesDone(known []v1alpha1.StageHistory, status *v1alpha1.StagedBindingPolicyStatus, start, now metav1.Time) []v1alpha1.StageHistory {
	out := slices.Clone(known)
	for _, r := range status.Stages {
		if r.Phase != v1alpha1.StageSucceeded || r.StartTime == nil || r.CompletionTime == nil || r.Promotion != nil ||
			r.StartTime.Before(&start) || r.CompletionTime.Before(r.StartTime) || r.CompletionTime.After(now.Time) ||
			len(out) >= v1alpha1.MaxHistoryStages ||
			slices.ContainsFunc(out, func(h v1alpha1.StageHistory) bool { return h.Name == r.Name }) {
			continue
		}
		h := v1alpha1.StageHistory{Name: r.Name, StartTime: *r.StartTime, CompletionTime: *r.CompletionTime}
		if r.SuspendedDuration != nil && r.SuspendedDuration.Duration > 0 {
			h.SuspendedDuration = r.SuspendedDuration.DeepCopy()
		}
		if r.Clusters != nil {
			h.Batches = max(r.Clusters.Batches, 0)
		}
		out = append(out, h)
	}
	return out
}

// cutUser bounds a user name to what an entry of status.history holds.
func cutUser(name string) string {
	if len(name) <= v1alpha1.MaxHistoryUser {
		return name
	}
	return cutMessage(name, v1alpha1.MaxHistoryUser)
}
