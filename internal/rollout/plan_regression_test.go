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
	"slices"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
)

// watchedDev is stage("dev") with a regressionWatch.
func watchedDev(w v1alpha1.RegressionWatch) v1alpha1.Stage {
	s := stage("dev")
	s.RegressionWatch = &w
	return s
}

// regressionFixture is a policy dev → prod under Accumulate with prod
// active and not done, dev done an hour ago (rollouttest.Earlier), its
// BindingPolicy kept; dev's Deployment reports devCount ("1" healthy).
func regressionFixture(dev v1alpha1.Stage, devCount string) fixture {
	f := at("prod", dev, stage("prod")).bound().reporting(deployment, "0")
	f.Policy.Spec.Placement = v1alpha1.PlacementAccumulate
	devBP := ownedBP(f.Policy, "dev", "bp-dev")
	devBP.Spec = DesiredBindingPolicy(f.Policy, dev).Spec
	f = f.alsoBP(devBP)
	f.WatchedBindings = append(f.WatchedBindings, *bindingFor(devBP))
	f.WatchedStatuses = append(f.WatchedStatuses, combinedStatus(devBP, deployment, devCount))
	return f
}

// stageRecord returns the record of the named stage in status.
func stageRecord(t *testing.T, status *v1alpha1.StagedBindingPolicyStatus, name string) *v1alpha1.StageStatus {
	t.Helper()
	r := status.StageNamed(name)
	if r == nil {
		t.Fatalf("status has no record of stage %q", name)
	}
	return r
}

