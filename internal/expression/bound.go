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
	"unicode/utf8"

	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
)

// This file lets a condition skip cel-go's runtime cost tracking when the
// sizes of its input show that the cost limit cannot be reached.
//
// Tracking the cost as it goes makes an evaluation about five times slower:
// cel-go observes every step. The bound here is deliberately coarse so that
// it can be argued in a few lines, without following which part of the input
// an expression reads (an earlier bound that did, built on cel-go's
// path-based estimate, was broken by loop variables, ternaries between a list
// and a map, and functions estimated on the wrong argument). It takes three
// numbers of the input:
//
//	M, the most elements of any list or map (input or literal),
//	S, the most bytes of any string or map key (input or literal), and
//	W, the weight of the whole input (weight in precharge.go: a unit for
//	every value, all the way down, and a tenth of one a byte of strings).
//
// A condition is eligible when every function it may call is in
// boundedOverloads and every comprehension accumulates a bool or an int (the
// all, exists and exists_one macros; map and filter accumulate lists). Then
// no value built during an evaluation is larger than M elements or S bytes:
// the values are parts of the input, literals, comprehension results (bools
// and ints), or results of boundedOverloads, which build no list or map and
// no string longer than their arguments or stringOverloadSize. So
//
//   - a comprehension runs at most M iterations, each evaluating its loop
//     condition and step once (cel-go's folder), and a node nested in the
//     loops of d comprehensions is evaluated at most M^d times;
//   - one evaluation of a node costs at most 1 (an identifier, a field
//     selection or index, a constant: cel-go's observer charges one unit per
//     attribute and per qualifier, each the node of one identifier, select or
//     index), plus the constructor cost of a list, map or message literal,
//     plus the cel-go runtime cost of a call (cost.Tracker's
//     CostCall) with every size at most M or S: see call. cel-go charges a
//     call by the value that arrives, whatever the checker's type of the
//     argument: startsWith, endsWith, contains and matches have one overload
//     each, so the checker lets a dyn operand through to them, and a list or
//     map of M elements that arrives is charged as a string of M runes
//     before the call fails. Their operands are priced at S only when all of
//     them are strings or bytes to the checker, at max(M, S) otherwise.
//     ==, != and in compare deeply and are charged by weight (deepcharge.go):
//     == and != the weight of the lighter operand, in at most that of its
//     list. A literal (a scalar, or a list or map literal of literals)
//     weighs what it weighs, a string or bytes at most S/10 + 1, another
//     scalar 1, and a part of the input at most W (weightOf); a condition
//     comparing nothing of these (a list literal holding parts of the
//     input, say) is not eligible.
//
// The bound is the sum over the nodes of the checked AST (macros expanded)
// of M^d times that cost, in saturating integer arithmetic.

// stringOverloadSize is the longest string an overload of boundedOverloads
// builds from a scalar (string(double), string(timestamp) and the like); a
// condition calling one takes S to be at least this.
const stringOverloadSize = 64

