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

package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/internal/reqclass"
)

// busyLeases is an API server whose first write of each Lease is refused
// as kcp's priority and fairness refuses one while it sheds load: status,
// a plain-text body and Retry-After. Later writes succeed. It counts the
// writes and the connections opened to it.
type busyLeases struct {
	status     int
	retryAfter string

	mu          sync.Mutex
	writes      int
	connections int
}

// lease is the Lease busyLeases serves and writes.
const lease = `{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"f","namespace":"ns","resourceVersion":"1"}}`

func (b *busyLeases) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/apis":
		_, _ = fmt.Fprint(w, `{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"coordination.k8s.io",`+
			`"versions":[{"groupVersion":"coordination.k8s.io/v1","version":"v1"}],`+
			`"preferredVersion":{"groupVersion":"coordination.k8s.io/v1","version":"v1"}}]}`)
		return
	case r.URL.Path == "/apis/coordination.k8s.io/v1":
		_, _ = fmt.Fprint(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"coordination.k8s.io/v1",`+
			`"resources":[{"name":"leases","namespaced":true,"kind":"Lease","verbs":["get","update"]}]}`)
		return
	case r.Method != http.MethodPut:
		_, _ = fmt.Fprint(w, lease)
		return
	}
	b.mu.Lock()
	b.writes++
	first := b.writes == 1
	b.mu.Unlock()
	if first {
		w.Header().Del("Content-Type")
		w.Header().Set("Retry-After", b.retryAfter)
		http.Error(w, "Too many requests, please try again later.", b.status)
		return
	}
	_, _ = fmt.Fprint(w, lease)
}

func (b *busyLeases) counts() (writes, connections int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.writes, b.connections
}

// start serves b, counting the connections opened to it.
func (b *busyLeases) start(t *testing.T) *rest.Config {
	srv := httptest.NewUnstartedServer(b)
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			b.mu.Lock()
			b.connections++
			b.mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

// scheme is the stager's scheme.
func scheme(t *testing.T) *runtime.Scheme {
	s, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestLeaseWritesAreNotRetriedInside: a write of a Lease that the API
// server refuses as too busy, with a Retry-After, returns the refusal at
// once, after one request, with the server's wait in the error, so that the
// fence guard decides when to try again. client-go slept the Retry-After
// (up to kcp's 32 s) and sent the write again inside the one call, which
// timed the renewal as a success 32 s slow.
func TestLeaseWritesAreNotRetriedInside(t *testing.T) {
	for _, tc := range []struct {
		status     int
		retryAfter string
		seconds    int
		reason     metav1.StatusReason
	}{
		{http.StatusTooManyRequests, "32", 32, metav1.StatusReasonTooManyRequests},
		{http.StatusServiceUnavailable, "1", 1, metav1.StatusReasonServiceUnavailable},
	} {
		t.Run(fmt.Sprintf("%d Retry-After %s", tc.status, tc.retryAfter), func(t *testing.T) {
			server := &busyLeases{status: tc.status, retryAfter: tc.retryAfter}
			c, err := leaseClient(server.start(t), scheme(t))
			if err != nil {
				t.Fatal(err)
			}
			// The deadline only ends a call that sleeps past it: no
			// assertion is made on the time taken.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			now := metav1.NewMicroTime(time.Now())
			lease := &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "f", ResourceVersion: "1"},
				Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("me"), RenewTime: &now},
			}
			err = c.Update(ctx, lease)
			writes, _ := server.counts()
			if writes != 1 {
				t.Errorf("one Update sent %d writes, want 1 (err %v)", writes, err)
			}
			if err == nil {
				t.Fatalf("the Update refused with %d succeeded", tc.status)
			}
			if got := apierrors.ReasonForError(err); got != tc.reason {
				t.Errorf("the Update returned %v (reason %q), want the %d refusal", err, got, tc.status)
			}
			if seconds, ok := apierrors.SuggestsClientDelay(err); !ok || seconds != tc.seconds {
				t.Errorf("the refusal suggests a delay of %d s (%v), want the server's %d s", seconds, ok, tc.seconds)
			}
			if !servedText(err, "Too many requests") {
				t.Errorf("the refusal %#v lost the server's message", err)
			}
		})
	}
}

// servedText reports whether err carries text from the server's answer, as
// client-go keeps it: among the causes of an unexpected answer.
func servedText(err error, text string) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, cause := range status.Status().Details.Causes {
		if strings.Contains(cause.Message, text) {
			return true
		}
	}
	return false
}

// TestLeaseClientHasItsOwnConnection: the Leases' requests do not queue
// behind the hosting cluster's other requests and watches on one
// connection: a client built from the same config as the Lease client
// opens a connection, and the Lease client another.
func TestLeaseClientHasItsOwnConnection(t *testing.T) {
	server := &busyLeases{status: http.StatusTooManyRequests, retryAfter: "1"}
	cfg := server.start(t)
	other, err := client.New(cfg, client.Options{Scheme: scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	leases, err := leaseClient(cfg, scheme(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "ns", Name: "f"}
	for _, c := range []client.Client{other, leases, other, leases} {
		if err := c.Get(ctx, key, &coordinationv1.Lease{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, connections := server.counts(); connections != 2 {
		t.Errorf("the Lease client and another client of its config opened %d connections, want 2", connections)
	}
}

// TestLeaseRequestsAreCountedApart: the sharding Leases' client, built on
// the hosting config as New instruments it, counts the fences' and the
// peer Leases' requests apart (stager_api_requests_total).
func TestLeaseRequestsAreCountedApart(t *testing.T) {
	server := &busyLeases{status: http.StatusTooManyRequests, retryAfter: "1"}
	c, err := leaseClient(instrument(server.start(t)), scheme(t))
	if err != nil {
		t.Fatal(err)
	}
	count := func(class string) float64 {
		return testutil.ToFloat64(reqclass.Collectors()[0].(*prometheus.CounterVec).WithLabelValues(class, reqclass.VerbGet, "200"))
	}
	fences, peers := count(reqclass.ClassFenceLeases), count(reqclass.ClassPeerLeases)
	for _, name := range []string{ShardFenceLeasePrefix + "-x", ShardPeerLeasePrefix + "-r1"} {
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: name}, &coordinationv1.Lease{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := count(reqclass.ClassFenceLeases) - fences; got != 1 {
		t.Errorf("%v fence Lease reads counted, want 1", got)
	}
	if got := count(reqclass.ClassPeerLeases) - peers; got != 1 {
		t.Errorf("%v peer Lease reads counted, want 1", got)
	}
}
