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
	"math"
	"math/bits"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// This file lets a condition skip cel-go's runtime cost tracking when its
// input shows that the cost limit cannot be reached.
//
// Tracking the cost as it goes makes an evaluation about five times slower
// (cel-go observes every step). But the cost of an expression is bounded by
// the sizes of what it reads, and cel-go can estimate it before evaluating:
// given, for every path of the input the expression reads (such as
// obj.results.@items.rows), the largest size found there (elements of a
// list or map, bytes of a string), cel-go's estimate follows its runtime
// cost for the functions of boundedOverloads. A condition that calls only
// those is evaluated without tracking when its bound for the sizes of its
// input is within the cost limit; the evaluation timeout still applies, and
// a Budget is charged the bound.
//
// Three corrections make the estimate a bound:
//
//   - cel-go's estimate charges a field selection only on an operand known
//     to be a map or a message, while its runtime charges every one; on the
//     dyn values of a condition a chain of k selections (r.rows.columns) is
//     charged once for its root instead of 1+k times. The bound is thus the
//     estimate times one plus the longest chain of selections.
//   - Functions whose runtime cost the engine charges itself (actualCost:
//     the strings extension, list concatenation, and so the map and filter
//     macros, which build their lists by concatenation) are not in
//     boundedOverloads, nor are cel-go functions whose estimate falls short
//     of their runtime cost (flatten takes its result to be the size of its
//     argument) or that only a few conditions need (timestamps, regular
//     expressions, the extensions). A condition calling one is tracked.
//   - Sizes are rounded up to one less than a power of two, so that the
//     inputs of a fleet share a few size classes; the bound is computed once
//     per program and size class, and kept with each cached input.

// maxBoundedPaths is the most input paths a program may read and still be
// evaluated without cost tracking; a program reading more is always
// tracked.
const maxBoundedPaths = 16

// maxBoundClasses is how many size classes a program keeps the bound of;
// inputs of further classes are evaluated with cost tracking.
const maxBoundClasses = 256

// boundedOverloads are the functions, by cel-go overload ID, that a
// condition evaluated without cost tracking may call: the core operators,
// size, in, index, contains, startsWith, endsWith, conversions between
// scalars and optional values. Comparisons (less_*, greater_*) are allowed
// by prefix.
var boundedOverloads = map[string]bool{
	"conditional": true, "logical_and": true, "logical_or": true, "logical_not": true, "not_strictly_false": true,
	"equals": true, "not_equals": true,
	"add_int64": true, "add_uint64": true, "add_double": true, "add_string": true,
	"subtract_int64": true, "subtract_uint64": true, "subtract_double": true,
	"multiply_int64": true, "multiply_uint64": true, "multiply_double": true,
	"divide_int64": true, "divide_uint64": true, "divide_double": true,
	"modulo_int64": true, "modulo_uint64": true, "negate_int64": true, "negate_double": true,
	"index_list": true, "index_map": true, "in_list": true, "in_map": true,
	"size_string": true, "size_bytes": true, "size_list": true, "size_map": true,
	"string_size": true, "bytes_size": true, "list_size": true, "map_size": true,
	"contains_string": true, "starts_with_string": true, "ends_with_string": true,
	"to_dyn": true, "int64_to_int64": true, "uint64_to_int64": true, "double_to_int64": true, "string_to_int64": true,
	"int64_to_uint64": true, "uint64_to_uint64": true, "double_to_uint64": true, "string_to_uint64": true,
	"double_to_double": true, "int64_to_double": true, "uint64_to_double": true, "string_to_double": true,
	"bool_to_bool": true, "string_to_bool": true, "string_to_string": true, "bool_to_string": true,
	"int64_to_string": true, "uint64_to_string": true, "double_to_string": true, "bytes_to_string": true,
	"timestamp_to_string": true, "duration_to_string": true,
	"optional_of": true, "optional_none": true, "optional_value": true, "optional_hasValue": true,
	"optional_or_optional": true, "optional_orValue_value": true, "select_optional_field": true,
	"list_optindex_optional_int": true, "optional_list_optindex_optional_int": true,
	"map_optindex_optional_value": true, "optional_map_optindex_optional_value": true,
	"optional_list_index_int": true, "optional_map_index_value": true,
}

