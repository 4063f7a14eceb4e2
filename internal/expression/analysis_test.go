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
