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
	"slices"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/interpreter"
	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Program is a compiled expression, obtained from Engine.Compile. It is
// immutable and safe for concurrent evaluation by many goroutines.
type Program struct {
	kind        Kind
	source      string
	costLimit   uint64
	evalTimeout time.Duration
	prog        cel.Program
	// untracked is prog without cost tracking, and bound its cost bound,
	// for conditions eligible for evaluation without tracking (nil for the
	// others; see costBound).
	untracked cel.Program
	bound     *costBound
	// conversions is the engine's cache of CombinedStatuses as CEL values.
	conversions *conversions
	// deadlines is the engine's, which gives evaluations their contexts.
	deadlines *deadlines
	// workers, when the engine isolates evaluations, runs them.
	workers *workerPool
}

// Source returns the source text the program was compiled from.
func (p *Program) Source() string {
	if p == nil {
		return ""
	}
	return p.source
}

// Kind returns the role the program was compiled for.
func (p *Program) Kind() Kind {
	if p == nil {
		return ""
	}
	return p.kind
}

// EvalFilter evaluates a filter program against one Binding clause and
// reports whether the clause passes the filter. Evaluating a condition
// program fails with ReasonWrongKind. The returned error is always an *Error.
func (p *Program) EvalFilter(clause Clause) (bool, error) {
	return p.evalFilter(clause, nil)
}

// evalFilter is EvalFilter within budget b (nil for none).
func (p *Program) evalFilter(clause Clause, b *Budget) (bool, error) {
	if err := p.check(KindFilter); err != nil {
		return false, err
	}
	if p.workers != nil {
		return p.isolated(evalRequest{Clause: &clause}, b, nil)
	}
	return p.eval(filterVars(clause.celView()), b, 0)
}

// EvalCondition evaluates a condition program against one CombinedStatus and
// reports whether the condition holds. The CombinedStatus is not modified.
// Evaluating a filter program fails with ReasonWrongKind; a nil cs fails with
// ReasonEvaluationError. The returned error is always an *Error.
func (p *Program) EvalCondition(cs *ksv1alpha1.CombinedStatus) (bool, error) {
	return p.evalCondition(cs, nil)
}

// evalCondition is EvalCondition within budget b (nil for none).
func (p *Program) evalCondition(cs *ksv1alpha1.CombinedStatus, b *Budget) (bool, error) {
	if err := p.check(KindCondition); err != nil {
		return false, err
	}
	if cs == nil {
		return false, newError(p.kind, p.source, ReasonEvaluationError, errors.New("no CombinedStatus given"))
	}
	if p.workers != nil && p.bound == nil {
		return p.isolatedCondition(cs, b)
	}
	conv, err := p.conversions.of(cs)
	if err != nil {
		return false, newError(p.kind, p.source, ReasonEvaluationError, err)
	}
	var bound uint64
	if p.bound != nil {
		if c := p.bound.cost(conv.sizes); c <= p.costLimit {
			bound = c
		}
	}
	if p.workers != nil && bound == 0 {
		return p.isolatedCondition(cs, b)
	}
	return p.eval(conditionVars(conv.obj), b, bound)
}

// MaxResultValues is the most values an analysis condition is evaluated
// on: a query's answer with more samples is refused before evaluation.
const MaxResultValues = 1000

// EvalAnalysis evaluates an analysis program against the values of one
// measurement and reports whether it holds. Evaluating another kind of
// program fails with ReasonWrongKind; more than MaxResultValues values fail
// with ReasonEvaluationError. The returned error is always an *Error.
func (p *Program) EvalAnalysis(values []float64) (bool, error) {
	return p.evalAnalysis(values, nil)
}

// evalAnalysis is EvalAnalysis within budget b (nil for none).
func (p *Program) evalAnalysis(values []float64, b *Budget) (bool, error) {
	if err := p.check(KindAnalysis); err != nil {
		return false, err
	}
	if len(values) > MaxResultValues {
		return false, newError(p.kind, p.source, ReasonEvaluationError,
			fmt.Errorf("the result has %d values, more than the %d an analysis condition is evaluated on", len(values), MaxResultValues))
	}
	if p.workers != nil {
		return p.isolated(evalRequest{Values: values}, b, nil)
	}
	return p.eval(analysisValues(values), b, 0)
}

// analysisValues returns the variables of an analysis on values.
func analysisValues(values []float64) *evalVars {
	return analysisVars(types.DefaultTypeAdapter.NativeToValue(slices.Clone(values)))
}

// check verifies that p is usable in the role want.
func (p *Program) check(want Kind) error {
	if p == nil || p.prog == nil {
		return newError(want, "", ReasonEvaluationError, errors.New("nil or uncompiled program"))
	}
	if p.kind != want {
		return newError(p.kind, p.source, ReasonWrongKind,
			fmt.Errorf("a %s program cannot be evaluated as a %s", p.kind, want))
	}
	return nil
}

// evalLimits are the deadline of one evaluation and what sets it.
type evalLimits struct {
	deadline time.Time
	// allowance is the budget's time when the budget's deadline is the
	// nearer one, else zero.
	allowance time.Duration
}

