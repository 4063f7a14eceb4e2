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
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// The tests of Providers read MetricProviders and Secrets from a real
// API server, through the stager's cache (CacheOptions) and, as kubectl
// stager eval does, directly; the providers are httptest TLS servers.

var hosting *environment.Space

func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, "analysis", func(s *framework.Suite) error {
		if testing.Short() {
			return nil // make test-unit: no API server
		}
		dir, err := environment.HostingCRDDir()
		if err != nil {
			return err
		}
		scheme := environment.Scheme()
		if err := hostingv1alpha1.AddToScheme(scheme); err != nil {
			return err
		}
		return environment.SharedSpace(&hosting, "analysis-hosting", environment.WithCRDDirs(dir), environment.WithScheme(scheme))(s)
	}))
}

// prometheusTLS is a provider that answers 1 to the bearer token it holds
// (which the test may change), counting queries and connections.
type prometheusTLS struct {
	*httptest.Server
	token                   atomic.Pointer[string]
	queries, opened, closed atomic.Int32
	caPEM                   []byte
}

func newPrometheusTLS(t *testing.T, token string) *prometheusTLS {
	t.Helper()
	p := &prometheusTLS{}
	p.token.Store(&token)
	p.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.queries.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+*p.token.Load() {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = fmt.Fprint(w, `{"status":"error","errorType":"unauthorized","error":"wrong token"}`)
			return
		}
		_, _ = fmt.Fprint(w, `{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}`)
	}))
	p.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			p.opened.Add(1)
		case http.StateClosed, http.StateHijacked:
			p.closed.Add(1)
		}
	}
	p.StartTLS()
	t.Cleanup(p.Close)
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.Certificate().Raw})
	return p
}

// fixture is a Secret namespace of its own, with the hosting client.
type fixture struct {
	t         *testing.T
	c         client.Client
	namespace string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("needs an API server")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "metric-secrets-"}}
	if err := hosting.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hosting.Client.Delete(context.Background(), ns) })
	return &fixture{t: t, c: hosting.Client, namespace: ns.Name}
}

// secret creates a Secret of the namespace with ca.crt and token, labelled
// as a provider credential when labelled.
func (f *fixture) secret(name string, labelled bool, p *prometheusTLS, token string) {
	f.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.namespace, Name: name},
		Data: map[string][]byte{"ca.crt": p.caPEM, "token": []byte(token)}}
	if labelled {
		s.Labels = map[string]string{hostingv1alpha1.CredentialLabel: "true"}
	}
	if err := f.c.Create(context.Background(), s); err != nil {
		f.t.Fatal(err)
	}
}

// provider creates a MetricProvider, named after the test, deleted when it
// ends.
func (f *fixture) provider(suffix string, spec hostingv1alpha1.MetricProviderSpec) string {
	f.t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(f.t.Name())) + "-" + suffix
	mp := &hostingv1alpha1.MetricProvider{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if err := f.c.Create(context.Background(), mp); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = f.c.Delete(context.Background(), mp) })
	return name
}

// withSecrets is a spec of p's address, with its CA and token from the
// Secret named secret.
func withSecrets(p *prometheusTLS, secret string, spaces ...string) hostingv1alpha1.MetricProviderSpec {
	return hostingv1alpha1.MetricProviderSpec{Spaces: spaces, Prometheus: &hostingv1alpha1.PrometheusProvider{Address: p.URL,
		CASecretRef:          &hostingv1alpha1.SecretKeyRef{Name: secret, Key: "ca.crt"},
		BearerTokenSecretRef: &hostingv1alpha1.SecretKeyRef{Name: secret, Key: "token"}}}
}

// requestCounter counts the requests a rest.Config's clients send.
type requestCounter struct{ n atomic.Int32 }

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		c.n.Add(1)
		return rt.RoundTrip(r)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// cached returns Providers reading through the stager's cache of the
