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

package rollout_test

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// announcer models the reconciler's posting of status.pendingEvents
// (rule 20): posted is its memory, which a restart loses; the rest is
// what the invariants remember of the policy's Events.
type announcer struct {
	uid types.UID
	// posted are the sequence numbers posted by this stager process.
	posted map[int64]bool
	// ever counts the posts of each sequence number, across restarts.
	ever map[int64]int
	// recorded are the sequence numbers seen pending in a written status.
	recorded map[int64]bool
	// dropped counts the entries that left the list unposted.
	dropped int64
	// settled are the outcomes of the notifications of the wanted
	// entries, as this process's dispatcher knows them ("": delivered,
	// else why given up), which a restart loses (rule 20a).
	settled map[int64]string
	// notified counts the settled notifications of each sequence number,
	// across restarts; wanted are the recorded entries a subscription
	// wants.
	notified map[int64]int
	wanted   map[int64]bool
}

// announcements returns the model of the policy's announcements, new
// for a new policy.
func (m *machine) announcements() *announcer {
	if m.ann == nil || m.ann.uid != m.w.policy.UID {
		m.ann = &announcer{uid: m.w.policy.UID, posted: map[int64]bool{}, ever: map[int64]int{}, recorded: map[int64]bool{},
			settled: map[int64]string{}, notified: map[int64]int{}, wanted: map[int64]bool{}}
	}
	return m.ann
}

// post is the reconciler posting the pending Events it has not posted in
// this process: at the start of a run and after a write.
func (a *announcer) post(status *v1alpha1.StagedBindingPolicyStatus) {
	for _, e := range status.PendingEvents {
		if !a.posted[e.Sequence] {
			a.posted[e.Sequence] = true
			a.ever[e.Sequence]++
			seen["announce: posted"]++
		}
	}
}

// notify is the dispatcher delivering the notifications of the posted
// entries a subscription wants: each settles now or later, delivered or
// given up; at once while the model settles.
func (a *announcer) notify(t *rapid.T, policy *v1alpha1.StagedBindingPolicy, settling bool) {
	for _, e := range policy.Status.PendingEvents {
		if _, done := a.settled[e.Sequence]; done || !a.posted[e.Sequence] || !rollout.Notified(policy, e.Reason) {
			continue
		}
		outcome := rapid.IntRange(0, 3).Draw(t, "notification")
		if settling && outcome == 0 {
			outcome = 1
		}
		switch outcome {
		case 0:
			continue
		case 3:
			a.settled[e.Sequence] = "given up"
			seen["announce: notification given up"]++
		default:
			a.settled[e.Sequence] = ""
			seen["announce: notification delivered"]++
		}
		a.notified[e.Sequence]++
	}
}

// delivered is Snapshot.Delivered: the settled notifications of the
// pending entries.
func (a *announcer) delivered(status *v1alpha1.StagedBindingPolicyStatus) map[int64]string {
	out := map[int64]string{}
	for _, e := range status.PendingEvents {
		if why, ok := a.settled[e.Sequence]; ok {
			out[e.Sequence] = why
		}
	}
	return out
}

// clearable are the entries of snap's status that rule 20 may clear, as
// the model reads the rule: posted and, if a subscription wants them,
// notified.
func (a *announcer) clearable(snap *rollout.Snapshot) map[int64]bool {
	out := map[int64]bool{}
	for _, e := range snap.Policy.Status.PendingEvents {
		_, settled := snap.Delivered[e.Sequence]
		if snap.Announced[e.Sequence] && (settled || !rollout.Notified(snap.Policy, e.Reason)) {
			out[e.Sequence] = true
		}
	}
	return out
}

// announced is Snapshot.Announced: the pending entries posted by this
// process.
func (a *announcer) announced(status *v1alpha1.StagedBindingPolicyStatus) map[int64]bool {
	out := map[int64]bool{}
	for _, e := range status.PendingEvents {
		if a.posted[e.Sequence] {
			out[e.Sequence] = true
		}
	}
	return out
}

