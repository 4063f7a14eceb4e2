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

// Package announce posts the Events a policy's status promises
// (status.pendingEvents) at least once, and tells which ones the API
// server took, so that the reconciler clears only those (Plan's rule 20).
//
// client-go's Event broadcaster cannot be the one: it drops an Event when
// its queue is full, gives up after its retries, and folds Events of one
// object and reason into a series it may never post again, and it tells
// its caller none of that.
package announce

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// Outcome is where the posting of one pending Event stands.
type Outcome int

const (
	// Pending is an Event not posted yet: queued, in flight, or waiting to
	// be tried again.
	Pending Outcome = iota
	// Posted is an Event the API server took.
	Posted
	// Rejected is an Event the API server refused as such (invalid): no
	// try can post it.
	Rejected
)

// The results OnOutcome is told.
const (
	// ResultPosted: the API server took the Event.
	ResultPosted = "posted"
	// ResultRejected: the API server refused the Event as such.
	ResultRejected = "rejected"
	// ResultRetried: a try failed (unreachable API server, throttled,
	// forbidden); the Event is tried again after a backoff.
	ResultRetried = "retried"
)

// Defaults of the Options.
const (
	DefaultQueueLength = 256
	DefaultTimeout     = 15 * time.Second
	// DefaultFirstBackoff and DefaultMostBackoff bound the wait before an
	// Event whose try failed is tried again: doubled from the first after
	// each failure, up to the most.
	DefaultFirstBackoff = time.Second
	DefaultMostBackoff  = 2 * time.Minute
	// Poll is how soon a caller should look again at an Event queued or
	// in flight.
	Poll = time.Second
)

// Options configure a Poster.
type Options struct {
	// Controller is the Events' reportingController.
	Controller string
	// Instance is their reportingInstance; default: Controller-hostname,
	// as client-go's recorder has it.
	Instance string
	// Clock times the Events and the backoffs; default: the real clock.
	Clock clock.PassiveClock
	// QueueLength bounds the Events queued to be posted; Post refuses
	// more, for the caller to offer again later.
	QueueLength int
	// Timeout bounds each request.
	Timeout time.Duration
	// FirstBackoff and MostBackoff bound the waits between tries.
	FirstBackoff, MostBackoff time.Duration
	// Logger logs the failed tries.
	Logger logr.Logger
	// OnOutcome, when set, is told the reason of each Event and a result
	// (ResultPosted, ResultRejected, ResultRetried) once per try.
	OnOutcome func(reason, result string)
}

func (o Options) withDefaults() Options {
	if o.Instance == "" {
		host, _ := os.Hostname()
		o.Instance = o.Controller + "-" + host
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.QueueLength <= 0 {
		o.QueueLength = DefaultQueueLength
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.FirstBackoff <= 0 {
		o.FirstBackoff = DefaultFirstBackoff
	}
	if o.MostBackoff < o.FirstBackoff {
		o.MostBackoff = max(DefaultMostBackoff, o.FirstBackoff)
	}
	if o.OnOutcome == nil {
		o.OnOutcome = func(string, string) {}
	}
	return o
}

// Poster posts the pending Events of one space's policies through a
// bounded queue and one worker, in the order offered: each Event is
// created once the API server takes it, tried again with backoff while it
// does not, and its outcome kept for the caller until the entry is no
// longer pending (Sync). It keeps nothing across a restart: a new Poster
// posts every pending Event again, a duplicate, never a loss.
type Poster struct {
	client eventsv1client.EventsGetter
	// recorder, when set, posts instead of client, as it is called
	// (NewRecorded).
	recorder events.EventRecorder
	opts     Options
	queue    chan job

	mu       sync.Mutex
	policies map[types.NamespacedName]*policyEntries
}

// policyEntries are the pending Events of one policy the Poster was
// offered, by sequence; a policy made anew under the same name (another
// UID) numbers its Events from 1 again.
type policyEntries struct {
	uid  types.UID
	seqs map[int64]*entry
}

type entry struct {
	outcome  Outcome
	queued   bool
	attempts int
	retryAt  time.Time
	// event is built once, so that a try after one whose answer was lost
	// has the same name and is refused as existing.
	event *eventsv1.Event
}

type job struct {
	policy types.NamespacedName
	uid    types.UID
	seq    int64
	event  *eventsv1.Event
}

// NewPoster returns a Poster that posts through client; Start runs it.
func NewPoster(client eventsv1client.EventsGetter, opts Options) *Poster {
	opts = opts.withDefaults()
	return &Poster{client: client, opts: opts, queue: make(chan job, opts.QueueLength),
		policies: map[types.NamespacedName]*policyEntries{}}
}

// NewRecorded returns a Poster that posts each Event through recorder
// when offered, and counts it posted then: client-go's recorders tell
// nothing of the API server's answer, so this is right only for one that
// records as it is called (events.FakeRecorder, a unit test's). It needs
// no Start.
func NewRecorded(recorder events.EventRecorder, opts Options) *Poster {
	p := NewPoster(nil, opts)
	p.recorder = recorder
	return p
}

// Start posts the queued Events until ctx is done; those still queued
// then are not posted, and stay pending in their policies' status.
func (p *Poster) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case j := <-p.queue:
			p.post(ctx, j)
		}
	}
}

