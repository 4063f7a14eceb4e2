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
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
)

// measure evaluates the condition src on the JSON-form input obj with cost
// tracking (under a limit high enough never to stop it) and returns the
// tracked cost and outcome, and the program, whose bound is nil when src is
// not eligible for evaluation without tracking.
func measure(t *testing.T, e *Engine, src string, obj map[string]any) (cost uint64, out string, p *Program) {
	t.Helper()
	p, err := e.Compile(KindCondition, src)
	if err != nil {
		t.Fatalf("Compile(%s): %v", src, err)
	}
	val, details, err := p.prog.Eval(conditionVars(celValue(obj)))
	if details == nil || details.ActualCost() == nil {
		t.Fatalf("%s: no tracked cost", src)
	}
	return *details.ActualCost(), outcome(val, err), p
}

// outcome renders a result for comparison: the value, or that it failed.
func outcome(val any, err error) string {
	if err != nil {
		return "error"
	}
	return fmt.Sprint(val)
}

// trackingEngine is an engine whose limits never stop an evaluation, to
// measure tracked costs.
func trackingEngine(t *testing.T) *Engine {
	return newEngine(t, WithCostLimit(math.MaxUint64/2), WithEstimatedCostLimit(math.MaxUint64))
}

// checkBound fails the test if src is not eligible for evaluation without
// tracking, if its tracked cost on obj is above its bound, or if evaluating
// it without tracking gives another outcome.
func checkBound(t *testing.T, e *Engine, src string, obj map[string]any) {
	t.Helper()
	cost, tracked, p := measure(t, e, src, obj)
	if p.bound == nil {
		t.Errorf("%s: not eligible for evaluation without tracking", src)
		return
	}
	sizes := sizesOf(obj)
	bound := p.bound.cost(sizes)
	if cost > bound {
		t.Errorf("%s: tracked cost %d is above the bound %d (M=%d, S=%d)", src, cost, bound, sizes.elements, sizes.bytes)
	}
	val, _, err := p.untracked.Eval(conditionVars(celValue(obj)))
	if untracked := outcome(val, err); untracked != tracked {
		t.Errorf("%s: %s without cost tracking, %s with", src, untracked, tracked)
	}
}

