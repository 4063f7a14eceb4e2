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
	"regexp"
	"regexp/syntax"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
	"k8s.io/utils/lru"
)

// Go's regexp (RE2) matches in time proportional to the length of the
// string times the number of instructions of the compiled pattern. cel-go
// charges a match by the pattern's characters instead (and the global form
// matches(s, re) one unit), and a single call is never interrupted, so a
// short pattern with a counted repetition, such as (x|y){1000}z, could run
// for seconds past the evaluation timeout within the cost limit. The engine
// binds matches to a version that counts the instructions and refuses,
// before it runs, a match whose work is more than the cost limit pays for,
// and charges a match by them (actualCost).
//
// Compiling a pattern costs time and memory in proportion to its program
// too, and counted repetitions nest: x{1000} repeated 3,000 times is 21 KB
// of pattern and three million instructions. So the instructions are counted on the parsed
// pattern, before anything is compiled, and a pattern of more than
// MaxRegexInstructions is refused.

// MaxRegexInstructions is the most instructions a pattern may compile to.
// (x|y){1000}z is 3,003; the patterns of status conditions, tens.
const MaxRegexInstructions = 5000

// MaxRegexBytes is the longest a pattern may be: a character class can hold
// any number of bytes in one instruction, whose parsing grows with them,
// and the cache keeps patterns. A match is charged
// by the pattern's bytes where they are more than its instructions.
const MaxRegexBytes = 4 << 10

// regexCacheSize is how many compiled patterns are kept, for matches with
// patterns computed at run time and for charging matches by their
// instructions (constant patterns are also compiled once, with the program).
const regexCacheSize = 256

// compiledRegex is a pattern with the number of instructions of its program
// or of its bytes, whichever is more (what a match is charged by).
type compiledRegex struct {
	re           *regexp.Regexp
	instructions uint64
}

// compileRegex compiles pattern as regexp.Compile does, counting the
// instructions of its program first and refusing it above
// MaxRegexInstructions.
func compileRegex(pattern string) (*compiledRegex, error) {
	if len(pattern) > MaxRegexBytes {
		return nil, &errPatternTooLarge{size: uint64(len(pattern)), limit: MaxRegexBytes, unit: "bytes"}
	}
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, err
	}
	instructions := regexInstructions(parsed)
	if instructions > MaxRegexInstructions {
		return nil, &errPatternTooLarge{size: instructions, limit: MaxRegexInstructions, unit: "instructions"}
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	return &compiledRegex{re: re, instructions: max(instructions, uint64(len(pattern)))}, nil
}

// regexInstructions counts, on the parsed pattern, at least as many
// instructions as regexp/syntax.Compile makes of it after Simplify, which
// writes counted repetitions out (x{n,m} is n copies of x and m-n optional
// ones), saturating: the program's fail and match instructions, and those
// of the pattern.
func regexInstructions(re *syntax.Regexp) uint64 {
	return saturatingAdd(instructionsOf(re), 2)
}

// instructionsOf counts the instructions of one node of a parsed pattern by
// the rules of regexp/syntax's own size check (parser.calcSize): every node
// at least one (x{0} compiles to a no-op), a star two more than what it
// repeats (one more when that can match the empty string).
func instructionsOf(re *syntax.Regexp) uint64 {
	var sum uint64
	for _, sub := range re.Sub {
		sum = saturatingAdd(sum, instructionsOf(sub))
	}
	var size uint64
	switch re.Op {
	case syntax.OpLiteral:
		size = uint64(len(re.Rune))
	case syntax.OpCapture, syntax.OpStar:
		size = saturatingAdd(sum, 2)
	case syntax.OpPlus, syntax.OpQuest:
		size = saturatingAdd(sum, 1)
	case syntax.OpConcat:
		size = sum
	case syntax.OpAlternate:
		size = saturatingAdd(sum, uint64(max(len(re.Sub)-1, 0)))
	case syntax.OpRepeat:
		if re.Max < 0 { // x{n,}: n-1 copies and x+, or x*
			size = saturatingAdd(saturatingMul(sum, uint64(max(re.Min, 1))), 2)
		} else { // x{n,m}: n copies and m-n optional ones
			size = saturatingAdd(saturatingMul(sum, uint64(re.Max)), uint64(re.Max-re.Min))
		}
	}
	return max(size, 1)
}

// errMatchTooCostly is the cause reported when a match would cost more than
// the cost limit pays for.
type errMatchTooCostly struct {
	bytes, instructions, cost, limit uint64
}

func (e *errMatchTooCostly) Error() string {
	return fmt.Sprintf("matches: a string of %d bytes against a pattern of %d instructions would cost %d, more than the cost limit %d allows",
		e.bytes, e.instructions, e.cost, e.limit)
}

// errPatternTooLarge is the cause reported for a pattern longer than
// MaxRegexBytes or of more than MaxRegexInstructions.
type errPatternTooLarge struct {
	size, limit uint64
	unit        string
}

