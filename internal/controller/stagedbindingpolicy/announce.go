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
	"k8s.io/client-go/tools/events"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/announce"
	"github.com/kubestellar/workload-stager/internal/controller/metrics"
	"github.com/kubestellar/workload-stager/internal/notify"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// EventPoster posts the Events of status.pendingEvents and tells which
// ones the API server took (announce.Poster), for Plan to clear only
// those (rule 20).
type EventPoster interface {
	// Post offers a pending Event, regarding ref, and returns its outcome
	// and, while pending, how soon to look again.
	Post(policy types.NamespacedName, ref *corev1.ObjectReference, e v1alpha1.PendingEvent) (announce.Outcome, time.Duration)
	// Refuse settles a pending Event unposted, reporting whether it was
	// not settled before.
	Refuse(policy types.NamespacedName, uid types.UID, seq int64) bool
	// Sync forgets the Events of policy no longer pending.
	Sync(policy types.NamespacedName, uid types.UID, pending []v1alpha1.PendingEvent)
	// Forget forgets a deleted policy's Events.
	Forget(policy types.NamespacedName)
}

// handedPoster is the EventPoster of a Reconciler built without one (as
// the unit tests build theirs): it posts through the Reconciler's
// Recorder, which tells nothing of the API server's answer, and counts an
// Event posted once handed, right for a recorder that records as it is
// called (events.FakeRecorder). NewController always gives an
// announce.Poster.
type handedPoster struct {
	recorder func() events.EventRecorder
	metrics  func() *metrics.Space

	mu     sync.Mutex
	handed map[types.NamespacedName]*handedEntries
}

type handedEntries struct {
	uid  types.UID
	seqs map[int64]announce.Outcome
}

func (h *handedPoster) entries(policy types.NamespacedName, uid types.UID) *handedEntries {
	if h.handed == nil {
		h.handed = map[types.NamespacedName]*handedEntries{}
	}
	he := h.handed[policy]
	if he == nil || he.uid != uid {
		he = &handedEntries{uid: uid, seqs: map[int64]announce.Outcome{}}
		h.handed[policy] = he
	}
	return he
}

func (h *handedPoster) Post(policy types.NamespacedName, ref *corev1.ObjectReference, e v1alpha1.PendingEvent) (announce.Outcome, time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	he := h.entries(policy, ref.UID)
	if outcome, ok := he.seqs[e.Sequence]; ok {
		return outcome, 0
	}
	he.seqs[e.Sequence] = announce.Posted
	h.recorder().Eventf(ref, nil, e.Type, e.Reason, e.Action, "%s", e.Note)
	if m := h.metrics(); m != nil {
		m.Announcement(metrics.AnnouncementPosted, e.Reason)
	}
	return announce.Posted, 0
}

func (h *handedPoster) Refuse(policy types.NamespacedName, uid types.UID, seq int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	he := h.entries(policy, uid)
	_, seen := he.seqs[seq]
	he.seqs[seq] = announce.Rejected
	return !seen
}

func (h *handedPoster) Sync(policy types.NamespacedName, uid types.UID, pending []v1alpha1.PendingEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	he := h.entries(policy, uid)
	keep := make(map[int64]bool, len(pending))
	for _, e := range pending {
		keep[e.Sequence] = true
	}
	for seq := range he.seqs {
		if !keep[seq] {
			delete(he.seqs, seq)
		}
	}
}

func (h *handedPoster) Forget(policy types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.handed, policy)
}

// poster is the reconciler's EventPoster.
func (r *Reconciler) poster() EventPoster {
	if r.Events != nil {
		return r.Events
	}
	r.handedOnce.Do(func() {
		r.handed = &handedPoster{recorder: func() events.EventRecorder { return r.Recorder }, metrics: func() *metrics.Space { return r.Metrics }}
	})
	return r.handed
}

// announce offers the pending Events of policy, as the API server holds
// it (read, or as written), to the EventPoster, and those a subscription
// of spec.notifications wants to the Notifier; it returns the sequence
// numbers of its pending Events posted (Snapshot.Announced) and of those
// whose notifications are settled (Snapshot.Delivered), and how soon to
// look at the others again. Every Event the reconciler posts on a change
// goes this way.
func (r *Reconciler) announce(policy *v1alpha1.StagedBindingPolicy) (map[int64]bool, map[int64]string, time.Duration) {
	poster := r.poster()
	key := types.NamespacedName{Namespace: policy.Namespace, Name: policy.Name}
	poster.Sync(key, policy.UID, policy.Status.PendingEvents)
	announced := map[int64]bool{}
	var wait time.Duration
	for _, e := range policy.Status.PendingEvents {
		if !v1alpha1.IsEventReason(e.Reason) {
			// Not the stager's: Plan clears it as if posted.
			if poster.Refuse(key, policy.UID, e.Sequence) && r.Metrics != nil {
				r.Metrics.Announcement(metrics.AnnouncementRefused, e.Reason)
			}
			announced[e.Sequence] = true
			continue
		}
		outcome, again := poster.Post(key, pendingEventRef(policy, e.Sequence), e)
		if outcome != announce.Pending {
			announced[e.Sequence] = true
			continue
		}
		wait = rollout.Earliest(wait, again)
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
