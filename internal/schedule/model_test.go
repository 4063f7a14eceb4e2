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

package schedule

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// The engine against a brute-force model: every minute of a few days is
// a tick or not by the schedule's fields read on the wall clock of its
// zone, a minute is covered when a tick at most the duration before it
// opened a period, and At, Next and End must say what those minutes say.

// modelHorizon is how far past now the model looks.
const modelHorizon = 4 * 24 * time.Hour

// modelZones are zones with the calendar's odd corners: a change of half
// an hour (Lord_Howe), at midnight (Havana, Santiago), of offsets not in
// whole hours (Kolkata, Kathmandu, Chatham), in either hemisphere.
var modelZones = []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Havana", "America/Santiago",
	"Asia/Kolkata", "Asia/Kathmandu", "Pacific/Chatham", "Pacific/Apia", "Europe/London"}

// changes are, by zone, the days of 2026 and 2027 at whose start the
// zone's offset differs from the day before's.
var changes = func() map[string][]time.Time {
	m := map[string][]time.Time{}
	for _, name := range modelZones {
		loc, err := Zone(name)
		if err != nil {
			panic(err)
		}
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		_, before := start.In(loc).Zone()
		for day := start; day.Year() < 2028; day = day.Add(24 * time.Hour) {
			if _, off := day.In(loc).Zone(); off != before {
				m[name] = append(m[name], day)
				before = off
			}
		}
	}
	return m
}()

// genField draws a cron field over lo..hi: a star, a value, a range, a
// list, or a step of either.
func genField(t *rapid.T, name string, lo, hi int) string {
	v := func(label string) int { return rapid.IntRange(lo, hi).Draw(t, name+label) }
	switch rapid.IntRange(0, 6).Draw(t, name) {
	case 0:
		return "*"
	case 1:
		return fmt.Sprintf("*/%d", rapid.IntRange(1, hi-lo+1).Draw(t, name+"Step"))
	case 2:
		return fmt.Sprint(v("Value"))
	case 3:
		a, b := v("From"), v("To")
		return fmt.Sprintf("%d-%d", min(a, b), max(a, b))
	case 4:
		a, b := v("From"), v("To")
		return fmt.Sprintf("%d-%d/%d", min(a, b), max(a, b), rapid.IntRange(1, hi-lo+1).Draw(t, name+"Step"))
	default:
		n := rapid.IntRange(2, 4).Draw(t, name+"Count")
		values := make([]string, n)
		for i := range values {
			values[i] = fmt.Sprint(v(fmt.Sprint("Item", i)))
		}
		return strings.Join(values, ",")
	}
}

// genSpec draws a schedule: five fields, the day ones mostly stars so
// that it ticks within the model's days, or a descriptor.
func genSpec(t *rapid.T) string {
	if rapid.IntRange(0, 9).Draw(t, "descriptor") == 0 {
		return rapid.SampledFrom([]string{"@hourly", "@daily", "@midnight", "@weekly", "@monthly"}).Draw(t, "text")
	}
	day := func(name string, lo, hi int) string {
		if rapid.IntRange(0, 3).Draw(t, name+"Star") > 0 {
			return rapid.SampledFrom([]string{"*", "?"}).Draw(t, name+"Any")
		}
		return genField(t, name, lo, hi)
	}
	return strings.Join([]string{genField(t, "minute", 0, 59), genField(t, "hour", 0, 23), day("dom", 1, 31), day("month", 1, 12),
		day("dow", 0, 6)}, " ")
}

// ticks reports whether s ticks at the minute m, by the wall clock of its
// zone: standard cron, where the day matches on both its fields if one
// of them is a star, else on either.
func ticks(s *Schedule, m time.Time) bool {
	const star = 1 << 63
	spec, lt := s.spec, m.In(s.loc)
	if lt.Second() != 0 || spec.Minute&(1<<lt.Minute()) == 0 || spec.Hour&(1<<lt.Hour()) == 0 || spec.Month&(1<<int(lt.Month())) == 0 {
		return false
	}
	dom, dow := spec.Dom&(1<<lt.Day()) != 0, spec.Dow&(1<<int(lt.Weekday())) != 0
	if spec.Dom&star != 0 || spec.Dow&star != 0 {
		return dom && dow
	}
	return dom || dow
}

// minuteModel is the schedule's ticks, minute by minute, from d before
// now to modelHorizon past it.
type minuteModel struct {
	first time.Time // the first minute
	d     int       // the duration, in minutes
	ticks []int     // ticks[i]: the ticks in minutes first .. first+i-1
}

func newMinuteModel(s *Schedule, now time.Time, d time.Duration) *minuteModel {
	m := &minuteModel{first: now.Truncate(time.Minute).Add(-d), d: int(d / time.Minute)}
	n := m.d + int(modelHorizon/time.Minute) + 1
	m.ticks = make([]int, n+1)
	for i := range n {
		m.ticks[i+1] = m.ticks[i]
		if ticks(s, m.first.Add(time.Duration(i)*time.Minute)) {
			m.ticks[i+1]++
		}
	}
	return m
}

