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
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// change says that a policy was added, changed or deleted.
type change struct {
	Space string `json:"space"`
	Name  string `json:"name"`
}

// hub fans changes out to the live clients. A client that falls behind by
// a whole buffer is dropped (its page reconnects and reloads), so that a
// slow client never holds up the watches or the other clients.
type hub struct {
	mu       sync.Mutex
	clients  map[*liveClient]struct{}
	max      int
	buffer   int
	maxBytes int
	closed   bool
}

type liveClient struct {
	events  chan []byte
	dropped chan struct{}
}

func newHub(maxClients, buffer, maxBytes int) *hub {
	return &hub{clients: map[*liveClient]struct{}{}, max: maxClients, buffer: buffer, maxBytes: maxBytes}
}

// join adds a client, or returns nil when there are as many as allowed.
func (h *hub) join() *liveClient {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || len(h.clients) >= h.max {
		return nil
	}
	c := &liveClient{events: make(chan []byte, h.buffer), dropped: make(chan struct{})}
	h.clients[c] = struct{}{}
	return c
}

// leave removes a client.
func (h *hub) leave(c *liveClient) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.drop(c)
}

// drop removes a client and tells it so; h.mu is held.
func (h *hub) drop(c *liveClient) {
	if _, ok := h.clients[c]; ok {
		delete(h.clients, c)
		close(c.dropped)
	}
}

// publish sends a change to every client without waiting for any; an event
// larger than the bound is not sent.
func (h *hub) publish(ch change) bool {
	data, err := json.Marshal(ch)
	if err != nil || len(data) > h.maxBytes {
		return false
	}
	event := []byte(fmt.Sprintf("event: change\ndata: %s\n\n", data))
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		select {
		case c.events <- event:
		default:
			h.drop(c)
		}
	}
	return true
}

// close drops every client and lets none join.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for c := range h.clients {
		h.drop(c)
	}
}

// clients returns how many clients are live.
func (h *hub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}

// events serves the live updates as server-sent events.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	c := s.hub.join()
	if c == nil {
		w.Header().Set("Retry-After", "30")
		http.Error(w, "too many live clients", http.StatusServiceUnavailable)
		return
	}
	defer s.hub.leave(c)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	// A comment at once, so that the client knows it is connected.
	if _, err := w.Write([]byte(": live\nretry: 2000\n\n")); err != nil {
		return
	}
	flusher.Flush()
	rc := http.NewResponseController(w)
	for {
		select {
		case <-r.Context().Done():
			return
		case <-c.dropped:
			return
		case event := <-c.events:
			// A client that does not read within a while is dropped.
			_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if _, err := w.Write(event); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}
