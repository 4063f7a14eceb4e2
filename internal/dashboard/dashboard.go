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

// Package dashboard serves `kubectl stager dashboard`: a web page of every
// space's rollouts, updated live from watches through server-sent events,
// with a page per policy and actions (approve, suspend, ...) performed with
// the user's own credentials. Everything it shows comes from WDSes and is
// treated as hostile: html/template escapes it, a strict
// Content-Security-Policy allows only the embedded script and style, and
// every POST needs the session's CSRF token, an allowed Host and a matching
// Origin. See docs/proposals/dashboard.md.
package dashboard

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

//go:embed assets
var assets embed.FS

// Bounds of what the dashboard reads and shows.
const (
	maxPoliciesPerSpace = 500
	maxEvents           = 100
	// maxString is the most bytes of one string from a WDS the page shows.
	maxString = 2048
	// maxExplain is the most bytes of a policy's explanation the page shows.
	maxExplain = 64 << 10
	// maxFormBytes bounds the body of a POST.
	maxFormBytes = 8 << 10
)

// Action is one action a user asks for on a policy.
type Action struct {
	// Verb is one of Verbs (the dashboard's own word: not redacted).
	Verb string `redact:"-"`
	// Space and Policy name the policy. Names, like the verb, are not
	// redacted: the forms must carry them back as the API has them.
	Space, Policy string `redact:"-"`
	// Stage is the stage to approve (empty: the one awaiting approval).
	Stage string `redact:"-"`
	// Reason is why a promotion skips the gates: the user's own words.
	Reason string `redact:"-"`
}

// Verbs are the actions the dashboard offers, as the plugin names them.
var Verbs = []string{"approve", "suspend", "resume", "abort", "retry", "restart", "promote"}

// Options configure a Server.
type Options struct {
	// Source is where rollouts are read from.
	Source Source
	// Act performs an action with the user's credentials and returns what
	// it printed; nil makes the dashboard read-only.
	Act func(ctx context.Context, a Action) (string, error)
	// Explain returns what `kubectl stager explain` says of a policy; nil
	// leaves the explanation out.
	Explain func(ctx context.Context, space, name string) (string, error)
	// Forecast returns the completion forecast of a policy, with its basis;
	// nil (or "") says there is none.
	Forecast func(ctx context.Context, space string, p *v1alpha1.StagedBindingPolicy) string
	// Address is the address the server listens on (host:port, the port
	// resolved); the Host header must name it or a loopback name with its port.
	Address string
	// Redact are strings (bearer tokens, say) the page must never show.
	Redact []string
	// MaxClients bounds the live (server-sent events) clients; 0 means 32.
	MaxClients int
	// MaxSpaces bounds the spaces shown and watched; 0 means 64.
	MaxSpaces int
	// MaxEventBytes bounds one server-sent event; 0 means 1 KiB.
	MaxEventBytes int
	// ClientBuffer is how many events a live client may fall behind by
	// before it is dropped; 0 means 64.
	ClientBuffer int
	// Now is the clock ages are told against; nil means time.Now.
	Now func() time.Time
	// Logger logs the dashboard's troubles.
	Logger logr.Logger
}

// Server is the dashboard's http.Handler.
type Server struct {
	opts      Options
	pages     *template.Template
	mux       *http.ServeMux
	hub       *hub
	sessions  *sessions
	allowed   map[string]bool
	spaces    []string
	leftOut   int
	static    http.Handler
	redactors *strings.Replacer
	// redacting is whether there is anything to redact.
	redacting bool
}

