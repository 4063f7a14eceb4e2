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
	"fmt"
	"math"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	celcost "cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// This file makes the cost of an expression follow the sizes it handles, in
// three places, after the example of the Kubernetes API server's CEL library:
//
//   - at compile time, costEstimator gives cel-go the sizes of the input, so
//     that Engine.Compile can reject an expression whose estimated worst-case
//     cost is above the limit (cel-go's own cost models estimate the
//     functions of the extension libraries);
//   - at run time, actualCost charges list concatenation by the size of the
//     list built, and format and matches by what they handle, where cel-go
//     charges one unit;
//   - the functions that can multiply the size of their input in one call
//     (replace, join, lists.range) are replaced by versions that refuse to
//     build a result larger than the cost limit would pay for, before
//     allocating it.
//
// The calls whose time grows faster than their arguments (indexOf, split,
// sets, distinct, sort) are charged before they run, in precharge.go.

// MaxObjectSize is the size, in bytes, that the compile-time estimate takes
// for the input of an expression: the largest object the Kubernetes API
// server stores by default (etcd's request limit, 1.5 MiB).
const MaxObjectSize = 3 << 19

// MaxWebAnswerBytes is the most bytes of a web analysis's JSON answer that
// a condition is evaluated on: the compile-time estimate takes
// MaxObjectSize for it, so no larger answer may be handed to a condition.
const MaxWebAnswerBytes = MaxObjectSize

// costPerByte is what handling one byte of a string costs: cel-go's
// StringTraversalCostFactor, one unit per ten bytes.
const costPerByte = 0.1

// bytesPerCostUnit is the reciprocal of costPerByte.
const bytesPerCostUnit = 10

// costEstimator is the cost.Estimator of one compilation.
//
// The sizes of the input (obj, combinedStatus, downsyncClause and anything
// reached from them) are unknown to cel-go. costEstimator spreads
// MaxObjectSize over the levels of nesting of the expression: with d nested
// comprehensions, every list, map and string of the input is taken to have
// at most MaxObjectSize^(1/(d+2)) elements or bytes (d+2: the d iterations,
// the collection or string handled innermost, and its elements), so that the
// innermost work is estimated for about MaxObjectSize bytes in all, which is
// as much as an object can hold. This is a heuristic, not a bound: an input
// may put all its bytes in one place. What it reliably catches is work that
// does not depend on the input (lists.range, replace, join, nested ranges),
// which is estimated from the expression's literals. The runtime cost limit,
// the evaluation timeout and the budget bound everything else.
//
// A web analysis's result is such an input too: a JSON answer, at most the
// stager's --analysis-max-response-bytes, which cannot be more than
// MaxObjectSize (MaxWebAnswerBytes).
type costEstimator struct {
	levelSize uint64
	// webResult says result is a web answer, not a list of values.
	webResult bool
}

// newCostEstimator returns the estimator for an expression whose deepest
// nesting of comprehensions is depth.
func newCostEstimator(kind Kind, depth int) *costEstimator {
	return &costEstimator{levelSize: uint64(math.Ceil(math.Pow(MaxObjectSize, 1/float64(depth+2)))), webResult: kind == KindWebAnalysis}
}

// inputRoots are the variables bound to the input.
var inputRoots = map[string]bool{VarObj: true, VarCombinedStatus: true, VarDownsyncClause: true}

// EstimateSize implements cost.Estimator.
func (c *costEstimator) EstimateSize(node celcost.AstNode) *celcost.SizeEstimate {
	path := node.Path()
	if len(path) == 1 && path[0] == VarResult && !c.webResult {
		return &celcost.SizeEstimate{Min: 0, Max: MaxResultValues}
	}
	if len(path) == 0 || !inputRoots[path[0]] && (!c.webResult || path[0] != VarResult) {
		return nil
	}
	switch node.Type().Kind() {
	case types.StringKind, types.BytesKind, types.ListKind, types.MapKind, types.DynKind:
		return &celcost.SizeEstimate{Min: 0, Max: c.levelSize}
	}
	return nil
}

// EstimateCallCost implements cost.Estimator. It estimates no call: cel-go's
// own cost models estimate the functions of the extension libraries by the
// sizes they read and build.
func (c *costEstimator) EstimateCallCost(string, string, *celcost.AstNode, []celcost.AstNode) *celcost.CallEstimate {
	return nil
}

func saturatingAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

func saturatingMul(a, b uint64) uint64 {
	if a != 0 && b > math.MaxUint64/a {
		return math.MaxUint64
	}
	return a * b
}

