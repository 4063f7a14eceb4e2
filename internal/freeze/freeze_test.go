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
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func rng(start, end string) hostingv1alpha1.FreezeRange {
	return hostingv1alpha1.FreezeRange{Start: metav1.NewTime(at(start)), End: metav1.NewTime(at(end))}
}

func sched(cron string, d time.Duration, zone string) hostingv1alpha1.FreezeSchedule {
	return hostingv1alpha1.FreezeSchedule{Schedule: cron, Duration: metav1.Duration{Duration: d}, TimeZone: zone}
}

func freeze(name string, spec hostingv1alpha1.RolloutFreezeSpec) hostingv1alpha1.RolloutFreeze {
	return hostingv1alpha1.RolloutFreeze{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

// TestDecide walks ranges, schedules over a change of daylight saving
// time, back-to-back periods, the selection of spaces, policies and
// stages, and broken freezes, which hold.
func TestDecide(t *testing.T) {
	xmas := freeze("xmas-2026", hostingv1alpha1.RolloutFreezeSpec{Reason: "code freeze",
		Ranges: []hostingv1alpha1.FreezeRange{rng("2026-12-20T00:00:00Z", "2027-01-02T00:00:00Z")}})
	weekend := freeze("weekend", hostingv1alpha1.RolloutFreezeSpec{Spaces: []string{"wds1"}, Stages: []string{"prod"},
		Schedules: []hostingv1alpha1.FreezeSchedule{sched("0 18 * * 5", 62*time.Hour, "Europe/Berlin")}})
	tests := []struct {
		name        string
		freezes     []hostingv1alpha1.RolloutFreeze
		space       string
		now         string
		stage       string
		want        string // the hold's Describe, "" for none
		wantRecheck time.Duration
	}{
		{name: "before a range", freezes: []hostingv1alpha1.RolloutFreeze{xmas}, space: "wds1", now: "2026-12-19T23:00:00Z", stage: "dev",
			wantRecheck: time.Hour},
		{name: "at a range's start", freezes: []hostingv1alpha1.RolloutFreeze{xmas}, space: "wds2", now: "2026-12-20T00:00:00Z", stage: "dev",
			want: "frozen by xmas-2026 until 2027-01-02 00:00 UTC: code freeze", wantRecheck: 13 * 24 * time.Hour},
		{name: "at a range's end", freezes: []hostingv1alpha1.RolloutFreeze{xmas}, space: "wds1", now: "2027-01-02T00:00:00Z", stage: "dev"},
		{name: "a weekend in winter (CET)", freezes: []hostingv1alpha1.RolloutFreeze{weekend}, space: "wds1", now: "2026-12-05T12:00:00Z", stage: "prod",
			want: "frozen by weekend until 2026-12-07 07:00 UTC (2026-12-07 08:00 CET Europe/Berlin)", wantRecheck: 43 * time.Hour},
		{name: "a weekend over the change to summer time ends an hour later by the clock",
			freezes: []hostingv1alpha1.RolloutFreeze{weekend}, space: "wds1", now: "2027-03-27T12:00:00Z", stage: "prod",
			// Friday 18:00 CET is 17:00 UTC; 62h later is Monday 07:00 UTC, 09:00 CEST.
			want: "frozen by weekend until 2027-03-29 07:00 UTC (2027-03-29 09:00 CEST Europe/Berlin)", wantRecheck: 43 * time.Hour},
		{name: "a weekend freeze on a Thursday", freezes: []hostingv1alpha1.RolloutFreeze{weekend}, space: "wds1", now: "2026-12-03T17:00:00Z", stage: "prod",
			wantRecheck: 24 * time.Hour},
		{name: "another space", freezes: []hostingv1alpha1.RolloutFreeze{weekend}, space: "wds2", now: "2026-12-05T12:00:00Z", stage: "prod"},
		{name: "another stage", freezes: []hostingv1alpha1.RolloutFreeze{weekend}, space: "wds1", now: "2026-12-05T12:00:00Z", stage: "dev",
			wantRecheck: 43 * time.Hour},
		{name: "another policy", freezes: []hostingv1alpha1.RolloutFreeze{freeze("only-db", hostingv1alpha1.RolloutFreezeSpec{Policies: []string{"db"},
			Ranges: xmas.Spec.Ranges})}, space: "wds1", now: "2026-12-24T00:00:00Z", stage: "dev"},
		{name: "a range and a schedule back to back", freezes: []hostingv1alpha1.RolloutFreeze{freeze("joined", hostingv1alpha1.RolloutFreezeSpec{
			Ranges:    []hostingv1alpha1.FreezeRange{rng("2026-12-01T00:00:00Z", "2026-12-01T12:00:00Z")},
			Schedules: []hostingv1alpha1.FreezeSchedule{sched("0 12 * * *", time.Hour, "")}})}, space: "wds1", now: "2026-12-01T06:00:00Z", stage: "dev",
			want: "frozen by joined until 2026-12-01 13:00 UTC", wantRecheck: 7 * time.Hour},
		{name: "the later of two freezes", freezes: []hostingv1alpha1.RolloutFreeze{xmas, freeze("short", hostingv1alpha1.RolloutFreezeSpec{
			Ranges: []hostingv1alpha1.FreezeRange{rng("2026-12-24T00:00:00Z", "2026-12-25T00:00:00Z")}})}, space: "wds1", now: "2026-12-24T06:00:00Z", stage: "dev",
			want: "frozen by xmas-2026 until 2027-01-02 00:00 UTC: code freeze", wantRecheck: 18 * time.Hour},
		{name: "an unknown time zone holds", freezes: []hostingv1alpha1.RolloutFreeze{freeze("typo", hostingv1alpha1.RolloutFreezeSpec{
			Schedules: []hostingv1alpha1.FreezeSchedule{sched("0 0 * * *", time.Hour, "Europe/Berln")}})}, space: "wds1", now: "2026-12-24T06:00:00Z", stage: "dev",
			want: `frozen by typo, which is invalid, until the platform team fixes or deletes it: schedule 1 ("0 0 * * *"): unknown time zone "Europe/Berln"`},
		{name: "the stager's own zone holds", freezes: []hostingv1alpha1.RolloutFreeze{freeze("local", hostingv1alpha1.RolloutFreezeSpec{
			Schedules: []hostingv1alpha1.FreezeSchedule{sched("0 0 * * *", time.Hour, "Local")}})}, space: "wds1", now: "2026-12-24T06:00:00Z", stage: "dev",
			want: `frozen by local, which is invalid, until the platform team fixes or deletes it: schedule 1 ("0 0 * * *"): time zone Local is the stager's own: name an IANA time zone`},
		{name: "a path for a zone holds", freezes: []hostingv1alpha1.RolloutFreeze{freeze("path", hostingv1alpha1.RolloutFreezeSpec{
			Schedules: []hostingv1alpha1.FreezeSchedule{sched("0 0 * * *", time.Hour, "../../etc/passwd")}})}, space: "wds1", now: "2026-12-24T06:00:00Z", stage: "dev",
			want: `frozen by path, which is invalid, until the platform team fixes or deletes it: schedule 1 ("0 0 * * *"): unknown time zone "../../etc/passwd"`},
		{name: "a zone in the schedule holds", freezes: []hostingv1alpha1.RolloutFreeze{freeze("tz", hostingv1alpha1.RolloutFreezeSpec{
			Schedules: []hostingv1alpha1.FreezeSchedule{sched("CRON_TZ=Asia/Tokyo 0 0 * * *", time.Hour, "")}})}, space: "wds1", now: "2026-12-24T06:00:00Z", stage: "dev",
			want: `frozen by tz, which is invalid, until the platform team fixes or deletes it: schedule 1 ("CRON_TZ=Asia/Tokyo 0 0 * * *"): @every and a time zone in the schedule are not allowed: set timeZone`},
		{name: "an invalid schedule holds", freezes: []hostingv1alpha1.RolloutFreeze{freeze("bad", hostingv1alpha1.RolloutFreezeSpec{
			Schedules: []hostingv1alpha1.FreezeSchedule{sched("61 * * * *", time.Hour, "")}})}, space: "wds1", now: "2026-12-24T06:00:00Z", stage: "dev",
			want: `frozen by bad, which is invalid, until the platform team fixes or deletes it: schedule 1 ("61 * * * *"): invalid cron schedule: ` +
				`end of range (61) above maximum (59): 61`},
		{name: "@every is refused", freezes: []hostingv1alpha1.RolloutFreeze{freeze("every", hostingv1alpha1.RolloutFreezeSpec{
			Schedules: []hostingv1alpha1.FreezeSchedule{sched("@every 1h", time.Hour, "")}})}, space: "wds1", now: "2026-12-24T06:00:00Z", stage: "dev",
			want: `frozen by every, which is invalid, until the platform team fixes or deletes it: schedule 1 ("@every 1h"): @every and a time zone in the schedule are not allowed: set timeZone`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.freezes, tt.space, "web", at(tt.now))
			got := ""
			if h := d.For(tt.stage); h != nil {
				got = h.Describe()
			}
			if got != tt.want {
				t.Errorf("hold:\n got %q\nwant %q", got, tt.want)
			}
			if d.RecheckAfter != tt.wantRecheck {
				t.Errorf("RecheckAfter = %s, want %s", d.RecheckAfter, tt.wantRecheck)
			}
		})
	}
}