// NeedLeaderElection is false: a Poster runs with its space's controller.
func (p *Poster) NeedLeaderElection() bool { return false }

// Post offers the pending Event e of policy, regarding the object (and
// field) ref, and returns its outcome and, while Pending, how soon to look
// again. Offering an Event queued, in flight or settled does nothing; a
// full queue leaves it to be offered again.
func (p *Poster) Post(policy types.NamespacedName, ref *corev1.ObjectReference, e v1alpha1.PendingEvent) (Outcome, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	en := p.entry(policy, ref.UID, e.Sequence)
	if en.outcome != Pending {
		return en.outcome, 0
	}
	if en.queued {
		return Pending, Poll
	}
	if p.recorder != nil {
		p.recorder.Eventf(ref, nil, e.Type, e.Reason, e.Action, "%s", e.Note)
		en.outcome = Posted
		p.opts.OnOutcome(e.Reason, ResultPosted)
		return Posted, 0
	}
	now := p.opts.Clock.Now()
	if wait := en.retryAt.Sub(now); wait > 0 {
		return Pending, wait
	}
	if en.event == nil {
		en.event = p.event(ref, e, now)
	}
	select {
	case p.queue <- job{policy: policy, uid: ref.UID, seq: e.Sequence, event: en.event.DeepCopy()}:
		en.queued = true
	default:
	}
	return Pending, Poll
}

// Refuse settles the pending Event seq of policy uid as Rejected without
// posting it, and reports whether it was not settled before.
func (p *Poster) Refuse(policy types.NamespacedName, uid types.UID, seq int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	en := p.entry(policy, uid, seq)
	first := en.outcome == Pending
	en.outcome = Rejected
	return first
}

// Sync forgets the Events of policy that are no longer pending: cleared
// from its status, or of an earlier policy of the name.
func (p *Poster) Sync(policy types.NamespacedName, uid types.UID, pending []v1alpha1.PendingEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pe := p.policies[policy]
	if pe == nil {
		return
	}
	if pe.uid != uid {
		delete(p.policies, policy)
		return
	}
	keep := make(map[int64]bool, len(pending))
	for _, e := range pending {
		keep[e.Sequence] = true
	}
	for seq := range pe.seqs {
		if !keep[seq] {
			delete(pe.seqs, seq)
		}
	}
}

// Forget forgets the Events of a deleted policy.
func (p *Poster) Forget(policy types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.policies, policy)
}

// entry returns, making it if new, the entry of seq of policy uid; the
// caller holds p.mu.
func (p *Poster) entry(policy types.NamespacedName, uid types.UID, seq int64) *entry {
	pe := p.policies[policy]
	if pe == nil || pe.uid != uid {
		pe = &policyEntries{uid: uid, seqs: map[int64]*entry{}}
		p.policies[policy] = pe
	}
	en := pe.seqs[seq]
	if en == nil {
		en = &entry{}
		pe.seqs[seq] = en
	}
	return en
}

