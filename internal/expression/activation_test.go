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
	"testing"
	"time"

	"github.com/google/cel-go/common/types"
)

// TestEvalVarsInterruptAtTheDeadline checks the activation's answer to
// cel-go's interrupt checks: none before the deadline or without one; after
// it, true from the check that reads the clock at the latest, and at every
// check from then on.
func TestEvalVarsInterruptAtTheDeadline(t *testing.T) {
	v := conditionVars(types.String("x"))
	for i := range 3 * clockCheckInterval {
		if got, found := v.ResolveName(interruptedName); found {
			t.Fatalf("check %d without a deadline: %s = %v, want none", i, interruptedName, got)
		}
	}
	v.deadline = time.Now().Add(time.Hour)
	for i := range 3 * clockCheckInterval {
		if got, found := v.ResolveName(interruptedName); found {
			t.Fatalf("check %d an hour before the deadline: %s = %v, want none", i, interruptedName, got)
		}
	}
	v.deadline = time.Now().Add(-time.Nanosecond)
	seen := -1
	for i := range 3 * clockCheckInterval {
		// cel-go stops a comprehension when the name resolves to the Go
		// value true (interpreter.checkInterrupt).
		got, found := v.ResolveName(interruptedName)
		switch {
		case found && got == true && seen < 0:
			seen = i
		case seen >= 0 && (!found || got != true):
			t.Fatalf("check %d after the deadline: %s = %v, %v, after true at check %d", i, interruptedName, got, found, seen)
		}
	}
	if seen < 0 || seen >= clockCheckInterval {
		t.Errorf("after the deadline, %s was first true at check %d, want one of the first %d", interruptedName, seen, clockCheckInterval)
	}
}

// TestEvalVarsResolveTheirKindsNames checks that a condition's variables
// give its CombinedStatus under both names and nothing else, and a filter's
// its clause and nothing else.
func TestEvalVarsResolveTheirKindsNames(t *testing.T) {
	obj := types.String("the CombinedStatus")
	cond := conditionVars(obj)
	for _, name := range []string{VarObj, VarCombinedStatus} {
		if got, found := cond.ResolveName(name); !found || got != obj {
			t.Errorf("condition: %s = %v, %v, want the CombinedStatus", name, got, found)
		}
	}
	if got, found := cond.ResolveName(VarDownsyncClause); found {
		t.Errorf("condition: %s = %v, want none", VarDownsyncClause, got)
	}
	clause := Clause{Name: "nginx"}.celView()
	filter := filterVars(clause)
	if got, found := filter.ResolveName(VarDownsyncClause); !found || got != clause {
		t.Errorf("filter: %s = %v, %v, want the clause", VarDownsyncClause, got, found)
	}
	for _, name := range []string{VarObj, VarCombinedStatus, "other"} {
		if got, found := filter.ResolveName(name); found {
			t.Errorf("filter: %s = %v, want none", name, got)
		}
	}
}
