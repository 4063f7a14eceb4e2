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
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/ext"
	"golang.org/x/sync/singleflight"
	"k8s.io/utils/lru"
)

// Kind says which of the two expression roles an expression plays.
type Kind string

const (
	// KindFilter is a stage filter, evaluated per Binding clause with the
	// variable downsyncClause.
	KindFilter Kind = "filter"
	// KindCondition is a stage condition, evaluated per CombinedStatus with
	// the variables obj and combinedStatus.
	KindCondition Kind = "condition"
	// KindAnalysis is an analysis's success or failure condition,
	// evaluated per measurement with the variable result.
	KindAnalysis Kind = "analysis"
	// KindWebAnalysis is a web analysis's success or failure condition,
	// evaluated per measurement with the variable result: the endpoint's
	// JSON answer.
	KindWebAnalysis Kind = "webAnalysis"
)

// Variable names visible to expressions.
const (
	// VarDownsyncClause is the variable of filter expressions.
	VarDownsyncClause = "downsyncClause"
	// VarObj is the primary variable of condition expressions.
	VarObj = "obj"
	// VarCombinedStatus is an alias of VarObj in condition expressions.
	VarCombinedStatus = "combinedStatus"
	// VarResult is the variable of analysis expressions: the sample values
	// of a query's answer, a list of doubles.
	VarResult = "result"
)

const (
	// DefaultCostLimit is the default runtime cost limit per evaluation.
	DefaultCostLimit uint64 = 1_000_000
	// DefaultCacheSize is the default number of compiled programs an Engine
	// keeps.
	DefaultCacheSize = 1024
	// DefaultEstimatedCostLimit is the default limit on the compile-time
	// estimate of an expression's worst-case cost.
	DefaultEstimatedCostLimit uint64 = 10 * DefaultCostLimit
	// DefaultEvalTimeout is the default time limit of one evaluation.
	DefaultEvalTimeout = time.Second
	// DefaultBudgetCost is the default cost that the evaluations sharing a
	// Budget (those of one reconcile) may spend together.
	DefaultBudgetCost uint64 = 10 * DefaultCostLimit
	// DefaultBudgetTime is the default time that the evaluations sharing a
	// Budget may take together.
	DefaultBudgetTime = 2 * time.Second
)

// interruptCheckFrequency is how many iterations of comprehensions, counted
// over the whole evaluation, share one look at whether its context is done.
// cel-go keeps the interrupt once seen, so every enclosing comprehension
// stops too.
const interruptCheckFrequency = 1

// Option configures an Engine; see NewEngine.
type Option func(*config) error

type config struct {
	costLimit          uint64
	estimatedCostLimit uint64
	evalTimeout        time.Duration
	budgetCost         uint64
	budgetTime         time.Duration
	cacheSize          int
	conversionCache    int
	conversionBytes    uint64
	isolation          *Isolation
}

// WithCostLimit sets the runtime cost limit applied to every evaluation
// (default DefaultCostLimit). The cost is cel-go's abstract runtime cost,
// roughly one unit per operation plus the size of strings and lists handled.
// The limit must be positive.
func WithCostLimit(limit uint64) Option {
	return func(c *config) error {
		if limit == 0 {
			return errors.New("cost limit must be positive")
		}
		c.costLimit = limit
		return nil
	}
}

// WithEstimatedCostLimit sets the limit on the compile-time estimate of an
// expression's worst-case cost (default DefaultEstimatedCostLimit): Compile
// rejects an expression whose estimate is above it with
// ReasonEstimatedCostTooHigh. The estimate takes the input to be as large as
// MaxObjectSize (see costEstimator). The limit must be positive.
func WithEstimatedCostLimit(limit uint64) Option {
	return func(c *config) error {
		if limit == 0 {
			return errors.New("estimated cost limit must be positive")
		}
		c.estimatedCostLimit = limit
		return nil
	}
}

// WithEvalTimeout sets how long one evaluation may take (default
// DefaultEvalTimeout); a longer one is stopped with ReasonTimeout. The
// deadline is checked after every iteration of a comprehension, and shared
// by the evaluations ending in the same deadlineResolution, so an evaluation
// may overrun it by that and one iteration. The timeout must be positive.
func WithEvalTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("evaluation timeout must be positive, got %s", d)
		}
		c.evalTimeout = d
		return nil
	}
}

