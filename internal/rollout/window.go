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
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/schedule"
)

// This file holds Plan's rule 6b, the change windows of a stage
// (docs/proposals/windows.md): a stage with windows starts, and starts its
// next batch, only while one of them is open at Snapshot.Now.

// Bounds on a window that the CRD checks too; Go checks them again for
// objects the CRD did not admit (an old CRD, a hand-made object).
const (
	minWindowDuration = time.Minute
	maxWindowDuration = 7 * 24 * time.Hour
)

// errNeverOpens is a schedule that fires in none of the next five years,
// past which the schedule engine gives up.
var errNeverOpens = errors.New("never opens: the schedule fires in none of the next five years")

// WindowState is where a stage's change windows stand at a time.
type WindowState struct {
	// Open is whether one of the windows is open.
	Open bool
	// OpensAt, when no window is open, is when the first one opens next,
	// in its time zone (Location).
	OpensAt time.Time
	// TimeZone is the name of the time zone of the window that opens
	// next ("UTC" when unset).
	TimeZone string
}

// parsedWindow is a ChangeWindow read and checked.
type parsedWindow struct {
	schedule *schedule.Schedule
	duration time.Duration
	zone     string
}

// parseWindow reads a window, or says what is wrong with it, naming the
// field: the schedule's form first, then its zone, then its fields.
func parseWindow(w v1alpha1.ChangeWindow) (parsedWindow, error) {
	s := strings.TrimSpace(w.Schedule)
	if s == "" || len(w.Schedule) > v1alpha1.MaxWindowSchedule {
		return parsedWindow{}, fmt.Errorf("schedule %q: must be 1 to %d bytes", cutMessage(w.Schedule, 64), v1alpha1.MaxWindowSchedule)
	}
	switch err := schedule.Guard(s); {
	case errors.Is(err, schedule.ErrEvery):
		return parsedWindow{}, fmt.Errorf("schedule %q: @every is not a time of day; give a cron schedule", s)
	case err != nil:
		return parsedWindow{}, fmt.Errorf("schedule %q: give the time zone in timeZone, not in the schedule", s)
	}
	loc, err := schedule.Zone(w.TimeZone)
	if err != nil {
		// Local too: to a policy's author it is as unknown as any.
		return parsedWindow{}, fmt.Errorf("timeZone: unknown time zone %q", w.TimeZone)
	}
	sched, err := schedule.Parse(s, loc)
	if err != nil {
		return parsedWindow{}, fmt.Errorf("schedule %q: %w", s, err)
	}
	if d := w.Duration.Duration; d < minWindowDuration || d > maxWindowDuration {
		return parsedWindow{}, fmt.Errorf("duration %s: must be between %s and %s", d, minWindowDuration, maxWindowDuration)
	}
	zone := w.TimeZone
	if zone == "" {
		zone = "UTC"
	}
	return parsedWindow{schedule: sched, duration: w.Duration.Duration, zone: zone}, nil
}

// at says whether the window is open at now, else when it opens next; a
// schedule that never fires is errNeverOpens.
func (p parsedWindow) at(now time.Time) (open bool, next time.Time, err error) {
	open, next = p.schedule.At(now, p.duration)
	if !open && next.IsZero() {
		return false, time.Time{}, errNeverOpens
	}
	return open, next, nil
}

// NextWindow says where a stage's change windows stand at now: open, or
// when the first opens next. An error names the window (1-based) and the
// field that is wrong; a stage without windows is always open. It never
// panics and its time is bounded by the windows' count (MaxWindows are
// checked at most) and five years of calendar each (FuzzNextWindow).
func NextWindow(windows []v1alpha1.ChangeWindow, now time.Time) (WindowState, error) {
	if len(windows) == 0 {
		return WindowState{Open: true}, nil
	}
	if len(windows) > v1alpha1.MaxWindows {
		return WindowState{}, fmt.Errorf("windows: %d windows, more than the %d allowed", len(windows), v1alpha1.MaxWindows)
	}
	var state WindowState
	for i, w := range windows {
		p, err := parseWindow(w)
		if err != nil {
			return WindowState{}, fmt.Errorf("window %d: %w", i+1, err)
		}
		open, next, err := p.at(now)
		if err != nil {
			return WindowState{}, fmt.Errorf("window %d: schedule %q %w", i+1, strings.TrimSpace(w.Schedule), err)
		}
		if open {
			state.Open = true
			continue
		}
		if state.OpensAt.IsZero() || next.Before(state.OpensAt) {
			state.OpensAt, state.TimeZone = next.In(p.schedule.Location()), p.zone
		}
	}
	if state.Open {
		return WindowState{Open: true}, nil
	}
	return state, nil
}

