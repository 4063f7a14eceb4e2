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

package e2e

import (
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/notify"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

const receiverToken = "receiver-token"

// received is one CloudEvent a receiver took.
type received struct {
	ID, Type, Reason, Message string
	Sequence                  int64
}

// ceLog is what the receivers of a test took, in the order they took it;
// the receivers started on one address share it.
type ceLog struct {
	mu     sync.Mutex
	events []received
	bad    []string
}

// handler takes structured CloudEvents posted with the bearer token.
func (l *ceLog) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+receiverToken {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var ev struct {
			SpecVersion string `json:"specversion"`
			ID          string `json:"id"`
			Type        string `json:"type"`
			Data        struct {
				Reason   string `json:"reason"`
				Message  string `json:"message"`
				Sequence int64  `json:"sequence"`
			} `json:"data"`
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		if err == nil {
			err = json.Unmarshal(body, &ev)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if err != nil || r.Method != http.MethodPost || ev.SpecVersion != "1.0" ||
			!strings.HasPrefix(r.Header.Get("Content-Type"), "application/cloudevents+json") {
			l.bad = append(l.bad, fmt.Sprintf("%s %s %q: %v", r.Method, r.Header.Get("Content-Type"), body, err))
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		l.events = append(l.events, received{ID: ev.ID, Type: ev.Type, Reason: ev.Data.Reason, Message: ev.Data.Message, Sequence: ev.Data.Sequence})
		w.WriteHeader(http.StatusAccepted)
	})
}

// taken returns the events taken so far and the posts refused.
func (l *ceLog) taken() ([]received, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]received(nil), l.events...), append([]string(nil), l.bad...)
}

// expected is one rollout event the receiver must take: its reason and a
// part of its message naming the stage.
type expected struct{ reason, stage string }

// firstOf returns, in the order first taken, the events with distinct ids,
// and an error when one id was taken with two contents or one expected
// event under two ids (a duplicate must keep its id).
func firstOf(events []received) ([]received, error) {
	byID := map[string]received{}
	idOf := map[string]string{}
	var first []received
	for _, e := range events {
		if prev, ok := byID[e.ID]; ok {
			if prev != e {
				return nil, fmt.Errorf("id %s taken as %+v and as %+v", e.ID, prev, e)
			}
			continue
		}
		content := e.Reason + "|" + e.Message
		if id, ok := idOf[content]; ok {
			return nil, fmt.Errorf("%s %q taken under ids %s and %s", e.Reason, e.Message, id, e.ID)
		}
		byID[e.ID], idOf[content] = e, e.ID
		first = append(first, e)
	}
	return first, nil
}

// checkInOrder checks that the events, first taken, are the policy's
// (uid), with the expected reasons and stages in order, their ids' and
// data's sequence numbers rising, their types those of the reasons.
func checkInOrder(uid string, first []received, want []expected) error {
	if len(first) != len(want) {
		return fmt.Errorf("took %d events %+v, want %d: %v", len(first), first, len(want), want)
	}
	var last int64
	for i, e := range first {
		seq, err := strconv.ParseInt(strings.TrimPrefix(e.ID, uid+"-"), 10, 64)
		switch {
		case err != nil || !strings.HasPrefix(e.ID, uid+"-"):
			return fmt.Errorf("event %d id %q, want %s-<sequence>", i, e.ID, uid)
		case seq != e.Sequence || seq <= last:
			return fmt.Errorf("event %d %+v: sequence %d after %d, want rising and the id's", i, e, seq, last)
		case e.Reason != want[i].reason || !strings.Contains(e.Message, `stage "`+want[i].stage+`"`):
			return fmt.Errorf("event %d %+v, want %s of stage %q", i, e, want[i].reason, want[i].stage)
		case e.Type != notify.EventType(e.Reason):
			return fmt.Errorf("event %d type %q, want %q", i, e.Type, notify.EventType(e.Reason))
		}
		last = seq
	}
	return nil
}

