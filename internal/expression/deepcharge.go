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
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/interpreter"
)

// This file charges the calls whose work follows their arguments all the
// way down, where cel-go charges them by their top-level size: equality
// and membership compare lists and maps deeply, and format prints them
// deeply. Lists built by comprehensions may share their sub-lists, so the
// work can be exponential in the size of the expression while the values
// take little memory (issue 54: N1, N2).

// chargeEquality charges a == b and a != b: the weight of the lighter
// operand, since the comparison stops at the end of either (types.Equal
// compares sizes first, then element by element). Scalars weigh 1 and
// strings a tenth of a unit a byte more, so the common case stays cheap.
func chargeEquality(args []ref.Val, limit uint64) uint64 {
	if len(args) != 2 {
		return 1
	}
	return lighter(args[0], 1, args[1], limit)
}

// chargeIn charges x in l: every element of a list is compared with x,
// each comparison at most as heavy as the lighter of the two, so one more
// than the weight of the list or than its length times the weight of x,
// whichever is less. A map is looked up by its key: one unit.
func chargeIn(args []ref.Val, limit uint64) uint64 {
	if len(args) != 2 {
		return 1
	}
	if _, ok := args[1].(traits.Lister); !ok {
		return 1
	}
	n := actualSize(args[1])
	if n == 0 {
		return 1
	}
	return saturatingAdd(lighter(args[0], n, args[1], limit), 1)
}

// chargeOptionalHasValue charges opt.hasValue(v), which compares the value
// opt holds with v as == does: the weight of the lighter.
func chargeOptionalHasValue(args []ref.Val, limit uint64) uint64 {
	if len(args) != 2 {
		return 1
	}
	opt, ok := args[0].(*types.Optional)
	if !ok || !opt.HasValue() {
		return 1
	}
	return lighter(opt.GetValue(), 1, args[1], limit)
}

// lighter returns the lesser of n times the weight of a and the weight of
// b, or more than limit if both are more. It walks both in rounds of
// doubling length, so that what it walks is at most about four times what
// it returns: walking the heavier operand to the end, as a first version
// did, made a comparison of a list with a scalar walk the list, repeated
// in a loop for a unit a time (TestCostIsSound).
func lighter(a ref.Val, n uint64, b ref.Val, limit uint64) uint64 {
	// Scalars, the common case, without a walk.
	if wa, ok := scalarWeight(a); ok {
		byA := saturatingMul(n, wa)
		if wb, ok := scalarWeight(b); ok {
			return min(byA, wb)
		}
		return min(byA, weight(b, byA))
	}
	if wb, ok := scalarWeight(b); ok {
		if wa := weight(a, wb/n); wa <= wb/n {
			return saturatingMul(n, wa)
		}
		return wb
	}
	for round := uint64(16); ; round = saturatingMul(round, 2) {
		round = min(round, limit)
		if wa := weight(a, round/n); wa <= round/n {
			byA := saturatingMul(n, wa)
			return min(byA, weight(b, byA))
		}
		if wb := weight(b, round); wb <= round {
			return wb
		}
		if round >= limit {
			return saturatingAdd(limit, 1)
		}
	}
}

// scalarWeight returns the weight of v if it is neither a list nor a map.
func scalarWeight(v ref.Val) (uint64, bool) {
	switch v := v.(type) {
	case types.String:
		return 1 + uint64(len(v))/bytesPerCostUnit, true
	case types.Bytes:
		return 1 + uint64(len(v))/bytesPerCostUnit, true
	case traits.Lister, traits.Mapper:
		return 0, false
	}
	return 1, true
}

// chargedComparison is == or != charged before it runs (chargeEquality):
// cel-go's evalEq and evalNe, which it plans as operators of their own,
// with the charge in front. It takes no argument slice, which a generic
// call allocates at every evaluation (the seed condition's three
// comparisons took five more allocations so).
type chargedComparison struct {
	id                 int64
	function, overload string
	lhs, rhs           interpreter.InterpretableV2
	negate             bool
	limit              uint64
}

// ID implements interpreter.Interpretable.
func (c *chargedComparison) ID() int64 { return c.id }

// Function implements interpreter.InterpretableCall.
func (c *chargedComparison) Function() string { return c.function }

// OverloadID implements interpreter.InterpretableCall.
func (c *chargedComparison) OverloadID() string { return c.overload }

// Args implements interpreter.InterpretableCall.
func (c *chargedComparison) Args() []interpreter.InterpretableV2 {
	return []interpreter.InterpretableV2{c.lhs, c.rhs}
}

// Eval implements interpreter.Interpretable.
func (c *chargedComparison) Eval(vars interpreter.Activation) ref.Val {
	return interpreter.EvalActivation(vars, c.Exec)
}