func TestCostBoundEligibility(t *testing.T) {
	e := newEngine(t)
	for src, want := range map[string]bool{
		seedCondition: true,
		`combinedStatus.results.all(r, r.rowErrors.size() == 0 && r.aggregationErrors.size() == 0)`:  true,
		`obj.results[0].rows[0].columns[0].float == '1'`:                                             true,
		`obj.results.exists_one(r, r.name in ['a', 'b'] && r.name.startsWith('a'))`:                  true,
		`obj.metadata.labels.all(k, k.contains('/') || obj.metadata.labels[k].matches('^v[0-9]+$'))`: true,
		`double(obj.results[0].rows[0].columns[0].float) >= 0.5 && string(size(obj.results)) != '0'`: true,
		`(obj.kind == '' ? dyn({'a': 1}) : dyn([obj.results])).exists(l, l.exists(x, true))`:         true,
		`has(obj.metadata.name) ? obj.metadata.name != '' : false`:                                   true,
		`obj.results.map(r, r.name).size() > 0`:                                                      false, // builds a list
		`obj.results.filter(r, r.name == 'a').size() > 0`:                                            false,
		`[obj.results].flatten().size() > 0`:                                                         false,
		`obj.metadata.name + 'x' == 'x'`:                                                             false, // builds a longer string
		`obj.metadata.name.lowerAscii() == 'x'`:                                                      false, // charged by the engine
		`obj.?metadata.?name.orValue('') == ''`:                                                      false,
		`obj.results + obj.results == []`:                                                            false,
		`lists.range(3).all(i, i >= 0)`:                                                              false,
		`timestamp(obj.metadata.creationTimestamp) > timestamp('2020-01-01T00:00:00Z')`:              false,
		`sets.contains(obj.results, obj.results)`:                                                    false,
		`math.greatest(size(obj.results), 1) > 0`:                                                    false,
		`obj.metadata.name.split('-').size() > 0`:                                                    false,
		`obj.metadata.name.indexOf(obj.kind) >= 0 || obj.kind.lastIndexOf('a', 1) > 0`:               false,
		`obj.results.all(r, sets.intersects(r.columnNames, ['a']) || sets.equivalent(r.rows, []))`:   false,
		`obj.results.map(r, r.name).distinct().size() > 0`:                                           false,
		`obj.results[0].columnNames.sort().size() > 0`:                                               false,
		`obj.results.sortBy(r, r.name).size() > 0`:                                                   false,
		`size(obj.metadata.name.replace('a', 'aa')) > 0`:                                             false,
		`obj.results.all(r, r.rows.all(row, row.columns.exists(col, col.type == 'Number')))`:         true,
		`obj.results.exists(r, r.columnNames.exists(n, n > r.name))`:                                 true,
		`obj.metadata.name.endsWith('x') && obj.results.size() < 3 && -size(obj.results) < 0`:        true,
	} {
		p, err := e.Compile(KindCondition, src)
		if err != nil {
			t.Errorf("Compile(%s): %v", src, err)
			continue
		}
		if got := p.bound != nil; got != want {
			t.Errorf("%s: eligible for evaluation without cost tracking = %v, want %v", src, got, want)
		}
		if (p.bound != nil) != (p.untracked != nil) {
			t.Errorf("%s: a bound without an untracked program or the reverse", src)
		}
	}
	f, err := e.Compile(KindFilter, `downsyncClause.resource == "deployments"`)
	if err != nil {
		t.Fatal(err)
	}
	if f.bound != nil {
		t.Error("a filter has a bound (filters are always tracked)")
	}
}

// lopsided returns a CombinedStatus-like input with the given numbers of
// results, rows and column names, and one long name.
func lopsided(results, rows, columnNames, nameBytes int) map[string]any {
	list := make([]any, results)
	for i := range list {
		rs := make([]any, rows)
		for j := range rs {
			rs[j] = map[string]any{"columns": []any{map[string]any{"type": "Number", "float": "1"}}}
		}
		names := make([]any, columnNames)
		for j := range names {
			names[j] = fmt.Sprint("c", j)
		}
		list[i] = map[string]any{"name": "r", "rows": rs, "columnNames": names, "rowErrors": []any{}, "aggregationErrors": []any{}}
	}
	return map[string]any{
		"kind":     "CombinedStatus",
		"metadata": map[string]any{"name": strings.Repeat("x", nameBytes)},
		"results":  list,
	}
}

