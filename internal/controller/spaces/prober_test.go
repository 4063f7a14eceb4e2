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

package spaces

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// TestProbeAsksForReadyzOnce: a server without /readyz (kcp's virtual
// workspaces) is probed through discovery, and asked for /readyz only the
// first time: issue 61 found two GETs a probe on every kcp space, most of
// the fleet's requests at 300 spaces. A server with /readyz is asked for
// it every time, and a down one is an error.
func TestProbeAsksForReadyzOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		readyz int
		apis   int
		want   []string
		fails  bool
	}{
		{name: "no readyz", readyz: http.StatusNotFound, apis: http.StatusOK, want: []string{"/readyz", "/apis", "/apis", "/apis"}},
		{name: "readyz", readyz: http.StatusOK, apis: http.StatusOK, want: []string{"/readyz", "/readyz", "/readyz"}},
		{name: "not ready", readyz: http.StatusInternalServerError, apis: http.StatusOK, want: []string{"/readyz", "/readyz", "/readyz"}, fails: true},
		{name: "no readyz, discovery down", readyz: http.StatusNotFound, apis: http.StatusServiceUnavailable, fails: true,
			want: []string{"/readyz", "/apis", "/apis", "/apis"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				got = append(got, r.URL.Path)
				mu.Unlock()
				code := tc.apis
				if r.URL.Path == "/readyz" {
					code = tc.readyz
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(code)
				_, _ = w.Write([]byte(`{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`))
			}))
			t.Cleanup(server.Close)
			d, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: server.URL})
			if err != nil {
				t.Fatal(err)
			}
			p := &prober{discovery: d}
			for range 3 {
				if err := p.alive(t.Context()); (err != nil) != tc.fails {
					t.Fatalf("alive: %v, want failing %v", err, tc.fails)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(got, tc.want) {
				t.Errorf("requests %v, want %v", got, tc.want)
			}
		})
	}
}