// WithBudget sets what the evaluations sharing a Budget (see
// Engine.NewBudget) may spend together: a total cost (default
// DefaultBudgetCost) and a total time (default DefaultBudgetTime). Both must
// be positive.
func WithBudget(cost uint64, d time.Duration) Option {
	return func(c *config) error {
		if cost == 0 || d <= 0 {
			return fmt.Errorf("budget cost and time must be positive, got %d and %s", cost, d)
		}
		c.budgetCost, c.budgetTime = cost, d
		return nil
	}
}

// WithCacheSize sets how many compiled programs the Engine keeps (default
// DefaultCacheSize); the least recently used program is evicted first. The
// size must be at least 1.
func WithCacheSize(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("cache size must be at least 1, got %d", n)
		}
		c.cacheSize = n
		return nil
	}
}

// WithConversionCacheSize sets how many CombinedStatuses the engine keeps in
// the JSON form conditions evaluate, one version of each (default
// DefaultConversionCacheSize): every stage and reconcile evaluating one
// version of a CombinedStatus shares one conversion. Zero converts at every
// evaluation.
func WithConversionCacheSize(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("conversion cache size must not be negative, got %d", n)
		}
		c.conversionCache = n
		return nil
	}
}

// WithConversionCacheBytes sets how much memory, by the engine's estimate,
// the CombinedStatuses kept converted may take (default
// DefaultConversionCacheBytes); the least recently used is dropped first,
// and one larger than this is converted at every evaluation.
func WithConversionCacheBytes(n uint64) Option {
	return func(c *config) error {
		c.conversionBytes = n
		return nil
	}
}

// Engine compiles CEL expressions and caches the resulting programs in a
// bounded LRU cache keyed by kind and source text. Compile errors are cached
// too, since compilation is deterministic. An Engine is safe for concurrent
// use by many goroutines; create it with NewEngine.
type Engine struct {
	config
	filterEnv    *cel.Env
	conditionEnv *cel.Env
	analysisEnv  *cel.Env
	webEnv       *cel.Env
	// filterCharges, conditionCharges, analysisCharges and webCharges
	// charge the calls of precharges before they run, in the programs of
	// each environment.
	filterCharges, conditionCharges, analysisCharges, webCharges []cel.ProgramOption

	compilations atomic.Uint64
	conversions  *conversions
	deadlines    *deadlines
	regex        *regexGuard

	programs *lru.Cache         // of cacheKey to *cacheEntry
	inflight singleflight.Group // concurrent compilations of one key share one
	// workers evaluate when the engine isolates evaluations (nil if not).
	workers *workerPool
}

type cacheKey struct {
	kind   Kind
	source string
}

type cacheEntry struct {
	prog *Program
	err  error
}

