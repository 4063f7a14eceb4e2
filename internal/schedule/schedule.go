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

// Package schedule is the one calendar engine of the stager: a cron
// schedule read in an IANA time zone, each tick of which opens a period
// of a fixed duration, as change windows (internal/rollout) and freezes
// (internal/freeze) are. It refuses the schedules and zones no policy or
// freeze may name, and says whether a period is open at a time, when the
// next one opens, and until when periods that follow each other without
// a gap last, in bounded time. It is pure and takes plain strings,
// durations and times: its callers check their API's bounds and word the
// errors for their users.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	// The zones are the binary's own, whatever the image has.
	_ "time/tzdata"
)

// MaxZoneName is the longest time-zone name looked up, the CRDs' bound:
// no IANA name is half as long, and a longer one is not read for.
const MaxZoneName = 64

// maxZones is the most time zones cached; the IANA database has about 600.
const maxZones = 1024

var (
	// ErrEvery is a schedule of "@every": a delay from whenever the
	// stager started, not a time of day.
	ErrEvery = errors.New("@every is not a time of day")
	// ErrZoneInSchedule is a schedule that names its zone ("TZ=",
	// "CRON_TZ="): the zone is given apart, and checked.
	ErrZoneInSchedule = errors.New("a time zone in the schedule")
	// ErrLocalZone is the zone "Local", the stager's own, which no
	// author of a policy or freeze can know.
	ErrLocalZone = errors.New("time zone Local is the stager's own: name an IANA time zone")
	// ErrNotCalendar is a schedule the parser reads as other than
	// calendar fields.
	ErrNotCalendar = errors.New("not a calendar schedule")
)

// parser reads a standard five-field cron schedule or a descriptor.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// zones caches the time zones loaded: time.LoadLocation reads a file (or
// the embedded database) each call. It is bounded: past maxZones names a
// zone is loaded each time instead.
var zones sync.Map

// zoneCount counts the names in zones.
var zoneCount struct {
	sync.Mutex
	n int
}

// Zone returns the time zone of an IANA name, UTC for none. Local is
// ErrLocalZone; a name longer than MaxZoneName, with "..", starting with
// a slash or not in the zone databases is unknown, and is not looked up
// (time.LoadLocation refuses the last two too, so no file outside the
// zone databases is read).
func Zone(name string) (*time.Location, error) {
	switch {
	case name == "" || name == "UTC":
		return time.UTC, nil
	case name == "Local":
		return nil, ErrLocalZone
	case len(name) > MaxZoneName || strings.Contains(name, "..") || strings.HasPrefix(name, "/"):
		return nil, fmt.Errorf("unknown time zone %q", name)
	}
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q", name)
	}
	zoneCount.Lock()
	if zoneCount.n < maxZones {
		if _, loaded := zones.LoadOrStore(name, loc); !loaded {
			zoneCount.n++
		}
	}
	zoneCount.Unlock()
	return loc, nil
}

// Guard refuses, in a schedule with its spaces trimmed, what the parser
// would read but no schedule of the stager may say: ErrEvery, and
// ErrZoneInSchedule for a "TZ=" anywhere (no valid field has one).
func Guard(text string) error {
	switch {
	case strings.HasPrefix(text, "@every"):
		return ErrEvery
	case strings.Contains(text, "TZ="):
		return ErrZoneInSchedule
	}
	return nil
}

// Schedule is a cron schedule in its time zone.
type Schedule struct {
	// spec is the schedule's fields on a wall clock, read in UTC, which
	// has no changes of offset for cron's search to trip on.
	spec *cron.SpecSchedule
	loc  *time.Location
}

// Parse reads a schedule, its spaces trimmed, in loc: Guard's errors,
// the parser's (unwrapped, as users read them), or ErrNotCalendar.
func Parse(text string, loc *time.Location) (*Schedule, error) {
	text = strings.TrimSpace(text)
	if err := Guard(text); err != nil {
		return nil, err
	}
	s, err := parser.Parse(text)
	if err != nil {
		return nil, err
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, ErrNotCalendar
	}
	spec.Location = time.UTC
	return &Schedule{spec: spec, loc: loc}, nil
}

