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

package kubeconfig

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// write renders a one-context kubeconfig after edit changed its entries.
func write(t testing.TB, edit func(*clientcmdapi.Config, *clientcmdapi.Cluster, *clientcmdapi.AuthInfo)) []byte {
	t.Helper()
	cluster := &clientcmdapi.Cluster{Server: "https://wds1.example:6443", CertificateAuthorityData: []byte("ca")}
	user := &clientcmdapi.AuthInfo{Token: "secret-token"}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["wds1"] = cluster
	cfg.AuthInfos["stager"] = user
	cfg.Contexts["wds1"] = &clientcmdapi.Context{Cluster: "wds1", AuthInfo: "stager"}
	cfg.CurrentContext = "wds1"
	edit(cfg, cluster, user)
	raw, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// stagerFiles returns a file holding "the stager's own token" and an exec
// plugin that would run a command.
func stagerFiles(t *testing.T) (string, *clientcmdapi.ExecConfig) {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("the stager's own token"), 0o600); err != nil {
		t.Fatal(err)
	}
	return tokenFile, &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh", Args: []string{"-c", "id"},
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
}

func TestCheck(t *testing.T) {
	tokenFile, exec := stagerFiles(t)
	cases := []struct {
		name   string
		policy Policy
		edit   func(*clientcmdapi.Config, *clientcmdapi.Cluster, *clientcmdapi.AuthInfo)
		// reasons are the reasons of the violations, in order; none means accepted.
		reasons []string
		// field is named by the error.
		field string
	}{
		{name: "token and CA data", edit: func(*clientcmdapi.Config, *clientcmdapi.Cluster, *clientcmdapi.AuthInfo) {}},
		{name: "client certificate data", edit: func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Token, u.ClientCertificateData, u.ClientKeyData = "", []byte("cert"), []byte("key")
		}},
		{name: "exec", edit: func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.Exec = exec },
			reasons: []string{ReasonExec}, field: `users["stager"].exec`},
		{name: "exec allowed", policy: Policy{AllowExec: true},
			edit: func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.Exec = exec }},
		{name: "auth-provider", policy: Policy{AllowExec: true, AllowInsecureTLS: true},
			edit: func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				u.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc"}
			},
			reasons: []string{ReasonAuthProvider}, field: `users["stager"].auth-provider`},
		{name: "token file", edit: func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Token, u.TokenFile = "", tokenFile
		}, reasons: []string{ReasonFileReference}, field: `users["stager"].tokenFile`},
		{name: "client certificate and key files", edit: func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.ClientCertificate, u.ClientKey = "/etc/ssl/cert.pem", "/etc/ssl/key.pem"
		}, reasons: []string{ReasonFileReference, ReasonFileReference}, field: `users["stager"].client-key`},
		{name: "CA file", edit: func(_ *clientcmdapi.Config, c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.CertificateAuthorityData, c.CertificateAuthority = nil, "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
		}, reasons: []string{ReasonFileReference}, field: `clusters["wds1"].certificate-authority`},
		{name: "insecure TLS", edit: func(_ *clientcmdapi.Config, c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.CertificateAuthorityData, c.InsecureSkipTLSVerify = nil, true
		}, reasons: []string{ReasonInsecureTLS}, field: `clusters["wds1"].insecure-skip-tls-verify`},
		{name: "insecure TLS allowed", policy: Policy{AllowInsecureTLS: true},
			edit: func(_ *clientcmdapi.Config, c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
				c.CertificateAuthorityData, c.InsecureSkipTLSVerify = nil, true
			}},
		{name: "plain http", edit: func(_ *clientcmdapi.Config, c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.Server = "http://wds1.example:8080"
		}, reasons: []string{ReasonInsecureServer}, field: `clusters["wds1"].server`},
		// The error goes into Events and logs: the URL's password stays out.
		{name: "plain http with a password", edit: func(_ *clientcmdapi.Config, c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.Server = "http://admin:secret-token@wds1.example:8080"
		}, reasons: []string{ReasonInsecureServer}, field: `clusters["wds1"].server`},
		{name: "a server that does not parse, with a password", edit: func(_ *clientcmdapi.Config, c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.Server = "https://admin:secret-token@[wds1.example"
		}, reasons: []string{ReasonMalformed}, field: `clusters["wds1"].server`},
		{name: "a URL with a password and no host", edit: func(_ *clientcmdapi.Config, c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.Server = "https://admin:secret-token@"
		}, reasons: []string{ReasonMalformed}, field: `clusters["wds1"].server`},
		{name: "plain http allowed", policy: Policy{AllowInsecureTLS: true},
			edit: func(_ *clientcmdapi.Config, c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
				c.Server = "http://wds1.example:8080"
			}},
		{name: "not a URL", edit: func(_ *clientcmdapi.Config, c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) { c.Server = "wds1" },
			reasons: []string{ReasonMalformed}, field: `clusters["wds1"].server`},
		{name: "unix socket", edit: func(_ *clientcmdapi.Config, c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.Server = "unix:///run/docker.sock"
		},
			reasons: []string{ReasonMalformed}, field: `clusters["wds1"].server`},
		{name: "proxy", edit: func(_ *clientcmdapi.Config, c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.ProxyURL = "http://proxy.example:3128"
		},
			reasons: []string{ReasonProxy}, field: `clusters["wds1"].proxy-url`},
		{name: "no current context", edit: func(cfg *clientcmdapi.Config, _ *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			cfg.CurrentContext = ""
		},
			reasons: []string{ReasonMalformed}, field: "current-context"},
		{name: "current context missing", edit: func(cfg *clientcmdapi.Config, _ *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			cfg.CurrentContext = "prod"
		},
			reasons: []string{ReasonMalformed}, field: "current-context"},
		{name: "user missing", edit: func(cfg *clientcmdapi.Config, _ *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			delete(cfg.AuthInfos, "stager")
		}, reasons: []string{ReasonMalformed}, field: `contexts["wds1"].user`},
		// client-go uses users[""] for a context that names no user.
		{name: "a context with no user and a user named \"\"", edit: func(cfg *clientcmdapi.Config, _ *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			cfg.Contexts["wds1"].AuthInfo = ""
			cfg.AuthInfos[""] = &clientcmdapi.AuthInfo{TokenFile: tokenFile}
		}, reasons: []string{ReasonFileReference}, field: `users[""].tokenFile`},
		{name: "a context naming the user \"\"", edit: func(cfg *clientcmdapi.Config, _ *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			cfg.Contexts["wds1"].AuthInfo = ""
			cfg.AuthInfos[""] = &clientcmdapi.AuthInfo{AuthProvider: &clientcmdapi.AuthProviderConfig{Name: "oidc"}}
		}, reasons: []string{ReasonAuthProvider}, field: `users[""].auth-provider`},
		{name: "several at once", edit: func(_ *clientcmdapi.Config, c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Exec, c.ProxyURL, u.Token, u.TokenFile = exec, "http://proxy.example:3128", "", tokenFile
		}, reasons: []string{ReasonProxy, ReasonExec, ReasonFileReference}, field: `users["stager"].tokenFile`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.policy.Check(write(t, c.edit))
			if len(c.reasons) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var refused *RefusedError
			if !errors.As(err, &refused) {
				t.Fatalf("Check = %v, want a *RefusedError", err)
			}
			var reasons []string
			for _, v := range refused.Violations {
				reasons = append(reasons, v.Reason)
			}
			if strings.Join(reasons, ",") != strings.Join(c.reasons, ",") {
				t.Errorf("reasons = %v, want %v (%v)", reasons, c.reasons, err)
			}
			if ReasonOf(err) != c.reasons[0] {
				t.Errorf("ReasonOf = %s, want %s", ReasonOf(err), c.reasons[0])
			}
			if !strings.Contains(err.Error(), c.field) {
				t.Errorf("%q does not name %s", err, c.field)
			}
			for _, secret := range []string{"secret-token", "the stager's own token"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("%q shows a credential", err)
				}
			}
		})
	}
}

