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
	"strings"
	"sync"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	celcost "cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/functions"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/interpreter"
)

// This file refuses, before it runs, a call whose time grows faster than
// the sizes of its arguments. cel-go charges a call only after it returns,
// and neither the evaluation timeout (checked between iterations of a
// comprehension) nor the budget (checked between evaluations) can stop a
// call that is running (an indexOf over a large string and a long
// substring; docs/security.md). Such a call is charged beforehand, from its
// arguments, with its worst case, and refused when that alone is above the
// cost limit.

// precharge is the worst-case cost of one call, computed from its arguments
// alone; it may stop counting once it has passed limit.
type precharge func(args []ref.Val, limit uint64) uint64

// precharges are the overloads, by cel-go overload ID, that are charged
// before they run. Every function of the environments has a bound in
// functionBounds (overloads.go), which names these boundPrecharged.
var precharges = func() map[string]precharge {
	m := map[string]precharge{
		// Rune by rune, for every position of the string, the substring
		// (cel-go's ext.Strings compares []runes naively).
		"string_index_of_string": chargeIndexOf, "string_index_of_string_int": chargeIndexOf,
		"string_last_index_of_string": chargeIndexOf, "string_last_index_of_string_int": chargeIndexOf,
		// Every element of one list against every element of the other,
		// each comparison as deep as the elements.
		"list_sets_contains_list": chargePairs(1), "list_sets_intersects_list": chargePairs(1),
		"list_sets_equivalent_list": chargePairs(2),
		// Every element against the elements kept so far.
		"list_distinct": chargeSelfCompare(0),
		// A string header for every part, which split('') makes one per
		// rune.
		"string_split_string": chargeSplit, "string_split_string_int": chargeSplit,
		// An element for every leaf it reaches (deepcharge.go).
		"list_flatten": chargeFlatten, "list_flatten_int": chargeFlatten,
	}
	// sort and sortBy compare n log n times, each comparison as long as
	// the values; cel-go charges them quadratically after they ran.
	for _, t := range []string{"bool", "bytes", "double", "google.protobuf.Duration", "google.protobuf.Timestamp",
		"int", "string", "uint"} {
		m["list_"+t+"_sort"] = chargeSelfCompare(0)
		m["list_"+t+"_sortByAssociatedKeys"] = chargeSelfCompare(1)
	}
	if holesFixed {
		// Deep comparisons (deepcharge.go).
		m["equals"], m["not_equals"] = chargeEquality, chargeEquality
		m["in_list"], m["in_map"] = chargeIn, chargeIn
		m["optional_hasValue_value"] = chargeOptionalHasValue
		m["optional_hasValue"] = func([]ref.Val, uint64) uint64 { return 1 }
		// The most format can build, before and after: what its
		// charge walks, a call that fails at its first clause does not
		// build (deepcharge.go).
		m["string_format"] = chargeFormat
	}
	return m
}()

// refusalCost is what a call refused by its charge costs: a tenth of the
// cost limit, since computing the charge may have walked its arguments up
// to the limit, so that a loop repeating the refusal is stopped by the cost
// limit at the tenth. (At one unit, TestCostIsSound found sort refused
// 1,000 times in a loop: 78 MB and 0.9 s for 7,012 units.)
func refusalCost(costLimit uint64) uint64 { return max(costLimit/10, 1) }

// refusedBeforeItRan reports whether result is the refusal of a call by
// its charge.
func refusedBeforeItRan(result ref.Val) bool {
	err, ok := result.(*types.Err)
	return ok && errors.As(err, new(*errCallTooCostly))
}

// chargeIndexOf charges s.indexOf(sub) (and lastIndexOf, with or without an
// offset): a tenth of a unit per byte of s, times the bytes of sub, and a
// tenth of a unit a byte of both for the runes cel-go makes of them (a
// 100 KB sub searched in an empty string had allocated 400 KB for a unit:
// TestCostIsSound).
func chargeIndexOf(args []ref.Val, _ uint64) uint64 {
	s, sub := actualSize(args[0]), actualSize(args[1])
	return saturatingAdd(indexOfCost(s, sub), saturatingAdd(s, sub)/bytesPerCostUnit)
}

// indexOfCost is the cost of searching a string of s bytes for one of sub
// bytes.
func indexOfCost(s, sub uint64) uint64 {
	return saturatingAdd(saturatingMul(s, max(sub, 1))/bytesPerCostUnit, 1)
}

// stringHeaderBytes is what a list of strings takes for each element
// besides the strings' bytes.
const stringHeaderBytes = 16

// chargeSplit charges s.split(sep) and s.split(sep, n) by the bytes they
// read, twice, and those of the list they build: a tenth of a unit a byte.
func chargeSplit(args []ref.Val, _ uint64) uint64 {
	s, sep := string(args[0].(types.String)), string(args[1].(types.String))
	var parts uint64
	if sep == "" {
		parts = uint64(utf8.RuneCountInString(s))
	} else {
		parts = uint64(strings.Count(s, sep)) + 1
	}
	if len(args) > 2 {
		if n := int64(args[2].(types.Int)); n >= 0 {
			parts = min(parts, uint64(n))
		}
	}
	return saturatingAdd(2*uint64(len(s)), saturatingMul(parts, stringHeaderBytes))/bytesPerCostUnit + 1
}

// chargePairs charges a call that compares every value of its first list
// with every value of its second: factor times the product of their
// weights.
func chargePairs(factor uint64) precharge {
	return func(args []ref.Val, limit uint64) uint64 {
		a := weight(args[0], limit)
		b := weight(args[1], saturatingAdd(limit/max(a, 1), 1))
		return saturatingMul(factor, saturatingMul(a, b))
	}
}