// hosting cluster, running until the test ends, and the count of the
// requests the cache sends to the API server.
func (f *fixture) cached(opts Options) (*Providers, *requestCounter) {
	f.t.Helper()
	counter := &requestCounter{}
	cfg := rest.CopyConfig(hosting.Config)
	cfg.Wrap(counter.wrap)
	scheme := hosting.Client.Scheme()
	cl, err := cluster.New(cfg, func(o *cluster.Options) { o.Scheme, o.Cache = scheme, CacheOptions(scheme, f.namespace) })
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = cl.Start(ctx) })
	f.t.Cleanup(func() { cancel(); wg.Wait() })
	// As the manager does before it starts the controllers.
	if !cl.GetCache().WaitForCacheSync(ctx) {
		f.t.Fatal("the cache did not start")
	}
	opts.SecretNamespace = f.namespace
	return &Providers{Reader: cl.GetCache(), Options: opts}, counter
}

// direct returns Providers reading straight from the API server, as
// kubectl stager eval does.
func (f *fixture) direct(opts Options) *Providers {
	opts.SecretNamespace = f.namespace
	return &Providers{Reader: f.c, Options: opts}
}

var tlsOptions = Options{Timeout: 2 * time.Second, MaxResponseBytes: DefaultMaxResponseBytes}

// eventually retries query until it answers, for the cache to see a change.
func eventually(t *testing.T, what string, query func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := query()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, Detail(err))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestProvidersSendOnlyLabelledSecrets (issue 54, N3): a provider may name
// only the Secrets of the Secret namespace labelled as provider
// credentials; any other (a kubeconfig, a pull secret...) is refused
// before a query is sent, through the stager's cache as through a direct
// reader, and the space is not told its name.
func TestProvidersSendOnlyLabelledSecrets(t *testing.T) {
	f := newFixture(t)
	const token = "s3cret-token"
	p := newPrometheusTLS(t, token)
	f.secret("kubeconfig-wds1", false, p, token)
	name := f.provider("unlabelled", withSecrets(p, "kubeconfig-wds1", hostingv1alpha1.AllSpaces))
	cached, _ := f.cached(tlsOptions)
	for reader, providers := range map[string]*Providers{"cache": cached, "direct": f.direct(tlsOptions)} {
		_, err := providers.Query(context.Background(), "wds1", name, "up")
		if ReasonOf(err) != ReasonCredentialsRefused {
			t.Fatalf("%s: a provider naming an unlabelled Secret: got %v, want CredentialsRefused", reader, err)
		}
		if msg := err.Error(); strings.Contains(msg, "kubeconfig-wds1") || strings.Contains(msg, f.namespace) {
			t.Errorf("%s: the space is told the Secret's name: %s", reader, msg)
		}
		if !strings.Contains(Detail(err), "kubeconfig-wds1") {
			t.Errorf("%s: the log is not told which Secret: %s", reader, Detail(err))
		}
	}
	if n := p.queries.Load(); n != 0 {
		t.Fatalf("the provider got %d queries with an unlabelled Secret's credentials", n)
	}
	// The stager's cache does not even hold it.
	held := &corev1.SecretList{}
	if err := cached.Reader.List(context.Background(), held, client.InNamespace(f.namespace)); err != nil {
		t.Fatal(err)
	}
	if len(held.Items) != 0 {
		t.Errorf("the stager's cache holds %d unlabelled Secrets", len(held.Items))
	}

	// Labelled, the same Secret is used: the label is what is checked.
	s := &corev1.Secret{}
	if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: f.namespace, Name: "kubeconfig-wds1"}, s); err != nil {
		t.Fatal(err)
	}
	s.Labels = map[string]string{hostingv1alpha1.CredentialLabel: "true"}
	if err := f.c.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the labelled Secret's credentials", func() error {
		_, err := cached.Query(context.Background(), "wds1", name, "up")
		return err
	})
	if _, err := f.direct(tlsOptions).Query(context.Background(), "wds1", name, "up"); err != nil {
		t.Errorf("direct, with the labelled Secret: %v", Detail(err))
	}

	// A label of another value is no label.
	s.Labels[hostingv1alpha1.CredentialLabel] = "false"
	if err := f.c.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Secret refused again", func() error {
		if _, err := cached.Query(context.Background(), "wds1", name, "up"); ReasonOf(err) != ReasonCredentialsRefused {
			return fmt.Errorf("got %w, want CredentialsRefused", err)
		}
		return nil
	})
	if _, err := f.direct(tlsOptions).Query(context.Background(), "wds1", name, "up"); ReasonOf(err) != ReasonCredentialsRefused {
		t.Errorf("direct, with the label false: got %v, want CredentialsRefused", err)
	}
}

