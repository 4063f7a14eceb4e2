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

// Package kubeconfig guards the spaces that come from kubeconfig Secrets.
//
// Whoever can write a labelled Secret in the stager's namespace chooses the
// kubeconfig the stager connects with. client-go honours everything a
// kubeconfig can say, and some of it acts on the stager's own process: an
// exec credential plugin runs a command in the stager's container; tokenFile,
// client-certificate, client-key and certificate-authority read the stager's
// own files (its ServiceAccount token, say) and send them to a server of the
// writer's choice; an auth-provider refreshes tokens by itself; a proxy-url,
// insecure-skip-tls-verify or a plain http server expose the traffic. A
// Policy refuses all of these unless an operator opted in (AllowExec,
// AllowInsecureTLS).
//
// The Policy guards twice. Check reads the Secret's kubeconfig and names every
// offending field; Screen applies it to the hosting cluster's cache, and the
// Auditor (internal/providers/kubeconfig) reports a refused Secret with an
// Event, a log line and a metric. RESTConfig is the one way a kubeconfig
// becomes a client configuration: Check again, then RESTOption on what
// client-go made of it, which also denies every exec credential plugin
// through client-go's plugin policy unless exec is allowed.
//
// This package finds spaces (flags, guard, screen, Discover); engaging them
// is internal/providers/kubeconfig's, so that the kubectl plugin, which
// links this package, links no controller manager.
package kubeconfig

import (
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Reasons a kubeconfig is refused, one word each, as the metric and the Event
// report them.
const (
	// ReasonMissingKey means the Secret has no kubeconfig under the key.
	ReasonMissingKey = "MissingKey"
	// ReasonMalformed means the kubeconfig does not parse or does not name a
	// usable context, cluster and user.
	ReasonMalformed = "Malformed"
	// ReasonExec means the user runs an exec credential plugin.
	ReasonExec = "Exec"
	// ReasonAuthProvider means the user names an auth-provider plugin.
	ReasonAuthProvider = "AuthProvider"
	// ReasonFileReference means the kubeconfig reads a file of the stager's.
	ReasonFileReference = "FileReference"
	// ReasonInsecureTLS means the server's certificate is not verified.
	ReasonInsecureTLS = "InsecureTLS"
	// ReasonInsecureServer means the server is not an https URL.
	ReasonInsecureServer = "InsecureServer"
	// ReasonProxy means the traffic goes through a proxy.
	ReasonProxy = "Proxy"
	// ReasonTooLarge means the kubeconfig is longer than MaxKubeconfigBytes.
	ReasonTooLarge = "TooLarge"
)

// MaxKubeconfigBytes is the longest kubeconfig the stager reads. A
// kubeconfig of one space, with its CA, client certificate and key inline,
// takes a few KiB; parsing a 1 MiB one allocated 131 MiB (docs/performance.md).
const MaxKubeconfigBytes = 64 << 10

// Policy says which risky kubeconfig features are allowed. The zero Policy
// allows none of them.
type Policy struct {
	// AllowExec lets kubeconfigs run exec credential plugins in the stager.
	AllowExec bool
	// AllowInsecureTLS lets kubeconfigs skip the verification of the
	// server's certificate and use plain http servers.
	AllowInsecureTLS bool
}

// Violation is one offending field of a kubeconfig.
type Violation struct {
	// Reason classifies it (ReasonExec, ReasonFileReference, ...).
	Reason string
	// Field is where it stands, in kubeconfig terms, e.g. `users["admin"].exec`.
	Field string
	// Why says what it would do.
	Why string
}

// String renders the violation as "field: why".
func (v Violation) String() string {
	if v.Field == "" {
		return v.Why
	}
	return v.Field + ": " + v.Why
}

// refusedPrefix begins the message of every RefusedError.
const refusedPrefix = "kubeconfig refused: "

// RefusedError lists why a kubeconfig is refused.
type RefusedError struct {
	// Violations are the offending fields, in the order found.
	Violations []Violation
}

// Error names every offending field.
func (e *RefusedError) Error() string {
	parts := make([]string, 0, len(e.Violations))
	for _, v := range e.Violations {
		parts = append(parts, v.String())
	}
	return refusedPrefix + strings.Join(parts, "; ")
}

// Reason is the reason of the first violation.
func (e *RefusedError) Reason() string {
	if len(e.Violations) == 0 {
		return ReasonMalformed
	}
	return e.Violations[0].Reason
}

// ReasonOf returns the reason of a refusal returned by this package, or
// ReasonMalformed for any other error.
func ReasonOf(err error) string {
	var refused *RefusedError
	if errors.As(err, &refused) {
		return refused.Reason()
	}
	return ReasonMalformed
}

// refuse returns nil for no violations, else a *RefusedError.
func refuse(violations []Violation) error {
	if len(violations) == 0 {
		return nil
	}
	return &RefusedError{Violations: violations}
}

// Check parses a kubeconfig as the provider does and returns a *RefusedError
// naming every field the policy refuses in the context it uses (the current
// context, its cluster and its user). A kubeconfig longer than
// MaxKubeconfigBytes is refused with ReasonTooLarge unread; one that does
// not parse, or names no usable context, with ReasonMalformed.
func (p Policy) Check(raw []byte) error {
	if len(raw) == 0 {
		return refuse([]Violation{{Reason: ReasonMalformed, Why: "the kubeconfig is empty"}})
	}
	// Before the parse, which allocates over a hundred times the input.
	if len(raw) > MaxKubeconfigBytes {
		return refuse([]Violation{{Reason: ReasonTooLarge, Why: fmt.Sprintf(
			"the kubeconfig is %d bytes, more than the %d the stager reads: keep only the space's context (kubectl config view --minify --flatten)",
			len(raw), MaxKubeconfigBytes)}})
	}
	cfg, err := clientcmd.Load(raw)
	if err != nil {
		return refuse([]Violation{{Reason: ReasonMalformed, Why: fmt.Sprintf("the kubeconfig does not parse: %v", err)}})
	}
	var violations []Violation
	malformed := func(field, why string) error {
		return refuse(append(violations, Violation{Reason: ReasonMalformed, Field: field, Why: why}))
	}
	if cfg.CurrentContext == "" {
		return malformed("current-context", "not set")
	}
	kctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return malformed("current-context", fmt.Sprintf("names context %q, which the kubeconfig lacks", cfg.CurrentContext))
	}
	cluster, ok := cfg.Clusters[kctx.Cluster]
	if !ok {
		return malformed(fmt.Sprintf("contexts[%q].cluster", cfg.CurrentContext), fmt.Sprintf("names cluster %q, which the kubeconfig lacks", kctx.Cluster))
	}
	violations = append(violations, p.checkCluster(fmt.Sprintf("clusters[%q]", kctx.Cluster), cluster)...)
	// client-go takes users[""] for a context that names no user.
	user, ok := cfg.AuthInfos[kctx.AuthInfo]
	if !ok && kctx.AuthInfo != "" {
		return malformed(fmt.Sprintf("contexts[%q].user", cfg.CurrentContext), fmt.Sprintf("names user %q, which the kubeconfig lacks", kctx.AuthInfo))
	}
	if ok {
		violations = append(violations, p.checkUser(fmt.Sprintf("users[%q]", kctx.AuthInfo), user)...)
	}
	if len(violations) > 0 {
		return refuse(violations)
	}
	// What the provider will build must pass the second guard too.
	restConfig, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		return malformed("", fmt.Sprintf("the kubeconfig is not usable: %v", err))
	}
	return p.CheckRESTConfig(restConfig)
}