// boundedOverloads are the functions, by cel-go overload ID, that a
// condition evaluated without cost tracking may call, with the runtime cost
// (in cost.Tracker's CostCall) each of them is bounded by. None of
// them builds a list or map, or a string longer than its argument or
// stringOverloadSize. Overloads the engine charges itself (actualCost) are
// absent, but for both forms of matches, whose callMatches is what
// actualCost charges them (matchCost).
var boundedOverloads = func() map[string]callKind {
	m := map[string]callKind{
		"conditional": callFree, "logical_and": callFree, "logical_or": callFree,
		"logical_not": callUnit, "not_strictly_false": callUnit,
		"equals": callEquals, "not_equals": callEquals,
		"add_int64": callUnit, "add_uint64": callUnit, "add_double": callUnit,
		"subtract_int64": callUnit, "subtract_uint64": callUnit, "subtract_double": callUnit,
		"multiply_int64": callUnit, "multiply_uint64": callUnit, "multiply_double": callUnit,
		"divide_int64": callUnit, "divide_uint64": callUnit, "divide_double": callUnit,
		"modulo_int64": callUnit, "modulo_uint64": callUnit, "negate_int64": callUnit, "negate_double": callUnit,
		"index_list": callUnit, "index_map": callUnit,
		// The checker offers the optional index overloads for any dyn
		// operand. No value of an eligible condition is optional (none of
		// these functions builds one, and inputs hold none); were one
		// indexed, it would cost 1 and give a part of it.
		"optional_list_index_int": callUnit, "optional_map_index_value": callUnit,
		"in_list": callInList, "in_map": callUnit,
		"size_string": callUnit, "size_bytes": callUnit, "size_list": callUnit, "size_map": callUnit,
		"string_size": callUnit, "bytes_size": callUnit, "list_size": callUnit, "map_size": callUnit,
		"starts_with_string": callTraverse, "ends_with_string": callTraverse,
		"contains_string": callContains, "matches_string": callMatches, "matches": callMatches,
		"to_dyn":         callUnit,
		"int64_to_int64": callUnit, "uint64_to_int64": callUnit, "double_to_int64": callUnit,
		"string_to_int64": callTraverse, "timestamp_to_int64": callUnit, "duration_to_int64": callUnit,
		"int64_to_uint64": callUnit, "uint64_to_uint64": callUnit, "double_to_uint64": callUnit, "string_to_uint64": callTraverse,
		"double_to_double": callUnit, "int64_to_double": callUnit, "uint64_to_double": callUnit, "string_to_double": callTraverse,
		"bool_to_bool": callUnit, "string_to_bool": callTraverse,
		"string_to_string": callUnit, "bytes_to_string": callTraverse,
		"bool_to_string": callString, "int64_to_string": callString, "uint64_to_string": callString,
		"double_to_string": callString, "timestamp_to_string": callString, "duration_to_string": callString,
	}
	for _, op := range []string{"less", "less_equals", "greater", "greater_equals"} {
		for _, operands := range []string{"bool", "int64", "int64_double", "int64_uint64", "uint64", "uint64_double",
			"uint64_int64", "double", "double_int64", "double_uint64", "timestamp", "duration"} {
			m[op+"_"+operands] = callUnit
		}
		m[op+"_string"], m[op+"_bytes"] = callCompare, callCompare
	}
	return m
}()

// callKind classifies the runtime cost of a bounded overload.
type callKind int

const (
	// callFree costs nothing itself (cel-go charges only the operands).
	callFree callKind = iota
	// callUnit costs 1.
	callUnit
	// callString costs 1 and builds a string of up to stringOverloadSize bytes.
	callString
	// callEquals costs ceil(min size of its two arguments / 10), strings
	// counted in runes and lists and maps in elements.
	callEquals
	// callCompare is callEquals on strings or bytes only.
	callCompare
	// callInList costs the size of its list (second argument).
	callInList
	// callTraverse costs ceil(size of its first argument / 10).
	callTraverse
	// callContains costs ceil(size of its first argument / 10) times
	// ceil(size of its second / 10).
	callContains
	// callMatches costs ((size of its first argument + 1)/10 + 1) times
	// (instructions of its pattern/4 + 1), the instructions at most
	// MaxRegexInstructions (actualCost, matchCost).
	callMatches
	// The sizes in the three kinds above are those of the values that
	// arrive, which may be lists or maps when the checker's type is dyn.
)

// unit is a factor of a term of the bound, a function of M and S.
type unit int

const (
	unitOne        unit = iota // 1
	unitTenthS                 // S/10 + 1
	unitTenthMS                // max(M, S)/10 + 1
	unitM                      // M
	unitTenthS2                // (S/10 + 1)^2
	unitTenthSRex              // ((S+1)/10 + 1) * (MaxRegexInstructions/4 + 1)
	unitTenthMS2               // (max(M, S)/10 + 1)^2
	unitTenthMSRex             // ((max(M, S)+1)/10 + 1) * (MaxRegexInstructions/4 + 1)
	unitW                      // W
	numUnits
)

// tenth bounds ceil(0.1*n) as cel-go computes it in float64 (which may
// round 0.1*n up past an integer): n/10 + 1.
func tenth(n uint64) uint64 { return n/10 + 1 }

// costBound is the bound of one eligible condition: coef[d][u] is the
// coefficient of M^d times unit u.
type costBound struct {
	coef [][numUnits]uint64
	// minS is the least S to assume: the longest string literal, or
	// stringOverloadSize when the condition may convert a scalar to a string.
	minS uint64
	// minM is the least M to assume: the most elements of a list or map
	// literal.
	minM uint64
	// inInput says, for the comprehension variables in scope, whether
	// they only hold parts of the input (inputPart).
	inInput map[string]bool
}

