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
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// evalVars is the activation of one evaluation: its variables.
type evalVars struct {
	// obj is a condition's CombinedStatus, under both of its names (nil
	// for a filter).
	obj ref.Val
	// clause is a filter's downsync clause (nil for a condition).
	clause *downsyncClause
	// result is an analysis's measured values (nil for the other kinds).
	result ref.Val
}

// conditionVars returns the variables of a condition on obj.
func conditionVars(obj ref.Val) *evalVars { return &evalVars{obj: obj} }

// analysisVars returns the variables of an analysis condition on result.
func analysisVars(result ref.Val) *evalVars { return &evalVars{result: result} }

// filterVars returns the variables of a filter on clause.
func filterVars(clause *downsyncClause) *evalVars { return &evalVars{clause: clause} }

// ResolveName implements interpreter.Activation.
func (v *evalVars) ResolveName(name string) (any, bool) {
	switch name {
	case VarObj, VarCombinedStatus:
		if v.obj != nil {
			return v.obj, true
		}
	case VarDownsyncClause:
		if v.clause != nil {
			return v.clause, true
		}
	case VarResult:
		if v.result != nil {
			return v.result, true
		}
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (*evalVars) Parent() interpreter.Activation { return nil }
