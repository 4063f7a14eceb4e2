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

package forecast

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// took is an earlier rollout that did each stage in the given minutes
// (0: not done), one after the other, ending hours before now.
func took(hoursAgo int, outcome v1alpha1.RolloutOutcome, minutes ...int) v1alpha1.RevisionHistory {
	at := now.Add(-time.Duration(hoursAgo) * time.Hour)
	h := v1alpha1.RevisionHistory{Revision: fmt.Sprintf("v%d", 100-hoursAgo), Outcome: outcome, StartTime: metav1.NewTime(at)}
	for i, m := range minutes {
		if m == 0 {
			continue
		}
		end := at.Add(time.Duration(m) * time.Minute)
		h.Stages = append(h.Stages, v1alpha1.StageHistory{Name: []string{"dev", "test", "prod"}[i],
			StartTime: metav1.NewTime(at), CompletionTime: metav1.NewTime(end)})
		at = end
	}
	h.EndTime = ptr.To(metav1.NewTime(at))
	return h
}

// running is a policy rolling out v3, test active for activeFor, dev done,
// with the given earlier rollouts before its own Progressing entry.
func running(activeFor time.Duration, earlier ...v1alpha1.RevisionHistory) *v1alpha1.StagedBindingPolicy {
	p := &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	p.Spec.Revision = &v1alpha1.Revision{Name: "v3"}
	p.Spec.Stages = []v1alpha1.Stage{{Name: "dev"}, {Name: "test"}, {Name: "prod"}}
	started := metav1.NewTime(now.Add(-activeFor))
	p.Status = v1alpha1.StagedBindingPolicyStatus{ActiveStage: "test", Phase: v1alpha1.RolloutProgressing, UpdateRevision: "v3",
		Stages: []v1alpha1.StageStatus{
			{Name: "dev", Phase: v1alpha1.StageSucceeded, StartTime: ptr.To(metav1.NewTime(started.Add(-time.Hour))), CompletionTime: ptr.To(started)},
			{Name: "test", Phase: v1alpha1.StageActive, StartTime: ptr.To(started)},
			{Name: "prod", Phase: v1alpha1.StagePending},
		}}
	p.Status.History = append(slices.Clone(earlier), v1alpha1.RevisionHistory{Revision: "v3", Outcome: v1alpha1.OutcomeProgressing,
		StartTime: metav1.NewTime(started.Add(-time.Hour)),
		Stages:    []v1alpha1.StageHistory{{Name: "dev", StartTime: metav1.NewTime(started.Add(-time.Hour)), CompletionTime: started}}})
	return p
}