// TestProvidersServeOnlyTheirSpaces (issue 54, N5): a space's policy
// queries a provider only if its spec.spaces names the space, or is "*";
// by default no space may. A refused space's query is never sent.
func TestProvidersServeOnlyTheirSpaces(t *testing.T) {
	f := newFixture(t)
	p := newPrometheusTLS(t, "t0ken")
	f.secret("prom", true, p, "t0ken")
	none := f.provider("none", withSecrets(p, "prom"))
	some := f.provider("some", withSecrets(p, "prom", "kubeconfig#wds1", "kcp#root:org:wds2"))
	all := f.provider("all", withSecrets(p, "prom", hostingv1alpha1.AllSpaces))
	cached, _ := f.cached(tlsOptions)
	for _, tc := range []struct {
		provider, space string
		allowed         bool
	}{
		{none, "kubeconfig#wds1", false},
		{none, "", false},
		{some, "kubeconfig#wds1", true},
		{some, "kcp#root:org:wds2", true},
		{some, "kubeconfig#wds2", false},
		{some, "kcp#root:org", false},
		{some, "kubeconfig#wds1 ", false},
		{some, "*", false},
		{all, "kubeconfig#wds2", true},
		{all, "", true},
	} {
		before := p.queries.Load()
		var err error
		eventually(t, "the cache to hold the providers", func() error {
			_, err = cached.Query(context.Background(), tc.space, tc.provider, "up")
			if ReasonOf(err) == ReasonNotFound {
				return err
			}
			return nil
		})
		sent := p.queries.Load() - before
		switch {
		case tc.allowed && (err != nil || sent != 1):
			t.Errorf("space %q, provider %s: %v, %d queries sent; want an answer", tc.space, tc.provider, err, sent)
		case !tc.allowed && (ReasonOf(err) != ReasonSpaceNotAllowed || sent != 0):
			t.Errorf("space %q, provider %s: %v, %d queries sent; want SpaceNotAllowed and none", tc.space, tc.provider, err, sent)
		}
	}
}

