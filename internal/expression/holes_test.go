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
	"runtime"
	"strings"
	"testing"
	"time"
)

// sharedLists returns a condition that binds v0 to a list of ten ints and
// every v<i> to a list of ten v<i-1>, up to v<levels>, and evaluates the
// condition body in their scope: v<k> holds 10^(k+1) ints in lists that
// share their elements, built for a few dozen units. A variable is bound
// by exists over a list of one element.
func sharedLists(levels int, body string) string {
	src := body
	for i := levels; i >= 1; i-- {
		prev := fmt.Sprintf("v%d", i-1)
		src = fmt.Sprintf("[[%s]].exists(v%d, %s)", strings.TrimSuffix(strings.Repeat(prev+", ", 10), ", "), i, src)
	}
	return "[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]].exists(v0, " + src + ")"
}

// evalMeasured evaluates the condition src on a small CombinedStatus with
// e, and returns the bytes allocated meanwhile, the time taken and the error.
func evalMeasured(t *testing.T, e *Engine, src string) (uint64, time.Duration, error) {
	t.Helper()
	p, err := e.Compile(KindCondition, src)
	if err != nil {
		t.Fatalf("Compile(%s): %v", src, err)
	}
	cs := combinedStatus("deployments-aggregator")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err = p.EvalCondition(cs)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, took, err
}

// requireRefused fails the test unless err says that a call was refused
// before it ran, with a cost reason.
func requireRefused(t *testing.T, src string, err error, alloc uint64, took time.Duration) {
	t.Helper()
	var refused *errCallTooCostly
	if !errors.As(err, &refused) || !IsTooCostly(err) {
		t.Errorf("%s: got %v after %s and %d KiB allocated, want the call refused before it ran, with a cost reason",
			src, err, took.Round(time.Millisecond), alloc>>10)
	}
}

// TestFormatIsRefusedBeforeItBuilds (N1): format builds its result before
// cel-go or actualCost charge it, so a result far larger than the cost
// limit pays for was built, then charged. It is refused before it runs
// when its result could be larger than the limit pays for (ten bytes a
// unit), counting lists printed deeply, and shared sub-lists every time
// they are printed.
func TestFormatIsRefusedBeforeItBuilds(t *testing.T) {
	// A limit of 100,000 pays for a string of 1 MB; the results below
	// are 3.3 MB and 4.9 MB.
	e := newEngine(t, WithEstimatedCostLimit(math.MaxUint64), WithCostLimit(100_000))
	for name, src := range map[string]string{
		"repeated argument": "[lists.range(3000)].exists(x, '" + strings.Repeat("%s", 200) + "'.format([" +
			strings.TrimSuffix(strings.Repeat("x, ", 200), ", ") + "]).size() > 0)",
		"shared sub-lists": sharedLists(4, "'%s'.format([v4]).size() > 0"),
	} {
		t.Run(name, func(t *testing.T) {
			alloc, took, err := evalMeasured(t, e, src)
			requireRefused(t, name, err, alloc, took)
			if alloc > 1<<20 {
				t.Errorf("%s: allocated %d KiB, more than the 1 MiB the limit pays for", name, alloc>>10)
			}
		})
	}
}

// TestFormatStillRuns: below the limit, format gives what cel-go's gives.
func TestFormatStillRuns(t *testing.T) {
	e := newEngine(t)
	cs := combinedStatus("deployments-aggregator")
	for _, src := range []string{
		"'%s-%d'.format(['a', 1]) == 'a-1'",
		"'%s'.format([[1, [2, 'x'], {'k': [3]}]]) == '[1, [2, x], {k: [3]}]'",
		"'%.2f %x %X %o %b %e'.format([1.5, 255, 'hi', 8, 5, 1.0]) == '1.50 ff 6869 10 101 1.000000e+00'",
		sharedLists(2, "'%s'.format([v2]).size() == 3220"),
	} {
		p, err := e.Compile(KindCondition, src)
		if err != nil {
			t.Fatalf("Compile(%s): %v", src, err)
		}
		if ok, err := p.EvalCondition(cs); !ok || err != nil {
			t.Errorf("EvalCondition(%s) = %v, %v, want true", src, ok, err)
		}
	}
}

