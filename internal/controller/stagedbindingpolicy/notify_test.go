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
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/notify"
	"github.com/kubestellar/workload-stager/internal/rollout"
	"github.com/kubestellar/workload-stager/internal/rollout/rollouttest"
)

// ceReceiver is a TLS receiver of CloudEvents with a token; while down it
// answers 503.
type ceReceiver struct {
	srv  *httptest.Server
	down atomic.Bool
	mu   sync.Mutex
	ids  []string
	why  []string
}

// newCEReceiver starts a receiver, closed at the test's end.
func newCEReceiver(t *testing.T) *ceReceiver {
	r := &ceReceiver{}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var ev struct {
			ID   string `json:"id"`
			Data struct {
				Reason string `json:"reason"`
			} `json:"data"`
		}
		body, _ := io.ReadAll(req.Body)
		if err := json.Unmarshal(body, &ev); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.ids, r.why = append(r.ids, ev.ID), append(r.why, ev.Data.Reason)
		r.mu.Unlock()
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// Resolve resolves every destination to the receiver.
func (r *ceReceiver) Resolve(_ context.Context, space, name string) (*notify.Target, error) {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
	return notify.NewTarget(&hostingv1alpha1.NotificationDestinationSpec{Address: r.srv.URL}, ca, []byte("tok"), time.Second)
}

// received are the ids received.
func (r *ceReceiver) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ids)
}

