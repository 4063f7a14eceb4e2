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
	"context"
	"net/http"
	"slices"
	"time"
)

// actionTimeout bounds one action.
const actionTimeout = 30 * time.Second

// Bounds of an action's fields: a stage name is a DNS label; a promotion's
// reason is at most 256 bytes (the CRD's bound).
const (
	maxStageName = 63
	maxReason    = 256
)

type confirmPage struct {
	View   string
	Action Action
	Stages []string `redact:"-"`
	CSRF   string   `redact:"-"`
}

type resultPage struct {
	View    string
	Action  Action
	Output  string
	Refusal string
}

// action performs an action asked for by POST: from a page of this
// dashboard (Origin), of this session (CSRF token); first it asks for
// confirmation, then performs it with the user's credentials and shows
// what the API server said, its refusal verbatim.
func (s *Server) action(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); origin != "http://"+r.Host {
		http.Error(w, "Origin not allowed: actions are taken only from the dashboard's own pages", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	if !s.sessions.valid(r, r.PostForm.Get("csrf")) {
		http.Error(w, "bad or missing CSRF token: reload the dashboard and try again", http.StatusForbidden)
		return
	}
	if s.opts.Act == nil {
		http.Error(w, "this dashboard is read-only", http.StatusForbidden)
		return
	}
	a := Action{Verb: r.PostForm.Get("verb"), Space: r.PostForm.Get("space"), Policy: r.PostForm.Get("name"),
		Stage: r.PostForm.Get("stage"), Reason: r.PostForm.Get("reason")}
	switch {
	case !slices.Contains(Verbs, a.Verb):
		http.Error(w, "no such action", http.StatusBadRequest)
		return
	case !s.known(a.Space) || a.Policy == "":
		http.Error(w, "no such space or policy", http.StatusNotFound)
		return
	case len(a.Stage) > maxStageName || len(a.Reason) > maxReason:
		http.Error(w, "stage or reason too long", http.StatusBadRequest)
		return
	}
	if r.PostForm.Get("confirmed") != "yes" {
		s.confirm(w, r, a)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
	defer cancel()
	out, err := s.opts.Act(ctx, a)
	page := resultPage{View: "result", Action: a, Output: s.clean(out)}
	if err != nil {
		page.Refusal = s.clean(err.Error())
		s.opts.Logger.Info("A dashboard action was refused", "space", a.Space, "policy", a.Policy, "action", a.Verb, "error", page.Refusal)
	} else {
		s.opts.Logger.Info("A dashboard action was taken", "space", a.Space, "policy", a.Policy, "action", a.Verb)
	}
	s.render(w, "result.html", page)
}

// confirm asks whether to perform the action, with the stage to approve and
// the reason of a promotion.
func (s *Server) confirm(w http.ResponseWriter, r *http.Request, a Action) {
	page := confirmPage{View: "confirm", Action: a, CSRF: r.PostForm.Get("csrf")}
	if a.Verb == "approve" && a.Stage == "" {
		ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
		p, err := s.opts.Source.Get(ctx, a.Space, a.Policy)
		cancel()
		if err == nil {
			for _, stage := range p.Spec.Stages {
				page.Stages = append(page.Stages, stage.Name)
			}
			a.Stage = p.Status.ActiveStage
			page.Action = a
		}
	}
	s.render(w, "confirm.html", page)
}
