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

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
	"k8s.io/utils/lru"
)

// Go's regexp (RE2) matches in time proportional to the length of the
// string times the number of instructions of the compiled pattern. cel-go
// charges a match by the pattern's characters instead (and the global form
// matches(s, re) one unit), and a single call is never interrupted, so a
// short pattern with a counted repetition, such as (x|y){1000}z, could run
// for seconds past the evaluation timeout within the cost limit. The engine
// binds matches to a version that counts the instructions and refuses,
// before it runs, a match whose work is more than the cost limit pays for.

// regexCacheSize is how many compiled patterns computed at run time are kept
// (constant patterns are compiled once, with the program).
const regexCacheSize = 256

// compiledRegex is a pattern with the number of instructions of its program.
type compiledRegex struct {
	re           *regexp.Regexp
	instructions uint64
}

// compileRegex compiles pattern as regexp.Compile does, counting the
// instructions of its program.
func compileRegex(pattern string) (*compiledRegex, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, err
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil, err
	}
	return &compiledRegex{re: re, instructions: uint64(len(prog.Inst))}, nil
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

// regexGuard matches within a cost limit.
type regexGuard struct {
	costLimit uint64
	patterns  *lru.Cache // of pattern to *compiledRegex, for computed patterns
}

func newRegexGuard(costLimit uint64) *regexGuard {
	return &regexGuard{costLimit: costLimit, patterns: lru.New(regexCacheSize)}
}

// match reports whether s matches re, or an error if the match would cost
// more than the cost limit: a tenth of a unit per byte of s (one more for
// the empty string) times a quarter of a unit per instruction, cel-go's
// charge with instructions in place of the pattern's characters.
func (g *regexGuard) match(s string, re *compiledRegex) ref.Val {
	cost := saturatingMul(tenth(uint64(len(s))+1), re.instructions/4+1)
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

// compiled returns pattern compiled, from the cache when it can.
func (g *regexGuard) compiled(pattern string) (*compiledRegex, error) {
	if hit, ok := g.patterns.Get(pattern); ok {
		return hit.(*compiledRegex), nil
	}
	re, err := compileRegex(pattern)
	if err != nil {
		return nil, err
	}
	g.patterns.Add(pattern, re)
	return re, nil
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
				re, err := compileRegex(pattern)
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
