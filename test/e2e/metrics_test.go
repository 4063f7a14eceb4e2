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

package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/process"
	"github.com/kubestellar/workload-stager/test/framework/stack"
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

// TestMetricsAuthWithShippedRBAC runs a second stager on the hosting space as
// a user holding only the shipped hosting RBAC (config/rbac/hosting: the
// Role for the kubeconfig Secrets and the metrics-auth ClusterRole), in a
// namespace without kubeconfig Secrets so that it serves no space. Before
// the metrics-auth ClusterRole is bound, the stager cannot review the
// scraper's token and the metrics reader is refused; once it is bound, the
// reader gets the metrics and an identity without the metrics-reader role
// is still refused (403).
func TestMetricsAuthWithShippedRBAC(t *testing.T) {
	ctx := suite.ctx
	hosting := suite.stack.Hosting
	const namespace, user = "metrics-rbac", "metrics-rbac-stager"
	reader, err := suite.stack.MetricsReaderToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := hosting.ServiceAccountToken(ctx, stack.MetricsReaderNamespace, "stranger")
	if err != nil {
		t.Fatal(err)
	}
	if err := hosting.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	secretsRole := &rbacv1.Role{}
	readShippedHostingRBAC(t, "role.yaml", secretsRole)
	secretsRole.Namespace = namespace
	authRole := &rbacv1.ClusterRole{}
	readShippedHostingRBAC(t, "metrics_auth_role.yaml", authRole)
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	for _, obj := range []client.Object{secretsRole, authRole, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secretsRole.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: secretsRole.Name},
		Subjects:   subjects,
	}} {
		if err := hosting.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	kubeconfig, err := hosting.AddUser(user)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfigFile := filepath.Join(dir, "stager.kubeconfig")
	if err := os.WriteFile(kubeconfigFile, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	addr, err := process.FreeAddress()
	if err != nil {
		t.Fatal(err)
	}
	stager, err := stack.StartProcess(suite.binary, []string{
		"--kubeconfig=" + kubeconfigFile, "--provider=kubeconfig", "--kubeconfig-namespace=" + namespace,
		"--leader-elect=false", "--metrics-bind-address=" + addr, "--health-probe-bind-address=0", "--zap-devel",
	}, filepath.Join(dir, "stager.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stager.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			if log, err := os.ReadFile(stager.LogPath()); err == nil {
				t.Logf("stager log:\n%s", log)
			}
		}
	})

	// Without the metrics-auth binding the stager may not create
	// TokenReviews: the reader is refused.
	environment.Eventually(t, time.Minute, "a refused scrape without the metrics-auth binding", func() error {
		_, err := stack.ScrapeMetrics(ctx, addr, reader)
		if err == nil {
			return fmt.Errorf("the metrics reader got the metrics although the stager may not review its token")
		}
		if !strings.Contains(err.Error(), "status 500") {
			return err
		}
		return nil
	})
	authBinding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: authRole.Name + "-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: authRole.Name},
		Subjects:   subjects,
	}
	if err := hosting.Client.Create(ctx, authBinding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, obj := range []client.Object{authBinding, authRole} {
			_ = hosting.Client.Delete(ctx, obj)
		}
	})
	environment.Eventually(t, 2*time.Minute, "a scrape with the metrics reader's token", func() error {
		text, err := stack.ScrapeMetrics(ctx, addr, reader)
		if err != nil {
			return err
		}
		if !strings.Contains(text, "controller_runtime_") {
			return fmt.Errorf("no controller_runtime_ metrics:\n%.500s", text)
		}
		return nil
	})
	if _, err := stack.ScrapeMetrics(ctx, addr, stranger); err == nil || !strings.Contains(err.Error(), "status 403") {
		t.Errorf("a scrape without the metrics-reader role: %v, want status 403", err)
	}
}

// readShippedHostingRBAC parses the first object of a file of
// config/rbac/hosting into obj.
func readShippedHostingRBAC(t *testing.T, file string, obj client.Object) {
	t.Helper()
	root, err := environment.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "config", "rbac", "hosting", file))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(raw), "\n---\n")
	if err := yaml.Unmarshal([]byte(first), obj); err != nil {
		t.Fatalf("parsing %s: %v", file, err)
	}
}