// newCostBound returns the bound of the checked AST a, or nil if a is not
// eligible for evaluation without cost tracking.
func newCostBound(a *celast.AST) *costBound {
	b := &costBound{inInput: map[string]bool{}}
	if !b.add(a, a.Expr(), 0) {
		return nil
	}
	return b
}

// term adds c times M^depth times u.
func (b *costBound) term(depth int, u unit, c uint64) {
	for len(b.coef) <= depth {
		b.coef = append(b.coef, [numUnits]uint64{})
	}
	b.coef[depth][u] = saturatingAdd(b.coef[depth][u], c)
}

// add adds the cost of e and its descendants, e being evaluated at most
// M^depth times. It reports false if e is not eligible.
func (b *costBound) add(a *celast.AST, e celast.Expr, depth int) bool {
	if e == nil {
		return true
	}
	b.term(depth, unitOne, 1)
	switch e.Kind() {
	case celast.IdentKind:
		return true
	case celast.LiteralKind:
		b.minS = max(b.minS, literalBytes(e))
		return true
	case celast.SelectKind:
		return b.add(a, e.AsSelect().Operand(), depth)
	case celast.ListKind:
		elems := e.AsList().Elements()
		b.minM = max(b.minM, uint64(len(elems)))
		b.term(depth, unitOne, 10) // common.ListCreateBaseCost
		for _, el := range elems {
			if !b.add(a, el, depth) {
				return false
			}
		}
		return true
	case celast.MapKind:
		entries := e.AsMap().Entries()
		b.minM = max(b.minM, uint64(len(entries)))
		b.term(depth, unitOne, 30) // common.MapCreateBaseCost
		for _, entry := range entries {
			if !b.add(a, entry.AsMapEntry().Key(), depth) || !b.add(a, entry.AsMapEntry().Value(), depth) {
				return false
			}
		}
		return true
	case celast.ComprehensionKind:
		comp := e.AsComprehension()
		if comp.HasIterVar2() || !accumulatesScalar(comp.AccuInit()) {
			return false
		}
		if !b.add(a, comp.IterRange(), depth) || !b.add(a, comp.AccuInit(), depth) {
			return false
		}
		defer b.bind(comp.AccuVar(), false)()
		if !b.add(a, comp.Result(), depth) {
			return false
		}
		defer b.bind(comp.IterVar(), b.inputPart(comp.IterRange()))()
		return b.add(a, comp.LoopCondition(), depth+1) && b.add(a, comp.LoopStep(), depth+1)
	case celast.CallKind:
		call := e.AsCall()
		ids := a.GetOverloadIDs(e.ID())
		if len(ids) == 0 {
			return false
		}
		args := call.Args()
		if call.IsMemberFunction() {
			args = append([]celast.Expr{call.Target()}, args...)
		}
		// A checked call with several candidate overloads (on dyn
		// operands) is dispatched at run time; it costs at most what the
		// dearest candidate costs, unit by unit.
		var cost [numUnits]uint64
		for _, id := range ids {
			kind, ok := boundedOverloads[id]
			if !ok {
				return false
			}
			callCost, ok := b.call(a, kind, args, textual(a, args))
			if !ok {
				return false
			}
			for u, c := range callCost {
				cost[u] = max(cost[u], c)
			}
		}
		for u, c := range cost {
			b.term(depth, unit(u), c)
		}
		for _, arg := range args {
			if !b.add(a, arg, depth) {
				return false
			}
		}
		return true
	}
	// Messages (StructKind) and anything unknown.
	return false
}