// last is the last minute the model knows.
func (m *minuteModel) last() time.Time {
	return m.first.Add(time.Duration(len(m.ticks)-2) * time.Minute)
}

// index is the minute x's place in the model.
func (m *minuteModel) index(x time.Time) int {
	return int(x.Sub(m.first) / time.Minute)
}

// tick reports whether the minute x is a tick.
func (m *minuteModel) tick(x time.Time) bool {
	i := m.index(x)
	return m.ticks[i+1] > m.ticks[i]
}

// covered reports whether a period is open in the whole minute x: one
// opened at a tick in (x-d, x].
func (m *minuteModel) covered(x time.Time) bool {
	i := m.index(x)
	return m.ticks[i+1] > m.ticks[max(i+1-m.d, 0)]
}

// TestAgainstMinuteModel checks At, Next and End against the minute
// model over drawn schedules, durations of a minute to a day, zones, and
// times of 2026 and 2027, half of them around a change of the zone's
// offset: open exactly when a minute's period covers now, next at the
// first tick after now, and the end of back-to-back periods at the first
// minute no period covers (the earliest it may be, within the freezes'
// bounds on the search).
func TestAgainstMinuteModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		zone := rapid.SampledFrom(modelZones).Draw(t, "zone")
		loc, err := Zone(zone)
		if err != nil {
			t.Fatal(err)
		}
		text := genSpec(t)
		s, err := Parse(text, loc)
		if err != nil {
			t.Skipf("%q: %v", text, err) // a range the parser refuses, such as 9-3/2
		}
		d := time.Duration(rapid.IntRange(1, 24*60).Draw(t, "minutes")) * time.Minute
		var now time.Time
		if cs := changes[zone]; len(cs) > 0 && rapid.Bool().Draw(t, "nearChange") {
			now = rapid.SampledFrom(cs).Draw(t, "change").Add(time.Duration(rapid.Int64Range(-int64(2*24*time.Hour), int64(24*time.Hour)).Draw(t, "offset")))
		} else {
			now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rapid.Int64Range(0, int64(2*365*24*time.Hour)).Draw(t, "at")))
		}
		now = now.Add(time.Duration(rapid.IntRange(0, 59).Draw(t, "second")) * time.Second)
		m := newMinuteModel(s, now, d)
		what := fmt.Sprintf("%q in %s for %s at %s (%s)", text, zone, d, now, now.In(loc))

		// Next: the first tick after now.
		wantNext := time.Time{}
		for x := now.Truncate(time.Minute).Add(time.Minute); !x.After(m.last()); x = x.Add(time.Minute) {
			if m.tick(x) {
				wantNext = x
				break
			}
		}
		next := s.Next(now)
		if !wantNext.IsZero() && !next.Equal(wantNext) || wantNext.IsZero() && !next.IsZero() && !next.After(m.last()) {
			t.Fatalf("%s: Next = %s, the model's first tick after now %s", what, next.In(loc), wantNext.In(loc))
		}

		// At: open when now's minute is covered, else the next tick.
		wantOpen := m.covered(now.Truncate(time.Minute))
		open, opens := s.At(now, d)
		if open != wantOpen {
			t.Fatalf("%s: At says open %v, the model %v", what, open, wantOpen)
		}
		if !open && !opens.Equal(next) {
			t.Fatalf("%s: At says it opens at %s, Next %s", what, opens.In(loc), next.In(loc))
		}

		// End: the first minute after now no period covers.
		end, on := s.End(now, d, 1<<20, modelHorizon)
		bounded, boundedOn := s.End(now, d, 16, 32*24*time.Hour)
		if on != open || boundedOn != open {
			t.Fatalf("%s: End says on %v (%v within the freezes' bounds), At open %v", what, on, boundedOn, open)
		}
		if !open {
			return
		}
		wantEnd := time.Time{}
		for x := now.Truncate(time.Minute).Add(time.Minute); !x.After(m.last()); x = x.Add(time.Minute) {
			if !m.covered(x) {
				wantEnd = x
				break
			}
		}
		switch {
		case wantEnd.IsZero() && !end.After(m.last()):
			t.Fatalf("%s: End = %s, the model covers every minute to %s", what, end.In(loc), m.last().In(loc))
		case !wantEnd.IsZero() && !end.Equal(wantEnd):
			t.Fatalf("%s: End = %s, the model's first minute uncovered %s", what, end.In(loc), wantEnd.In(loc))
		case !bounded.After(now) || !wantEnd.IsZero() && bounded.After(wantEnd):
			t.Fatalf("%s: End within the freezes' bounds = %s, not in (now, %s]", what, bounded.In(loc), wantEnd.In(loc))
		}
	})
}