// DescribeOpening says when a window opens, in its time zone and as a
// duration from now: "opens at 2026-11-30 02:00 CET, in 4h12m".
func DescribeOpening(opensAt time.Time, zone string, now time.Time) string {
	if loc, err := schedule.Zone(zone); err == nil {
		opensAt = opensAt.In(loc)
	}
	return fmt.Sprintf("opens at %s, in %s", opensAt.Format("2006-01-02 15:04 MST"), ShortDuration(opensAt.Sub(now)))
}

// ShortDuration writes d to the minute ("4h12m"), to the second under a
// minute, and with days past two ("3d4h").
func ShortDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d >= 48*time.Hour:
		d = d.Round(time.Hour)
		return fmt.Sprintf("%dd%dh", d/(24*time.Hour), d%(24*time.Hour)/time.Hour)
	}
	return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
}

// windowRun is what Plan knows of the stages' windows in one run: each
// stage's state at Snapshot.Now, the first invalid window, and the stage
// a rule held for its window, if any.
type windowRun struct {
	states  []WindowState
	invalid string
	waiting *windowWait
	// startHeld is whether a start into the first stage (rules 7 to 9)
	// waits for its window.
	startHeld bool
}

// windowWait is a stage held for its window.
type windowWait struct {
	stage int
	batch bool
	state WindowState
}

// newWindowRun reads the windows of every stage of the policy at now.
func newWindowRun(policy *v1alpha1.StagedBindingPolicy, now time.Time) *windowRun {
	run := &windowRun{states: make([]WindowState, len(policy.Spec.Stages))}
	for i, stage := range policy.Spec.Stages {
		state, err := NextWindow(stage.Windows, now)
		if err != nil {
			if run.invalid == "" {
				run.invalid = fmt.Sprintf("stage %q: %v", stage.Name, err)
			}
			state = WindowState{Open: true}
		}
		run.states[i] = state
	}
	return run
}

// windows returns the run's windows, read on first use for a snapshot
// that did not go through Plan (a test of one rule).
func (s *Snapshot) windowsRun() *windowRun {
	if s.windows == nil {
		s.windows = newWindowRun(s.Policy, s.Now.Time)
	}
	return s.windows
}

// windowHolds reports whether stage index of the snapshot's policy may
// not start now (batch: its next batch), none of its windows being open,
// and records the wait for windowAfter.
func windowHolds(snap *Snapshot, index int, batch bool) bool {
	run := snap.windowsRun()
	if index < 0 || index >= len(run.states) || run.states[index].Open {
		return false
	}
	if run.waiting == nil { // the first rule that holds a start names it
		run.waiting = &windowWait{stage: index, batch: batch, state: run.states[index]}
	}
	return true
}

// holdsAdvance reports whether a done stage (done), not the last, stays
// the active one because the next stage may not start now. A next stage
// that awaits approval is entered (it places nothing): its approval is
// asked for meanwhile, and its start waits for the window (approvalGate).
func holdsAdvance(snap *Snapshot, active int, done bool) bool {
	stages := snap.Policy.Spec.Stages
	if !done || active+1 >= len(stages) || stages[active+1].Approval == v1alpha1.ApprovalRequired {
		return false
	}
	return windowHolds(snap, active+1, false)
}

// holdsBatch reports whether a stage placed in batches may not start its
// next batch now, and records the wait. A stage that is done (its spec
// made it batched since) only moves the clusters it runs onto
// BindingPolicies of their own: that starts nothing, and is not held.
func holdsBatch(snap *Snapshot, active int) bool {
	record := snap.Policy.Status.StageNamed(snap.Policy.Spec.Stages[active].Name)
	if record != nil && record.Phase == v1alpha1.StageSucceeded {
		return false
	}
	return windowHolds(snap, active, true)
}

// windowGate is Plan's rule 6b where the rollout would start at its first
// stage: a stage's invalid window blocks the policy (InvalidWindow, a
// Warning Event once); a start (rules 7 to 9) into a first stage whose
// windows are all closed waits (startHeld): a rollout not started stays
// so, one that runs goes on with what it runs, through the rules after
// this one, as rules 7 and 8 do not start (as for a wave's hold). A first
// stage that awaits approval is entered and waits at its approval
// instead. It reports whether it has a change to make.
func windowGate(snap *Snapshot) (Action, bool) {
	policy := snap.Policy
	run := snap.windowsRun()
	if run.invalid != "" {
		status := blockedStatus(policy, v1alpha1.ReasonInvalidWindow, run.invalid, snap.Now)
		return statusAction(policy, status, Event{Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonInvalidWindow, Note: run.invalid},
			"a stage's change window is invalid"), true
	}
	if !windowHoldsStart(snap) {
		return Action{}, false
	}
	run.startHeld = true
	if _, started, _ := ActiveStage(policy); started {
		return Action{}, false
	}
	return Action{Type: ActionNone, Why: fmt.Sprintf("stage %q waits for its change window to start", policy.Spec.Stages[0].Name)}, true
}

