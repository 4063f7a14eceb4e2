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

// callBound says how the work of one call of a function is bounded. Every
// function of the engine's environments has one (TestEveryFunctionHasABound),
// and docs/security.md lists them: a call runs to its end once started, so
// one that could take more than linear time in its arguments, or build more
// than linear memory, is stopped before it starts.
type callBound string

const (
	// boundConstant: constant time and memory (scalar arithmetic,
	// comparisons and conversions, optional values, logic).
	boundConstant callBound = "constant"
	// boundLinear: time and memory at most linear in the sizes of the
	// arguments, charged by cel-go or actualCost after the call, as the
	// overload it ran when it was dispatched at run time (dispatch.go).
	boundLinear callBound = "linear"
	// boundResult: refuses, before building it, a result larger than the
	// cost limit pays for (guardedFunctions).
	boundResult callBound = "result refused above the limit"
	// boundPrecharged: charged its worst case from its arguments before it
	// runs, and refused when that is above the cost limit (precharges).
	boundPrecharged callBound = "charged before it runs"
	// boundRegex: the pattern is refused above its instruction limit before
	// it compiles, and the match is charged before it runs (regexGuard).
	boundRegex callBound = "regex guard"
	// boundTimeZone: constant work on the value, plus loading the named
	// time zone from the system's time zone database (Go refuses names
	// with ".." or a leading "/").
	boundTimeZone callBound = "time zone lookup"
)

// functionBounds are the bounds of the functions of the engine's
// environments, by CEL function name.
var functionBounds = map[string]callBound{
	"!_": boundConstant, "-_": boundConstant, "_%_": boundConstant, "_&&_": boundConstant, "_*_": boundConstant,
	"_-_": boundConstant, "_/_": boundConstant, "_?_:_": boundConstant, "_||_": boundConstant,
	"@not_strictly_false": boundConstant, "__not_strictly_false__": boundConstant,
	"_?._": boundConstant, "_[?_]": boundConstant, "_[_]": boundConstant,
	"bool": boundLinear, "double": boundLinear, "int": boundLinear, "uint": boundLinear, "dyn": boundConstant,
	"type": boundConstant, "duration": boundLinear, "timestamp": boundLinear,
	"hasValue": boundConstant, "optional.none": boundConstant, "optional.of": boundConstant,
	"optional.ofNonZeroValue": boundConstant, "optional.unwrap": boundLinear, "or": boundConstant,
	"orValue": boundConstant, "unwrapOpt": boundLinear, "value": boundConstant,
	"math.abs": boundConstant, "math.bitAnd": boundConstant, "math.bitNot": boundConstant, "math.bitOr": boundConstant,
	"math.bitShiftLeft": boundConstant, "math.bitShiftRight": boundConstant, "math.bitXor": boundConstant,
	"math.ceil": boundConstant, "math.floor": boundConstant, "math.isFinite": boundConstant, "math.isInf": boundConstant,
	"math.isNaN": boundConstant, "math.round": boundConstant, "math.sign": boundConstant, "math.sqrt": boundConstant,
	"math.trunc": boundConstant, "math.@max": boundLinear, "math.@min": boundLinear,
	"getDate": boundTimeZone, "getDayOfMonth": boundTimeZone, "getDayOfWeek": boundTimeZone, "getDayOfYear": boundTimeZone,
	"getFullYear": boundTimeZone, "getHours": boundTimeZone, "getMilliseconds": boundTimeZone, "getMinutes": boundTimeZone,
	"getMonth": boundTimeZone, "getSeconds": boundTimeZone,
	// Relational operators compare strings and bytes byte by byte.
	"_<_": boundLinear, "_<=_": boundLinear, "_>_": boundLinear, "_>=_": boundLinear,
	// Concatenation, and deep equality and membership (see init).
	"_==_": boundLinear, "_!=_": boundLinear, "@in": boundLinear, "_in_": boundLinear, "in": boundLinear,
	"_+_":  boundLinear,
	"size": boundLinear, "string": boundLinear, "bytes": boundLinear,
	"startsWith": boundLinear, "endsWith": boundLinear, "contains": boundLinear, "charAt": boundLinear,
	"substring": boundLinear, "lowerAscii": boundLinear, "upperAscii": boundLinear, "trim": boundLinear,
	"reverse": boundLinear, "strings.quote": boundLinear, "format": boundLinear,
	"first": boundConstant, "last": boundConstant, "slice": boundLinear, "flatten": boundPrecharged,
	"replace": boundResult, "join": boundResult, "lists.range": boundResult,
	"indexOf": boundPrecharged, "lastIndexOf": boundPrecharged, "split": boundPrecharged,
	"sets.contains": boundPrecharged, "sets.intersects": boundPrecharged, "sets.equivalent": boundPrecharged,
	"distinct": boundPrecharged, "sort": boundPrecharged, "@sortByAssociatedKeys": boundPrecharged,
	"matches": boundRegex,
}

func init() {
	if holesFixed {
		// Deep equality and membership (and opt.hasValue(v), which
		// compares), and format, which prints deeply (deepcharge.go). The celholes build tag charges them after, by
		// their top-level sizes, as cel-go does.
		for _, name := range []string{"_==_", "_!=_", "@in", "_in_", "in", "format", "hasValue"} {
			functionBounds[name] = boundPrecharged
		}
	}
}