// serveOn starts a TLS receiver of log on address, with the certificate
// certs (the first receiver's, so the CA Secret still holds), retrying
// while the port is still held.
func serveOn(t *testing.T, address string, certs []tls.Certificate, log *ceLog) *httptest.Server {
	t.Helper()
	var listener net.Listener
	environment.Eventually(t, 30*time.Second, "listening again on "+address, func() error {
		var err error
		listener, err = net.Listen("tcp", address)
		return err
	})
	srv := httptest.NewUnstartedServer(log.handler())
	_ = srv.Listener.Close()
	srv.Listener = listener
	srv.TLS = &tls.Config{Certificates: certs, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// TestNotificationsReachAReceiverAcrossAnOutage rolls a policy dev → test
// → prod, subscribed to StageStarted, StageSucceeded and Completed, to a
// CloudEvents NotificationDestination served on a loopback TLS port by
// the test, with its CA and token Secrets labelled for notifications. The
// receiver takes dev's and test's first events in order; then its port is
// closed (connections refused) for about 60 s while the rollout completes,
// and the undelivered entries stay in status.pendingEvents; a receiver
// started again on the same address takes every missed event, and
// pendingEvents empties. Each event is taken at least once, a duplicate
// only under its id. The final stage's success is told by
// RolloutCompleted, not StageSucceeded (Plan records no StageSucceeded
// for the last stage).
func TestNotificationsReachAReceiverAcrossAnOutage(t *testing.T) {
	const space, name, destination = "wds1", "notified", "e2e-receiver"
	const outage = 60 * time.Second
	log := &ceLog{}
	first := httptest.NewUnstartedServer(log.handler())
	first.StartTLS()
	t.Cleanup(first.Close)
	address, certs := first.Listener.Addr().String(), first.TLS.Certificates

	c := hostingClient(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: stack.StagerSecretNamespace, Name: "e2e-receiver",
		Labels: map[string]string{hostingv1alpha1.NotificationCredentialLabel: "true"}},
		Data: map[string][]byte{"ca.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: first.Certificate().Raw}),
			"token": []byte(receiverToken)}}
	if err := c.Create(suite.ctx, secret); err != nil {
		t.Fatalf("creating Secret %s: %v", secret.Name, err)
	}
	t.Cleanup(func() { _ = c.Delete(suite.ctx, secret) })
	dest := &hostingv1alpha1.NotificationDestination{ObjectMeta: metav1.ObjectMeta{Name: destination},
		Spec: hostingv1alpha1.NotificationDestinationSpec{Address: first.URL + "/events", Format: hostingv1alpha1.FormatCloudEvents,
			Spaces:               []string{space},
			CASecretRef:          &hostingv1alpha1.SecretKeyRef{Name: secret.Name, Key: "ca.crt"},
			BearerTokenSecretRef: &hostingv1alpha1.SecretKeyRef{Name: secret.Name, Key: "token"}}}
	if err := c.Create(suite.ctx, dest); err != nil {
		t.Fatalf("creating NotificationDestination %s: %v", dest.Name, err)
	}
	t.Cleanup(func() { _ = c.Delete(suite.ctx, dest) })

	startRollout(t, name, func(p *v1alpha1.StagedBindingPolicy) {
		p.Spec.Notifications = []v1alpha1.Notification{{Destination: destination,
			Events: []v1alpha1.NotificationEvent{v1alpha1.NotifyStageStarted, v1alpha1.NotifyStageSucceeded, v1alpha1.NotifyCompleted}}}
	})
	uid := string(policies(space).Get(t, name).UID)
	want := []expected{{v1alpha1.EventReasonStageStarted, "dev"}, {v1alpha1.EventReasonStageSucceeded, "dev"},
		{v1alpha1.EventReasonStageStarted, "test"}, {v1alpha1.EventReasonStageSucceeded, "test"},
		{v1alpha1.EventReasonStageStarted, "prod"}, {v1alpha1.ReasonRolloutCompleted, "prod"}}
	// took waits until the receivers took the first n wanted events, in
	// order, and nothing else.
	took := func(what string, n int, timeout time.Duration) {
		t.Helper()
		environment.Eventually(t, timeout, what, func() error {
			events, bad := log.taken()
			if len(bad) > 0 {
				return fmt.Errorf("posts refused: %v", bad)
			}
			firsts, err := firstOf(events)
			if err != nil {
				return err
			}
			return checkInOrder(uid, firsts, want[:n])
		})
	}

	// Phase 1: dev's events and test's start arrive in order.
	makeAvailable(space, name, "dev")
	policies(space).WaitForActiveStage(t, name, "test")
	took("the receiver to take dev's events and test's start", 3, timeout)

	// Phase 2: the receiver is down; the rollout completes, and the events
	// it missed stay pending.
	first.Close()
	down := time.Now()
	makeAvailable(space, name, "test")
	policies(space).WaitForPhase(t, name, v1alpha1.RolloutCompleted)
	missed := func() error {
		p := policies(space).Get(t, name)
		for _, w := range want[3:] {
			found := false
			for _, e := range p.Status.PendingEvents {
				found = found || e.Reason == w.reason && strings.Contains(e.Note, `stage "`+w.stage+`"`)
			}
			if !found {
				return fmt.Errorf("%s of stage %q is not pending while the receiver is down: %+v", w.reason, w.stage, p.Status.PendingEvents)
			}
		}
		return nil
	}
	environment.Eventually(t, timeout, "the missed events pending", missed)
	time.Sleep(time.Until(down.Add(outage)))
	if err := missed(); err != nil {
		t.Fatalf("after %s down: %v", outage, err)
	}
	if events, _ := log.taken(); len(events) != 3 {
		t.Fatalf("a closed receiver took events: %+v", events)
	}

	// Phase 3: a receiver on the same address takes what was missed (the
	// stager's next retry after a minute's backoff comes within ~64 s).
	serveOn(t, address, certs, log)
	up := time.Now()
	took("the receiver to take the missed events", len(want), timeout)
	t.Logf("down %s; the missed events came %s after the receiver was up again", up.Sub(down).Round(time.Second), time.Since(up).Round(time.Second))
	environment.Eventually(t, timeout, "pendingEvents to empty", func() error {
		if p := policies(space).Get(t, name); len(p.Status.PendingEvents) > 0 {
			return fmt.Errorf("pending: %+v", p.Status.PendingEvents)
		}
		return nil
	})
	events, _ := log.taken()
	t.Logf("took %d posts of %d events: %+v", len(events), len(want), events)
}
