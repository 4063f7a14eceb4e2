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

// nextWindowHang is how long one NextWindow may take before the fuzz test
// calls it a spin. A call takes microseconds (BenchmarkNextWindowNeverOpens):
// this only tells a loop from a slow machine.
const nextWindowHang = 10 * time.Second

// FuzzNextWindow reads any schedule, time zone, duration and time: it
// never panics, never spins, and what it answers holds together (an
// opening after now, within five years and a day; open only with a
// window of at most a week that started at most that long ago).
func FuzzNextWindow(f *testing.F) {
	for _, seed := range []struct {
		schedule, zone string
		seconds, unix  int64
	}{
		{"0 2 * * *", "Europe/Paris", 3600, now.Unix()},
		{"0 0 30 2 *", "", 3600, now.Unix()},
		{"0 0 29 2 *", "UTC", 60, now.Unix()},
		{"@weekly", "America/New_York", 7 * 24 * 3600, now.Unix()},
		{"30 2 * 3 0", "Europe/Berlin", 600, time.Date(2026, 3, 28, 0, 0, 0, 0, time.UTC).Unix()},
		{"*/5 * * * *", "Australia/Lord_Howe", 60, time.Date(2026, 10, 4, 1, 0, 0, 0, time.UTC).Unix()},
		{"0 0 1 1 *", "Pacific/Apia", 60, -62135596800},
		{"59 23 31 12 *", "", 60, 253402300799},
		{"@every 1s", "", 60, 0},
		{"TZ=Local 0 0 * * *", "Local", 60, 0},
		{"0 0 * * *", "../../../../etc/passwd", 60, 0},
	} {
		f.Add(seed.schedule, seed.zone, seed.seconds, seed.unix)
	}
	f.Fuzz(func(t *testing.T, schedule, zone string, seconds, unix int64) {
		at := time.Unix(unix, 0).UTC()
		w := v1alpha1.ChangeWindow{Schedule: schedule, TimeZone: zone, Duration: metav1.Duration{Duration: time.Duration(seconds) * time.Second}}
		type answer struct {
			state WindowState
			err   error
		}
		done := make(chan answer, 1)
		go func() {
			s, err := NextWindow([]v1alpha1.ChangeWindow{w}, at)
			done <- answer{s, err}
		}()
		var got answer
		select {
		case got = <-done:
		case <-time.After(nextWindowHang):
			t.Fatalf("NextWindow(%q, %q, %ds, %s) spins", schedule, zone, seconds, at)
		}
		if got.err != nil {
			return
		}
		s := got.state
		if s.Open {
			if w.Duration.Duration > maxWindowDuration || w.Duration.Duration < minWindowDuration {
				t.Fatalf("open with a duration of %s", w.Duration.Duration)
			}
			return
		}
		if !s.OpensAt.After(at) || s.OpensAt.Sub(at) > 6*366*24*time.Hour {
			t.Fatalf("NextWindow(%q, %q) at %s opens at %s", schedule, zone, at, s.OpensAt)
		}
		if again, err := NextWindow([]v1alpha1.ChangeWindow{w}, s.OpensAt); err == nil && !again.Open {
			t.Fatalf("NextWindow(%q, %q) is closed at its own opening %s", schedule, zone, s.OpensAt)
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
