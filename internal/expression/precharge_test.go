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
	"math"
	"strings"
	"testing"

	"cel.dev/cel-go/cel"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
)

// hugeIndexOf reads no input, and cel-go's indexOf, charged only after it
// returns, would compare runes far past the evaluation timeout.
const hugeIndexOf = `'aaaaaaaaaa'.replace('a', 'aaaaaaaaaa').replace('a', 'aaaaaaaaaa').replace('a', 'aaaaaaaaaa').replace('a', 'aaaaaaaaaa').replace('a', 'aaaaaaaaaa').indexOf('aaaaaaaaaa'.replace('a', 'aaaaaaaaaa').replace('a', 'aaaaaaaaaa').replace('a', 'aaaaaaaaaa') + 'b') >= 0`

// superLinearConditions are conditions with one call whose worst case is
// above the default cost limit, and whose arguments are cheap to build.
var superLinearConditions = map[string]string{
	"indexOf of a long substring": hugeIndexOf,
	"lastIndexOf":                 strings.Replace(hugeIndexOf, ".indexOf(", ".lastIndexOf(", 1),
	"indexOf with an offset":      strings.Replace(hugeIndexOf, "+ 'b')", "+ 'b', 0)", 1),
	"lastIndexOf with an offset": strings.Replace(strings.Replace(hugeIndexOf, ".indexOf(", ".lastIndexOf(", 1),
		"+ 'b')", "+ 'b', 99999)", 1),
	"sets.contains":   `sets.contains(lists.range(2000), lists.range(2000).map(i, -i))`,
	"sets.intersects": `sets.intersects(lists.range(2000), lists.range(2000).map(i, -i - 1))`,
	"sets.equivalent": `sets.equivalent(lists.range(5000), lists.range(5000))`,
	// cel-go charges 300 × 300 pairs; each compares lists of 300.
	"sets.contains of nested lists": `sets.contains(lists.range(300).map(i, lists.range(300)), lists.range(300).map(i, lists.range(300)))`,
	"distinct":                      `lists.range(2000).distinct().size() > 0`,
	// A million parts: 16 MB of string headers.
	"split":              `'aaaaaaaaaa'.replace('a', 'aaaaaaaaaa').replace('a', 'aaaaaaaaaa').replace('a', 'aaaaaaaaaa').replace('a', 'aaaaaaaaaa').replace('a', 'aaaaaaaaaa').split('').size() > 0`,
	"split with a limit": `'aaaaaaaaaa'.replace('a', 'aaaaaaaaaa').replace('a', 'aaaaaaaaaa').replace('a', 'aaaaaaaaaa').replace('a', 'aaaaaaaaaa').replace('a', 'aaaaaaaaaa').split('', 900000).size() > 0`,
	"sort":               `lists.range(2000).sort().size() > 0`,
	"sortBy":             `lists.range(2000).sortBy(x, -x).size() > 0`,
	// 10^7 ints in lists that share their sub-lists (TestCostIsSound).
	"flatten": sharedLists(6, "v6.flatten(6).size() > 0"),
}

// TestSuperLinearCallsAreRefusedBeforeTheyRun: with the compile-time
// estimate lifted, each call of superLinearConditions is refused by its
// charge, before it runs, with a cost reason (the cost limit stops it after
// it ran otherwise).
func TestSuperLinearCallsAreRefusedBeforeTheyRun(t *testing.T) {
	// cel-go charges replace by the bytes of its result, so building the
	// long strings of these conditions costs 1.12 M; the limit leaves room
	// for that, and every charge below is still above it.
	e := newEngine(t, WithEstimatedCostLimit(math.MaxUint64), WithCostLimit(1_500_000))
	cs := combinedStatus("deployments-aggregator", []ksv1alpha1.Value{number("1")})
	for name, src := range superLinearConditions {
		t.Run(name, func(t *testing.T) {
			p, err := e.Compile(KindCondition, src)
			if err != nil {
				t.Fatalf("Compile(%s): %v", src, err)
			}
			_, err = p.EvalCondition(cs)
			var refused *errCallTooCostly
			if !errors.As(err, &refused) || !IsTooCostly(err) {
				t.Fatalf("EvalCondition(%s) = %v, want it refused before the call ran, with a cost reason", src, err)
			}
		})
	}
}

