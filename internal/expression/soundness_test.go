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
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
)

// The cost of an evaluation is sound when what it takes stays within a
// fixed multiple of what it was charged: a call that builds or walks more
// than it is charged for, before the charge can stop it, breaks this on
// some input. TestCostIsSound generates expressions and inputs to find
// one. The multiples are generous, for a loaded 2-core machine: memory is
// measured in bytes allocated, which load does not change, and time only
// against a wide factor and a second of slack.
const (
	// soundCostLimit is the engine's cost limit in these tests: a
	// fiftieth of the default, so that what the limit allows is cheap to
	// run, and what is built past it stands out.
	soundCostLimit = 20_000
	// soundBytesPerUnit and soundAllocSlack bound the bytes allocated:
	// at most soundBytesPerUnit a unit charged, plus soundAllocSlack.
	soundBytesPerUnit = 400
	soundAllocSlack   = 2 << 20
	// soundTimePerUnit and soundTimeSlack bound the time taken likewise.
	soundTimePerUnit = 20 * time.Microsecond
	soundTimeSlack   = time.Second
)

// operatorSyntax renders the calls of CEL's operators, by function name.
var operatorSyntax = map[string]string{
	"!_": "!(%s)", "-_": "-(%s)", "_%_": "(%s %% %s)", "_&&_": "(%s && %s)", "_*_": "(%s * %s)",
	"_+_": "(%s + %s)", "_-_": "(%s - %s)", "_/_": "(%s / %s)", "_<_": "(%s < %s)", "_<=_": "(%s <= %s)",
	"_>_": "(%s > %s)", "_>=_": "(%s >= %s)", "_==_": "(%s == %s)", "_!=_": "(%s != %s)", "_||_": "(%s || %s)",
	"_?_:_": "(%s ? %s : %s)", "_[_]": "(%s)[%s]", "_[?_]": "(%s)[?%s]", "@in": "(%s in %s)",
}

// repeats are how many times a generated list repeats its element, and a
// generated format string its clause.
var repeats = []int{1, 5, 10, 20}

// soundGen generates the expressions of TestCostIsSound for one
// environment.
type soundGen struct {
	r    *rand.Rand
	kind Kind
	// functions are the environment's functions, by name, in order.
	functions []string
	env       *cel.Env
	// shared are the variables bound to lists that share their
	// sub-lists, and loop the loop variable in scope, if any.
	shared []string
	loop   string
}

func (g *soundGen) pick(options ...string) string { return options[g.r.IntN(len(options))] }

// leaf returns a part of the environment's input of the given kind.
func (g *soundGen) leaf(k types.Kind) string {
	switch g.kind {
	case KindCondition:
		switch k {
		case types.ListKind:
			return g.pick("obj.results", "obj.results[0].columnNames", "obj.results[0].rows", "obj.results.map(r, r.name)")
		case types.StringKind:
			return g.pick("obj.metadata.name", "obj.kind", "obj.results[0].columnNames[0]")
		case types.MapKind:
			return g.pick("obj.metadata", "obj.results[0]", "obj")
		}
	case KindAnalysis:
		switch k {
		case types.ListKind:
			return "result"
		case types.DoubleKind:
			return "result[0]"
		}
	case KindWebAnalysis:
		switch k {
		case types.ListKind:
			return g.pick("result.items", "result.items.map(i, i.name)", "result.items[0].tags")
		case types.StringKind:
			return g.pick("result.state", "result.note", "result.items[0].name")
		case types.MapKind:
			return g.pick("result", "result.items[0]")
		case types.IntKind:
			return "result.count"
		}
	case KindFilter:
		switch k {
		case types.ListKind:
			return "downsyncClause.statusCollectors"
		case types.StringKind:
			return g.pick("downsyncClause.name", "downsyncClause.resource")
		}
	}
	return ""
}

