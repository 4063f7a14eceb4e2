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
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
)

// boundedConditions call only functions whose cost cel-go's estimate
// follows, and read the input in the ways the bound must cover: nested
// comprehensions, selections on dyn values, maps iterated by key,
// optional values, string concatenation and comparisons, in and size.
var boundedConditions = []string{
	seedCondition,
	seedConditionMultiLine,
	`obj.results.all(r, r.rows.all(row, row.columns.all(col, col.type != 'String' || col.string.startsWith('ready'))))`,
	`obj.results.exists(r, r.name.endsWith('x') || r.name.contains(r.columnNames[0]))`,
	`obj.results.exists(a, obj.results.exists(b, a.name == string(b.name) + 'x' || string(a.name) + 'é' == b.name))`,
	`obj.results.exists_one(r, r.rows.size() > 1)`,
	`obj.metadata.annotations.all(k, k.size() < 100 && obj.metadata.annotations[k].size() < 1000)`,
	`obj.exists(k, k == 'kind') && 'results' in obj`,
	`obj.results.exists(r, r.rows.exists(row, row.columns.exists(col, has(col.float) && double(col.float) >= 1.0)))`,
	`obj.results.all(r, r.rows.all(row, row.columns.all(col, !has(col.string) || col.string in ['a', 'b', 'é'])))`,
	`obj.?metadata.?annotations.?note.orValue('') == '' || obj.results[?0].hasValue()`,
	`obj.results.exists(r, r.columnNames.exists(n, n > r.name) && r.name.size() % 2 == 0)`,
	`obj.metadata.name + '/' + obj.kind != '' && string(obj.results.size()) != '-1'`,
}

// trackedConditions call functions that the bound does not cover (the
// ones actualCost charges by size, flatten, the map and filter macros,
// extensions): they are always evaluated with cost tracking. The first
// ones, evaluated untracked on the input of trackedInputs, would cost
// thousands of times their estimate.
var trackedConditions = []string{
	`[obj.results[0].rows].flatten().all(w, [obj.results[0].rows].flatten().all(v, true))`,
	`obj.results.map(r, r.rows).flatten().all(w, obj.results.map(r, r.rows).flatten().all(v, v.columns.size() >= 0))`,
	`obj['results'].map(r, 1).size() >= 0`,
	`obj.results.exists(r, r.name.replace('a', '𝔸').indexOf(r.columnNames[0].replace('a', '𝔸')) >= 0)`,
	`obj.results.exists(r, string(r.name).lowerAscii() == 'x')`,
	`obj.results.exists(r, r.name.split('-').size() > 1)`,
	`obj.results.map(r, r.name).join(',').contains('deployments')`,
	`(obj.results + obj.results).size() == 2 * obj.results.size()`,
	`obj.results.filter(r, r.rows.size() > 0).all(r, r.columnNames.size() >= 0)`,
	`sets.contains(obj.results.map(r, r.name), ['deployments-aggregator'])`,
	`obj.results.exists(r, r.name.matches('^dep'))`,
}

// randomStatus builds a CombinedStatus of random shape, with at most the
// given numbers of results, rows per result and columns per row, and
// strings of at most length bytes, some of them not ASCII.
func randomStatus(rng *rand.Rand, results, rows, cols, length int) *ksv1alpha1.CombinedStatus {
	text := func() string {
		n := rng.IntN(length + 1)
		if rng.IntN(4) == 0 {
			return strings.Repeat("é", n/2)
		}
		return strings.Repeat("x", n)
	}
	cs := combinedStatus("deployments-aggregator")
	cs.UID, cs.ResourceVersion = types.UID(fmt.Sprint(rng.Int())), "1"
	cs.Annotations = map[string]string{"note": text()}
	cs.Results = nil
	for range rng.IntN(results + 1) {
		res := ksv1alpha1.NamedStatusCombination{Name: "deployments-aggregator" + text()}
		for range rng.IntN(rows + 1) {
			var row ksv1alpha1.StatusCombinationRow
			for range rng.IntN(cols + 1) {
				switch rng.IntN(3) {
				case 0:
					row.Columns = append(row.Columns, number(fmt.Sprint(rng.IntN(3))))
				case 1:
					row.Columns = append(row.Columns, str(text()))
				default:
					row.Columns = append(row.Columns, str("ready"+text()))
				}
			}
			res.Rows = append(res.Rows, row)
		}
		res.ColumnNames = []string{text()}
		cs.Results = append(cs.Results, res)
	}
	return cs
}