func (e *errPatternTooLarge) Error() string {
	return fmt.Sprintf("matches: the pattern has %d %s or more, more than the %d allowed", e.size, e.unit, e.limit)
}

// regexGuard matches within a cost limit.
type regexGuard struct {
	costLimit uint64
	patterns  *lru.Cache // of pattern to compiledPattern
}

func newRegexGuard(costLimit uint64) *regexGuard {
	return &regexGuard{costLimit: costLimit, patterns: lru.New(regexCacheSize)}
}

// matchCost is what a match of a string of n bytes against a pattern of the
// given instructions costs: a tenth of a unit per byte (one more for the
// empty string) times a quarter of a unit per instruction, cel-go's charge
// with instructions in place of the pattern's characters.
func matchCost(n, instructions uint64) uint64 {
	return saturatingMul(tenth(n+1), instructions/4+1)
}

// match reports whether s matches re, or an error if the match would cost
// more than the cost limit.
func (g *regexGuard) match(s string, re *compiledRegex) ref.Val {
	cost := matchCost(uint64(len(s)), re.instructions)
	if cost > g.costLimit {
		return types.WrapErr(&errMatchTooCostly{bytes: uint64(len(s)), instructions: re.instructions, cost: cost, limit: g.costLimit})
	}
	return types.Bool(re.re.MatchString(s))
}

// matchComputed matches s against a pattern known only at run time.
func (g *regexGuard) matchComputed(s, pattern ref.Val) ref.Val {
	str, ok := s.(types.String)
	pat, ok2 := pattern.(types.String)
	if !ok || !ok2 {
		return types.NoSuchOverloadErr()
	}
	re, err := g.compiled(string(pat))
	if err != nil {
		return types.WrapErr(err)
	}
	return g.match(string(str), re)
}

// instructions returns the instructions of the pattern p, or
// MaxRegexInstructions if p is not a valid pattern of at most that many.
func (g *regexGuard) instructions(p ref.Val) uint64 {
	if pattern, ok := p.(types.String); ok {
		if re, err := g.compiled(string(pattern)); err == nil {
			return re.instructions
		}
	}
	return MaxRegexInstructions
}

// compiledPattern is a pattern compiled, or why it could not be.
type compiledPattern struct {
	re  *compiledRegex
	err error
}

// compiled returns pattern compiled, from the cache when it can; a pattern
// that does not compile, or has too many instructions, is kept too, since a
// match is charged after the guard refused it.
func (g *regexGuard) compiled(pattern string) (*compiledRegex, error) {
	if hit, ok := g.patterns.Get(pattern); ok {
		c := hit.(compiledPattern)
		return c.re, c.err
	}
	re, err := compileRegex(pattern)
	g.patterns.Add(pattern, compiledPattern{re: re, err: err})
	return re, err
}

// programOptions make every call of matches, in both forms, a guarded
// match. A call whose pattern is a constant compiles it once, with the
// program, taking precedence over cel-go's own compilation of constant
// patterns (cel.OptOptimize), which would match unguarded: cel-go looks its
// regex optimizations up by overload ID before function name. Any other call
// compiles its pattern at run time, through the cache. (The standard
// library binds matches as a singleton, which an environment cannot rebind.)
func (g *regexGuard) programOptions() []cel.ProgramOption {
	return []cel.ProgramOption{g.constantPatterns(), cel.CustomDecorator(g.computedPatterns)}
}

// computedPatterns is an interpreter.InterpretableDecorator that makes a
// call of matches a guarded match of a pattern compiled at run time.
func (g *regexGuard) computedPatterns(i interpreter.Interpretable) (interpreter.Interpretable, error) {
	call, ok := i.(interpreter.InterpretableCall)
	if !ok || call.Function() != "matches" || len(call.Args()) != 2 {
		return i, nil
	}
	return interpreter.NewCall(call.ID(), call.Function(), call.OverloadID(), call.Args(), func(args ...ref.Val) ref.Val {
		return g.matchComputed(args[0], args[1])
	}), nil
}

// constantPatterns compiles constant patterns once, with the program, into
// the guarded match.
func (g *regexGuard) constantPatterns() cel.ProgramOption {
	optimization := func(overloadID string) *interpreter.RegexOptimization {
		return &interpreter.RegexOptimization{Function: "matches", OverloadID: overloadID, RegexIndex: 1,
			Factory: func(call interpreter.InterpretableCall, pattern string) (interpreter.InterpretableCall, error) {
				re, err := g.compiled(pattern)
				if err != nil {
					return nil, err
				}
				return interpreter.NewCall(call.ID(), call.Function(), call.OverloadID(), call.Args(), func(args ...ref.Val) ref.Val {
					if len(args) != 2 {
						return types.NoSuchOverloadErr()
					}
					s, ok := args[0].(types.String)
					if !ok {
						return types.NoSuchOverloadErr()
					}
					return g.match(string(s), re)
				}), nil
			}}
	}
	return cel.OptimizeRegex(optimization("matches_string"), optimization("matches"))
}