// checkCluster lists the refused fields of a cluster entry.
func (p Policy) checkCluster(at string, c *clientcmdapi.Cluster) []Violation {
	var out []Violation
	if c.Server == "" {
		out = append(out, Violation{Reason: ReasonMalformed, Field: at + ".server", Why: "not set"})
	} else if reason, why := p.checkServer(c.Server); reason != "" {
		out = append(out, Violation{Reason: reason, Field: at + ".server", Why: why})
	}
	if c.InsecureSkipTLSVerify && !p.AllowInsecureTLS {
		out = append(out, Violation{Reason: ReasonInsecureTLS, Field: at + ".insecure-skip-tls-verify",
			Why: "the server's certificate would not be verified (allowed only with --insecure-kubeconfig-tls)"})
	}
	if c.CertificateAuthority != "" {
		out = append(out, fileViolation(at+".certificate-authority", c.CertificateAuthority, "certificate-authority-data"))
	}
	if c.ProxyURL != "" {
		out = append(out, Violation{Reason: ReasonProxy, Field: at + ".proxy-url",
			Why: "the stager's traffic would go through a proxy of the Secret's choice"})
	}
	return out
}

// checkUser lists the refused fields of a user entry.
func (p Policy) checkUser(at string, u *clientcmdapi.AuthInfo) []Violation {
	var out []Violation
	if u.Exec != nil && !p.AllowExec {
		out = append(out, Violation{Reason: ReasonExec, Field: at + ".exec",
			Why: fmt.Sprintf("the credential plugin %q would run inside the stager (allowed only with --insecure-kubeconfig-exec)", u.Exec.Command)})
	}
	if u.AuthProvider != nil {
		out = append(out, Violation{Reason: ReasonAuthProvider, Field: at + ".auth-provider",
			Why: fmt.Sprintf("auth-provider plugins (%q) are not supported: use a token or client certificate data", u.AuthProvider.Name)})
	}
	if u.TokenFile != "" {
		out = append(out, fileViolation(at+".tokenFile", u.TokenFile, "token"))
	}
	if u.ClientCertificate != "" {
		out = append(out, fileViolation(at+".client-certificate", u.ClientCertificate, "client-certificate-data"))
	}
	if u.ClientKey != "" {
		out = append(out, fileViolation(at+".client-key", u.ClientKey, "client-key-data"))
	}
	return out
}