// event is the Event of e as client-go's recorder makes one, timed when
// Plan recorded it, so that a restarted stager's duplicate tells the
// same time.
func (p *Poster) event(ref *corev1.ObjectReference, e v1alpha1.PendingEvent, now time.Time) *eventsv1.Event {
	at := e.Time.Time
	if at.IsZero() {
		at = now
	}
	namespace := ref.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	return &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      eventName(ref, e.Sequence, now),
			Namespace: namespace,
		},
		EventTime:           metav1.NewMicroTime(at),
		ReportingController: p.opts.Controller,
		ReportingInstance:   p.opts.Instance,
		Action:              e.Action,
		Reason:              e.Reason,
		Regarding:           *ref,
		Note:                e.Note,
		Type:                e.Type,
	}
}

// eventName names the Event of entry seq regarding ref, made at now:
// unique to the entry (its policy's UID and sequence), so that a create
// refused as existing is this Event's own, made by a try whose answer was
// lost; the regarding object's name leads, shortened to keep it a name.
func eventName(ref *corev1.ObjectReference, seq int64, now time.Time) string {
	uid := string(ref.UID)
	if len(uid) > 8 {
		uid = uid[:8]
	}
	suffix := fmt.Sprintf(".%d.%s.%x", seq, uid, now.UnixNano())
	prefix := ref.Name
	if room := validation.DNS1123SubdomainMaxLength - len(suffix); len(prefix) > room {
		prefix = strings.TrimRight(prefix[:room], ".-")
	}
	return prefix + suffix
}

// post makes one try at j's Event and records its outcome.
func (p *Poster) post(ctx context.Context, j job) {
	tryCtx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
	_, err := p.client.Events(j.event.Namespace).Create(tryCtx, j.event, metav1.CreateOptions{})
	cancel()
	if err != nil && ctx.Err() != nil {
		// Stopping: the entry stays pending in the status.
		return
	}
	outcome, result := Posted, ResultPosted
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		// Existing: a try whose answer was lost made it.
	case rejected(err):
		outcome, result = Rejected, ResultRejected
		p.opts.Logger.Error(err, "The API server refused a pending Event; it is not posted",
			"policy", j.policy.Name, "sequence", j.seq, "reason", j.event.Reason)
	default:
		outcome, result = Pending, ResultRetried
	}
	p.mu.Lock()
	var attempts int
	var backoff time.Duration
	if pe := p.policies[j.policy]; pe != nil && pe.uid == j.uid {
		if en := pe.seqs[j.seq]; en != nil {
			en.queued, en.outcome = false, outcome
			if outcome == Pending {
				en.attempts++
				attempts, backoff = en.attempts, p.backoff(en.attempts)
				en.retryAt = p.opts.Clock.Now().Add(backoff)
			}
		}
	}
	p.mu.Unlock()
	if outcome == Pending {
		p.opts.Logger.Info("Posting a pending Event failed; trying again", "policy", j.policy.Name,
			"sequence", j.seq, "reason", j.event.Reason, "attempts", attempts, "backoff", backoff, "error", err.Error())
	}
	p.opts.OnOutcome(j.event.Reason, result)
}

// backoff is the wait after the attempts-th failed try.
func (p *Poster) backoff(attempts int) time.Duration {
	d := p.opts.FirstBackoff
	for i := 1; i < attempts && d < p.opts.MostBackoff; i++ {
		d *= 2
	}
	return min(d, p.opts.MostBackoff)
}

// rejected reports whether err refuses the Event as such, which no later
// try changes; anything else (unreachable, throttled, timed out, not
// allowed now) may pass later.
func rejected(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsRequestEntityTooLargeError(err) ||
		apierrors.IsMethodNotSupported(err) || apierrors.IsNotAcceptable(err) || apierrors.IsUnsupportedMediaType(err)
}
