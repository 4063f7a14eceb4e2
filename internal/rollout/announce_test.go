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
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// pendingAt returns n pending Events numbered from first.
func pendingAt(first int64, n int) []v1alpha1.PendingEvent {
	var out []v1alpha1.PendingEvent
	for i := range n {
		out = append(out, v1alpha1.PendingEvent{Sequence: first + int64(i), Type: corev1.EventTypeNormal, Reason: "Old",
			Action: string(ActionUpdateStatus), Note: fmt.Sprintf("old %d", i), Time: now})
	}
	return out
}

// TestPlanAnnouncesThroughTheStatus is Plan's rule 20 (announce).
func TestPlanAnnouncesThroughTheStatus(t *testing.T) {
	engine := newEngine(t)
	suspending := func() *Snapshot {
		snap := at("dev").bound().Snapshot
		snap.Policy.Spec.Suspend = true
		return snap
	}

	t.Run("a status write records its Events, numbered on from the last", func(t *testing.T) {
		snap := suspending()
		snap.Policy.Status.EventSequence = 41
		action := Plan(snap, engine)
		if action.Type != ActionUpdateStatus || len(action.Events) == 0 {
			t.Fatalf("action = %s with %d Events (%s), want a status write with Events", action.Type, len(action.Events), action.Why)
		}
		got := action.Status.PendingEvents
		if len(got) != len(action.Events) {
			t.Fatalf("pending = %+v, want the action's %d Events", got, len(action.Events))
		}
		for i, e := range action.Events {
			p := got[i]
			if p.Sequence != int64(42+i) || p.Type != e.Type || p.Reason != e.Reason || p.Note != e.Note ||
				p.Action != string(ActionUpdateStatus) || !p.Time.Equal(&now) {
				t.Errorf("pending[%d] = %+v, want %+v as #%d at %v", i, p, e, 42+i, now)
			}
		}
		if action.Status.EventSequence != int64(41+len(action.Events)) {
			t.Errorf("eventSequence = %d, want %d", action.Status.EventSequence, 41+len(action.Events))
		}
	})

	t.Run("a status write clears the announced entries and keeps the others", func(t *testing.T) {
		snap := suspending()
		snap.Policy.Status.PendingEvents = pendingAt(1, 3)
		snap.Policy.Status.EventSequence = 3
		snap.Announced = map[int64]bool{1: true, 3: true, 99: true}
		action := Plan(snap, engine)
		if action.Type != ActionUpdateStatus {
			t.Fatalf("action = %s (%s)", action.Type, action.Why)
		}
		var seqs []int64
		for _, p := range action.Status.PendingEvents {
			seqs = append(seqs, p.Sequence)
		}
		if len(seqs) != 1+len(action.Events) || seqs[0] != 2 || seqs[1] != 4 {
			t.Errorf("pending = %v, want #2 then the write's own from #4", seqs)
		}
	})

	t.Run("a run with no change clears what was posted", func(t *testing.T) {
		snap := at("dev").bound().Snapshot
		for range 5 {
			action := Plan(snap, engine)
			if action.Type != ActionUpdateStatus {
				break
			}
			snap.Policy.Status = *action.Status
		}
		if action := Plan(snap, engine); action.Type != ActionNone || len(snap.Policy.Status.PendingEvents) != 0 {
			t.Fatalf("setup: action = %s (%s), pending %v, want none", action.Type, action.Why, snap.Policy.Status.PendingEvents)
		}
		snap.Policy.Status.PendingEvents = pendingAt(5, 2)
		snap.Policy.Status.EventSequence = 6
		if action := Plan(snap, engine); action.Type != ActionNone {
			t.Errorf("nothing posted: action = %s (%s), want none: the entries wait to be posted", action.Type, action.Why)
		}
		snap.Announced = map[int64]bool{5: true}
		action := Plan(snap, engine)
		if action.Type != ActionUpdateStatus || !strings.HasPrefix(action.Why, "announced 1 Events") {
			t.Fatalf("#5 posted: action = %s (%s), want the status write that clears it", action.Type, action.Why)
		}
		if p := action.Status.PendingEvents; len(p) != 1 || p[0].Sequence != 6 || action.Status.EventSequence != 6 || len(action.Events) != 0 {
			t.Errorf("pending = %+v, sequence %d, Events %v; want #6 alone, 6, none", p, action.Status.EventSequence, action.Events)
		}
		rest := *action.Status.DeepCopy()
		rest.PendingEvents = snap.Policy.Status.PendingEvents
		if !equalStatus(&rest, &snap.Policy.Status) {
			t.Errorf("the clearing write changed more than the pending Events")
		}
	})

	t.Run("a change that is not a status write records its Events first", func(t *testing.T) {
		prod := fleetStage(nil)
		snap := batched(prod).Snapshot
		first := Plan(snap, engine)
		if first.Type != ActionUpdateStatus || first.Announces != ActionCreateBindingPolicy || len(first.Events) == 0 {
			t.Fatalf("action = %s announcing %q with %d Events (%s), want the status write recording the create's Events",
				first.Type, first.Announces, len(first.Events), first.Why)
		}
		for _, p := range first.Status.PendingEvents {
			if p.Action != string(ActionCreateBindingPolicy) {
				t.Errorf("pending %+v, want it to name the create it announces", p)
			}
		}
		snap.Policy.Status = *first.Status
		second := Plan(snap, engine)
		if second.Type != ActionCreateBindingPolicy || len(second.Events) != 0 {
			t.Fatalf("then: action = %s with Events %v (%s), want the create, its Events pending already", second.Type, second.Events, second.Why)
		}
		snap.Announced = map[int64]bool{first.Status.EventSequence: true}
		if again := Plan(snap, engine); again.Type != ActionCreateBindingPolicy || len(again.Events) != 0 {
			t.Errorf("posted, not yet made: action = %s (%s), want the create, not the clearing first", again.Type, again.Why)
		}
	})

	t.Run("past the bound the oldest go, counted", func(t *testing.T) {
		snap := suspending()
		snap.Policy.Status.PendingEvents = pendingAt(10, v1alpha1.MaxPendingEvents)
		snap.Policy.Status.EventSequence = int64(9 + v1alpha1.MaxPendingEvents)
		snap.Policy.Status.DroppedEvents = 7
		action := Plan(snap, engine)
		n := len(action.Events)
		got := action.Status.PendingEvents
		if len(got) != v1alpha1.MaxPendingEvents {
			t.Fatalf("%d pending, want %d", len(got), v1alpha1.MaxPendingEvents)
		}
		if got[0].Sequence != int64(10+n) || got[len(got)-1].Sequence != action.Status.EventSequence {
			t.Errorf("pending #%d..#%d, want #%d..#%d: the newest kept", got[0].Sequence, got[len(got)-1].Sequence, 10+n, action.Status.EventSequence)
		}
		if action.Status.DroppedEvents != int64(7+n) {
			t.Errorf("droppedEvents = %d, want %d", action.Status.DroppedEvents, 7+n)
		}
	})

	t.Run("20a: a wanted entry waits for its notifications; one given up is told", func(t *testing.T) {
		for _, tc := range []struct {
			name      string
			announced map[int64]bool
			delivered map[int64]string
			wantKept  []int64
			wantFails []string
		}{
			{name: "posted, not notified: the wanted entries stay", announced: map[int64]bool{1: true, 2: true, 3: true},
				wantKept: []int64{1, 3}},
			{name: "notified, not posted: they stay", delivered: map[int64]string{1: "", 2: "", 3: ""},
				wantKept: []int64{1, 2, 3}},
			{name: "posted and delivered: cleared, no warning", announced: map[int64]bool{1: true, 2: true, 3: true},
				delivered: map[int64]string{1: "", 3: ""}},
			{name: "posted and given up: cleared with a NotificationFailed Warning", announced: map[int64]bool{1: true, 2: true, 3: true},
				delivered: map[int64]string{1: "notification to chat given up: HTTP 401", 3: ""}, wantFails: []string{"StageStarted Event #1: notification to chat given up: HTTP 401"}},
			{name: "given up, not posted: no warning yet", announced: map[int64]bool{3: true},
				delivered: map[int64]string{1: "given up", 3: ""}, wantKept: []int64{1, 2}},
		} {
			for _, change := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s, with a change %v", tc.name, change), func(t *testing.T) {
					snap := at("dev").bound().Snapshot
					if change {
						snap = suspending()
					} else {
						for range 5 {
							action := Plan(snap, engine)
							if action.Type != ActionUpdateStatus {
								break
							}
							snap.Policy.Status = *action.Status
						}
					}
					snap.Policy.Spec.Notifications = []v1alpha1.Notification{{Destination: "chat",
						Events: []v1alpha1.NotificationEvent{v1alpha1.NotifyStageStarted, v1alpha1.NotifyFailed}}}
					pending := pendingAt(1, 3)
					pending[0].Reason, pending[2].Reason = v1alpha1.EventReasonStageStarted, v1alpha1.EventReasonClusterFailed
					snap.Policy.Status.PendingEvents, snap.Policy.Status.EventSequence = pending, 3
					snap.Announced, snap.Delivered = tc.announced, tc.delivered
					action := Plan(snap, engine)
					if action.Type != ActionUpdateStatus {
						if !change && len(tc.wantKept) == 3 && action.Type == ActionNone {
							return
						}
						t.Fatalf("action = %s (%s), want a status write", action.Type, action.Why)
					}
					var kept []int64
					var fails []string
					for _, p := range action.Status.PendingEvents {
						if p.Sequence <= 3 {
							kept = append(kept, p.Sequence)
						}
						if p.Reason == v1alpha1.EventReasonNotificationFailed {
							if p.Type != corev1.EventTypeWarning || p.Sequence <= 3 {
								t.Errorf("pending %+v, want a new Warning", p)
							}
							if Notified(snap.Policy, p.Reason) {
								t.Errorf("a subscription wants NotificationFailed: it would never be cleared")
							}
							fails = append(fails, p.Note)
						}
					}
					if !slices.Equal(kept, tc.wantKept) {
						t.Errorf("kept %v, want %v", kept, tc.wantKept)
					}
					if !slices.Equal(fails, tc.wantFails) {
						t.Errorf("NotificationFailed notes %q, want %q", fails, tc.wantFails)
					}
				})
			}
		}
	})

	t.Run("a note is cut to the Event note limit", func(t *testing.T) {
		var after v1alpha1.StagedBindingPolicyStatus
		record(&v1alpha1.StagedBindingPolicyStatus{}, &after, nil, "UpdateStatus",
			[]Event{{Type: corev1.EventTypeNormal, Reason: "Long", Note: strings.Repeat("é", MaxEventNote)}}, now)
		if n := len(after.PendingEvents[0].Note); n > MaxEventNote {
			t.Errorf("note of %d bytes, want at most %d", n, MaxEventNote)
		}
	})
}

// equalStatus compares two statuses as the API server would store them.
func equalStatus(a, b *v1alpha1.StagedBindingPolicyStatus) bool {
	return equality.Semantic.DeepEqual(a, b)
}
