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

// Package forecast estimates when a running rollout of a
// StagedBindingPolicy completes, from the stage durations of the policy's
// earlier rollouts that status.history records (docs/proposals/forecast.md).
//
// It is pure: it reads the policy it is given and the time it is told,
// and no client, clock or file, so the plugin, the dashboard and tests
// compute the same forecast from the same object.
//
// The rules, in order (For):
//  1. a rollout that does not run has no forecast, and says why: not
//     started (waiting for its wave, a freeze or a change window, or
//     nothing placed yet), Completed, Aborted, Suspended (spec.suspend),
//     Blocked, held by a failed stage or its failure budget, or deleted;
//  2. each stage left (the active one and those after it, Skipped ones
//     apart) is expected to take the median of its durations in the
//     earlier rollouts (every ended entry of status.history, whatever its
//     outcome: a stage done is a stage done), each less the time the
//     rollout was suspended in it; a stage placed in batches scales each
//     duration by its batches now over its batches then; never less than
//     its soakDuration;
//     2a. given Observations (ForObserved: Prometheus's per-policy
//     histogram), a stage they have, with a completion and a median not
//     negative, takes their median instead of the record's (not scaled
//     by batches, which they do not record; still never less than its
//     soak), and the basis names which stages came from which source;
//  3. the active stage's time left is its expected duration less the time
//     it has been active (less its suspended time), floored at 0, and at
//     least what its soak has left; past its expected duration it is
//     overdue;
//  4. a stage left that has not started and needs an approval, or may
//     start only in its change windows, is a gate: nothing past it is
//     forecast, since no record says when a person approves or a window
//     opens; the forecast says when the rollout is expected to reach it;
//  5. a stage left that no earlier rollout did has no expected duration,
//     and then nothing past it is forecast: never a made-up number;
//  6. the completion is now plus every stage's time left, when every
//     stage left is known and none is a gate;
//  7. when no stage left (before the gate) has time left, the rollout is
//     overdue by the active stage's overdue: the forecast says when it
//     was expected and how long ago ("overdue by 5m"), never "in 0s".
package forecast

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// Kind is what a forecast can tell.
type Kind string

// The kinds of forecast.
const (
	// Estimated: the completion time is forecast.
	Estimated Kind = "Estimated"
	// Gated: a stage left waits for a person's approval or a change
	// window; the forecast tells when the rollout reaches it, at most.
	Gated Kind = "Gated"
	// NoHistory: the rollout runs, and no earlier rollout of the policy
	// did a stage it has left.
	NoHistory Kind = "NoHistory"
	// NotRunning: the rollout does not run (rule 1); Reason says why.
	NotRunning Kind = "NotRunning"
)

// Method is how the forecast combines the earlier rollouts' durations.
const Method = "median per stage"

// MaxStageDuration bounds every duration the forecast takes from a
// status or a spec: a stage record claiming more (a forged or corrupt
// status, extreme batch counts) counts as this long, so that the sum
// over 32 stages cannot overflow a time.Duration.
const MaxStageDuration = 5 * 365 * 24 * time.Hour

// Forecast is what For tells of a rollout.
type Forecast struct {
	// Kind is what the forecast tells.
	Kind Kind
	// Reason says, for NotRunning and NoHistory, why there is no forecast.
	Reason string
	// Completion is when the rollout is expected to complete (Estimated).
	Completion time.Time
	// Left is how long from now until Completion (Estimated), or until
	// the rollout reaches the gate (Gated, when GateKnown).
	Left time.Duration
	// Gate is the first stage left that waits for an approval or a window
	// (Gated).
	Gate *Gate
	// Stages are the stages left, in the spec's order, Skipped ones
	// apart.
	Stages []Stage
	// Basis is what the forecast learnt from.
	Basis Basis
	// Overdue is how long ago the rollout was expected to complete
	// (Estimated) or to reach its gate (Gated, when the gate is not yet
	// waiting), when Left is 0: every stage before it is past its expected
	// duration.
	Overdue time.Duration
}

