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
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

var stageNames = []string{"dev", "test", "prod"}

// drawPolicy draws a running rollout: up to four stages, the active one
// started a while ago (maybe soaking, maybe suspended a while, maybe in
// batches), some stages needing approval or windows, and up to ten
// history entries, the newest maybe the running one's (Progressing) with
// stages of its own, which are no earlier rollout's. Some stage records
// are forged: extreme times, batches and suspended times.
func drawPolicy(t *rapid.T) *v1alpha1.StagedBindingPolicy {
	p := &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	p.Spec.Revision = &v1alpha1.Revision{Name: "v9"}
	names := append(slices.Clone(stageNames), "edge")[:rapid.IntRange(1, 4).Draw(t, "stages")]
	active := rapid.IntRange(0, len(names)-1).Draw(t, "active")
	minutes := func(label string) time.Duration {
		return time.Duration(rapid.IntRange(0, 600).Draw(t, label)) * time.Minute
	}
	p.Status = v1alpha1.StagedBindingPolicyStatus{Phase: v1alpha1.RolloutProgressing, ActiveStage: names[active], UpdateRevision: "v9"}
	for i, name := range names {
		s := v1alpha1.Stage{Name: name}
		if i > 0 && rapid.IntRange(0, 5).Draw(t, "approval") == 0 {
			s.Approval = v1alpha1.ApprovalRequired
		}
		if rapid.IntRange(0, 7).Draw(t, "windows") == 0 {
			s.Windows = []v1alpha1.ChangeWindow{{}}
		}
		if rapid.Bool().Draw(t, "soak") {
			s.Condition, s.SoakDuration = "true", &metav1.Duration{Duration: minutes("soakDuration")}
		}
		r := v1alpha1.StageStatus{Name: name, Phase: v1alpha1.StagePending}
		switch {
		case i < active:
			r.Phase = v1alpha1.StageSucceeded
		case i == active && s.Approval == v1alpha1.ApprovalRequired && rapid.Bool().Draw(t, "awaiting"):
			r.Phase = v1alpha1.StageAwaitingApproval
		case i == active:
			r.Phase, r.StartTime = v1alpha1.StageActive, ptr.To(metav1.NewTime(now.Add(-minutes("activeFor"))))
			if rapid.Bool().Draw(t, "suspended") {
				r.SuspendedDuration = &metav1.Duration{Duration: minutes("suspendedFor")}
			}
			if s.SoakDuration != nil && rapid.Bool().Draw(t, "conditionMet") {
				r.ConditionMetTime = ptr.To(metav1.NewTime(now.Add(-minutes("metFor"))))
			}
			if rapid.Bool().Draw(t, "batched") {
				s.MaxConcurrency = ptr.To(intstr.FromInt32(1))
				r.Clusters = &v1alpha1.StageClusters{Batches: rapid.SampledFrom([]int32{1, 2, 3, 8, math.MaxInt32}).Draw(t, "batches")}
			}
		}
		p.Spec.Stages = append(p.Spec.Stages, s)
		p.Status.Stages = append(p.Status.Stages, r)
	}
	entries := rapid.IntRange(0, v1alpha1.MaxHistory).Draw(t, "entries")
	at := now.Add(-100 * 24 * time.Hour)
	for e := range entries {
		h := v1alpha1.RevisionHistory{Revision: fmt.Sprintf("v%d", e), StartTime: metav1.NewTime(at),
			Outcome: rapid.SampledFrom([]v1alpha1.RolloutOutcome{v1alpha1.OutcomeCompleted, v1alpha1.OutcomeAborted,
				v1alpha1.OutcomeSuperseded, v1alpha1.OutcomePromoted}).Draw(t, "outcome")}
		last := e == entries-1 && rapid.Bool().Draw(t, "lastRunning")
		for _, name := range names {
			if !rapid.Bool().Draw(t, "did") {
				continue
			}
			end := at.Add(minutes("took"))
			sh := v1alpha1.StageHistory{Name: name, StartTime: metav1.NewTime(at), CompletionTime: metav1.NewTime(end),
				Batches: int32(rapid.IntRange(0, 8).Draw(t, "batchesThen"))}
			if rapid.IntRange(0, 3).Draw(t, "suspendedThen") == 0 {
				sh.SuspendedDuration = &metav1.Duration{Duration: minutes("suspendedThenFor")}
			}
			if rapid.IntRange(0, 9).Draw(t, "forged") == 0 {
				// A forged or corrupt record: extreme times and counts.
				sh.StartTime = metav1.NewTime(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC))
				sh.CompletionTime = metav1.NewTime(time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC))
				sh.Batches = rapid.SampledFrom([]int32{1, math.MaxInt32}).Draw(t, "forgedBatches")
				sh.SuspendedDuration = &metav1.Duration{Duration: rapid.SampledFrom([]time.Duration{math.MinInt64, -time.Hour, 0}).Draw(t, "forgedSuspended")}
			}
			h.Stages = append(h.Stages, sh)
			at = end
		}
		if last {
			h.Outcome = v1alpha1.OutcomeProgressing
		} else {
			h.EndTime = ptr.To(metav1.NewTime(at))
		}
		p.Status.History = append(p.Status.History, h)
	}
	return p
}