func TestFor(t *testing.T) {
	completed := v1alpha1.OutcomeCompleted
	tests := []struct {
		name     string
		policy   *v1alpha1.StagedBindingPolicy
		kind     Kind
		left     time.Duration // Forecast.Left
		sentence string        // a part of Sentence
		stages   []string      // StageLine of each stage
		basis    string
	}{
		{name: "no earlier rollout: no forecast",
			policy: running(5 * time.Minute), kind: NoHistory,
			sentence: "no earlier rollout of this policy finished its stages; no forecast",
			stages:   []string{"test: no earlier rollout did it", "prod: no earlier rollout did it"}, basis: "no earlier rollout"},
		{name: "a policy without spec.revision says why it has no history",
			policy: func() *v1alpha1.StagedBindingPolicy {
				p := running(5 * time.Minute)
				p.Spec.Revision, p.Status.History = nil, nil
				return p
			}(), kind: NoHistory, sentence: "records the rollouts of a policy with spec.revision only"},
		{name: "one earlier rollout",
			policy: running(5*time.Minute, took(10, completed, 10, 20, 30)), kind: Estimated, left: 15*time.Minute + 30*time.Minute,
			sentence: "completes ~12:45 UTC, in 45m",
			stages:   []string{"test: ~15m left of 20m (active 5m)", "prod: ~30m"}, basis: "from 1 earlier rollout; median per stage"},
		{name: "several with an outlier: the median",
			policy: running(0, took(10, completed, 10, 20, 30), took(8, completed, 10, 22, 34), took(6, completed, 10, 300, 32),
				took(4, v1alpha1.OutcomeAborted, 10, 24, 0)),
			kind: Estimated, left: 23*time.Minute + 32*time.Minute,
			stages: []string{"test: ~23m left of 23m (active 0s)", "prod: ~32m"}, basis: "from 4 earlier rollouts; median per stage"},
		{name: "a stage only some rollouts did counts those",
			policy: running(0, took(10, completed, 10, 20, 30), took(4, v1alpha1.OutcomeSuperseded, 10, 0, 0)),
			kind:   Estimated, left: 50 * time.Minute, basis: "from 1 earlier rollout; median per stage"},
		{name: "the active stage past its median is overdue, with nothing left",
			policy: running(50*time.Minute, took(10, completed, 10, 20, 30)), kind: Estimated, left: 30 * time.Minute,
			stages: []string{"test: overdue by 30m (20m expected, active 50m)", "prod: ~30m"}},
		{name: "suspended time does not count as time active",
			policy: func() *v1alpha1.StagedBindingPolicy {
				p := running(50*time.Minute, took(10, completed, 10, 20, 30))
				p.Status.Stages[1].SuspendedDuration = &metav1.Duration{Duration: 40 * time.Minute}
				return p
			}(), kind: Estimated, left: 10*time.Minute + 30*time.Minute},
		{name: "an earlier rollout's suspended time is not the stage's duration",
			policy: func() *v1alpha1.StagedBindingPolicy {
				h := took(10, completed, 10, 60, 30)
				h.Stages[1].SuspendedDuration = &metav1.Duration{Duration: 40 * time.Minute}
				return running(0, h)
			}(), kind: Estimated, left: 20*time.Minute + 30*time.Minute},
		{name: "a stage soaking has at least its soak left",
			policy: func() *v1alpha1.StagedBindingPolicy {
				p := running(18*time.Minute, took(10, completed, 10, 20, 30))
				p.Spec.Stages[1].Condition, p.Spec.Stages[1].SoakDuration = "true", &metav1.Duration{Duration: 10 * time.Minute}
				p.Status.Stages[1].ConditionMetTime = ptr.To(metav1.NewTime(now.Add(-time.Minute)))
				return p
			}(), kind: Estimated, left: 9*time.Minute + 30*time.Minute},
		{name: "a stage's soak longer than it took before is its least duration",
			policy: func() *v1alpha1.StagedBindingPolicy {
				p := running(0, took(10, completed, 10, 20, 30))
				p.Spec.Stages[2].Condition, p.Spec.Stages[2].SoakDuration = "true", &metav1.Duration{Duration: time.Hour}
				return p
			}(), kind: Estimated, left: 20*time.Minute + time.Hour},
		{name: "batches: each earlier duration scaled to the batches now",
			policy: func() *v1alpha1.StagedBindingPolicy {
				h := took(10, completed, 10, 20, 30)
				h.Stages[1].Batches = 2
				p := running(0, h)
				p.Spec.Stages[1].MaxConcurrency = ptr.To(intstr.FromInt32(1))
				p.Status.Stages[1].Clusters = &v1alpha1.StageClusters{Total: 4, Batch: 1, Batches: 4}
				return p
			}(), kind: Estimated, left: 40*time.Minute + 30*time.Minute, stages: []string{"test: ~40m left of 40m (active 0s)", "prod: ~30m"}},
		{name: "a later stage that needs an approval: until the rollout reaches it",
			policy: func() *v1alpha1.StagedBindingPolicy {
				p := running(5*time.Minute, took(10, completed, 10, 20, 30))
				p.Spec.Stages[2].Approval = v1alpha1.ApprovalRequired
				return p
			}(), kind: Gated, left: 15 * time.Minute,
			sentence: "reaches stage prod, which waits for an approval, ~12:15 UTC, in 15m; completes about 30m after it starts"},
		{name: "waiting for approval: the time after it is approved",
			policy: func() *v1alpha1.StagedBindingPolicy {
				p := running(0, took(10, completed, 10, 20, 30))
				p.Spec.Stages[1].Approval = v1alpha1.ApprovalRequired
				p.Status.Stages[1] = v1alpha1.StageStatus{Name: "test", Phase: v1alpha1.StageAwaitingApproval, ApprovalRequestedTime: ptr.To(metav1.NewTime(now))}
				p.Status.Phase = v1alpha1.RolloutAwaitingApproval
				return p
			}(), kind: Gated, sentence: "stage test waits for an approval; the rollout completes about 50m after it starts"},
		{name: "waiting for approval with another approval later: nothing past it",
			policy: func() *v1alpha1.StagedBindingPolicy {
				p := running(0, took(10, completed, 10, 20, 30))
				p.Spec.Stages[1].Approval, p.Spec.Stages[2].Approval = v1alpha1.ApprovalRequired, v1alpha1.ApprovalRequired
				p.Status.Stages[1] = v1alpha1.StageStatus{Name: "test", Phase: v1alpha1.StageAwaitingApproval}
				return p
			}(), kind: Gated, sentence: "stage test waits for an approval; no forecast past it"},
		{name: "an approved stage active is no gate",
			policy: func() *v1alpha1.StagedBindingPolicy {
				p := running(0, took(10, completed, 10, 20, 30))
				p.Spec.Stages[1].Approval = v1alpha1.ApprovalRequired
				return p
			}(), kind: Estimated, left: 50 * time.Minute},
		{name: "a later stage with change windows is a gate",
			policy: func() *v1alpha1.StagedBindingPolicy {
				p := running(0, took(10, completed, 10, 20, 30))
				p.Spec.Stages[2].Windows = []v1alpha1.ChangeWindow{{}}
				return p
			}(), kind: Gated, left: 20 * time.Minute, sentence: "reaches stage prod, which waits for its change window"},
		{name: "an unknown stage before a gate: no forecast",
			policy: func() *v1alpha1.StagedBindingPolicy {
				p := running(0, took(10, completed, 10, 0, 30))
				p.Spec.Stages[2].Approval = v1alpha1.ApprovalRequired
				return p
			}(), kind: NoHistory, sentence: "no earlier rollout of this policy finished stage test; no forecast"},
		{name: "a remaining stage no rollout did: no forecast, though others did",
			policy: running(0, took(10, completed, 10, 20, 0)), kind: NoHistory,
			sentence: "no earlier rollout of this policy finished stage prod; no forecast"},
		{name: "the running rollout's own stages are not earlier rollouts",
			policy: func() *v1alpha1.StagedBindingPolicy {
				p := running(0)
				p.Status.History[0].Stages = append(p.Status.History[0].Stages,
					v1alpha1.StageHistory{Name: "test", StartTime: metav1.NewTime(now.Add(-time.Hour)), CompletionTime: metav1.NewTime(now)},
					v1alpha1.StageHistory{Name: "prod", StartTime: metav1.NewTime(now.Add(-time.Hour)), CompletionTime: metav1.NewTime(now)})
				return p
			}(), kind: NoHistory},
		{name: "completed", policy: func() *v1alpha1.StagedBindingPolicy {
			p := running(0, took(10, completed, 10, 20, 30))
			p.Status.Phase = v1alpha1.RolloutCompleted
			return p
		}(), kind: NotRunning, sentence: "the rollout completed"},
		{name: "aborted", policy: func() *v1alpha1.StagedBindingPolicy {
			p := running(0, took(10, completed, 10, 20, 30))
			p.Status.Phase = v1alpha1.RolloutAborted
			return p
		}(), kind: NotRunning, sentence: "the rollout is aborted"},
		{name: "suspended", policy: func() *v1alpha1.StagedBindingPolicy {
			p := running(0, took(10, completed, 10, 20, 30))
			p.Spec.Suspend = true
			return p
		}(), kind: NotRunning, sentence: "suspended: no forecast until it resumes"},
		{name: "held by a failed stage", policy: func() *v1alpha1.StagedBindingPolicy {
			p := running(0, took(10, completed, 10, 20, 30))
			p.Status.Phase, p.Status.Failure = v1alpha1.RolloutStalled, &v1alpha1.RolloutFailure{Stage: "test", Action: v1alpha1.FailureHold}
			return p
		}(), kind: NotRunning, sentence: "a failure of stage test holds the rollout"},
		{name: "stalled past its progress deadline still runs: overdue", policy: func() *v1alpha1.StagedBindingPolicy {
			p := running(time.Hour, took(10, completed, 10, 20, 30))
			p.Status.Phase = v1alpha1.RolloutStalled
			return p
		}(), kind: Estimated, left: 30 * time.Minute},
		{name: "waiting for its wave", policy: func() *v1alpha1.StagedBindingPolicy {
			p := running(0, took(10, completed, 10, 20, 30))
			p.Status.ActiveStage, p.Status.Phase = "", v1alpha1.RolloutPending
			p.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionWaitingForWave, Status: metav1.ConditionTrue}}
			return p
		}(), kind: NotRunning, sentence: "waits for its wave"},
		{name: "waiting for a window to start", policy: func() *v1alpha1.StagedBindingPolicy {
			p := running(0, took(10, completed, 10, 20, 30))
			p.Status.ActiveStage, p.Status.Phase = "", v1alpha1.RolloutPending
			p.Status.Window = &v1alpha1.WindowStatus{Stage: "dev", OpensAt: metav1.NewTime(now.Add(time.Hour))}
			return p
		}(), kind: NotRunning, sentence: "waits for stage dev's change window"},
		{name: "the active stage's next batch waits for its window", policy: func() *v1alpha1.StagedBindingPolicy {
			p := running(0, took(10, completed, 10, 20, 30))
			p.Status.Window = &v1alpha1.WindowStatus{Stage: "test", OpensAt: metav1.NewTime(now.Add(time.Hour))}
			return p
		}(), kind: Gated, sentence: "stage test waits for its change window; the rollout completes about 50m after it starts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := For(tt.policy, now)
			if f.Kind != tt.kind {
				t.Fatalf("kind %s (%s), want %s", f.Kind, f.Sentence(now), tt.kind)
			}
			if f.Left != tt.left {
				t.Errorf("left %v, want %v", f.Left, tt.left)
			}
			if f.Kind == Estimated && !f.Completion.Equal(now.Add(tt.left)) {
				t.Errorf("completion %v, want now + %v", f.Completion, tt.left)
			}
			if f.Kind != Estimated && !f.Completion.IsZero() {
				t.Errorf("completion %v without an estimate", f.Completion)
			}
			if got := f.Sentence(now); !strings.Contains(got, tt.sentence) {
				t.Errorf("sentence %q, want it to say %q", got, tt.sentence)
			}
			if tt.stages != nil {
				var got []string
				for _, s := range f.Stages {
					got = append(got, s.StageLine())
				}
				if strings.Join(got, "; ") != strings.Join(tt.stages, "; ") {
					t.Errorf("stages\n  %q\nwant\n  %q", got, tt.stages)
				}
			}
			if tt.basis != "" && f.Basis.String() != tt.basis {
				t.Errorf("basis %q, want %q", f.Basis.String(), tt.basis)
			}
		})
	}
}

