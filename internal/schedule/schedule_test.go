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
	"errors"
	"strings"
	"testing"
	"time"
)

// TestZone walks the zone names no window or freeze may use and some it
// may: none of the refused ones is looked up.
func TestZone(t *testing.T) {
	tests := []struct {
		name string
		want string // the zone's name, or the error
	}{
		{name: "", want: "UTC"},
		{name: "UTC", want: "UTC"},
		{name: "Europe/Berlin", want: "Europe/Berlin"},
		{name: "America/Argentina/ComodRivadavia", want: "America/Argentina/ComodRivadavia"},
		{name: "Local", want: "time zone Local is the stager's own: name an IANA time zone"},
		{name: "Mars/Olympus", want: `unknown time zone "Mars/Olympus"`},
		{name: "../../etc/passwd", want: `unknown time zone "../../etc/passwd"`},
		{name: "Europe/../../etc/passwd", want: `unknown time zone "Europe/../../etc/passwd"`},
		{name: "/etc/passwd", want: `unknown time zone "/etc/passwd"`},
		{name: "/usr/share/zoneinfo/UTC", want: `unknown time zone "/usr/share/zoneinfo/UTC"`},
		{name: "Europe/" + strings.Repeat("x", MaxZoneName-7), want: `unknown time zone "Europe/` + strings.Repeat("x", MaxZoneName-7) + `"`},
		{name: strings.Repeat("A", MaxZoneName+1), want: `unknown time zone "` + strings.Repeat("A", MaxZoneName+1) + `"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loc, err := Zone(tt.name)
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				got = loc.String()
			}
			if got != tt.want {
				t.Errorf("Zone(%q) = %q, want %q", tt.name, got, tt.want)
			}
		})
	}
	if _, err := Zone("Local"); !errors.Is(err, ErrLocalZone) {
		t.Errorf("Zone(Local) = %v, want ErrLocalZone", err)
	}
	a, errA := Zone("Asia/Tokyo")
	b, errB := Zone("Asia/Tokyo")
	if errA != nil || errB != nil || a != b {
		t.Errorf("Asia/Tokyo loaded twice: %p %v, %p %v; want one cached zone", a, errA, b, errB)
	}
}

// TestParse walks the schedules the parser reads and those the guards
// refuse before it does.
func TestParse(t *testing.T) {
	tests := []struct {
		text    string
		wantErr error  // a guard's
		want    string // or a part of the parser's error; "" for none
	}{
		{text: "0 2 * * *"},
		{text: "  @daily  "},
		{text: "*/15 9-17 * * MON-FRI"},
		{text: "@every 1h", wantErr: ErrEvery},
		{text: " @every 1s", wantErr: ErrEvery},
		{text: "TZ=Asia/Tokyo 0 1 * * *", wantErr: ErrZoneInSchedule},
		{text: "CRON_TZ=Asia/Tokyo 0 1 * * *", wantErr: ErrZoneInSchedule},
		{text: "0 1 * * * TZ=Local", wantErr: ErrZoneInSchedule},
		{text: "61 * * * *", want: "end of range (61) above maximum (59): 61"},
		{text: "0 0 14 * * *", want: "expected exactly 5 fields, found 6"},
		{text: "", want: "empty spec string"},
		{text: "@reboot", want: "unrecognized descriptor"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			s, err := Parse(tt.text, time.UTC)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("Parse(%q) = %v, want %v", tt.text, err, tt.wantErr)
				}
			case tt.want != "":
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("Parse(%q) = %v, want %q", tt.text, err, tt.want)
				}
			case err != nil:
				t.Errorf("Parse(%q) = %v", tt.text, err)
			case s.Location() != time.UTC:
				t.Errorf("Parse(%q) in %s, want UTC", tt.text, s.Location())
			}
		})
	}
}

// TestAt walks the edges of a period: open at its tick, closed at its
// end, a schedule that never ticks, and a period across a change of
// daylight saving time.
func TestAt(t *testing.T) {
	berlin, err := Zone("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC)
	tests := []struct {
		name, text string
		loc        *time.Location
		d          time.Duration
		t          time.Time
		open       bool
		next       string // in the schedule's zone; "" for never
	}{
		{name: "open at its tick", text: "0 22 * * *", loc: time.UTC, d: time.Minute, t: at, open: true},
		{name: "closed at its end", text: "0 21 * * *", loc: time.UTC, d: time.Hour, t: at, next: "2026-11-30 21:00 UTC"},
		{name: "open a second before its end", text: "0 21 * * *", loc: time.UTC, d: time.Hour, t: at.Add(-time.Second), open: true},
		{name: "a leap day", text: "0 0 29 2 *", loc: time.UTC, d: time.Hour, t: at, next: "2028-02-29 00:00 UTC"},
		{name: "never", text: "0 0 31 4 *", loc: time.UTC, d: time.Hour, t: at},
		// 01:30 CET on the day summer time starts is 00:30 UTC: two
		// hours later is 02:30 UTC, 04:30 CEST (the clock skips an hour).
		{name: "across the change to summer time", text: "30 1 * * *", loc: berlin, d: 2 * time.Hour,
			t: time.Date(2026, 3, 29, 2, 29, 0, 0, time.UTC), open: true},
		{name: "its end across the change", text: "30 1 * * *", loc: berlin, d: 2 * time.Hour,
			t: time.Date(2026, 3, 29, 2, 30, 0, 0, time.UTC), next: "2026-03-30 01:30 CEST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.text, tt.loc)
			if err != nil {
				t.Fatal(err)
			}
			open, next := s.At(tt.t, tt.d)
			got := ""
			if !next.IsZero() {
				got = next.In(s.Location()).Format("2006-01-02 15:04 MST")
			}
			if open != tt.open || got != tt.next {
				t.Errorf("At(%s) = %v, %q; want %v, %q", tt.t, open, got, tt.open, tt.next)
			}
		})
	}
}

// TestNextOverChangesOfOffset walks the ticks around changes of a zone's
// offset: a wall-clock time the clock skips never ticks, one it goes
// over twice ticks twice, and an hour that starts inside a change of
// offset not on the hour ticks (cron's own Next skips it).
func TestNextOverChangesOfOffset(t *testing.T) {
	tests := []struct {
		name, text, zone string
		after, want      time.Time
	}{
		{name: "New York's 01:00 twice", text: "0 1 * * *", zone: "America/New_York",
			after: time.Date(2026, 11, 1, 5, 0, 0, 0, time.UTC), want: time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)},
		{name: "Lord Howe's 01:30 twice, half an hour apart", text: "30 1 * * *", zone: "Australia/Lord_Howe",
			after: time.Date(2026, 4, 4, 14, 30, 0, 0, time.UTC), want: time.Date(2026, 4, 4, 15, 0, 0, 0, time.UTC)},
		{name: "Berlin's 02:30 skipped", text: "30 2 * * *", zone: "Europe/Berlin",
			after: time.Date(2026, 3, 28, 23, 0, 0, 0, time.UTC), want: time.Date(2026, 3, 30, 0, 30, 0, 0, time.UTC)},
		{name: "Chatham's hour 3 from 03:45", text: "50 3 * * *", zone: "Pacific/Chatham",
			after: time.Date(2026, 9, 26, 12, 0, 0, 0, time.UTC), want: time.Date(2026, 9, 26, 14, 5, 0, 0, time.UTC)},
		{name: "Lord Howe's 03:00 after a change of half an hour", text: "0 3 * * *", zone: "Australia/Lord_Howe",
			after: time.Date(2026, 10, 3, 14, 0, 0, 0, time.UTC), want: time.Date(2026, 10, 3, 16, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loc, err := Zone(tt.zone)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Parse(tt.text, loc)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Next(tt.after); !got.Equal(tt.want) {
				t.Errorf("Next(%s) = %s, want %s", tt.after.In(loc), got.In(loc), tt.want.In(loc))
			}
		})
	}
}

// spinBound is how long one call may take before the fuzz test calls it
// a spin. A call takes microseconds (BenchmarkAtNeverTicks): this only
// tells a loop from a slow machine.
const spinBound = 10 * time.Second

// FuzzSchedule reads any schedule, zone, duration and time: the engine
// never panics, never spins, and what it answers holds together (a next
// opening after now, within five years and a day, open at its own
// opening; an open period has an end after now, at most the duration
// past its last tick unless another tick opens before it closes).
func FuzzSchedule(f *testing.F) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Unix()
	for _, seed := range []struct {
		text, zone    string
		seconds, unix int64
	}{
		{"0 2 * * *", "Europe/Paris", 3600, now},
		{"0 0 30 2 *", "", 3600, now},
		{"0 0 29 2 *", "UTC", 60, now},
		{"@weekly", "America/New_York", 7 * 24 * 3600, now},
		{"30 2 * 3 0", "Europe/Berlin", 600, time.Date(2026, 3, 28, 0, 0, 0, 0, time.UTC).Unix()},
		{"*/5 * * * *", "Australia/Lord_Howe", 60, time.Date(2026, 10, 4, 1, 0, 0, 0, time.UTC).Unix()},
		{"* * * * *", "Europe/Berlin", 366 * 24 * 3600, now},
		{"0 0 1 1 *", "Pacific/Apia", 60, -62135596800},
		{"59 23 31 12 *", "", 60, 253402300799},
		{"@every 1s", "", 60, 0},
		{"TZ=Local 0 0 * * *", "Local", 60, 0},
		{"0 0 * * *", "../../../../etc/passwd", 60, 0},
		{"0 0 * * *", "", -60, 0},
	} {
		f.Add(seed.text, seed.zone, seed.seconds, seed.unix)
	}
	f.Fuzz(func(t *testing.T, text, zone string, seconds, unix int64) {
		loc, err := Zone(zone)
		if err != nil {
			return
		}
		s, err := Parse(text, loc)
		if err != nil {
			return
		}
		at := time.Unix(unix, 0).UTC()
		d := time.Duration(seconds) * time.Second
		type answer struct {
			open, on  bool
			next, end time.Time
		}
		done := make(chan answer, 1)
		go func() {
			var a answer
			a.open, a.next = s.At(at, d)
			a.end, a.on = s.End(at, d, 16, 32*24*time.Hour)
			done <- a
		}()
		var got answer
		select {
		case got = <-done:
		case <-time.After(spinBound):
			t.Fatalf("%q in %q for %s at %s spins", text, zone, d, at)
		}
		if got.open != got.on {
			t.Fatalf("%q in %q for %s at %s: At says open %v, End %v", text, zone, d, at, got.open, got.on)
		}
		if got.open {
			if d <= 0 || !got.end.After(at) {
				t.Fatalf("%q in %q for %s at %s: open until %s", text, zone, d, at, got.end)
			}
			return
		}
		if got.next.IsZero() {
			return
		}
		if !got.next.After(at) || got.next.Sub(at) > 6*366*24*time.Hour {
			t.Fatalf("%q in %q at %s opens at %s", text, zone, at, got.next)
		}
		if d > 0 {
			if again, _ := s.At(got.next, d); !again {
				t.Fatalf("%q in %q for %s is closed at its own opening %s", text, zone, d, got.next)
			}
		}
	})
}

// BenchmarkAtNeverTicks is the dearest schedule: cron's Next walks five
// years of calendar before it gives up.
func BenchmarkAtNeverTicks(b *testing.B) {
	loc, err := Zone("Europe/Berlin")
	if err != nil {
		b.Fatal(err)
	}
	s, err := Parse("0 0 30 2 *", loc)
	if err != nil {
		b.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for b.Loop() {
		if open, next := s.At(at, time.Hour); open || !next.IsZero() {
			b.Fatal("a schedule that never ticks opens")
		}
	}
}
