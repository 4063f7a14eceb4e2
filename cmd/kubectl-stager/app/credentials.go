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
	"cmp"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"

	"k8s.io/client-go/rest"
)

// maxCredentialFile bounds what is read of a token or key file: more than
// any token or key, and a file that is no credential is not slurped whole.
const maxCredentialFile = 64 << 10

// minPEMLine is the shortest line of a PEM key's body redacted on its own:
// a key's last line can be a few characters, which would blot out the
// page's own words.
const minPEMLine = 16

// dashboardRedactions returns the credentials the dashboard must never
// show: those of the current context (with --all-spaces it reads the
// registrations, and the single and kcp providers reach spaces with it)
// and of every space it serves.
func (o *options) dashboardRedactions(targets []target) ([]string, error) {
	current, err := o.configFlags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	redact := credentialsOf(current)
	for _, t := range targets {
		redact = append(redact, credentialsOf(t.config)...)
	}
	// Longest first: strings.Replacer tries them in order, and a key's
	// line must not be replaced before the whole key.
	slices.SortFunc(redact, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	return slices.Compact(redact), nil
}

// credentialsOf returns the credentials config carries, in each form a
// page could show them: a bearer token, a token file's contents, a basic
// auth password, a URL's password, a client key (given or in a file) as
// written, in base64 as a kubeconfig holds it, and its PEM body; an exec
// plugin's arguments and environment and an auth-provider's settings that
// are named as secrets (what an exec plugin returns is not known before it
// runs: the dashboard's bearer pattern covers it in messages that echo an
// Authorization header).
func credentialsOf(config *rest.Config) []string {
	if config == nil {
		return nil
	}
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	add(config.BearerToken)
	if config.BearerTokenFile != "" {
		add(string(readCredentialFile(config.BearerTokenFile)))
	}
	add(config.Password)
	if u, err := url.Parse(config.Host); err == nil && u.User != nil {
		if password, ok := u.User.Password(); ok {
			add(password)
		}
	}
	for _, key := range [][]byte{config.KeyData, readCredentialFile(config.KeyFile)} {
		for _, form := range pemForms(key) {
			add(form)
		}
	}
	if p := config.AuthProvider; p != nil {
		for name, value := range p.Config {
			if secretName(name) {
				add(value)
			}
		}
	}
	if e := config.ExecProvider; e != nil {
		for _, env := range e.Env {
			if secretName(env.Name) {
				add(env.Value)
			}
		}
		for i, arg := range e.Args {
			name, value, given := strings.Cut(arg, "=")
			switch {
			case !strings.HasPrefix(name, "-") || !secretName(name):
			case given:
				add(value)
			case i+1 < len(e.Args):
				add(e.Args[i+1])
			}
		}
	}
	return out
}

// pemForms returns a PEM key as written, in base64 and its body's base64,
// whole and line by line.
func pemForms(key []byte) []string {
	if len(strings.TrimSpace(string(key))) == 0 {
		return nil
	}
	forms := []string{string(key), base64.StdEncoding.EncodeToString(key)}
	for rest := key; ; {
		block, next := pem.Decode(rest)
		if block == nil {
			break
		}
		forms = append(forms, base64.StdEncoding.EncodeToString(block.Bytes))
		rest = next
	}
	for _, line := range strings.Split(string(key), "\n") {
		if line = strings.TrimSpace(line); len(line) >= minPEMLine && !strings.HasPrefix(line, "-----") {
			forms = append(forms, line)
		}
	}
	return forms
}

// secretName reports whether a setting's name (an auth-provider's key, an
// environment variable, a flag) says it holds a secret.
func secretName(name string) bool {
	name = strings.ToLower(name)
	for _, word := range []string{"token", "secret", "password", "passwd", "key", "credential"} {
		if strings.Contains(name, word) {
			return true
		}
	}
	return false
}

// readCredentialFile returns the start of a credential file, nothing when
// it cannot be read (the client fails on it then, and says why).
func readCredentialFile(path string) []byte {
	if path == "" {
		return nil
	}
	f, err := os.Open(path) //nolint:gosec // the user's own kubeconfig names it
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	data, _ := io.ReadAll(io.LimitReader(f, maxCredentialFile))
	return data
}
