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
	"strings"
	"testing"
	"time"

	"cel.dev/cel-go/common/types"
)

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

// TestDeadlinesAreSharedAndForgotten checks the contexts evaluations stop
// by: done within deadlineResolution after the deadline, one for all the
// deadlines of an interval, on the monotonic clock, one of its own for a
// deadline nearer than that, and none kept once done.
func TestDeadlinesAreSharedAndForgotten(t *testing.T) {
	d := newDeadlines()
	deadline := time.Now().Add(time.Hour)
	ctx := d.shared(deadline)
	end, ok := ctx.Deadline()
	if !ok || end.Before(deadline) || end.Sub(deadline) >= deadlineResolution {
		t.Errorf("deadline %s, want at most %s after %s", end, deadlineResolution, deadline)
	}
	// A step of the wall clock must not move it: time.Time prints its
	// monotonic reading as m=.
	if !strings.Contains(end.String(), " m=") {
		t.Errorf("deadline %s has no monotonic clock reading", end)
	}
	if other := d.shared(end.Add(-deadlineResolution + 1)); other != ctx {
		t.Errorf("two deadlines of one interval got two contexts")
	}
	if other := d.shared(end.Add(1)); other == ctx {
		t.Errorf("deadlines of two intervals got one context")
	}
	if past := d.shared(time.Now().Add(-time.Second)); past.Err() == nil {
		t.Errorf("the context of a deadline passed is not done")
	}
	now := time.Now()
	near, cancel := d.until(now, now.Add(time.Nanosecond))
	defer cancel()
	if end, _ := near.Deadline(); !end.Equal(now.Add(time.Nanosecond)) {
		t.Errorf("a deadline a nanosecond away got a context done at %s, want %s", end, now.Add(time.Nanosecond))
	}
	for i := range 1000 {
		d.shared(time.Now().Add(-time.Duration(i) * deadlineResolution))
	}
	if n := len(d.byEnd); n > 5 {
		t.Errorf("%d contexts kept after 1,000 deadlines passed, want the 2 to come and at most the 3 of the last intervals", n)
	}
}
