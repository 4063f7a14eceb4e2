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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// announce is Plan's rule 20: every Event goes through
// status.pendingEvents, written by the same status write as the change it
// announces, so that a stager killed after the write posts it on its next
// run (docs/proposals/announcements.md):
//   - a status write records its Events, after dropping the pending ones
//     the snapshot says were posted (Snapshot.Announced);
//   - a change that is not a status write (a BindingPolicy created or
//     updated for a batch's start) and has Events not all pending is
//     preceded by a status write that records them: the change itself is
//     planned again on the next step, finds them pending and goes with no
//     Events of its own;
//   - a run with no change but posted entries pending clears them
//     ("announced N Events");
//   - past MaxPendingEvents the oldest entries are dropped and counted
//     (status.droppedEvents);
//   - (20a) an entry a subscription of spec.notifications wants is
//     cleared only once its notifications are settled too
//     (Snapshot.Delivered); one given up on is cleared with a
//     NotificationFailed Warning Event, recorded by the same write, which
//     no subscription wants.
//
// Only clearable entries are cleared, so an entry is pending until the
// reconciler has posted it and, if wanted, notified it; a crash between
// the post and the clear posts it twice, never zero times.
func announce(snap *Snapshot, action *Action) {
	before := &snap.Policy.Status
	clear := clearable(snap)
	switch action.Type {
	case ActionUpdateStatus:
		change := action.Type
		if action.Announces != "" {
			change = action.Announces
		}
		action.Events = append(action.Events, notificationsFailed(snap, clear)...)
		record(before, action.Status, clear, string(change), action.Events, snap.Now)
	case ActionNone:
		if !anyAnnounced(before.PendingEvents, clear) {
			return
		}
		status := before.DeepCopy()
		events := notificationsFailed(snap, clear)
		record(before, status, clear, string(ActionUpdateStatus), events, snap.Now)
		n := len(before.PendingEvents) + len(events) - len(status.PendingEvents)
		*action = Action{Type: ActionUpdateStatus, Status: status, Events: events, RequeueAfter: action.RequeueAfter,
			Why: fmt.Sprintf("announced %d Events (%s)", n, action.Why)}
	default:
		// announceFirst left only Events already pending.
		action.Events = nil
	}
}

// announceFirst turns a change that is not a status write and has Events
// not all pending into the status write that records them (rule 20), made
// before the rules that keep every status write up to date (waveAfter,
// windowAfter, ...), so that it is a status write like any other.
func announceFirst(snap *Snapshot, action *Action) {
	if action.Type == ActionUpdateStatus || action.Type == ActionNone || len(action.Events) == 0 ||
		allPending(snap.Policy.Status.PendingEvents, action.Events) {
		return
	}
	*action = Action{Type: ActionUpdateStatus, Status: snap.Policy.Status.DeepCopy(), Events: action.Events, Announces: action.Type,
		Why: fmt.Sprintf("recording %d Events before the change they announce (%s: %s)", len(action.Events), action.Type, action.Why)}
}

// record sets after's pending Events to before's that are not announced,
// then events, numbered from before's sequence, each recorded as
// announcing change at now, keeping the newest MaxPendingEvents.
func record(before, after *v1alpha1.StagedBindingPolicyStatus, announced map[int64]bool, change string, events []Event, now metav1.Time) {
	pending := make([]v1alpha1.PendingEvent, 0, len(before.PendingEvents)+len(events))
	for _, e := range before.PendingEvents {
		if !announced[e.Sequence] {
			pending = append(pending, e)
		}
	}
	seq := before.EventSequence
	for _, e := range events {
		seq++
		pending = append(pending, v1alpha1.PendingEvent{Sequence: seq, Type: e.Type, Reason: e.Reason, Action: change,
			Note: cutMessage(e.Note, MaxEventNote), Time: now})
	}
	after.DroppedEvents = before.DroppedEvents
	if over := len(pending) - v1alpha1.MaxPendingEvents; over > 0 {
		after.DroppedEvents += int64(over)
		pending = pending[over:]
	}
	if len(pending) == 0 {
		pending = nil
	}
	after.PendingEvents, after.EventSequence = pending, seq
}

// clearable are the pending Events rule 20 may clear: posted
// (Snapshot.Announced) and, when a subscription of spec.notifications
// wants one, its notifications settled (Snapshot.Delivered, rule 20a).
func clearable(snap *Snapshot) map[int64]bool {
	out := map[int64]bool{}
	for _, e := range snap.Policy.Status.PendingEvents {
		if !snap.Announced[e.Sequence] {
			continue
		}
		if _, settled := snap.Delivered[e.Sequence]; settled || !Notified(snap.Policy, e.Reason) {
			out[e.Sequence] = true
		}
	}
	return out
}

// Notified reports whether a subscription of policy's spec.notifications
// wants the Events of reason.
func Notified(policy *v1alpha1.StagedBindingPolicy, reason string) bool {
	return slices.ContainsFunc(policy.Spec.Notifications, func(n v1alpha1.Notification) bool { return n.Wants(reason) })
}

// notificationsFailed are the NotificationFailed Warning Events of the
// clearable entries whose notifications were given up (rule 20a).
func notificationsFailed(snap *Snapshot, clear map[int64]bool) []Event {
	var events []Event
	for _, e := range snap.Policy.Status.PendingEvents {
		if why := snap.Delivered[e.Sequence]; why != "" && clear[e.Sequence] && Notified(snap.Policy, e.Reason) {
			events = append(events, Event{Type: corev1.EventTypeWarning, Reason: v1alpha1.EventReasonNotificationFailed,
				Note: fmt.Sprintf("%s Event #%d: %s", e.Reason, e.Sequence, why)})
		}
	}
	return events
}

// anyAnnounced reports whether an entry of pending is announced.
func anyAnnounced(pending []v1alpha1.PendingEvent, announced map[int64]bool) bool {
	return slices.ContainsFunc(pending, func(e v1alpha1.PendingEvent) bool { return announced[e.Sequence] })
}

// allPending reports whether each of events is pending, by type, reason
// and note.
func allPending(pending []v1alpha1.PendingEvent, events []Event) bool {
	for _, e := range events {
		if !slices.ContainsFunc(pending, func(p v1alpha1.PendingEvent) bool {
			return p.Type == e.Type && p.Reason == e.Reason && p.Note == cutMessage(e.Note, MaxEventNote)
		}) {
			return false
		}
	}
	return true
}
