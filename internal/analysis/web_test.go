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

package analysis

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
)

// The web endpoints here are httptest TLS servers that want a bearer
// token, as a platform's gate would: the subject is the client's guard and
// what it hands the conditions.

// webGate is a TLS gate that answers the handler's status and body to
// requests with its token, and 401 to others; it records the last request.
type webGate struct {
	*httptest.Server
	ca      []byte
	last    atomic.Pointer[http.Request]
	handler atomic.Pointer[func(w http.ResponseWriter, r *http.Request)]
}

func newWebGate(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) *webGate {
	t.Helper()
	g := &webGate{}
	g.handler.Store(&handler)
	g.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.last.Store(r)
		if r.Header.Get("Authorization") != "Bearer gate-token" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		(*g.handler.Load())(w, r)
	}))
	t.Cleanup(g.Close)
	g.ca = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: g.Certificate().Raw})
	return g
}

// answering is a handler that answers status and body.
func answering(status int, body string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = fmt.Fprint(w, body)
	}
}

func (g *webGate) endpoint(t *testing.T, address string, opts Options) *Endpoint {
	t.Helper()
	e, err := NewEndpoint(&hostingv1alpha1.PrometheusProvider{Address: address}, g.ca, []byte("gate-token"), opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

var webOptions = Options{Timeout: 2 * time.Second, MaxResponseBytes: DefaultMaxResponseBytes}

// verdict judges answer as a web analysis with the success and failure
// conditions of a change ticket does: pass, fail or wait.
func verdict(t *testing.T, answer []byte) string {
	t.Helper()
	engine, err := expression.NewEngine()
	if err != nil {
		t.Fatal(err)
	}
	holds := func(src string) bool {
		p, err := engine.Compile(expression.KindWebAnalysis, src)
		if err != nil {
			t.Fatal(err)
		}
		ok, err := p.EvalWebAnalysis(answer)
		if err != nil {
			t.Fatalf("%s on %s: %v", src, answer, err)
		}
		return ok
	}
	switch {
	case holds(`result.state == 'rejected'`):
		return "fail"
	case holds(`result.state == 'approved' && result.approvals >= 2`):
		return "pass"
	}
	return "wait"
}

// TestWebGateAnswers: a web endpoint's 2xx JSON answer is handed on as it
// is and judges pass, fail or wait; everything else is an error that says
// why without quoting the answer: another status, not JSON, too large,
// too deep, too wide, too slow.
func TestWebGateAnswers(t *testing.T) {
	deep := strings.Repeat(`{"a":`, expression.MaxJSONDepth+1) + "1" + strings.Repeat("}", expression.MaxJSONDepth+1)
	wide := "[" + strings.Repeat("0,", expression.MaxJSONNodes) + "0]"
	for _, tc := range []struct {
		name    string
		status  int
		body    string
		verdict string
		reason  Reason
		err     string
	}{
		{name: "pass", status: 200, body: `{"state": "approved", "approvals": 2}`, verdict: "pass"},
		{name: "fail", status: 200, body: `{"state": "rejected", "approvals": 0}`, verdict: "fail"},
		{name: "wait", status: 200, body: `{"state": "pending", "approvals": 1}`, verdict: "wait"},
		{name: "created", status: 201, body: `{"state": "approved", "approvals": 3}`, verdict: "pass"},
		{name: "not found", status: 404, body: `{"state": "approved", "approvals": 3}`, reason: ReasonQueryFailed, err: "HTTP 404"},
		{name: "server error", status: 503, body: `oops`, reason: ReasonQueryFailed, err: "HTTP 503"},
		{name: "html", status: 200, body: `<html>secret-page</html>`, reason: ReasonBadAnswer, err: "not JSON"},
		{name: "two values", status: 200, body: `{} {}`, reason: ReasonBadAnswer, err: "not one JSON value"},
		{name: "deep", status: 200, body: deep, reason: ReasonBadAnswer, err: "nests deeper than 32"},
		{name: "wide", status: 200, body: wide, reason: ReasonBadAnswer, err: "more than 100000 values"},
		{name: "huge number", status: 200, body: `{"n": 1e999}`, reason: ReasonBadAnswer, err: "out of range"},
		{name: "oversize", status: 200, body: `{"pad": "` + strings.Repeat("x", 2048) + `"}`, reason: ReasonTooLarge, err: "larger than 1024 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newWebGate(t, answering(tc.status, tc.body))
			e := g.endpoint(t, g.URL, Options{Timeout: 2 * time.Second, MaxResponseBytes: 1024 * 1024})
			if tc.reason == ReasonTooLarge {
				e = g.endpoint(t, g.URL, Options{Timeout: 2 * time.Second, MaxResponseBytes: 1024})
			}
			answer, err := e.Fetch(context.Background(), WebRequest{Path: "gates/x"})
			if tc.err != "" {
				if err == nil || ReasonOf(err) != tc.reason || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %s, %v; want a %s error saying %q", answer, err, tc.reason, tc.err)
				}
				if strings.Contains(err.Error(), "secret-page") || strings.Contains(err.Error(), "xxxx") {
					t.Errorf("the error quotes the answer: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(answer) != tc.body {
				t.Errorf("answer %s, want the body %s", answer, tc.body)
			}
			if got := verdict(t, answer); got != tc.verdict {
				t.Errorf("verdict %s, want %s", got, tc.verdict)
			}
		})
	}
}

// TestWebGateTimesOut: an endpoint that does not answer within the
// timeout is a Timeout error, not a wait of the stager's worker.
func TestWebGateTimesOut(t *testing.T) {
	release := make(chan struct{})
	g := newWebGate(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	_, err := g.endpoint(t, g.URL, Options{Timeout: 200 * time.Millisecond, MaxResponseBytes: 1024}).Fetch(context.Background(), WebRequest{})
	if ReasonOf(err) != ReasonTimeout {
		t.Fatalf("got %v, want a Timeout", err)
	}
}

// TestWebGateRequests: the request is a GET under the provider's address,
// with the token, the rendered path and parameters escaped; a value cannot
// add a segment, a parameter or leave the address's path, and a path with
// a . or .. segment is not sent.
func TestWebGateRequests(t *testing.T) {
	g := newWebGate(t, answering(200, `{}`))
	e := g.endpoint(t, g.URL+"/api/gates/", webOptions)
	c := Context{Space: "kubeconfig#wds1", Policy: "web", Stage: "a/b?c", Revision: "v1.2", Clusters: []string{"dev1", "dev2"}}
	req := RenderWeb(&v1alpha1.WebRequest{Path: "/tickets/{{space}}/{{stage}}/{{revision}}",
		Params: map[string]string{"policy": "{{policy}}&x=1", "clusters": "{{clusters}}"}}, c)
	if _, err := e.Fetch(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	r := g.last.Load()
	if r.Method != http.MethodGet {
		t.Errorf("method %s, want GET", r.Method)
	}
	if got, want := r.URL.EscapedPath(), "/api/gates/tickets/kubeconfig%23wds1/a%2Fb%3Fc/v1.2"; got != want {
		t.Errorf("path %s, want %s", got, want)
	}
	if got, want := r.URL.Query(), (url.Values{"policy": {"web&x=1"}, "clusters": {"dev1,dev2"}}); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("parameters %v, want %v", got, want)
	}

	for _, stage := range []string{"..", "."} {
		before := g.last.Load()
		_, err := e.Fetch(context.Background(), RenderWeb(&v1alpha1.WebRequest{Path: "t/{{stage}}/x"}, Context{Stage: stage}))
		if ReasonOf(err) != ReasonBadRequest {
			t.Errorf("stage %q: got %v, want BadRequest", stage, err)
		}
		if g.last.Load() != before {
			t.Errorf("stage %q: the request was sent", stage)
		}
	}
	for _, path := range []string{"../x", "a/%2e%2E/b", "a?b=1", "a#f", `a\b`, "%zz"} {
		if _, err := e.Fetch(context.Background(), WebRequest{Path: path}); ReasonOf(err) != ReasonBadRequest {
			t.Errorf("path %q: got %v, want BadRequest", path, err)
		}
	}
	// A path that looks like an address stays a path under the provider's.
	if _, err := e.Fetch(context.Background(), WebRequest{Path: "//elsewhere.example/x"}); err != nil {
		t.Fatal(err)
	}
	if r := g.last.Load(); r.URL.Path != "/api/gates/elsewhere.example/x" || r.Host != g.Listener.Addr().String() {
		t.Errorf("a path like an address went to %s %s", r.Host, r.URL.Path)
	}
}

// TestWebGateRedirectsStayOnItsHost: the guard of prometheus providers
// holds for web ones: a redirect to another host is refused, and the
// token is not sent there; one on the same host is followed.
func TestWebGateRedirectsStayOnItsHost(t *testing.T) {
	var elsewhereHits atomic.Int32
	elsewhere := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhereHits.Add(1)
		_, _ = fmt.Fprint(w, `{"state": "approved", "approvals": 9}`)
	}))
	defer elsewhere.Close()
	g := newWebGate(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/here", http.StatusFound)
		case "/here":
			_, _ = fmt.Fprint(w, `{"state": "approved", "approvals": 2}`)
		default:
			http.Redirect(w, r, elsewhere.URL+"/gate", http.StatusFound)
		}
	})
	e := g.endpoint(t, g.URL, webOptions)
	if answer, err := e.Fetch(context.Background(), WebRequest{Path: "moved"}); err != nil || verdict(t, answer) != "pass" {
		t.Errorf("a redirect on the gate's host: got %s, %v; want it followed", answer, err)
	}
	_, err := e.Fetch(context.Background(), WebRequest{Path: "away"})
	if ReasonOf(err) != ReasonUnreachable || !strings.Contains(err.Error(), "another scheme or host") {
		t.Errorf("a redirect to another host: got %v, want it refused", err)
	}
	if elsewhereHits.Load() != 0 {
		t.Errorf("the other host was asked %d times", elsewhereHits.Load())
	}
}