// NewEngine returns an Engine configured by opts.
func NewEngine(opts ...Option) (*Engine, error) {
	cfg := config{
		costLimit:          DefaultCostLimit,
		estimatedCostLimit: DefaultEstimatedCostLimit,
		evalTimeout:        DefaultEvalTimeout,
		budgetCost:         DefaultBudgetCost,
		budgetTime:         DefaultBudgetTime,
		cacheSize:          DefaultCacheSize,
		conversionCache:    DefaultConversionCacheSize,
		conversionBytes:    DefaultConversionCacheBytes,
	}
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&cfg); err != nil {
			return nil, fmt.Errorf("configuring expression engine: %w", err)
		}
	}
	regex := newRegexGuard(cfg.costLimit)
	filterEnv, err := cel.NewEnv(append(commonEnvOptions(cfg.costLimit),
		ext.NativeTypes(reflect.TypeFor[downsyncClause](), ext.ParseStructTags(true)),
		cel.Variable(VarDownsyncClause, cel.ObjectType(downsyncClauseTypeName)),
	)...)
	if err != nil {
		return nil, fmt.Errorf("creating CEL environment for filters: %w", err)
	}
	objType := cel.MapType(cel.StringType, cel.DynType)
	conditionEnv, err := cel.NewEnv(append(commonEnvOptions(cfg.costLimit),
		cel.Variable(VarObj, objType),
		cel.Variable(VarCombinedStatus, objType),
	)...)
	if err != nil {
		return nil, fmt.Errorf("creating CEL environment for conditions: %w", err)
	}
	conditionEnv, err = conditionEnv.Extend(cel.CustomTypeAdapter(celValuesAdapter{conditionEnv.CELTypeAdapter()}))
	if err != nil {
		return nil, fmt.Errorf("creating CEL environment for conditions: %w", err)
	}
	analysisEnv, err := cel.NewEnv(append(commonEnvOptions(cfg.costLimit),
		cel.Variable(VarResult, cel.ListType(cel.DoubleType)),
	)...)
	if err != nil {
		return nil, fmt.Errorf("creating CEL environment for analyses: %w", err)
	}
	analysisCharges, err := prechargeOptions(analysisEnv, cfg.costLimit)
	if err != nil {
		return nil, fmt.Errorf("creating CEL environment for analyses: %w", err)
	}
	// A web answer is JSON converted as a CombinedStatus is (celValue),
	// whence the condition environment's adapter.
	webEnv, err := cel.NewEnv(append(commonEnvOptions(cfg.costLimit),
		cel.Variable(VarResult, cel.DynType),
	)...)
	if err != nil {
		return nil, fmt.Errorf("creating CEL environment for web analyses: %w", err)
	}
	webEnv, err = webEnv.Extend(cel.CustomTypeAdapter(celValuesAdapter{webEnv.CELTypeAdapter()}))
	if err != nil {
		return nil, fmt.Errorf("creating CEL environment for web analyses: %w", err)
	}
	webCharges, err := prechargeOptions(webEnv, cfg.costLimit)
	if err != nil {
		return nil, fmt.Errorf("creating CEL environment for web analyses: %w", err)
	}
	filterCharges, err := prechargeOptions(filterEnv, cfg.costLimit)
	if err != nil {
		return nil, fmt.Errorf("creating CEL environment for filters: %w", err)
	}
	conditionCharges, err := prechargeOptions(conditionEnv, cfg.costLimit)
	if err != nil {
		return nil, fmt.Errorf("creating CEL environment for conditions: %w", err)
	}
	var workers *workerPool
	if cfg.isolation != nil {
		workers = newWorkerPool(*cfg.isolation, workerConfig{
			CostLimit: cfg.costLimit, EstimatedCostLimit: cfg.estimatedCostLimit, EvalTimeout: cfg.evalTimeout,
			CacheSize: min(cfg.cacheSize, workerCacheSize), ConversionBytes: min(cfg.conversionBytes, cfg.isolation.Memory/8),
			Memory: cfg.isolation.Memory, RetireAfter: cfg.isolation.retireAfter,
		})
	}
	return &Engine{
		workers:          workers,
		config:           cfg,
		filterEnv:        filterEnv,
		conditionEnv:     conditionEnv,
		analysisEnv:      analysisEnv,
		webEnv:           webEnv,
		webCharges:       webCharges,
		filterCharges:    filterCharges,
		conditionCharges: conditionCharges,
		analysisCharges:  analysisCharges,
		conversions:      newConversions(cfg.conversionCache, cfg.conversionBytes),
		deadlines:        newDeadlines(),
		regex:            regex,
		programs:         lru.New(cfg.cacheSize),
	}, nil
}

// commonEnvOptions are the CEL environment options shared by both kinds.
func commonEnvOptions(costLimit uint64) []cel.EnvOption {
	return append([]cel.EnvOption{
		// The libraries' versions are pinned, so that a cel-go upgrade
		// adds no function without a bound in functionBounds. Lists
		// version 5 adds hasAll, hasAny, hasOnly and hasExactly, which
		// have none yet.
		ext.Strings(ext.StringsVersion(5)),
		ext.Lists(ext.ListsVersion(4)),
		ext.Math(ext.MathVersion(3)),
		ext.Sets(ext.SetsVersion(0)),
		cel.OptionalTypes(),
		cel.CrossTypeNumericComparisons(true),
	}, guardedFunctions(costLimit)...)
}

// Compile returns the program for (kind, source), compiling it on first use
// and serving it from the cache afterwards. It fails with ReasonCompileError
// if kind is unknown, source is empty (only white space) or does not parse or
// type-check, and with ReasonNotBoolean if the static type of the result is
// neither bool nor dyn (a dyn result is checked at evaluation time), and with
// ReasonEstimatedCostTooHigh if its estimated worst-case cost is above the
// estimated cost limit (see WithEstimatedCostLimit). The returned error is
// always an *Error.
func (e *Engine) Compile(kind Kind, source string) (*Program, error) {
	if e == nil || e.filterEnv == nil {
		return nil, newError(kind, source, ReasonCompileError, errors.New("engine not initialized; use NewEngine"))
	}
	if kind != KindFilter && kind != KindCondition && kind != KindAnalysis && kind != KindWebAnalysis {
		return nil, newError(kind, source, ReasonCompileError, fmt.Errorf("unknown expression kind %q", kind))
	}
	if strings.TrimSpace(source) == "" {
		return nil, newError(kind, source, ReasonCompileError, errors.New("expression is empty"))
	}
	key := cacheKey{kind: kind, source: source}
	if cached, ok := e.programs.Get(key); ok {
		entry := cached.(*cacheEntry)
		return entry.prog, entry.err
	}
	// The flight's key is the cache key as one string: kind has no NUL.
	shared, _, _ := e.inflight.Do(string(kind)+"\x00"+source, func() (any, error) {
		if cached, ok := e.programs.Get(key); ok { // compiled while this call waited
			return cached, nil
		}
		entry := &cacheEntry{}
		entry.prog, entry.err = e.compile(kind, source)
		e.programs.Add(key, entry)
		return entry, nil
	})
	entry := shared.(*cacheEntry)
	return entry.prog, entry.err
}

