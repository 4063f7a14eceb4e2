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
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/schedule"
)

// ---------------------------------------------------------------------------
// Rule 6b: change windows (docs/proposals/windows.md)
// ---------------------------------------------------------------------------

// Now is 2026-03-01 12:00 UTC: openNow is open then (11:00 to 13:00),
// closedNow opens at 14:00.
var (
	openNow   = v1alpha1.ChangeWindow{Schedule: "0 11 * * *", Duration: metav1.Duration{Duration: 2 * time.Hour}}
	closedNow = v1alpha1.ChangeWindow{Schedule: "0 14 * * *", Duration: metav1.Duration{Duration: time.Hour}}
)

// windowed is stage name with the given windows.
func windowed(name string, windows ...v1alpha1.ChangeWindow) v1alpha1.Stage {
	s := stage(name)
	s.Windows = windows
	return s
}

// waitingFor checks that the action writes the WaitingForWindow condition
// for stage, with a message containing want, status.window naming stage,
// and a requeue at the opening.
func waitingFor(t *testing.T, action Action, stage, want string, requeue time.Duration) {
	t.Helper()
	if action.Type != ActionUpdateStatus {
		t.Fatalf("action = %s (%s), want UpdateStatus", action.Type, action.Why)
	}
	c := condition(t, action.Status, v1alpha1.ConditionWaitingForWindow)
	if c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonWaitingForWindow || !strings.Contains(c.Message, want) ||
		!strings.Contains(c.Message, `stage "`+stage+`"`) {
		t.Errorf("WaitingForWindow = %s %s %q, want True naming stage %q and %q", c.Status, c.Reason, c.Message, stage, want)
	}
	if w := action.Status.Window; w == nil || w.Stage != stage {
		t.Errorf("status.window = %+v, want stage %s", w, stage)
	}
	if action.RequeueAfter != requeue {
		t.Errorf("requeue after %s, want %s", action.RequeueAfter, requeue)
	}
	if got := eventKeys(action.Events); !slices.Contains(got, "Normal/"+v1alpha1.ReasonWaitingForWindow) {
		t.Errorf("events = %v, want a WaitingForWindow", got)
	}
}

// appliedAt is the snapshot with the action's status written, at.
func appliedAt(snap *Snapshot, action Action, at time.Time) *Snapshot {
	next := *snap
	next.Policy = snap.Policy.DeepCopy()
	next.Policy.Status = *action.Status.DeepCopy()
	next.Now = metav1.NewTime(at)
	if next.Policy.Status.ActiveStage != snap.Policy.Status.ActiveStage {
		resync(&next) // the reconciler reads by the new active stage's name
	}
	return &next
}