func TestCheckMalformed(t *testing.T) {
	for name, raw := range map[string]string{
		"empty":    "",
		"not YAML": "clusters: [this is: not: a kubeconfig",
		"no kind":  "just a string",
	} {
		t.Run(name, func(t *testing.T) {
			if err := (Policy{}).Check([]byte(raw)); ReasonOf(err) != ReasonMalformed {
				t.Fatalf("Check = %v, want reason %s", err, ReasonMalformed)
			}
		})
	}
}

// TestRESTOption is the provider-side guard: it sees the client
// configuration client-go built, whatever Check saw.
func TestRESTOption(t *testing.T) {
	tokenFile, exec := stagerFiles(t)
	cases := []struct {
		name   string
		policy Policy
		edit   func(*clientcmdapi.Config, *clientcmdapi.Cluster, *clientcmdapi.AuthInfo)
		reason string
	}{
		{name: "token and CA data", edit: func(*clientcmdapi.Config, *clientcmdapi.Cluster, *clientcmdapi.AuthInfo) {}},
		{name: "exec", edit: func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Token, u.Exec = "", exec
		}, reason: ReasonExec},
		{name: "exec allowed", policy: Policy{AllowExec: true},
			edit: func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				u.Token, u.Exec = "", exec
			}},
		{name: "token file", edit: func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Token, u.TokenFile = "", tokenFile
		},
			reason: ReasonFileReference},
		{name: "CA file", edit: func(_ *clientcmdapi.Config, c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.CertificateAuthorityData, c.CertificateAuthority = nil, tokenFile
		}, reason: ReasonFileReference},
		{name: "client certificate file", edit: func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Token, u.ClientCertificate, u.ClientKeyData = "", tokenFile, []byte("key")
		}, reason: ReasonFileReference},
		{name: "client key file", edit: func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Token, u.ClientCertificateData, u.ClientKey = "", []byte("cert"), tokenFile
		}, reason: ReasonFileReference},
		{name: "auth-provider", edit: func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Token, u.AuthProvider = "", &clientcmdapi.AuthProviderConfig{Name: "oidc"}
		}, reason: ReasonAuthProvider},
		{name: "insecure TLS", edit: func(_ *clientcmdapi.Config, c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.CertificateAuthorityData, c.InsecureSkipTLSVerify = nil, true
		}, reason: ReasonInsecureTLS},
		{name: "proxy", edit: func(_ *clientcmdapi.Config, c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.ProxyURL = "http://proxy.example:3128"
		},
			reason: ReasonProxy},
		{name: "plain http", edit: func(_ *clientcmdapi.Config, c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.Server = "http://wds1.example"
		},
			reason: ReasonInsecureServer},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := clientcmd.RESTConfigFromKubeConfig(write(t, c.edit))
			if err != nil {
				t.Fatalf("client-go does not read the kubeconfig: %v", err)
			}
			err = c.policy.RESTOption()(cfg)
			if got := ""; err != nil {
				got = ReasonOf(err)
				if got != c.reason {
					t.Fatalf("RESTOption = %v, want reason %q", err, c.reason)
				}
			} else if c.reason != "" {
				t.Fatalf("RESTOption accepted it, want reason %s", c.reason)
			}
			if cfg.ExecProvider != nil {
				want := clientcmdapi.PolicyType("")
				if !c.policy.AllowExec {
					want = clientcmdapi.PluginPolicyDenyAll
				}
				if got := cfg.ExecProvider.PluginPolicy.PolicyType; got != want {
					t.Errorf("exec plugin policy = %q, want %q", got, want)
				}
			}
		})
	}
}