func TestShort(t *testing.T) {
	estimated := For(running(5*time.Minute, took(10, v1alpha1.OutcomeCompleted, 10, 20, 30)), now)
	if got, want := estimated.Short(now), "~12:45 UTC (in 45m)"; got != want {
		t.Errorf("short %q, want %q", got, want)
	}
	tomorrow := For(running(0, took(10, v1alpha1.OutcomeCompleted, 10, 20, 48*60)), now)
	if got, want := tomorrow.Short(now), "~Mar 3 12:20 UTC (in 2d0h)"; got != want {
		t.Errorf("short %q, want %q", got, want)
	}
	gated := running(5*time.Minute, took(10, v1alpha1.OutcomeCompleted, 10, 20, 30))
	gated.Spec.Stages[2].Approval = v1alpha1.ApprovalRequired
	reach := For(gated, now)
	if got, want := reach.Short(now), "prod's approval ~12:15 UTC"; got != want {
		t.Errorf("short %q, want %q", got, want)
	}
	gated.Status.ActiveStage, gated.Status.Stages[1] = "prod", v1alpha1.StageStatus{Name: "test", Phase: v1alpha1.StageSucceeded}
	gated.Status.Stages[2].Phase = v1alpha1.StageAwaitingApproval
	waiting := For(gated, now)
	if got, want := waiting.Short(now), "~30m after prod's approval"; got != want {
		t.Errorf("short %q, want %q", got, want)
	}
	gated.Status.History = gated.Status.History[1:]
	unknown := For(gated, now)
	if got := unknown.Short(now); got != "-" {
		t.Errorf("short %q waiting for an approval with no history past it, want -", got)
	}
	none := For(running(0), now)
	if got := none.Short(now); got != "-" {
		t.Errorf("short %q without history, want -", got)
	}
}