// TestIndexOfIsEstimatedWithItsArgument: the compile-time estimate of
// indexOf and lastIndexOf multiplies the sizes of the string and the
// substring, so hugeIndexOf is rejected when its policy is read.
func TestIndexOfIsEstimatedWithItsArgument(t *testing.T) {
	e := newEngine(t)
	for _, name := range []string{"indexOf of a long substring", "lastIndexOf", "indexOf with an offset"} {
		src := superLinearConditions[name]
		_, err := e.Compile(KindCondition, src)
		var exprErr *Error
		if !errors.As(err, &exprErr) || exprErr.Reason != ReasonEstimatedCostTooHigh {
			t.Errorf("Compile(%s) = %v, want ReasonEstimatedCostTooHigh", name, err)
		}
	}
}

// TestPrechargedCallsStillRun: below the limit, the charged calls give what
// cel-go's own functions give.
func TestPrechargedCallsStillRun(t *testing.T) {
	e := newEngine(t)
	cs := combinedStatus("deployments-aggregator", []ksv1alpha1.Value{number("1")})
	for _, src := range []string{
		`'abcabc'.indexOf('c') == 2 && 'abcabc'.indexOf('c', 3) == 5 && 'abcabc'.lastIndexOf('a') == 3`,
		`'abcabc'.lastIndexOf('a', 2) == 0 && 'abc'.indexOf('') == 0 && 'héllo'.indexOf('l') == 2`,
		`sets.contains([1, 2, 3], [2, 3]) && sets.intersects([[1], [2]], [[2]]) && sets.equivalent([1, 1, 2], [2, 1])`,
		`[3, 1, 3, 2].distinct() == [3, 1, 2] && [3, 1, 2].sort() == [1, 2, 3] && ['b', 'a'].sortBy(s, s) == ['a', 'b']`,
		`obj.results.map(r, r.name).distinct().size() == 1 && obj.metadata.name.indexOf('x') == -1`,
		`lists.range(900).distinct().size() == 900`,
		`lists.range(900).sort().size() == 900`,
		`[[1, [2]], [3]].flatten() == [1, [2], 3] && [[1, [2]], [3]].flatten(2) == [1, 2, 3] && [].flatten() == []`,
		`optional.of([1, 'a']).hasValue([1, 'a']) && !optional.of(1).hasValue(2) && !optional.none().hasValue(1) && optional.of(1).hasValue()`,
		`'a,b,,c'.split(',') == ['a', 'b', '', 'c'] && 'a,b,c'.split(',', 2) == ['a', 'b,c'] && 'hé'.split('') == ['h', 'é']`,
		`'aaaaaaaaaa'.replace('a', 'aaaaaaaaaa').replace('a', 'aaaaaaaaaa').replace('a', 'aaaaaaaaaa').replace('a', 'aaaaaaaaaa').split('').size() == 100000`,
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

// TestEveryFunctionHasABound: every function the environments expose has a
// bound in functionBounds (a new cel-go or library that adds one fails here
// until it is weighed), and every overload of a function bound by its
// charge is in precharges.
func TestEveryFunctionHasABound(t *testing.T) {
	e := newEngine(t)
	seen := map[string]bool{}
	for kind, env := range map[Kind]*cel.Env{KindFilter: e.filterEnv, KindCondition: e.conditionEnv, KindAnalysis: e.analysisEnv} {
		for name, fn := range env.Functions() {
			seen[name] = true
			bound, ok := functionBounds[name]
			if !ok {
				t.Errorf("%s environment: function %s has no bound in functionBounds", kind, name)
				continue
			}
			for _, o := range fn.OverloadDecls() {
				if _, charged := precharges[o.ID()]; charged != (bound == boundPrecharged) {
					t.Errorf("%s (%s) is bound %q but charged before it runs: %v", name, o.ID(), bound, charged)
				}
			}
		}
	}
	for name := range functionBounds {
		if !seen[name] {
			t.Errorf("functionBounds names %s, which no environment has", name)
		}
	}
}