// TestPlanRegressionWatch is rule 15b's table: each case plans once and
// says what the status write (or its absence) must carry.
func TestPlanRegressionWatch(t *testing.T) {
	engine := newEngine(t)
	tiny, err := expression.NewEngine(expression.WithBudget(1, time.Minute))
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	report := v1alpha1.RegressionWatch{}
	abort := v1alpha1.RegressionWatch{OnRegression: v1alpha1.RegressionAbort}
	failureOnly := v1alpha1.RegressionWatch{Judge: v1alpha1.RegressionOnFailureCondition}
	withFailure := func(s v1alpha1.Stage) v1alpha1.Stage {
		s.FailureCondition = `obj.results.exists(r, r.rows.exists(row, row.columns.exists(c, c.float == '9')))`
		return s
	}
	type want struct {
		checked     bool   // dev's lastRegressionCheckTime is now
		regressed   bool   // dev's record says regressed, StageRegressed True
		failure     string // status.failure's action, "" for none
		events      []string
		requeueUpTo time.Duration // RequeueAfter positive and at most this; 0: not checked
	}
	cases := []struct {
		name   string
		f      fixture
		engine *expression.Engine
		want   want
	}{
		{name: "not due: checked a minute ago, interval 5m",
			f: regressionFixture(watchedDev(report), "0").with(func(s *Snapshot) {
				stageRecord(t, &s.Policy.Status, "dev").LastRegressionCheckTime = ptr.To(metav1.NewTime(now.Add(-time.Minute)))
			}),
			want: want{requeueUpTo: 4 * time.Minute}},
		{name: "due and healthy",
			f:    regressionFixture(watchedDev(report), "1"),
			want: want{checked: true, requeueUpTo: 5 * time.Minute}},
		{name: "due and regressed: reported only",
			f: regressionFixture(watchedDev(report), "0"),
			want: want{checked: true, regressed: true, events: []string{"Warning/StageRegressed"},
				requeueUpTo: 5 * time.Minute}},
		{name: "regressed with onRegression Abort while prod rolls out: aborted",
			f: regressionFixture(watchedDev(abort), "0").with(func(s *Snapshot) {
				s.Policy.Status.CurrentRevision = "v1"
			}),
			want: want{checked: true, regressed: true, failure: string(v1alpha1.FailureAbort),
				events: []string{"Warning/StageRegressed"}, requeueUpTo: 5 * time.Minute}},
		{name: "regressed with onRegression Abort and no revision to go back to: held",
			f: regressionFixture(watchedDev(abort), "0"),
			want: want{checked: true, regressed: true, failure: string(v1alpha1.FailureHold),
				events: []string{"Warning/StageRegressed"}, requeueUpTo: 5 * time.Minute}},
		{name: "regressed with onRegression Abort, rollout completed: reported only",
			f: regressionFixture(watchedDev(abort), "0").with(func(s *Snapshot) {
				s.Policy.Status.CurrentRevision = "v1"
				s.Policy.Status.Phase = v1alpha1.RolloutCompleted
				prod := stageRecord(t, &s.Policy.Status, "prod")
				prod.Phase, prod.CompletionTime = v1alpha1.StageSucceeded, ptr.To(earlier)
				s.CombinedStatuses = []ksCombinedStatus{combinedStatus(s.ActiveBindingPolicy, deployment, "1")}
			}),
			want: want{checked: true, regressed: true, events: []string{"Warning/StageRegressed"}, requeueUpTo: 5 * time.Minute}},
		{name: "regressed before, healthy now: recovered",
			f: regressionFixture(watchedDev(report), "1").with(func(s *Snapshot) {
				stageRecord(t, &s.Policy.Status, "dev").Regressed = &v1alpha1.StageRegression{Time: earlier, Message: "stage \"dev\" regressed: x"}
				regressionCondition(&s.Policy.Status, s.Policy, earlier)
			}),
			want: want{checked: true, events: []string{"Normal/StageRecovered"}, requeueUpTo: 5 * time.Minute}},
		{name: "budget exhausted: inconclusive, no abort",
			f:      regressionFixture(watchedDev(abort), "0").with(func(s *Snapshot) { s.Policy.Status.CurrentRevision = "v1" }),
			engine: tiny,
			want:   want{checked: true, events: []string{"Warning/RegressionCheckInconclusive"}, requeueUpTo: 5 * time.Minute}},
		{name: "budget exhausted keeps an earlier verdict",
			f: regressionFixture(watchedDev(report), "1").with(func(s *Snapshot) {
				stageRecord(t, &s.Policy.Status, "dev").Regressed = &v1alpha1.StageRegression{Time: earlier, Message: "stage \"dev\" regressed: x"}
				regressionCondition(&s.Policy.Status, s.Policy, earlier)
			}),
			engine: tiny,
			want:   want{checked: true, regressed: true, events: []string{"Warning/RegressionCheckInconclusive"}, requeueUpTo: 5 * time.Minute}},
		{name: "KubeStellar no longer reports: inconclusive",
			f: regressionFixture(watchedDev(abort), "0").with(func(s *Snapshot) {
				s.Policy.Status.CurrentRevision = "v1"
				s.WatchedStatuses = nil
			}),
			want: want{checked: true, events: []string{"Warning/RegressionCheckInconclusive"}, requeueUpTo: 5 * time.Minute}},
		{name: "stage without a watch: untouched",
			f:    regressionFixture(stage("dev"), "0"),
			want: want{}},
		{name: "placement Replace: the done stage's placement is gone, nothing to watch",
			f: regressionFixture(watchedDev(abort), "0").with(func(s *Snapshot) {
				s.Policy.Spec.Placement = v1alpha1.PlacementReplace
				s.BindingPolicies = slices.DeleteFunc(s.BindingPolicies, func(bp ksBindingPolicy) bool { return bp.Name == "web.stage.dev" })
			}),
			want: want{}},
		{name: "condition FailureCondition: an unmet condition is no regression",
			f:    regressionFixture(withFailure(watchedDev(failureOnly)), "0"),
			want: want{checked: true, requeueUpTo: 5 * time.Minute}},
		{name: "condition FailureCondition: the failureCondition holds",
			f: regressionFixture(withFailure(watchedDev(failureOnly)), "9"),
			want: want{checked: true, regressed: true, events: []string{"Warning/StageRegressed"},
				requeueUpTo: 5 * time.Minute}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := engine
			if tc.engine != nil {
				e = tc.engine
			}
			before := tc.f.Policy.DeepCopy()
			action := Plan(tc.f.Snapshot, e)
			status := &before.Status
			if action.Status != nil {
				status = action.Status
			}
			dev := stageRecord(t, status, "dev")
			if checked := dev.LastRegressionCheckTime != nil && dev.LastRegressionCheckTime.Equal(&now); checked != tc.want.checked {
				t.Errorf("dev checked now = %v, want %v (record %+v, action %s: %s)", checked, tc.want.checked, dev, action.Type, action.Why)
			}
			if (len(action.RegressionChecks) > 0) != tc.want.checked {
				t.Errorf("RegressionChecks = %+v, want checked %v", action.RegressionChecks, tc.want.checked)
			}
			if got := dev.Regressed != nil; got != tc.want.regressed {
				t.Errorf("dev regressed = %+v, want %v", dev.Regressed, tc.want.regressed)
			}
			c := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionStageRegressed)
			if (c != nil) != tc.want.regressed {
				t.Errorf("StageRegressed condition = %+v, want present %v", c, tc.want.regressed)
			}
			if c != nil && (c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, `stage "dev" regressed`)) {
				t.Errorf("StageRegressed condition = %+v, want True naming stage dev", c)
			}
			gotFailure := ""
			if f := status.Failure; f != nil {
				gotFailure = string(f.Action)
				if f.Reason != v1alpha1.ReasonStageRegressed || f.Stage != "dev" {
					t.Errorf("failure = %+v, want stage dev, reason StageRegressed", f)
				}
			}
			if gotFailure != tc.want.failure {
				t.Errorf("failure action = %q, want %q", gotFailure, tc.want.failure)
			}
			var regressionEvents []string
			for _, k := range eventKeys(action.Events) {
				if strings.HasSuffix(k, "/StageRegressed") || strings.HasSuffix(k, "/StageRecovered") || strings.HasSuffix(k, "/RegressionCheckInconclusive") {
					regressionEvents = append(regressionEvents, k)
				}
			}
			if !slices.Equal(regressionEvents, tc.want.events) {
				t.Errorf("regression events = %v, want %v", regressionEvents, tc.want.events)
			}
			if tc.want.requeueUpTo > 0 && (action.RequeueAfter <= 0 || action.RequeueAfter > tc.want.requeueUpTo) {
				t.Errorf("RequeueAfter = %v, want in (0, %v]", action.RequeueAfter, tc.want.requeueUpTo)
			}
			if tc.want.failure == string(v1alpha1.FailureAbort) {
				// Rule 4 acts on the failure at the next run.
				next := replan(t, tc.f.Snapshot, engine, action)
				if next.Status == nil || next.Status.Phase != v1alpha1.RolloutAborted {
					t.Errorf("next run = %s %+v, want the abort recorded (phase Aborted)", next.Type, next.Status)
				}
			}
		})
	}
}