// value returns an expression of kind k, d levels deep at most.
func (g *soundGen) value(k types.Kind, d int) string {
	if k == types.DynKind || k == types.AnyKind || k == types.TypeParamKind {
		if len(g.shared) > 0 && g.r.IntN(2) == 0 {
			return g.shared[max(0, len(g.shared)-1-g.r.IntN(2))]
		}
		k = []types.Kind{types.IntKind, types.StringKind, types.ListKind, types.ListKind, types.MapKind,
			types.DoubleKind, types.BoolKind, types.BytesKind}[g.r.IntN(8)]
		if d > 0 && g.r.IntN(8) == 0 {
			return g.call(d - 1) // calls of calls
		}
	}
	if leaf := g.leaf(k); leaf != "" && g.r.IntN(3) == 0 {
		return leaf
	}
	deeper := func(k types.Kind) string {
		if d <= 0 {
			return g.value(k, 0)
		}
		return g.value(k, d-1)
	}
	if len(g.shared) > 0 && k == types.ListKind && g.r.IntN(2) == 0 {
		// The lists that share their sub-lists, the deepest most often.
		return g.shared[max(0, len(g.shared)-1-g.r.IntN(2))]
	}
	switch k {
	case types.IntKind:
		options := []string{"0", "1", "7", "100", "3000", "size(" + deeper(types.ListKind) + ")"}
		if g.loop != "" {
			options = append(options, g.loop)
		}
		return g.pick(options...)
	case types.UintKind:
		return g.pick("1u", "100u", "uint(size("+deeper(types.ListKind)+"))")
	case types.DoubleKind:
		return g.pick("1.5", "-0.0", "1e300", "5e-324", "double(size("+deeper(types.ListKind)+"))")
	case types.BoolKind:
		return g.pick("true", "false")
	case types.StringKind:
		if d > 0 && g.r.IntN(4) == 0 {
			return "(" + deeper(types.StringKind) + " + " + deeper(types.StringKind) + ")"
		}
		if g.r.IntN(3) == 0 { // a format string
			return "'" + strings.Repeat("%s", repeats[g.r.IntN(len(repeats))]) + "'"
		}
		return g.pick("''", "'a'", "'%s'",
			"'%d %f %x %e %o %b %X %.100f'", "'x'.replace('x', 'xxxxxxxxxx').replace('x', 'xxxxxxxxxx')",
			"'ab,c,,d'", "string("+deeper(types.IntKind)+")")
	case types.BytesKind:
		return g.pick("b'abc'", "bytes("+deeper(types.StringKind)+")")
	case types.ListKind:
		options := []string{"[]", "[1, 2, 3]", "['a', 'b']", "lists.range(" + g.pick("10", "1000", "30000") + ")"}
		options = append(options, g.shared...)
		if d > 0 {
			x := deeper(types.DynKind)
			n := repeats[g.r.IntN(len(repeats))]
			repeated := "[" + strings.TrimSuffix(strings.Repeat(x+", ", n), ", ") + "]"
			if g.r.IntN(2) == 0 {
				return repeated
			}
			options = append(options,
				deeper(types.ListKind)+".map(e, [e, e])",
				deeper(types.ListKind)+".map(e, "+deeper(types.ListKind)+")",
				"dyn("+deeper(types.ListKind)+")")
		}
		return g.pick(options...)
	case types.MapKind:
		return g.pick("{'a': "+deeper(types.DynKind)+"}", "{'a': 1, 'b': "+deeper(types.DynKind)+"}",
			"{"+deeper(types.StringKind)+": "+deeper(types.DynKind)+"}")
	case types.TimestampKind:
		return "timestamp('2020-01-01T00:00:00Z')"
	case types.DurationKind:
		return "duration('1s')"
	case types.OpaqueKind:
		return g.pick("optional.of("+deeper(types.DynKind)+")", "optional.none()")
	case types.TypeKind:
		return "type(" + deeper(types.DynKind) + ")"
	case types.NullTypeKind:
		return "null"
	}
	return deeper(types.DynKind)
}

