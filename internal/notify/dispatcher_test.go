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
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
)

// receiver is an httptest TLS server that takes posts bearing its token,
// answering each with the next of codes (200 once they are used up).
type receiver struct {
	srv   *httptest.Server
	token string

	mu       sync.Mutex
	codes    []int
	received []map[string]any
	types    []string
	refused  int
}

// newReceiver starts a receiver, closed at the test's end.
func newReceiver(t *testing.T, token string, codes ...int) *receiver {
	r := &receiver{token: token, codes: codes}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if req.Header.Get("Authorization") != "Bearer "+r.token {
			r.refused++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		code := http.StatusOK
		if len(r.codes) > 0 {
			code, r.codes = r.codes[0], r.codes[1:]
		}
		if code == http.StatusOK {
			var body map[string]any
			data, _ := io.ReadAll(req.Body)
			if err := json.Unmarshal(data, &body); err != nil {
				code = http.StatusBadRequest
			} else {
				r.received = append(r.received, body)
				r.types = append(r.types, req.Header.Get("Content-Type"))
			}
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte(strings.Repeat("x", 1<<20)))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// ca is the PEM of the receiver's certificate.
func (r *receiver) ca() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
}

// ids are the ids of the events received, in order.
func (r *receiver) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for _, b := range r.received {
		id, _ := b["id"].(string)
		if id == "" {
			id = b["text"].(string)
		}
		ids = append(ids, id)
	}
	return ids
}

// staticResolver resolves each destination to a fixed target, or error.
type staticResolver map[string]func() (*Target, error)

// Resolve implements Resolver.
func (s staticResolver) Resolve(_ context.Context, space, name string) (*Target, error) {
	if f, ok := s[name]; ok {
		return f()
	}
	return nil, &Refusal{Reason: "no destination " + name}
}

