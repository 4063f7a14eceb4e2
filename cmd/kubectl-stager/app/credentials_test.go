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

package app

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// testKeyPair returns a self-signed certificate and its private key, PEM.
func testKeyPair(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "me"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// keyForms are the forms a PEM private key takes where a page could show
// it: as written, as a kubeconfig's client-key-data holds it (base64), and
// its base64 body without the PEM lines.
func keyForms(keyPEM []byte) []string {
	block, _ := pem.Decode(keyPEM)
	return []string{strings.TrimSpace(string(keyPEM)), base64.StdEncoding.EncodeToString(keyPEM),
		base64.StdEncoding.EncodeToString(block.Bytes)}
}

// kubeconfigOf returns a kubeconfig whose one user is user, of a server
// the kubeconfig guard accepts (https, its CA given).
func kubeconfigOf(t *testing.T, ca []byte, user *clientcmdapi.AuthInfo) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["wds"] = &clientcmdapi.Cluster{Server: "https://wds.example:6443", CertificateAuthorityData: ca}
	cfg.AuthInfos["me"] = user
	cfg.Contexts["wds"] = &clientcmdapi.Context{Cluster: "wds", AuthInfo: "me"}
	cfg.CurrentContext = "wds"
	raw, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// pluginWith returns the plugin's options reading the kubeconfig file
// holding raw.
func pluginWith(t *testing.T, raw []byte) *options {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(true)
	flags.KubeConfig = &path
	return &options{configFlags: flags, streams: genericiooptions.NewTestIOStreamsDiscard(), now: time.Now}
}

// TestDashboardRedactsEveryKindOfCredential builds kubeconfigs carrying
// each kind of credential a kubeconfig can hold, and checks that the
// dashboard is told to redact it, in every form a page could show it:
// for the current context, and, with --all-spaces, for a space registered
// by a kubeconfig Secret (read by the kubeconfig provider's guard, as
// KubeFlex ControlPlanes' are) beside the current context the registrations
// are read with. The kinds the guard refuses in a registration (files,
// exec and auth-provider plugins) never make a space.
func TestDashboardRedactsEveryKindOfCredential(t *testing.T) {
	ca, _ := testKeyPair(t)
	cert, key := testKeyPair(t)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	fileToken := "file-token-Zm9vYmFyYmF6cXV4"
	for _, c := range []struct {
		kind string
		user *clientcmdapi.AuthInfo
		// secrets are what must be redacted.
		secrets []string
		// guarded: the kubeconfig guard refuses it in a registration.
		guarded bool
	}{
		{kind: "bearer token", user: &clientcmdapi.AuthInfo{Token: "eyJhbGciOiJSUzI1NiJ9.dG9rZW4.c2ln"},
			secrets: []string{"eyJhbGciOiJSUzI1NiJ9.dG9rZW4.c2ln"}},
		{kind: "token file", user: &clientcmdapi.AuthInfo{TokenFile: write("token", []byte(fileToken+"\n"))},
			secrets: []string{fileToken}, guarded: true},
		{kind: "basic auth", user: &clientcmdapi.AuthInfo{Username: "me", Password: "hunter2-basic-auth"},
			secrets: []string{"hunter2-basic-auth"}},
		{kind: "client key data", user: &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key},
			secrets: keyForms(key)},
		{kind: "client key file", user: &clientcmdapi.AuthInfo{ClientCertificate: write("cert", cert), ClientKey: write("key", key)},
			secrets: keyForms(key), guarded: true},
		{kind: "exec plugin", user: &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
			APIVersion: "client.authentication.k8s.io/v1", Command: "cred-helper", InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
			Args: []string{"token", "--client-secret=exec-arg-secret-1", "--password", "exec-arg-secret-2"},
			Env:  []clientcmdapi.ExecEnvVar{{Name: "HELPER_API_TOKEN", Value: "exec-env-secret-3"}}}},
			secrets: []string{"exec-arg-secret-1", "exec-arg-secret-2", "exec-env-secret-3"}, guarded: true},
		{kind: "auth-provider plugin", user: &clientcmdapi.AuthInfo{AuthProvider: &clientcmdapi.AuthProviderConfig{Name: "oidc",
			Config: map[string]string{"id-token": "oidc-id-token-1", "refresh-token": "oidc-refresh-token-2", "client-secret": "oidc-secret-3"}}},
			secrets: []string{"oidc-id-token-1", "oidc-refresh-token-2", "oidc-secret-3"}, guarded: true},
	} {
		raw := kubeconfigOf(t, ca, c.user)
		check := func(t *testing.T, path string, redact []string) {
			t.Helper()
			for _, secret := range c.secrets {
				if !slices.Contains(redact, secret) {
					t.Errorf("%s, %s: %q is not redacted; redacted: %q", c.kind, path, secret, redact)
				}
			}
		}
		t.Run(c.kind, func(t *testing.T) {
			// The current context, the dashboard's only space without
			// --all-spaces. A kubeconfig the plugin cannot connect with
			// (an auth-provider plugin it lacks) serves no page, but its
			// credentials are listed all the same.
			o := pluginWith(t, raw)
			targets, _ := o.targets(context.Background(), &spaceFlags{providers: nil})
			redact, err := o.dashboardRedactions(targets)
			if err != nil {
				t.Fatal(err)
			}
			check(t, "current context", redact)

			// --all-spaces: a registration's kubeconfig, read as the
			// provider reads it, with the plugin's guard.
			flags := addSpaceFlags(pflag.NewFlagSet("dashboard", pflag.ContinueOnError))
			config, err := flags.providers.Kubeconfig.Policy().RESTConfig(raw)
			if c.guarded {
				if err == nil {
					t.Errorf("%s: the kubeconfig guard let a registration through", c.kind)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: the guard refused the registration: %v", c.kind, err)
			}
			hostingToken := "hosting-token-aG9zdGluZw"
			o = pluginWith(t, kubeconfigOf(t, ca, &clientcmdapi.AuthInfo{Token: hostingToken}))
			redact, err = o.dashboardRedactions([]target{{space: "wds1", config: config}})
			if err != nil {
				t.Fatal(err)
			}
			check(t, "--all-spaces", redact)
			if !slices.Contains(redact, hostingToken) {
				t.Errorf("%s, --all-spaces: the current context's token is not redacted; redacted: %q", c.kind, redact)
			}
		})
	}
}