// TestPlanRegressionCheckedOncePerInterval walks a done stage's watch
// minute by minute through an hour of an unchanged snapshot (every
// status write applied): it is checked once per interval, never more.
func TestPlanRegressionCheckedOncePerInterval(t *testing.T) {
	engine := newEngine(t)
	for _, interval := range []time.Duration{time.Minute, 5 * time.Minute, 7 * time.Minute} {
		f := regressionFixture(watchedDev(v1alpha1.RegressionWatch{Interval: &metav1.Duration{Duration: interval}}), "0")
		snap := f.Snapshot
		checks := 0
		for minute := 0; minute < 60; minute++ {
			snap.Now = metav1.NewTime(now.Add(time.Duration(minute) * time.Minute))
			action := Plan(snap, engine)
			checks += len(action.RegressionChecks)
			if action.Status != nil {
				snap.Policy = snap.Policy.DeepCopy()
				snap.Policy.Status = *action.Status.DeepCopy()
			}
		}
		// Done an hour before the first minute: due at once, then every interval.
		if want := 1 + 59/int(interval/time.Minute); checks != want {
			t.Errorf("interval %v: %d checks in an hour, want %d", interval, checks, want)
		}
	}
}

// TestRegressionReadsOnlyWhenDue checks the reconciler reads a done
// stage's statuses only when its check is due.
func TestRegressionReadsOnlyWhenDue(t *testing.T) {
	f := regressionFixture(watchedDev(v1alpha1.RegressionWatch{}), "1")
	if got := Reads(f.Policy, f.BindingPolicies, now).Watched; !slices.Equal(got, []string{"web.stage.dev"}) {
		t.Errorf("due: Watched = %v, want [web.stage.dev]", got)
	}
	stageRecord(t, &f.Policy.Status, "dev").LastRegressionCheckTime = ptr.To(metav1.NewTime(now.Add(-4 * time.Minute)))
	if got := Reads(f.Policy, f.BindingPolicies, now).Watched; len(got) != 0 {
		t.Errorf("checked 4m ago, interval 5m: Watched = %v, want none", got)
	}
}

