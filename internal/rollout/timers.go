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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// This file holds the timers of a stage: its soakDuration, its
// progressDeadline, and the time the rollout was suspended meanwhile, all
// computed from times in the snapshot.

// progressDeadline applies the stage's progressDeadline to its assessment:
// a stage not done by startTime + progressDeadline + the time the rollout
// was suspended meanwhile is stalled. It returns the assessment, the
// deadline (nil when the stage has none or is done), and how long until it
// passes (0 when it has passed or there is none).
func progressDeadline(policy *v1alpha1.StagedBindingPolicy, active int, result assessment, now metav1.Time) (assessment, *metav1.Time, time.Duration) {
	stage := policy.Spec.Stages[active]
	record := policy.Status.StageNamed(stage.Name)
	if stage.ProgressDeadline == nil || stage.ProgressDeadline.Duration <= 0 || stage.Batched() || result.satisfied || result.evaluationError ||
		record == nil || record.Phase != v1alpha1.StageActive || record.StartTime == nil {
		return result, nil, 0
	}
	deadline := metav1.NewTime(record.StartTime.Add(stage.ProgressDeadline.Duration + suspendedFor(&policy.Status, record, now)))
	if now.Before(&deadline) {
		// Now is truncated to the second: a second more is past the deadline.
		return result, &deadline, deadline.Sub(now.Time) + time.Second
	}
	result.stalled = true
	result.reason = v1alpha1.ReasonProgressDeadlineExceeded
	result.message = fmt.Sprintf("past its progressDeadline %s (at %s): %s",
		stage.ProgressDeadline.Duration, deadline.UTC().Format(time.RFC3339), result.message)
	return result, &deadline, 0
}

// suspendedFor is how long the rollout has been suspended while the stage
// of record was active: what the record says, plus the suspension going on.
func suspendedFor(status *v1alpha1.StagedBindingPolicyStatus, record *v1alpha1.StageStatus, now metav1.Time) time.Duration {
	var d time.Duration
	if record.SuspendedDuration != nil {
		d = record.SuspendedDuration.Duration
	}
	if status.SuspendedTime != nil && now.After(status.SuspendedTime.Time) {
		d += now.Sub(status.SuspendedTime.Time)
	}
	return d
}

// endSuspension, on the first status written after a rollout is resumed,
// adds the time it was suspended to the suspendedDuration of the stage that
// was active meanwhile (suspendedIn), also when this write records it done,
// and clears suspendedTime: a stage entered by this write was not suspended.
func endSuspension(status *v1alpha1.StagedBindingPolicyStatus, suspendedIn string, now metav1.Time) {
	if status.SuspendedTime == nil {
		return
	}
	if record := status.StageNamed(suspendedIn); record != nil &&
		(record.Phase == v1alpha1.StageActive || record.Phase == v1alpha1.StageSucceeded) {
		record.SuspendedDuration = &metav1.Duration{Duration: suspendedFor(status, record, now)}
	}
	status.SuspendedTime = nil
}

// Earliest returns the shorter of two waits, ignoring one that is not positive.
func Earliest(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// soak applies the stage's soakDuration to its assessment: a stage whose
// condition holds is done only once it has held for soakDuration since it
// was first seen to (the stage record's ConditionMetTime, or now; for a
// stage placed in batches, not before from, when its last cluster was
// placed). It returns the assessment, when the condition started holding
// (nil when it does not hold), and how long until the stage is done (0
// when not soaking).
func soak(policy *v1alpha1.StagedBindingPolicy, active int, result assessment, now metav1.Time, from *metav1.Time) (assessment, *metav1.Time, time.Duration) {
	stage := policy.Spec.Stages[active]
	if !result.satisfied || stage.SoakDuration == nil || stage.SoakDuration.Duration <= 0 {
		return result, nil, 0
	}
	since := now
	for _, r := range policy.Status.Stages {
		if r.Name == stage.Name && r.ConditionMetTime != nil && (from == nil || !r.ConditionMetTime.Before(from)) {
			since = *r.ConditionMetTime
		}
	}
	doneAt := since.Add(stage.SoakDuration.Duration)
	if !now.Time.Before(doneAt) {
		result.message = fmt.Sprintf("%s; it held for soakDuration %s", result.message, stage.SoakDuration.Duration)
		return result, &since, 0
	}
	result.satisfied = false
	result.reason = v1alpha1.ReasonSoaking
	result.message = fmt.Sprintf("%s since %s; the stage is done at %s unless it stops holding (soakDuration %s)",
		result.message, since.UTC().Format(time.RFC3339), doneAt.UTC().Format(time.RFC3339), stage.SoakDuration.Duration)
	return result, &since, doneAt.Sub(now.Time)
}