// TestStatusShowsNoAddressOrSecret (issue 54, info item): whatever goes
// wrong, the error a space reads in its policies' status names the
// provider and a reason, never the provider's address, its Secrets, their
// namespace or the token; the stager's log (Detail) says more.
func TestStatusShowsNoAddressOrSecret(t *testing.T) {
	f := newFixture(t)
	const token = "s3cret-token"
	p := newPrometheusTLS(t, token)
	f.secret("prom-access", true, p, token)
	f.secret("prom-unlabelled", false, p, token)
	bad := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.namespace, Name: "prom-bad",
		Labels: map[string]string{hostingv1alpha1.CredentialLabel: "true"}},
		Data: map[string][]byte{"ca.crt": []byte("not a certificate"), "token": []byte("two\nlines")}}
	if err := f.c.Create(context.Background(), bad); err != nil {
		t.Fatal(err)
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddress := "https://" + closed.Addr().String()
	_ = closed.Close()
	elsewhere := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, p.URL+"/api/v1/query?"+r.URL.RawQuery, http.StatusFound)
	}))
	defer elsewhere.Close()
	release := make(chan struct{})
	slow := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	ca := func(s *httptest.Server) []byte {
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	}
	caSecret := func(name string, data []byte) string {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.namespace, Name: name,
			Labels: map[string]string{hostingv1alpha1.CredentialLabel: "true"}}, Data: map[string][]byte{"ca.crt": data}}
		if err := f.c.Create(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		return name
	}
	spec := func(address, caName, tokenName string) hostingv1alpha1.MetricProviderSpec {
		s := hostingv1alpha1.MetricProviderSpec{Spaces: []string{hostingv1alpha1.AllSpaces}, Prometheus: &hostingv1alpha1.PrometheusProvider{Address: address}}
		if caName != "" {
			s.Prometheus.CASecretRef = &hostingv1alpha1.SecretKeyRef{Name: caName, Key: "ca.crt"}
		}
		if tokenName != "" {
			s.Prometheus.BearerTokenSecretRef = &hostingv1alpha1.SecretKeyRef{Name: tokenName, Key: "token"}
		}
		return s
	}
	elsewhereCA, slowCA := caSecret("elsewhere-ca", ca(elsewhere)), caSecret("slow-ca", ca(slow))
	wrongToken := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.namespace, Name: "prom-wrong",
		Labels: map[string]string{hostingv1alpha1.CredentialLabel: "true"}}, Data: map[string][]byte{"token": []byte("not-the-t0ken")}}
	if err := f.c.Create(context.Background(), wrongToken); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		provider string
		space    string
		reason   Reason
	}{
		{"no-such-provider", "wds1", ReasonNotFound},
		{f.provider("not-allowed", hostingv1alpha1.MetricProviderSpec{Spaces: []string{"wds2"},
			Prometheus: withSecrets(p, "prom-access").Prometheus}), "wds1", ReasonSpaceNotAllowed},
		{f.provider("unlabelled", spec(p.URL, "prom-unlabelled", "prom-unlabelled")), "wds1", ReasonCredentialsRefused},
		{f.provider("missing", spec(p.URL, "prom-missing", "")), "wds1", ReasonCredentialsRefused},
		{f.provider("no-key", spec(p.URL, elsewhereCA, elsewhereCA)), "wds1", ReasonCredentialsRefused},
		{f.provider("bad-ca", spec(p.URL, "prom-bad", "")), "wds1", ReasonCredentialsRefused},
		{f.provider("bad-token", spec(p.URL, "prom-access", "prom-bad")), "wds1", ReasonCredentialsRefused},
		{f.provider("plain-http", spec("http://"+p.Listener.Addr().String(), "", "")), "wds1", ReasonAddressRefused},
		{f.provider("down", spec(closedAddress, "", "")), "wds1", ReasonUnreachable},
		{f.provider("untrusted", spec(p.URL, "", "prom-access")), "wds1", ReasonUnreachable},
		{f.provider("redirected", spec(elsewhere.URL, elsewhereCA, "prom-access")), "wds1", ReasonUnreachable},
		{f.provider("silent", hostingv1alpha1.MetricProviderSpec{Spaces: []string{hostingv1alpha1.AllSpaces}, Prometheus: &hostingv1alpha1.PrometheusProvider{
			Address: slow.URL, CASecretRef: &hostingv1alpha1.SecretKeyRef{Name: slowCA, Key: "ca.crt"},
			Timeout: &metav1.Duration{Duration: 200 * time.Millisecond}}}), "wds1", ReasonTimeout},
		{f.provider("wrong-token", spec(p.URL, "prom-access", "prom-wrong")), "wds1", ReasonQueryFailed},
	} {
		providers := f.direct(tlsOptions)
		_, err := providers.Query(context.Background(), tc.space, tc.provider, "up")
		if ReasonOf(err) != tc.reason {
			t.Errorf("provider %s: got %v, want %s", tc.provider, Detail(err), tc.reason)
			continue
		}
		shown := err.Error()
		if !strings.Contains(shown, fmt.Sprintf("%q", tc.provider)) {
			t.Errorf("provider %s: %q does not name the provider", tc.provider, shown)
		}
		rest := strings.Replace(shown, fmt.Sprintf("%q", tc.provider), "", 1)
		for _, hidden := range []string{"127.0.0.1", "localhost", "prom-", "-ca", f.namespace, token, "not-the-t0ken"} {
			if strings.Contains(rest, hidden) {
				t.Errorf("provider %s: the space would read %q in %q", tc.provider, hidden, shown)
			}
		}
		if !strings.Contains(shown, string(tc.reason)) && tc.reason != ReasonNotFound {
			t.Errorf("provider %s: %q does not say %s", tc.provider, shown, tc.reason)
		}
		if tc.reason != ReasonNotFound && Detail(err) == shown {
			t.Errorf("provider %s: the log is told no more than the space: %s", tc.provider, shown)
		}
	}
}