// checkAnnounceStep checks rule 20's invariants on a change, action,
// planned on snap with the announcements a and made (applied) or refused: every Event the change
// emits is pending in the status it writes (or counted as dropped); the
// list stays within its bound; an entry leaves it only posted or counted
// as dropped; a status write leaves no posted entry pending; a change
// that is not a status write has no Event of its own.
func (m *machine) checkAnnounceStep(t *rapid.T, a *announcer, snap *rollout.Snapshot, action rollout.Action, applied bool) {
	before := &snap.Policy.Status
	if action.Type != rollout.ActionUpdateStatus {
		if len(action.Events) > 0 {
			m.fatalf(t, "announcements: %s (%s) has Events %v that no status records", action.Type, action.Why, action.Events)
		}
		return
	}
	after := action.Status
	clear := a.clearable(snap)
	if len(after.PendingEvents) > v1alpha1.MaxPendingEvents {
		m.fatalf(t, "announcements: %d pending, over the bound %d", len(after.PendingEvents), v1alpha1.MaxPendingEvents)
	}
	if got := after.EventSequence - before.EventSequence; got != int64(len(action.Events)) {
		m.fatalf(t, "announcements: %d Events numbered for the %d the write emits (%s)", got, len(action.Events), action.Why)
	}
	pending := map[int64]bool{}
	for i, e := range after.PendingEvents {
		pending[e.Sequence] = true
		if clear[e.Sequence] {
			m.fatalf(t, "announcements: #%d posted and notified, still pending after the status write (%s)", e.Sequence, action.Why)
		}
		if i > 0 && after.PendingEvents[i-1].Sequence >= e.Sequence {
			m.fatalf(t, "announcements: pending out of order: %v", after.PendingEvents)
		}
	}
	var gone int64
	for _, e := range before.PendingEvents {
		if !pending[e.Sequence] && !clear[e.Sequence] {
			gone++
		}
		if why := snap.Delivered[e.Sequence]; why != "" && clear[e.Sequence] && !slices.ContainsFunc(action.Events, func(ev rollout.Event) bool {
			return ev.Reason == v1alpha1.EventReasonNotificationFailed && strings.Contains(ev.Note, fmt.Sprintf("#%d:", e.Sequence))
		}) {
			m.fatalf(t, "announcements: #%d's notification given up and cleared without a NotificationFailed Event (%s)", e.Sequence, action.Why)
		}
	}
	for seq := before.EventSequence + 1; seq <= after.EventSequence; seq++ {
		if !pending[seq] {
			gone++
		}
	}
	if after.DroppedEvents-before.DroppedEvents != gone {
		m.fatalf(t, "announcements: %d entries left the list unposted, %d counted as dropped (%s)", gone, after.DroppedEvents-before.DroppedEvents, action.Why)
	}
	if !applied {
		return
	}
	a.dropped += gone
	for _, e := range after.PendingEvents {
		a.recorded[e.Sequence] = true
		if rollout.Notified(snap.Policy, e.Reason) {
			a.wanted[e.Sequence] = true
		}
	}
	seen["announce: status writes"]++
}

// checkAnnouncedAtRest checks, with the stager at rest, that nothing is
// pending and that every Event recorded was posted at least once, across
// the restarts between a write and its posting, but the dropped.
func (m *machine) checkAnnouncedAtRest(t *rapid.T) {
	a := m.announcements()
	status := &m.w.policy.Status
	if len(status.PendingEvents) > 0 {
		m.fatalf(t, "announcements: at rest with %d Events pending", len(status.PendingEvents))
	}
	var lost int64
	for seq := range a.recorded {
		if a.ever[seq] == 0 || a.wanted[seq] && a.notified[seq] == 0 {
			lost++
		}
	}
	if lost > a.dropped {
		m.fatalf(t, "announcements: %d Events recorded never posted or never notified, %d dropped", lost, a.dropped)
	}
	seen["announce: checked at rest"]++
}