// TestCostBoundHoldsOnNestedLoopsOverLopsidedInputs takes the conditions with
// which two reviews broke an earlier, path-based bound: on the inputs the
// reviews used, the default engine tracks their cost (they are not eligible,
// or their bound is above the cost limit); on inputs a thousand times
// smaller, the eligible ones are evaluated without tracking, and their
// tracked cost is within the bound. Sizes are also taken at and around
// powers of two.
func TestCostBoundHoldsOnNestedLoopsOverLopsidedInputs(t *testing.T) {
	measuring, limited := trackingEngine(t), newEngine(t)
	type example struct {
		src       string
		obj       map[string]any
		untracked bool // the default engine evaluates it without tracking
	}
	var cases []example
	for _, scale := range []int{1000, 1} {
		small := scale == 1
		cases = append(cases,
			example{`obj.results.all(r, r.rows.all(a, r.name != ''))`, lopsided(1, 300*scale, 0, 1), small},
			example{`obj.results.exists(r, r.columnNames.exists(n, n > r.name))`, lopsided(1, 0, 250*scale, 1), small},
			example{`obj.metadata.name.startsWith('x')`, lopsided(1, 0, 0, 10*scale<<10), small},
			example{`obj.metadata.name.endsWith('x') && obj.metadata.name.contains(obj.metadata.name)`, lopsided(1, 0, 0, scale<<10), small},
			example{`[obj.results[0].rows].flatten().all(w, [obj.results[0].rows].flatten().all(v, true))`, lopsided(1, scale, 0, 1), false},
			example{`obj['results'].map(r, 1).size() >= 0`, lopsided(16*scale, 0, 0, 1), false},
		)
	}
	dynTernary := `(obj.kind == '' ? dyn({'a': 1}) : dyn([obj.results])).exists(l, l.exists(x, l.exists(y, l.exists(z, false))))`
	cases = append(cases, example{dynTernary, lopsided(100, 0, 0, 1), false}, example{dynTernary, lopsided(10, 0, 0, 1), true})
	for _, n := range []int{7, 8, 15, 16, 31, 32} {
		// != of two parts of the input is bound by the input's weight W
		// (deepcharge.go): from 15 rows on, M^3 W is above the limit.
		cases = append(cases,
			example{`obj.results.all(r, r.rows.all(a, r.columnNames.all(c, c != r.name)))`, lopsided(3, n, n-1, 2), n < 15},
			example{`obj.results.all(r, obj.results.all(q, r.rows == q.rows))`, lopsided(n, 2, 0, 2), true})
	}
	for _, c := range cases {
		p, err := limited.Compile(KindCondition, c.src)
		if err != nil {
			t.Fatalf("Compile(%s): %v", c.src, err)
		}
		s := sizesOf(c.obj)
		if untracked := boundFor(p, c.obj) != 0; untracked != c.untracked {
			t.Errorf("%s (M=%d, S=%d): evaluated without tracking = %v, want %v", c.src, s.elements, s.bytes, untracked, c.untracked)
		}
		if c.untracked {
			checkBound(t, measuring, c.src, c.obj)
		}
	}
}

// TestCostBoundPricesStringFunctionsOnDynOperands takes the conditions with
// which a third review broke this bound: startsWith, endsWith, contains and
// matches have one overload each, so the checker takes a dyn operand for
// them, and cel-go charges the call by the size of the value that arrives,
// even when it is a list or a map and the call fails. Priced on strings of S
// bytes, `L.contains(L) || true` on a list of 20,000 short names was bound by
// 19 and tracked at 4,000,008, so the default engine ran untracked what the
// cost limit refuses.
func TestCostBoundPricesStringFunctionsOnDynOperands(t *testing.T) {
	measuring, limited := trackingEngine(t), newEngine(t)
	const names = `obj.results[0].columnNames`
	for _, src := range []string{
		names + `.contains(` + names + `) || true`,
		names + `.matches(` + names + `) || true`,
		names + `.startsWith('c') || true`,
		names + `.all(c, ` + names + `.endsWith(c) || true)`,
		`'x'.contains(` + names + `) || true`,
		`'x'.matches(` + names + `) || true`,
		names + `.matches('x') || true`,
		`obj.metadata.labels.endsWith('x') || true`,
	} {
		obj := lopsided(1, 0, 2000, 1)
		labels := map[string]any{}
		for i := range 2000 {
			labels[fmt.Sprint(i)] = "v"
		}
		obj["metadata"].(map[string]any)["labels"] = labels
		checkBound(t, measuring, src, obj)
	}
	// On the review's input, the default engine tracks it and stops it.
	p, err := limited.Compile(KindCondition, names+`.contains(`+names+`) || true`)
	if err != nil {
		t.Fatal(err)
	}
	obj := lopsided(1, 0, 20000, 1)
	if bound := boundFor(p, obj); bound != 0 {
		t.Errorf("evaluated without tracking, bound %d", bound)
	}
}

// boundFor is what evalCondition passes to eval for obj.
func boundFor(p *Program, obj map[string]any) uint64 {
	if p.bound == nil {
		return 0
	}
	s := sizesOf(obj)
	if c := p.bound.cost(s); c <= p.costLimit {
		return c
	}
	return 0
}