// nestingDepth returns the deepest nesting of comprehensions in e.
func nestingDepth(e ast.Expr) int {
	if e == nil {
		return 0
	}
	deepest := func(exprs ...ast.Expr) int {
		d := 0
		for _, x := range exprs {
			d = max(d, nestingDepth(x))
		}
		return d
	}
	switch e.Kind() {
	case ast.CallKind:
		call := e.AsCall()
		return deepest(append([]ast.Expr{call.Target()}, call.Args()...)...)
	case ast.ComprehensionKind:
		comp := e.AsComprehension()
		return max(deepest(comp.IterRange(), comp.AccuInit(), comp.Result()),
			1+deepest(comp.LoopCondition(), comp.LoopStep()))
	case ast.ListKind:
		return deepest(e.AsList().Elements()...)
	case ast.MapKind:
		var exprs []ast.Expr
		for _, entry := range e.AsMap().Entries() {
			exprs = append(exprs, entry.AsMapEntry().Key(), entry.AsMapEntry().Value())
		}
		return deepest(exprs...)
	case ast.SelectKind:
		return nestingDepth(e.AsSelect().Operand())
	case ast.StructKind:
		var exprs []ast.Expr
		for _, field := range e.AsStruct().Fields() {
			exprs = append(exprs, field.AsStructField().Value())
		}
		return deepest(exprs...)
	}
	return 0
}

// actualCost is the cost.ActualCostEstimator of the engine's programs.
type actualCost struct {
	// regex knows the instructions of the patterns matches charges for.
	regex *regexGuard
}

// CallCost implements cost.ActualCostEstimator: it charges list
// concatenation by the size of the resulting list, format by the bytes it
// reads and builds, and matches by the pattern's instructions. It comes
// before cel-go's standard charges for these, and after its models of the
// extension libraries' functions.
func (a actualCost) CallCost(function, overloadID string, args []ref.Val, result ref.Val) *uint64 {
	bytes := func(v ref.Val) float64 { return float64(actualSize(v)) }
	var cost float64
	switch {
	case refusedBeforeItRan(result):
		// A refusal (precharge.go) of a call dispatched at run time,
		// which no overload tracker charges.
		c := refusalCost(a.regex.costLimit)
		return &c
	case overloadID == "" && holesFixed:
		// Dispatched at run time (dispatch.go).
		c := a.dispatchedCost(function, args, result)
		return &c
	case overloadID == "add_list":
		cost = bytes(result) * costPerByte
	case (overloadID == "matches" || overloadID == "matches_string") && len(args) == 2:
		// By the pattern's instructions (cel-go: its characters, and
		// matches(s, re) one unit).
		c := matchCost(actualSize(args[0]), a.regex.instructions(args[1]))
		return &c
	case len(args) == 0:
		return nil
	case parsesText[overloadID]:
		// By the bytes it reads (cel-go: one unit). double() of a
		// 100 KB string had allocated 100 KB for a unit.
		c := max(uint64(math.Ceil(bytes(args[0])*costPerByte)), 1)
		return &c
	case timeZoneOverloads[overloadID] && len(args) == 2:
		c := saturatingAdd(timeZoneCost, uint64(math.Ceil(bytes(args[1])*costPerByte)))
		return &c
	case function == "format":
		cost = (bytes(args[0]) + bytes(result)) * costPerByte
	default:
		return nil
	}
	c := uint64(math.Ceil(cost)) + 1
	return &c
}

// parsesText are the conversions that parse a string or bytes, in time and
// memory linear in its length (an error quotes it whole).
var parsesText = map[string]bool{
	overloads.StringToInt: true, overloads.StringToUint: true, overloads.StringToDouble: true,
	overloads.StringToBool: true, overloads.StringToBytes: true, overloads.StringToTimestamp: true,
	overloads.StringToDuration: true,
}

// timeZoneCost is what a call with a time zone argument costs besides a
// tenth of a unit a byte of the zone's name: Go reads the zone from the
// system's time zone database at every call, and for a name that is not
// there its whole zip file: 40 KB of allocations and up to 9 ms on a
// loaded 2-core machine, one of 100 KB 900 KB (TestCostIsSound found them
// charged one unit, then 36 µs a unit at 250). At the default limit, an
// evaluation may look up 200 zones.
const timeZoneCost = 5000

// timeZoneOverloads are the overloads that take a time zone argument.
var timeZoneOverloads = map[string]bool{
	overloads.TimestampToYearWithTz: true, overloads.TimestampToMonthWithTz: true,
	overloads.TimestampToDayOfYearWithTz: true, overloads.TimestampToDayOfMonthZeroBasedWithTz: true,
	overloads.TimestampToDayOfMonthOneBasedWithTz: true, overloads.TimestampToDayOfWeekWithTz: true,
	overloads.TimestampToHoursWithTz: true, overloads.TimestampToMinutesWithTz: true,
	overloads.TimestampToSecondsWithTz: true, overloads.TimestampToMillisecondsWithTz: true,
}