// TestRESTConfig checks the one entry point of the providers that read
// kubeconfigs themselves: a safe kubeconfig gives its client configuration,
// a risky one the same refusal as Check, and a malformed one ReasonMalformed.
func TestRESTConfig(t *testing.T) {
	safe := write(t, func(*clientcmdapi.Config, *clientcmdapi.Cluster, *clientcmdapi.AuthInfo) {})
	cfg, err := Policy{}.RESTConfig(safe)
	if err != nil || cfg.Host == "" || cfg.BearerToken == "" && len(cfg.CertData) == 0 {
		t.Fatalf("RESTConfig(safe) = %+v, %v; want its host and inline credentials", cfg, err)
	}
	_, exec := stagerFiles(t)
	risky := write(t, func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.Exec = exec })
	if _, err := (Policy{}).RESTConfig(risky); ReasonOf(err) != ReasonExec {
		t.Errorf("RESTConfig(exec) = %v (reason %q), want refused for %s", err, ReasonOf(err), ReasonExec)
	}
	if _, err := (Policy{}).RESTConfig([]byte("not: [a kubeconfig")); ReasonOf(err) != ReasonMalformed {
		t.Errorf("RESTConfig(malformed) = %v (reason %q), want %s", err, ReasonOf(err), ReasonMalformed)
	}
}

// TestCheckTooLarge: a kubeconfig longer than MaxKubeconfigBytes is refused
// whatever it says, and one of exactly that length is read.
func TestCheckTooLarge(t *testing.T) {
	safe := write(t, func(*clientcmdapi.Config, *clientcmdapi.Cluster, *clientcmdapi.AuthInfo) {})
	padded := func(n int) []byte {
		pad := n - len(safe) - len("#\n")
		return append(append(slices.Clone(safe), '#'), append(bytes.Repeat([]byte{'x'}, pad), '\n')...)
	}
	if err := (Policy{}).Check(padded(MaxKubeconfigBytes)); err != nil {
		t.Errorf("a kubeconfig of %d bytes is refused: %v", MaxKubeconfigBytes, err)
	}
	for name, raw := range map[string][]byte{
		"one byte too long":           padded(MaxKubeconfigBytes + 1),
		"1 MiB of certificate data":   large(t, "ca", 1<<20),
		"1 MiB of clusters":           large(t, "clusters", 1<<20),
		"1 MiB that is no kubeconfig": bytes.Repeat([]byte("[{"), 1<<19),
	} {
		err := (Policy{}).Check(raw)
		if ReasonOf(err) != ReasonTooLarge || !strings.Contains(err.Error(), fmt.Sprint(len(raw))) {
			t.Errorf("%s: Check = %v, want reason %s naming its %d bytes", name, err, ReasonTooLarge, len(raw))
		}
		if _, err := (Policy{}).RESTConfig(raw); ReasonOf(err) != ReasonTooLarge {
			t.Errorf("%s: RESTConfig = %v, want reason %s", name, err, ReasonTooLarge)
		}
	}
}