// Exec implements interpreter.InterpretableV2, as evalEq and evalNe do,
// cost tracking included.
func (c *chargedComparison) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	track := func(l, r, res ref.Val) ref.Val {
		if costs := frame.CostTracker(); costs != nil {
			costs.EvalBinary(frame, c.id, c, l, r, res)
		}
		return res
	}
	l := c.lhs.Exec(frame)
	if types.IsError(l) {
		return track(l, types.UnknownType, l)
	}
	r := c.rhs.Exec(frame)
	if types.IsError(r) {
		return track(l, r, r)
	}
	lu, lUnknown := l.(*types.Unknown)
	ru, rUnknown := r.(*types.Unknown)
	switch {
	case lUnknown && rUnknown:
		return track(l, r, types.MergeUnknowns(lu, ru))
	case lUnknown:
		return track(l, r, l)
	case rUnknown:
		return track(l, r, r)
	}
	if cost := lighter(l, 1, r, c.limit); cost > c.limit {
		return track(l, r, types.WrapErr(&errCallTooCostly{function: c.function, cost: cost, limit: c.limit}))
	}
	if c.negate {
		return track(l, r, types.Bool(types.Equal(l, r) != types.True))
	}
	return track(l, r, types.Equal(l, r))
}

// formatClauseSlack is what one format clause may print beyond twice the
// printed size of its argument (hexadecimal prints two bytes a byte): a
// double in fixed notation with cel-go's largest precision, 100, takes at
// most 310 digits before the point.
const formatClauseSlack = 512

// chargeFormat charges s.format(args), before it runs and after: the
// bytes it reads and the most it can build, a tenth of a unit a byte
// (actualCost charges what it built, where this charge is off). Every clause of s prints
// one argument; a list or map is printed all the way down, a shared
// sub-list every time it occurs, and a map's entries are printed apart
// and then copied, once for every map around them (printWork).
func chargeFormat(args []ref.Val, limit uint64) uint64 {
	if len(args) != 2 {
		return 1
	}
	s, ok := args[0].(types.String)
	if !ok {
		return 1
	}
	list, ok := args[1].(traits.Lister)
	if !ok {
		return 1
	}
	n := actualSize(args[1])
	maxBytes := saturatingMul(limit, bytesPerCostUnit)
	total := uint64(len(s))
	var clause uint64
	for i := 0; i < len(s) && total <= maxBytes; i++ {
		if s[i] != '%' {
			continue
		}
		if i+1 < len(s) && s[i+1] == '%' {
			i++
			continue
		}
		if clause < n {
			p := printWork(list.Get(types.Int(clause)), maxBytes)
			total = saturatingAdd(total, saturatingAdd(saturatingMul(p, 2), formatClauseSlack))
		}
		clause++
	}
	return saturatingAdd(total, uint64(len(s)))/bytesPerCostUnit + 1
}

// scalarPrintBytes bounds what format prints for a scalar that is not a
// string or bytes (a double in shortest notation takes up to about 330).
const scalarPrintBytes = 400

// printWork bounds the bytes format writes and copies to print v: its
// printed size, plus, for every map, its entries' printed size again (each
// is printed apart, then copied in). It stops counting once past limit.
func printWork(v ref.Val, limit uint64) uint64 {
	var w uint64
	var walk func(v ref.Val, copies uint64)
	walk = func(v ref.Val, copies uint64) {
		if w > limit {
			return
		}
		switch v := v.(type) {
		case types.String:
			w = saturatingAdd(w, saturatingMul(uint64(len(v)), copies))
		case types.Bytes:
			w = saturatingAdd(w, saturatingMul(uint64(len(v)), copies))
		case traits.Mapper:
			w = saturatingAdd(w, saturatingMul(2, copies))
			for it := v.Iterator(); it.HasNext() == types.True && w <= limit; {
				k := it.Next()
				w = saturatingAdd(w, saturatingMul(4, copies+1))
				walk(k, copies+1)
				if val, found := v.Find(k); found {
					walk(val, copies+1)
				}
			}
		case traits.Lister:
			w = saturatingAdd(w, saturatingMul(2, copies))
			for it := v.Iterator(); it.HasNext() == types.True && w <= limit; {
				w = saturatingAdd(w, saturatingMul(2, copies))
				walk(it.Next(), copies)
			}
		default:
			w = saturatingAdd(w, saturatingMul(scalarPrintBytes, copies))
		}
	}
	walk(v, 1)
	return w
}

// chargeFlatten charges l.flatten() and l.flatten(depth): a unit for every
// element of the list it builds and for every list it opens, counted
// before it builds it. Over lists that share their sub-lists the result
// may be exponentially longer than what built them: TestCostIsSound found
// flatten(7) of 10^6 shared ints building 86 MB before cel-go charged it.
func chargeFlatten(args []ref.Val, limit uint64) uint64 {
	l, ok := args[0].(traits.Lister)
	if !ok {
		return 1
	}
	depth := int64(1)
	if len(args) > 1 {
		if d, ok := args[1].(types.Int); ok {
			depth = int64(d)
		}
	}
	var n uint64
	var walk func(l traits.Lister, depth int64)
	walk = func(l traits.Lister, depth int64) {
		n++
		for it := l.Iterator(); it.HasNext() == types.True && n <= limit; {
			v := it.Next()
			if inner, ok := v.(traits.Lister); ok && depth > 0 {
				walk(inner, depth-1)
				continue
			}
			n++
		}
	}
	walk(l, depth)
	return n
}
