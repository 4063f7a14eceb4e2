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
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// Bounds of a web analysis's JSON answer, beyond its size
// (MaxWebAnswerBytes).
const (
	// MaxJSONDepth is the deepest nesting of objects and arrays.
	MaxJSONDepth = 32
	// MaxJSONNodes is the most values (object members and array
	// elements, at every level) an answer may hold.
	MaxJSONNodes = 100_000
)

// DecodeJSON decodes a web analysis's answer as its conditions see it:
// objects as map[string]any, arrays as []any, numbers as int64 when whole
// and within range, else float64, strings, bools and nil. It refuses,
// before decoding, an answer larger than MaxWebAnswerBytes, nested deeper
// than MaxJSONDepth or holding more than MaxJSONNodes values, and an
// answer that is not one JSON value; its errors say which, without
// quoting the answer.
func DecodeJSON(data []byte) (any, error) {
	if len(data) > MaxWebAnswerBytes {
		return nil, fmt.Errorf("the answer is larger than %d bytes", MaxWebAnswerBytes)
	}
	if err := scanJSON(data); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, errors.New("the answer is not JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("the answer is not one JSON value")
	}
	return normalize(v)
}

// scanJSON bounds the depth and the values of data, outside its strings,
// without decoding it: a deep answer is refused before the decoder's
// recursion, a wide one before its allocations.
func scanJSON(data []byte) error {
	depth, nodes := 0, 1
	inString, escaped := false, false
	for _, c := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > MaxJSONDepth {
				return fmt.Errorf("the answer nests deeper than %d", MaxJSONDepth)
			}
		case '}', ']':
			depth--
		case ',':
			if nodes++; nodes > MaxJSONNodes {
				return fmt.Errorf("the answer holds more than %d values", MaxJSONNodes)
			}
		}
	}
	return nil
}

// normalize turns the decoder's json.Numbers into int64 or float64.
func normalize(v any) (any, error) {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i, nil
		}
		f, err := v.Float64()
		if err != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("the answer's number %.32s is out of range", v.String())
		}
		return f, nil
	case map[string]any:
		for k, el := range v {
			n, err := normalize(el)
			if err != nil {
				return nil, err
			}
			v[k] = n
		}
	case []any:
		for i, el := range v {
			n, err := normalize(el)
			if err != nil {
				return nil, err
			}
			v[i] = n
		}
	}
	return v, nil
}

// EvalWebAnalysis evaluates a web analysis program against one JSON answer
// and reports whether it holds. Evaluating another kind of program fails
// with ReasonWrongKind; an answer DecodeJSON refuses fails with
// ReasonEvaluationError. The returned error is always an *Error.
func (p *Program) EvalWebAnalysis(answer []byte) (bool, error) {
	return p.evalWebAnalysis(answer, nil)
}

// EvalWebAnalysis is Program.EvalWebAnalysis within the budget: it fails
// with ReasonBudgetExhausted if the budget is spent or runs out meanwhile.
func (b *Budget) EvalWebAnalysis(p *Program, answer []byte) (bool, error) {
	return p.evalWebAnalysis(answer, b)
}

// evalWebAnalysis is EvalWebAnalysis within budget b (nil for none).
func (p *Program) evalWebAnalysis(answer []byte, b *Budget) (bool, error) {
	if err := p.check(KindWebAnalysis); err != nil {
		return false, err
	}
	if p.workers != nil {
		raw := json.RawMessage(answer)
		return p.isolated(evalRequest{Answer: &raw}, b, nil)
	}
	vars, err := webVars(answer)
	if err != nil {
		return false, newError(p.kind, p.source, ReasonEvaluationError, err)
	}
	return p.eval(vars, b, 0)
}

// webVars returns the variables of a web analysis on answer.
func webVars(answer []byte) (*evalVars, error) {
	v, err := DecodeJSON(answer)
	if err != nil {
		return nil, err
	}
	return analysisVars(celValue(v)), nil
}
