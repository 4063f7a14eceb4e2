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

// Package freeze decides, from the hosting cluster's RolloutFreezes, which
// stages of a policy of a space may not start at a given time
// (docs/proposals/freezes.md). It is pure: the reconciler reads the
// freezes and puts Decide's answer in Plan's snapshot.
package freeze

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/schedule"
)

// Reasons of a Hold, also the reasons of the policy's Frozen condition.
const (
	// ReasonFreezeActive: a freeze's range or schedule is on.
	ReasonFreezeActive = "FreezeActive"
	// ReasonFreezeInvalid: a freeze the stager cannot read (an invalid
	// cron schedule, an unknown time zone) holds what it selects.
	ReasonFreezeInvalid = "FreezeInvalid"
	// ReasonFreezesUnreadable: the stager cannot read the freezes, so any
	// might be on; set by the reconciler, not by Decide.
	ReasonFreezesUnreadable = "FreezesUnreadable"
)

// maxChain bounds how many back-to-back periods of one schedule Decide
// follows to find when a freeze ends ("* * * * *" for an hour is 60 of
// them, or one every minute for a year): past it the end it names is the
// earliest it may be, and the run due then decides again.
const maxChain = 16

// maxAhead is how far past now Decide follows periods into each other:
// a freeze on for longer than that names an end this far at least, which
// the run due then takes further. Times years ahead cost most to convert
// between time zones, and no one waits for them.
const maxAhead = 32 * 24 * time.Hour

// maxRounds bounds how often Decide goes over a freeze's ranges and
// schedules to follow one period into another: past it, too, the end it
// names is the earliest it may be.
const maxRounds = 4

// Hold is one freeze that holds the starts of some stages of a policy.
type Hold struct {
	// Freeze is the RolloutFreeze's name; empty when the freezes cannot be read.
	Freeze string
	// Reason is ReasonFreezeActive, ReasonFreezeInvalid or ReasonFreezesUnreadable.
	Reason string
	// Message is the freeze's spec.reason, or what is wrong with it.
	Message string
	// Until is when the freeze ends, as far as it is known, in the time zone
	// of the schedule that ends last (UTC for a range); zero while it holds
	// until it is changed (an invalid freeze, unreadable freezes).
	Until time.Time
	// Stages are the stages it holds; nil holds every stage.
	Stages []string
}

// Holds reports whether h holds the start of stage.
func (h *Hold) Holds(stage string) bool {
	return h.Stages == nil || slices.Contains(h.Stages, stage)
}

// Describe is the hold in words, for the Frozen condition and Event: the
// freeze, when it ends, in UTC and in its schedule's time zone, and why.
func (h *Hold) Describe() string {
	var b strings.Builder
	switch h.Reason {
	case ReasonFreezesUnreadable:
		b.WriteString("frozen: ")
	case ReasonFreezeInvalid:
		fmt.Fprintf(&b, "frozen by %s, which is invalid, until the platform team fixes or deletes it: ", h.Freeze)
	default:
		fmt.Fprintf(&b, "frozen by %s until %s", h.Freeze, h.Until.UTC().Format("2006-01-02 15:04 MST"))
		if loc := h.Until.Location(); loc != time.UTC && loc.String() != "UTC" {
			fmt.Fprintf(&b, " (%s %s)", h.Until.Format("2006-01-02 15:04 MST"), loc)
		}
		if h.Message == "" {
			return b.String()
		}
		b.WriteString(": ")
	}
	b.WriteString(h.Message)
	return b.String()
}

// Decision is what the freezes say of one policy of one space at one time.
type Decision struct {
	// Holds are the freezes on that select the space and policy, by name.
	Holds []Hold
	// RecheckAfter, when positive, is when the decision next changes with
	// time alone: the earliest end of a hold, or start of a freeze that
	// selects the policy.
	RecheckAfter time.Duration
}

// For returns the hold that keeps stage from starting, nil when none
// does: of several, the one that ends last (one without an end first),
// as that is when the stage may start.
func (d *Decision) For(stage string) *Hold {
	if d == nil {
		return nil
	}
	var last *Hold
	for i := range d.Holds {
		h := &d.Holds[i]
		if !h.Holds(stage) {
			continue
		}
		if last == nil || !last.Until.IsZero() && (h.Until.IsZero() || h.Until.After(last.Until)) {
			last = h
		}
	}
	return last
}