// fileViolation refuses a file reference, naming the inline field to use.
func fileViolation(field, path, inline string) Violation {
	return Violation{Reason: ReasonFileReference, Field: field,
		Why: fmt.Sprintf("reads the file %q of the stager's own file system: put the content in %s instead", path, inline)}
}

// checkServer returns a reason and words when the server URL is refused.
// Its words name the URL without a password (url.URL.Redacted), and do not
// repeat a server that does not parse.
func (p Policy) checkServer(server string) (reason, why string) {
	u, err := url.Parse(server)
	if err != nil {
		return ReasonMalformed, "not a URL"
	}
	if u.Host == "" {
		return ReasonMalformed, fmt.Sprintf("%q is not a URL with a host", u.Redacted())
	}
	switch {
	case u.Scheme == "https":
		return "", ""
	case u.Scheme == "http" && p.AllowInsecureTLS:
		return "", ""
	case u.Scheme == "http":
		return ReasonInsecureServer, fmt.Sprintf("%q is plain http (allowed only with --insecure-kubeconfig-tls)", u.Redacted())
	default:
		return ReasonInsecureServer, fmt.Sprintf("%q is not an https URL", u.Redacted())
	}
}

// CheckRESTConfig refuses a client configuration built from a kubeconfig that
// would use a refused feature. It is the provider-side guard: it sees what
// client-go made of the kubeconfig, whatever Check saw.
func (p Policy) CheckRESTConfig(cfg *rest.Config) error {
	var out []Violation
	if cfg.ExecProvider != nil && !p.AllowExec {
		out = append(out, Violation{Reason: ReasonExec, Field: "exec", Why: fmt.Sprintf("the credential plugin %q would run inside the stager", cfg.ExecProvider.Command)})
	}
	if cfg.AuthProvider != nil {
		out = append(out, Violation{Reason: ReasonAuthProvider, Field: "auth-provider", Why: fmt.Sprintf("auth-provider plugins (%q) are not supported", cfg.AuthProvider.Name)})
	}
	files := map[string]string{"tokenFile": cfg.BearerTokenFile, "client-certificate": cfg.CertFile, "client-key": cfg.KeyFile, "certificate-authority": cfg.CAFile}
	names := make([]string, 0, len(files))
	for name, path := range files {
		if path != "" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		out = append(out, Violation{Reason: ReasonFileReference, Field: name, Why: fmt.Sprintf("reads the file %q of the stager's own file system", files[name])})
	}
	if cfg.Insecure && !p.AllowInsecureTLS {
		out = append(out, Violation{Reason: ReasonInsecureTLS, Field: "insecure-skip-tls-verify", Why: "the server's certificate would not be verified"})
	}
	if cfg.Proxy != nil {
		out = append(out, Violation{Reason: ReasonProxy, Field: "proxy-url", Why: "the stager's traffic would go through a proxy"})
	}
	if reason, why := p.checkServer(cfg.Host); reason != "" {
		out = append(out, Violation{Reason: reason, Field: "server", Why: why})
	}
	return refuse(out)
}

// RESTOption returns the hook for multicluster-runtime's kubeconfig provider
// (kubeconfig.Options.RESTOptions). It denies every exec credential plugin
// through client-go's plugin policy unless exec is allowed, then refuses the
// configuration when CheckRESTConfig does, so that the provider never starts
// a cluster from it.
func (p Policy) RESTOption() func(*rest.Config) error {
	return func(cfg *rest.Config) error {
		if cfg.ExecProvider != nil && !p.AllowExec {
			cfg.ExecProvider.PluginPolicy = clientcmdapi.PluginPolicy{PolicyType: clientcmdapi.PluginPolicyDenyAll}
		}
		return p.CheckRESTConfig(cfg)
	}
}

// RESTConfig is the one way the stager turns a kubeconfig it was handed into
// a client configuration, for the providers that read kubeconfigs themselves
// (KubeFlex's ControlPlanes): Check, then the same hook as RESTOption on what
// client-go made of it.
func (p Policy) RESTConfig(raw []byte) (*rest.Config, error) {
	if err := p.Check(raw); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		return nil, refuse([]Violation{{Reason: ReasonMalformed, Why: err.Error()}})
	}
	if err := p.RESTOption()(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}