// TestCostBoundHoldsOnRandomConditions generates conditions from the
// eligible functions and macros, nested up to three comprehensions deep,
// and inputs with lopsided sizes at and around powers of two and multi-byte
// strings, and checks that the tracked cost never exceeds the bound and that
// evaluating without tracking gives the same outcome.
func TestCostBoundHoldsOnRandomConditions(t *testing.T) {
	e := trackingEngine(t)
	r := rand.New(rand.NewPCG(16, 2026))
	conditions, inputs := 1000, 6
	if testing.Short() {
		conditions = 200
	}
	compiled, eligible, checked := 0, 0, 0
	for range conditions {
		src := (&condGen{r: r}).boolean(0)
		p, err := e.Compile(KindCondition, src)
		if err != nil {
			continue // the generator does not follow types everywhere
		}
		compiled++
		if p.bound == nil {
			continue
		}
		eligible++
		for range inputs {
			obj := randomInput(r)
			s := sizesOf(obj)
			if p.bound.cost(s) > DefaultCostLimit {
				continue // the default engine would track it
			}
			checkBound(t, e, src, obj)
			checked++
		}
	}
	t.Logf("%d of %d conditions compiled, %d eligible, %d evaluations checked", compiled, conditions, eligible, checked)
	if compiled < conditions*3/4 || eligible < compiled*3/4 || checked < eligible {
		t.Errorf("%d of %d generated conditions compiled, %d eligible, %d evaluations checked: the generator has drifted from the bound's functions",
			compiled, conditions, eligible, checked)
	}
}

// TestCostBoundAdmitsNoSuperLinearCall generates eligible conditions as
// TestCostBoundHoldsOnRandomConditions does and joins each with a call of a
// function charged before it runs (precharges), which the bound does not
// price: no such condition may run untracked.
func TestCostBoundAdmitsNoSuperLinearCall(t *testing.T) {
	e := trackingEngine(t)
	r := rand.New(rand.NewPCG(32, 2026))
	calls := []string{
		"obj.metadata.name.indexOf(obj.kind) >= 0", "obj.kind.lastIndexOf('a', 1) > 0",
		"obj.metadata.name.split('-').size() > 0", "obj.kind.split('', 2).size() == 0",
		"sets.contains(obj.results, obj.results)", "sets.intersects(obj.results[0].columnNames, ['a'])",
		"sets.equivalent(obj.results, [])", "obj.results[0].columnNames.distinct().size() > 0",
		"obj.results[0].columnNames.sort().size() > 0", "obj.results.sortBy(x, x.name).size() > 0",
	}
	checked := 0
	for range 300 {
		cond := (&condGen{r: r}).boolean(0)
		call := calls[r.IntN(len(calls))]
		src := "(" + cond + ") || " + call
		if r.IntN(2) == 0 {
			src = call + " && (" + cond + ")"
		}
		p, err := e.Compile(KindCondition, src)
		if err != nil {
			continue // the generator does not follow types everywhere
		}
		checked++
		if p.bound != nil {
			t.Errorf("%s may run without cost tracking", src)
		}
	}
	if checked < 200 {
		t.Errorf("only %d of 300 generated conditions compiled", checked)
	}
}

// TestUntrackedEvaluationTimesOut checks that an evaluation without cost
// tracking is stopped at the evaluation timeout.
func TestUntrackedEvaluationTimesOut(t *testing.T) {
	e := newEngine(t, WithCostLimit(math.MaxUint64/2), WithEvalTimeout(20*time.Millisecond))
	src := `obj.results.all(a, obj.results.all(b, obj.results.all(c, a.name == b.name)))`
	p, err := e.Compile(KindCondition, src)
	if err != nil {
		t.Fatal(err)
	}
	if p.bound == nil {
		t.Fatal("the condition is not eligible for evaluation without tracking")
	}
	obj := lopsided(2000, 0, 0, 1)
	bound := boundFor(p, obj)
	if bound == 0 {
		t.Fatal("the condition would be tracked")
	}
	_, err = p.eval(conditionVars(celValue(obj)), nil, bound)
	var exprErr *Error
	if !errors.As(err, &exprErr) || exprErr.Reason != ReasonTimeout {
		t.Fatalf("eval = %v, want an error with reason %s", err, ReasonTimeout)
	}
}

