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
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// FuzzNextWindow reads any two windows and time: NextWindow never
// panics, is open only with a window of 1m to 168h open, and, closed,
// names the earliest opening of the two, in the time zone of the window
// that opens then. The engine's own answers (no spin, an opening after
// now, open at its own opening) are schedule.FuzzSchedule's.
func FuzzNextWindow(f *testing.F) {
	for _, seed := range []struct {
		schedule, zone   string
		seconds          int64
		schedule2, zone2 string
		seconds2, unix   int64
	}{
		{"0 2 * * *", "Europe/Paris", 3600, "0 9 * * *", "Asia/Tokyo", 3600, now.Unix()},
		{"0 0 30 2 *", "", 3600, "@daily", "", 60, now.Unix()},
		{"0 0 29 2 *", "UTC", 60, "0 0 29 2 *", "UTC", 30, now.Unix()},
		{"@weekly", "America/New_York", 7 * 24 * 3600, "@weekly", "America/New_York", 7*24*3600 + 1, now.Unix()},
		{"30 2 * 3 0", "Europe/Berlin", 600, "*/5 * * * *", "Australia/Lord_Howe", 60, time.Date(2026, 3, 28, 0, 0, 0, 0, time.UTC).Unix()},
		{"50 3 * * *", "Pacific/Chatham", 60, "0 1 * * *", "America/New_York", 60, time.Date(2026, 9, 26, 12, 0, 0, 0, time.UTC).Unix()},
		{"59 23 31 12 *", "", 60, "0 0 1 1 *", "Pacific/Apia", 60, 253402300799},
		{"@every 1s", "", 60, "TZ=Local 0 0 * * *", "Local", 60, 0},
		{"0 0 * * *", "../../../../etc/passwd", 60, "0 0 * * *", "", 60, 0},
	} {
		f.Add(seed.schedule, seed.zone, seed.seconds, seed.schedule2, seed.zone2, seed.seconds2, seed.unix)
	}
	f.Fuzz(func(t *testing.T, schedule, zone string, seconds int64, schedule2, zone2 string, seconds2, unix int64) {
		at := time.Unix(unix, 0).UTC()
		windows := []v1alpha1.ChangeWindow{
			{Schedule: schedule, TimeZone: zone, Duration: metav1.Duration{Duration: time.Duration(seconds) * time.Second}},
			{Schedule: schedule2, TimeZone: zone2, Duration: metav1.Duration{Duration: time.Duration(seconds2) * time.Second}},
		}
		both, err := NextWindow(windows, at)
		first, err1 := NextWindow(windows[:1], at)
		second, err2 := NextWindow(windows[1:], at)
		if (err == nil) != (err1 == nil && err2 == nil) {
			t.Fatalf("NextWindow of both: %v; of each: %v, %v", err, err1, err2)
		}
		if err != nil {
			return
		}
		if both.Open != (first.Open || second.Open) {
			t.Fatalf("both open %v; each %v, %v", both.Open, first.Open, second.Open)
		}
		for _, w := range windows {
			if d := w.Duration.Duration; both.Open && (d < minWindowDuration || d > maxWindowDuration) {
				t.Fatalf("open with a window of %s", d)
			}
		}
		if both.Open {
			return
		}
		want := first
		if second.OpensAt.Before(first.OpensAt) {
			want = second
		}
		if !both.OpensAt.Equal(want.OpensAt) || both.TimeZone != want.TimeZone || both.OpensAt.Location().String() != want.OpensAt.Location().String() {
			t.Fatalf("both open at %s (%s), want the earliest of %s (%s) and %s (%s)", both.OpensAt, both.TimeZone,
				first.OpensAt, first.TimeZone, second.OpensAt, second.TimeZone)
		}
		if zone := want.TimeZone; zone != "UTC" && both.OpensAt.Location().String() != zone {
			t.Fatalf("opens at %s, not in its zone %s", both.OpensAt, zone)
		}
	})
}

// BenchmarkNextWindowNeverOpens is the dearest schedule: cron's Next walks
// five years of calendar before it gives up.
func BenchmarkNextWindowNeverOpens(b *testing.B) {
	windows := make([]v1alpha1.ChangeWindow, v1alpha1.MaxWindows)
	for i := range windows {
		windows[i] = v1alpha1.ChangeWindow{Schedule: "0 0 30 2 *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Europe/Berlin"}
	}
	for b.Loop() {
		if _, err := NextWindow(windows, now.Time); err == nil {
			b.Fatal("a schedule that never fires opens")
		}
	}
}
