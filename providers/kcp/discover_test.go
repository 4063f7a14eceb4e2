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

package kcp

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// fakeKCP answers, under any path prefix, what Discover asks of kcp: the
// discovery of apis.kcp.io, the APIExportEndpointSlice "slice" with
// endpoints, and, through an endpoint, one APIBinding of logical cluster
// "abc".
func fakeKCP(endpoints *[]string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var body any
		switch p := r.URL.Path; {
		case strings.HasSuffix(p, "/api"):
			body = map[string]any{"kind": "APIVersions", "versions": []string{"v1"}}
		case strings.HasSuffix(p, "/apis"):
			gv := map[string]any{"groupVersion": "apis.kcp.io/v1alpha1", "version": "v1alpha1"}
			body = map[string]any{"kind": "APIGroupList", "apiVersion": "v1",
				"groups": []any{map[string]any{"name": "apis.kcp.io", "versions": []any{gv}, "preferredVersion": gv}}}
		case strings.HasSuffix(p, "/apis/apis.kcp.io/v1alpha1"):
			body = map[string]any{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apis.kcp.io/v1alpha1",
				"resources": []any{
					map[string]any{"name": "apiexportendpointslices", "kind": "APIExportEndpointSlice", "namespaced": false, "verbs": []string{"get", "list"}},
					map[string]any{"name": "apibindings", "kind": "APIBinding", "namespaced": false, "verbs": []string{"get", "list"}},
				}}
		case strings.HasSuffix(p, "/apiexportendpointslices/slice"):
			var list []any
			for _, e := range *endpoints {
				list = append(list, map[string]any{"url": e})
			}
			body = map[string]any{"kind": "APIExportEndpointSlice", "apiVersion": "apis.kcp.io/v1alpha1",
				"metadata": map[string]any{"name": "slice"}, "status": map[string]any{"endpoints": list}}
		case strings.HasSuffix(p, "/apibindings"):
			body = map[string]any{"kind": "APIBindingList", "apiVersion": "apis.kcp.io/v1alpha1", "metadata": map[string]any{},
				"items": []any{map[string]any{"metadata": map[string]any{"name": "stager", "annotations": map[string]any{"kcp.io/cluster": "abc"}}}}}
		default:
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(body)
	}
}

// recorder is a server that records the credentials it is sent.
type recorder struct {
	mu    sync.Mutex
	seen  []string
	inner http.Handler
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.seen = append(r.seen, req.Method+" "+req.URL.Path+" "+req.Header.Get("Authorization"))
	r.mu.Unlock()
	if r.inner != nil {
		r.inner.ServeHTTP(w, req)
		return
	}
	http.NotFound(w, req)
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// TestDiscoverSendsCredentialsOverHTTPSOnly: whoever writes the endpoint
// slice's status chooses where Discover sends the user's credentials. An
// endpoint that is not https, or, when the kubeconfig skips verifying its
// server's certificate, one on another host, is reported and never
// contacted; the other endpoints are read.
func TestDiscoverSendsCredentialsOverHTTPSOnly(t *testing.T) {
	var endpoints []string
	kcp := httptest.NewTLSServer(fakeKCP(&endpoints))
	defer kcp.Close()
	plain := &recorder{inner: fakeKCP(&endpoints)}
	plainServer := httptest.NewServer(plain)
	defer plainServer.Close()
	other := &recorder{inner: fakeKCP(&endpoints)}
	otherServer := httptest.NewTLSServer(other)
	defer otherServer.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: kcp.Certificate().Raw})

	for _, c := range []struct {
		name      string
		insecure  bool
		endpoints []string
		// served are the spaces found; refused the endpoints reported.
		served, refused int
		// otherSent: the other https server is sent the credentials.
		otherSent bool
	}{
		{name: "plain http", endpoints: []string{plainServer.URL + "/services/apiexport/x"}, refused: 1},
		{name: "plain http beside https", endpoints: []string{plainServer.URL + "/x", kcp.URL + "/services/apiexport/x/"}, served: 1, refused: 1},
		{name: "credentials in the URL", endpoints: []string{strings.Replace(otherServer.URL, "https://", "https://u:p@", 1)}, refused: 1},
		{name: "no scheme", endpoints: []string{strings.TrimPrefix(kcp.URL, "https://")}, refused: 1},
		{name: "another host, verified", endpoints: []string{otherServer.URL + "/services/apiexport/x"}, served: 1, otherSent: true},
		{name: "another host, unverified", insecure: true, endpoints: []string{otherServer.URL + "/x", kcp.URL + "/x"}, served: 1, refused: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			endpoints = c.endpoints
			before := len(other.requests())
			cfg := &rest.Config{Host: kcp.URL, BearerToken: "the-users-token"}
			if c.insecure {
				cfg.Insecure = true
			} else {
				cfg.CAData = ca
			}
			spaces, err := Discover(context.Background(), cfg, "slice")
			if err != nil {
				t.Fatal(err)
			}
			served, refused := 0, 0
			for _, s := range spaces {
				if s.Problem == "" {
					served++
					continue
				}
				refused++
				if s.Config != nil || strings.Contains(s.Problem, ":p@") || !strings.HasPrefix(s.Name, "slice/endpoint[") {
					t.Errorf("refused endpoint reported as %+v", s)
				}
			}
			if served != c.served || refused != c.refused {
				t.Errorf("Discover = %+v: %d spaces and %d refused endpoints, want %d and %d", spaces, served, refused, c.served, c.refused)
			}
			if got := plain.requests(); len(got) > 0 {
				t.Errorf("the plain http server was sent %q", got)
			}
			if sent := len(other.requests()) > before; sent != c.otherSent {
				t.Errorf("the other https server sent requests: %v, want %v (%q)", sent, c.otherSent, other.requests()[before:])
			}
		})
	}
}
