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

package dashboard

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/textcut"
)

// readTimeout bounds the reads of one page from a space, so that a space
// that does not answer does not hold the page.
const readTimeout = 10 * time.Second

// bearer matches a bearer token in a message (an error echoing a request).
var bearer = regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+`)

// clean bounds a message for display and takes out what must never show.
func (s *Server) clean(msg string) string {
	return cut(bearer.ReplaceAllString(s.redactors.Replace(msg), "${1}[redacted]"))
}

// spaceView is what the overview shows of one space.
type spaceView struct {
	Name     string `redact:"-"` // the live updates find the section by it
	Error    string
	Policies []policyView
}

type overviewPage struct {
	View    string
	Spaces  []spaceView
	LeftOut int
	Actions bool
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	token := s.sessions.token(w, r)
	page := overviewPage{View: "overview", LeftOut: s.leftOut, Actions: s.opts.Act != nil}
	now := s.opts.Now()
	for _, space := range s.spaces {
		sv := spaceView{Name: space}
		ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
		policies, err := s.opts.Source.List(ctx, space)
		cancel()
		if err != nil {
			sv.Error = s.clean(err.Error())
		}
		sort.Slice(policies, func(i, j int) bool { return policies[i].Name < policies[j].Name })
		for i := range policies {
			sv.Policies = append(sv.Policies, s.view(space, &policies[i], token, now))
		}
		page.Spaces = append(page.Spaces, sv)
	}
	s.render(w, "overview.html", page)
}

// view makes the view of a policy with the actions the dashboard offers.
func (s *Server) view(space string, p *v1alpha1.StagedBindingPolicy, token string, now time.Time) policyView {
	v := viewOf(space, p, now)
	v.CSRF = token
	if s.opts.Act != nil {
		v.Verbs = offeredVerbs(p)
	}
	return v
}

// offeredVerbs are the actions that would change something for p now: a
// page offering to approve a rollout with nothing awaiting approval, or to
// resume one that is not suspended, invites a click that does nothing.
// The API server and the stager still decide; restart is always offered.
func offeredVerbs(p *v1alpha1.StagedBindingPolicy) []string {
	ended := p.Status.Phase == v1alpha1.RolloutCompleted || p.Status.Phase == v1alpha1.RolloutAborted
	awaiting := slices.ContainsFunc(p.Status.Stages, func(r v1alpha1.StageStatus) bool { return r.Phase == v1alpha1.StageAwaitingApproval })
	offered := map[string]bool{
		"approve": awaiting,
		"suspend": !p.Spec.Suspend,
		"resume":  p.Spec.Suspend,
		"abort":   !p.Spec.Abort && !ended,
		"retry":   p.Spec.Abort,
		"restart": true,
		"promote": !p.Spec.Abort && !ended && p.Status.ActiveStage != "",
	}
	var verbs []string
	for _, verb := range Verbs {
		if offered[verb] {
			verbs = append(verbs, verb)
		}
	}
	return verbs
}

// recordPage is the page of one policy.
type recordPage struct {
	View        string
	Policy      policyView
	Conditions  []metav1.Condition
	Clusters    []clusterRow
	History     []v1alpha1.RevisionHistory
	Events      []eventView
	EventsError string
	Explain     string
	Forecast    string
	Actions     bool
}

// known reports whether the dashboard shows the space.
func (s *Server) known(space string) bool {
	return slices.Contains(s.spaces, space)
}

// read reads the policy a request names, answering the request itself when
// it cannot.
func (s *Server) read(w http.ResponseWriter, r *http.Request) (string, *v1alpha1.StagedBindingPolicy, bool) {
	space, name := r.FormValue("space"), r.FormValue("name")
	if !s.known(space) || name == "" {
		http.Error(w, "no such space or policy", http.StatusNotFound)
		return "", nil, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	p, err := s.opts.Source.Get(ctx, space, name)
	switch {
	case apierrors.IsNotFound(err):
		http.Error(w, "no such policy", http.StatusNotFound)
		return "", nil, false
	case err != nil:
		http.Error(w, s.clean(err.Error()), http.StatusBadGateway)
		return "", nil, false
	}
	return space, p, true
}

func (s *Server) policy(w http.ResponseWriter, r *http.Request) {
	token := s.sessions.token(w, r)
	space, p, ok := s.read(w, r)
	if !ok {
		return
	}
	page := s.record(r.Context(), space, p, token)
	if s.opts.Explain != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
		out, err := s.opts.Explain(ctx, space, p.Name)
		cancel()
		if err != nil {
			out = "explain failed: " + err.Error()
		}
		page.Explain = textcut.Cut(bearer.ReplaceAllString(s.redactors.Replace(out), "${1}[redacted]"), maxExplain,
			"\n… [truncated]")
	}
	if s.opts.Forecast != nil {
		page.Forecast = s.clean(s.opts.Forecast(r.Context(), space, p))
	}
	s.render(w, "policy.html", page)
}

// record makes the page of a policy but for its explanation and forecast.
func (s *Server) record(ctx context.Context, space string, p *v1alpha1.StagedBindingPolicy, token string) recordPage {
	now := s.opts.Now()
	page := recordPage{View: "record", Policy: s.view(space, p, token, now), Conditions: p.Status.Conditions,
		Clusters: clusterRows(p), History: p.Status.History, Actions: s.opts.Act != nil}
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	events, err := s.opts.Source.Events(ctx, space, p.Name)
	if err != nil {
		page.EventsError = s.clean(err.Error())
	}
	page.Events = eventViews(events, now)
	return page
}

// fragment serves the part of a page that shows one policy: its card of the
// overview, or its record; the page's script swaps it in on a change.
func (s *Server) fragment(w http.ResponseWriter, r *http.Request) {
	token := s.sessions.token(w, r)
	space, p, ok := s.read(w, r)
	if !ok {
		return
	}
	if r.FormValue("view") == "record" {
		s.render(w, "record", s.record(r.Context(), space, p, token))
		return
	}
	s.render(w, "card", s.view(space, p, token, s.opts.Now()))
}

// render executes a template into a buffer first, so that a failure gives a
// clean error rather than half a page.
func (s *Server) render(w http.ResponseWriter, name string, data any) {
	if s.redacting {
		data = redacted(data, s.redactors.Replace)
	}
	var buf bytes.Buffer
	if err := s.pages.ExecuteTemplate(&buf, name, data); err != nil {
		s.opts.Logger.Error(err, "Rendering a dashboard page failed", "template", name)
		http.Error(w, "rendering the page failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}
