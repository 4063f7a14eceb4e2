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
