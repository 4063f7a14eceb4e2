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

package rollout

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// ---------------------------------------------------------------------------
// Every rule: bounded messages
// ---------------------------------------------------------------------------

// TestPlanBoundsMessages gives every stage of a 32-stage policy a ~4 KB
// condition that does not parse: the status stays within the API server's
// limits (Ready names as many failures as fit and how many more), the Event
// note within 1 KiB, and the same state plans no further change.
func TestPlanBoundsMessages(t *testing.T) {
	engine := newEngine(t)
	filler := strings.Repeat("a", 4000)
	var stages []v1alpha1.Stage
	for i := range 32 {
		stages = append(stages, stageWith(fmt.Sprintf("s%02d", i), deploymentsFilter,
			fmt.Sprintf("obj.results.exists(r, r.name == '%s' &&", filler)))
	}
	tests := []struct {
		name string
		snap *Snapshot
	}{
		{name: "rollout not started", snap: newSnapshot(newPolicy(stages...))},
		{name: "mid-rollout", snap: at("s03", stages...).bound().reporting(deployment, "1").Snapshot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.snap, engine)
			if got.Type != ActionUpdateStatus {
				t.Fatalf("Plan() = %s (%s), want %s", got.Type, got.Why, ActionUpdateStatus)
			}
			if got.Status.Phase != v1alpha1.RolloutBlocked {
				t.Errorf("phase = %s, want Blocked", got.Status.Phase)
			}
			for _, c := range got.Status.Conditions {
				if len(c.Message) > MaxConditionMessage {
					t.Errorf("%s message has %d bytes, more than %d", c.Type, len(c.Message), MaxConditionMessage)
				}
			}
			ready := condition(t, got.Status, v1alpha1.ConditionReady)
			for _, sub := range []string{"32 expressions do not compile: ", `stage "s00": condition "obj.results.exists(`, "more"} {
				if !strings.Contains(ready.Message, sub) {
					t.Errorf("Ready message does not contain %q: %q", sub, ready.Message)
				}
			}
			if !strings.HasSuffix(ready.Message, " more") {
				t.Errorf("Ready message does not end saying how many more: %q", ready.Message)
			}
			if len(got.Events) != 1 || len(got.Events[0].Note) > MaxEventNote || !strings.Contains(got.Events[0].Note, `stage "s00"`) {
				t.Fatalf("events = %+v, want one InvalidExpression note of at most %d bytes naming stage s00", got.Events, MaxEventNote)
			}
			if again := replan(t, tt.snap, engine, got); again.Type != ActionNone {
				t.Errorf("with the status written, Plan() = %s (%s), want None", again.Type, again.Why)
			}
		})
	}
}

// TestPlanBoundsStageMessages: a status Plan writes has no stage record
// message longer than MaxConditionMessage, whatever the status it starts
// from holds (here a record an older writer left 10 KB long).
func TestPlanBoundsStageMessages(t *testing.T) {
	engine := newEngine(t)
	snap := at("test").bound().reporting(deployment, "0").with(func(s *Snapshot) {
		s.Policy.Status.Stages[0].Message = strings.Repeat("m", 10_000)
		s.Policy.Generation++
	}).Snapshot
	got := Plan(snap, engine)
	if got.Type != ActionUpdateStatus {
		t.Fatalf("Plan() = %s (%s), want a status write", got.Type, got.Why)
	}
	for _, r := range got.Status.Stages {
		if len(r.Message) > MaxConditionMessage {
			t.Errorf("stage %s's message has %d bytes, more than %d", r.Name, len(r.Message), MaxConditionMessage)
		}
	}
}

// TestCutMessage checks the cut: within the limit, at a rune boundary, idempotent.
func TestCutMessage(t *testing.T) {
	tests := []struct {
		name  string
		msg   string
		limit int
		want  string
	}{
		{name: "short", msg: "hello", limit: 10, want: "hello"},
		{name: "exactly the limit", msg: strings.Repeat("x", 30), limit: 30, want: strings.Repeat("x", 30)},
		{name: "long", msg: strings.Repeat("x", 100), limit: 40, want: strings.Repeat("x", 21) + "… (100 bytes cut)"},
		{name: "multi-byte runes", msg: strings.Repeat("é", 50), limit: 40, want: strings.Repeat("é", 10) + "… (100 bytes cut)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cutMessage(tt.msg, tt.limit)
			if got != tt.want {
				t.Errorf("cutMessage = %q, want %q", got, tt.want)
			}
			if len(got) > tt.limit {
				t.Errorf("cutMessage returned %d bytes, more than %d", len(got), tt.limit)
			}
			if again := cutMessage(got, tt.limit); again != got {
				t.Errorf("cutting again gives %q, want %q", again, got)
			}
		})
	}
}

// TestCompileFailures checks the list of expressions that do not compile.
func TestCompileFailures(t *testing.T) {
	tests := []struct {
		name     string
		failures []string
		limit    int
		want     string
	}{
		{name: "one", failures: []string{"stage \"a\": bad"}, limit: 100, want: "stage \"a\": bad"},
		{name: "all fit", failures: []string{"a: bad", "b: bad"}, limit: 100, want: "2 expressions do not compile: a: bad; b: bad"},
		{name: "some fit", failures: []string{"a: bad", "b: bad", "c: bad"}, limit: 50, want: "3 expressions do not compile: a: bad; and 2 more"},
		{name: "the first does not fit", failures: []string{strings.Repeat("x", 100), "b: bad"}, limit: 80,
			want: "2 expressions do not compile: " + strings.Repeat("x", 19) + "… (100 bytes cut); and 1 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := compileFailures(tt.failures, tt.limit)
			if got != tt.want {
				t.Errorf("compileFailures = %q, want %q", got, tt.want)
			}
			if len(got) > tt.limit {
				t.Errorf("compileFailures returned %d bytes, more than %d", len(got), tt.limit)
			}
		})
	}
}