// Gate is a stage the forecast cannot see past (rule 4).
type Gate struct {
	// Stage is the stage's name.
	Stage string
	// Why is "approval" or "change window".
	Why string
	// Waiting is true when the rollout is at the gate now (the stage
	// awaits its approval, or the status says it waits for its window).
	Waiting bool
	// Known is true when every stage before the gate is known, so that
	// Forecast.Left says when the rollout reaches it; a Gated forecast
	// always has it.
	Known bool
	// After is how long the stages from the gate on are expected to take
	// once it opens, when they are known and none after it is a gate.
	After time.Duration
	// AfterKnown says whether After is known.
	AfterKnown bool
}

// Stage is the forecast of one stage left.
type Stage struct {
	// Name is the stage's name.
	Name string
	// Known says whether an earlier rollout did the stage (rule 5).
	Known bool
	// Samples is how many earlier rollouts did it, or how many
	// completions of it Source counted.
	Samples int
	// Source names where Expected comes from when not status.history:
	// the Observations' source.
	Source string
	// Expected is its expected duration (rule 2).
	Expected time.Duration
	// Active says the stage is active now.
	Active bool
	// Elapsed is how long the active stage has been active, less its
	// suspended time.
	Elapsed time.Duration
	// Left is how long it is expected to take from now (rule 3).
	Left time.Duration
	// Overdue is how far the active stage is past its expected duration.
	Overdue time.Duration
}

// Basis is what a forecast learnt from.
type Basis struct {
	// Rollouts is how many earlier rollouts did a stage left that the
	// forecast took from status.history.
	Rollouts int
	// Method is how their durations are combined.
	Method string
	// Source names the Observations the forecast was given ("" for none),
	// and Window how far back they looked.
	Source string
	Window time.Duration
	// FromSource are the stages left taken from Source, with its counts;
	// FromRecord those taken from status.history.
	FromSource []StageCount
	FromRecord []string
}

// String is the basis as a sentence: "from 4 earlier rollouts; median per
// stage", "from Prometheus: median per stage over 30d (7 completions of
// test, 5 of prod)", or, from both, "from Prometheus: median per stage
// over 30d (5 completions of prod); test from 2 earlier rollouts".
func (b Basis) String() string {
	if len(b.FromSource) == 0 {
		s := "no earlier rollout"
		if b.Rollouts > 0 {
			s = fmt.Sprintf("from %s; %s", rollouts(b.Rollouts), b.Method)
		}
		if b.Source != "" {
			s += fmt.Sprintf("; %s has no completion of them over %s", b.Source, window(b.Window))
		}
		return s
	}
	counts := make([]string, 0, len(b.FromSource))
	for i, c := range b.FromSource {
		switch {
		case i > 0:
			counts = append(counts, fmt.Sprintf("%d of %s", c.Count, c.Stage))
		case c.Count == 1:
			counts = append(counts, "1 completion of "+c.Stage)
		default:
			counts = append(counts, fmt.Sprintf("%d completions of %s", c.Count, c.Stage))
		}
	}
	s := fmt.Sprintf("from %s: %s over %s (%s)", b.Source, b.Method, window(b.Window), strings.Join(counts, ", "))
	if len(b.FromRecord) > 0 {
		s += fmt.Sprintf("; %s from %s", strings.Join(b.FromRecord, ", "), rollouts(b.Rollouts))
	}
	return s
}

// rollouts counts earlier rollouts: "1 earlier rollout", "4 earlier rollouts".
func rollouts(n int) string {
	if n == 1 {
		return "1 earlier rollout"
	}
	return fmt.Sprintf("%d earlier rollouts", n)
}

// window writes a lookback: "30d" in whole days, else "1h30m".
func window(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return rollout.ShortDuration(d)
}

// Observed is what a source other than status.history knows of one
// stage's durations.
type Observed struct {
	// Median is the median of its durations.
	Median time.Duration
	// Count is how many completions of the stage it learnt from.
	Count int
}

// Observations are the stage durations of one policy that a source other
// than status.history observed: Prometheus's per-policy histogram, read
// by the plugin (docs/proposals/forecast.md). They are data: the caller
// queries, the forecast stays pure.
type Observations struct {
	// Source names it in the basis: "Prometheus".
	Source string
	// Window is how far back it looked.
	Window time.Duration
	// Stages are its durations, by stage name; a stage with no
	// completion, or a negative median, counts as absent.
	Stages map[string]Observed
}

