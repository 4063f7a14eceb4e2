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

package expression

import (
	"errors"
	"strings"
	"testing"
)

// TestAnalyses evaluates analysis conditions on measured values.
func TestAnalyses(t *testing.T) {
	e := newEngine(t)
	for _, tc := range []struct {
		source string
		values []float64
		want   bool
	}{
		{`result.size() > 0 && result.all(v, v < 0.01)`, []float64{0.001, 0.002}, true},
		{`result.size() > 0 && result.all(v, v < 0.01)`, []float64{0.001, 0.2}, false},
		{`result.size() > 0 && result.all(v, v < 0.01)`, nil, false},
		{`result[0] >= 1`, []float64{1}, true},
		{`math.greatest(result) > 5.0`, []float64{1, 7, 3}, true},
	} {
		p, err := e.Compile(KindAnalysis, tc.source)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tc.source, err)
		}
		got, err := p.EvalAnalysis(tc.values)
		if err != nil || got != tc.want {
			t.Errorf("%q on %v = %v, %v; want %v", tc.source, tc.values, got, err, tc.want)
		}
	}
}

// reasonOf returns the reason of an *Error, or "".
func reasonOf(err error) ErrorReason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// TestAnalysisErrors checks that an analysis condition that cannot say
// yes or no says why, and that the kinds do not mix.
func TestAnalysisErrors(t *testing.T) {
	e := newEngine(t)
	p, err := e.Compile(KindAnalysis, `result[0] > 1.0`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.EvalAnalysis(nil); reasonOf(err) != ReasonEvaluationError {
		t.Errorf("indexing an empty result: got %v, want an evaluation error", err)
	}
	if _, err := p.EvalAnalysis(make([]float64, MaxResultValues+1)); reasonOf(err) != ReasonEvaluationError {
		t.Errorf("%d values: got %v, want an evaluation error", MaxResultValues+1, err)
	}
	if _, err := p.EvalCondition(combinedStatus("r")); reasonOf(err) != ReasonWrongKind {
		t.Errorf("an analysis program as a condition: got %v, want a wrong kind error", err)
	}
	if _, err := e.Compile(KindAnalysis, `obj.results.size() > 0`); err == nil {
		t.Error("an analysis condition compiled with the condition's variable obj")
	}
	if _, err := e.Compile(KindAnalysis, `result.size()`); err == nil {
		t.Error("an analysis condition that is not boolean compiled")
	}
	if _, err := e.Compile(KindAnalysis, `result.all(a, result.all(b, result.all(c, a + b + c >= 0.0)))`); !IsTooCostly(err) {
		t.Errorf("a condition cubic in the %d values it may get: got %v, want it refused as too costly", MaxResultValues, err)
	}
	square, err := e.Compile(KindAnalysis, `result.all(a, result.all(b, a + b >= 0.0))`)
	if err != nil {
		t.Fatalf("a condition square in the values refused: %v", err)
	}
	if ok, err := square.EvalAnalysis(make([]float64, 100)); err != nil || !ok {
		t.Errorf("a condition square in 100 values = %v, %v; want true", ok, err)
	}
	if _, err := square.EvalAnalysis(make([]float64, MaxResultValues)); !IsTooCostly(err) {
		t.Errorf("a condition square in %d values: got %v, want it stopped by the cost limit", MaxResultValues, err)
	}
}

// TestWebAnalyses evaluates web analysis conditions on JSON answers: the
// answer is `result`, objects are maps, whole numbers ints and others
// doubles; an answer DecodeJSON refuses, or a condition over a missing
// field, is an evaluation error (the measurement is inconclusive); the
// kinds do not mix.
func TestWebAnalyses(t *testing.T) {
	e := newEngine(t)
	for _, tc := range []struct {
		source, answer string
		want           bool
		err            ErrorReason
	}{
		{`result.state == 'approved'`, `{"state": "approved"}`, true, ""},
		{`result.state == 'approved'`, `{"state": "pending"}`, false, ""},
		{`result.approvals >= 2 && result.approvals == 2`, `{"approvals": 2}`, true, ""},
		{`type(result.approvals) == int && type(result.ratio) == double`, `{"approvals": 2, "ratio": 0.5}`, true, ""},
		{`result.checks.all(c, c.ok)`, `{"checks": [{"ok": true}, {"ok": true}]}`, true, ""},
		{`result.size() == 2 && result[1] == null`, `[1, null]`, true, ""},
		{`has(result.ticket) && result.ticket.closed`, `{}`, false, ""},
		{`result.state == 'approved'`, `{}`, false, ReasonEvaluationError},
		{`result.state == 'approved'`, `not json`, false, ReasonEvaluationError},
		{`result == 1`, strings.Repeat("[", MaxJSONDepth+1) + strings.Repeat("]", MaxJSONDepth+1), false, ReasonEvaluationError},
	} {
		p, err := e.Compile(KindWebAnalysis, tc.source)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tc.source, err)
		}
		got, err := p.EvalWebAnalysis([]byte(tc.answer))
		if reasonOf(err) != tc.err || got != tc.want {
			t.Errorf("%q on %s = %v, %v; want %v, %q", tc.source, tc.answer, got, err, tc.want, tc.err)
		}
	}
	p, err := e.Compile(KindWebAnalysis, `result.state == 'approved'`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.EvalAnalysis([]float64{1}); reasonOf(err) != ReasonWrongKind {
		t.Errorf("a web analysis program on values: got %v, want a wrong kind error", err)
	}
	if _, err := e.Compile(KindWebAnalysis, `result.size()`); err == nil {
		t.Error("a web analysis condition that is not boolean compiled")
	}
	if _, err := p.EvalWebAnalysis([]byte(`{"state": 1}`)); err != nil {
		t.Errorf("a field of another type compared: %v", err)
	}
	// What the estimate lets through (it spreads an answer's bytes over
	// the levels of nesting, as for a CombinedStatus), the cost limit
	// stops on a large answer.
	cubic, err := e.Compile(KindWebAnalysis, `result.items.all(a, result.items.all(b, result.items.all(c, a == b && b == c)))`)
	if err != nil {
		t.Fatal(err)
	}
	items := `{"items": [` + strings.TrimSuffix(strings.Repeat(`1, `, 1000), ", ") + `]}`
	if _, err := cubic.EvalWebAnalysis([]byte(items)); !IsTooCostly(err) {
		t.Errorf("a condition cubic in 1000 items: got %v, want it stopped by the cost limit", err)
	}
}