func TestPlanWindowGatesTheFirstStage(t *testing.T) {
	engine := newEngine(t)
	notStartedWith := func(windows ...v1alpha1.ChangeWindow) *Snapshot {
		return newSnapshot(newPolicy(windowed("dev", windows...), stage("prod")))
	}

	t.Run("open: the rollout starts", func(t *testing.T) {
		action := planThrough(notStartedWith(closedNow, openNow), engine)
		if action.Type != ActionUpdateStatus || action.Status.ActiveStage != "dev" {
			t.Fatalf("action = %s (%s), want dev started", action.Type, action.Why)
		}
		if meta.FindStatusCondition(action.Status.Conditions, v1alpha1.ConditionWaitingForWindow) != nil || action.Status.Window != nil {
			t.Errorf("an open window leaves WaitingForWindow or status.window: %+v", action.Status)
		}
	})

	t.Run("closed: the rollout waits, saying when the window opens", func(t *testing.T) {
		snap := notStartedWith(closedNow)
		action := planThrough(snap, engine)
		waitingFor(t, action, "dev", "opens at 2026-03-01 14:00 UTC, in 2h0m", 2*time.Hour)
		if action.Status.ActiveStage != "" || action.Status.Phase != v1alpha1.RolloutPending {
			t.Errorf("active stage %q, phase %s: want none started, Pending", action.Status.ActiveStage, action.Status.Phase)
		}
		if !action.Status.Window.OpensAt.Equal(&metav1.Time{Time: time.Date(2026, 3, 1, 14, 0, 0, 0, time.UTC)}) {
			t.Errorf("status.window.opensAt = %s", action.Status.Window.OpensAt)
		}

		// A minute later nothing is written again (the clock alone
		// changes no status) and the run is still due at the opening.
		later := planThrough(appliedAt(snap, action, now.Add(time.Minute)), engine)
		if later.Type != ActionNone || len(later.Events) != 0 || later.RequeueAfter != 119*time.Minute {
			t.Errorf("a minute later: %s %v requeue %s, want None, no Event, requeue 1h59m", later.Type, eventKeys(later.Events), later.RequeueAfter)
		}
	})

	t.Run("opening during a run: the stage waits, then starts", func(t *testing.T) {
		snap := notStartedWith(closedNow)
		waiting := planThrough(snap, engine)
		started := planThrough(appliedAt(snap, waiting, now.Add(2*time.Hour+30*time.Second)), engine)
		if started.Type != ActionUpdateStatus || started.Status.ActiveStage != "dev" {
			t.Fatalf("in the window: action = %s (%s), want dev started", started.Type, started.Why)
		}
		if meta.FindStatusCondition(started.Status.Conditions, v1alpha1.ConditionWaitingForWindow) != nil || started.Status.Window != nil {
			t.Errorf("the start keeps WaitingForWindow or status.window: %+v", started.Status)
		}
	})

	t.Run("a new revision waits for the first stage's window; the rollout keeps what it runs", func(t *testing.T) {
		f := completedAt("v2")
		f.Policy.Spec.Stages[0].Windows = []v1alpha1.ChangeWindow{closedNow}
		action := planThrough(f.Snapshot, engine)
		waitingFor(t, action, "dev", "in 2h0m", 2*time.Hour)
		if action.Status.UpdateRevision != "v1" || action.Status.Phase != v1alpha1.RolloutCompleted {
			t.Errorf("update revision %s, phase %s: want v1 kept, Completed", action.Status.UpdateRevision, action.Status.Phase)
		}
	})

	t.Run("a first stage awaiting approval asks for it; once approved it waits for its window", func(t *testing.T) {
		dev := windowed("dev", closedNow)
		dev.Approval = v1alpha1.ApprovalRequired
		action := planThrough(newSnapshot(newPolicy(dev, stage("prod"))), engine)
		if action.Type != ActionUpdateStatus || action.Status.StageNamed("dev").Phase != v1alpha1.StageAwaitingApproval {
			t.Fatalf("action = %s (%s), want dev entered, awaiting approval", action.Type, action.Why)
		}
		if action.Status.Window != nil {
			t.Errorf("status.window = %+v before the stage may start", action.Status.Window)
		}
	})
}