// call returns the cost of one call of kind with the given arguments (for a
// member call, the target first, as cel-go passes them at run time), as
// coefficients of the units, or false if it has none. text says that the
// checker types every argument as a string or bytes, so that no value
// larger than S arrives.
func (b *costBound) call(a *celast.AST, kind callKind, args []celast.Expr, text bool) (cost [numUnits]uint64, ok bool) {
	switch kind {
	case callFree:
	case callUnit:
		cost[unitOne] = 1
	case callString:
		cost[unitOne] = 1
		b.minS = max(b.minS, stringOverloadSize)
	case callEquals:
		// The weight of the lighter operand: at most that of either.
		best, bestC, found := unitOne, uint64(0), false
		for _, arg := range args {
			if u, c, ok := b.weightOf(a, arg); ok && (!found || u < best || u == best && c < bestC) {
				best, bestC, found = u, c, true
			}
		}
		if !found {
			return cost, false
		}
		cost[best] = bestC
	case callCompare:
		// The smaller argument is at most as large as a literal one.
		if n, ok := literalSize(args); ok {
			cost[unitOne] = tenth(n)
		} else {
			cost[unitTenthS] = 1
		}
	case callInList:
		// One more than the weight of the list, or than its length times
		// the weight of the value, whichever is less.
		if len(args) != 2 {
			return cost, false
		}
		cost[unitOne] = 1
		if w, ok := literalWeight(args[1]); ok {
			cost[unitOne] = saturatingAdd(w, 1)
		} else if b.inputPart(args[1]) {
			cost[unitW] = 1
		} else if u, c, ok := b.weightOf(a, args[0]); ok && u == unitOne {
			cost[unitM] = c
		} else {
			return cost, false
		}
	case callTraverse:
		cost[pick(text, unitTenthS, unitTenthMS)] = 1
	case callContains:
		cost[pick(text, unitTenthS2, unitTenthMS2)] = 1
	case callMatches:
		cost[pick(text, unitTenthSRex, unitTenthMSRex)] = 1
	}
	return cost, true
}

// weightOf bounds the weight (precharge.go) of the values of e: c times
// the unit u, which is unitOne, unitTenthS or unitW; false if there is no
// such bound.
func (b *costBound) weightOf(a *celast.AST, e celast.Expr) (u unit, c uint64, ok bool) {
	if w, ok := literalWeight(e); ok {
		return unitOne, w, true
	}
	switch a.GetType(e.ID()).Kind() {
	case types.StringKind, types.BytesKind:
		return unitTenthS, 1, true
	case types.BoolKind, types.IntKind, types.UintKind, types.DoubleKind, types.NullTypeKind,
		types.TimestampKind, types.DurationKind:
		return unitOne, 1, true
	}
	if b.inputPart(e) {
		return unitW, 1, true
	}
	return 0, 0, false
}

// inputPart reports whether every value of e is a part of the input: the
// input, a field, key or element of a part, a comprehension variable over
// a part, or a choice between parts.
func (b *costBound) inputPart(e celast.Expr) bool {
	switch e.Kind() {
	case celast.IdentKind:
		if v, ok := b.inInput[e.AsIdent()]; ok {
			return v
		}
		return e.AsIdent() == VarObj || e.AsIdent() == VarCombinedStatus
	case celast.SelectKind:
		return !e.AsSelect().IsTestOnly() && b.inputPart(e.AsSelect().Operand())
	case celast.CallKind:
		call := e.AsCall()
		args := call.Args()
		switch {
		case call.FunctionName() == "_[_]" && len(args) == 2, call.FunctionName() == "dyn" && len(args) == 1:
			return b.inputPart(args[0])
		case call.FunctionName() == "_?_:_" && len(args) == 3:
			return b.inputPart(args[1]) && b.inputPart(args[2])
		}
	}
	return false
}

// bind records whether the comprehension variable name holds parts of the
// input, and returns the function that restores the outer binding.
func (b *costBound) bind(name string, part bool) func() {
	outer, had := b.inInput[name]
	b.inInput[name] = part
	return func() {
		if had {
			b.inInput[name] = outer
		} else {
			delete(b.inInput, name)
		}
	}
}

// literalWeight returns the weight (precharge.go) of e if it is a literal,
// or a list or map literal of literals.
func literalWeight(e celast.Expr) (uint64, bool) {
	switch e.Kind() {
	case celast.LiteralKind:
		return 1 + literalBytes(e)/bytesPerCostUnit, true
	case celast.ListKind:
		w := uint64(1)
		for _, el := range e.AsList().Elements() {
			c, ok := literalWeight(el)
			if !ok {
				return 0, false
			}
			w = saturatingAdd(w, c)
		}
		return w, true
	case celast.MapKind:
		w := uint64(1)
		for _, entry := range e.AsMap().Entries() {
			k, ok := literalWeight(entry.AsMapEntry().Key())
			if !ok {
				return 0, false
			}
			v, ok := literalWeight(entry.AsMapEntry().Value())
			if !ok {
				return 0, false
			}
			w = saturatingAdd(w, saturatingAdd(k, v))
		}
		return w, true
	}
	return 0, false
}

