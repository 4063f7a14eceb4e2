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
	"fmt"
	"math"
	"math/rand/v2"
	"regexp/syntax"
	"runtime"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
)

// nestedReplace is a condition whose string grows tenfold with every
// replace: nine levels would allocate gigabytes for a constant cost.
var nestedReplace = `'xxxxxxxxxx'` + strings.Repeat(`.replace('x', 'xxxxxxxxxx')`, 8) + `.size() == 0`

// hostileConditions are expressions whose work does not depend on the size
// of the CombinedStatus and is far above any sensible limit.
var hostileConditions = map[string]string{
	"range-map in every result (issue)": `obj.results.exists(r, lists.range(300000).map(i, 'x').size() == 0)`,
	"nested replace":                    nestedReplace,
	"join of a large list":              `lists.range(100000).map(i, 'xxxxxxxxxx').join('').replace('x', 'xxxxxxxxxx').size() == 0`,
	"replace of an input string":        `obj.metadata.name.replace('', obj.metadata.name).replace('', obj.metadata.name).size() == 0`,
	"nested iteration over ranges":      `lists.range(1000).all(i, lists.range(1000).all(j, lists.range(1000).all(k, i + j + k >= 0)))`,
}

func TestHostileExpressionsAreRejectedAtCompileTime(t *testing.T) {
	e := newEngine(t)
	for name, src := range hostileConditions {
		t.Run(name, func(t *testing.T) {
			_, err := e.Compile(KindCondition, src)
			var exprErr *Error
			if !errors.As(err, &exprErr) || exprErr.Reason != ErrorReason("EstimatedCostTooHigh") {
				t.Fatalf("Compile(%s) = %v, want an error with reason EstimatedCostTooHigh", src, err)
			}
			if !strings.Contains(err.Error(), "estimated") {
				t.Errorf("error %q does not say that the estimated cost is too high", err)
			}
		})
	}
}

// TestExpressionsOfTheRepositoryCompile checks that the compile-time estimate
// accepts the expressions used in the repository's tests, samples and docs.
func TestExpressionsOfTheRepositoryCompile(t *testing.T) {
	e := newEngine(t)
	conditions := []string{
		seedCondition,
		seedConditionMultiLine,
		`obj.results.exists(r, r.name == 'deployments-aggregator')`,
		`obj.results.exists(r, r.name == 'deployments-aggregator' && r.rows.exists(row, row.columns.exists(col, col.float == '1')))`,
		`obj.results[0].rows[0].columns[0].float.contains('.') || double(obj.results[0].rows[0].columns[0].float) >= 1`,
		`obj.metadata.labels["status.kubestellar.io/name"] == "nginx" && obj.kind == "CombinedStatus"`,
		`obj.?metadata.?annotations.?foo.orValue("none") == "none"`,
		`obj.results[0].rows[99].columns[0].float == '1'`,
		`obj.results[0].rows[0].columns[0].missing == 'x'`,
		`obj.results.all(r, r.rows.all(row, row.columns.all(col, col.type != 'String' || col.string.lowerAscii().startsWith('ready'))))`,
		`obj.results.map(r, r.name).join(',').contains('deployments')`,
	}
	for _, src := range conditions {
		if _, err := e.Compile(KindCondition, src); err != nil {
			t.Errorf("Compile(condition %s): %v", src, err)
		}
	}
	filters := []string{
		`downsyncClause.resource == "deployments"`,
		`downsyncClause.name.split("-")[1] == "frontend"`,
		`downsyncClause.name.lowerAscii() == "web"`,
		`downsyncClause.statusCollectors.sort() == ["my-collector", "other"]`,
		`downsyncClause.statusCollectors.exists(c, c.startsWith("deploy"))`,
		`!downsyncClause.createOnly && downsyncClause.wantMultiWECReportedState && !downsyncClause.wantSingletonReportedState`,
	}
	for _, src := range filters {
		if _, err := e.Compile(KindFilter, src); err != nil {
			t.Errorf("Compile(filter %s): %v", src, err)
		}
	}
}