// atLast is running's policy with test done and prod active for activeFor.
func atLast(activeFor time.Duration, earlier ...v1alpha1.RevisionHistory) *v1alpha1.StagedBindingPolicy {
	p := running(activeFor, earlier...)
	started := p.Status.Stages[1].StartTime
	p.Status.ActiveStage = "prod"
	p.Status.Stages[1] = v1alpha1.StageStatus{Name: "test", Phase: v1alpha1.StageSucceeded,
		StartTime: ptr.To(metav1.NewTime(started.Add(-time.Hour))), CompletionTime: started}
	p.Status.Stages[2] = v1alpha1.StageStatus{Name: "prod", Phase: v1alpha1.StageActive, StartTime: started}
	return p
}

// TestOverdue: a rollout whose stages left are all past their expected
// durations says it is overdue, and by how much, rather than that it
// completes "in 0s"; so does one past the time it was expected at a gate.
func TestOverdue(t *testing.T) {
	completed := v1alpha1.OutcomeCompleted
	gated := func() *v1alpha1.StagedBindingPolicy {
		p := running(50*time.Minute, took(10, completed, 10, 20, 30))
		p.Spec.Stages[2].Approval = v1alpha1.ApprovalRequired
		return p
	}
	for _, tt := range []struct {
		name            string
		policy          *v1alpha1.StagedBindingPolicy
		kind            Kind
		overdue         time.Duration
		sentence, short string
	}{
		{name: "the last stage past its median",
			policy: atLast(50*time.Minute, took(10, completed, 10, 20, 30)), kind: Estimated, overdue: 20 * time.Minute,
			sentence: "expected by ~11:40 UTC, overdue by 20m", short: "overdue 20m"},
		{name: "the last stage on its median: due now",
			policy: atLast(30*time.Minute, took(10, completed, 10, 20, 30)), kind: Estimated,
			sentence: "expected by ~12:00 UTC, due now", short: "due now"},
		{name: "within its median: not overdue",
			policy: atLast(20*time.Minute, took(10, completed, 10, 20, 30)), kind: Estimated,
			sentence: "completes ~12:10 UTC, in 10m", short: "~12:10 UTC (in 10m)"},
		{name: "less than a second left: in 1s, not in 0s",
			policy: atLast(30*time.Minute-400*time.Millisecond, took(10, completed, 10, 20, 30)), kind: Estimated,
			sentence: "completes ~12:00 UTC, in 1s", short: "~12:00 UTC (in 1s)"},
		{name: "less than a second overdue: by 1s",
			policy: atLast(30*time.Minute+400*time.Millisecond, took(10, completed, 10, 20, 30)), kind: Estimated, overdue: 400 * time.Millisecond,
			sentence: "expected by ~11:59 UTC, overdue by 1s", short: "overdue 1s"},
		{name: "overdue in a stage with a later stage left: not overdue as a whole",
			policy: running(50*time.Minute, took(10, completed, 10, 20, 30)), kind: Estimated,
			sentence: "completes ~12:30 UTC, in 30m", short: "~12:30 UTC (in 30m)"},
		{name: "past its median but soaking: its soak left, not overdue",
			policy: func() *v1alpha1.StagedBindingPolicy {
				p := atLast(50*time.Minute, took(10, completed, 10, 20, 30))
				p.Spec.Stages[2].Condition, p.Spec.Stages[2].SoakDuration = "true", &metav1.Duration{Duration: 10 * time.Minute}
				p.Status.Stages[2].ConditionMetTime = ptr.To(metav1.NewTime(now.Add(-time.Minute)))
				return p
			}(), kind: Estimated, sentence: "completes ~12:09 UTC, in 9m", short: "~12:09 UTC (in 9m)"},
		{name: "past the time it was expected at a gate",
			policy: gated(), kind: Gated, overdue: 30 * time.Minute,
			sentence: "should have reached stage prod, which waits for an approval, by ~11:30 UTC (overdue by 30m); completes about 30m after it starts",
			short:    "prod's approval, overdue 30m"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := For(tt.policy, now)
			if f.Kind != tt.kind || f.Overdue != tt.overdue {
				t.Fatalf("%s overdue by %v (%s), want %s overdue by %v", f.Kind, f.Overdue, f.Sentence(now), tt.kind, tt.overdue)
			}
			if got := f.Sentence(now); got != tt.sentence {
				t.Errorf("sentence %q, want %q", got, tt.sentence)
			}
			if got := f.Short(now); got != tt.short {
				t.Errorf("short %q, want %q", got, tt.short)
			}
		})
	}
}

