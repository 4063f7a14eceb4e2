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

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
)

// This file lets a condition skip cel-go's runtime cost tracking when its
// input shows that the cost limit cannot be reached.
//
// Tracking the cost as it goes makes an evaluation about five times slower
// (cel-go observes every step). But the cost of an expression is bounded by
// the sizes of what it reads, and cel-go can estimate that bound before
// evaluating: given, for every path of the input the expression reads (such
// as obj.results.@items.rows), the largest size found there (elements of a
// list or map, bytes of a string), its estimate is an upper bound of the
// cost cel-go tracks. A condition is thus evaluated without tracking when
// the bound for the sizes of its input is within the cost limit; the
// evaluation timeout still applies, and a Budget is charged the bound.
//
// cel-go's estimate charges a field selection only on an operand known to
// be a map or a message, while the runtime charges every one; on the dyn
// values of a condition a chain of k selections (r.rows.columns) is charged
// once for its root instead of 1+k times. The bound is thus the estimate
// times one plus the longest chain of selections of the expression.
//
// The bound is computed once per program and size class: every size is
// rounded up to one less than a power of two, so that the inputs of a
// fleet share a few classes.

// maxBoundedPaths is the most input paths a program may read and still be
// evaluated without cost tracking; a program reading more is always
// tracked.
const maxBoundedPaths = 16

// maxBoundClasses is how many size classes a program keeps the bound of;
// inputs of further classes are evaluated with cost tracking.
const maxBoundClasses = 256

// boundMargin divides the cost limit that a bound must stay within. cel-go
// sizes string literals in runes, which the runtime cost charges in bytes
// (up to four per rune); a margin of four keeps the bound above the cost in
// every case.
const boundMargin = 4

// sizeClasses holds, for each input path a program reads, the class of the
// largest size found there: bits.Len64 of it, so that class c stands for
// sizes up to 2^c - 1.
type sizeClasses [maxBoundedPaths]uint8

// bound is what a program may cost on inputs of one size class.
type bound struct {
	fits bool   // the cost is within the limit: evaluate without tracking
	cost uint64 // the bound, when it fits
}

// bounder decides, for one compiled condition, whether an input allows
// evaluating it without cost tracking, and holds the untracked program.
type bounder struct {
	env       *cel.Env
	ast       *cel.Ast
	paths     [][]string     // the input paths the cost estimate reads
	index     map[string]int // position in paths, by path joined with "."
	limit     uint64         // the cost limit divided by boundMargin
	factor    uint64         // what the estimate is multiplied by: 1 + the longest chain of selections
	untracked cel.Program

	mu     sync.RWMutex
	bounds map[sizeClasses]bound
}

// newBounder returns the bounder of a condition compiled to ast in env, or
// nil if the condition cannot be bounded by the sizes of its input (it reads
// too many paths, or builds a program only with tracking). untracked is the
// program without cost tracking.
func newBounder(env *cel.Env, ast *cel.Ast, costLimit uint64, untracked cel.Program) *bounder {
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
		return nil
	}
	return &bounder{
		env: env, ast: ast, paths: paths, index: index,
		limit: costLimit / boundMargin, factor: 1 + uint64(longestSelection(ast.NativeRep().Expr())),
		untracked: untracked, bounds: map[sizeClasses]bound{},
	}
}