// New returns a dashboard serving o.Source.
func New(o Options) (*Server, error) {
	if o.Source == nil {
		return nil, errors.New("the dashboard needs a Source")
	}
	if o.MaxClients <= 0 {
		o.MaxClients = 32
	}
	if o.MaxSpaces <= 0 {
		o.MaxSpaces = 64
	}
	if o.MaxEventBytes <= 0 {
		o.MaxEventBytes = 1 << 10
	}
	if o.ClientBuffer <= 0 {
		o.ClientBuffer = 64
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	allowed, err := allowedHosts(o.Address)
	if err != nil {
		return nil, err
	}
	pages, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("parsing the dashboard's templates: %w", err)
	}
	static, err := fs.Sub(assets, "assets/static")
	if err != nil {
		return nil, err
	}
	ss, err := newSessions()
	if err != nil {
		return nil, err
	}
	spaces := o.Source.Spaces()
	leftOut := 0
	if len(spaces) > o.MaxSpaces {
		leftOut = len(spaces) - o.MaxSpaces
		spaces = spaces[:o.MaxSpaces]
	}
	var pairs []string
	for _, r := range o.Redact {
		if r != "" {
			pairs = append(pairs, r, "[redacted]")
		}
	}
	s := &Server{opts: o, pages: pages, mux: http.NewServeMux(), hub: newHub(o.MaxClients, o.ClientBuffer, o.MaxEventBytes),
		sessions: ss, allowed: allowed, spaces: spaces, leftOut: leftOut,
		static: http.StripPrefix("/static/", http.FileServerFS(static)), redactors: strings.NewReplacer(pairs...),
		redacting: len(pairs) > 0}
	s.mux.HandleFunc("GET /{$}", s.overview)
	s.mux.HandleFunc("GET /policy", s.policy)
	s.mux.HandleFunc("GET /fragment", s.fragment)
	s.mux.HandleFunc("GET /events", s.events)
	s.mux.HandleFunc("POST /action", s.action)
	s.mux.Handle("GET /static/", s.static)
	return s, nil
}

// allowedHosts returns the Host headers the dashboard answers: its address,
// and localhost, 127.0.0.1 and [::1] with its port.
func allowedHosts(address string) (map[string]bool, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("the dashboard's address %q: %w", address, err)
	}
	allowed := map[string]bool{net.JoinHostPort(host, port): true}
	for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
		allowed[net.JoinHostPort(h, port)] = true
	}
	return allowed, nil
}

// Run watches every space shown and feeds the live clients, until ctx is
// done.
func (s *Server) Run(ctx context.Context) {
	done := make(chan struct{})
	for _, space := range s.spaces {
		go func() {
			defer func() { done <- struct{}{} }()
			s.watch(ctx, space)
		}()
	}
	for range s.spaces {
		<-done
	}
	s.hub.close()
}

// watch keeps a watch of one space's policies, started again after a
// failure, and tells the live clients of every change.
func (s *Server) watch(ctx context.Context, space string) {
	for ctx.Err() == nil {
		err := s.opts.Source.Watch(ctx, space, func(name string) {
			s.hub.publish(change{Space: space, Name: name})
		})
		if err != nil && ctx.Err() == nil {
			s.opts.Logger.Error(err, "Watching a space's policies failed; retrying", "space", space)
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
	}
}

// ServeHTTP implements http.Handler: every response gets the security
// headers, and a request naming another Host is refused (DNS rebinding).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	// Not no-referrer: under it a browser sends "Origin: null" with a
	// form's POST, and the Origin check would refuse every action.
	h.Set("Referrer-Policy", ReferrerPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	if !s.allowed[strings.ToLower(r.Host)] {
		http.Error(w, "Host not allowed: the dashboard answers only to its own address", http.StatusMisdirectedRequest)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// ContentSecurityPolicy is the policy of every response: only the
// dashboard's own script, style and connections, no frames, no base, forms
// to itself.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// ReferrerPolicy is the Referrer-Policy of every response: no URL of the
// dashboard goes to another site, and the browser sends the page's Origin
// with its own form POSTs, which the Origin check of actions needs
// (no-referrer makes them "Origin: null").
const ReferrerPolicy = "same-origin"

// CheckAddress checks the address the dashboard is to listen on: a loopback
// IP or localhost, unless allowRemote; then it returns a warning to print.
// A host name but localhost, and the unspecified address, are refused even
// so: the Host header must name the address.
func CheckAddress(address string, allowRemote bool) (warning string, err error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return "", fmt.Errorf("--address %q: %w", address, err)
	}
	if host == "localhost" {
		return "", nil
	}
	ip := net.ParseIP(host)
	if ip != nil && ip.IsLoopback() {
		return "", nil
	}
	if !allowRemote {
		return "", fmt.Errorf("--address %q is not a loopback address: the dashboard acts with your credentials, "+
			"so it listens on this machine only unless --allow-remote is given", address)
	}
	if ip == nil || ip.IsUnspecified() {
		// The Host header must name the address (DNS rebinding), so it must
		// be one address, the one users browse to.
		return "", fmt.Errorf("--address %q: give the IP address of one interface, not a host name or every interface", address)
	}
	return fmt.Sprintf("WARNING: the dashboard listens on %s, reachable from other machines; it acts with your credentials "+
		"for whoever reaches it and serves plain HTTP", address), nil
}