// TestForObserved: the durations another source observed (Prometheus's
// per-policy histogram) take precedence over status.history for the
// stages they have; the record serves the others; the basis names each
// source; invalid observations count for nothing; a stage neither knows
// gives no forecast.
func TestForObserved(t *testing.T) {
	completed := v1alpha1.OutcomeCompleted
	prom := func(stages map[string]Observed) *Observations {
		return &Observations{Source: "Prometheus", Window: 30 * 24 * time.Hour, Stages: stages}
	}
	for _, tt := range []struct {
		name     string
		policy   *v1alpha1.StagedBindingPolicy
		observed *Observations
		kind     Kind
		left     time.Duration
		basis    string
		sentence string   // a part of Sentence
		stages   []string // StageLine of each stage
	}{
		{name: "no record, Prometheus has every stage left",
			policy:   running(5 * time.Minute),
			observed: prom(map[string]Observed{"test": {Median: 20 * time.Minute, Count: 7}, "prod": {Median: 30 * time.Minute, Count: 5}}),
			kind:     Estimated, left: 15*time.Minute + 30*time.Minute,
			basis:  "from Prometheus: median per stage over 30d (7 completions of test, 5 of prod)",
			stages: []string{"test: ~15m left of 20m (active 5m)", "prod: ~30m"}},
		{name: "Prometheus wins where it has the stage, the record serves the rest",
			policy:   running(5*time.Minute, took(10, completed, 10, 20, 30)),
			observed: prom(map[string]Observed{"test": {Median: 40 * time.Minute, Count: 1}, "dev": {Median: time.Hour, Count: 9}}),
			kind:     Estimated, left: 35*time.Minute + 30*time.Minute,
			basis: "from Prometheus: median per stage over 30d (1 completion of test); prod from 1 earlier rollout"},
		{name: "Prometheus has none of the stages left: the record, and the basis says so",
			policy:   running(5*time.Minute, took(10, completed, 10, 20, 30)),
			observed: prom(map[string]Observed{"dev": {Median: time.Hour, Count: 9}}),
			kind:     Estimated, left: 15*time.Minute + 30*time.Minute,
			basis: "from 1 earlier rollout; median per stage; Prometheus has no completion of them over 30d"},
		{name: "invalid observations count for nothing",
			policy: running(5*time.Minute, took(10, completed, 10, 20, 30)),
			observed: prom(map[string]Observed{"test": {Median: 40 * time.Minute, Count: 0},
				"prod": {Median: -time.Minute, Count: 3}}),
			kind: Estimated, left: 15*time.Minute + 30*time.Minute,
			basis: "from 1 earlier rollout; median per stage; Prometheus has no completion of them over 30d"},
		{name: "an observed median beyond the bound counts as the bound",
			policy:   running(0),
			observed: prom(map[string]Observed{"test": {Median: 1 << 62, Count: 2}, "prod": {Median: 1 << 62, Count: 2}}),
			kind:     Estimated, left: 2 * MaxStageDuration},
		{name: "the soak is the least of an observed stage too",
			policy: func() *v1alpha1.StagedBindingPolicy {
				p := running(0)
				p.Spec.Stages[2].Condition, p.Spec.Stages[2].SoakDuration = "true", &metav1.Duration{Duration: time.Hour}
				return p
			}(),
			observed: prom(map[string]Observed{"test": {Median: 20 * time.Minute, Count: 2}, "prod": {Median: 30 * time.Minute, Count: 2}}),
			kind:     Estimated, left: 20*time.Minute + time.Hour},
		{name: "a stage neither has: no forecast, saying so",
			policy:   running(5*time.Minute, took(10, completed, 10, 20, 0)),
			observed: prom(map[string]Observed{"test": {Median: 20 * time.Minute, Count: 7}}),
			kind:     NoHistory,
			sentence: "no earlier rollout of this policy finished stage prod, nor has Prometheus a completion of it over 30d; no forecast"},
		{name: "neither has anything",
			policy: running(5 * time.Minute), observed: prom(nil), kind: NoHistory,
			sentence: "no earlier rollout of this policy finished its stages, nor has Prometheus a completion of them over 30d; no forecast"},
		{name: "a window not in days",
			policy:   running(5 * time.Minute),
			observed: &Observations{Source: "Prometheus", Window: 90 * time.Minute, Stages: map[string]Observed{"test": {Median: 20 * time.Minute, Count: 2}, "prod": {Median: 30 * time.Minute, Count: 2}}},
			kind:     Estimated, left: 45 * time.Minute,
			basis: "from Prometheus: median per stage over 1h30m (2 completions of test, 2 of prod)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := ForObserved(tt.policy, now, tt.observed)
			if f.Kind != tt.kind {
				t.Fatalf("kind %s (%s), want %s", f.Kind, f.Sentence(now), tt.kind)
			}
			if f.Left != tt.left {
				t.Errorf("left %v, want %v", f.Left, tt.left)
			}
			if tt.basis != "" && f.Basis.String() != tt.basis {
				t.Errorf("basis %q, want %q", f.Basis.String(), tt.basis)
			}
			if got := f.Sentence(now); !strings.Contains(got, tt.sentence) {
				t.Errorf("sentence %q, want it to say %q", got, tt.sentence)
			}
			if tt.stages != nil {
				var got []string
				for _, s := range f.Stages {
					got = append(got, s.StageLine())
				}
				if strings.Join(got, "; ") != strings.Join(tt.stages, "; ") {
					t.Errorf("stages\n  %q\nwant\n  %q", got, tt.stages)
				}
			}
			// Without observations, the same as For.
			if g, h := ForObserved(tt.policy, now, nil), For(tt.policy, now); g.Sentence(now) != h.Sentence(now) || g.Basis.String() != h.Basis.String() {
				t.Errorf("without observations %q (%s), For says %q (%s)", g.Sentence(now), g.Basis, h.Sentence(now), h.Basis)
			}
		})
	}
}