// TestWebGateTakesNoProxy: a web request does not go through the proxy
// the stager's environment names.
func TestWebGateTakesNoProxy(t *testing.T) {
	var proxied atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer proxy.Close()
	t.Setenv("HTTPS_PROXY", proxy.URL)
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("NO_PROXY", "")
	g := newWebGate(t, answering(200, `{"state": "approved", "approvals": 2}`))
	if _, err := g.endpoint(t, g.URL, webOptions).Fetch(context.Background(), WebRequest{}); err != nil {
		t.Fatal(err)
	}
	if proxied.Load() != 0 {
		t.Errorf("the request went through the environment's proxy")
	}
}

// TestWebProvidersThroughTheHostingCluster: a MetricProvider has exactly
// one of spec.prometheus and spec.web (the CRD refuses both and neither;
// an existing prometheus-only object still validates); a web provider's
// CA and token come from labelled Secrets as a prometheus one's do, its
// spec.spaces is obeyed, and an analysis naming a provider of the other
// kind gets WrongKind, with nothing sent.
func TestWebProvidersThroughTheHostingCluster(t *testing.T) {
	f := newFixture(t)
	p := newPrometheusTLS(t, "t0ken")
	f.secret("prom", true, p, "t0ken")
	var gateHits atomic.Int32
	gate := newWebGate(t, func(w http.ResponseWriter, r *http.Request) {
		gateHits.Add(1)
		_, _ = fmt.Fprint(w, `{"state": "approved", "approvals": 2}`)
	})
	gateSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.namespace, Name: "gate",
		Labels: map[string]string{hostingv1alpha1.CredentialLabel: "true"}},
		Data: map[string][]byte{"ca.crt": gate.ca, "token": []byte("gate-token")}}
	if err := f.c.Create(context.Background(), gateSecret); err != nil {
		t.Fatal(err)
	}
	web := func(spaces ...string) hostingv1alpha1.MetricProviderSpec {
		return hostingv1alpha1.MetricProviderSpec{Spaces: spaces, Web: &hostingv1alpha1.WebProvider{Address: gate.URL,
			CASecretRef:          &hostingv1alpha1.SecretKeyRef{Name: "gate", Key: "ca.crt"},
			BearerTokenSecretRef: &hostingv1alpha1.SecretKeyRef{Name: "gate", Key: "token"}}}
	}
	webName := f.provider("web", web("wds1"))
	promName := f.provider("prom", withSecrets(p, "prom", hostingv1alpha1.AllSpaces))

	// The one-of rule.
	both := web("wds1")
	both.Prometheus = &hostingv1alpha1.PrometheusProvider{Address: p.URL}
	for what, spec := range map[string]hostingv1alpha1.MetricProviderSpec{"both": both, "neither": {Spaces: []string{"wds1"}}} {
		mp := &hostingv1alpha1.MetricProvider{ObjectMeta: metav1.ObjectMeta{GenerateName: "one-of-"}, Spec: spec}
		err := f.c.Create(context.Background(), mp)
		if err == nil {
			_ = f.c.Delete(context.Background(), mp)
		}
		if err == nil || !strings.Contains(err.Error(), "exactly one of prometheus and web") {
			t.Errorf("a provider with %s: got %v, want it refused", what, err)
		}
	}
	// A prometheus-only object, as written before spec.web, still
	// validates on update.
	existing := &hostingv1alpha1.MetricProvider{}
	if err := f.c.Get(context.Background(), client.ObjectKey{Name: promName}, existing); err != nil {
		t.Fatal(err)
	}
	existing.Spec.Spaces = append(existing.Spec.Spaces, "wds9")
	if err := f.c.Update(context.Background(), existing); err != nil {
		t.Errorf("updating a prometheus provider: %v", err)
	}

	cached, _ := f.cached(tlsOptions)
	for reader, providers := range map[string]*Providers{"cache": cached, "direct": f.direct(tlsOptions)} {
		var answer []byte
		eventually(t, reader+": the web provider", func() error {
			var err error
			answer, err = providers.Fetch(context.Background(), "wds1", webName, WebRequest{Path: "gates/x"})
			return err
		})
		if verdict(t, answer) != "pass" {
			t.Errorf("%s: answer %s, want a pass", reader, answer)
		}
		if _, err := providers.Fetch(context.Background(), "wds2", webName, WebRequest{}); ReasonOf(err) != ReasonSpaceNotAllowed {
			t.Errorf("%s: a space the web provider does not name: got %v, want SpaceNotAllowed", reader, err)
		}
		queries, hits := p.queries.Load(), gateHits.Load()
		if _, err := providers.Query(context.Background(), "wds1", webName, "up"); ReasonOf(err) != ReasonWrongKind ||
			!strings.Contains(err.Error(), "needs spec.prometheus") {
			t.Errorf("%s: a query to a web provider: got %v, want WrongKind", reader, err)
		}
		if _, err := providers.Fetch(context.Background(), "wds1", promName, WebRequest{}); ReasonOf(err) != ReasonWrongKind ||
			!strings.Contains(err.Error(), "needs spec.web") {
			t.Errorf("%s: a web analysis naming a prometheus provider: got %v, want WrongKind", reader, err)
		}
		if p.queries.Load() != queries || gateHits.Load() != hits {
			t.Errorf("%s: a request of the wrong kind was sent", reader)
		}
	}
}
