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

package stagedbindingpolicy

import (
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/controller/metrics"
	"github.com/kubestellar/workload-stager/internal/notify"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// announcements remembers, per policy, the sequence numbers of the
// pending Events (status.pendingEvents) this process posted: Plan clears
// those (rule 20). A restarted stager remembers none and posts every
// pending Event again: a duplicate, never a loss.
type announcements struct {
	mu     sync.Mutex
	policy map[types.NamespacedName]*posted
}

// posted are the sequence numbers posted for one policy, with when, by
// UID: a policy made anew under the same name numbers its Events from 1
// again.
type posted struct {
	uid  types.UID
	seqs map[int64]time.Time
}

// announceGrace is how long after an Event is handed to the recorder it
// counts as posted, for Plan to clear it: the recorder posts it from a
// queue of its own, and a stager killed before it has would lose it were
// its entry cleared at once.
const announceGrace = 2 * time.Second

// forget drops what is remembered of a deleted policy.
func (a *announcements) forget(key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.policy, key)
}

// unposted marks as posted at now, and returns, the pending Events of
// policy this process has not posted; it returns with them the sequence
// numbers of the pending Events it posted announceGrace ago or more
// (Snapshot.Announced), and how long until the others are. It remembers
// no more than the pending list holds.
func (a *announcements) unposted(policy *v1alpha1.StagedBindingPolicy, now time.Time) ([]v1alpha1.PendingEvent, map[int64]bool, time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.policy == nil {
		a.policy = map[types.NamespacedName]*posted{}
	}
	key := types.NamespacedName{Namespace: policy.Namespace, Name: policy.Name}
	p := a.policy[key]
	if p == nil || p.uid != policy.UID {
		p = &posted{uid: policy.UID}
		a.policy[key] = p
	}
	seqs := make(map[int64]time.Time, len(policy.Status.PendingEvents))
	announced := map[int64]bool{}
	var todo []v1alpha1.PendingEvent
	var wait time.Duration
	for _, e := range policy.Status.PendingEvents {
		at, ok := p.seqs[e.Sequence]
		if !ok {
			todo, at = append(todo, e), now
		}
		seqs[e.Sequence] = at
		if left := at.Add(announceGrace).Sub(now); left > 0 {
			wait = max(wait, left)
		} else {
			announced[e.Sequence] = true
		}
	}
	p.seqs = seqs
	return todo, announced, wait
}

// announce posts the pending Events of policy, as the API server holds
// it (read, or as written), that this process has not posted, and offers
// those a subscription of spec.notifications wants to the Notifier; it
// returns the sequence numbers of its pending Events posted
// (Snapshot.Announced) and of those whose notifications are settled
// (Snapshot.Delivered), and how long until the others count as posted
// (announceGrace) or are looked at again (notifyPoll). Every Event the
// reconciler posts on a change goes this way.
func (r *Reconciler) announce(policy *v1alpha1.StagedBindingPolicy) (map[int64]bool, map[int64]string, time.Duration) {
	todo, announced, wait := r.announced.unposted(policy, r.clock().Now())
	for _, e := range todo {
		result := metrics.AnnouncementPosted
		if v1alpha1.IsEventReason(e.Reason) {
			r.Recorder.Eventf(pendingEventRef(policy, e.Sequence), nil, e.Type, e.Reason, e.Action, "%s", e.Note)
		} else {
			// Not the stager's: Plan clears it as if posted.
			result = metrics.AnnouncementRefused
		}
		if r.Metrics != nil {
			r.Metrics.Announcement(result, e.Reason)
		}
	}
	delivered, settling := r.notify(policy)
	if settling {
		wait = rollout.Earliest(wait, notifyPoll)
	}
	return announced, delivered, wait
}

// Notifier delivers the notifications of pending Events
// (notify.Dispatcher): Offer never blocks, and is a no-op for a notice
// queued, in flight or settled already.
type Notifier interface {
	Offer(destination string, n notify.Notice) bool
	Outcome(destination string, uid types.UID, seq int64) (settled bool, gaveUp string)
}

// notifyPoll is how often a policy whose notifications are not all
// settled is looked at again, for Plan to clear those that are.
const notifyPoll = 5 * time.Second

// noNotifier is why a stager without a Notifier gives up every
// notification.
const noNotifier = "this stager sends no notifications"

// notify offers every pending Event of policy that a subscription wants
// to the Notifier, for each destination that wants it, in the list's
// order, and returns those settled for each (rule 20a's
// Snapshot.Delivered: "" if delivered to each, else why some were given
// up), and whether some are not settled yet. An offer the Notifier's queue
// refuses is made again on the next run.
func (r *Reconciler) notify(policy *v1alpha1.StagedBindingPolicy) (map[int64]string, bool) {
	if len(policy.Spec.Notifications) == 0 {
		return nil, false
	}
	delivered := map[int64]string{}
	settling := false
	for _, e := range policy.Status.PendingEvents {
		var why []string
		settled := true
		for _, sub := range policy.Spec.Notifications {
			if !sub.Wants(e.Reason) {
				continue
			}
			if r.Notifier == nil {
				why = append(why, fmt.Sprintf("notification to %s given up: %s", sub.Destination, noNotifier))
				continue
			}
			r.Notifier.Offer(sub.Destination, notify.NoticeOf(r.Space, policy, e))
			done, gaveUp := r.Notifier.Outcome(sub.Destination, policy.UID, e.Sequence)
			if !done {
				settled = false
			} else if gaveUp != "" {
				why = append(why, gaveUp)
			}
		}
		if !rollout.Notified(policy, e.Reason) {
			continue
		}
		if !settled {
			settling = true
			continue
		}
		delivered[e.Sequence] = strings.Join(why, "; ")
	}
	return delivered, settling
}

// pendingEventRef is what the Event of policy's pending entry seq is
// regarding: the policy, with the entry as its field. The Event recorder
// takes Events of one object, type, reason and action as one series and
// keeps the first one's note alone (client-go's events.getKey ignores the
// note): a stager posting several pending Events of one kind at once (a
// restarted one; ClusterFailed for clusters that failed together) would
// otherwise post only the first.
func pendingEventRef(policy *v1alpha1.StagedBindingPolicy, seq int64) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "StagedBindingPolicy",
		Namespace: policy.Namespace, Name: policy.Name, UID: policy.UID, ResourceVersion: policy.ResourceVersion,
		FieldPath: fmt.Sprintf("status.pendingEvents{%d}", seq)}
}

// countDropped counts, in the space's metrics, the pending Events a
// status write, action planned on before with announced posted, dropped
// unposted past the bound (rule 20).
func (r *Reconciler) countDropped(before *v1alpha1.StagedBindingPolicyStatus, announced map[int64]bool, action rollout.Action) {
	if r.Metrics == nil || action.Type != rollout.ActionUpdateStatus || action.Status.DroppedEvents == before.DroppedEvents {
		return
	}
	kept := make(map[int64]bool, len(action.Status.PendingEvents))
	for _, e := range action.Status.PendingEvents {
		kept[e.Sequence] = true
	}
	for _, e := range before.PendingEvents {
		if !kept[e.Sequence] && !announced[e.Sequence] {
			r.Metrics.Announcement(metrics.AnnouncementDropped, e.Reason)
		}
	}
	for i, e := range action.Events {
		if !kept[before.EventSequence+1+int64(i)] {
			r.Metrics.Announcement(metrics.AnnouncementDropped, e.Reason)
		}
	}
}
