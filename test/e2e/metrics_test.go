/*
Copyright 2026 The KubeStellar Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kubestellar/workload-stager/test/environment"
	"github.com/kubestellar/workload-stager/test/stack"
)

// TestMetricsEndpointIsSecure scrapes the stager's metrics endpoint, served
// with the default flags, as Prometheus would: over HTTPS, with the token of
// a ServiceAccount of the hosting cluster. Plain HTTP, an anonymous scrape,
// a malformed token and the token of an identity without the metrics-reader
// ClusterRole are refused; the token of a ServiceAccount bound to the
// shipped metrics-reader ClusterRole (config/rbac/hosting) gets the metrics.
func TestMetricsEndpointIsSecure(t *testing.T) {
	ctx := suite.ctx
	reader, err := suite.stack.MetricsReaderToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := suite.stack.Hosting.ServiceAccountToken(ctx, stack.MetricsReaderNamespace, "stranger")
	if err != nil {
		t.Fatal(err)
	}
	addr := suite.stager.Flag("metrics-bind-address")
	// The stager's certificate is self-signed, as a cluster's Prometheus
	// accepts it (insecure_skip_verify) unless given a certificate of its CA.
	httpClient := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the stager's certificate is self-signed
	}}
	scrape := func(scheme, token string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+addr+"/metrics", nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}

	// The reader's binding reaches the API server's authorizer shortly after
	// it is created; the stager caches a denial for 30s.
	environment.Eventually(t, 2*time.Minute, "a scrape with the metrics reader's token", func() error {
		code, body, err := scrape("https", reader)
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("status %d: %s", code, body)
		}
		if !strings.Contains(body, "stager_space_ready{") {
			return fmt.Errorf("no stager_space_ready in the metrics:\n%s", body)
		}
		return nil
	})
	for _, c := range []struct {
		name, scheme, token string
		// want is the status; 0 means any refusal: an error status or a
		// broken connection.
		want int
	}{
		{name: "anonymous", scheme: "https", want: http.StatusUnauthorized},
		{name: "token without metrics-reader", scheme: "https", token: stranger, want: http.StatusForbidden},
		// The API server's TokenReview reports an error for a malformed
		// token, which controller-runtime's filter answers with 500.
		{name: "malformed token", scheme: "https", token: "not-a-token"},
		{name: "plain HTTP with the reader's token", scheme: "http", token: reader},
	} {
		code, body, err := scrape(c.scheme, c.token)
		switch {
		case err != nil && c.want != 0:
			t.Errorf("%s: %v", c.name, err)
		case err != nil:
			t.Logf("%s: refused: %v", c.name, err)
		case c.want != 0 && code != c.want:
			t.Errorf("%s: status %d, want %d: %.200s", c.name, code, c.want, body)
		case c.want == 0 && code < 400:
			t.Errorf("%s: status %d, want a refusal: %.200s", c.name, code, body)
		default:
			t.Logf("%s: refused with %d: %.100s", c.name, code, body)
		}
		if strings.Contains(body, "stager_") {
			t.Errorf("%s: the response holds metrics:\n%.500s", c.name, body)
		}
	}
}
