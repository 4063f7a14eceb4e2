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

package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// liveServer serves a dashboard of src on a test listener, watching.
func liveServer(t *testing.T, src Source, opts Options) (*httptest.Server, *Server) {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	opts.Address = ts.Listener.Addr().String()
	s := newTestServer(t, src, opts)
	ts.Config.Handler = s
	ts.Start()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; ts.Close() })
	return ts, s
}

// subscribe opens /events and returns its status and a channel of the
// changes it reports.
func subscribe(t *testing.T, ts *httptest.Server) (int, <-chan change) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := ts.Client().Do(req) //nolint:bodyclose // closed by the reading goroutine, or at once when refused
	if err != nil {
		t.Fatal(err)
	}
	changes := make(chan change, 100)
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return resp.StatusCode, changes
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("/events Content-Type %q", ct)
	}
	go func() {
		defer func() { _ = resp.Body.Close() }()
		defer close(changes)
		lines := bufio.NewScanner(resp.Body)
		for lines.Scan() {
			if data, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
				var c change
				if json.Unmarshal([]byte(data), &c) == nil {
					changes <- c
				}
			}
		}
	}()
	return resp.StatusCode, changes
}

// next returns the next change, failing the test when none comes within a
// minute (a bound against hanging, not a speed target).
func next(t *testing.T, changes <-chan change) change {
	t.Helper()
	select {
	case c, ok := <-changes:
		if !ok {
			t.Fatal("the event stream ended")
		}
		return c
	case <-time.After(time.Minute):
		t.Fatal("no change reported")
	}
	return change{}
}

// TestLiveClientsSeeChanges changes a policy in a watched space: every live
// client is told which, and fetching its fragment shows the change.
func TestLiveClientsSeeChanges(t *testing.T) {
	src := sourceWith(hostile{Name: "web", Stage: "test", Space: "wds1"})
	ts, _ := liveServer(t, src, Options{})
	_, first := subscribe(t, ts)
	_, second := subscribe(t, ts)
	for deadline := time.Now().Add(time.Minute); src.watching("wds1") == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the dashboard does not watch wds1")
		}
	}
	p := policyWith(hostile{Name: "web", Stage: "test", Space: "wds1"})
	p.Status.Phase = v1alpha1.RolloutCompleted
	src.set("wds1", p)
	for _, changes := range []<-chan change{first, second} {
		if c := next(t, changes); c != (change{Space: "wds1", Name: "web"}) {
			t.Errorf("change %+v, want wds1/web", c)
		}
	}
	resp, err := ts.Client().Get(ts.URL + "/fragment?space=wds1&name=web")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var b strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
	if !strings.Contains(b.String(), `class="phase phase-Completed"`) {
		t.Errorf("the fragment does not show the change:\n%s", b.String())
	}
}

// TestLiveClientsAreBounded caps the live clients at two: a third is
// refused with 503, and one may join once another leaves.
func TestLiveClientsAreBounded(t *testing.T) {
	ts, s := liveServer(t, sourceWith(hostile{Name: "web", Stage: "test", Space: "wds1"}), Options{MaxClients: 2})
	for range 2 {
		if status, _ := subscribe(t, ts); status != http.StatusOK {
			t.Fatalf("a live client: %d", status)
		}
	}
	if status, _ := subscribe(t, ts); status != http.StatusServiceUnavailable {
		t.Errorf("a third live client: %d, want 503", status)
	}
	if n := s.hub.count(); n != 2 {
		t.Errorf("%d live clients, want 2", n)
	}
}

// TestSlowClientIsDropped publishes many changes while one client reads
// each and another reads none: publishing never waits for the slow one,
// which is dropped once behind by its whole buffer, and the reading one
// gets every change and stays.
func TestSlowClientIsDropped(t *testing.T) {
	const buffer, published = 4, 1000
	h := newHub(10, buffer, 1<<10)
	slow, fast := h.join(), h.join()
	for i := range published {
		if !h.publish(change{Space: "wds1", Name: "web"}) {
			t.Fatalf("change %d not published", i)
		}
		<-fast.events
		select {
		case <-slow.dropped:
			if i < buffer {
				t.Fatalf("the slow client was dropped after %d changes, within its buffer of %d", i+1, buffer)
			}
		default:
			if i >= buffer {
				t.Fatalf("the slow client is not dropped after %d changes, past its buffer of %d", i+1, buffer)
			}
		}
	}
	select {
	case <-fast.dropped:
		t.Fatal("the client that kept up was dropped")
	default:
	}
	if n := h.count(); n != 1 {
		t.Errorf("%d clients, want the one that kept up", n)
	}
	h.close()
	if h.join() != nil {
		t.Error("a client joined a closed hub")
	}
}

// TestOversizeEventIsNotSent gives a policy a name longer than an event
// may be: its change is not sent, and the next one is.
func TestOversizeEventIsNotSent(t *testing.T) {
	h := newHub(10, 4, 128)
	c := h.join()
	if h.publish(change{Space: "wds1", Name: strings.Repeat("x", 200)}) {
		t.Error("an event over the bound was published")
	}
	h.publish(change{Space: "wds1", Name: "web"})
	if e := string(<-c.events); !strings.Contains(e, `"name":"web"`) || len(e) > 128+32 {
		t.Errorf("event %q", e)
	}
}

// TestWatchedSpacesAreBounded gives the dashboard more spaces than it may
// watch: it shows and watches the first ones only, and says how many it
// left out.
func TestWatchedSpacesAreBounded(t *testing.T) {
	src := sourceWith(hostile{Name: "web", Stage: "test", Space: "a"})
	src.policies["b"], src.policies["c"] = nil, nil
	ts, s := liveServer(t, src, Options{MaxSpaces: 2})
	for deadline := time.Now().Add(time.Minute); src.watching("a") == 0 || src.watching("b") == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the dashboard does not watch a and b")
		}
	}
	if n := src.watching("c"); n != 0 {
		t.Errorf("the space past the bound is watched %d times", n)
	}
	_, body := get(s, "/", ts.Listener.Addr().String())
	if strings.Contains(body, `data-space="c"`) || !strings.Contains(body, "1 more space(s) not shown") {
		t.Errorf("the overview shows the space past the bound, or does not say it left it out:\n%s", body)
	}
}
