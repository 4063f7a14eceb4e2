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

package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// TestWindowOpensDuringRun runs a stager on a fake clock, in a space of
// its own, with a policy whose first stage may start only from 03:00 to
// 04:00 Berlin time: before, the rollout waits (WaitingForWindow, the
// opening in status.window, nothing placed); the clock moves into the
// window and the stage starts.
func TestWindowOpensDuringRun(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 30, 1, 0, 0, 0, berlin))
	wds := newSpace(t, "wds-windows", true)
	opts := singleOptions()
	opts.Clock = clk
	stager, err := startStagerWith(suite.ctx, wds.Space, opts, suite.logger)
	if err != nil {
		t.Fatalf("starting the stager: %v", err)
	}
	t.Cleanup(stager.stop)

	const name = "nightly"
	createWorkload(t, wds, name)
	p := newPolicy(name, name)
	p.Spec.Stages[0].Windows = []v1alpha1.ChangeWindow{{Schedule: "0 3 * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Europe/Berlin"}}
	create(t, wds, p)

	waiting := policies(wds).WaitForCondition(t, name, v1alpha1.ConditionWaitingForWindow, metav1.ConditionTrue, v1alpha1.ReasonWaitingForWindow)
	c := windowCondition(waiting, v1alpha1.ConditionWaitingForWindow)
	if !strings.Contains(c.Message, `stage "dev" waits for its change window to start: the next opens at 2026-11-30 03:00 CET, in 2h0m`) {
		t.Fatalf("WaitingForWindow message %q", c.Message)
	}
	opensAt := time.Date(2026, 11, 30, 3, 0, 0, 0, berlin)
	if w := waiting.Status.Window; w == nil || w.Stage != "dev" || !w.OpensAt.Time.Equal(opensAt) || w.TimeZone != "Europe/Berlin" {
		t.Fatalf("status.window = %+v, want dev opening at %s", w, opensAt)
	}
	if waiting.Status.ActiveStage != "" || waiting.Status.Phase != v1alpha1.RolloutPending {
		t.Fatalf("active stage %q, phase %s while waiting: want none, Pending", waiting.Status.ActiveStage, waiting.Status.Phase)
	}
	environment.Consistently(t, time.Second, "nothing placed before the window opens", func() error {
		if bps := bindingPolicies(t, wds, name); len(bps) != 0 {
			return fmt.Errorf("BindingPolicies %v", bps)
		}
		return nil
	})

	// The window opens. The stager's requeue is due in two hours of real
	// time: a change of the policy makes it look now, as the requeue
	// would at the opening.
	clk.SetTime(opensAt.Add(30 * time.Second))
	updateObject(t, wds, name, func(p *v1alpha1.StagedBindingPolicy) {
		p.Annotations = map[string]string{"example.com/nudge": "1"}
	})
	started := policies(wds).WaitForActiveStage(t, name, "dev")
	if started.Status.Window != nil || windowCondition(started, v1alpha1.ConditionWaitingForWindow) != nil {
		t.Fatalf("the started rollout keeps status.window %+v or WaitingForWindow", started.Status.Window)
	}
	waitForBindingPolicies(t, wds, name, "dev")
}

// TestCRDRefusesInvalidWindows checks what the CRD refuses of a stage's
// windows; what only the stager can check (a cron that does not parse,
// an unknown zone) blocks the policy instead (TestPlanInvalidWindowBlocks).
func TestCRDRefusesInvalidWindows(t *testing.T) {
	s := suite.wds1
	hour := metav1.Duration{Duration: time.Hour}
	tests := []struct {
		name    string
		windows []v1alpha1.ChangeWindow
		want    string
	}{
		{name: "shorter than a minute", windows: []v1alpha1.ChangeWindow{{Schedule: "0 3 * * *", Duration: metav1.Duration{Duration: 30 * time.Second}}},
			want: "duration must be between 1m and 168h"},
		{name: "longer than a week", windows: []v1alpha1.ChangeWindow{{Schedule: "0 3 * * *", Duration: metav1.Duration{Duration: 169 * time.Hour}}},
			want: "duration must be between 1m and 168h"},
		{name: "more than 8", windows: func() []v1alpha1.ChangeWindow {
			many := make([]v1alpha1.ChangeWindow, 9)
			for i := range many {
				many[i] = v1alpha1.ChangeWindow{Schedule: "0 3 * * *", Duration: hour}
			}
			return many
		}(), want: "spec.stages[0].windows"},
		{name: "no schedule", windows: []v1alpha1.ChangeWindow{{Duration: hour}}, want: "spec.stages[0].windows[0].schedule"},
		{name: "a schedule too long", windows: []v1alpha1.ChangeWindow{{Schedule: strings.Repeat("1,", 70) + "1 * * * *", Duration: hour}},
			want: "spec.stages[0].windows[0].schedule"},
		{name: "a path for a zone", windows: []v1alpha1.ChangeWindow{{Schedule: "0 3 * * *", Duration: hour, TimeZone: "../../etc/passwd"}},
			want: "spec.stages[0].windows[0].timeZone"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPolicy(fmt.Sprintf("bad-window-%d", i), "none")
			p.Spec.Stages[0].Windows = tt.windows
			err := s.Client.Create(suite.ctx, p)
			if err == nil {
				t.Fatalf("the API server accepted an invalid window")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

// windowCondition returns the policy's condition of a type, or nil.
func windowCondition(p *v1alpha1.StagedBindingPolicy, conditionType string) *metav1.Condition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == conditionType {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
