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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
)

// The endpoints here are httptest servers that answer as Prometheus's
// HTTP API does: the subject is the client's guard on what an endpoint may
// do. The real Prometheus answers in test/e2e (analysis_test.go).

var options = Options{AllowInsecure: true, Timeout: 2 * time.Second, MaxResponseBytes: DefaultMaxResponseBytes}

// prometheusAPI answers every query with body.
func prometheusAPI(t *testing.T, body string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprint(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

func endpoint(t *testing.T, spec hostingv1alpha1.PrometheusProvider, opts Options) *Endpoint {
	t.Helper()
	e, err := NewEndpoint(&spec, nil, nil, opts)
	if err != nil {
		t.Fatalf("NewEndpoint(%+v): %v", spec, err)
	}
	return e
}

func TestQueryDecodesInstantResults(t *testing.T) {
	for _, tc := range []struct {
		body string
		want []float64
		err  string
	}{
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"1"},"value":[1,"0.5"]},{"metric":{},"value":[1,"2"]}]}}`, []float64{0.5, 2}, ""},
		{`{"status":"success","data":{"resultType":"vector","result":[]}}`, []float64{}, ""},
		{`{"status":"success","data":{"resultType":"scalar","result":[1,"7"]}}`, []float64{7}, ""},
		{`{"status":"success","data":{"resultType":"matrix","result":[]}}`, nil, "gives a matrix"},
		{`{"status":"error","errorType":"bad_data","error":"parse error"}`, nil, "bad_data: parse error"},
		{`<html>oops</html>`, nil, "no Prometheus API response"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"value":[1,"x"]}]}}`, nil, "not a number"},
	} {
		s := prometheusAPI(t, tc.body)
		got, err := endpoint(t, hostingv1alpha1.PrometheusProvider{Address: s.URL}, options).Query(context.Background(), "up")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("answer %s: got %v, %v; want an error saying %q", tc.body, got, err, tc.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("answer %s: got %v, %v; want %v", tc.body, got, err, tc.want)
		}
	}
}