// TestRuntimeCostIsSizeAware checks that an expression whose estimate is
// acceptable but which builds a long list element by element is stopped by
// the runtime cost limit rather than running for seconds.
func TestRuntimeCostIsSizeAware(t *testing.T) {
	e := newEngine(t)
	p, err := e.Compile(KindCondition, `lists.range(100000).map(i, 'x').size() == 0`)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	cs := combinedStatus("deployments-aggregator", []ksv1alpha1.Value{number("1")})
	_, err = p.EvalCondition(cs)
	var exprErr *Error
	if !errors.As(err, &exprErr) || exprErr.Reason != ReasonCostLimitExceeded {
		t.Fatalf("EvalCondition = %v, want an error with reason %s", err, ReasonCostLimitExceeded)
	}
}

// TestRuntimeLimitsStopHostileExpressions lifts the compile-time estimate and
// checks that the runtime limits alone stop every hostile expression with a
// cost reason, without allocating more than the cost limit pays for (about
// 1 MB per evaluation by default, for strings).
func TestRuntimeLimitsStopHostileExpressions(t *testing.T) {
	e := newEngine(t, WithEstimatedCostLimit(math.MaxUint64))
	cs := combinedStatus("deployments-aggregator", []ksv1alpha1.Value{number("1")})
	conditions := map[string]string{
		"nine nested replaces (10 GB)": `'xxxxxxxxxx'` + strings.Repeat(`.replace('x', 'xxxxxxxxxx')`, 9) + `.size() == 0`,
		"join of large strings":        `lists.range(1000).map(i, 'xxxxxxxxxx'.replace('x', 'xxxxxxxxxx').replace('x', 'xxxxxxxxxx').replace('x', 'xxxxxxxxxx')).join('').size() == 0`,
		"huge range":                   `lists.range(1000000000).size() == 0`,
	}
	for name, src := range hostileConditions {
		if !strings.Contains(src, "obj.metadata.name") { // the test object's name is short
			conditions[name] = src
		}
	}
	for name, src := range conditions {
		t.Run(name, func(t *testing.T) {
			p, err := e.Compile(KindCondition, src)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err = p.EvalCondition(cs)
			runtime.ReadMemStats(&after)
			if !IsTooCostly(err) {
				t.Fatalf("EvalCondition = %v, want an error with a cost reason", err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
				t.Errorf("evaluation allocated %d MiB before being stopped", alloc>>20)
			}
		})
	}
}

func TestEvalTimeout(t *testing.T) {
	e := newEngine(t, WithCostLimit(math.MaxUint64/2), WithEvalTimeout(time.Millisecond))
	p, err := e.Compile(KindCondition, `lists.range(300000).all(i, i >= 0)`)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	_, err = p.EvalCondition(combinedStatus("x"))
	var exprErr *Error
	if !errors.As(err, &exprErr) || exprErr.Reason != ReasonTimeout {
		t.Fatalf("EvalCondition = %v, want an error with reason %s", err, ReasonTimeout)
	}
	// The cause goes into the policy's status: it must not change with the
	// time the evaluation ran, or every reconcile would write it anew.
	if want := "stopped at the evaluation timeout of 1ms: operation interrupted"; !strings.HasPrefix(exprErr.Err.Error(), want) {
		t.Errorf("cause %q, want it to start %q", exprErr.Err, want)
	}
}

func TestBudget(t *testing.T) {
	cs := combinedStatus("deployments-aggregator", []ksv1alpha1.Value{number("1")})
	t.Run("cost", func(t *testing.T) {
		e := newEngine(t)
		p, err := e.Compile(KindCondition, seedCondition)
		if err != nil {
			t.Fatalf("Compile: %v", err)
		}
		one := e.NewBudget()
		if ok, err := one.EvalCondition(p, cs); err != nil || !ok {
			t.Fatalf("EvalCondition = %v, %v", ok, err)
		}
		per := one.Spent()
		if per == 0 {
			t.Fatal("an evaluation spent nothing")
		}
		e = newEngine(t, WithBudget(3*per, time.Minute))
		p, _ = e.Compile(KindCondition, seedCondition)
		b := e.NewBudget()
		for i := range 3 {
			if ok, err := b.EvalCondition(p, cs); err != nil || !ok {
				t.Fatalf("evaluation %d = %v, %v", i, ok, err)
			}
		}
		_, err = b.EvalCondition(p, cs)
		var exprErr *Error
		if !errors.As(err, &exprErr) || exprErr.Reason != ReasonBudgetExhausted || !IsTooCostly(err) {
			t.Fatalf("fourth evaluation = %v, want an error with reason %s", err, ReasonBudgetExhausted)
		}
		// A fresh budget pays again.
		if _, err := e.NewBudget().EvalCondition(p, cs); err != nil {
			t.Fatalf("evaluation with a fresh budget: %v", err)
		}
	})
	t.Run("time", func(t *testing.T) {
		e := newEngine(t, WithCostLimit(math.MaxUint64/2), WithBudget(math.MaxUint64, 5*time.Millisecond))
		p, err := e.Compile(KindCondition, `lists.range(300000).all(i, i >= 0)`)
		if err != nil {
			t.Fatalf("Compile: %v", err)
		}
		b := e.NewBudget()
		_, err = b.EvalCondition(p, cs)
		var exprErr *Error
		if !errors.As(err, &exprErr) || exprErr.Reason != ReasonBudgetExhausted {
			t.Fatalf("EvalCondition = %v, want an error with reason %s", err, ReasonBudgetExhausted)
		}
		f, err := e.Compile(KindFilter, `downsyncClause.resource == "deployments"`)
		if err != nil {
			t.Fatalf("Compile: %v", err)
		}
		if _, err := b.EvalFilter(f, Clause{}); !errors.As(err, &exprErr) || exprErr.Reason != ReasonBudgetExhausted {
			t.Fatalf("EvalFilter after the budget ran out = %v, want reason %s", err, ReasonBudgetExhausted)
		}
	})
}

func TestLimitOptionsAreValidated(t *testing.T) {
	for name, opt := range map[string]Option{
		"estimated cost limit 0": WithEstimatedCostLimit(0),
		"timeout 0":              WithEvalTimeout(0),
		"budget cost 0":          WithBudget(0, time.Second),
		"budget time 0":          WithBudget(1, 0),
	} {
		if _, err := NewEngine(opt); err == nil {
			t.Errorf("NewEngine(%s) succeeded", name)
		}
	}
}

// TestEvalTimeoutStopsNestedComprehensions checks that the timeout stops an
// evaluation whose work is in nested comprehensions. (cel-go counts interrupt
// checks across all comprehensions of an evaluation; with a check frequency
// above one, an inner comprehension that stops at every check can hide the
// interrupt from the outer ones, which then run to the end.)
func TestEvalTimeoutStopsNestedComprehensions(t *testing.T) {
	e := newEngine(t, WithEstimatedCostLimit(math.MaxUint64), WithCostLimit(math.MaxUint64/2), WithEvalTimeout(20*time.Millisecond))
	p, err := e.Compile(KindCondition, hostileConditions["nested iteration over ranges"])
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	_, err = p.EvalCondition(combinedStatus("x"))
	var exprErr *Error
	if !errors.As(err, &exprErr) || exprErr.Reason != ReasonTimeout {
		t.Fatalf("EvalCondition = %v, want an error with reason %s", err, ReasonTimeout)
	}
}

// TestLargeMatchesAreRefusedBeforeTheyRun takes a hole a review found: Go's
// regexp matches in time proportional to the string's length times the
// compiled pattern's instructions, cel-go charges a match by the pattern's
// characters (the global form matches(s, re) not at all), and one call is
// never interrupted. (x|y){1000}z is 12 characters but about 4,000
// instructions: matched against a 1 MB name it ran 12 s, past the
// timeout, for 300,006 units. Such a match is refused before it runs, with
// a cost reason, for constant and computed patterns in both forms (the
// guard's own error, or the cost limit, which the refused match is still
// charged against); a match within the limit still runs.
func TestLargeMatchesAreRefusedBeforeTheyRun(t *testing.T) {
	e := newEngine(t)
	const pattern = `(x|y){1000}z`
	cs := combinedStatus("deployments-aggregator", []ksv1alpha1.Value{number("1")})
	cs.Name = strings.Repeat("x", 200_000)
	cs.Labels["pattern"] = pattern
	const computed = `obj.metadata.labels['pattern']`
	for _, src := range []string{
		`obj.metadata.name.matches('` + pattern + `')`,
		`matches(obj.metadata.name, '` + pattern + `')`,
		`obj.metadata.name.matches(` + computed + `)`,
		`matches(obj.metadata.name, ` + computed + `)`,
	} {
		p, err := e.Compile(KindCondition, src)
		if err != nil {
			t.Fatalf("Compile(%s): %v", src, err)
		}
		start := time.Now()
		_, err = p.EvalCondition(cs)
		took := time.Since(start)
		if !IsTooCostly(err) || took > time.Second {
			t.Errorf("%s: EvalCondition = %v after %s, want it refused at once with a cost reason", src, err, took)
		}
	}
	small := combinedStatus("deployments-aggregator", []ksv1alpha1.Value{number("1")})
	small.Name = strings.Repeat("x", 1000) + "z"
	small.Labels["pattern"] = pattern
	for _, src := range []string{`obj.metadata.name.matches('(x|y){1000}z')`, `matches(obj.metadata.name, ` + computed + `)`} {
		p, err := e.Compile(KindCondition, src)
		if err != nil {
			t.Fatalf("Compile(%s): %v", src, err)
		}
		if ok, err := p.EvalCondition(small); !ok || err != nil {
			t.Errorf("%s on a 1,001-byte name = %v, %v, want true", src, ok, err)
		}
	}
}

// TestGlobalMatchesIsChargedAsTheMemberForm: cel-go charges
// s.matches(re) by the sizes of s and re, but matches(s, re) one unit.
func TestGlobalMatchesIsChargedAsTheMemberForm(t *testing.T) {
	e := trackingEngine(t)
	obj := lopsided(1, 0, 0, 100_000)
	member, _, _ := measure(t, e, `obj.metadata.name.matches('^x+$')`, obj)
	global, _, _ := measure(t, e, `matches(obj.metadata.name, '^x+$')`, obj)
	if member < 10_000 || global != member {
		t.Errorf("tracked cost of matches(s, re) %d, of s.matches(re) %d: want the same, by the sizes", global, member)
	}
}

// TestLargePatternsAreRefusedBeforeTheyCompile takes a second review's
// hole: a pattern's instructions were counted by compiling it, and
// x{1000} repeated 3,000 times (21 KB, three million instructions) took
// 3.6 s to compile and kept 133 MB, constant or built by the expression.
// Both are refused now, the constant one at compile time, each in a few
// milliseconds; here with 500 repetitions, under MaxRegexBytes.
func TestLargePatternsAreRefusedBeforeTheyCompile(t *testing.T) {
	e := newEngine(t)
	cs := combinedStatus("deployments-aggregator", []ksv1alpha1.Value{number("1")})
	start := time.Now()
	p, err := e.Compile(KindCondition, `'a'.matches(lists.range(500).map(i, 'x{1000}').join())`)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	if _, err := p.EvalCondition(cs); !IsTooCostly(err) || !strings.Contains(err.Error(), "instructions") {
		t.Errorf("a built pattern of 500,000 instructions: EvalCondition = %v, want it refused for its instructions", err)
	}
	_, err = e.Compile(KindCondition, `'a'.matches('`+strings.Repeat("x{1000}", 500)+`')`)
	if err == nil || !strings.Contains(err.Error(), "instructions") {
		t.Errorf("a constant pattern of 500,000 instructions: Compile = %v, want it refused for its instructions", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("refusing both took %s", took)
	}
}

// TestMatchesAreChargedByInstructions: the cost limit covers all the
// matches of an evaluation, not each one alone. Ten matches of
// (x|y){1000}z (3,003 instructions) against 1,400 bytes are about 1.06
// million units by instructions; by the pattern's characters, about 42,000.
func TestMatchesAreChargedByInstructions(t *testing.T) {
	// A timeout no loaded machine reaches: the subject is the cost limit,
	// which must stop the evaluation first.
	e := newEngine(t, WithEvalTimeout(time.Minute))
	cs := combinedStatus("deployments-aggregator", []ksv1alpha1.Value{number("1")})
	cs.Name = strings.Repeat("x", 1400)
	p, err := e.Compile(KindCondition, `[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].exists(i, obj.metadata.name.matches('(x|y){1000}z'))`)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	var exprErr *Error
	if _, err := p.EvalCondition(cs); !errors.As(err, &exprErr) || exprErr.Reason != ReasonCostLimitExceeded {
		t.Errorf("EvalCondition = %v, want an error with reason %s", err, ReasonCostLimitExceeded)
	}
}

// TestRegexInstructionsAreAnUpperBound compares the count on the parsed
// pattern with the program regexp compiles, on chosen patterns (among them
// a fourth review's: x{0} compiles to a no-op, and a star of what can match
// the empty string to two instructions more) and on random ones.
func TestRegexInstructionsAreAnUpperBound(t *testing.T) {
	checked := 0
	check := func(pattern string) {
		t.Helper()
		parsed, err := syntax.Parse(pattern, syntax.Perl)
		if err != nil {
			return // the generator does not avoid every invalid pattern
		}
		prog, err := syntax.Compile(parsed.Simplify())
		if err != nil {
			return
		}
		checked++
		if got, want := regexInstructions(parsed), uint64(len(prog.Inst)); got < want {
			t.Errorf("%q: counted %d instructions, regexp compiles %d", pattern, got, want)
		}
	}
	for _, pattern := range []string{``, `a`, `abc`, `^v[0-9]+$`, `(x|y){1000}z`, `x{2,5}`, `x{3,}`, `(?i)héllo`, `a*b+c?`,
		`((a|b|c){2,3}d){4}`, `[a-z0-9._-]{1,63}`, `^(?:[a-z]+\.)*example\.com$`, `\bword\b|\d{3}-\d{4}`, `(a{0,4}){0,5}`, `.*`, `(?s).+?`,
		`a{0}a{0}a{0}a{0}`, `(?:a?)*`, `(?:^)*`, `(a?)*`, `(?:a?){0,}`, `(?:a?){2,}`, `(?:a{0}|b?){3,}c{0,0}`} {
		check(pattern)
	}
	r := rand.New(rand.NewPCG(25, 11))
	atoms := []string{`a`, `b`, `ab`, `[ab]`, `.`, `^`, `$`, `\b`, `a{0}`, `(?i)a`, ``}
	var gen func(depth int) string
	gen = func(depth int) string {
		if depth == 0 || r.IntN(3) == 0 {
			return atoms[r.IntN(len(atoms))]
		}
		x := gen(depth - 1)
		switch r.IntN(9) {
		case 0:
			return x + gen(depth-1)
		case 1:
			return `(?:` + x + `|` + gen(depth-1) + `)`
		case 2:
			return `(` + x + `)`
		case 3:
			return `(?:` + x + `)*`
		case 4:
			return `(?:` + x + `)+`
		case 5:
			return `(?:` + x + `)?`
		case 6:
			return fmt.Sprintf(`(?:%s){%d,}`, x, r.IntN(4))
		case 7:
			n := r.IntN(4)
			return fmt.Sprintf(`(?:%s){%d,%d}`, x, n, n+r.IntN(4))
		}
		return `(?:` + x + `)*?`
	}
	for range 20000 {
		check(gen(4))
	}
	if checked < 15000 {
		t.Errorf("only %d patterns checked: the generator makes invalid ones", checked)
	}
}

// TestNoOpRepetitionsAreCounted takes the fourth review's pattern: counted
// as 4,003 instructions, it compiled to 400,000, took 83 MB and matched
// 5,000 bytes in 8 s within the cost limit.
func TestNoOpRepetitionsAreCounted(t *testing.T) {
	pattern := strings.Repeat("(?:"+strings.Repeat("a{0}", 100)+"){1000}", 4) + "[ab]"
	var tooLarge *errPatternTooLarge
	if _, err := compileRegex(pattern); !errors.As(err, &tooLarge) || tooLarge.unit != "instructions" {
		t.Errorf("compileRegex = %v, want the pattern refused for its instructions", err)
	}
}

// TestLongPatternsAreRefused: a character class holds any number of bytes
// in one instruction, and compiled patterns are cached by their text, so a
// pattern longer than MaxRegexBytes is refused before it is parsed.
func TestLongPatternsAreRefused(t *testing.T) {
	e := newEngine(t)
	cs := combinedStatus("deployments-aggregator", []ksv1alpha1.Value{number("1")})
	cs.Labels["pattern"] = "[" + strings.Repeat("a", MaxRegexBytes) + "]"
	p, err := e.Compile(KindCondition, `obj.metadata.name.matches(obj.metadata.labels['pattern'])`)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	if _, err := p.EvalCondition(cs); !IsTooCostly(err) || !strings.Contains(err.Error(), "bytes or more") {
		t.Errorf("EvalCondition = %v, want the pattern refused for its length", err)
	}
	cs.Labels["pattern"] = "[" + strings.Repeat("a", MaxRegexBytes-2) + "]"
	if ok, err := p.EvalCondition(cs); ok || err != nil {
		t.Errorf("a pattern of MaxRegexBytes: EvalCondition = %v, %v, want false", ok, err)
	}
}

// TestTwentyThousandRowsFitTheDefaultLimits: a condition of the seed's
// shape reads a CombinedStatus of 20,000 rows (a stage of 20,000 clusters)
// with cost tracking, within the default cost limit and evaluation timeout:
// cost tracking must take time linear in the rows. The times are in
// BenchmarkConditionOverManyRows.
func TestTwentyThousandRowsFitTheDefaultLimits(t *testing.T) {
	p, err := newEngine(t).Compile(KindCondition, manyRowsCondition)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	evalTracked(t, p, largeStatus("twenty-thousand-rows", "1", 20000))
}

// TestReplaceAndJoinRefuseWhatTheLimitDoesNotPayFor: a replace or a join
// whose result has more bytes than the cost limit has units is refused
// before it is built, not charged after (cel-go charges a unit for every
// character they build).
func TestReplaceAndJoinRefuseWhatTheLimitDoesNotPayFor(t *testing.T) {
	e := newEngine(t, WithEstimatedCostLimit(math.MaxUint64), WithCostLimit(1000))
	cs := combinedStatus("deployments-aggregator", []ksv1alpha1.Value{str(strings.Repeat("x", 500))})
	const value = `obj.results[0].rows[0].columns[0].string`
	for name, src := range map[string]string{
		"replace": value + `.replace('x', 'xxxxxxxxxx').size() > 0`,
		"join":    `[` + value + `, ` + value + `, ` + value + `].join('').size() > 0`,
	} {
		t.Run(name, func(t *testing.T) {
			p, err := e.Compile(KindCondition, src)
			if err != nil {
				t.Fatalf("Compile(%s): %v", src, err)
			}
			_, err = p.EvalCondition(cs)
			var tooLarge *errResultTooLarge
			if !errors.As(err, &tooLarge) || !IsTooCostly(err) {
				t.Fatalf("EvalCondition(%s) = %v, want it refused before the result was built, with a cost reason", src, err)
			}
		})
	}
}