// TestBoundCoversTheCost evaluates the bounded conditions on
// CombinedStatuses of many shapes, among them sizes at the top of their
// class. Whenever the bound lets a condition run without cost tracking,
// the tracked evaluation must give the same outcome at a cost within the
// bound.
func TestBoundCoversTheCost(t *testing.T) {
	e := newEngine(t)
	rng := rand.New(rand.NewPCG(1, 2))
	var inputs []*input
	for i := range 40 { // random shapes, from tiny to a few dozen elements
		size := 1 + i/8*6
		inputs = append(inputs, mustInput(t, randomStatus(rng, size, size, size, 4*size)))
	}
	for c := 1; c <= 8; c++ { // every count and length at the top of its class
		top := 1<<c - 1
		inputs = append(inputs, mustInput(t, fullStatus(min(top, 31), top, min(top, 7), top)))
	}
	var bounded, tracked int
	for _, src := range boundedConditions {
		p, err := e.Compile(KindCondition, src)
		if err != nil {
			t.Fatalf("Compile(%s): %v", src, err)
		}
		if p.bounder == nil {
			t.Errorf("%s: no bounder", src)
			continue
		}
		for _, in := range inputs {
			bnd, ok := p.bounder.classBound(in.val)
			if !ok || !bnd.fits {
				tracked++
				continue
			}
			bounded++
			out, details, trackedErr := p.prog.Eval(conditionVars{obj: in.val})
			if cost := *details.ActualCost(); cost > bnd.cost {
				t.Errorf("%s: cost %d above the bound %d", src, cost, bnd.cost)
			}
			got, err := p.eval(p.bounder.untracked, conditionVars{obj: in.val}, nil, bnd.cost)
			if (err == nil) != (trackedErr == nil) || (err == nil && out.Value() != got) {
				t.Errorf("%s: untracked %v, %v; tracked %v, %v", src, got, err, out, trackedErr)
			}
		}
	}
	t.Logf("%d evaluations bounded, %d tracked", bounded, tracked)
	if bounded == 0 || tracked == 0 {
		t.Errorf("%d evaluations bounded and %d tracked: the shapes do not exercise both", bounded, tracked)
	}
}

// TestUnboundedFunctionsAreTracked checks that a condition calling a
// function outside the bound's reach has no bounder, and that the limits
// stop the first of them, which an estimate would take as cheap.
func TestUnboundedFunctionsAreTracked(t *testing.T) {
	e := newEngine(t)
	for _, src := range trackedConditions {
		p, err := e.Compile(KindCondition, src)
		if err != nil {
			t.Fatalf("Compile(%s): %v", src, err)
		}
		if p.bounder != nil {
			t.Errorf("%s: has a bounder", src)
		}
	}
	p, err := e.Compile(KindCondition, trackedConditions[0])
	if err != nil {
		t.Fatal(err)
	}
	// A million iterations: the cost limit stops it (or, on a slow machine,
	// the timeout first).
	if _, err = p.EvalCondition(fullStatus(1, 1000, 1, 1)); !IsTooCostly(err) {
		t.Fatalf("EvalCondition = %v, want an error with a cost reason", err)
	}
}

