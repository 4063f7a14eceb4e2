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
	"bufio"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/forecast"
	"github.com/kubestellar/workload-stager/test/framework/dashboardrun"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// runDashboard runs `kubectl stager dashboard` with the kubeconfig and args
// until the test ends, and returns the URL it serves at.
func runDashboard(t *testing.T, kubeconfig []byte, args ...string) *url.URL {
	t.Helper()
	return dashboardrun.Run(suite.ctx, t, timeout, kubeconfig, args...)
}

// browser is a client of a dashboard keeping its session cookie, as a
// browser would.
type browser struct {
	t     *testing.T
	base  *url.URL
	http  *http.Client
	token string
}

func newBrowser(t *testing.T, base *url.URL) *browser {
	return &browser{t: t, base: base, http: &http.Client{Jar: &jar{}}}
}

// jar is a cookie jar of one dashboard.
type jar struct {
	mu      sync.Mutex
	cookies []*http.Cookie
}

func (j *jar) SetCookies(_ *url.URL, cookies []*http.Cookie) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.cookies = append(j.cookies, cookies...)
}

func (j *jar) Cookies(*url.URL) []*http.Cookie {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]*http.Cookie(nil), j.cookies...)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// get GETs a path of the dashboard, remembering the page's CSRF token.
func (b *browser) get(path string) (int, string) {
	return b.getQuery(path, nil)
}