func TestPlanWindowGatesTheNextStage(t *testing.T) {
	engine := newEngine(t)
	doneDev := func(testWindows ...v1alpha1.ChangeWindow) fixture {
		return at("dev", stage("dev"), windowed("test", testWindows...), stage("prod")).bound().reporting(deployment, "1")
	}

	t.Run("open: the done stage hands over", func(t *testing.T) {
		action := planThrough(doneDev(openNow).Snapshot, engine)
		if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.test" {
			t.Fatalf("action = %s (%s), want the handover to test", action.Type, action.Why)
		}
	})

	t.Run("closed: the done stage stays active, nothing is placed", func(t *testing.T) {
		snap := doneDev(closedNow).Snapshot
		action := planThrough(snap, engine)
		waitingFor(t, action, "test", "2026-03-01 14:00 UTC, in 2h0m", 2*time.Hour)
		if action.Status.ActiveStage != "dev" || action.BindingPolicy != nil {
			t.Errorf("active stage %s, BindingPolicy %v: want dev still active, nothing placed", action.Status.ActiveStage, action.BindingPolicy)
		}
		// The window opens: the handover goes.
		open := planThrough(appliedAt(snap, action, now.Add(2*time.Hour)), engine)
		if open.Type != ActionCreateBindingPolicy || open.BindingPolicy.Name != "web.stage.test" {
			t.Fatalf("at the opening: action = %s (%s), want the handover to test", open.Type, open.Why)
		}
	})

	t.Run("a started stage whose window closed goes on to done", func(t *testing.T) {
		f := at("test", stage("dev"), windowed("test", closedNow), stage("prod")).bound().reporting(deployment, "1")
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod" {
			t.Fatalf("action = %s (%s), want test done and handed over to prod", action.Type, action.Why)
		}
	})

	t.Run("a next stage awaiting approval is asked for it; approved, it waits for its window", func(t *testing.T) {
		test := windowed("test", closedNow)
		test.Approval = v1alpha1.ApprovalRequired
		f := at("dev", stage("dev"), test, stage("prod")).bound().reporting(deployment, "1")
		if action := planThrough(f.Snapshot, engine); action.Type != ActionCreateStageApproval {
			t.Fatalf("action = %s (%s), want test's StageApproval created: its window does not hold the request", action.Type, action.Why)
		}

		waiting := awaitingAt()
		waiting.Policy.Spec.Stages[1].Windows = []v1alpha1.ChangeWindow{closedNow}
		waiting = waiting.with(withApprovals(approvedBy("test", "alice")))
		action := planThrough(waiting.Snapshot, engine)
		waitingFor(t, action, "test", "opens at 2026-03-01 14:00 UTC", 2*time.Hour)
		if r := action.Status.StageNamed("test"); r.Phase != v1alpha1.StageAwaitingApproval || r.StartTime != nil ||
			!strings.Contains(r.Message, "change window") {
			t.Errorf("test's record = %s start %v %q, want it awaiting its window, not started", r.Phase, r.StartTime, r.Message)
		}
		started := planThrough(appliedAt(waiting.Snapshot, action, now.Add(2*time.Hour)), engine)
		if started.Type != ActionUpdateStatus || started.Status.StageNamed("test").Phase != v1alpha1.StageActive {
			t.Fatalf("at the opening: action = %s (%s), want test started", started.Type, started.Why)
		}
	})
}

func TestPlanWindowTimeZones(t *testing.T) {
	engine := newEngine(t)
	// Berlin goes from CET (+1) to CEST (+2) at 02:00 on 2026-03-29: a
	// window at 09:00 Berlin time opens at 08:00 UTC on the 28th, 07:00
	// UTC on the 29th.
	berlin := v1alpha1.ChangeWindow{Schedule: "0 9 * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Europe/Berlin"}
	tests := []struct {
		name    string
		at      time.Time
		want    string
		requeue time.Duration
	}{
		{name: "before the change", at: time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC),
			want: "opens at 2026-03-28 09:00 CET, in 20h0m", requeue: 20 * time.Hour},
		{name: "across the change", at: time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC),
			want: "opens at 2026-03-29 09:00 CEST, in 19h0m", requeue: 19 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := newSnapshot(newPolicy(windowed("dev", berlin), stage("prod")))
			snap.Now = metav1.NewTime(tt.at)
			waitingFor(t, Plan(snap, engine), "dev", tt.want, tt.requeue)
		})
	}
	t.Run("open at 09:30 Berlin time", func(t *testing.T) {
		snap := newSnapshot(newPolicy(windowed("dev", berlin), stage("prod")))
		snap.Now = metav1.NewTime(time.Date(2026, 3, 29, 7, 30, 0, 0, time.UTC))
		if action := planThrough(snap, engine); action.Type != ActionUpdateStatus || action.Status.ActiveStage != "dev" {
			t.Fatalf("action = %s (%s), want dev started", action.Type, action.Why)
		}
	})
	t.Run("a weekly window several days ahead", func(t *testing.T) {
		weekly := v1alpha1.ChangeWindow{Schedule: "0 2 * * 3", Duration: metav1.Duration{Duration: 4 * time.Hour}, TimeZone: "America/New_York"}
		snap := newSnapshot(newPolicy(windowed("dev", weekly), stage("prod")))
		// Sunday 12:00 UTC; Wednesday 02:00 EST is 07:00 UTC: 2d19h.
		waitingFor(t, Plan(snap, engine), "dev", "opens at 2026-03-04 02:00 EST, in 2d19h", 67*time.Hour)
	})
}