// TestProvidersKeepEndpointsAndReadFromMemory (issue 54, N6): through the
// stager's cache, a provider's queries after the first read nothing from
// the API server and reuse one connection; a rotated token is sent from
// the next query on, on a new connection, and the old one is closed.
func TestProvidersKeepEndpointsAndReadFromMemory(t *testing.T) {
	f := newFixture(t)
	p := newPrometheusTLS(t, "first")
	f.secret("prom", true, p, "first")
	name := f.provider("kept", withSecrets(p, "prom", hostingv1alpha1.AllSpaces))
	providers, requests := f.cached(tlsOptions)
	eventually(t, "the first answer", func() error {
		_, err := providers.Query(context.Background(), "wds1", name, "up")
		return err
	})
	readsBefore, opened := requests.n.Load(), p.opened.Load()
	const queries = 50
	for range queries {
		if _, err := providers.Query(context.Background(), "wds1", name, "up"); err != nil {
			t.Fatal(Detail(err))
		}
	}
	if reads := requests.n.Load() - readsBefore; reads != 0 {
		t.Errorf("%d queries sent %d requests to the hosting cluster, want none (its cache answers)", queries, reads)
	}
	if n := p.opened.Load() - opened; n != 0 {
		t.Errorf("%d queries opened %d connections, want the first one kept", queries, n)
	}

	// The token rotates: the next query sends the new one.
	s := &corev1.Secret{}
	if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: f.namespace, Name: "prom"}, s); err != nil {
		t.Fatal(err)
	}
	s.Data["token"] = []byte("second")
	p.token.Store(ptr.To("second"))
	if err := f.c.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the rotated token", func() error {
		_, err := providers.Query(context.Background(), "wds1", name, "up")
		return err
	})
	eventuallyTrue(t, "the old endpoint's connection closed", func() bool { return p.closed.Load() >= 1 })
}

func eventuallyTrue(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestQueriesAreRateLimitedPerSpace (issue 54, N6): each space has its
// bucket of queries; a query over it is not sent, is RateLimited, and
// leaves the other spaces' queries alone.
func TestQueriesAreRateLimitedPerSpace(t *testing.T) {
	f := newFixture(t)
	p := newPrometheusTLS(t, "t0ken")
	f.secret("prom", true, p, "t0ken")
	name := f.provider("limited", withSecrets(p, "prom", hostingv1alpha1.AllSpaces))
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC))
	opts := tlsOptions
	opts.SpaceQPS, opts.SpaceBurst, opts.Clock = 1, 3, clock
	providers := f.direct(opts)
	query := func(space string) error {
		_, err := providers.Query(context.Background(), space, name, "up")
		return err
	}
	for i := range 3 {
		if err := query("wds1"); err != nil {
			t.Fatalf("query %d of wds1's burst of 3: %v", i+1, Detail(err))
		}
	}
	sent := p.queries.Load()
	err := query("wds1")
	if ReasonOf(err) != ReasonRateLimited || p.queries.Load() != sent {
		t.Fatalf("wds1's fourth query at once: %v, sent %t; want RateLimited, not sent", err, p.queries.Load() != sent)
	}
	if err := query("wds2"); err != nil {
		t.Errorf("wds2's query while wds1 is over its bound: %v", Detail(err))
	}
	clock.SetTime(clock.Now().Add(time.Second))
	if err := query("wds1"); err != nil {
		t.Errorf("wds1's query a second later: %v", Detail(err))
	}
	if err := query("wds1"); ReasonOf(err) != ReasonRateLimited {
		t.Errorf("wds1's second query in that second: %v, want RateLimited", err)
	}
}