// observed returns what o knows of stage, if it is usable.
func (o *Observations) observed(stage string) (Observed, bool) {
	if o == nil {
		return Observed{}, false
	}
	d, ok := o.Stages[stage]
	return d, ok && d.Count > 0 && d.Median >= 0
}

// StageCount is a stage and how many completions of it a source counted.
type StageCount struct {
	Stage string
	Count int
}

// For forecasts the rollout of p at now, from status.history.
func For(p *v1alpha1.StagedBindingPolicy, now time.Time) Forecast {
	return ForObserved(p, now, nil)
}

// ForObserved forecasts the rollout of p at now, from observed where it
// has a stage left and from status.history for the others (rule 2a).
// observed may be nil: then it is For.
func ForObserved(p *v1alpha1.StagedBindingPolicy, now time.Time, observed *Observations) Forecast {
	f := Forecast{Basis: Basis{Method: Method}}
	if observed != nil {
		f.Basis.Source, f.Basis.Window = observed.Source, observed.Window
	}
	if why := notRunning(p); why != "" {
		f.Kind, f.Reason = NotRunning, why
		return f
	}
	status := &p.Status
	start := slices.IndexFunc(p.Spec.Stages, func(s v1alpha1.Stage) bool { return s.Name == status.ActiveStage })
	if start < 0 {
		f.Kind, f.Reason = NotRunning, "the active stage is not in the spec"
		return f
	}
	earlier := endedRollouts(status.History)
	used := make([]bool, len(earlier))
	gate := -1
	for _, s := range p.Spec.Stages[start:] {
		record := status.StageNamed(s.Name)
		if record != nil && record.Phase == v1alpha1.StageSkipped {
			continue
		}
		st := stageForecast(&s, record, earlier, used, observed, now)
		switch {
		case st.Source != "":
			f.Basis.FromSource = append(f.Basis.FromSource, StageCount{Stage: st.Name, Count: st.Samples})
		case st.Known:
			f.Basis.FromRecord = append(f.Basis.FromRecord, st.Name)
		}
		if why := gateOf(&s, record, status, st.Active); why != "" {
			if gate < 0 {
				gate = len(f.Stages)
				f.Gate = &Gate{Stage: s.Name, Why: why, AfterKnown: true,
					Waiting: record != nil && record.Phase == v1alpha1.StageAwaitingApproval ||
						status.Window != nil && status.Window.Stage == s.Name}
			} else {
				f.Gate.AfterKnown = false
			}
		}
		f.Stages = append(f.Stages, st)
	}
	for _, u := range used {
		if u {
			f.Basis.Rollouts++
		}
	}
	before := f.Stages
	if f.Gate != nil {
		before = f.Stages[:gate]
		f.Gate.Known = allKnown(before)
		f.Gate.AfterKnown = f.Gate.AfterKnown && allKnown(f.Stages[gate:])
		if f.Gate.AfterKnown {
			f.Gate.After = sumLeft(f.Stages[gate:])
		}
	}
	switch {
	case !allKnown(before):
		f.Kind, f.Gate = NoHistory, nil
		var unknown []string
		for _, st := range before {
			if !st.Known {
				unknown = append(unknown, st.Name)
			}
		}
		nor := ""
		if observed != nil {
			nor = fmt.Sprintf(", nor has %s a completion of it over %s", observed.Source, window(observed.Window))
		}
		f.Reason = fmt.Sprintf("no earlier rollout of this policy finished stage %s%s; no forecast", strings.Join(unknown, ", "), nor)
		if len(earlier) == 0 {
			f.Reason = "no earlier rollout of this policy finished its stages" + strings.Replace(nor, " of it ", " of them ", 1) + "; no forecast"
			if p.Spec.Revision == nil {
				f.Reason += " (status.history records the rollouts of a policy with spec.revision only)"
			}
		}
	case f.Gate != nil:
		f.Kind, f.Left = Gated, sumLeft(before)
		if f.Left == 0 && !f.Gate.Waiting {
			f.Overdue = sumOverdue(before)
		}
	default:
		f.Kind, f.Left = Estimated, sumLeft(f.Stages)
		f.Completion = now.Add(f.Left)
		if f.Left == 0 {
			f.Overdue = sumOverdue(f.Stages)
		}
	}
	return f
}