// targetOf is a target of the receiver, with its CA and the token.
func targetOf(t *testing.T, r *receiver, format hostingv1alpha1.NotificationFormat, token string) func() (*Target, error) {
	target, err := NewTarget(&hostingv1alpha1.NotificationDestinationSpec{Address: r.srv.URL + "/hook", Format: format}, r.ca(), []byte(token+"\n"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return func() (*Target, error) { return target, nil }
}

// startDispatcher starts d until the test's end.
func startDispatcher(t *testing.T, d *Dispatcher) {
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
}

// waitSettled waits until the notices of seqs offered to destination are
// settled, and returns why each was given up ("" if delivered).
func waitSettled(t *testing.T, d *Dispatcher, destination string, n Notice, seqs ...int64) []string {
	t.Helper()
	out := make([]string, len(seqs))
	deadline := time.Now().Add(time.Minute)
	for i, seq := range seqs {
		for {
			settled, gaveUp := d.Outcome(destination, n.UID, seq)
			if settled {
				out[i] = gaveUp
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("notice %d to %s not settled in a minute", seq, destination)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return out
}

// fastRetries retry at once, 4 times.
var fastRetries = Options{MaxAttempts: 4, InitialBackoff: time.Microsecond, MaxBackoff: time.Microsecond}

// TestDispatcherPostsToATLSReceiverWithItsToken: a receiver behind TLS,
// with its own CA and a token, gets every notice in order, as
// CloudEvents or as Slack text; a 503 and a 429 are retried, a 401 (a
// wrong token) is given up at once, and so is a destination that refuses
// the space; no proxy of the environment is used.
func TestDispatcherPostsToATLSReceiverWithItsToken(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	ce := newReceiver(t, "s3cret", http.StatusServiceUnavailable, http.StatusTooManyRequests)
	slack := newReceiver(t, "other")
	d := &Dispatcher{Options: fastRetries, Resolver: staticResolver{
		"ce":        targetOf(t, ce, hostingv1alpha1.FormatCloudEvents, "s3cret"),
		"slack":     targetOf(t, slack, hostingv1alpha1.FormatSlack, "other"),
		"bad-token": targetOf(t, ce, hostingv1alpha1.FormatCloudEvents, "wrong"),
	}}
	startDispatcher(t, d)
	n := notice(0)
	for seq := int64(1); seq <= 3; seq++ {
		n.Sequence = seq
		for _, dest := range []string{"ce", "slack", "bad-token", "elsewhere"} {
			if !d.Offer(dest, n) {
				t.Fatalf("offer %d to %s refused", seq, dest)
			}
		}
	}
	if got := waitSettled(t, d, "ce", n, 1, 2, 3); got[0]+got[1]+got[2] != "" {
		t.Errorf("ce gave up: %q", got)
	}
	if got, want := ce.ids(), []string{"0b5e-uid-1", "0b5e-uid-2", "0b5e-uid-3"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("ce received %v, want %v", got, want)
	}
	if ce.types[0] != CloudEventsContentType {
		t.Errorf("content type %q", ce.types[0])
	}
	waitSettled(t, d, "slack", n, 1, 2, 3)
	if got := slack.ids(); len(got) != 3 || !strings.Contains(got[0], "StageStarted") {
		t.Errorf("slack received %v", got)
	}
	for _, dest := range []string{"bad-token", "elsewhere"} {
		got := waitSettled(t, d, dest, n, 1)
		if !strings.Contains(got[0], "given up") {
			t.Errorf("%s: %q, want given up", dest, got[0])
		}
	}
	if got := waitSettled(t, d, "bad-token", n, 1); !strings.Contains(got[0], "HTTP 401") || strings.Contains(got[0], ce.srv.URL) {
		t.Errorf("bad-token: %q, want HTTP 401 and no address", got[0])
	}
	ce.mu.Lock()
	if ce.refused != 3 {
		t.Errorf("ce refused %d posts with a wrong token, want 3: one each, no retry", ce.refused)
	}
	ce.mu.Unlock()
	// Offered again, a settled notice is not posted again.
	n.Sequence = 1
	d.Offer("ce", n)
	if got := len(ce.ids()); got != 3 {
		t.Errorf("ce received %d after a second offer, want 3", got)
	}
}

// TestDispatcherGivesUpAfterItsAttempts: a receiver that always fails
// gets MaxAttempts posts, then the notice is given up, saying the status
// and not the address.
func TestDispatcherGivesUpAfterItsAttempts(t *testing.T) {
	down := newReceiver(t, "t", 500, 500, 500, 500, 500, 500)
	d := &Dispatcher{Options: fastRetries, Resolver: staticResolver{"down": targetOf(t, down, hostingv1alpha1.FormatCloudEvents, "t")}}
	startDispatcher(t, d)
	d.Offer("down", notice(1))
	got := waitSettled(t, d, "down", notice(1), 1)
	if !strings.Contains(got[0], "after 4 attempts") || !strings.Contains(got[0], "HTTP 500") || strings.Contains(got[0], "127.0.0.1") {
		t.Errorf("gave up with %q", got[0])
	}
	down.mu.Lock()
	defer down.mu.Unlock()
	if len(down.codes) != 2 {
		t.Errorf("%d posts, want 4", 6-len(down.codes))
	}
}

// TestDispatcherRefusesRedirectsElsewhere: a receiver that redirects to
// another host is not followed; the notice fails there, it is not posted
// to the other host.
func TestDispatcherRefusesRedirectsElsewhere(t *testing.T) {
	other := newReceiver(t, "t")
	redirect := httptest.NewTLSServer(http.RedirectHandler(other.srv.URL+"/hook", http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)
	r := &receiver{srv: redirect}
	d := &Dispatcher{Options: fastRetries, Resolver: staticResolver{"r": targetOf(t, r, hostingv1alpha1.FormatCloudEvents, "t")}}
	startDispatcher(t, d)
	d.Offer("r", notice(1))
	if got := waitSettled(t, d, "r", notice(1), 1); !strings.Contains(got[0], "given up") {
		t.Errorf("a redirect elsewhere: %q", got[0])
	}
	if got := other.ids(); len(got) != 0 {
		t.Errorf("the other host received %v", got)
	}
}

// TestADownDestinationHoldsOnlyItsOwnQueues: while a destination hangs on
// every post, another destination, and the same destination for another
// space, get theirs; Offer never blocks.
func TestADownDestinationHoldsOnlyItsOwnQueues(t *testing.T) {
	release := make(chan struct{})
	hanging := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		<-release
	}))
	t.Cleanup(hanging.Close)
	t.Cleanup(func() { close(release) })
	up := newReceiver(t, "t")
	d := &Dispatcher{Options: Options{QueueLength: 2}, Resolver: staticResolver{
		"hanging": targetOf(t, &receiver{srv: hanging}, hostingv1alpha1.FormatCloudEvents, "t"),
		"up":      targetOf(t, up, hostingv1alpha1.FormatCloudEvents, "t"),
	}}
	startDispatcher(t, d)
	n := notice(0)
	accepted := 0
	for seq := int64(1); seq <= 5; seq++ {
		n.Sequence = seq
		if d.Offer("hanging", n) {
			accepted++
		}
		d.Offer("up", n)
	}
	if accepted != 2 {
		t.Errorf("a queue of 2, its head in flight, took %d offers", accepted)
	}
	waitSettled(t, d, "up", n, 1, 2)
	other := notice(1)
	other.Space = "wds2"
	if !d.Offer("hanging", other) {
		t.Error("space wds2's queue to the hanging destination is full: it is space wds1's")
	}
	if settled, _ := d.Outcome("hanging", n.UID, 1); settled {
		t.Error("a notice to the hanging destination is settled")
	}
}

// TestNewTargetRefusesWhatTheGuardRefuses: plain http, user information,
// a query and an unreadable CA or token are refused; a target takes no
// proxy from the environment.
func TestNewTargetRefusesWhatTheGuardRefuses(t *testing.T) {
	for _, tc := range []struct {
		address   string
		ca, token []byte
	}{
		{address: "http://hooks.example.com"},
		{address: "https://u:p@hooks.example.com"},
		{address: "https://hooks.example.com/?q=1"},
		{address: "https://hooks.example.com", ca: []byte("not PEM")},
		{address: "https://hooks.example.com", token: []byte("a\nb")},
		{address: "https://hooks.example.com", token: []byte(" ")},
	} {
		if _, err := NewTarget(&hostingv1alpha1.NotificationDestinationSpec{Address: tc.address}, tc.ca, tc.token, 0); err == nil {
			t.Errorf("%s, CA %q, token %q: admitted", tc.address, tc.ca, tc.token)
		} else if strings.Contains(err.Error(), "u:p") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
	target, err := NewTarget(&hostingv1alpha1.NotificationDestinationSpec{Address: "https://hooks.example.com/x"}, nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	// http.ProxyFromEnvironment never proxies loopback, so a test
	// receiver could not show a proxy taken from the environment.
	if tr, ok := target.Client.Transport.(*http.Transport); !ok || tr.Proxy != nil {
		t.Errorf("the target's transport %#v takes a proxy", target.Client.Transport)
	}
	var refusal *Refusal
	if _, err := (staticResolver{}).Resolve(context.Background(), "s", "x"); !errors.As(err, &refusal) {
		t.Errorf("%v", err)
	}
}