// Selects reports whether f applies to policy of space: empty lists select all.
func Selects(f *hostingv1alpha1.RolloutFreeze, space, policy string) bool {
	return (len(f.Spec.Spaces) == 0 || slices.Contains(f.Spec.Spaces, space)) &&
		(len(f.Spec.Policies) == 0 || slices.Contains(f.Spec.Policies, policy))
}

// Decide is the decision of freezes on policy of space at now: every
// freeze that selects them and is on at now holds the stages it names,
// until its end; one whose schedule or time zone cannot be read holds
// them until it is fixed (fail closed: a freeze is there to stop
// changes). Its cost is bounded by the freezes' count and their
// bounded ranges, schedules and chains (maxChain).
func Decide(freezes []hostingv1alpha1.RolloutFreeze, space, policy string, now time.Time) Decision {
	var d Decision
	recheck := func(at time.Time) {
		if in := at.Sub(now); in > 0 && (d.RecheckAfter == 0 || in < d.RecheckAfter) {
			d.RecheckAfter = in
		}
	}
	for i := range freezes {
		f := &freezes[i]
		if !Selects(f, space, policy) {
			continue
		}
		on, until, next, err := state(&f.Spec, now)
		stages := f.Spec.Stages
		if len(stages) == 0 {
			stages = nil
		}
		switch {
		case err != nil:
			d.Holds = append(d.Holds, Hold{Freeze: f.Name, Reason: ReasonFreezeInvalid, Message: err.Error(), Stages: stages})
		case on:
			d.Holds = append(d.Holds, Hold{Freeze: f.Name, Reason: ReasonFreezeActive, Message: f.Spec.Reason, Until: until, Stages: stages})
			recheck(until)
		case !next.IsZero():
			recheck(next)
		}
	}
	slices.SortFunc(d.Holds, func(a, b Hold) int { return cmp.Compare(a.Freeze, b.Freeze) })
	return d
}

// state says whether spec is on at now and, if so, until when (the end
// of its period that ends last, following periods that start before the
// one before ends); if not, when it next starts (zero: never, as far as
// it can tell). An error says the spec cannot be read.
func state(spec *hostingv1alpha1.RolloutFreezeSpec, now time.Time) (on bool, until, next time.Time, err error) {
	schedules := make([]*schedule.Schedule, len(spec.Schedules))
	for i := range spec.Schedules {
		if schedules[i], err = parse(&spec.Schedules[i]); err != nil {
			return false, time.Time{}, time.Time{}, fmt.Errorf("schedule %d (%q): %w", i+1, spec.Schedules[i].Schedule, err)
		}
	}
	// The periods on at now, and those that start before one on ends,
	// extend the freeze: follow them until none does.
	for changed, rounds := true, 0; changed && rounds < maxRounds && (!on || until.Sub(now) <= maxAhead); rounds++ {
		changed = false
		at := now
		if on {
			at = until
		}
		for _, r := range spec.Ranges {
			start, end := r.Start.Time, r.End.Time
			if !start.After(at) && end.After(at) && (!on || end.After(until)) {
				on, until, changed = true, end.UTC(), true
			}
		}
		for i, s := range schedules {
			d := spec.Schedules[i].Duration.Duration
			if end, ok := s.End(at, d, maxChain, maxAhead); ok && (!on || end.After(until)) {
				on, until, changed = true, end, true
			}
		}
	}
	if on {
		return true, until, time.Time{}, nil
	}
	for _, r := range spec.Ranges {
		if r.Start.After(now) && (next.IsZero() || r.Start.Time.Before(next)) {
			next = r.Start.Time
		}
	}
	for _, s := range schedules {
		if n := s.Next(now); !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	return false, time.Time{}, next, nil
}

// parse reads a schedule in its time zone. The CRD refuses what the
// parser would read otherwise (@every, a zone in the schedule); an object
// written before that, or around it, is refused here.
func parse(fs *hostingv1alpha1.FreezeSchedule) (*schedule.Schedule, error) {
	text := strings.TrimSpace(fs.Schedule)
	if schedule.Guard(text) != nil {
		return nil, fmt.Errorf("@every and a time zone in the schedule are not allowed: set timeZone")
	}
	if fs.Duration.Duration < time.Minute {
		return nil, fmt.Errorf("duration %s is shorter than a minute", fs.Duration.Duration)
	}
	loc, err := schedule.Zone(fs.TimeZone)
	if err != nil {
		return nil, err
	}
	s, err := schedule.Parse(text, loc)
	if err != nil {
		return nil, fmt.Errorf("invalid cron schedule: %w", err)
	}
	return s, nil
}