type (
	ksCombinedStatus = ksv1alpha1.CombinedStatus
	ksBindingPolicy  = ksv1alpha1.BindingPolicy
)

// analysedDev is watchedDev(w) with an analysis "errors" (successful below
// 0.05) and a dryRun one "latency" that always fails, and
// regressionWatch.analyses as asked.
func analysedDev(w v1alpha1.RegressionWatch, analyses bool) v1alpha1.Stage {
	w.Analyses = analyses
	s := watchedDev(w)
	s.Analysis = []v1alpha1.Analysis{
		{Name: "errors", Provider: "prom", Query: "errors", SuccessCondition: `result.size() > 0 && result.all(v, v < 0.05)`},
		{Name: "latency", Provider: "prom", Query: "latency", SuccessCondition: `false`, DryRun: true},
	}
	return s
}

// watchMeasured adds to the snapshot the measurement of dev's analysis taken
// at t, with values or, when they are nil, errText.
func watchMeasured(analysis string, t metav1.Time, errText string, values ...float64) func(*Snapshot) {
	return func(s *Snapshot) {
		s.WatchedMeasurements = append(s.WatchedMeasurements, Measurement{Stage: "dev", Analysis: analysis, Time: t, Values: values, Error: errText})
	}
}

// TestPlanRegressionWatchAnalyses is rule 15b's table for
// regressionWatch.analyses: one measurement per analysis per check, judged
// as while the stage was active; Failed regresses, Inconclusive (or none)
// changes no verdict, dryRun never regresses, and nothing is recorded in
// the stage's analyses.
func TestPlanRegressionWatchAnalyses(t *testing.T) {
	engine := newEngine(t)
	report := v1alpha1.RegressionWatch{}
	abort := v1alpha1.RegressionWatch{OnRegression: v1alpha1.RegressionAbort}
	regressedBefore := func(s *Snapshot) {
		stageRecord(t, &s.Policy.Status, "dev").Regressed = &v1alpha1.StageRegression{Time: earlier, Message: "stage \"dev\" regressed: x"}
		regressionCondition(&s.Policy.Status, s.Policy, earlier)
	}
	analysisOnly := func(s v1alpha1.Stage) v1alpha1.Stage {
		s.Condition = ""
		return s
	}
	type want struct {
		regressed bool
		failure   string
		events    []string
		message   string // in dev's regressed message
	}
	cases := []struct {
		name string
		f    fixture
		want want
	}{
		{name: "analysis failed: regressed, naming it",
			f:    regressionFixture(analysedDev(report, true), "1").with(steps(watchMeasured("errors", now, "", 0.3))),
			want: want{regressed: true, events: []string{"Warning/StageRegressed"}, message: `analysis "errors" failed with [0.3]`}},
		{name: "analysis successful: healthy",
			f:    regressionFixture(analysedDev(report, true), "1").with(steps(watchMeasured("errors", now, "", 0.01))),
			want: want{}},
		{name: "analysis successful after a regression: recovered",
			f:    regressionFixture(analysedDev(report, true), "1").with(steps(watchMeasured("errors", now, "", 0.01), regressedBefore)),
			want: want{events: []string{"Normal/StageRecovered"}}},
		{name: "analysis inconclusive: no verdict, healthy stays healthy",
			f:    regressionFixture(analysedDev(report, true), "1").with(steps(watchMeasured("errors", now, "connection refused"))),
			want: want{events: []string{"Warning/RegressionCheckInconclusive"}}},
		{name: "analysis inconclusive: no verdict, regressed stays regressed",
			f:    regressionFixture(analysedDev(report, true), "1").with(steps(watchMeasured("errors", now, "connection refused"), regressedBefore)),
			want: want{regressed: true, events: []string{"Warning/RegressionCheckInconclusive"}}},
		{name: "analysis inconclusive with onRegression Abort: no abort",
			f: regressionFixture(analysedDev(abort, true), "1").with(steps(watchMeasured("errors", now, "timeout"),
				func(s *Snapshot) { s.Policy.Status.CurrentRevision = "v1" })),
			want: want{events: []string{"Warning/RegressionCheckInconclusive"}}},
		{name: "analysis not measured (over the space's bound): inconclusive",
			f:    regressionFixture(analysedDev(report, true), "1"),
			want: want{events: []string{"Warning/RegressionCheckInconclusive"}}},
		{name: "a measurement from before the check was due is not this check's",
			f:    regressionFixture(analysedDev(report, true), "1").with(steps(watchMeasured("errors", earlier, "", 0.3))),
			want: want{events: []string{"Warning/RegressionCheckInconclusive"}}},
		{name: "analyses not asked: a failing measurement is not judged",
			f:    regressionFixture(analysedDev(report, false), "1").with(steps(watchMeasured("errors", now, "", 0.3))),
			want: want{}},
		{name: "dryRun analysis failing: no regression",
			f:    regressionFixture(analysedDev(report, true), "1").with(steps(watchMeasured("errors", now, "", 0.01), watchMeasured("latency", now, "", 9))),
			want: want{}},
		{name: "condition unmet and analysis failed: both named",
			f:    regressionFixture(analysedDev(report, true), "0").with(steps(watchMeasured("errors", now, "", 0.3))),
			want: want{regressed: true, events: []string{"Warning/StageRegressed"}, message: `analysis "errors" failed`}},
		{name: "condition unmet, analysis inconclusive: regressed",
			f:    regressionFixture(analysedDev(report, true), "0").with(steps(watchMeasured("errors", now, "timeout"))),
			want: want{regressed: true, events: []string{"Warning/StageRegressed"}}},
		{name: "a stage judged by its analyses alone: failed, onRegression Abort aborts",
			f: regressionFixture(analysisOnly(analysedDev(abort, true)), "1").with(steps(watchMeasured("errors", now, "", 0.3),
				func(s *Snapshot) { s.Policy.Status.CurrentRevision = "v1" })),
			want: want{regressed: true, failure: string(v1alpha1.FailureAbort), events: []string{"Warning/StageRegressed"},
				message: `analysis "errors" failed`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.f.Policy.DeepCopy()
			action := Plan(tc.f.Snapshot, engine)
			status := &before.Status
			if action.Status != nil {
				status = action.Status
			}
			dev := stageRecord(t, status, "dev")
			if dev.LastRegressionCheckTime == nil || !dev.LastRegressionCheckTime.Equal(&now) || len(action.RegressionChecks) != 1 {
				t.Fatalf("dev not checked now: record %+v, checks %+v (action %s: %s)", dev, action.RegressionChecks, action.Type, action.Why)
			}
			if got := dev.Regressed != nil; got != tc.want.regressed {
				t.Errorf("dev regressed = %+v, want %v", dev.Regressed, tc.want.regressed)
			}
			if tc.want.message != "" && (dev.Regressed == nil || !strings.Contains(dev.Regressed.Message, tc.want.message)) {
				t.Errorf("dev regressed = %+v, want its message to say %q", dev.Regressed, tc.want.message)
			}
			if !equalAnalysesRecords(before.Status.StageNamed("dev").Analyses, dev.Analyses) {
				t.Errorf("dev's analyses record changed: %+v, was %+v", dev.Analyses, before.Status.StageNamed("dev").Analyses)
			}
			gotFailure := ""
			if f := status.Failure; f != nil {
				gotFailure = string(f.Action)
			}
			if gotFailure != tc.want.failure {
				t.Errorf("failure = %+v, want action %q", status.Failure, tc.want.failure)
			}
			var regressionEvents []string
			for _, k := range eventKeys(action.Events) {
				if strings.HasSuffix(k, "/StageRegressed") || strings.HasSuffix(k, "/StageRecovered") || strings.HasSuffix(k, "/RegressionCheckInconclusive") {
					regressionEvents = append(regressionEvents, k)
				}
			}
			if !slices.Equal(regressionEvents, tc.want.events) {
				t.Errorf("regression events = %v, want %v", regressionEvents, tc.want.events)
			}
		})
	}
}