// sumOverdue is how far the stages, none with time left, are past their
// expected durations: the active one's overdue (rule 3).
func sumOverdue(stages []Stage) time.Duration {
	var sum time.Duration
	for _, s := range stages {
		sum += s.Overdue
	}
	return min(sum, MaxStageDuration)
}

// allKnown reports whether every stage of stages is known.
func allKnown(stages []Stage) bool {
	return !slices.ContainsFunc(stages, func(s Stage) bool { return !s.Known })
}

// notRunning says why the rollout of p does not run (rule 1), or "".
func notRunning(p *v1alpha1.StagedBindingPolicy) string {
	status := &p.Status
	condition := func(t string) bool { return meta.IsStatusConditionTrue(status.Conditions, t) }
	progressing := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionProgressing)
	switch {
	case p.DeletionTimestamp != nil:
		return "the policy is being deleted"
	case status.Phase == v1alpha1.RolloutCompleted:
		return "the rollout completed"
	case status.Phase == v1alpha1.RolloutAborted:
		return "the rollout is aborted"
	case p.Spec.Suspend || status.Phase == v1alpha1.RolloutSuspended:
		return "the rollout is suspended: no forecast until it resumes"
	case status.Phase == v1alpha1.RolloutBlocked:
		return "the rollout is blocked"
	case status.Failure != nil:
		return fmt.Sprintf("a failure of stage %s holds the rollout", status.Failure.Stage)
	case progressing != nil && progressing.Reason == v1alpha1.ReasonFailureBudgetExceeded:
		return "the active stage's failure budget holds the rollout"
	case status.ActiveStage == "" && condition(v1alpha1.ConditionWaitingForWave):
		return "the rollout waits for its wave: no forecast until it starts"
	case status.ActiveStage == "" && condition(v1alpha1.ConditionFrozen):
		return "a freeze holds the rollout's start: no forecast until it starts"
	case status.ActiveStage == "" && status.Window != nil:
		return fmt.Sprintf("the rollout waits for stage %s's change window: no forecast until it starts", status.Window.Stage)
	case status.ActiveStage == "":
		return "the rollout has not started"
	}
	return ""
}

// endedRollouts are the entries of history whose rollout ended: the
// earlier rollouts. The newest entry, while Progressing, is the rollout
// being forecast.
func endedRollouts(history []v1alpha1.RevisionHistory) []v1alpha1.RevisionHistory {
	out := make([]v1alpha1.RevisionHistory, 0, len(history))
	for _, h := range history {
		if h.Ended() {
			out = append(out, h)
		}
	}
	return out
}

// stageForecast is the forecast of stage s, whose record is record
// (nil before the rollout reached it), from the earlier rollouts; it
// marks in used the rollouts it learnt from (rules 2, 3 and 5).
func stageForecast(s *v1alpha1.Stage, record *v1alpha1.StageStatus, earlier []v1alpha1.RevisionHistory, used []bool,
	observed *Observations, now time.Time) Stage {
	st := Stage{Name: s.Name}
	if o, ok := observed.observed(s.Name); ok {
		st.Source, st.Samples, st.Known = observed.Source, o.Count, true
		st.Expected = min(o.Median, MaxStageDuration)
		if s.SoakDuration != nil {
			st.Expected = min(max(st.Expected, s.SoakDuration.Duration), MaxStageDuration)
		}
		return activeLeft(st, s, record, now)
	}
	batches := int32(0)
	if record != nil && record.Clusters != nil && (record.Phase == v1alpha1.StageActive || record.Phase == v1alpha1.StageSucceeded) {
		batches = record.Clusters.Batches
	}
	var durations []time.Duration
	for i := range earlier {
		for j := range earlier[i].Stages {
			h := &earlier[i].Stages[j]
			if h.Name != s.Name {
				continue
			}
			d := min(h.Duration(), MaxStageDuration)
			if batches > 0 && h.Batches > 0 && batches != h.Batches {
				d = time.Duration(min(float64(d)/float64(h.Batches)*float64(batches), float64(MaxStageDuration)))
			}
			durations = append(durations, d)
			used[i] = true
			break
		}
	}
	st.Samples = len(durations)
	if st.Known = len(durations) > 0; st.Known {
		st.Expected = median(durations)
		if s.SoakDuration != nil {
			st.Expected = min(max(st.Expected, s.SoakDuration.Duration), MaxStageDuration)
		}
	}
	return activeLeft(st, s, record, now)
}

