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
	"sort"
	"testing"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/interpreter"
	"cel.dev/cel-go/parser"
)

// callsOf returns, for every function of env, expressions that call it:
// for every overload, once with arguments of the overload's types and once
// with every argument dyn, which the checker leaves to cel-go's dispatch
// at run time. The arguments are variables a0, a1, ... declared in the
// returned environment; expressions that do not check are left out.
func callsOf(t *testing.T, env *cel.Env) map[string][]*cel.Ast {
	t.Helper()
	calls := map[string][]*cel.Ast{}
	for name, fn := range env.Functions() {
		for _, o := range fn.OverloadDecls() {
			for _, dynamic := range []bool{false, true} {
				var vars []cel.EnvOption
				fac := celast.NewExprFactory()
				var args []celast.Expr
				for i, p := range o.ArgTypes() {
					typ := p
					if dynamic || typ.Kind() == types.TypeParamKind || hasTypeParam(typ) {
						typ = types.DynType
					}
					v := fmt.Sprintf("a%d", i)
					vars = append(vars, cel.Variable(v, typ))
					args = append(args, fac.NewIdent(int64(i+1), v))
				}
				if name == "_?._" && len(args) == 2 { // selects a field named by a literal
					args[1] = fac.NewLiteral(3, types.String("f"))
				}
				var call celast.Expr
				if o.IsMemberFunction() && len(args) > 0 {
					call = fac.NewMemberCall(100, name, args[0], args[1:]...)
				} else {
					call = fac.NewCall(100, name, args...)
				}
				src, err := unparse(call)
				if err != nil {
					continue
				}
				callEnv, err := env.Extend(vars...)
				if err != nil {
					t.Fatalf("declaring the arguments of %s: %v", o.ID(), err)
				}
				ast, iss := callEnv.Compile(src)
				if iss.Err() != nil {
					continue
				}
				calls[name] = append(calls[name], ast)
			}
		}
	}
	return calls
}

// unparse is parser.Unparse, which panics on some malformed calls.
func unparse(e celast.Expr) (src string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("unparsing: %v", r)
		}
	}()
	return parser.Unparse(e, celast.NewSourceInfo(nil))
}

// hasTypeParam reports whether typ has a type parameter anywhere.
func hasTypeParam(typ *types.Type) bool {
	if typ.Kind() == types.TypeParamKind {
		return true
	}
	for _, p := range typ.Parameters() {
		if hasTypeParam(p) {
			return true
		}
	}
	return false
}

// TestEveryCallIsCharged checks the calls as cel-go plans them, not the
// declarations: every call of every function of the three environments,
// with typed and with dyn arguments, that the decorator sees is charged by
// its function's bound: one bound "charged before it runs" is wrapped by
// its charge (chargeFor), and any other is planned with an overload ID
// that cel-go's cost models know or, dispatched at run time, resolved by
// actualCost (dispatch.go). Before dispatched calls were resolved, sort on
// a dyn list was planned with no overload ID and charged neither before
// nor after (N11), which the declarations alone did not show.
func TestEveryCallIsCharged(t *testing.T) {
	e := newEngine(t)
	for kind, env := range map[Kind]*cel.Env{KindFilter: e.filterEnv, KindCondition: e.conditionEnv, KindAnalysis: e.analysisEnv} {
		calls := callsOf(t, env)
		var names []string
		for name := range env.Functions() {
			names = append(names, name)
		}
		sort.Strings(names)
		planned := 0
		for _, name := range names {
			for _, ast := range calls[name] {
				var seen []interpreter.InterpretableCall
				record := cel.CustomDecorator(func(i interpreter.Interpretable) (interpreter.Interpretable, error) {
					if call, ok := i.(interpreter.InterpretableCall); ok {
						seen = append(seen, call)
					}
					return i, nil
				})
				callEnv, err := env.Extend()
				if err != nil {
					t.Fatal(err)
				}
				if _, err := callEnv.Program(ast, record, cel.EvalOptions(cel.OptOptimize)); err != nil {
					continue // no binding for these argument types
				}
				for _, call := range seen {
					planned++
					function, overload := call.Function(), call.OverloadID()
					bound, ok := functionBounds[function]
					switch {
					case !ok:
						t.Errorf("%s environment: %s (%q) has no bound", kind, function, overload)
					case bound == boundPrecharged && chargeFor(function, overload) == nil:
						t.Errorf("%s environment: %s (%q) is bound %q but not charged before it runs", kind, function, overload, bound)
					case bound != boundPrecharged && overload == "" && (!holesFixed || len(dispatch().overloads[function]) == 0):
						t.Errorf("%s environment: %s is dispatched at run time, and nothing resolves its overload to charge it", kind, function)
					}
				}
			}
		}
		if planned < len(names) {
			t.Errorf("%s environment: only %d calls planned for %d functions", kind, planned, len(names))
		}
	}
}
