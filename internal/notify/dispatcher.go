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

package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
)

// Defaults of Options.
const (
	// DefaultQueueLength bounds each queue: twice the pending Events one
	// policy may hold (v1alpha1.MaxPendingEvents).
	DefaultQueueLength = 64
	// DefaultMaxAttempts bounds the posts of one event.
	DefaultMaxAttempts = 12
	// DefaultGiveUpAfter bounds the time spent on one event, from its
	// first post.
	DefaultGiveUpAfter = 15 * time.Minute
	// DefaultInitialBackoff is the wait after the first failed post.
	DefaultInitialBackoff = time.Second
	// DefaultMaxBackoff bounds the wait between two posts.
	DefaultMaxBackoff = 2 * time.Minute
	// DefaultMaxResponseBytes bounds what is read of an answer, which is
	// discarded.
	DefaultMaxResponseBytes = 64 << 10
	// DefaultResultTTL is how long an event's outcome is kept for the
	// reconciler to read once it is settled.
	DefaultResultTTL = 15 * time.Minute
)

// Options bound a Dispatcher; zero fields take the defaults.
type Options struct {
	QueueLength      int
	MaxAttempts      int
	GiveUpAfter      time.Duration
	InitialBackoff   time.Duration
	MaxBackoff       time.Duration
	MaxResponseBytes int64
	ResultTTL        time.Duration
}