// activeLeft fills in how long stage s, expected to take st.Expected, has
// left from now, from its record (rule 3).
func activeLeft(st Stage, s *v1alpha1.Stage, record *v1alpha1.StageStatus, now time.Time) Stage {
	st.Left = st.Expected
	if record == nil {
		return st
	}
	switch record.Phase {
	case v1alpha1.StageSucceeded:
		st.Left = 0
	case v1alpha1.StageActive:
		st.Active = true
		if record.StartTime != nil {
			st.Elapsed = now.Sub(record.StartTime.Time)
			if record.SuspendedDuration != nil {
				st.Elapsed -= record.SuspendedDuration.Duration
			}
			st.Elapsed = max(st.Elapsed, 0)
		}
		st.Left = max(st.Expected-st.Elapsed, 0)
		st.Overdue = max(st.Elapsed-st.Expected, 0)
		if !st.Known {
			st.Overdue = 0
		}
		if s.SoakDuration != nil && record.ConditionMetTime != nil {
			st.Left = max(st.Left, min(record.ConditionMetTime.Add(s.SoakDuration.Duration).Sub(now), MaxStageDuration))
		}
	}
	return st
}

// gateOf says what gate stage s is (rule 4): "approval", "change window"
// or "" for none. A stage active or done has passed its gates, but for
// the window its next batch waits for.
func gateOf(s *v1alpha1.Stage, record *v1alpha1.StageStatus, status *v1alpha1.StagedBindingPolicyStatus, active bool) string {
	started := record != nil && (active || record.Phase == v1alpha1.StageSucceeded)
	switch {
	case status.Window != nil && status.Window.Stage == s.Name:
		return "change window"
	case started:
		return ""
	case s.Approval == v1alpha1.ApprovalRequired:
		return "approval"
	case len(s.Windows) > 0:
		return "change window"
	}
	return ""
}

// median is the middle of durations, or the mean of the two middle ones.
func median(durations []time.Duration) time.Duration {
	sorted := slices.Clone(durations)
	slices.Sort(sorted)
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return sorted[n/2-1] + (sorted[n/2]-sorted[n/2-1])/2
}

// sumLeft is the time every stage of stages has left.
func sumLeft(stages []Stage) time.Duration {
	var sum time.Duration
	for _, s := range stages {
		sum += s.Left
	}
	return sum
}

// Sentence is the forecast in words, times in UTC: "completes ~14:05 UTC,
// in 32m", "reaches prod, which needs an approval, ~14:05 UTC, in 32m; no
// forecast past it", or why there is none.
func (f *Forecast) Sentence(now time.Time) string {
	switch f.Kind {
	case Estimated:
		if f.Left == 0 {
			return "expected by " + overdue(f.Overdue, now)
		}
		return "completes " + At(f.Completion, now)
	case Gated:
		g := f.Gate
		what := "an approval"
		if g.Why != "approval" {
			what = "its change window"
		}
		if g.Waiting {
			if g.AfterKnown {
				return fmt.Sprintf("stage %s waits for %s; the rollout completes about %s after it starts", g.Stage, what, rollout.ShortDuration(g.After))
			}
			return fmt.Sprintf("stage %s waits for %s; no forecast past it", g.Stage, what)
		}
		reaches := fmt.Sprintf("reaches stage %s, which waits for %s, %s", g.Stage, what, At(now.Add(f.Left), now))
		if f.Left == 0 {
			reaches = fmt.Sprintf("reaches stage %s, which waits for %s, about now", g.Stage, what)
			if f.Overdue > 0 {
				reaches = fmt.Sprintf("should have reached stage %s, which waits for %s, by ~%s (overdue by %s)", g.Stage, what,
					clock(now.Add(-f.Overdue), now), span(f.Overdue))
			}
		}
		if g.AfterKnown {
			return fmt.Sprintf("%s; completes about %s after it starts", reaches, rollout.ShortDuration(g.After))
		}
		return reaches + "; no forecast past it"
	}
	return f.Reason
}