// Close ends the engine's worker processes, if it isolates evaluations;
// evaluations after it fail. It is safe to call more than once.
func (e *Engine) Close() {
	if e != nil && e.workers != nil {
		e.workers.close()
	}
}

// Compilations returns how many compilations the Engine has actually
// performed, i.e. Compile calls not served from the cache (and not rejected
// before compiling, like empty expressions).
func (e *Engine) Compilations() uint64 {
	if e == nil {
		return 0
	}
	return e.compilations.Load()
}

// compile does the real work of Compile, without caching. A nil error is
// returned as an untyped nil.
func (e *Engine) compile(kind Kind, source string) (prog *Program, err error) {
	e.compilations.Add(1)
	defer func() {
		if r := recover(); r != nil {
			prog, err = nil, newError(kind, source, ReasonCompileError, fmt.Errorf("internal error: %v", r))
		}
	}()
	env, charges := e.filterEnv, e.filterCharges
	switch kind {
	case KindCondition:
		env, charges = e.conditionEnv, e.conditionCharges
	case KindAnalysis:
		env, charges = e.analysisEnv, e.analysisCharges
	case KindWebAnalysis:
		env, charges = e.webEnv, e.webCharges
	}
	ast, issues := env.Compile(source)
	if issues != nil && issues.Err() != nil {
		return nil, newError(kind, source, ReasonCompileError, issues.Err())
	}
	if out := ast.OutputType(); !out.IsExactType(cel.BoolType) && !out.IsExactType(cel.DynType) {
		return nil, newError(kind, source, ReasonNotBoolean,
			fmt.Errorf("expression has type %s, want bool", out))
	}
	estimate, err := env.EstimateCost(ast, newCostEstimator(kind, nestingDepth(ast.NativeRep().Expr())))
	if err != nil {
		return nil, newError(kind, source, ReasonCompileError, fmt.Errorf("estimating cost: %w", err))
	}
	if estimate.Max > e.estimatedCostLimit {
		return nil, newError(kind, source, ReasonEstimatedCostTooHigh,
			fmt.Errorf("estimated worst-case cost %s is above the limit %d (the estimate takes the input to be %d bytes)",
				formatCost(estimate.Max), e.estimatedCostLimit, MaxObjectSize))
	}
	celProg, err := env.Program(ast, append(append(e.regex.programOptions(), charges...),
		cel.CostLimit(e.costLimit),
		cel.CostTracking(actualCost{regex: e.regex}),
		cel.InterruptCheckFrequency(interruptCheckFrequency),
		cel.EvalOptions(cel.OptOptimize),
	)...)
	if err != nil {
		return nil, newError(kind, source, ReasonCompileError, fmt.Errorf("building program: %w", err))
	}
	prog = &Program{kind: kind, source: source, costLimit: e.costLimit, evalTimeout: e.evalTimeout, prog: celProg,
		conversions: e.conversions, deadlines: e.deadlines, workers: e.workers}
	if kind == KindCondition {
		if prog.bound = newCostBound(ast.NativeRep()); prog.bound != nil {
			prog.untracked, err = env.Program(ast, append(append(e.regex.programOptions(), charges...),
				cel.InterruptCheckFrequency(interruptCheckFrequency),
				cel.EvalOptions(cel.OptOptimize),
			)...)
			if err != nil {
				return nil, newError(kind, source, ReasonCompileError, fmt.Errorf("building program: %w", err))
			}
		}
	}
	return prog, nil
}

// formatCost renders an estimated cost, saying "unbounded" for the largest.
func formatCost(c uint64) string {
	if c == math.MaxUint64 {
		return "unbounded"
	}
	return fmt.Sprint(c)
}