// withDefaults is o with every zero field set to its default.
func (o Options) withDefaults() Options {
	if o.QueueLength <= 0 {
		o.QueueLength = DefaultQueueLength
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.GiveUpAfter <= 0 {
		o.GiveUpAfter = DefaultGiveUpAfter
	}
	if o.InitialBackoff <= 0 {
		o.InitialBackoff = DefaultInitialBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.ResultTTL <= 0 {
		o.ResultTTL = DefaultResultTTL
	}
	return o
}

// Key names one event for one destination.
type Key struct {
	Destination string
	UID         types.UID
	Sequence    int64
}

// Dispatcher delivers notices, at least once, from one bounded queue per
// destination and space, each with one worker posting in the order of
// the offers: a destination that is down holds only its own queues, and
// a space that floods one only its own. It runs as a manager.Runnable
// (Start); offers made before are posted from then on.
type Dispatcher struct {
	// Resolver finds each destination's target at each post, so that a
	// changed destination or Secret is used at the next retry.
	Resolver Resolver
	// Options bound the queues and the retries.
	Options Options
	// Clock times the give-ups and the outcomes; nil is the real clock.
	Clock clock.Clock
	// OnSettled, when set, is called, outside the Dispatcher's lock, when
	// a notice is delivered or given up: the reconciler queues its policy.
	OnSettled func(n Notice)

	// post posts one notice; nil posts it with the Resolver's target.
	post func(ctx context.Context, destination string, n Notice) error

	once    sync.Once
	mu      sync.Mutex
	ctx     context.Context
	queues  map[queueKey]*queue
	state   map[Key]*outcome
	pruned  time.Time
	metrics *dispatcherMetrics
}

// queueKey names one queue.
type queueKey struct{ space, destination string }

// queue is one destination's queue for one space.
type queue struct {
	items   []Notice
	running bool
}

// outcome is what became of an offered notice: settled once delivered or
// given up (gaveUp says why), at.
type outcome struct {
	settled bool
	gaveUp  string
	at      time.Time
}

// init sets the defaults once.
func (d *Dispatcher) init() {
	d.once.Do(func() {
		d.Options = d.Options.withDefaults()
		if d.Clock == nil {
			d.Clock = clock.RealClock{}
		}
		if d.post == nil {
			d.post = d.send
		}
		d.queues = map[queueKey]*queue{}
		d.state = map[Key]*outcome{}
		d.metrics = defaultMetrics
	})
}

// Start runs the workers until ctx ends.
func (d *Dispatcher) Start(ctx context.Context) error {
	d.init()
	d.mu.Lock()
	d.ctx = ctx
	for k, q := range d.queues {
		if len(q.items) > 0 && !q.running {
			q.running = true
			go d.work(k, q)
		}
	}
	d.mu.Unlock()
	<-ctx.Done()
	return nil
}

// NeedLeaderElection is false: every replica posts the Events of the
// spaces it serves.
func (d *Dispatcher) NeedLeaderElection() bool { return false }

// Offer queues n for destination, unless it is queued, being posted or
// settled already; it never blocks, and returns false when the queue of
// the destination and n's space is full: the notice is not queued, and
// the caller offers it again later.
func (d *Dispatcher) Offer(destination string, n Notice) bool {
	d.init()
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.Clock.Now()
	d.prune(now)
	key := Key{Destination: destination, UID: n.UID, Sequence: n.Sequence}
	if _, ok := d.state[key]; ok {
		return true
	}
	k := queueKey{space: n.Space, destination: destination}
	q := d.queues[k]
	if q == nil {
		q = &queue{}
		d.queues[k] = q
	}
	if len(q.items) >= d.Options.QueueLength {
		d.metrics.result(n.Space, destination, ResultQueueFull)
		return false
	}
	q.items = append(q.items, n)
	d.state[key] = &outcome{at: now}
	d.metrics.queueLength(n.Space, destination, len(q.items))
	if !q.running && d.ctx != nil {
		q.running = true
		go d.work(k, q)
	}
	return true
}

// Outcome reports whether the notice of (uid, seq) offered to destination
// is settled, and if it was given up, why; false for one not offered (or
// offered more than ResultTTL ago, or before a restart).
func (d *Dispatcher) Outcome(destination string, uid types.UID, seq int64) (settled bool, gaveUp string) {
	d.init()
	d.mu.Lock()
	defer d.mu.Unlock()
	o, ok := d.state[Key{Destination: destination, UID: uid, Sequence: seq}]
	if !ok || !o.settled {
		return false, ""
	}
	return true, o.gaveUp
}

// Len is the length of the queue of destination for space.
func (d *Dispatcher) Len(space, destination string) int {
	d.init()
	d.mu.Lock()
	defer d.mu.Unlock()
	if q := d.queues[queueKey{space: space, destination: destination}]; q != nil {
		return len(q.items)
	}
	return 0
}

// prune forgets, at most once a minute, the outcomes settled more than
// ResultTTL ago.
func (d *Dispatcher) prune(now time.Time) {
	if now.Sub(d.pruned) < time.Minute {
		return
	}
	d.pruned = now
	for k, o := range d.state {
		if o.settled && now.Sub(o.at) > d.Options.ResultTTL {
			delete(d.state, k)
		}
	}
}

// work posts q's notices, the oldest first, each until delivered or given
// up, and ends when q is empty (a later offer starts a new worker) or the
// Dispatcher's context ends.
func (d *Dispatcher) work(k queueKey, q *queue) {
	ctx := d.ctx
	for {
		d.mu.Lock()
		if len(q.items) == 0 {
			q.running = false
			delete(d.queues, k)
			d.metrics.forgetQueue(k.space, k.destination)
			d.mu.Unlock()
			return
		}
		n := q.items[0]
		d.mu.Unlock()
		gaveUp, ok := d.deliver(ctx, k.destination, n)
		if !ok {
			return
		}
		d.mu.Lock()
		q.items = q.items[1:]
		d.state[Key{Destination: k.destination, UID: n.UID, Sequence: n.Sequence}] = &outcome{settled: true, gaveUp: gaveUp, at: d.Clock.Now()}
		d.metrics.queueLength(k.space, k.destination, len(q.items))
		d.mu.Unlock()
		if d.OnSettled != nil {
			d.OnSettled(n)
		}
	}
}

// deliver posts n to destination until it is delivered ("") or given up
// (why); ok is false if ctx ended first.
func (d *Dispatcher) deliver(ctx context.Context, destination string, n Notice) (gaveUp string, ok bool) {
	logger := log.FromContext(ctx).WithValues("space", n.Space, "namespace", n.Namespace, "policy", n.Policy,
		"destination", destination, "event", n.ID())
	first := d.Clock.Now()
	for attempt := 1; ; attempt++ {
		err := d.post(ctx, destination, n)
		if ctx.Err() != nil {
			return "", false
		}
		if err == nil {
			d.metrics.result(n.Space, destination, ResultDelivered)
			return "", true
		}
		var refusal *Refusal
		switch {
		case errors.As(err, &refusal):
			logger.Info("Notification refused; giving it up", "error", err.Error())
			d.metrics.result(n.Space, destination, ResultGivenUp)
			return fmt.Sprintf("notification to %s given up: %s", destination, refusal.Reason), true
		case attempt >= d.Options.MaxAttempts || d.Clock.Since(first) >= d.Options.GiveUpAfter:
			logger.Info("Notification not delivered; giving it up", "attempts", attempt, "error", err.Error())
			d.metrics.result(n.Space, destination, ResultGivenUp)
			return fmt.Sprintf("notification to %s given up after %d attempts over %s: %s", destination, attempt,
				d.Clock.Since(first).Round(time.Second), shownError(err)), true
		}
		d.metrics.result(n.Space, destination, ResultFailed)
		wait := Backoff(d.Options.InitialBackoff, d.Options.MaxBackoff, attempt, rand.Float64())
		logger.V(1).Info("Notification not delivered; trying again", "attempt", attempt, "in", wait, "error", err.Error())
		if !sleep(ctx, d.Clock, wait) {
			return "", false
		}
	}
}

// Backoff is the wait after the attempt-th failed post: initial doubled
// per attempt, at most most, of which the last half is jittered by
// jitter in [0, 1), so that the queues a receiver's outage failed do not
// come back at once.
func Backoff(initial, most time.Duration, attempt int, jitter float64) time.Duration {
	d := initial
	for i := 1; i < attempt && d < most; i++ {
		d *= 2
	}
	d = min(d, most)
	return d/2 + time.Duration(jitter*float64(d/2))
}

// sleep waits d on c, or until ctx ends (false).
func sleep(ctx context.Context, c clock.Clock, d time.Duration) bool {
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// errHTTP is a post answered with a status that is not 2xx.
type errHTTP struct{ code int }

// Error is the status.
func (e *errHTTP) Error() string { return fmt.Sprintf("HTTP %d", e.code) }

// shownError is what a policy's Warning Event may say of err: a status
// code, else no detail (the address, the Secrets and the receiver's
// network are the platform's; the stager's log has the error).
func shownError(err error) string {
	var h *errHTTP
	if errors.As(err, &h) {
		return h.Error()
	}
	return "the destination could not be reached or resolved (the stager's log says why)"
}

// send posts n to destination's target, reading at most
// MaxResponseBytes of the answer: 2xx is delivered; 408, 429 and 5xx are
// failures to retry, as are errors of the connection or of the
// destination's resolution; any other status is a *Refusal.
func (d *Dispatcher) send(ctx context.Context, destination string, n Notice) error {
	t, err := d.Resolver.Resolve(ctx, n.Space, destination)
	if err != nil {
		return err
	}
	body, contentType, err := Body(t.Format, n)
	if err != nil {
		return &Refusal{Reason: err.Error()}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("building the post: %w", err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", "kubestellar-workload-stager")
	if t.Token != "" {
		req.Header.Set("Authorization", "Bearer "+t.Token)
	}
	resp, err := t.Client.Do(req)
	if err != nil {
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		return fmt.Errorf("posting to %s: %w", t.URL.Redacted(), err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, d.Options.MaxResponseBytes))
	_ = resp.Body.Close()
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusRequestTimeout, code == http.StatusTooManyRequests, code >= 500:
		return &errHTTP{code: code}
	default:
		return &Refusal{Reason: fmt.Sprintf("the receiver answered HTTP %d", code)}
	}
}

// Body is n in format, with its media type.
func Body(format hostingv1alpha1.NotificationFormat, n Notice) ([]byte, string, error) {
	if format == hostingv1alpha1.FormatSlack {
		body, err := Slack(n)
		return body, "application/json", err
	}
	body, err := CloudEvent(n)
	return body, CloudEventsContentType, err
}