// TestDecideFollowsBackToBackPeriodsBoundedly: hourly periods of 90
// minutes never end; Decide follows maxChain of them a round, maxRounds rounds, and names the end
// it reached, which a later decision takes further.
func TestDecideFollowsBackToBackPeriodsBoundedly(t *testing.T) {
	f := freeze("always", hostingv1alpha1.RolloutFreezeSpec{Schedules: []hostingv1alpha1.FreezeSchedule{sched("0 * * * *", 90*time.Minute, "")}})
	now := at("2026-12-01T00:30:00Z")
	d := Decide([]hostingv1alpha1.RolloutFreeze{f}, "wds1", "web", now)
	h := d.For("dev")
	if h == nil {
		t.Fatal("not frozen")
	}
	// Each round of state follows maxChain periods, in maxRounds rounds.
	if h.Until.Before(now.Add(maxChain*time.Hour)) || h.Until.After(now.Add(maxRounds*(maxChain+1)*time.Hour+2*time.Hour)) {
		t.Errorf("Until = %s, want between %d and %d periods on", h.Until, maxChain, maxRounds*(maxChain+1))
	}
	later := Decide([]hostingv1alpha1.RolloutFreeze{f}, "wds1", "web", h.Until)
	if later := later.For("dev"); later == nil || !later.Until.After(h.Until) {
		t.Errorf("at %s: %+v, want frozen further", h.Until, later)
	}
}

func TestDescribeNamesTheZoneOnlyOutsideUTC(t *testing.T) {
	h := Hold{Freeze: "f", Reason: ReasonFreezeActive, Until: at("2026-12-01T00:00:00Z")}
	if got := h.Describe(); strings.Contains(got, "(") {
		t.Errorf("Describe() = %q, want no zone in brackets", got)
	}
}