// boundedOverload reports whether a condition evaluated without cost
// tracking may call the overload.
func boundedOverload(id string) bool {
	return boundedOverloads[id] || strings.HasPrefix(id, "less_") || strings.HasPrefix(id, "greater_")
}

// sizeClasses holds, for each input path a program reads, the class of the
// largest size found there: bits.Len64 of it, so that class c stands for
// sizes up to 2^c - 1.
type sizeClasses [maxBoundedPaths]uint8

// bound is what a program may cost on inputs of one size class.
type bound struct {
	fits bool   // the cost is within the limit: evaluate without tracking
	cost uint64 // the bound, when it fits
}

// bounders numbers the bounders, so that an input keeps their bounds by
// number without keeping the programs alive.
var bounders atomic.Uint64

// bounder decides, for one compiled condition, whether an input allows
// evaluating it without cost tracking, and holds the untracked program.
type bounder struct {
	id        uint64
	env       *cel.Env
	ast       *cel.Ast
	paths     [][]string     // the input paths the cost estimate reads
	index     map[string]int // position in paths, by path joined with "."
	limit     uint64         // the cost limit
	factor    uint64         // what the estimate is multiplied by: 1 + the longest chain of selections
	untracked cel.Program

	mu     sync.RWMutex
	bounds map[sizeClasses]bound
}

// newBounder returns the bounder of a condition compiled to ast in env, or
// nil if the condition cannot be bounded by the sizes of its input: it calls
// a function not in boundedOverloads, or reads too many paths.
func newBounder(env *cel.Env, ast *cel.Ast, costLimit uint64) (*bounder, error) {
	if !callsOnlyBoundedOverloads(ast.NativeRep()) {
		return nil, nil
	}
	var paths [][]string
	index := map[string]int{}
	record := &boundEstimator{sizeOf: func(path []string) (uint64, bool) {
		key := strings.Join(path, ".")
		if _, ok := index[key]; !ok {
			index[key] = len(paths)
			paths = append(paths, append([]string(nil), path...))
		}
		return 0, true
	}}
	if _, err := env.EstimateCost(ast, record); err != nil || len(paths) > maxBoundedPaths {
		return nil, nil
	}
	untracked, err := env.Program(ast,
		cel.InterruptCheckFrequency(interruptCheckFrequency),
		cel.EvalOptions(cel.OptOptimize),
	)
	if err != nil {
		return nil, err
	}
	return &bounder{
		id: bounders.Add(1), env: env, ast: ast, paths: paths, index: index,
		limit: costLimit, factor: 1 + uint64(longestSelection(ast.NativeRep().Expr())),
		untracked: untracked, bounds: map[sizeClasses]bound{},
	}, nil
}

// callsOnlyBoundedOverloads reports whether every call of the checked
// expression can only resolve to overloads in boundedOverloads.
func callsOnlyBoundedOverloads(checked *celast.AST) bool {
	ok := true
	celast.PostOrderVisit(checked.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() != celast.CallKind {
			return
		}
		ids := checked.GetOverloadIDs(e.ID())
		if len(ids) == 0 {
			ok = false
		}
		for _, id := range ids {
			ok = ok && boundedOverload(id)
		}
	}))
	return ok
}

// longestSelection returns the longest chain of field selections in e.
func longestSelection(e celast.Expr) int {
	longest := 0
	celast.PostOrderVisit(e, celast.NewExprVisitor(func(x celast.Expr) {
		n := 0
		for ; x.Kind() == celast.SelectKind; x = x.AsSelect().Operand() {
			n++
		}
		longest = max(longest, n)
	}))
	return longest
}

