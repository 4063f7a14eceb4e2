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

package integration

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// clientKeyOf returns the client key of a kubeconfig's current user, PEM,
// and the user's name (its certificate's common name).
func clientKeyOf(t *testing.T, kubeconfig []byte) ([]byte, string) {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	user := cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo]
	if user == nil || len(user.ClientKeyData) == 0 {
		t.Fatalf("the kubeconfig's user has no client-key-data: %+v", user)
	}
	block, _ := pem.Decode(user.ClientCertificateData)
	if block == nil {
		t.Fatal("the kubeconfig's user has no client certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return user.ClientKeyData, cert.Subject.CommonName
}

// pieces returns the 16-character pieces of each key's text found in no
// other's: keys of one kind share their PEM and ASN.1 headers.
func pieces(texts map[string]string) map[string][]string {
	out := map[string][]string{}
	for whose, text := range texts {
		for i := 0; i+16 <= len(text); i += 8 {
			piece, shared := text[i:i+16], false
			for other, otherText := range texts {
				shared = shared || other != whose && strings.Contains(otherText, piece)
			}
			if !shared && !strings.ContainsAny(piece, "\n-") {
				out[whose] = append(out[whose], piece)
			}
		}
	}
	return out
}

// TestDashboardNeverShowsCredentials writes into a policy's Events the
// client keys of wds1's kubeconfig, the hosting cluster's and wds1's
// registration, one Event per key and form (PEM as written, base64 as in a
// kubeconfig), and opens the policy's page of a dashboard run with wds1's
// kubeconfig, then of one run with --all-spaces from the hosting cluster:
// each shows the Events of the keys it connects with, each key
// [redacted], and no line of them.
func TestDashboardNeverShowsCredentials(t *testing.T) {
	s, ctx := suite.wds1, suite.ctx
	const name = "dash-leak"
	createWorkload(t, s, name)
	create(t, s, newPolicy(name, name))
	t.Cleanup(func() { policies(s).Delete(t, name) })

	registration := &corev1.Secret{}
	if err := suite.hosting.Client.Get(ctx, client.ObjectKey{Namespace: secretNamespace, Name: s.Name}, registration); err != nil {
		t.Fatal(err)
	}
	keys := map[string][]byte{}
	keys["wds1's kubeconfig"], _ = clientKeyOf(t, s.Kubeconfig())
	keys["the hosting cluster's kubeconfig"], _ = clientKeyOf(t, suite.hosting.Kubeconfig())
	var registered string
	keys["wds1's registration"], registered = clientKeyOf(t, registration.Data[environment.KubeconfigSecretKey])
	// The stager's role writes Events and does not read them: the test
	// lets the registration's user read them, as an operator would to see
	// them on the page.
	reader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "dash-leak-event-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"get", "list", "watch"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dash-leak-event-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: registered}}}
	for _, obj := range []client.Object{reader, binding} {
		if err := s.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Client.Delete(ctx, obj) })
	}
	texts := map[string]string{}
	for whose, key := range keys {
		for form, text := range map[string]string{"PEM": string(key), "base64": base64.StdEncoding.EncodeToString(key)} {
			event := &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, GenerateName: name + "-"},
				InvolvedObject: corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "StagedBindingPolicy", Name: name},
				Type:           corev1.EventTypeNormal, Reason: "Leak", Message: "the key of " + whose + " (" + form + "): " + text,
				LastTimestamp: metav1.Now(),
			}
			if err := s.Client.Create(ctx, event); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Client.Delete(ctx, event) })
			texts[whose] += text + "\n"
		}
	}
	lines := pieces(texts)

	for _, run := range []struct {
		what, space string
		kubeconfig  []byte
		args        []string
		// keys are whose keys the dashboard connects with.
		keys []string
	}{
		{what: "the current context", kubeconfig: s.Kubeconfig(), keys: []string{"wds1's kubeconfig"}},
		{what: "--all-spaces", space: s.Name, kubeconfig: suite.hosting.Kubeconfig(),
			args: []string{"--all-spaces", "--kubeconfig-namespace=" + secretNamespace},
			keys: []string{"the hosting cluster's kubeconfig", "wds1's registration"}},
	} {
		b := newBrowser(t, runDashboard(t, run.kubeconfig, run.args...))
		status, body := b.getQuery("/policy", url.Values{"space": {run.space}, "name": {name}})
		text := html.UnescapeString(body)
		if status != http.StatusOK {
			t.Fatalf("%s: GET the policy's page: %d\n%s", run.what, status, body)
		}
		for _, whose := range run.keys {
			for _, form := range []string{"PEM", "base64"} {
				if want := "the key of " + whose + " (" + form + "): [redacted]"; !strings.Contains(text, want) {
					events, _, _ := strings.Cut(text[strings.Index(text, `<section class="events">`)+1:], "</section>")
					t.Errorf("%s: the page lacks %q; its Events:\n%s", run.what, want, events)
				}
			}
			for _, line := range lines[whose] {
				if strings.Contains(text, line) {
					t.Errorf("%s: the page shows a piece of the key of %s, %q", run.what, whose, line)
				}
			}
		}
	}
}
