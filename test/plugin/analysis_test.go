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

package plugin

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/prometheus"
)

// TestEvalAnalysis runs an analysis's query once with `kubectl stager eval
// --analysis` against a real Prometheus, through a MetricProvider, and
// checks the verdict of the analysis's conditions on its answer.
func TestEvalAnalysis(t *testing.T) {
	server, err := prometheus.Start(suite.ctx, prometheus.Options{WorkDir: t.TempDir()})
	if err != nil {
		t.Fatalf("starting Prometheus: %v", err)
	}
	t.Cleanup(func() { _ = server.Stop() })
	provider := &hostingv1alpha1.MetricProvider{ObjectMeta: metav1.ObjectMeta{Name: "prom"},
		Spec: hostingv1alpha1.MetricProviderSpec{Spaces: []string{hostingv1alpha1.AllSpaces}, Prometheus: &hostingv1alpha1.PrometheusProvider{Address: server.URL}}}
	if err := suite.wds.Client.Create(suite.ctx, provider); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = suite.wds.Client.Delete(suite.ctx, provider) })
	p := rollout(t, "measured", func(p *v1alpha1.StagedBindingPolicy) {
		p.Spec.Stages[0].Analysis = []v1alpha1.Analysis{{Name: "error-rate", Provider: "prom",
			Query: `vector(0.001) + 0 * count(up{stage="{{stage}}"} or vector(1))`, SuccessCondition: "result.all(v, v < 0.01)"}}
	})
	t.Cleanup(func() { _ = suite.wds.Client.Delete(suite.ctx, p) })
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

	for _, tt := range []struct {
		name string
		args []string
	}{
		{"eval-analysis", []string{"eval", "measured", "--analysis", "error-rate", "--allow-insecure-metric-providers"}},
		{"eval-analysis-draft", []string{"eval", "measured", "--analysis", "error-rate", "--query", "vector(0.2)", "--allow-insecure-metric-providers"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, now, "", tt.args...)
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			golden(t, tt.name, out)
		})
	}
	t.Run("https only by default", func(t *testing.T) {
		out, err := run(t, now, "", "eval", "measured", "--analysis", "error-rate")
		if err != nil || !strings.Contains(out, "verdict:    Inconclusive") || !strings.Contains(out, "plain http") {
			t.Errorf("a plain http provider without --allow-insecure-metric-providers: %v\n%s", err, out)
		}
	})
	t.Run("an analysis the stage lacks", func(t *testing.T) {
		if out, err := run(t, now, "", "eval", "measured", "--analysis", "nope"); err == nil || !strings.Contains(out, `no analysis "nope"`) {
			t.Errorf("got %v:\n%s", err, out)
		}
	})
}

