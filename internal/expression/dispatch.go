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
	"math"
	"sync"

	"cel.dev/cel-go/cel"
	celcost "cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/decls"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// A call whose arguments the checker types as dyn may match several
// overloads; cel-go then dispatches it at run time, by function name, and
// the call carries no overload ID. cel-go's cost tracker and its models
// are keyed by overload ID, so such a call was charged one unit, however
// large its arguments (issue 54, N11: sort of 20,000 names cost 7). This
// file finds, from the arguments, the overload such a call runs, so that
// it is charged as that overload is: before it runs (precharges) and
// after.

// dispatchTable knows the overloads of the engine's functions, which are
// the same in the three environments.
type dispatchTable struct {
	overloads map[string][]*decls.OverloadDecl // by function name
	standard  map[string]bool                  // overload IDs of CEL's standard library
}

// dispatch returns the dispatch table, built on first use.
var dispatch = sync.OnceValue(func() *dispatchTable {
	t := &dispatchTable{overloads: map[string][]*decls.OverloadDecl{}, standard: map[string]bool{}}
	if env, err := cel.NewEnv(commonEnvOptions(1)...); err == nil {
		for name, fn := range env.Functions() {
			t.overloads[name] = fn.OverloadDecls()
		}
	}
	if std, err := cel.NewEnv(); err == nil {
		for _, fn := range std.Functions() {
			for _, o := range fn.OverloadDecls() {
				t.standard[o.ID()] = true
			}
		}
	}
	return t
})

// resolve returns the ID of the overload of function that a call with args
// runs, or "" if none matches.
func (t *dispatchTable) resolve(function string, args []ref.Val) string {
	for _, o := range t.overloads[function] {
		params := o.ArgTypes()
		if len(params) != len(args) {
			continue
		}
		match := true
		for i, p := range params {
			if !runtimeMatch(p, args[i]) {
				match = false
				break
			}
		}
		if match {
			return o.ID()
		}
	}
	return ""
}

// runtimeMatch reports whether v may be passed for a parameter of type p,
// looking at lists and maps only as such: the overloads of one function
// that differ in their element types only (list_int_sort and
// list_string_sort) are charged alike.
func runtimeMatch(p *types.Type, v ref.Val) bool {
	switch p.Kind() {
	case types.DynKind, types.AnyKind, types.TypeParamKind:
		return true
	case types.ListKind:
		_, ok := v.(traits.Lister)
		return ok
	case types.MapKind:
		_, ok := v.(traits.Mapper)
		return ok
	}
	return p.TypeName() == v.Type().TypeName()
}

// standardTrackers are cel-go's runtime charges of its standard library.
var standardTrackers = celcost.StandardOverloadTrackers()

// dispatchedCost is the charge, after it ran, of a call of function that
// was dispatched at run time: that of the overload it ran (precharges,
// actualCost's rules, cel-go's standard charges, in this order), and for an
// overload of an extension library, which cel-go charges by the sizes it
// reads and builds, a tenth of a unit per element or byte of its
// arguments and result.
func (a actualCost) dispatchedCost(function string, args []ref.Val, result ref.Val) uint64 {
	id := dispatch().resolve(function, args)
	if id == "" {
		return 1
	}
	if charge, ok := precharges[id]; ok {
		if refusedBeforeItRan(result) {
			return refusalCost(a.regex.costLimit)
		}
		return charge(args, a.regex.costLimit)
	}
	if c := a.CallCost(function, id, args, result); c != nil {
		return *c
	}
	if tracker, ok := standardTrackers[id]; ok {
		if c := tracker(args, result); c != nil {
			return *c
		}
	}
	if dispatch().standard[id] {
		return 1 // cel-go's charge of its other standard overloads
	}
	sizes := actualSize(result)
	for _, arg := range args {
		sizes = saturatingAdd(sizes, actualSize(arg))
	}
	return uint64(math.Ceil(float64(sizes)*costPerByte)) + 1
}