// call returns a call of a function of the environment, with arguments of
// its overload's types or dyn.
func (g *soundGen) call(d int) string {
	for {
		name := g.functions[g.r.IntN(len(g.functions))]
		decl, _ := g.env.Functions()[name]
		overloads := decl.OverloadDecls()
		o := overloads[g.r.IntN(len(overloads))]
		var args []string
		for _, p := range o.ArgTypes() {
			if g.r.IntN(3) == 0 {
				args = append(args, "dyn("+g.value(types.DynKind, d)+")")
			} else {
				args = append(args, g.value(p.Kind(), d))
			}
		}
		if syntax, ok := operatorSyntax[name]; ok {
			if strings.Count(syntax, "%s") != len(args) {
				continue
			}
			anyArgs := make([]any, len(args))
			for i, a := range args {
				anyArgs[i] = a
			}
			return fmt.Sprintf(syntax, anyArgs...)
		}
		if strings.ContainsAny(name, "@_") {
			continue // internal, or an operator written otherwise
		}
		if o.IsMemberFunction() && len(args) > 0 {
			return "(" + args[0] + ")." + name + "(" + strings.Join(args[1:], ", ") + ")"
		}
		return name + "(" + strings.Join(args, ", ") + ")"
	}
}

// condition returns a bool expression of the environment: one or two
// calls, perhaps in a loop, perhaps where lists that share their
// sub-lists are bound.
func (g *soundGen) condition() string {
	g.shared, g.loop = nil, ""
	levels := []int{0, 2, 4, 6, 6}[g.r.IntN(5)]
	fanout := []int{3, 10, 10}[g.r.IntN(3)]
	var open []string
	for i := 0; i < levels; i++ {
		elem := "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]"
		if i > 0 {
			elem = "[" + strings.TrimSuffix(strings.Repeat(g.shared[i-1]+", ", fanout), ", ") + "]"
		}
		v := fmt.Sprintf("v%d", i)
		open = append(open, "["+elem+"].exists("+v+", ")
		g.shared = append(g.shared, v)
	}
	if g.r.IntN(3) != 0 {
		g.loop = "i"
		open = append(open, "lists.range("+g.pick("10", "100", "1000")+").all(i, ")
	}
	d := 1 + g.r.IntN(3)
	body := "[" + g.call(d) + "].size() == 1"
	for range g.r.IntN(3) {
		body += " || [" + g.call(d) + "].size() == 1"
	}
	return strings.Join(open, "") + body + strings.Repeat(")", len(open))
}

// soundInputs are the inputs of each environment: small ones, and ones
// as large as a CombinedStatus, a measurement or a clause may be, with
// long strings and long lists, which cost nothing to read.
func soundInputs() map[Kind][]*evalVars {
	var conditions []*evalVars
	for _, obj := range []map[string]any{
		lopsided(2, 3, 5, 8),
		lopsided(1, 0, 50_000, 8),
		lopsided(30, 30, 30, 100_000),
	} {
		obj["metadata"].(map[string]any)["labels"] = map[string]any{"app": "x", "tier": strings.Repeat("y", 1000)}
		conditions = append(conditions, conditionVars(celValue(obj)))
	}
	values := make([]float64, MaxResultValues)
	for i := range values {
		values[i] = float64(i) / 3
	}
	collectors := make([]string, 5000)
	for i := range collectors {
		collectors[i] = "collector-" + strconv.Itoa(i)
	}
	clause := Clause{Name: strings.Repeat("n", 100_000), DownsyncModulation: ksv1alpha1.DownsyncModulation{StatusCollectors: collectors}}
	var answers []*evalVars
	for _, answer := range webAnswers() {
		vars, err := webVars(answer)
		if err != nil {
			panic(fmt.Sprintf("a web answer of %d bytes does not decode: %v", len(answer), err))
		}
		answers = append(answers, vars)
	}
	return map[Kind][]*evalVars{
		KindWebAnalysis: answers,
		KindCondition:   conditions,
		KindAnalysis:    {analysisVars(types.DefaultTypeAdapter.NativeToValue(values))},
		KindFilter:      {filterVars(Clause{Name: "web"}.celView()), filterVars(clause.celView())},
	}
}