// newDispatcher starts a Dispatcher posting to r, retrying at once, until
// the test's end.
func newDispatcher(t *testing.T, r *ceReceiver) *notify.Dispatcher {
	d := &notify.Dispatcher{Resolver: r, Options: notify.Options{MaxAttempts: 1 << 20, InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return d
}

// TestReconcileKeepsAWantedEventUntilNotified: a policy subscribing a
// destination to StageStarted keeps its StageStarted entry pending,
// posted as an Event, while the destination is down, and clears the
// entries no subscription wants; once the destination is up it gets the
// event (id: the policy's UID and the sequence number) and the entry is
// cleared. A stager restarted with the entry pending offers it again.
func TestReconcileKeepsAWantedEventUntilNotified(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	p := rollouttest.NewPolicy()
	p.Name, p.UID, p.Generation, p.Finalizers = objectName("StagedBindingPolicy", "notify-down"), "", 0, []string{v1alpha1.CleanupFinalizer}
	p.Spec.Notifications = []v1alpha1.Notification{{Destination: "chat", Events: []v1alpha1.NotificationEvent{v1alpha1.NotifyStageStarted}}}
	if err := testSpace.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Name: p.Name}
	read := func() *v1alpha1.StagedBindingPolicy {
		t.Helper()
		got := &v1alpha1.StagedBindingPolicy{}
		if err := testSpace.Client.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	receiver := newCEReceiver(t)
	receiver.down.Store(true)
	start := time.Now()
	r := newTestReconciler(t, start)
	r.Notifier = newDispatcher(t, receiver)
	run := func(r *Reconciler, at time.Duration) {
		t.Helper()
		r.Clock.(*clocktesting.FakePassiveClock).SetTime(start.Add(at))
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	run(r, 0)
	var started *v1alpha1.PendingEvent
	for _, e := range read().Status.PendingEvents {
		if e.Reason == v1alpha1.EventReasonStageStarted {
			started = &e
		}
	}
	if started == nil {
		t.Fatalf("the rollout's start left no StageStarted pending: %+v", read().Status.PendingEvents)
	}
	for i := 1; i <= 3; i++ {
		run(r, time.Duration(i)*runGap)
	}
	pending := read().Status.PendingEvents
	if !slices.ContainsFunc(pending, func(e v1alpha1.PendingEvent) bool { return e.Sequence == started.Sequence }) {
		t.Fatalf("StageStarted #%d cleared while its destination is down: %+v", started.Sequence, pending)
	}
	if slices.ContainsFunc(pending, func(e v1alpha1.PendingEvent) bool {
		return !rollout.Notified(read(), e.Reason) && e.Sequence <= started.Sequence
	}) {
		t.Errorf("an entry no subscription wants is still pending after its post: %+v", pending)
	}
	if got := receiver.received(); len(got) != 0 {
		t.Fatalf("a down receiver received %v", got)
	}

	// A restarted stager, its destination up: the entry is offered again,
	// delivered, then cleared.
	receiver.down.Store(false)
	restarted := newTestReconciler(t, start)
	restarted.Notifier = newDispatcher(t, receiver)
	want := string(read().UID) + "-" + strconv.FormatInt(started.Sequence, 10)
	deadline := time.Now().Add(30 * time.Second)
	for i := 4; slices.ContainsFunc(read().Status.PendingEvents, func(e v1alpha1.PendingEvent) bool { return e.Sequence == started.Sequence }); i++ {
		if time.Now().After(deadline) {
			t.Fatalf("StageStarted #%d still pending 30 s after its destination came up; received %v", started.Sequence, receiver.received())
		}
		run(restarted, time.Duration(i)*runGap)
		time.Sleep(10 * time.Millisecond)
	}
	if got := receiver.received(); !slices.Contains(got, want) {
		t.Errorf("received %v, want %s", got, want)
	}
	for _, e := range read().Status.PendingEvents {
		if e.Reason == v1alpha1.EventReasonNotificationFailed {
			t.Errorf("a delivered notification was told as failed: %+v", e)
		}
	}
}

// TestReconcileTellsAGivenUpNotification: a notification the destination
// refuses (a token it does not take) is given up, and its entry cleared
// with a NotificationFailed Warning Event that names the destination and
// the status, not the address.
func TestReconcileTellsAGivenUpNotification(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	p := rollouttest.NewPolicy()
	p.Name, p.UID, p.Generation, p.Finalizers = objectName("StagedBindingPolicy", "notify-refused"), "", 0, []string{v1alpha1.CleanupFinalizer}
	p.Spec.Notifications = []v1alpha1.Notification{{Destination: "chat", Events: []v1alpha1.NotificationEvent{v1alpha1.NotifyStageStarted}}}
	if err := testSpace.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Name: p.Name}
	receiver := newCEReceiver(t)
	wrongToken := &wrongTokenResolver{receiver}
	d := &notify.Dispatcher{Resolver: wrongToken}
	dctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Start(dctx) }()
	t.Cleanup(func() { cancel(); <-done })
	start := time.Now()
	r := newTestReconciler(t, start)
	r.Notifier = d
	var failed []string
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; len(failed) == 0; i++ {
		if time.Now().After(deadline) {
			t.Fatal("no NotificationFailed Event 30 s on")
		}
		r.Clock.(*clocktesting.FakePassiveClock).SetTime(start.Add(time.Duration(i) * runGap))
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
		got := &v1alpha1.StagedBindingPolicy{}
		if err := testSpace.Client.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		for _, e := range got.Status.PendingEvents {
			if e.Reason == v1alpha1.EventReasonNotificationFailed {
				failed = append(failed, e.Note)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(failed[0], "StageStarted Event #") || !strings.Contains(failed[0], "chat") || !strings.Contains(failed[0], "HTTP 401") ||
		strings.Contains(failed[0], receiver.srv.URL) {
		t.Errorf("NotificationFailed note %q, want the Event, the destination and HTTP 401, no address", failed[0])
	}
}

// wrongTokenResolver resolves to its receiver with a token it refuses.
type wrongTokenResolver struct{ r *ceReceiver }

// Resolve implements notify.Resolver.
func (w *wrongTokenResolver) Resolve(ctx context.Context, space, name string) (*notify.Target, error) {
	t, err := w.r.Resolve(ctx, space, name)
	if err != nil {
		return nil, err
	}
	wrong := *t
	wrong.Token = "wrong"
	return &wrong, nil
}

// runGap is how far the fake clock moves between a test's runs.
const runGap = 2 * time.Second