// actualSize is the size of a string (in bytes), list or map, else 1.
func actualSize(v ref.Val) uint64 {
	switch v := v.(type) {
	case types.String:
		return uint64(len(v))
	case types.Bytes:
		return uint64(len(v))
	case traits.Sizer:
		if n, ok := v.Size().(types.Int); ok && n >= 0 {
			return uint64(n)
		}
	}
	return 1
}

// errResultTooLarge is the cause reported when a function would build a
// result larger than the cost limit pays for.
type errResultTooLarge struct {
	function    string
	size, limit uint64
	unit        string
}

func (e *errResultTooLarge) Error() string {
	return fmt.Sprintf("%s would build a result of %d %s, more than the %d the cost limit allows", e.function, e.size, e.unit, e.limit)
}

// guardedFunctions returns the environment options that replace the
// bindings of replace, join and lists.range by versions that refuse, before
// allocating it, a result larger than costLimit pays for: costLimit bytes of
// string (cel-go charges replace and join a unit for every character they
// build, and a character takes a byte at least), or costLimit list
// elements. They must follow ext.Strings and ext.Lists.
func guardedFunctions(costLimit uint64) []cel.EnvOption {
	maxBytes := costLimit
	maxElements := costLimit
	tooLarge := func(function string, size, limit uint64, unit string) ref.Val {
		return types.WrapErr(&errResultTooLarge{function: function, size: size, limit: limit, unit: unit})
	}
	replace := func(args []ref.Val, n int) ref.Val {
		s, old, repl := string(args[0].(types.String)), string(args[1].(types.String)), string(args[2].(types.String))
		count := strings.Count(s, old) // for an empty old: the number of runes plus one
		if n >= 0 && n < count {
			count = n
		}
		size := uint64(len(s)) + uint64(count)*uint64(len(repl))
		if removed := uint64(count) * uint64(len(old)); removed <= size {
			size -= removed
		}
		if size > maxBytes {
			return tooLarge("replace", size, maxBytes, "bytes")
		}
		return types.String(strings.Replace(s, old, repl, n))
	}
	join := func(list ref.Val, sep string) ref.Val {
		l := list.(traits.Lister)
		n, _ := l.Size().(types.Int)
		elems := make([]string, 0, int(n))
		var size uint64
		it := l.Iterator()
		for it.HasNext() == types.True {
			s, ok := it.Next().(types.String)
			if !ok {
				return types.NewErr("join: the list holds a value that is not a string")
			}
			elems = append(elems, string(s))
			size += uint64(len(s))
			if len(elems) > 1 {
				size += uint64(len(sep))
			}
			if size > maxBytes {
				return tooLarge("join", size, maxBytes, "bytes")
			}
		}
		return types.String(strings.Join(elems, sep))
	}
	return []cel.EnvOption{
		cel.Function("replace",
			cel.MemberOverload("string_replace_string_string",
				[]*cel.Type{cel.StringType, cel.StringType, cel.StringType}, cel.StringType,
				cel.FunctionBinding(func(args ...ref.Val) ref.Val { return replace(args, -1) })),
			cel.MemberOverload("string_replace_string_string_int",
				[]*cel.Type{cel.StringType, cel.StringType, cel.StringType, cel.IntType}, cel.StringType,
				cel.FunctionBinding(func(args ...ref.Val) ref.Val { return replace(args, int(args[3].(types.Int))) }))),
		cel.Function("join",
			cel.MemberOverload("list_join", []*cel.Type{cel.ListType(cel.StringType)}, cel.StringType,
				cel.UnaryBinding(func(list ref.Val) ref.Val { return join(list, "") })),
			cel.MemberOverload("list_join_string", []*cel.Type{cel.ListType(cel.StringType), cel.StringType}, cel.StringType,
				cel.BinaryBinding(func(list, sep ref.Val) ref.Val { return join(list, string(sep.(types.String))) }))),
		cel.Function("lists.range",
			cel.Overload("lists_range", []*cel.Type{cel.IntType}, cel.ListType(cel.IntType),
				cel.UnaryBinding(func(n ref.Val) ref.Val {
					count := int64(n.(types.Int))
					if count > 0 && uint64(count) > maxElements {
						return tooLarge("lists.range", uint64(count), maxElements, "elements")
					}
					elems := make([]ref.Val, 0, max(count, 0))
					for i := int64(0); i < count; i++ {
						elems = append(elems, types.Int(i))
					}
					return types.DefaultTypeAdapter.NativeToValue(elems)
				}))),
	}
}
