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
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"sort"
	"testing"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
)

// benchStatus is the CombinedStatus of the evaluation benchmarks, as read
// from an API server (with a UID and a resourceVersion).
func benchStatus() *ksv1alpha1.CombinedStatus {
	cs := combinedStatus("deployments-aggregator", []ksv1alpha1.Value{number("0")}, []ksv1alpha1.Value{number("1")})
	cs.UID, cs.ResourceVersion = "bench-uid", "42"
	return cs
}

// BenchmarkEvalCondition measures evaluating the (already compiled) seed
// condition on a CombinedStatus whose JSON form the engine has cached, as
// every stage and reconcile after the first to see a version does.
func BenchmarkEvalCondition(b *testing.B) {
	benchEval(b, newEngine(b))
}

// BenchmarkEvalConditionConverting measures the same evaluation converting
// the CombinedStatus to JSON form every time (no conversion cache), as the
// first evaluation of a version does.
func BenchmarkEvalConditionConverting(b *testing.B) {
	benchEval(b, newEngine(b, WithConversionCacheSize(0)))
}

func benchEval(b *testing.B, e *Engine) {
	p, err := e.Compile(KindCondition, seedCondition)
	if err != nil {
		b.Fatal(err)
	}
	cs := benchStatus()
	b.ReportAllocs()
	for b.Loop() {
		ok, err := p.EvalCondition(cs)
		if err != nil || !ok {
			b.Fatalf("EvalCondition = %v, %v", ok, err)
		}
	}
}

// BenchmarkSeedPath measures the seed's way of evaluating the same
// condition: a new CEL environment, a compilation and a program, and a JSON
// round trip of the CombinedStatus, at every evaluation.
func BenchmarkSeedPath(b *testing.B) {
	cs := benchStatus()
	b.ReportAllocs()
	for b.Loop() {
		seedPath(b, cs)
	}
}

// seedPath evaluates the seed condition on cs the seed's way.
func seedPath(b *testing.B, cs *ksv1alpha1.CombinedStatus) {
	env, err := cel.NewEnv(cel.Variable("obj", cel.DynType), cel.Variable("combinedStatus", cel.DynType))
	if err != nil {
		b.Fatal(err)
	}
	ast, issues := env.Compile(seedCondition)
	if issues.Err() != nil {
		b.Fatal(issues.Err())
	}
	prog, err := env.Program(ast)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := json.Marshal(cs)
	if err != nil {
		b.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		b.Fatal(err)
	}
	out, _, err := prog.Eval(map[string]any{"obj": obj, "combinedStatus": obj})
	if err != nil || out != types.True {
		b.Fatalf("seed path = %v, %v", out, err)
	}
}

// evalsPerSeedPath is how many of the engine's evaluations
// BenchmarkEvalConditionAgainstSeedPath times beside one of the seed's path,
// for about as long.
const evalsPerSeedPath = 100

// BenchmarkEvalConditionAgainstSeedPath measures the two side by side in one
// loop: each iteration times one evaluation the
// seed's way, then evalsPerSeedPath evaluations by the engine (of a version
// already converted, as BenchmarkEvalCondition), so that both meet the
// machine in the same state; separate benchmarks run seconds apart, and a
// shared machine's speed drifts by ±20 % between them. It reports each
// one's time per evaluation (seed-ns/eval, engine-ns/eval) and their ratio
// (x-faster); its ns/op is the time of one iteration, both together.
func BenchmarkEvalConditionAgainstSeedPath(b *testing.B) {
	p, err := newEngine(b).Compile(KindCondition, seedCondition)
	if err != nil {
		b.Fatal(err)
	}
	cs := benchStatus()
	var seed, engine time.Duration
	iterations := 0
	for b.Loop() {
		start := time.Now()
		seedPath(b, cs)
		mid := time.Now()
		for range evalsPerSeedPath {
			if ok, err := p.EvalCondition(cs); err != nil || !ok {
				b.Fatalf("EvalCondition = %v, %v", ok, err)
			}
		}
		seed += mid.Sub(start)
		engine += time.Since(mid)
		iterations++
	}
	perSeed := float64(seed.Nanoseconds()) / float64(iterations)
	perEval := float64(engine.Nanoseconds()) / float64(iterations*evalsPerSeedPath)
	b.ReportMetric(perSeed, "seed-ns/eval")
	b.ReportMetric(perEval, "engine-ns/eval")
	b.ReportMetric(perSeed/perEval, "x-faster")
}

// BenchmarkCompileCached measures Compile when the program is in the cache.
func BenchmarkCompileCached(b *testing.B) {
	e := newEngine(b)
	if _, err := e.Compile(KindCondition, seedCondition); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Compile(KindCondition, seedCondition); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompileUncached measures a real compilation of the seed condition
// (each iteration uses a distinct source text so the cache never hits).
func BenchmarkCompileUncached(b *testing.B) {
	e := newEngine(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		src := fmt.Sprintf("%s || %d == 0", seedCondition, i+1)
		i++
		if _, err := e.Compile(KindCondition, src); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHostileExpressions reports how long the runtime limits let each
// hostile expression run before stopping it, under the default cost limit and
// evaluation timeout. The compile-time estimate, which rejects all of them by
// default, is lifted so that they can be evaluated at all; each sub-benchmark
// reports its time per evaluation and the worst single evaluation (worst-ms).
func BenchmarkHostileExpressions(b *testing.B) {
	e := newEngine(b, WithEstimatedCostLimit(math.MaxUint64))
	cs := combinedStatus("deployments-aggregator", []ksv1alpha1.Value{number("1")})
	names := make([]string, 0, len(hostileConditions))
	for name := range hostileConditions {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			p, err := e.Compile(KindCondition, hostileConditions[name])
			if err != nil {
				b.Fatal(err)
			}
			var worst time.Duration
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				_, err := p.EvalCondition(cs)
				worst = max(worst, time.Since(start))
				if err != nil && !IsTooCostly(err) {
					b.Fatalf("EvalCondition: %v", err)
				}
			}
			b.ReportMetric(float64(worst)/float64(time.Millisecond), "worst-ms")
		})
	}
}

