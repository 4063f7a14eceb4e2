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
	"time"

	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// interruptedName is the name cel-go's interrupt checks resolve in the
// activation, one check at every iteration of every comprehension (see
// interruptCheckFrequency); a comprehension stops when it resolves to true.
const interruptedName = "#interrupted"

// clockCheckInterval is how many interrupt checks share one reading of the
// clock: a reading costs several times a check, and the seed condition on a
// small CombinedStatus makes five checks.
// An evaluation then stops at most this many iterations after its deadline.
const clockCheckInterval = 8

// evalVars is the activation of one evaluation: its variables and its
// deadline. It answers cel-go's interrupt checks from the clock, so that an
// evaluation under a deadline needs no context, channel or timer (a timer
// per evaluation, even one reused, was about a tenth of the time of
// evaluating the seed condition without cost tracking). It reads the clock
// at every clockCheckInterval-th check; once it has seen the deadline pass,
// every check answers true, so a comprehension that stops cannot hide the
// interrupt from those around it.
type evalVars struct {
	deadline time.Time
	checks   uint
	expired  bool
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
	case interruptedName:
		if !v.expired && !v.deadline.IsZero() {
			v.checks++
			v.expired = v.checks%clockCheckInterval == 0 && !time.Now().Before(v.deadline)
		}
		if v.expired {
			return true, true
		}
		return nil, false
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
