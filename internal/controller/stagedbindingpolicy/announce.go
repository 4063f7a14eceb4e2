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
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

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

// poster is the reconciler's EventPoster: Events, or else one posting
// through Recorder (announce.NewRecorded), as a Reconciler built by hand
// (the unit tests') has; NewController always gives an announce.Poster.
func (r *Reconciler) poster() EventPoster {
	if r.Events != nil {
		return r.Events
	}
	r.recordedOnce.Do(func() {
		r.recorded = announce.NewRecorded(r.Recorder, announce.Options{Controller: ControllerName, Clock: r.clock(),
			OnOutcome: func(reason, result string) {
				if r.Metrics != nil {
					r.Metrics.Announcement(result, reason)
				}
			}})
	})
	return r.recorded
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