// TestBudgetIsChargedTheBound checks that an evaluation without cost
// tracking charges its budget the bound.
func TestBudgetIsChargedTheBound(t *testing.T) {
	e := newEngine(t)
	p, err := e.Compile(KindCondition, seedCondition)
	if err != nil {
		t.Fatal(err)
	}
	cs := combinedStatus("deployments-aggregator", []ksv1alpha1.Value{number("1")})
	conv, err := convert(cs)
	if err != nil {
		t.Fatal(err)
	}
	bound := p.bound.cost(conv.sizes)
	if bound == 0 || bound > DefaultCostLimit {
		t.Fatalf("bound %d: the seed condition on a small CombinedStatus would be tracked", bound)
	}
	b := e.NewBudget()
	if ok, err := b.EvalCondition(p, cs); !ok || err != nil {
		t.Fatalf("EvalCondition = %v, %v", ok, err)
	}
	if b.Spent() != bound {
		t.Errorf("budget charged %d, want the bound %d", b.Spent(), bound)
	}
}

// sizePick are the sizes of generated lists, maps and strings: around
// powers of two, where a bound rounding sizes would be off by one.
var sizePick = []int{0, 1, 2, 3, 7, 8, 9, 15, 16, 31, 32}

// stringPick are lengths of generated strings, around multiples of ten
// (cel-go charges a tenth of a unit per character).
var stringPick = []int{0, 1, 9, 10, 11, 19, 20, 21, 63, 64, 255, 256, 1000}

// randomString returns a string of n runes, some of them multi-byte.
func randomString(r *rand.Rand, n int) string {
	runes := []rune("ax-/é€𝄞19")
	var b strings.Builder
	for range n {
		b.WriteRune(runes[r.IntN(len(runes))])
	}
	return b.String()
}

// randomInput returns a CombinedStatus-like input in JSON form. One input in
// three is wide: short strings and lists of column names a thousand long, so
// that M is far above S, where pricing a value by S rather than M shows.
func randomInput(r *rand.Rand) map[string]any {
	wide := r.IntN(3) == 0
	size := func() int { return sizePick[r.IntN(len(sizePick))] }
	lengths := stringPick
	if wide {
		lengths = stringPick[:4]
	}
	str := func() string { return randomString(r, lengths[r.IntN(len(lengths))]) }
	scalar := func() any {
		switch r.IntN(5) {
		case 0:
			return int64(r.IntN(10))
		case 1:
			return 1.5
		case 2:
			return true
		case 3:
			return nil
		}
		return str()
	}
	labels := map[string]any{}
	for range size() {
		labels[str()] = str()
	}
	// Rows and columns are drawn from the smaller sizes, so that an input
	// stays within a few megabytes.
	small := func() int { return sizePick[r.IntN(6)] }
	results := make([]any, size())
	for i := range results {
		rows := make([]any, small())
		for j := range rows {
			cols := make([]any, small())
			for k := range cols {
				cols[k] = map[string]any{"type": []string{"Number", "String"}[r.IntN(2)], "float": str(), "string": str(), "bool": scalar()}
			}
			rows[j] = map[string]any{"columns": cols}
		}
		names := make([]any, size())
		if wide {
			names = make([]any, 1000+r.IntN(25))
		}
		for j := range names {
			names[j] = str()
		}
		results[i] = map[string]any{"name": str(), "rows": rows, "columnNames": names, "rowErrors": []any{}, "aggregationErrors": []any{}}
	}
	return map[string]any{
		"kind":     str(),
		"metadata": map[string]any{"name": str(), "labels": labels},
		"results":  results,
	}
}