func TestPlanInvalidWindowBlocks(t *testing.T) {
	engine := newEngine(t)
	tests := []struct {
		name   string
		window v1alpha1.ChangeWindow
		want   string
	}{
		{name: "a cron that does not parse", window: v1alpha1.ChangeWindow{Schedule: "61 * * * *", Duration: metav1.Duration{Duration: time.Hour}},
			want: `stage "prod": window 2: schedule "61 * * * *"`},
		{name: "a seconds field", window: v1alpha1.ChangeWindow{Schedule: "0 0 14 * * *", Duration: metav1.Duration{Duration: time.Hour}},
			want: `window 2: schedule "0 0 14 * * *"`},
		{name: "@every", window: v1alpha1.ChangeWindow{Schedule: "@every 1h", Duration: metav1.Duration{Duration: time.Hour}},
			want: "@every is not a time of day"},
		{name: "a TZ prefix", window: v1alpha1.ChangeWindow{Schedule: "CRON_TZ=Asia/Tokyo 0 1 * * *", Duration: metav1.Duration{Duration: time.Hour}},
			want: "give the time zone in timeZone"},
		{name: "an unknown time zone", window: v1alpha1.ChangeWindow{Schedule: "0 1 * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Mars/Olympus"},
			want: `window 2: timeZone: unknown time zone "Mars/Olympus"`},
		{name: "the stager's own zone", window: v1alpha1.ChangeWindow{Schedule: "0 1 * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Local"},
			want: `unknown time zone "Local"`},
		{name: "a path for a zone", window: v1alpha1.ChangeWindow{Schedule: "0 1 * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "../../etc/passwd"},
			want: "unknown time zone"},
		{name: "a schedule that never fires", window: v1alpha1.ChangeWindow{Schedule: "0 0 30 2 *", Duration: metav1.Duration{Duration: time.Hour}},
			want: `window 2: schedule "0 0 30 2 *" never opens`},
		{name: "a window shorter than a minute", window: v1alpha1.ChangeWindow{Schedule: "0 1 * * *", Duration: metav1.Duration{Duration: 30 * time.Second}},
			want: "duration 30s: must be between 1m0s and 168h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The bad window is prod's, which is not reached: the policy is
			// blocked all the same, before anything starts.
			snap := newSnapshot(newPolicy(stage("dev"), windowed("prod", openNow, tt.window)))
			action := planThrough(snap, engine)
			if action.Type != ActionUpdateStatus || action.Status.ActiveStage != "" {
				t.Fatalf("action = %s (%s), want the status blocked, nothing started", action.Type, action.Why)
			}
			ready := condition(t, action.Status, v1alpha1.ConditionReady)
			if ready.Reason != v1alpha1.ReasonInvalidWindow || !strings.Contains(ready.Message, tt.want) {
				t.Errorf("Ready = %s %q, want InvalidWindow with %q", ready.Reason, ready.Message, tt.want)
			}
			if got := eventKeys(action.Events); !slices.Equal(got, []string{"Warning/" + v1alpha1.ReasonInvalidWindow}) {
				t.Errorf("events = %v, want one InvalidWindow Warning", got)
			}
			// Once written, nothing more: no second Event, no spin.
			if again := planThrough(appliedAt(snap, action, now.Add(time.Minute)), engine); again.Type != ActionNone || len(again.Events) != 0 {
				t.Errorf("a minute later: %s %v, want None and no Event", again.Type, eventKeys(again.Events))
			}
		})
	}
	t.Run("too many windows", func(t *testing.T) {
		many := make([]v1alpha1.ChangeWindow, v1alpha1.MaxWindows+1)
		for i := range many {
			many[i] = openNow
		}
		action := planThrough(newSnapshot(newPolicy(windowed("dev", many...))), engine)
		if ready := condition(t, action.Status, v1alpha1.ConditionReady); ready.Reason != v1alpha1.ReasonInvalidWindow ||
			!strings.Contains(ready.Message, "9 windows, more than the 8 allowed") {
			t.Errorf("Ready = %s %q", ready.Reason, ready.Message)
		}
	})
}