// limits returns the limits of an evaluation starting now within budget b
// (nil for none), or the error that refuses it because b is spent.
func (p *Program) limits(b *Budget, now time.Time) (evalLimits, error) {
	l := evalLimits{deadline: now.Add(p.evalTimeout)}
	if b == nil {
		return l, nil
	}
	if why := b.exhausted(now); why != "" {
		return l, newError(p.kind, p.source, ReasonBudgetExhausted, errors.New(why))
	}
	if b.deadline.Before(l.deadline) {
		l.deadline, l.allowance = b.deadline, b.allowance
	}
	return l, nil
}

// eval runs the program on the given variables, within the evaluation
// timeout and budget b (nil for none), and classifies the outcome. A
// nonzero bound is an upper bound of the evaluation's cost within the cost
// limit: the program then runs without cost tracking, and b is charged the
// bound.
func (p *Program) eval(vars *evalVars, b *Budget, bound uint64) (bool, error) {
	l, err := p.limits(b, time.Now())
	if err != nil {
		return false, err
	}
	result, cost, err := p.run(vars, l, bound)
	if b != nil {
		b.spent += cost
	}
	return result, err
}

// run runs the program on the given variables until l's deadline, in this
// process, and returns its outcome and what it cost (bound, for an
// untracked evaluation).
func (p *Program) run(vars *evalVars, l evalLimits, bound uint64) (result bool, cost uint64, err error) {
	defer func() {
		if r := recover(); r != nil {
			result, err = false, newError(p.kind, p.source, ReasonEvaluationError, fmt.Errorf("internal error: %v", r))
		}
	}()
	prog := p.prog
	if bound != 0 {
		prog = p.untracked
	}
	ctx, cancel := p.deadlines.until(time.Now(), l.deadline)
	defer cancel()
	out, details, evalErr := prog.ContextEval(ctx, vars)
	cost = bound
	if details != nil && details.ActualCost() != nil {
		cost += *details.ActualCost()
	}
	if evalErr != nil {
		// An interrupt check found the deadline passed. The cause says
		// which, not how the context ended, so that it reads the same at
		// every reconcile.
		interrupted := errors.Is(evalErr, interpreter.InterruptError{})
		switch {
		case isCostLimitError(evalErr) || exceeds(details, p.costLimit):
			return false, cost, newError(p.kind, p.source, ReasonCostLimitExceeded,
				fmt.Errorf("limit %d: %w", p.costLimit, evalErr))
		case interrupted && l.allowance != 0:
			return false, cost, newError(p.kind, p.source, ReasonBudgetExhausted,
				fmt.Errorf("stopped when the evaluations of this run had taken their whole budget of %s: %w", l.allowance, interpreter.InterruptError{}))
		case interrupted:
			return false, cost, newError(p.kind, p.source, ReasonTimeout,
				fmt.Errorf("stopped at the evaluation timeout of %s: %w", p.evalTimeout, interpreter.InterruptError{}))
		}
		return false, cost, newError(p.kind, p.source, ReasonEvaluationError, evalErr)
	}
	value, ok := out.(types.Bool)
	if !ok {
		return false, cost, newError(p.kind, p.source, ReasonNotBoolean,
			fmt.Errorf("expression evaluated to a value of type %s, want bool", out.Type().TypeName()))
	}
	return bool(value), cost, nil
}

// exceeds reports whether the evaluation's actual cost is above limit.
func exceeds(details *cel.EvalDetails, limit uint64) bool {
	if details == nil {
		return false
	}
	cost := details.ActualCost()
	return cost != nil && *cost > limit
}

// combinedStatusToJSON converts cs to its JSON form, with the list fields
// that JSON omits when empty made present (see the package documentation).
func combinedStatusToJSON(cs *ksv1alpha1.CombinedStatus) (obj map[string]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			obj, err = nil, fmt.Errorf("converting CombinedStatus to JSON form: internal error: %v", r)
		}
	}()
	obj, err = runtime.DefaultUnstructuredConverter.ToUnstructured(cs)
	if err != nil {
		return nil, fmt.Errorf("converting CombinedStatus %s/%s to JSON form: %w", cs.Namespace, cs.Name, err)
	}
	results := ensureList(obj, "results")
	for _, r := range results {
		result, ok := r.(map[string]any)
		if !ok {
			continue
		}
		ensureList(result, "columnNames")
		ensureList(result, "rowErrors")
		ensureList(result, "aggregationErrors")
		for _, rw := range ensureList(result, "rows") {
			if row, ok := rw.(map[string]any); ok {
				ensureList(row, "columns")
			}
		}
	}
	return obj, nil
}

// ensureList makes m[key] an empty list if it is absent or null, and returns
// the list (nil if m[key] holds something other than a list).
func ensureList(m map[string]any, key string) []any {
	switch v := m[key].(type) {
	case nil:
		l := []any{}
		m[key] = l
		return l
	case []any:
		return v
	default:
		return nil
	}
}