// TestEvalAnalysisWithCAAndToken reads a MetricProvider's CA and bearer
// token from Secrets of the Secret namespace, as the stager does, through
// eval --analysis. The endpoint is an httptest TLS server that answers as
// Prometheus's API does, but only to the token: Prometheus itself checks
// no bearer token.
func TestEvalAnalysisWithCAAndToken(t *testing.T) {
	const secretNamespace, token = "metric-secrets", "s3cret-token"
	var authorized atomic.Int32
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, `{"status":"error","errorType":"unauthorized","error":"no token"}`, http.StatusUnauthorized)
			return
		}
		authorized.Add(1)
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"0.004"]}]}}`))
	}))
	t.Cleanup(api.Close)
	c := suite.wds.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secretNamespace}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretNamespace, Name: "prom-access",
		Labels: map[string]string{hostingv1alpha1.CredentialLabel: "true"}}, Data: map[string][]byte{
		"ca.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw}),
		"token":  []byte(token),
	}}
	provider := &hostingv1alpha1.MetricProvider{ObjectMeta: metav1.ObjectMeta{Name: "authenticating"},
		Spec: hostingv1alpha1.MetricProviderSpec{Spaces: []string{hostingv1alpha1.AllSpaces}, Prometheus: &hostingv1alpha1.PrometheusProvider{Address: api.URL,
			CASecretRef:          &hostingv1alpha1.SecretKeyRef{Name: "prom-access", Key: "ca.crt"},
			BearerTokenSecretRef: &hostingv1alpha1.SecretKeyRef{Name: "prom-access", Key: "token"}}}}
	for _, obj := range []client.Object{ns, secret, provider} {
		if err := c.Create(suite.ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = c.Delete(suite.ctx, provider); _ = c.Delete(suite.ctx, ns) })
	p := rollout(t, "authenticated", func(p *v1alpha1.StagedBindingPolicy) {
		p.Spec.Stages[0].Analysis = []v1alpha1.Analysis{{Name: "error-rate", Provider: "authenticating", Query: "vector(0.004)",
			SuccessCondition: "result.all(v, v < 0.01)"}}
	})
	t.Cleanup(func() { _ = c.Delete(suite.ctx, p) })
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

	out, err := run(t, now, "", "eval", "authenticated", "--analysis", "error-rate", "--metric-provider-secret-namespace", secretNamespace)
	if err != nil || !strings.Contains(out, "answer:     [0.004]") || !strings.Contains(out, "verdict:    Successful") || authorized.Load() != 1 {
		t.Errorf("with the provider's CA and token: %v, %d authorized answer(s)\n%s", err, authorized.Load(), out)
	}
	if strings.Contains(out, token) {
		t.Errorf("the output shows the token:\n%s", out)
	}
	out, err = run(t, now, "", "eval", "authenticated", "--analysis", "error-rate", "--metric-provider-secret-namespace", "default")
	if err != nil || !strings.Contains(out, "verdict:    Inconclusive") || !strings.Contains(out, `Secret default/prom-access`) {
		t.Errorf("with the Secrets looked for in another namespace: %v\n%s", err, out)
	}
}

// TestEvalWebAnalysis: eval --analysis sends a web analysis's GET request
// through a web MetricProvider, with its CA and token from a labelled
// Secret, shows the request and the JSON answer and judges it as the
// stager does; explain shows the request as written.
func TestEvalWebAnalysis(t *testing.T) {
	const secretNamespace, token = "web-gate-secrets", "gate-token"
	var state atomic.Pointer[string]
	pending := "pending"
	state.Store(&pending)
	var asked atomic.Pointer[string]
	gate := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		uri := r.URL.RequestURI()
		asked.Store(&uri)
		_, _ = w.Write([]byte(`{"state": "` + *state.Load() + `"}`))
	}))
	t.Cleanup(gate.Close)
	c := suite.wds.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secretNamespace}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretNamespace, Name: "gate-access",
		Labels: map[string]string{hostingv1alpha1.CredentialLabel: "true"}}, Data: map[string][]byte{
		"ca.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: gate.Certificate().Raw}),
		"token":  []byte(token),
	}}
	provider := &hostingv1alpha1.MetricProvider{ObjectMeta: metav1.ObjectMeta{Name: "change-gate"},
		Spec: hostingv1alpha1.MetricProviderSpec{Spaces: []string{hostingv1alpha1.AllSpaces}, Web: &hostingv1alpha1.WebProvider{Address: gate.URL + "/api",
			CASecretRef:          &hostingv1alpha1.SecretKeyRef{Name: "gate-access", Key: "ca.crt"},
			BearerTokenSecretRef: &hostingv1alpha1.SecretKeyRef{Name: "gate-access", Key: "token"}}}}
	for _, obj := range []client.Object{ns, secret, provider} {
		if err := c.Create(suite.ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = c.Delete(suite.ctx, provider); _ = c.Delete(suite.ctx, ns) })
	p := rollout(t, "web-gated", func(p *v1alpha1.StagedBindingPolicy) {
		p.Spec.Stages[0].Analysis = []v1alpha1.Analysis{{Name: "change", Provider: "change-gate",
			Web:              &v1alpha1.WebRequest{Path: "tickets/{{policy}}/{{stage}}", Params: map[string]string{"space": "{{space}}"}},
			SuccessCondition: "result.state == 'approved'", FailureCondition: "result.state == 'rejected'"}}
	})
	t.Cleanup(func() { _ = c.Delete(suite.ctx, p) })
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

	for _, tc := range []struct{ state, verdict string }{
		{"pending", "verdict:    Inconclusive: neither the successCondition nor the failureCondition holds"},
		{"approved", "verdict:    Successful"},
		{"rejected", "verdict:    Failed"},
	} {
		state.Store(&tc.state)
		out, err := run(t, now, "", "eval", "web-gated", "--analysis", "change", "--space", "wds1",
			"--metric-provider-secret-namespace", secretNamespace)
		if err != nil || !strings.Contains(out, "request:    GET /tickets/web-gated/dev?space=wds1") ||
			!strings.Contains(out, `answer:     {"state":"`+tc.state+`"}`) || !strings.Contains(out, tc.verdict) {
			t.Errorf("ticket %s: %v\n%s", tc.state, err, out)
		}
		if got := asked.Load(); got == nil || *got != "/api/tickets/web-gated/dev?space=wds1" {
			t.Errorf("ticket %s: the gate was asked %v", tc.state, got)
		}
		if strings.Contains(out, token) {
			t.Errorf("the output shows the token:\n%s", out)
		}
	}
	out, err := run(t, now, "", "explain", "web-gated", "--stage", "dev")
	if err != nil || !strings.Contains(out, "web GET on change-gate: /tickets/{{policy}}/{{stage}}?space={{space}}") {
		t.Errorf("explain: %v\n%s", err, out)
	}
}