// windowHoldsStart reports whether rules 7 to 9 would start the first
// stage now and its change windows, all closed, hold it (recording the
// wait); a first stage that awaits approval is entered and waits at its
// approval instead.
func windowHoldsStart(snap *Snapshot) bool {
	policy := snap.Policy
	if snap.windowsRun().invalid != "" {
		return false
	}
	restart := policy.Annotations[v1alpha1.RestartedAtAnnotation]
	_, started, _ := ActiveStage(policy)
	starts := restart != "" && restart != policy.Status.RestartedAt && len(restart) <= v1alpha1.MaxRestartedAtLength ||
		policy.Spec.SpecRevision() != policy.Status.UpdateRevision && !snap.waveHolds || !started
	return starts && policy.Spec.Stages[0].Approval != v1alpha1.ApprovalRequired && windowHolds(snap, 0, false)
}

// startHeld reports whether rule 6b holds a start into the first stage.
func (s *Snapshot) startHeld() bool {
	return s.windows != nil && s.windows.startHeld
}

// windowMessage is the WaitingForWindow condition's message.
func windowMessage(snap *Snapshot, w *windowWait) string {
	what := "start"
	if w.batch {
		what = "start its next batch"
	}
	return fmt.Sprintf("stage %q waits for its change window to %s: the next %s", snap.Policy.Spec.Stages[w.stage].Name, what,
		DescribeOpening(w.state.OpensAt, w.state.TimeZone, snap.Now.Time))
}

// windowAfter is Plan's rule 6b on the run's action: while a stage waits
// for its window (windowWait), status.window names it and when the window
// opens, the WaitingForWindow condition says so (written, with a Normal
// Event, once per opening waited for: its "in 4h12m" is as of then, so
// the status does not change with the clock alone), and the next run is
// due when the window opens at the latest; once no stage waits, both go,
// with the action's status write or one of their own.
func windowAfter(snap *Snapshot, action *Action) {
	policy := snap.Policy
	var w *windowWait
	if snap.windows != nil {
		w = snap.windows.waiting
	}
	previous := meta.FindStatusCondition(policy.Status.Conditions, v1alpha1.ConditionWaitingForWindow)
	if w == nil {
		if previous == nil && policy.Status.Window == nil {
			return
		}
		if action.Status == nil {
			if action.Type != ActionNone {
				return // the next status write removes them
			}
			action.Type, action.Status = ActionUpdateStatus, policy.Status.DeepCopy()
			action.Why = "no stage waits for its change window any more"
		}
		meta.RemoveStatusCondition(&action.Status.Conditions, v1alpha1.ConditionWaitingForWindow)
		action.Status.Window = nil
		return
	}
	action.RequeueAfter = Earliest(action.RequeueAfter, max(w.state.OpensAt.Sub(snap.Now.Time), time.Second))
	want := &v1alpha1.WindowStatus{Stage: policy.Spec.Stages[w.stage].Name, OpensAt: metav1.NewTime(w.state.OpensAt), TimeZone: w.state.TimeZone}
	same := previous != nil && previous.Status == metav1.ConditionTrue && policy.Status.Window != nil &&
		policy.Status.Window.Stage == want.Stage && policy.Status.Window.OpensAt.Equal(&want.OpensAt)
	if action.Status == nil {
		if same && equalWindow(policy.Status.Window, want) {
			return
		}
		if action.Type != ActionNone {
			return // the next status write brings them in line
		}
		action.Type, action.Status = ActionUpdateStatus, policy.Status.DeepCopy()
	}
	action.Status.Window = want
	if action.Status.Phase == "" {
		action.Status.Phase = v1alpha1.RolloutPending
	}
	if same {
		meta.SetStatusCondition(&action.Status.Conditions, *previous)
		return
	}
	msg := windowMessage(snap, w)
	meta.SetStatusCondition(&action.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionWaitingForWindow, Status: metav1.ConditionTrue,
		ObservedGeneration: policy.Generation, LastTransitionTime: snap.Now, Reason: v1alpha1.ReasonWaitingForWindow, Message: msg})
	action.Events = append(action.Events, Event{Type: corev1.EventTypeNormal, Reason: v1alpha1.ReasonWaitingForWindow, Note: msg})
	if action.Why == "" {
		action.Why = msg
	}
}

// equalWindow reports whether two status.window say the same.
func equalWindow(a, b *v1alpha1.WindowStatus) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Stage == b.Stage && a.TimeZone == b.TimeZone && a.OpensAt.Equal(&b.OpensAt)
}

// windowHoldsApproved keeps a stage that may start once approved (or no
// longer needs approval) awaiting, saying it waits for its window, while
// none of its windows is open.
func windowHoldsApproved(snap *Snapshot, active int) (Action, bool) {
	if !windowHolds(snap, active, false) {
		return Action{}, false
	}
	return awaitApproval(snap.Policy, active, "may start, and waits for the stage's change window (status.window says when it opens)", snap.Now), true
}