// chargeSelfCompare charges a call that compares the values of its argument
// arg with one another: the square of its weight.
func chargeSelfCompare(arg int) precharge {
	return func(args []ref.Val, limit uint64) uint64 {
		if arg >= len(args) {
			return 1
		}
		// Past the square root of the limit, the square is past it:
		// the walk stops there, so that a refusal walks little.
		w := weight(args[arg], uint64(math.Sqrt(float64(limit)))+1)
		return saturatingMul(w, w)
	}
}

// weight bounds the work of comparing v with another value: one unit for
// every value in it, all the way down, and a tenth of a unit for every byte
// of a string or bytes. It stops counting once past limit.
func weight(v ref.Val, limit uint64) uint64 {
	var w uint64
	var walk func(v ref.Val)
	walk = func(v ref.Val) {
		if w > limit {
			return
		}
		w++
		switch v := v.(type) {
		case types.String:
			w += uint64(len(v)) / bytesPerCostUnit
		case types.Bytes:
			w += uint64(len(v)) / bytesPerCostUnit
		case traits.Mapper:
			for it := v.Iterator(); it.HasNext() == types.True && w <= limit; {
				k := it.Next()
				walk(k)
				if val, found := v.Find(k); found {
					walk(val)
				}
			}
		case traits.Lister:
			for it := v.Iterator(); it.HasNext() == types.True && w <= limit; {
				walk(it.Next())
			}
		}
	}
	walk(v)
	return w
}

// errCallTooCostly is the cause reported when a call is refused before it
// runs because its worst-case cost is above the cost limit.
type errCallTooCostly struct {
	function    string
	cost, limit uint64
}

func (e *errCallTooCostly) Error() string {
	return fmt.Sprintf("%s would cost up to %s on these arguments, more than the cost limit %d; it was not run",
		e.function, formatCost(e.cost), e.limit)
}

// prechargeOptions returns the program options that charge the calls of
// precharges in env, with costLimit as the most one call may cost: before
// the call, by a decorator that replaces the planned call by one with the
// same ID, function, overload and arguments whose implementation is env's
// own binding behind the charge; and after it, by the same charge in
// cel-go's cost tracker (in place of ext's, which is lower for nested
// lists), or one unit for a call that was refused and did nothing.
func prechargeOptions(env *cel.Env, costLimit uint64) ([]cel.ProgramOption, error) {
	impls := map[string]*functions.Overload{}
	for name, fn := range env.Functions() {
		bindings, err := fn.Bindings()
		if err != nil {
			return nil, fmt.Errorf("reading the bindings of %s: %w", name, err)
		}
		for _, b := range bindings {
			impls[b.Operator] = b
		}
	}
	decorator := cel.CustomDecorator(func(i interpreter.Interpretable) (interpreter.Interpretable, error) {
		call, ok := i.(interpreter.InterpretableCall)
		if !ok {
			return i, nil
		}
		function, overload := call.Function(), call.OverloadID()
		charge := chargeFor(function, overload)
		if charge == nil {
			return i, nil
		}
		if (overload == "equals" || overload == "not_equals") && len(call.Args()) == 2 {
			return &chargedComparison{id: call.ID(), function: function, overload: overload,
				lhs: call.Args()[0], rhs: call.Args()[1], negate: overload == "not_equals", limit: costLimit}, nil
		}
		impl := impls[overload]
		if impl == nil {
			impl = impls[function]
		}
		run := implementation(impl, len(call.Args()))
		if run == nil {
			return nil, fmt.Errorf("no binding for %s (%s) with %d arguments", function, overload, len(call.Args()))
		}
		return interpreter.NewCall(call.ID(), function, overload, call.Args(), func(args ...ref.Val) ref.Val {
			if cost := charge(args, costLimit); cost > costLimit {
				return types.WrapErr(&errCallTooCostly{function: function, cost: cost, limit: costLimit})
			}
			return run(args...)
		}), nil
	})
	var trackers []celcost.TrackerOption
	for id, charge := range precharges {
		trackers = append(trackers, celcost.OverloadTracker(id, func(args []ref.Val, result ref.Val) *uint64 {
			cost := refusalCost(costLimit)
			if !refusedBeforeItRan(result) {
				cost = charge(args, costLimit)
			}
			return &cost
		}))
	}
	return []cel.ProgramOption{decorator, cel.CostTrackerOptions(trackers...)}, nil
}

// chargeFor returns the charge of a call of function planned with the
// overload ID overload (empty when it is dispatched at run time), or nil
// if it is not charged before it runs.
func chargeFor(function, overload string) precharge {
	if charge, ok := precharges[overload]; ok {
		return charge
	}
	if holesFixed && overload == "" && chargedFunctions()[function] {
		// Dispatched at run time: charged as the overload it runs.
		return func(args []ref.Val, limit uint64) uint64 {
			if c, found := precharges[dispatch().resolve(function, args)]; found {
				return c(args, limit)
			}
			return 1
		}
	}
	return nil
}

// chargedFunctions are the functions with an overload in precharges.
var chargedFunctions = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for name, overloads := range dispatch().overloads {
		for _, o := range overloads {
			if _, ok := precharges[o.ID()]; ok {
				m[name] = true
			}
		}
	}
	return m
})

// implementation returns the function of o that takes n arguments, or nil.
func implementation(o *functions.Overload, n int) functions.FunctionOp {
	switch {
	case o == nil:
		return nil
	case n == 1 && o.Unary != nil:
		return func(args ...ref.Val) ref.Val { return o.Unary(args[0]) }
	case n == 2 && o.Binary != nil:
		return func(args ...ref.Val) ref.Val { return o.Binary(args[0], args[1]) }
	}
	return o.Function
}