// webAnswers are web analyses' answers: a small one, and ones of about
// MaxWebAnswerBytes, the largest a condition is handed: one of many small
// items (as many values as MaxJSONNodes allows), one of a long string, one nested MaxJSONDepth deep.
func webAnswers() [][]byte {
	small := `{"state": "approved", "note": "ok", "count": 3, "items": [{"name": "a", "tags": ["x", "y"]}]}`
	var many strings.Builder
	many.WriteString(`{"state": "pending", "note": "n", "count": 1, "items": [`)
	for i := 0; many.Len() < MaxWebAnswerBytes-200; i++ {
		if i > 0 {
			many.WriteString(", ")
		}
		// Four values an item, of about 80 bytes: MaxJSONNodes at
		// MaxWebAnswerBytes.
		fmt.Fprintf(&many, `{"name": "item-%d-%s", "tags": ["t", "u", "v"]}`, i, strings.Repeat("p", 30))
	}
	many.WriteString(`]}`)
	long := `{"state": "` + strings.Repeat("s", MaxWebAnswerBytes/2) + `", "note": "` + strings.Repeat("n", MaxWebAnswerBytes/2-200) +
		`", "count": 9007199254740993, "items": [{"name": "` + strings.Repeat("a", 100) + `", "tags": []}]}`
	deep := `{"state": "x", "count": 1, "items": [{"name": "d", "tags": ` + strings.Repeat("[", MaxJSONDepth-3) + strings.Repeat("]", MaxJSONDepth-3) + `}]}`
	return [][]byte{[]byte(small), []byte(many.String()), []byte(long), []byte(deep)}
}

// soundMeasure is what one evaluation took and was charged.
type soundMeasure struct {
	alloc   uint64
	took    time.Duration
	charged uint64
	err     error
	val     ref.Val
}

// measureSound evaluates p with cost tracking on vars.
func measureSound(p *Program, vars *evalVars) soundMeasure {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	val, details, err := p.prog.ContextEval(ctx, vars)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	m := soundMeasure{alloc: after.TotalAlloc - before.TotalAlloc, took: took, err: err, val: val}
	if details != nil && details.ActualCost() != nil {
		m.charged = *details.ActualCost()
	}
	return m
}

// sound reports whether m is within the multiples of what was charged,
// counted at most up to the cost limit: what the limit stops after it was
// spent must not have taken more than the limit pays for.
func (m soundMeasure) sound() bool {
	charged := min(m.charged, soundCostLimit)
	return m.alloc <= soundBytesPerUnit*charged+soundAllocSlack &&
		m.took <= time.Duration(charged)*soundTimePerUnit+soundTimeSlack
}

// envInt returns the integer in the environment variable name, or def.
func envInt(t *testing.T, name string, def int64) int64 {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return n
}