// BenchmarkConversionsUnderUpdates evaluates the seed condition on 60
// versions of one 10,000-row CombinedStatus (a cache keyed by version
// would keep every one) and reports the
// largest live heap seen after an evaluation, above the heap the 60
// statuses take themselves, and what the conversion cache holds by its
// estimate at the end.
func BenchmarkConversionsUnderUpdates(b *testing.B) {
	const versions, rows = 60, 10_000
	statuses := make([]*ksv1alpha1.CombinedStatus, versions)
	for v := range statuses {
		statuses[v] = largeStatus("the-status", fmt.Sprint(v), rows)
	}
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak uint64
	for b.Loop() {
		e := newEngine(b)
		p, err := e.Compile(KindCondition, seedCondition)
		if err != nil {
			b.Fatal(err)
		}
		for _, cs := range statuses {
			if _, err := p.EvalCondition(cs); err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
		}
		b.ReportMetric(float64(e.conversions.memory())/(1<<20), "cached-MiB")
	}
	b.ReportMetric(float64(peak-base.HeapAlloc)/(1<<20), "peak-heap-MiB")
}

// manyRowsCondition has the seed condition's shape but looks for a value no
// row has, so that it reads every row of every result.
const manyRowsCondition = `obj.results.exists(r, r.name == 'deployments-aggregator' && r.rows.exists(row, row.columns.exists(col, col.type == 'Number' && col.float == '-1')))`

// evalTracked evaluates p on cs with cel-go's cost tracking, the path a
// condition takes when its cost bound does not fit the limit (as on a large
// CombinedStatus), and fails unless it evaluates to false.
func evalTracked(tb testing.TB, p *Program, cs *ksv1alpha1.CombinedStatus) {
	tb.Helper()
	conv, err := p.conversions.of(cs)
	if err != nil {
		tb.Fatal(err)
	}
	if ok, err := p.eval(conditionVars(conv.obj), nil, 0); err != nil || ok {
		tb.Fatalf("eval with cost tracking = %v, %v, want false", ok, err)
	}
}

// BenchmarkConditionOverManyRows measures a condition of the seed's shape
// over a CombinedStatus of 1,000 to 20,000 rows (a stage of that many
// clusters), with cost tracking. of-timeout is an evaluation's time as a
// share of the default evaluation timeout.
func BenchmarkConditionOverManyRows(b *testing.B) {
	for _, rows := range []int{1000, 2000, 5000, 10000, 20000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			p, err := newEngine(b).Compile(KindCondition, manyRowsCondition)
			if err != nil {
				b.Fatal(err)
			}
			cs := largeStatus(fmt.Sprintf("rows-%d", rows), "1", rows)
			evalTracked(b, p, cs) // converts and caches cs
			for b.Loop() {
				evalTracked(b, p, cs)
			}
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(DefaultEvalTimeout), "of-timeout")
		})
	}
}

// BenchmarkIsolationAgainstInProcess evaluates, in one run and in turns,
// the same expressions in this process and in worker processes
// (WithIsolation), and reports both times per evaluation and their ratio.
// The seed condition is bound by its input's sizes and stays in this
// process either way; the tracked condition (map is not in the bound) and
// the filter go to a worker.
func BenchmarkIsolationAgainstInProcess(b *testing.B) {
	local := newEngine(b)
	isolated := isolatedEngine(b, Isolation{Workers: 1})
	cs := benchStatus()
	clause := Clause{}
	clause.Resource = "deployments"
	cases := []struct {
		name, source string
		kind         Kind
	}{
		{"seed condition", seedCondition, KindCondition},
		{"tracked condition", `obj.results.map(r, r.name).exists(n, n == 'deployments-aggregator')`, KindCondition},
		{"filter", `downsyncClause.resource == "deployments"`, KindFilter},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			eval := func(e *Engine) func() {
				p, err := e.Compile(c.kind, c.source)
				if err != nil {
					b.Fatal(err)
				}
				return func() {
					var ok bool
					var err error
					if c.kind == KindFilter {
						ok, err = p.EvalFilter(clause)
					} else {
						ok, err = p.EvalCondition(cs)
					}
					if err != nil || !ok {
						b.Fatalf("%s = %v, %v", c.source, ok, err)
					}
				}
			}
			inProcess, inWorker := eval(local), eval(isolated)
			inWorker() // the worker compiles on first use
			var there, here time.Duration
			n := 0
			for b.Loop() {
				start := time.Now()
				inWorker()
				mid := time.Now()
				inProcess()
				there += mid.Sub(start)
				here += time.Since(mid)
				n++
			}
			b.ReportMetric(float64(there.Nanoseconds())/float64(n), "isolated-ns/eval")
			b.ReportMetric(float64(here.Nanoseconds())/float64(n), "in-process-ns/eval")
			b.ReportMetric(float64(there)/float64(here), "x-slower")
		})
	}
}