// pick returns ifText when text is true, else otherwise.
func pick(text bool, ifText, otherwise unit) unit {
	if text {
		return ifText
	}
	return otherwise
}

// textual reports whether the checker types every one of args as a string
// or bytes: then what arrives at run time is a string or bytes of at most S
// bytes (or an error, of size 1).
func textual(a *celast.AST, args []celast.Expr) bool {
	for _, arg := range args {
		switch a.GetType(arg.ID()).Kind() {
		case types.StringKind, types.BytesKind:
		default:
			return false
		}
	}
	return true
}

// literalSize returns the size, as cel-go's actualSize counts it, of the
// first of args that is a literal or a list or map literal.
func literalSize(args []celast.Expr) (uint64, bool) {
	for _, arg := range args {
		switch arg.Kind() {
		case celast.LiteralKind:
			switch v := arg.AsLiteral().(type) {
			case types.String:
				return uint64(utf8.RuneCountInString(string(v))), true
			case types.Bytes:
				return uint64(len(v)), true
			default:
				return 1, true
			}
		case celast.ListKind:
			return uint64(len(arg.AsList().Elements())), true
		case celast.MapKind:
			return uint64(len(arg.AsMap().Entries())), true
		}
	}
	return 0, false
}

// literalBytes returns the bytes of a string or bytes literal, else 0.
func literalBytes(e celast.Expr) uint64 {
	switch v := e.AsLiteral().(type) {
	case types.String:
		return uint64(len(v))
	case types.Bytes:
		return uint64(len(v))
	}
	return 0
}

// accumulatesScalar reports whether a comprehension's accumulator starts as
// a bool or int literal, as those of all, exists and exists_one do.
func accumulatesScalar(init celast.Expr) bool {
	if init == nil || init.Kind() != celast.LiteralKind {
		return false
	}
	switch init.AsLiteral().(type) {
	case types.Bool, types.Int:
		return true
	}
	return false
}

// cost returns the bound for an input of the given sizes.
func (b *costBound) cost(in inputSizes) uint64 {
	m, s := max(in.elements, b.minM), max(in.bytes, b.minS)
	x := max(m, s)
	units := [numUnits]uint64{
		unitOne:        1,
		unitTenthS:     tenth(s),
		unitTenthMS:    tenth(x),
		unitM:          m,
		unitTenthS2:    saturatingMul(tenth(s), tenth(s)),
		unitTenthSRex:  saturatingMul(tenth(saturatingAdd(s, 1)), MaxRegexInstructions/4+1),
		unitTenthMS2:   saturatingMul(tenth(x), tenth(x)),
		unitTenthMSRex: saturatingMul(tenth(saturatingAdd(x, 1)), MaxRegexInstructions/4+1),
		unitW:          in.weight,
	}
	var total uint64
	power := uint64(1) // m^depth
	for depth, coef := range b.coef {
		if depth > 0 {
			power = saturatingMul(power, m)
		}
		for u, c := range coef {
			if c != 0 {
				total = saturatingAdd(total, saturatingMul(power, saturatingMul(c, units[u])))
			}
		}
	}
	return total
}

// inputSizes are the M and S of an input (see the top of this file).
type inputSizes struct {
	elements uint64 // most elements of a list or map
	bytes    uint64 // most bytes of a string or map key
	weight   uint64 // weight of the whole (precharge.go)
}

// sizesOf returns the sizes of a value in JSON form.
func sizesOf(v any) inputSizes {
	var s inputSizes
	s.walk(v)
	return s
}

func (s *inputSizes) walk(v any) {
	s.weight = saturatingAdd(s.weight, 1)
	switch v := v.(type) {
	case string:
		s.bytes = max(s.bytes, uint64(len(v)))
		s.weight = saturatingAdd(s.weight, uint64(len(v))/bytesPerCostUnit)
	case []any:
		s.elements = max(s.elements, uint64(len(v)))
		for _, el := range v {
			s.walk(el)
		}
	case map[string]any:
		s.elements = max(s.elements, uint64(len(v)))
		for k, el := range v {
			s.bytes = max(s.bytes, uint64(len(k)))
			s.weight = saturatingAdd(s.weight, 1+uint64(len(k))/bytesPerCostUnit)
			s.walk(el)
		}
	}
}