// TestCostIsSound generates expressions over every function of the three
// environments (from env.Functions(), so that a new function is covered
// without a change here), with arguments of their types or dyn, repeated
// arguments, lists that share their sub-lists up to 10^6 leaves, bound by
// nested comprehensions, and loops around the calls, and evaluates them on
// small inputs and on large ones, with the compile-time estimate lifted.
// Every evaluation must stay within soundBytesPerUnit bytes allocated and
// soundTimePerUnit of time a unit charged (up to the cost limit), plus
// slack. The inputs include web analyses' JSON answers of the largest size a
// condition is handed (MaxWebAnswerBytes). CEL_SOUND_CASES sets how many
// expressions (1,000 by default, a few seconds), CEL_SOUND_SEED the seed
// (make fuzz-cel runs 20,000 with a new seed) and CEL_SOUND_KINDS, a comma
// list, the kinds tried (default all). With -tags celholes, which removes the charges of N1, N2 and
// N11, it finds all three (docs/security.md).
func TestCostIsSound(t *testing.T) {
	cases := envInt(t, "CEL_SOUND_CASES", 1000)
	seed := envInt(t, "CEL_SOUND_SEED", 54)
	t.Logf("CEL_SOUND_SEED=%d CEL_SOUND_CASES=%d", seed, cases)
	e := newEngine(t, WithCostLimit(soundCostLimit), WithEstimatedCostLimit(math.MaxUint64), WithEvalTimeout(time.Minute))
	inputs := soundInputs()
	envs := map[Kind]*cel.Env{KindFilter: e.filterEnv, KindCondition: e.conditionEnv, KindAnalysis: e.analysisEnv, KindWebAnalysis: e.webEnv}
	gens := map[Kind]*soundGen{}
	r := rand.New(rand.NewPCG(uint64(seed), 2026))
	for kind, env := range envs {
		g := &soundGen{r: r, kind: kind, env: env}
		for name := range env.Functions() {
			g.functions = append(g.functions, name)
		}
		sort.Strings(g.functions)
		gens[kind] = g
	}
	kinds := []Kind{KindCondition, KindCondition, KindAnalysis, KindWebAnalysis, KindWebAnalysis, KindFilter}
	if only := os.Getenv("CEL_SOUND_KINDS"); only != "" {
		kinds = nil
		for _, k := range strings.Split(only, ",") {
			if envs[Kind(k)] == nil {
				t.Fatalf("CEL_SOUND_KINDS=%q: no kind %q", only, k)
			}
			kinds = append(kinds, Kind(k))
		}
	}
	report := envInt(t, "CEL_SOUND_REPORT", 5)
	compiled, evaluated, unsound := 0, 0, 0
	// The most allocated (beyond the slack) and the longest taken (of
	// those over a tenth of the slack) per unit charged, for the record.
	var worstBytes uint64
	var worstTime time.Duration
	var worstSrc, worstTimeSrc string
	for n := int64(1); n <= cases; n++ {
		kind := kinds[r.IntN(len(kinds))]
		src := gens[kind].condition()
		p, err := e.Compile(kind, src)
		if err != nil {
			continue // the generator does not follow types everywhere
		}
		compiled++
		for _, vars := range inputs[kind] {
			m := measureSound(p, vars)
			evaluated++
			if m.alloc > soundAllocSlack {
				if b := (m.alloc - soundAllocSlack) / max(min(m.charged, soundCostLimit), 1); b > worstBytes {
					worstBytes, worstSrc = b, src
				}
			}
			if m.took > soundTimeSlack/10 {
				if d := m.took / time.Duration(max(min(m.charged, soundCostLimit), 1)); d > worstTime {
					worstTime, worstTimeSrc = d, fmt.Sprintf("%s for %d units: %s", m.took.Round(time.Millisecond), m.charged, src)
				}
			}
			if !m.sound() {
				unsound++
				if int64(unsound) <= report {
					t.Errorf("case %d (%s): allocated %d KiB in %s, charged %d (limit %d), got %v, %v:\n%s",
						n, kind, m.alloc>>10, m.took.Round(time.Millisecond), m.charged, soundCostLimit, m.val, m.err, src)
				}
				break
			}
		}
	}
	t.Logf("%d of %d expressions compiled, %d evaluations, %d unsound; at most %d bytes and %s a unit (bounds %d and %s)",
		compiled, cases, evaluated, unsound, worstBytes, worstTime, soundBytesPerUnit, soundTimePerUnit)
	t.Logf("the most bytes a unit: %s", worstSrc)
	t.Logf("the most time a unit, of those over a tenth of the slack: %s", worstTimeSrc)
	if compiled < int(cases)/3 {
		t.Errorf("only %d of %d generated expressions compiled: the generator has drifted from the environments", compiled, cases)
	}
}