// equalAnalysesRecords reports whether two lists of analysis records say the same.
func equalAnalysesRecords(a, b []v1alpha1.AnalysisStatus) bool {
	return slices.EqualFunc(a, b, func(x, y v1alpha1.AnalysisStatus) bool { return equalAnalysis(&x, &y) })
}

// TestRegressionAnalysesOnlyWhenDue checks what the reconciler measures
// after a plan without measurements: a done stage's analyses only when
// that plan checked it (its check due), only when its watch runs them,
// and never its dryRun ones.
func TestRegressionAnalysesOnlyWhenDue(t *testing.T) {
	engine := newEngine(t)
	measures := func(f fixture) []string {
		var out []string
		for _, w := range RegressionAnalyses(f.Policy, Plan(f.Snapshot, engine).RegressionChecks) {
			for _, a := range w.Analyses {
				out = append(out, w.Stage+"/"+w.BindingPolicy+"/"+a.Name)
			}
		}
		return out
	}
	f := regressionFixture(analysedDev(v1alpha1.RegressionWatch{}, true), "1")
	if got := measures(f); !slices.Equal(got, []string{"dev/web.stage.dev/errors"}) {
		t.Errorf("due: measures %v, want [dev/web.stage.dev/errors]", got)
	}
	stageRecord(t, &f.Policy.Status, "dev").LastRegressionCheckTime = ptr.To(metav1.NewTime(now.Add(-4 * time.Minute)))
	if got := measures(f); len(got) != 0 {
		t.Errorf("checked 4m ago, interval 5m: measures %v, want none", got)
	}
	if got := measures(regressionFixture(analysedDev(v1alpha1.RegressionWatch{}, false), "1")); len(got) != 0 {
		t.Errorf("analyses not asked: measures %v, want none", got)
	}
	busy := regressionFixture(analysedDev(v1alpha1.RegressionWatch{}, true), "1").with(func(s *Snapshot) {
		// prod's BindingPolicy is gone: the run creates it, and leaves the check to the next.
		s.BindingPolicies = slices.DeleteFunc(s.BindingPolicies, func(bp ksBindingPolicy) bool { return bp.Name == s.ActiveBindingPolicy.Name })
		s.ActiveBindingPolicy, s.Binding, s.CombinedStatuses = nil, nil, nil
	})
	if a := Plan(busy.Snapshot, engine); a.Type == ActionNone || a.Type == ActionUpdateStatus {
		t.Fatalf("busy fixture plans %s (%s), want another write", a.Type, a.Why)
	}
	if got := measures(busy); len(got) != 0 {
		t.Errorf("a run that creates a BindingPolicy: measures %v, want none (action %s)", got, Plan(busy.Snapshot, engine).Type)
	}
}

// steps applies each of fs in turn.
func steps(fs ...func(*Snapshot)) func(*Snapshot) {
	return func(s *Snapshot) {
		for _, f := range fs {
			f(s)
		}
	}
}