// condGen generates conditions over inputs of randomInput. Loop variables
// are named v0, v1, v2 by depth; kinds records what each ranges over.
type condGen struct {
	r     *rand.Rand
	kinds []string // "result", "row", "col", "name", "key", "any"
}

// choose calls one of the options, chosen at random (options are functions
// so that only the chosen one generates its subexpressions).
func (g *condGen) choose(options ...func() string) string { return options[g.r.IntN(len(options))]() }

// lit returns an option giving s.
func lit(s string) func() string { return func() string { return s } }

// loopVar returns a loop variable of kind, or "" if none is in scope.
func (g *condGen) loopVar(kind string) string {
	for i := len(g.kinds) - 1; i >= 0; i-- {
		if g.kinds[i] == kind || g.kinds[i] == "any" {
			return fmt.Sprint("v", i)
		}
	}
	return ""
}

func (g *condGen) str(depth int) string {
	d := depth + 1
	options := []func() string{lit("obj.metadata.name"), lit("combinedStatus.kind"), lit("'Number'"), lit("''"),
		func() string { return "'" + randomString(g.r, g.r.IntN(12)) + "'" }}
	if v := g.loopVar("result"); v != "" {
		options = append(options, lit(v+".name"), lit(v+".name"))
	}
	if v := g.loopVar("col"); v != "" {
		options = append(options, lit(v+".float"), lit(v+".type"), lit(v+".string"))
	}
	for _, kind := range []string{"name", "key"} {
		if v := g.loopVar(kind); v != "" {
			options = append(options, lit(v), lit(v))
		}
	}
	if depth < 3 {
		options = append(options,
			func() string { return "string(" + g.integer(d) + ")" },
			lit("string(1.5)"),
			func() string { return "obj.metadata.labels[" + g.str(d) + "]" },
			func() string { return "((" + g.boolean(d) + ") ? " + g.str(d) + " : " + g.str(d) + ")" },
			// A list or map where a string belongs: the checker lets a dyn
			// through to the string functions, and cel-go charges what
			// arrives by its size.
			func() string { return "dyn(" + g.list(d) + ")" })
	}
	return g.choose(options...)
}

// inputStr returns a string read from the input (not a literal, which
// cel-go would fold at compile time).
func (g *condGen) inputStr() string {
	options := []func() string{lit("obj.metadata.name"), lit("obj.kind")}
	if v := g.loopVar("col"); v != "" {
		options = append(options, lit(v+".float"))
	}
	return g.choose(options...)
}

func (g *condGen) integer(depth int) string {
	d := depth + 1
	options := []func() string{lit("0"), lit("3"), lit("size(obj.results)"), lit("size(obj.metadata.name)")}
	if depth < 3 {
		options = append(options,
			func() string { return "size(" + g.list(d) + ")" },
			func() string { return "size(" + g.str(d) + ")" },
			func() string { return "(" + g.integer(d) + " + " + g.integer(d) + ")" },
			func() string { return "(" + g.integer(d) + " * 2)" },
			func() string { return "-" + g.integer(d) })
	}
	return g.choose(options...)
}

// listOf returns a list or map expression and the kind of its elements.
func (g *condGen) listOf(depth int) (string, string) {
	type option struct{ expr, kind string }
	options := []func() option{
		func() option { return option{"obj.results", "result"} },
		func() option { return option{"obj.metadata.labels", "key"} },
		func() option { return option{"['a', 'é', '" + randomString(g.r, 3) + "']", "name"} },
		func() option { return option{"obj.results[0].columnNames", "name"} },
	}
	if v := g.loopVar("result"); v != "" {
		options = append(options,
			func() option { return option{v + ".rows", "row"} },
			func() option { return option{v + ".columnNames", "name"} },
			func() option { return option{v + ".rowErrors", "any"} },
			func() option { return option{v, "key"} })
	}
	if v := g.loopVar("row"); v != "" {
		options = append(options, func() option { return option{v + ".columns", "col"} })
	}
	if depth < 3 {
		options = append(options,
			func() option {
				return option{"((" + g.boolean(depth+1) + ") ? dyn(obj.metadata.labels) : dyn(obj.results))", "any"}
			},
			func() option { return option{"[obj.results, obj.metadata.labels]", "any"} },
			func() option { return option{"{'a': obj.results}", "key"} })
	}
	o := options[g.r.IntN(len(options))]()
	return o.expr, o.kind
}

