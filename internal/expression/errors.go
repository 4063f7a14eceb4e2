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
	"strconv"
	"strings"
	"unicode/utf8"

	"cel.dev/cel-go/interpreter"
)

// ErrorReason classifies the failure reported by an [Error].
type ErrorReason string

const (
	// ReasonCompileError means the expression could not be compiled: it is
	// empty, has a syntax error, or fails type checking (for example it refers
	// to an unknown variable, field or function).
	ReasonCompileError ErrorReason = "CompileError"
	// ReasonNotBoolean means the expression does not produce a bool: either
	// its static type is known at compile time to be something else, or a
	// dynamically typed result turned out not to be a bool at evaluation time.
	ReasonNotBoolean ErrorReason = "NotBoolean"
	// ReasonEvaluationError means evaluation failed, for example because a
	// map key was absent, an index was out of range or no function overload
	// matched the runtime types.
	ReasonEvaluationError ErrorReason = "EvaluationError"
	// ReasonCostLimitExceeded means evaluation was stopped because its
	// runtime cost exceeded the engine's cost limit (see [WithCostLimit]).
	ReasonCostLimitExceeded ErrorReason = "CostLimitExceeded"
	// ReasonEstimatedCostTooHigh means Engine.Compile rejected the
	// expression because the compile-time estimate of its worst-case cost is
	// above the engine's estimated cost limit (see [WithEstimatedCostLimit]).
	ReasonEstimatedCostTooHigh ErrorReason = "EstimatedCostTooHigh"
	// ReasonTimeout means evaluation was stopped because it took longer than
	// the engine's evaluation timeout (see [WithEvalTimeout]).
	ReasonTimeout ErrorReason = "Timeout"
	// ReasonBudgetExhausted means an evaluation was refused or stopped because
	// the evaluations sharing its [Budget] had spent all of it.
	ReasonBudgetExhausted ErrorReason = "BudgetExhausted"
	// ReasonMemoryLimitExceeded means an isolated evaluation was stopped
	// because its worker process ran out of the memory it may use (see
	// [WithIsolation]).
	ReasonMemoryLimitExceeded ErrorReason = "MemoryLimitExceeded"
	// ReasonWrongKind means a program was evaluated in the wrong role, for
	// example a condition program passed to [Program.EvalFilter]. It
	// indicates a programming error in the caller.
	ReasonWrongKind ErrorReason = "WrongKind"
)

// describe returns the human-readable phrase used in Error messages.
func (r ErrorReason) describe() string {
	switch r {
	case ReasonCompileError:
		return "compile error"
	case ReasonNotBoolean:
		return "result is not a bool"
	case ReasonEvaluationError:
		return "evaluation error"
	case ReasonCostLimitExceeded:
		return "cost limit exceeded"
	case ReasonEstimatedCostTooHigh:
		return "estimated cost too high"
	case ReasonTimeout:
		return "evaluation timed out"
	case ReasonBudgetExhausted:
		return "evaluation budget exhausted"
	case ReasonMemoryLimitExceeded:
		return "memory limit exceeded"
	case ReasonWrongKind:
		return "wrong kind of expression"
	default:
		return string(r)
	}
}

// TooCostly reports whether the reason is one of the limits on what an
// expression may cost: the estimated cost limit, the runtime cost limit, the
// evaluation timeout or the budget.
func (r ErrorReason) TooCostly() bool {
	switch r {
	case ReasonEstimatedCostTooHigh, ReasonCostLimitExceeded, ReasonTimeout, ReasonBudgetExhausted, ReasonMemoryLimitExceeded:
		return true
	}
	return false
}

// IsTooCostly reports whether err is an [*Error] whose reason is one of the
// cost limits (see [ErrorReason.TooCostly]).
func IsTooCostly(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Reason.TooCostly()
}

// Error is the error returned by every function of this package. It names
// the kind of expression, the expression's source text and the class of
// failure; Err holds the underlying cause.
type Error struct {
	// Kind is the role of the expression (filter or condition).
	Kind Kind
	// Expression is the source text of the expression.
	Expression string
	// Reason classifies the failure.
	Reason ErrorReason
	// Err is the underlying cause; it may be nil.
	Err error
}

// Bounds on what Error renders, so that messages built from errors (status
// conditions, Events) stay small whatever the expression's length.
const (
	// MaxQuotedExpression is the most bytes of an expression's source an
	// Error quotes; a longer source is cut and its length given.
	MaxQuotedExpression = 200
	// MaxCause is the most bytes of the underlying cause an Error renders.
	MaxCause = 512
)

// Error renders the failure as, for example,
// `condition "obj.foo": evaluation error: no such key: foo`. The source is
// quoted once, cut to MaxQuotedExpression bytes; the cause is rendered
// without the source lines cel-go quotes again (the position names the
// place) and cut to MaxCause bytes.
func (e *Error) Error() string {
	if e == nil {
		return "<nil>"
	}
	kind := string(e.Kind)
	if kind == "" {
		kind = "expression"
	}
	msg := fmt.Sprintf("%s %s: %s", kind, QuoteExpression(e.Expression), e.Reason.describe())
	if e.Err != nil {
		msg += ": " + cause(e.Err.Error())
	}
	return msg
}

// QuoteExpression quotes an expression's source, cut to MaxQuotedExpression
// bytes with an ellipsis and the full length when it is longer.
func QuoteExpression(source string) string {
	if len(source) <= MaxQuotedExpression {
		return strconv.Quote(source)
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(cutUTF8(source, MaxQuotedExpression)), len(source))
}

// cause renders an underlying error's text on one line: cel-go follows each
// issue with the source line and a caret line (" | ..."), which would quote
// the expression a second and third time, so those lines are dropped.
func cause(text string) string {
	var lines []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, " | ") || strings.TrimSpace(line) == "" {
			continue
		}
		lines = append(lines, strings.TrimSpace(line))
	}
	joined := strings.Join(lines, "; ")
	if len(joined) <= MaxCause {
		return joined
	}
	return cutUTF8(joined, MaxCause) + "…"
}

// cutUTF8 returns at most n bytes of s, cut at a rune boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Unwrap returns the underlying cause, for use with errors.Is and errors.As.
func (e *Error) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// newError builds an *Error.
func newError(kind Kind, source string, reason ErrorReason, err error) *Error {
	return &Error{Kind: kind, Expression: source, Reason: reason, Err: err}
}

// isCostLimitError reports whether err is cel-go's report of an exceeded
// runtime cost limit. cel-go returns an interpreter.EvalCancelledError with
// cause CostLimitExceeded; the message text is checked as a fallback in case
// the error arrives wrapped in a form errors.As cannot see through.
func isCostLimitError(err error) bool {
	if err == nil {
		return false
	}
	var cancelled interpreter.EvalCancelledError
	if errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded {
		return true
	}
	var cancelledPtr *interpreter.EvalCancelledError
	if errors.As(err, &cancelledPtr) && cancelledPtr != nil && cancelledPtr.Cause == interpreter.CostLimitExceeded {
		return true
	}
	var tooLarge *errResultTooLarge
	if errors.As(err, &tooLarge) {
		return true
	}
	var tooCostly *errMatchTooCostly
	var tooLargePattern *errPatternTooLarge
	var callTooCostly *errCallTooCostly
	if errors.As(err, &tooCostly) || errors.As(err, &tooLargePattern) || errors.As(err, &callTooCostly) {
		return true
	}
	return strings.Contains(err.Error(), "cost limit")
}