// TestQueryVectorDecodesLabelledSamples: QueryVector keeps each sample's
// labels, refuses what is not an instant vector of numbers, and is
// bounded as Query.
func TestQueryVectorDecodesLabelledSamples(t *testing.T) {
	for _, tc := range []struct {
		body string
		want string
		err  string
	}{
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"stage":"dev"},"value":[1,"0.5"]},{"metric":{},"value":[1,"NaN"]}]}}`,
			"[{map[stage:dev] 0.5} {map[] NaN}]", ""},
		{`{"status":"success","data":{"resultType":"vector","result":[]}}`, "[]", ""},
		{`{"status":"success","data":{"resultType":"scalar","result":[1,"7"]}}`, "", "not an instant vector"},
		{`{"status":"success","data":{"resultType":"vector","result":{"a":1}}}`, "", "does not decode"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"stage":1},"value":[1,"1"]}]}}`, "", "does not decode"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"value":[1,"x"]}]}}`, "", "not a number"},
		{`{"status":"error","errorType":"bad_data","error":"parse error"}`, "", "bad_data: parse error"},
		{`<html>oops</html>`, "", "no Prometheus API response"},
	} {
		s := prometheusAPI(t, tc.body)
		got, err := endpoint(t, hostingv1alpha1.PrometheusProvider{Address: s.URL}, options).QueryVector(context.Background(), "up")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("answer %s: got %v, %v; want an error saying %q", tc.body, got, err, tc.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != tc.want {
			t.Errorf("answer %s: got %v, %v; want %v", tc.body, got, err, tc.want)
		}
	}
	huge := `{"status":"success","data":{"resultType":"vector","result":[` + strings.Repeat(`{"metric":{"a":"b"},"value":[1,"1"]},`, 1000) + `{"value":[1,"1"]}]}}`
	s := prometheusAPI(t, huge)
	_, err := endpoint(t, hostingv1alpha1.PrometheusProvider{Address: s.URL, MaxResponseBytes: ptr.To[int64](4096)}, options).QueryVector(context.Background(), "up")
	if err == nil || !strings.Contains(err.Error(), "larger than 4096 bytes") {
		t.Errorf("a %d-byte answer bounded at 4096: got %v", len(huge), err)
	}
}

func TestAddressesTheStagerRefuses(t *testing.T) {
	for _, address := range []string{
		"http://prometheus:9090",
		"ftp://prometheus",
		"https://user:secret@prometheus",
		"https://prometheus/?x=1",
		"https://prometheus/#f",
		"prometheus:9090",
	} {
		if _, err := NewEndpoint(&hostingv1alpha1.PrometheusProvider{Address: address}, nil, nil, Options{}); err == nil {
			t.Errorf("address %q accepted by a stager that allows no insecure provider", address)
		}
	}
	if _, err := NewEndpoint(&hostingv1alpha1.PrometheusProvider{Address: "http://prometheus:9090"}, nil, nil, Options{AllowInsecure: true}); err != nil {
		t.Errorf("a plain http address refused although allowed: %v", err)
	}
}

func TestTLSAndBearerToken(t *testing.T) {
	var gotAuth string
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		_, _ = fmt.Fprint(w, `{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}`)
	}))
	defer s.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	spec := &hostingv1alpha1.PrometheusProvider{Address: s.URL}

	e, err := NewEndpoint(spec, ca, []byte("s3cret\n"), Options{Timeout: time.Second, MaxResponseBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Query(context.Background(), "up"); err != nil {
		t.Fatalf("query with the server's CA: %v", err)
	}
	if gotAuth != "Bearer s3cret" {
		t.Errorf("Authorization %q, want the token as a bearer", gotAuth)
	}

	e, err = NewEndpoint(spec, nil, []byte("s3cret"), Options{Timeout: time.Second, MaxResponseBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Query(context.Background(), "up")
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("query without the server's CA: got %v, want a certificate error", err)
	}
	if err != nil && strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the error shows the token: %v", err)
	}
	if _, err := NewEndpoint(spec, []byte("not a certificate"), nil, options); err == nil {
		t.Error("a CA that holds no certificate accepted")
	}
	if _, err := NewEndpoint(spec, nil, []byte("a\nb"), options); err == nil {
		t.Error("a token spanning lines accepted")
	}
}

func TestRedirectsStayOnTheProvidersHost(t *testing.T) {
	elsewhere := prometheusAPI(t, `{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}`)
	var hits int
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		switch r.URL.Path {
		case "/api/v1/query":
			http.Redirect(w, r, "/prom/api/v1/query?"+r.URL.RawQuery, http.StatusFound)
		case "/prom/api/v1/query":
			http.Redirect(w, r, elsewhere.URL+"/api/v1/query?"+r.URL.RawQuery, http.StatusFound)
		}
	}))
	defer s.Close()
	_, err := endpoint(t, hostingv1alpha1.PrometheusProvider{Address: s.URL}, options).Query(context.Background(), "up")
	if err == nil || !strings.Contains(err.Error(), "another scheme or host") {
		t.Errorf("a redirect to another host: got %v, want it refused", err)
	}
	if hits != 2 {
		t.Errorf("the provider's host was asked %d times, want 2 (a redirect on the same host is followed)", hits)
	}

	// The same host and port, but plain http: a downgrade is another
	// address.
	tlsServer := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+r.Host+"/api/v1/query?"+r.URL.RawQuery, http.StatusFound)
	}))
	defer tlsServer.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsServer.Certificate().Raw})
	e, err := NewEndpoint(&hostingv1alpha1.PrometheusProvider{Address: tlsServer.URL}, ca, nil, options)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Query(context.Background(), "up"); err == nil || !strings.Contains(err.Error(), "another scheme or host") ||
		!strings.Contains(Detail(err), ": http://"+tlsServer.Listener.Addr().String()) {
		t.Errorf("a redirect from https to http on the same host and port: got %v, want it refused", err)
	}
}

// TestRedirectsAreFollowedThreeTimesAtMost: a provider at /hN redirects N
// times on its own host before it answers.
func TestRedirectsAreFollowedThreeTimesAtMost(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		if _, err := fmt.Sscanf(r.URL.Path, "/h%d/api/v1/query", &n); err != nil {
			http.NotFound(w, r)
			return
		}
		if n > 0 {
			http.Redirect(w, r, fmt.Sprintf("/h%d/api/v1/query?%s", n-1, r.URL.RawQuery), http.StatusFound)
			return
		}
		_, _ = fmt.Fprint(w, `{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}`)
	}))
	defer s.Close()
	for n := range 6 {
		_, err := endpoint(t, hostingv1alpha1.PrometheusProvider{Address: fmt.Sprintf("%s/h%d", s.URL, n)}, options).Query(context.Background(), "up")
		if n <= maxRedirects && err != nil {
			t.Errorf("%d redirects: %v, want them followed", n, err)
		}
		if n > maxRedirects && (err == nil || !strings.Contains(err.Error(), "more than 3 redirects")) {
			t.Errorf("%d redirects: got %v, want the fourth refused", n, err)
		}
	}
}

// TestQueriesTakeNoProxy: the stager's environment may name a proxy for
// its own needs; a provider's query never goes through it, so that the
// token goes to the provider's address only.
func TestQueriesTakeNoProxy(t *testing.T) {
	var proxied atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		_, _ = fmt.Fprint(w, `{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}`)
	}))
	defer proxy.Close()
	for _, v := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		t.Setenv(v, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	e := endpoint(t, hostingv1alpha1.PrometheusProvider{Address: "http://prometheus.invalid:9090"}, options)
	// http.ProxyFromEnvironment reads the environment once a process: the
	// transport itself must have no proxy function.
	if tr, ok := e.client.Transport.(*http.Transport); !ok || tr.Proxy != nil {
		t.Errorf("the provider's transport %T takes a proxy", e.client.Transport)
	}
	if _, err := e.Query(context.Background(), "up"); err == nil {
		t.Error("a query to an address that does not resolve got an answer")
	}
	if n := proxied.Load(); n != 0 {
		t.Errorf("the proxy of the environment got %d queries", n)
	}
}

func TestAnswersAreBounded(t *testing.T) {
	huge := `{"status":"success","data":{"resultType":"vector","result":[` +
		strings.Repeat(`{"metric":{"a":"b"},"value":[1,"1"]},`, 1000) + `{"value":[1,"1"]}]}}`
	s := prometheusAPI(t, huge)
	_, err := endpoint(t, hostingv1alpha1.PrometheusProvider{Address: s.URL, MaxResponseBytes: ptr.To[int64](4096)}, options).Query(context.Background(), "up")
	if err == nil || !strings.Contains(err.Error(), "larger than 4096 bytes") {
		t.Errorf("a %d-byte answer to a provider bounded at 4096: got %v", len(huge), err)
	}
	if _, err := endpoint(t, hostingv1alpha1.PrometheusProvider{Address: s.URL, MaxResponseBytes: ptr.To[int64](1 << 30)},
		Options{AllowInsecure: true, Timeout: time.Second, MaxResponseBytes: 4096}).Query(context.Background(), "up"); err == nil {
		t.Error("a provider raised the stager's bound on answers")
	}

	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	start := time.Now()
	_, err = endpoint(t, hostingv1alpha1.PrometheusProvider{Address: slow.URL, Timeout: &metav1.Duration{Duration: 200 * time.Millisecond}}, options).
		Query(context.Background(), "up")
	if err == nil {
		t.Fatal("a provider that never answers gave an answer")
	}
	if took := time.Since(start); took > options.Timeout {
		t.Errorf("a provider that never answers held the query %s, longer than the stager's bound %s", took, options.Timeout)
	}
}

// TestRefusedAddressesShowNoPassword: a refused address's error reaches a
// policy's status and Events, whose readers must not see the credentials
// an address may carry.
func TestRefusedAddressesShowNoPassword(t *testing.T) {
	for _, address := range []string{"https://user:s3cret@prometheus", "http://user:s3cret@prometheus", "https://user:s3cret@prom etheus:x"} {
		_, err := NewEndpoint(&hostingv1alpha1.PrometheusProvider{Address: address}, nil, nil, Options{})
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("address %q: error %v, want a refusal without the password", address, err)
		}
	}
}