// boundFor returns what the program may cost on in, and keeps it with in.
// ok is false when the bound of in's size class is not known and there is
// no room to keep another.
func (b *bounder) boundFor(in *input) (bound, bool) {
	if known, ok := in.bounds.Load(b.id); ok {
		return known.(bound), true
	}
	bnd, ok := b.classBound(in.val)
	if ok {
		in.bounds.Store(b.id, bnd)
	}
	return bnd, ok
}

// classBound returns the bound of obj's size class, computing it if it is
// not known yet and there is room to keep it.
func (b *bounder) classBound(obj ref.Val) (bnd bound, ok bool) {
	var classes sizeClasses
	for i, path := range b.paths {
		classes[i] = uint8(bits.Len64(largestAt(obj, path[1:])))
	}
	b.mu.RLock()
	bnd, ok = b.bounds[classes]
	full := len(b.bounds) >= maxBoundClasses
	b.mu.RUnlock()
	if ok || full {
		return bnd, ok
	}
	bnd = b.estimate(classes)
	b.mu.Lock()
	if len(b.bounds) < maxBoundClasses {
		b.bounds[classes] = bnd
	}
	b.mu.Unlock()
	return bnd, true
}

// estimate computes the bound for inputs of the given size classes.
func (b *bounder) estimate(classes sizeClasses) bound {
	est, err := b.env.EstimateCost(b.ast, &boundEstimator{sizeOf: func(path []string) (uint64, bool) {
		i, ok := b.index[strings.Join(path, ".")]
		if !ok {
			return 0, false
		}
		return classMax(classes[i]), true
	}})
	if err != nil {
		return bound{}
	}
	cost := saturatingMul(est.Max, b.factor)
	if cost > b.limit {
		return bound{}
	}
	return bound{fits: true, cost: cost}
}

// classMax is the largest size of class c.
func classMax(c uint8) uint64 {
	if c >= 64 {
		return math.MaxUint64
	}
	return 1<<c - 1
}

// largestAt returns the largest size of the values found at path below v,
// in the terms of cel-go's cost estimate: a path step is a field (a key of a
// map) or, for the elements of a collection, @items, @keys, @values or
// @indices, which all stand for every element of a list and every key and
// value of a map (cel-go names the elements of a collection of unknown type
// @keys). Taking more values than the step names only makes the bound
// larger.
func largestAt(v ref.Val, path []string) uint64 {
	if len(path) == 0 {
		return actualSize(v) // as the runtime cost counts it: bytes of a string (at least its runes, which cel-go counts)
	}
	step, rest := path[0], path[1:]
	var largest uint64
	switch step {
	case "@items", "@keys", "@values", "@indices":
		switch c := v.(type) {
		case traits.Mapper:
			for it := c.Iterator(); it.HasNext() == types.True; {
				k := it.Next()
				largest = max(largest, largestAt(k, rest), largestAt(c.Get(k), rest))
			}
		case traits.Lister:
			for it := c.Iterator(); it.HasNext() == types.True; {
				largest = max(largest, largestAt(it.Next(), rest))
			}
		}
	default:
		if m, ok := v.(traits.Mapper); ok {
			if e, found := m.Find(types.String(step)); found {
				largest = largestAt(e, rest)
			}
		}
	}
	return largest
}

// boundEstimator is the checker.CostEstimator of a bound: the sizes of the
// input come from sizeOf, by path; everything else is cel-go's estimate.
type boundEstimator struct {
	// sizeOf returns the largest size at an input path; false if unknown.
	sizeOf func(path []string) (uint64, bool)
}

// EstimateSize implements checker.CostEstimator.
func (c *boundEstimator) EstimateSize(node checker.AstNode) *checker.SizeEstimate {
	return inputSize(node, c.sizeOf)
}

// EstimateCallCost implements checker.CostEstimator: cel-go's own estimate
// of every function in boundedOverloads.
func (c *boundEstimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}