// Short is the forecast in a table cell: "~14:05 UTC (in 32m)"; for a
// gate, "prod's approval ~13:20 UTC" when the rollout reaches it, or "~50m
// after test's approval" while it waits there; else "-".
func (f *Forecast) Short(now time.Time) string {
	switch f.Kind {
	case Estimated:
		if f.Left == 0 {
			return overdueShort(f.Overdue)
		}
		return "~" + clock(f.Completion, now) + " (in " + span(f.Completion.Sub(now)) + ")"
	case Gated:
		g := f.Gate
		what := g.Stage + "'s approval"
		if g.Why != "approval" {
			what = g.Stage + "'s window"
		}
		switch {
		case g.Waiting && g.AfterKnown:
			return "~" + rollout.ShortDuration(g.After) + " after " + what
		case !g.Waiting && f.Left == 0:
			return what + ", " + overdueShort(f.Overdue)
		case !g.Waiting:
			return what + " ~" + clock(now.Add(f.Left), now)
		}
	}
	return "-"
}

// StageLine is one stage of the forecast in words: "test: ~12m left of
// 20m (active 8m)", "test: overdue by 5m (20m expected)", "prod: ~20m",
// "prod: no earlier rollout did it".
func (s *Stage) StageLine() string {
	switch {
	case !s.Known:
		return s.Name + ": no earlier rollout did it"
	case s.Active && s.Overdue > 0:
		line := fmt.Sprintf("%s: overdue by %s (%s expected, active %s)", s.Name, rollout.ShortDuration(s.Overdue),
			rollout.ShortDuration(s.Expected), rollout.ShortDuration(s.Elapsed))
		if s.Left > 0 {
			line += fmt.Sprintf("; its soak has %s left", rollout.ShortDuration(s.Left))
		}
		return line
	case s.Active:
		return fmt.Sprintf("%s: ~%s left of %s (active %s)", s.Name, rollout.ShortDuration(s.Left),
			rollout.ShortDuration(s.Expected), rollout.ShortDuration(s.Elapsed))
	}
	return fmt.Sprintf("%s: ~%s", s.Name, rollout.ShortDuration(s.Expected))
}

// overdue writes when something expected overdue ago was expected, and
// how long ago: "~13:40 UTC, overdue by 5m", or "~14:05 UTC, due now".
func overdue(overdue time.Duration, now time.Time) string {
	if overdue <= 0 {
		return "~" + clock(now, now) + ", due now"
	}
	return "~" + clock(now.Add(-overdue), now) + ", overdue by " + span(overdue)
}

// overdueShort is overdue in a table cell: "overdue 5m", or "due now".
func overdueShort(overdue time.Duration) string {
	if overdue <= 0 {
		return "due now"
	}
	return "overdue " + span(overdue)
}

// At writes t as "~14:05 UTC, in 32m" (with its date when it is 12 hours
// or more from now).
func At(t, now time.Time) string {
	return "~" + clock(t, now) + ", in " + span(t.Sub(now))
}

// span writes a time left or overdue; under a second it says 1s, since a
// time that is not zero must not read "in 0s".
func span(d time.Duration) string {
	if d > 0 && d < time.Second {
		d = time.Second
	}
	return rollout.ShortDuration(d)
}

// clock writes t in UTC to the minute, with its date when it is 12 hours
// or more from now (nearer, the "in 32m" beside it tells the day).
func clock(t, now time.Time) string {
	if d := t.Sub(now); d < 12*time.Hour && d > -12*time.Hour {
		return t.UTC().Format("15:04 UTC")
	}
	return t.UTC().Format("Jan 2 15:04 UTC")
}