func TestPlanWindowGatesBatches(t *testing.T) {
	engine := newEngine(t)
	prod := fleetStage(func(s *v1alpha1.Stage) { s.Windows = []v1alpha1.ChangeWindow{closedNow} })

	t.Run("the next batch waits for the window", func(t *testing.T) {
		f := batched(prod).on("store-a", minutesAgo(2), "1").on("store-b", minutesAgo(2), "1")
		action := planThrough(f.Snapshot, engine)
		if action.BindingPolicy != nil {
			t.Fatalf("placed %s with the window closed", action.BindingPolicy.Name)
		}
		waitingFor(t, action, "prod", "to start its next batch: the next opens at 2026-03-01 14:00 UTC", 2*time.Hour)
		// At the opening, batch 2 starts.
		open := planThrough(appliedAt(f.Snapshot, action, now.Add(2*time.Hour)), engine)
		if open.Type != ActionCreateBindingPolicy || open.BindingPolicy.Name != "web.stage.prod.on.store-c" {
			t.Fatalf("at the opening: action = %s (%s), want store-c placed", open.Type, open.Why)
		}
	})

	// A batch done is not the stage done: while the window holds the
	// next batch, the stage neither completes nor hands over.
	notDone := func(t *testing.T, action Action) {
		t.Helper()
		if action.Type != ActionUpdateStatus {
			t.Fatalf("action = %s (%s), want UpdateStatus", action.Type, action.Why)
		}
		if r := action.Status.StageNamed("prod"); r == nil || r.Phase != v1alpha1.StageActive || action.Status.ActiveStage != "prod" ||
			action.Status.Phase == v1alpha1.RolloutCompleted {
			t.Fatalf("%s: rollout %s, active %q, prod %+v; want prod active, its next batch unplaced", action.Why, action.Status.Phase,
				action.Status.ActiveStage, r)
		}
	}
	t.Run("the final stage does not complete on its first batch", func(t *testing.T) {
		notDone(t, Plan(batched(prod).on("store-a", minutesAgo(2), "1").on("store-b", minutesAgo(2), "1").Snapshot, engine))
	})
	t.Run("a stage before the last does not advance on its first batch", func(t *testing.T) {
		f := batched(prod)
		f.Policy.Spec.Stages = append(f.Policy.Spec.Stages, stage("edge"))
		f = f.onStage(prod, "store-a", minutesAgo(2), "1").onStage(prod, "store-b", minutesAgo(2), "1")
		notDone(t, Plan(f.Snapshot, engine))
	})

	t.Run("a batch that started fills", func(t *testing.T) {
		action := planThrough(batched(prod).on("store-a", now, "").Snapshot, engine)
		if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.on.store-b" {
			t.Fatalf("action = %s (%s), want store-b placed: batch 1 started", action.Type, action.Why)
		}
	})

	t.Run("a done stage made batched since moves its clusters all the same", func(t *testing.T) {
		f := batched(prod).on("store-a", minutesAgo(2), "1").on("store-b", minutesAgo(2), "1")
		f.Policy.Status.StageNamed("prod").Phase = v1alpha1.StageSucceeded
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.on.store-c" {
			t.Fatalf("action = %s (%s), want store-c placed: the stage is done, nothing starts", action.Type, action.Why)
		}
	})

	t.Run("the first batch waits too", func(t *testing.T) {
		action := planThrough(batched(prod).Snapshot, engine)
		if action.BindingPolicy != nil {
			t.Fatalf("placed %s with the window closed", action.BindingPolicy.Name)
		}
	})
}

