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
	"strings"
	"testing"
)

// TestErrorQuotesTheExpressionOnceAndCuts checks that an error on a long
// expression quotes it once, cut, and that cel-go's source lines are not
// quoted again in the cause.
func TestErrorQuotesTheExpressionOnceAndCuts(t *testing.T) {
	engine, err := NewEngine()
	if err != nil {
		t.Fatal(err)
	}
	filler := strings.Repeat("a", 4000)
	source := "obj.results.exists(r, r.name == '" + filler + "' &&"
	_, err = engine.Compile(KindCondition, source)
	if err == nil {
		t.Fatal("the expression compiled")
	}
	msg := err.Error()
	if len(msg) > MaxQuotedExpression+MaxCause+100 {
		t.Errorf("message of %d bytes, want at most %d: %q", len(msg), MaxQuotedExpression+MaxCause+100, msg)
	}
	if n := strings.Count(msg, "obj.results.exists("); n != 1 {
		t.Errorf("message quotes the expression %d times, want once: %q", n, msg)
	}
	if strings.Contains(msg, filler[:MaxQuotedExpression]) {
		t.Errorf("message quotes more than %d bytes of the expression: %q", MaxQuotedExpression, msg)
	}
	for _, want := range []string{`condition "obj.results.exists(r, r.name == 'aaa`, `…`, "(4037 bytes)", "compile error", "Syntax error"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

// TestErrorKeepsShortExpressionsWhole checks the common case: a short
// expression is quoted whole, on one line, with the cause's position.
func TestErrorKeepsShortExpressionsWhole(t *testing.T) {
	engine, err := NewEngine()
	if err != nil {
		t.Fatal(err)
	}
	source := "obj.results.exists(r,\n r.name == 'x' &&"
	_, err = engine.Compile(KindCondition, source)
	if err == nil {
		t.Fatal("the expression compiled")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, `condition "obj.results.exists(r,\n r.name == 'x' &&": compile error: ERROR: <input>:2:`) {
		t.Errorf("message %q does not quote the whole expression, then the position", msg)
	}
	if strings.Contains(msg, "\n") || strings.Contains(msg, " | ") {
		t.Errorf("message %q quotes cel-go's source lines", msg)
	}
}

// TestQuoteExpressionCutsAtARuneBoundary checks that cutting never splits a
// multi-byte character.
func TestQuoteExpressionCutsAtARuneBoundary(t *testing.T) {
	source := strings.Repeat("é", MaxQuotedExpression) // two bytes each
	got := QuoteExpression(source)
	want := `"` + strings.Repeat("é", MaxQuotedExpression/2) + `"… (400 bytes)`
	if got != want {
		t.Errorf("QuoteExpression = %q, want %q", got, want)
	}
}