// drawObservations draws none, or what Prometheus may answer of some
// stages: any count and median, invalid and extreme ones included.
func drawObservations(t *rapid.T) *Observations {
	if rapid.Bool().Draw(t, "noObservations") {
		return nil
	}
	o := &Observations{Source: "Prometheus", Window: 30 * 24 * time.Hour, Stages: map[string]Observed{}}
	for _, name := range append(slices.Clone(stageNames), "edge") {
		if rapid.Bool().Draw(t, "observed") {
			o.Stages[name] = Observed{Count: rapid.IntRange(-1, 20).Draw(t, "count"),
				Median: rapid.SampledFrom([]time.Duration{-time.Minute, 0, time.Minute, 45 * time.Minute, math.MaxInt64}).Draw(t, "median")}
		}
	}
	return o
}

// TestForecastProperties: for any running rollout, history and
// observations, forged records and answers included, a forecast is never
// before now, moves only later as time passes, and is absent whenever
// neither an earlier rollout (an ended entry) nor a usable observation
// has a stage left; its basis counts each stage from one source.
func TestForecastProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawPolicy(t)
		observed := drawObservations(t)
		f := ForObserved(p, now, observed)
		if f.Left < 0 {
			t.Fatalf("%s: %v left", f.Sentence(now), f.Left)
		}
		for _, s := range f.Stages {
			if s.Left < 0 || s.Expected < 0 || s.Overdue < 0 {
				t.Fatalf("stage %+v: a negative duration", s)
			}
		}
		if f.Kind == Estimated {
			if f.Completion.Before(now) {
				t.Fatalf("completion %v before now %v (%s)", f.Completion, now, f.Sentence(now))
			}
		} else if !f.Completion.IsZero() {
			t.Fatalf("a %s forecast with a completion %v", f.Kind, f.Completion)
		}

		// Each known stage left from one source, counted in the basis.
		known := 0
		for _, s := range f.Stages {
			if s.Known {
				known++
			}
		}
		if f.Kind != NotRunning && len(f.Basis.FromSource)+len(f.Basis.FromRecord) != known {
			t.Fatalf("basis %+v for %d known stages", f.Basis, known)
		}

		// Overdue only with no time left, and said so, never "in 0s".
		if f.Overdue < 0 || f.Overdue > 0 && f.Left != 0 {
			t.Fatalf("overdue by %v with %v left", f.Overdue, f.Left)
		}
		if sentence, short := f.Sentence(now), f.Short(now); strings.Contains(sentence, "in 0s") || strings.Contains(short, "in 0s") ||
			f.Overdue > 0 && (!strings.Contains(sentence, "overdue by") || !strings.Contains(short, "overdue")) {
			t.Fatalf("overdue by %v, and the forecast says %q (%q)", f.Overdue, sentence, short)
		}

		// Absent when a stage left was done by no ended entry.
		for i := slices.IndexFunc(p.Spec.Stages, func(s v1alpha1.Stage) bool { return s.Name == p.Status.ActiveStage }); i < len(p.Spec.Stages); i++ {
			name := p.Spec.Stages[i].Name
			done := slices.ContainsFunc(p.Status.History, func(h v1alpha1.RevisionHistory) bool {
				return h.Ended() && slices.ContainsFunc(h.Stages, func(s v1alpha1.StageHistory) bool { return s.Name == name })
			})
			o, ok := observed.observed(name)
			done = done || ok && o.Count > 0 && o.Median >= 0
			if !done && f.Kind == Estimated {
				t.Fatalf("stage %s was done by no earlier rollout, and the forecast says %s", name, f.Sentence(now))
			}
		}

		// Monotone: later, the same rollout completes no sooner.
		later := now.Add(time.Duration(rapid.IntRange(1, 24*60).Draw(t, "later")) * time.Minute)
		g := ForObserved(p, later, observed)
		if g.Kind != f.Kind {
			t.Fatalf("the forecast is %s at %v and %s later", f.Kind, now, g.Kind)
		}
		if f.Kind == Estimated && g.Completion.Before(f.Completion) {
			t.Fatalf("the completion moves back from %v to %v as time passes from %v to %v", f.Completion, g.Completion, now, later)
		}
		if f.Kind == Gated && f.Gate.Known && later.Add(g.Left).Before(now.Add(f.Left)) {
			t.Fatalf("the gate is reached at %v, and at %v later", now.Add(f.Left), later.Add(g.Left))
		}
	})
}