// getQuery GETs a path with a query, remembering the page's CSRF token.
func (b *browser) getQuery(path string, query url.Values) (int, string) {
	b.t.Helper()
	u := b.base.JoinPath(path)
	u.RawQuery = query.Encode()
	resp, err := b.http.Get(u.String())
	if err != nil {
		b.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	if m := csrfField.FindSubmatch(body); m != nil {
		b.token = string(m[1])
	}
	return resp.StatusCode, string(body)
}

// post POSTs a form to /action with the given Host and Origin ("" for the
// dashboard's own).
func (b *browser) post(form url.Values, host, origin string) (int, string) {
	b.t.Helper()
	req, err := http.NewRequestWithContext(suite.ctx, http.MethodPost, b.base.JoinPath("action").String(), strings.NewReader(form.Encode()))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if host != "" {
		req.Host = host
	}
	if origin == "" {
		origin = "http://" + b.base.Host
	}
	req.Header.Set("Origin", origin)
	resp, err := b.http.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestDashboardShowsEverySpaceLive runs the dashboard over every space
// registered with the suite's stager: the overview lists the policies of
// wds1 and wds2, read-only; a policy's page shows what explain says; a
// live client is told of a status change in
// wds2 within seconds, and the policy's fragment shows it.
func TestDashboardShowsEverySpaceLive(t *testing.T) {
	for _, c := range []struct {
		s    *space
		name string
	}{{suite.wds1, "dash-one"}, {suite.wds2, "dash-two"}} {
		createWorkload(t, c.s, c.name)
		create(t, c.s, newPolicy(c.name, c.name))
		t.Cleanup(func() { policies(c.s).Delete(t, c.name) })
	}
	base := runDashboard(t, suite.hosting.Kubeconfig(), "--all-spaces", "--kubeconfig-namespace="+secretNamespace)
	b := newBrowser(t, base)
	status, body := b.get("/")
	if status != http.StatusOK {
		t.Fatalf("GET /: %d\n%s", status, body)
	}
	for _, want := range []string{`data-space="wds1" data-name="dash-one"`, `data-space="wds2" data-name="dash-two"`, "Read-only"} {
		if !strings.Contains(body, want) {
			t.Errorf("the overview lacks %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, `action="/action"`) {
		t.Error("the --all-spaces dashboard offers actions, with the registrations' credentials")
	}
	policies(suite.wds1).WaitForActiveStage(t, "dash-one", "dev")
	status, body = b.getQuery("/policy", url.Values{"space": {"wds1"}, "name": {"dash-one"}})
	if want := "StagedBindingPolicy dash-one: phase Progressing, active stage dev"; status != http.StatusOK || !strings.Contains(body, want) {
		t.Errorf("the policy's page: %d, want the explanation %q\n%s", status, want, body)
	}
	// Without spec.revision there is no history to forecast from; the page
	// says so rather than guess.
	section, _, _ := strings.Cut(body[strings.Index(body, `<section id="forecast"`)+1:], "</section>")
	if f := forecast.For(policies(suite.wds1).Get(t, "dash-one"), time.Now()); f.Kind != forecast.NoHistory ||
		!strings.Contains(section, html.EscapeString(f.Reason)) {
		t.Errorf("the policy page's forecast section lacks the forecast %q (%s):\n%s", f.Reason, f.Kind, section)
	}

	req, err := http.NewRequestWithContext(suite.ctx, http.MethodGet, base.JoinPath("events").String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := b.http.Do(req) //nolint:bodyclose // closed by the reading goroutine
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /events: %v %v", resp, err)
	}
	changes := make(chan string, 1000)
	go func() {
		defer func() { _ = resp.Body.Close() }()
		lines := bufio.NewScanner(resp.Body)
		for lines.Scan() {
			if data, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
				changes <- data
			}
		}
	}()
	// The watches report every policy as added first; the test waits for
	// a change that shows the one it makes.
	changed := time.Now()
	updateObject(t, suite.wds2, "dash-two", func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Suspend = true })
	policies(suite.wds2).WaitForPhase(t, "dash-two", v1alpha1.RolloutSuspended)
	deadline := time.After(timeout)
	for seen := false; !seen; {
		select {
		case data := <-changes:
			var c struct{ Space, Name string }
			if json.Unmarshal([]byte(data), &c) == nil && c.Space == "wds2" && c.Name == "dash-two" {
				_, fragment := b.getQuery("/fragment", url.Values{"space": {"wds2"}, "name": {"dash-two"}})
				seen = strings.Contains(fragment, "phase-Suspended")
			}
		case <-deadline:
			t.Fatal("no live change of wds2/dash-two reported showing it Suspended")
		}
	}
	t.Logf("a live client saw the change %v after it was written", time.Since(changed).Round(10*time.Millisecond))
}

// TestDashboardActsAsTheUser runs the dashboard with the kubeconfig of
// wds2's approver dave: a POST without the session's token, with a bad
// Host or a bad Origin does nothing; a confirmed approval with the token
// approves in dave's name and the rollout goes on; an action his RBAC
// refuses shows the API server's message, escaped.
func TestDashboardActsAsTheUser(t *testing.T) {
	s, ctx := suite.wds2, suite.ctx
	if err := s.InstallApprovals(ctx); err != nil {
		t.Fatal(err)
	}
	const user = "dave"
	kubeconfig, err := s.AddUser(user)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Grant(ctx, user, environment.ApproverRole); err != nil {
		t.Fatal(err)
	}
	const name = "dash-approve"
	createWorkload(t, s, name)
	policy := newPolicy(name, name)
	policy.Spec.Stages[0].Approval = v1alpha1.ApprovalRequired
	create(t, s, policy)
	t.Cleanup(func() { policies(s).Delete(t, name) })
	policies(s).WaitForPhase(t, name, v1alpha1.RolloutAwaitingApproval)
	key := types.NamespacedName{Name: v1alpha1.StagePlacement(name, "dev").String()}
	approval := &v1alpha1.StageApproval{}
	waitFor(t, "dev's StageApproval", func() error { return s.Client.Get(ctx, key, approval) })

	base := runDashboard(t, kubeconfig)
	b := newBrowser(t, base)
	if status, body := b.get("/"); status != http.StatusOK || !strings.Contains(body, `data-name="dash-approve"`) || b.token == "" {
		t.Fatalf("GET /: %d, token %q\n%s", status, b.token, body)
	}
	approve := url.Values{"csrf": {b.token}, "space": {""}, "name": {name}, "verb": {"approve"}, "stage": {"dev"}, "confirmed": {"yes"}}
	without := func(key, value string) url.Values {
		f := url.Values{}
		for k, v := range approve {
			f[k] = v
		}
		f.Set(key, value)
		return f
	}
	for what, c := range map[string]struct {
		form         url.Values
		host, origin string
	}{
		"no token":     {without("csrf", ""), "", ""},
		"a bad token":  {without("csrf", "AAAA"+b.token[4:]), "", ""},
		"a bad Host":   {approve, "rebound.example" + base.Host[strings.LastIndex(base.Host, ":"):], ""},
		"a bad Origin": {approve, "", "http://evil.example"},
	} {
		if status, body := b.post(c.form, c.host, c.origin); status < 400 {
			t.Errorf("a POST with %s: %d, want refused\n%s", what, status, body)
		}
	}
	if err := s.Client.Get(ctx, key, approval); err != nil || approval.Status.ApprovedBy != "" {
		t.Fatalf("refused POSTs approved dev: %+v %v", approval.Status, err)
	}

	status, body := b.post(approve, "", "")
	if status != http.StatusOK || !strings.Contains(body, "approved by "+user) {
		t.Fatalf("approving: %d\n%s", status, body)
	}
	p := policies(s).WaitFor(t, name, "dev to start once approved", func(p *v1alpha1.StagedBindingPolicy) bool {
		return len(p.Status.Stages) > 0 && p.Status.Stages[0].Phase == v1alpha1.StageActive
	})
	if by := p.Status.Stages[0].ApprovedBy; by != user {
		t.Errorf("dev approved by %q, want %q", by, user)
	}

	suspend := without("verb", "suspend")
	status, body = b.post(suspend, "", "")
	want := fmt.Sprintf(`User &#34;%s&#34; cannot patch resource &#34;stagedbindingpolicies&#34;`, user)
	if status != http.StatusOK || !strings.Contains(body, `class="refusal"`) || !strings.Contains(body, want) {
		t.Errorf("suspending without the right: %d, want the API server's refusal %s\n%s", status, want, body)
	}
	if policies(s).Get(t, name).Spec.Suspend {
		t.Error("the refused suspend suspended the rollout")
	}
}