func TestPlanWindowNeverHoldsAbortOrSuspension(t *testing.T) {
	engine := newEngine(t)

	t.Run("abort is not held", func(t *testing.T) {
		f := revisioned(v1alpha1.PlacementAccumulate, "test", "v1", "v2", map[string]string{"dev": "v2", "test": "v1", "prod": "v1"}).bound()
		for i := range f.Policy.Spec.Stages {
			f.Policy.Spec.Stages[i].Windows = []v1alpha1.ChangeWindow{closedNow}
		}
		f.Policy.Spec.Abort = true
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionUpdateStatus || action.Status.Phase != v1alpha1.RolloutAborted {
			t.Fatalf("action = %s (%s), want the abort recorded", action.Type, action.Why)
		}
		if action.Status.Window != nil || meta.FindStatusCondition(action.Status.Conditions, v1alpha1.ConditionWaitingForWindow) != nil {
			t.Errorf("an abort waits for a window: %+v", action.Status)
		}
	})

	t.Run("a suspended rollout says Suspended, not WaitingForWindow", func(t *testing.T) {
		p := newPolicy(windowed("dev", closedNow), stage("prod"))
		p.Spec.Suspend = true
		action := planThrough(newSnapshot(p), engine)
		if action.Type != ActionUpdateStatus || action.Status.Phase != v1alpha1.RolloutSuspended {
			t.Fatalf("action = %s (%s), want Suspended", action.Type, action.Why)
		}
		if action.Status.Window != nil {
			t.Errorf("status.window = %+v while suspended", action.Status.Window)
		}
	})

	t.Run("a left WaitingForWindow goes once no stage waits", func(t *testing.T) {
		snap := newSnapshot(newPolicy(windowed("dev", closedNow), stage("prod")))
		waiting := planThrough(snap, engine)
		next := appliedAt(snap, waiting, now.Add(time.Minute))
		next.Policy.Spec.Stages[0].Windows = nil // the author drops the window
		action := planThrough(next, engine)
		if action.Type != ActionUpdateStatus || action.Status.Window != nil ||
			meta.FindStatusCondition(action.Status.Conditions, v1alpha1.ConditionWaitingForWindow) != nil {
			t.Fatalf("action = %s (%s), status.window %+v: want both gone", action.Type, action.Why, action.Status)
		}
	})
}

func TestNextWindow(t *testing.T) {
	at := time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		windows []v1alpha1.ChangeWindow
		open    bool
		opens   string
		err     string
	}{
		{name: "none is always open", open: true},
		{name: "a descriptor", windows: []v1alpha1.ChangeWindow{{Schedule: "@daily", Duration: metav1.Duration{Duration: time.Hour}}},
			opens: "2026-11-30 00:00 UTC"},
		{name: "the earliest of two", windows: []v1alpha1.ChangeWindow{
			{Schedule: "0 9 * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Asia/Tokyo"},
			{Schedule: "0 2 * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Europe/Paris"}},
			opens: "2026-11-30 09:00 JST"}, // 00:00 UTC, an hour before Paris
		{name: "open at its very start", windows: []v1alpha1.ChangeWindow{{Schedule: "0 22 * * *", Duration: metav1.Duration{Duration: time.Minute}}}, open: true},
		{name: "closed at its very end", windows: []v1alpha1.ChangeWindow{{Schedule: "0 21 * * *", Duration: metav1.Duration{Duration: time.Hour}}},
			opens: "2026-11-30 21:00 UTC"},
		{name: "a leap day", windows: []v1alpha1.ChangeWindow{{Schedule: "0 0 29 2 *", Duration: metav1.Duration{Duration: time.Hour}}},
			opens: "2028-02-29 00:00 UTC"},
		{name: "never", windows: []v1alpha1.ChangeWindow{{Schedule: "0 0 31 4 *", Duration: metav1.Duration{Duration: time.Hour}}},
			err: "never opens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NextWindow(tt.windows, at)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Open != tt.open {
				t.Fatalf("open = %v, want %v", got.Open, tt.open)
			}
			if !tt.open {
				if s := got.OpensAt.Format("2006-01-02 15:04 MST"); s != tt.opens {
					t.Errorf("opens at %s, want %s", s, tt.opens)
				}
			}
		})
	}
}

// TestWindowZoneBoundIsTheEngines: Go checks a window's zone against the
// CRD's bound again through the schedule engine's, so the two are one.
func TestWindowZoneBoundIsTheEngines(t *testing.T) {
	if v1alpha1.MaxWindowTimeZone != schedule.MaxZoneName {
		t.Errorf("MaxWindowTimeZone %d, schedule.MaxZoneName %d: a zone the CRD admits is refused, or one it refuses looked up",
			v1alpha1.MaxWindowTimeZone, schedule.MaxZoneName)
	}
}