func mustInput(t *testing.T, cs *ksv1alpha1.CombinedStatus) *input {
	t.Helper()
	in, err := newInput(cs)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// fullStatus builds a CombinedStatus with exactly the given numbers of
// results, rows per result and columns per row, whose strings (names,
// column names, values, an annotation) are all length bytes long.
func fullStatus(results, rows, cols, length int) *ksv1alpha1.CombinedStatus {
	text := strings.Repeat("x", length)
	cs := combinedStatus("deployments-aggregator")
	cs.Annotations = map[string]string{"note": text}
	cs.Results = nil
	for range results {
		res := ksv1alpha1.NamedStatusCombination{Name: text, ColumnNames: []string{text}}
		for range rows {
			var row ksv1alpha1.StatusCombinationRow
			for c := range cols {
				if c%2 == 0 {
					row.Columns = append(row.Columns, number("1"))
				} else {
					row.Columns = append(row.Columns, str(text))
				}
			}
			res.Rows = append(res.Rows, row)
		}
		cs.Results = append(cs.Results, res)
	}
	return cs
}

// TestLargeInputsAreTracked checks that the input decides: the same
// condition runs without tracking on a small CombinedStatus and is stopped
// by the cost limit on a large one.
func TestLargeInputsAreTracked(t *testing.T) {
	e := newEngine(t, WithCostLimit(20_000))
	p, err := e.Compile(KindCondition, `obj.results.all(r, r.rows.all(row, row.columns.all(col, col.type == 'Number')))`)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	rowsOf := func(n int) *ksv1alpha1.CombinedStatus {
		var rows [][]ksv1alpha1.Value
		for range n {
			rows = append(rows, []ksv1alpha1.Value{number("1"), number("2")})
		}
		cs := combinedStatus("deployments-aggregator", rows...)
		cs.UID, cs.ResourceVersion = types.UID(fmt.Sprint("rows-", n)), "1"
		return cs
	}
	small, large := rowsOf(10), rowsOf(5000)
	if in, _ := e.conversions.of(small); !mustBound(t, p, in).fits {
		t.Error("10 rows: not bounded within the limit")
	}
	if ok, err := p.EvalCondition(small); err != nil || !ok {
		t.Errorf("10 rows: EvalCondition = %v, %v", ok, err)
	}
	if in, _ := e.conversions.of(large); mustBound(t, p, in).fits {
		t.Error("5000 rows: bounded within the limit")
	}
	_, err = p.EvalCondition(large)
	var exprErr *Error
	if !errors.As(err, &exprErr) || exprErr.Reason != ReasonCostLimitExceeded {
		t.Fatalf("5000 rows: EvalCondition = %v, want reason %s", err, ReasonCostLimitExceeded)
	}
}

func mustBound(t *testing.T, p *Program, in *input) bound {
	t.Helper()
	bnd, ok := p.bounder.boundFor(in)
	if !ok {
		t.Fatal("no bound")
	}
	return bnd
}

// TestBoundedEvaluationsKeepTheTimeout checks that a condition run without
// cost tracking is still stopped at the evaluation timeout.
func TestBoundedEvaluationsKeepTheTimeout(t *testing.T) {
	e := newEngine(t, WithCostLimit(1<<62), WithEvalTimeout(time.Millisecond))
	p, err := e.Compile(KindCondition,
		`obj.results.all(a, obj.results.all(b, obj.results.all(c, a.name != b.name || c.name != '')))`)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	cs := combinedStatus("x")
	for i := range 300 {
		cs.Results = append(cs.Results, ksv1alpha1.NamedStatusCombination{Name: fmt.Sprint("r", i)})
	}
	cs.UID, cs.ResourceVersion = "uid", "1"
	if in, _ := e.conversions.of(cs); !mustBound(t, p, in).fits {
		t.Fatal("not bounded within the limit")
	}
	_, err = p.EvalCondition(cs)
	var exprErr *Error
	if !errors.As(err, &exprErr) || exprErr.Reason != ReasonTimeout {
		t.Fatalf("EvalCondition = %v, want reason %s", err, ReasonTimeout)
	}
}

// TestTimeoutsAreShared checks that evaluations starting within a
// sixteenth of the timeout share a context, and that each context ends
// between 15/16 of the timeout and the timeout after its evaluation starts.
func TestTimeoutsAreShared(t *testing.T) {
	to := &timeouts{timeout: 16 * time.Second}
	start := time.Now()
	first, end := to.context(start)
	if want := start.Add(16 * time.Second); !end.Equal(want) {
		t.Errorf("deadline %s after the start, want 16s", end.Sub(start))
	}
	if d, ok := first.Deadline(); !ok || !d.Equal(end) {
		t.Errorf("context deadline %v, want %v", d, end)
	}
	if same, _ := to.context(start.Add(time.Second)); same != first {
		t.Error("an evaluation 1s later got a new context")
	}
	later, end := to.context(start.Add(1500 * time.Millisecond))
	if later == first {
		t.Error("an evaluation 1.5s later shares a context that ends 14.5s after it")
	}
	if want := start.Add(17500 * time.Millisecond); !end.Equal(want) {
		t.Errorf("deadline %s after the start, want 17.5s", end.Sub(start))
	}
}