// Location is the schedule's time zone.
func (s *Schedule) Location() *time.Location {
	return s.loc
}

// Next is the schedule's first tick after t, in t's location: the first
// instant whose wall clock in the schedule's zone matches its fields, a
// wall-clock time the clock skips never, one it goes over twice twice.
// It is zero when the schedule ticks in none of the years to the end of
// the fifth after t's, past which the search gives up (so a schedule
// that never ticks costs a bounded walk).
//
// cron's own Next walks the zone's wall clock an hour at a time and
// skips the ticks of an hour that starts inside a change of offset not
// on the hour (Pacific/Chatham's 02:45, a change of half an hour at
// Australia/Lord_Howe): TestAgainstMinuteModel found it. So the search
// goes over the spans of one offset each (time.Time.ZoneBounds), in each
// of which the wall clock is the instant shifted by the offset, and
// runs cron's search on that shifted, change-free clock.
func (s *Schedule) Next(t time.Time) time.Time {
	limit := time.Date(t.In(s.loc).Year()+6, time.January, 1, 0, 0, 0, 0, s.loc)
	from := t // the search is for a tick after from, or at it once past t
	for !from.After(limit) {
		local := from.In(s.loc)
		_, seconds := local.Zone()
		offset := time.Duration(seconds) * time.Second
		_, end := local.ZoneBounds()
		wall := from.UTC().Add(offset)
		if !from.Equal(t) {
			wall = wall.Add(-time.Nanosecond) // cron's Next is after its time: from is a span's start, a candidate
		}
		n := s.spec.Next(wall)
		if n.IsZero() {
			return time.Time{}
		}
		if tick := n.Add(-offset); end.IsZero() || tick.Before(end) {
			if tick.After(limit) {
				return time.Time{}
			}
			return tick.In(t.Location())
		}
		from = end
	}
	return time.Time{}
}

// At says whether a period of d from one of the schedule's ticks is open
// at t (it opens at its tick and is closed at its end), else when the
// next opens, zero for none in five years. The period open last before
// t is the first tick after t-d: one call of Next.
func (s *Schedule) At(t time.Time, d time.Duration) (open bool, next time.Time) {
	first := s.Next(t.Add(-d))
	if first.IsZero() || first.After(t) {
		return false, first
	}
	return true, time.Time{}
}

// End reports whether a period of d is open at t and, if so, until when
// periods of d that open before the one before closes keep it open, in
// the schedule's time zone. It follows at most maxJumps of them, each to
// the latest tick before the end so far, and none once the end is more
// than ahead past t: past those bounds the end it names is the earliest
// the real one may be.
func (s *Schedule) End(t time.Time, d time.Duration, maxJumps int, ahead time.Duration) (time.Time, bool) {
	first := s.Next(t.Add(-d))
	if first.IsZero() || first.After(t) {
		return time.Time{}, false
	}
	last := s.lastTick(first, t)
	end := last.Add(d)
	for range maxJumps {
		if end.Sub(t) > ahead {
			break
		}
		n := s.Next(last)
		if n.IsZero() || n.After(end) {
			break
		}
		last = s.lastTick(n, end)
		end = last.Add(d)
	}
	return end.In(s.loc), true
}

// lastTick is the latest tick at or before hi, given from, a tick at or
// before hi: a bisection, as cron only looks ahead.
func (s *Schedule) lastTick(from, hi time.Time) time.Time {
	lo := from // a tick; none in (hi, the original hi]
	for range 64 {
		n := s.Next(lo)
		if n.IsZero() || n.After(hi) {
			return lo
		}
		lo = n
		mid := lo.Add(hi.Sub(lo) / 2)
		if m := s.Next(mid); !m.IsZero() && !m.After(hi) {
			lo = m
		} else {
			hi = mid
		}
	}
	return lo
}