func (g *condGen) list(depth int) string {
	l, _ := g.listOf(depth)
	return l
}

func (g *condGen) boolean(depth int) string {
	d := depth + 1
	options := []func() string{lit("true"), lit("has(obj.metadata.name)")}
	if depth < 4 {
		options = append(options,
			func() string { return g.str(d) + " == " + g.str(d) },
			func() string { return g.str(d) + " != " + g.str(d) },
			func() string { return g.str(d) + " < " + g.str(d) },
			func() string { return g.str(d) + ".startsWith(" + g.str(d) + ")" },
			func() string { return g.str(d) + ".endsWith(" + g.str(d) + ")" },
			func() string { return g.str(d) + ".contains(" + g.str(d) + ")" },
			func() string { return g.str(d) + ".matches('^a+x?')" },
			func() string { return g.str(d) + ".matches(" + g.str(d) + ")" },
			func() string { return g.str(d) + " in " + g.list(d) },
			func() string { return g.list(d) + " == " + g.list(d) },
			func() string { return g.integer(d) + " >= " + g.integer(d) },
			func() string { return "double(" + g.inputStr() + ") > 0.5" },
			func() string { return "int(" + g.inputStr() + ") == 1" },
			func() string { return "(" + g.boolean(d) + ") && (" + g.boolean(d) + ")" },
			func() string { return "(" + g.boolean(d) + ") || (" + g.boolean(d) + ")" },
			func() string { return "!(" + g.boolean(d) + ")" },
			func() string { return "((" + g.boolean(d) + ") ? (" + g.boolean(d) + ") : (" + g.boolean(d) + "))" })
	}
	if len(g.kinds) < 3 && depth < 6 {
		comprehension := func() string {
			l, kind := g.listOf(d)
			v := fmt.Sprint("v", len(g.kinds))
			g.kinds = append(g.kinds, kind)
			body := g.boolean(d)
			g.kinds = g.kinds[:len(g.kinds)-1]
			return fmt.Sprintf("%s.%s(%s, %s)", l, []string{"all", "exists", "exists_one"}[g.r.IntN(3)], v, body)
		}
		// Comprehensions are what the bound is about: weigh them up.
		options = append(options, comprehension, comprehension, comprehension, comprehension, comprehension)
	}
	return g.choose(options...)
}

// TestCostBoundCatchesAWrongBound makes sure the random test can fail: with
// the iterations of comprehensions left out of the bound, it finds a
// condition whose tracked cost is above it.
func TestCostBoundCatchesAWrongBound(t *testing.T) {
	e := trackingEngine(t)
	src := `obj.results.all(r, r.rows.all(a, r.name != ''))`
	obj := lopsided(2, 300, 0, 1)
	cost, _, p := measure(t, e, src, obj)
	s := sizesOf(obj)
	flat := &costBound{minS: p.bound.minS, minM: p.bound.minM}
	for _, coef := range p.bound.coef {
		for u, c := range coef {
			flat.term(0, unit(u), c)
		}
	}
	if got := flat.cost(s); cost <= got {
		t.Fatalf("tracked cost %d is within a bound without iterations (%d): the test input is too small to tell", cost, got)
	}
	if got := p.bound.cost(s); cost > got {
		t.Fatalf("tracked cost %d is above the bound %d", cost, got)
	}
}