// longestSelection returns the longest chain of field selections in e.
func longestSelection(e ast.Expr) int {
	longest := 0
	ast.PostOrderVisit(e, ast.NewExprVisitor(func(x ast.Expr) {
		n := 0
		for ; x.Kind() == ast.SelectKind; x = x.AsSelect().Operand() {
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
	if known, ok := in.bounds.Load(b); ok {
		return known.(bound), true
	}
	bnd, ok := b.classBound(in.obj)
	if ok {
		in.bounds.Store(b, bnd)
	}
	return bnd, ok
}

// classBound returns the bound of obj's size class, computing it if it is
// not known yet and there is room to keep it.
func (b *bounder) classBound(obj map[string]any) (bnd bound, ok bool) {
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
func largestAt(v any, path []string) uint64 {
	if len(path) == 0 {
		return sizeOf(v)
	}
	step, rest := path[0], path[1:]
	var largest uint64
	switch step {
	case "@items", "@keys", "@values", "@indices":
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				largest = max(largest, largestAt(e, rest))
			}
		case map[string]any:
			for k, e := range v {
				largest = max(largest, largestAt(k, rest), largestAt(e, rest))
			}
		}
	default:
		if m, ok := v.(map[string]any); ok {
			if e, ok := m[step]; ok {
				largest = largestAt(e, rest)
			}
		}
	}
	return largest
}

// sizeOf is the size of one value of the JSON form: the bytes of a string,
// the elements of a list or map, and 1 for anything else, as the runtime
// cost counts them.
func sizeOf(v any) uint64 {
	switch v := v.(type) {
	case string:
		return uint64(len(v))
	case []any:
		return uint64(len(v))
	case map[string]any:
		return uint64(len(v))
	}
	return 1
}

// boundEstimator is the checker.CostEstimator of a bound: the input's sizes
// come from sizeOf, by path, and the functions that actualCost charges by
// size are estimated the same way (at least as high).
type boundEstimator struct {
	// sizeOf returns the largest size at an input path; false if unknown.
	sizeOf func(path []string) (uint64, bool)
}

// EstimateSize implements checker.CostEstimator.
func (c *boundEstimator) EstimateSize(node checker.AstNode) *checker.SizeEstimate {
	path := node.Path()
	if len(path) == 0 || !inputRoots[path[0]] {
		return nil
	}
	switch node.Type().Kind() {
	case types.StringKind, types.BytesKind, types.ListKind, types.MapKind, types.DynKind:
		if size, ok := c.sizeOf(path); ok {
			return &checker.SizeEstimate{Min: 0, Max: size}
		}
	}
	return nil
}

// size returns the size estimate of node, unbounded if unknown.
func (c *boundEstimator) size(node checker.AstNode) uint64 {
	if sz := node.ComputedSize(); sz != nil {
		return sz.Max
	}
	if sz := c.EstimateSize(node); sz != nil {
		return sz.Max
	}
	return math.MaxUint64
}

// EstimateCallCost implements checker.CostEstimator for the calls that
// actualCost charges, with the same formulas applied to the largest sizes.
func (c *boundEstimator) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	charge := func(cost float64, result uint64) *checker.CallEstimate {
		max := uint64(math.MaxUint64)
		if cost < float64(math.MaxUint64/2) {
			max = uint64(math.Ceil(cost)) + 1
		}
		return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 0, Max: max},
			ResultSize: &checker.SizeEstimate{Min: 0, Max: result}}
	}
	if overloadID == "add_list" && len(args) == 2 {
		result := saturatingAdd(c.size(args[0]), c.size(args[1]))
		return charge(float64(result)*costPerByte, result)
	}
	if target == nil {
		return nil
	}
	sz := c.size(*target)
	bytes := float64(sz)
	switch function {
	case "lowerAscii", "upperAscii", "trim", "reverse", "substring", "charAt":
		return charge(bytes*costPerByte, sz)
	case "indexOf", "lastIndexOf":
		cost := bytes * costPerByte
		if len(args) > 0 {
			cost *= math.Max(1, float64(c.size(args[0]))*costPerByte)
		}
		return charge(cost, 1)
	case "split":
		result := saturatingAdd(sz, 1)
		return charge(bytes*2*costPerByte+float64(result), result)
	case "replace":
		if len(args) < 2 {
			return nil
		}
		old := checker.SizeEstimate{Max: c.size(args[0])}
		if literal := args[0].ComputedSize(); literal != nil {
			old = *literal
		}
		result := replaceSize(checker.SizeEstimate{Max: sz}, old, checker.SizeEstimate{Max: c.size(args[1])})
		return charge(bytes*2*costPerByte+float64(result.Max)*costPerByte, result.Max)
	case "join":
		n := sz
		elem := c.elementSize(*target)
		result := saturatingMul(n, elem)
		if len(args) > 0 && n > 0 {
			result = saturatingAdd(result, saturatingMul(n-1, c.size(args[0])))
		}
		return charge(float64(result)*2*costPerByte, result)
	case "format":
		return charge(math.Inf(1), math.MaxUint64)
	}
	return nil
}

// elementSize is the largest size of the elements of the list node: its
// largest literal for a list of literals, else what the input holds at
// the node's path.
func (c *boundEstimator) elementSize(node checker.AstNode) uint64 {
	if node.Expr().Kind() == ast.ListKind {
		var largest uint64
		for _, el := range node.Expr().AsList().Elements() {
			if el.Kind() != ast.LiteralKind {
				return math.MaxUint64
			}
			if s, ok := el.AsLiteral().(types.String); ok {
				largest = max(largest, uint64(len(s)))
			}
		}
		return largest
	}
	path := node.Path()
	if len(path) == 0 || !inputRoots[path[0]] {
		return math.MaxUint64
	}
	if size, ok := c.sizeOf(append(append([]string(nil), path...), "@items")); ok {
		return size
	}
	return math.MaxUint64
}
