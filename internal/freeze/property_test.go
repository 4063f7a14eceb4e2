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

package freeze

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
)

// genFreeze draws a freeze within the CRD's bounds, or past them (the
// stager reads what an old CRD let through), around base.
func genFreeze(t *rapid.T, i int, base time.Time) hostingv1alpha1.RolloutFreeze {
	spec := hostingv1alpha1.RolloutFreezeSpec{Reason: rapid.StringN(0, 20, 300).Draw(t, "reason")}
	for range rapid.IntRange(0, 16).Draw(t, "ranges") {
		start := base.Add(time.Duration(rapid.Int64Range(-int64(400*24*time.Hour), int64(400*24*time.Hour)).Draw(t, "start")))
		// Half open, possibly empty or backwards: an old object's.
		end := start.Add(time.Duration(rapid.Int64Range(-int64(time.Hour), int64(60*24*time.Hour)).Draw(t, "length")))
		spec.Ranges = append(spec.Ranges, hostingv1alpha1.FreezeRange{Start: metav1.NewTime(start), End: metav1.NewTime(end)})
	}
	for range rapid.IntRange(0, 8).Draw(t, "schedules") {
		spec.Schedules = append(spec.Schedules, hostingv1alpha1.FreezeSchedule{
			Schedule: rapid.SampledFrom([]string{"* * * * *", "0 * * * *", "30 2 * * *", "0 18 * * 5", "0 0 1 * *", "0 0 30 2 *",
				"@daily", "@yearly", "@every 1h", "CRON_TZ=UTC 0 0 * * *", "61 * * * *", "", "x", "*/7 1-5 * * MON-FRI"}).Draw(t, "cron"),
			Duration: metav1.Duration{Duration: time.Duration(rapid.Int64Range(-int64(time.Hour), int64(400*24*time.Hour)).Draw(t, "duration"))},
			TimeZone: rapid.SampledFrom([]string{"", "UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Nowhere/None",
				"../../etc/passwd", "/etc/passwd", "Local"}).Draw(t, "zone"),
		})
	}
	if rapid.Bool().Draw(t, "someSpaces") {
		spec.Spaces = []string{"wds1"}
	}
	if rapid.Bool().Draw(t, "someStages") {
		spec.Stages = []string{"prod"}
	}
	return hostingv1alpha1.RolloutFreeze{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("f%d", i)}, Spec: spec}
}

// TestDecideProperties checks, over freezes drawn within and past the
// CRD's bounds, that Decide never panics, holds a freeze whose range
// holds now, names ends after now, and that a freeze on at now with an
// end is still on at any time before that end (the end is at the
// earliest the real one), and that an invalid one holds without end.
func TestDecideProperties(t *testing.T) {
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	rapid.Check(t, func(t *rapid.T) {
		var freezes []hostingv1alpha1.RolloutFreeze
		for i := range rapid.IntRange(0, 4).Draw(t, "freezes") {
			freezes = append(freezes, genFreeze(t, i, base))
		}
		now := base.Add(time.Duration(rapid.Int64Range(-int64(30*24*time.Hour), int64(30*24*time.Hour)).Draw(t, "now")))
		space := rapid.SampledFrom([]string{"wds1", "wds2"}).Draw(t, "space")
		d := Decide(freezes, space, "web", now)
		if d.RecheckAfter < 0 {
			t.Fatalf("RecheckAfter %s < 0", d.RecheckAfter)
		}
		held := map[string]Hold{}
		for _, h := range d.Holds {
			held[h.Freeze] = h
			if h.Reason == ReasonFreezeActive && !h.Until.After(now) {
				t.Fatalf("hold %+v ends at or before now %s", h, now)
			}
			if h.Reason == ReasonFreezeInvalid && !h.Until.IsZero() {
				t.Fatalf("invalid hold %+v has an end", h)
			}
			if h.Describe() == "" {
				t.Fatalf("hold %+v says nothing", h)
			}
		}
		for _, f := range freezes {
			if !Selects(&f, space, "web") {
				if _, ok := held[f.Name]; ok {
					t.Fatalf("freeze %s does not select space %s but holds it", f.Name, space)
				}
				continue
			}
			for _, r := range f.Spec.Ranges {
				if !r.Start.After(now) && r.End.After(now) {
					if _, ok := held[f.Name]; !ok {
						t.Fatalf("freeze %s's range %s..%s holds %s, but Decide does not", f.Name, r.Start, r.End, now)
					}
				}
			}
		}
		for _, h := range d.Holds {
			if h.Reason != ReasonFreezeActive {
				continue
			}
			later := now.Add(time.Duration(rapid.Int64Range(0, int64(h.Until.Sub(now))-1).Draw(t, "later")))
			again := Decide(freezes, space, "web", later)
			found := false
			for _, h2 := range again.Holds {
				found = found || h2.Freeze == h.Freeze
			}
			if !found {
				t.Fatalf("freeze %s held at %s until %s, but not at %s", h.Freeze, now, h.Until, later)
			}
		}
	})
}

// BenchmarkDecideWorstCase is a freeze at the CRD's bounds whose every
// schedule's periods overlap: 16 ranges, 8 minutely schedules of 366
// days, each followed maxChain periods.
func BenchmarkDecideWorstCase(b *testing.B) {
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	spec := hostingv1alpha1.RolloutFreezeSpec{}
	for i := range 16 {
		s := base.Add(time.Duration(i) * time.Hour)
		spec.Ranges = append(spec.Ranges, hostingv1alpha1.FreezeRange{Start: metav1.NewTime(s), End: metav1.NewTime(s.Add(30 * time.Minute))})
	}
	for range 8 {
		spec.Schedules = append(spec.Schedules, hostingv1alpha1.FreezeSchedule{Schedule: "* * * * *",
			Duration: metav1.Duration{Duration: 8784 * time.Hour}, TimeZone: "Europe/Berlin"})
	}
	freezes := []hostingv1alpha1.RolloutFreeze{{ObjectMeta: metav1.ObjectMeta{Name: "f"}, Spec: spec}}
	for b.Loop() {
		Decide(freezes, "wds1", "web", base.Add(10*time.Minute))
	}
}
