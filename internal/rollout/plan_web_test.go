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
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// changeTicket is a web analysis (named error-rate, for the helpers of
// plan_analysis_test.go) that passes once the ticket is approved, fails
// when it is rejected and waits otherwise.
func changeTicket(count, inconclusiveLimit int32) v1alpha1.Analysis {
	return v1alpha1.Analysis{Name: "error-rate", Provider: "change", Count: count, InconclusiveLimit: inconclusiveLimit,
		Web:              &v1alpha1.WebRequest{Path: "tickets/{{policy}}/{{stage}}"},
		Interval:         &metav1.Duration{Duration: 30 * time.Second},
		SuccessCondition: `result.state == 'approved'`, FailureCondition: `result.state == 'rejected'`}
}

// answered adds a web answer of test's analysis error-rate taken at t.
func answered(t metav1.Time, answer string) func(*Snapshot) {
	return func(s *Snapshot) {
		s.Measurements = append(s.Measurements, Measurement{Stage: "test", Analysis: "error-rate", Time: t, Answer: []byte(answer)})
	}
}

// TestPlanWebAnalyses (rule 15): a web analysis's measurement is judged on
// its JSON answer, by conditions compiled for it, and then counts as a
// query's does: pass advances, fail fails the stage as onFailure says,
// wait (neither condition, no answer, a refused answer) is inconclusive
// within inconclusiveLimit, dryRun never gates.
func TestPlanWebAnalyses(t *testing.T) {
	engine := newEngine(t)
	long := `{"state": "pending", "note": "` + strings.Repeat("é", 400) + `"}`
	for _, tc := range []struct {
		name      string
		analysis  v1alpha1.Analysis
		onFailure v1alpha1.FailureAction
		measure   func(*Snapshot)
		// active is the active stage after; failure the failure's reason
		// and action, if any; phase and value the record's.
		active, failure string
		action          v1alpha1.FailureAction
		phase           v1alpha1.AnalysisPhase
		value, message  string
	}{
		{name: "approved passes and the stage advances", analysis: changeTicket(1, 0), onFailure: v1alpha1.FailureAbort,
			measure: answered(now, `{"state": "approved",  "by": "ops"}`), active: "prod", phase: v1alpha1.AnalysisSuccessful,
			value: `{"state":"approved","by":"ops"}`},
		{name: "rejected fails the stage and onFailure Abort aborts", analysis: changeTicket(3, 5), onFailure: v1alpha1.FailureAbort,
			measure: answered(now, `{"state": "rejected"}`), active: "test", failure: v1alpha1.ReasonAnalysisFailed,
			action: v1alpha1.FailureAbort, phase: v1alpha1.AnalysisFailed, value: `{"state":"rejected"}`},
		{name: "pending waits, within inconclusiveLimit", analysis: changeTicket(1, 5), onFailure: v1alpha1.FailureAbort,
			measure: answered(now, `{"state": "pending"}`), active: "test", phase: v1alpha1.AnalysisRunning,
			value: `{"state":"pending"}`, message: "neither the successCondition nor the failureCondition holds"},
		{name: "no answer waits, saying why", analysis: changeTicket(1, 5), onFailure: v1alpha1.FailureAbort,
			measure: func(s *Snapshot) {
				s.Measurements = append(s.Measurements, Measurement{Stage: "test", Analysis: "error-rate", Time: now,
					Error: `MetricProvider "change": QueryFailed: HTTP 503`})
			}, active: "test", phase: v1alpha1.AnalysisRunning, message: "HTTP 503"},
		{name: "a condition on a missing field waits", analysis: changeTicket(1, 5), onFailure: v1alpha1.FailureAbort,
			measure: answered(now, `{"status": "approved"}`), active: "test", phase: v1alpha1.AnalysisRunning, message: "no such key: state"},
		{name: "waiting past inconclusiveLimit holds for a person, even with Abort", analysis: changeTicket(3, 0), onFailure: v1alpha1.FailureAbort,
			measure: answered(now, `{"state": "pending"}`), active: "test", failure: v1alpha1.ReasonAnalysisInconclusive,
			action: v1alpha1.FailureHold, phase: v1alpha1.AnalysisInconclusive},
		{name: "a dry run's rejection does not gate", analysis: func() v1alpha1.Analysis { a := changeTicket(1, 0); a.DryRun = true; return a }(),
			onFailure: v1alpha1.FailureAbort, measure: answered(now, `{"state": "rejected"}`), active: "prod", phase: v1alpha1.AnalysisFailed},
		{name: "a long answer's value is cut to the CRD's bound, on a rune", analysis: changeTicket(3, 5), onFailure: v1alpha1.FailureHold,
			measure: answered(now, long), active: "test", phase: v1alpha1.AnalysisRunning, value: `{"state":"pending","note":"éé`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			action := planThrough(healthyTest(analysed(tc.onFailure, tc.analysis)).with(tc.measure).Snapshot, engine)
			if action.Type != ActionUpdateStatus || action.Status.ActiveStage != tc.active {
				t.Fatalf("action %s (%s), want a status write with %s active", action.Type, action.Why, tc.active)
			}
			switch f := action.Status.Failure; {
			case tc.failure == "" && f != nil:
				t.Errorf("failure %+v, want none", f)
			case tc.failure != "" && (f == nil || f.Reason != tc.failure || f.Action != tc.action):
				t.Errorf("failure %+v, want %s, %s", f, tc.failure, tc.action)
			}
			r := errorRateRecord(t, action.Status)
			if r.Phase != tc.phase || len(r.Measurements) != 1 {
				t.Fatalf("record %+v, want %s with one measurement", r, tc.phase)
			}
			m := r.Measurements[0]
			if !strings.HasPrefix(m.Value, tc.value) || len(m.Value) > v1alpha1.MaxMeasurementValue || !strings.Contains(m.Message, tc.message) {
				t.Errorf("measurement %+v, want the value %q and a message saying %q", m, tc.value, tc.message)
			}
		})
	}

	// A wait does not count towards count: with count 1, pending twice
	// keeps the stage waiting, then approved passes it.
	f := healthyTest(analysed(v1alpha1.FailureAbort, changeTicket(1, 5)))
	for i, answer := range []string{`{"state": "pending"}`, `{"state": "pending"}`, `{"state": "approved"}`} {
		at := metav1.NewTime(now.Add(time.Duration(i) * time.Minute))
		f.Now = at
		f.Measurements = nil
		action := planThrough(f.with(answered(at, answer)).Snapshot, engine)
		want := "test"
		if i == 2 {
			want = "prod"
		}
		if action.Type != ActionUpdateStatus || action.Status.ActiveStage != want {
			t.Fatalf("answer %d %s: action %s (%s), want %s active", i, answer, action.Type, action.Why, want)
		}
		if i < 2 {
			if c := condition(t, action.Status, v1alpha1.ConditionProgressing); !strings.Contains(c.Message, "error-rate (0 of 1)") {
				t.Errorf("answer %d: Progressing %q, want error-rate (0 of 1)", i, c.Message)
			}
		}
		f.Policy.Status = *action.Status
	}

	// The conditions are compiled for the analysis's kind: a web
	// condition over a query's values does not compile, nor the reverse.
	query := errorRate(1)
	query.SuccessCondition = `result.state == 'approved'`
	if action := planThrough(healthyTest(analysed(v1alpha1.FailureHold, query)).Snapshot, engine); action.Status == nil ||
		action.Status.Phase != v1alpha1.RolloutBlocked {
		t.Errorf("a web condition on a query's values: action %s (%s), want the rollout Blocked", action.Type, action.Why)
	}
}