// TestDeepEqualityIsRefusedBeforeItRuns (N2): ==, != and in compare lists
// and maps all the way down, in one call, which neither the timeout nor
// the budget interrupts; cel-go charges them by the top-level size. Over
// lists that share their sub-lists, the walk is exponential in the size
// of the expression (10^7 ints here; the 10^10 ran for minutes).
// They are charged the deep weight of the lighter operand before they
// run, and refused above the cost limit.
func TestDeepEqualityIsRefusedBeforeItRuns(t *testing.T) {
	e := newEngine(t, WithEstimatedCostLimit(math.MaxUint64))
	for name, body := range map[string]string{
		"==":         "v6 == v6",
		"!=":         "v6 != v6",
		"in":         "v5 in [v5, v5]",
		"in, dyn":    "dyn(v5) in dyn([v5, v5])",
		"!= of maps": "{'a': v6} != {'a': v6}",
		// Whether an optional holds a value equal to another (found by
		// TestCostIsSound: 16 ms a call over 10^6 shared ints, one unit).
		"optional hasValue": "optional.of(v6).hasValue(v6)",
	} {
		t.Run(name, func(t *testing.T) {
			alloc, took, err := evalMeasured(t, e, sharedLists(6, body))
			requireRefused(t, name, err, alloc, took)
		})
	}
}

// TestDeepEqualityIsChargedItsWeight: an equality that runs is charged the
// weight of its lighter operand, so that a comprehension repeating one is
// stopped by the cost limit, not the timeout.
func TestDeepEqualityIsChargedItsWeight(t *testing.T) {
	e := newEngine(t, WithEstimatedCostLimit(math.MaxUint64))
	src := sharedLists(4, "lists.range(200).all(i, v4 == v4)")
	alloc, took, err := evalMeasured(t, e, src)
	var exprErr *Error
	if !errors.As(err, &exprErr) || exprErr.Reason != ReasonCostLimitExceeded {
		t.Errorf("%s: got %v after %s (%d KiB allocated), want the cost limit to stop it", src, err, took, alloc>>10)
	}
}

// TestDispatchedCallsAreCharged (N11): a call on a dyn value is dispatched
// at run time, with no overload ID, and cel-go charged it one unit, before
// and after: sort of 20,000 names cost 7 (issue 54). It is charged by its function
// now, before (sort's worst case) and after.
func TestDispatchedCallsAreCharged(t *testing.T) {
	e := newEngine(t)
	// 2,000 names: the keys sortBy's macro builds fit the limit.
	obj := lopsided(1, 0, 2000, 1)
	for _, src := range []string{
		"dyn(obj.results[0].columnNames).sort().size() > 0",
		"obj.results[0].columnNames.sort().size() > 0",
		"obj.results[0].columnNames.sortBy(c, c).size() > 0",
	} {
		p, err := e.Compile(KindCondition, src)
		if err != nil {
			t.Fatalf("Compile(%s): %v", src, err)
		}
		_, err = p.eval(conditionVars(celValue(obj)), nil, 0)
		requireRefused(t, src, err, 0, 0)
	}
	// Below the limit, the tracked cost includes sort's charge: the square
	// of the list's weight.
	small := lopsided(1, 0, 300, 1)
	cost, out, _ := measure(t, trackingEngine(t), "dyn(obj.results[0].columnNames).sort().size() > 0", small)
	if out != "true" || cost < 300*300 {
		t.Errorf("sort of 300 names on dyn: %s, tracked cost %d, want true and at least %d", out, cost, 300*300)
	}
}

// TestFormatIsChargedWhatItWalks: format's charge walks the arguments its
// clauses print, which may be far more than a call that fails at its
// first clause builds; charged after by what it built, a loop of such
// calls walked for free (TestCostIsSound, seed 3: 29.8 MB for 20,001
// units). It is charged its charge after too, like every call charged
// before it runs.
func TestFormatIsChargedWhatItWalks(t *testing.T) {
	if !holesFixed {
		t.Skip("with -tags celholes, format has no charge that walks")
	}
	e := newEngine(t)
	p, err := e.Compile(KindCondition, `lists.range(1000).all(i, ['%d%d%d%d%d%d%d%d'.format(obj.results)].size() == 1)`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.eval(conditionVars(celValue(lopsided(30, 30, 30, 1))), nil, 0)
	if !IsTooCostly(err) {
		t.Errorf("got %v, want the cost limit to stop 1,000 formats of 30 results", err)
	}
}
