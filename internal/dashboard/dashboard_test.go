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
	"fmt"
	"html"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fataler is what pages needs of a test, rapid's or testing's.
type fataler interface {
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// hostile are the strings of a policy that come from a WDS.
type hostile struct {
	Name, Stage, Message, Cluster, Value, Event, Space string
}

// policyWith returns a policy in the middle of a rollout whose every string
// from the WDS is one of h's.
func policyWith(h hostile) v1alpha1.StagedBindingPolicy {
	at := metav1.NewTime(testNow.Add(-time.Minute))
	return v1alpha1.StagedBindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: h.Name},
		Spec: v1alpha1.StagedBindingPolicySpec{Stages: []v1alpha1.Stage{
			{Name: "dev"}, {Name: h.Stage, Approval: v1alpha1.ApprovalRequired}, {Name: "prod"}}},
		Status: v1alpha1.StagedBindingPolicyStatus{
			Phase: v1alpha1.RolloutAwaitingApproval, ActiveStage: h.Stage, CurrentRevision: "v1", UpdateRevision: "v2",
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Waiting", Message: h.Message}},
			Failure:    &v1alpha1.RolloutFailure{Stage: "dev", Reason: "Failed", Message: h.Message, Time: at},
			Wave:       &v1alpha1.WaveStatus{Name: h.Value, Step: "canary", Position: "1/3", State: v1alpha1.WaveReleased},
			Stages: []v1alpha1.StageStatus{
				{Name: "dev", Phase: v1alpha1.StageSucceeded, Revision: "v2", Message: h.Message,
					Clusters: &v1alpha1.StageClusters{Total: 3, Placed: 3, Succeeded: 1, Failed: 1, Batch: 2, Batches: 3,
						Clusters: []v1alpha1.ClusterStatus{{Name: h.Cluster, State: v1alpha1.ClusterFailed}}},
					Analyses: []v1alpha1.AnalysisStatus{{Name: h.Value, Phase: v1alpha1.AnalysisRunning, Successful: 1,
						Measurements: []v1alpha1.Measurement{{Time: at, Phase: v1alpha1.MeasurementSuccessful, Value: h.Value, Message: h.Message}}}}},
				{Name: h.Stage, Phase: v1alpha1.StageAwaitingApproval, ApprovalRequestedTime: &at, Message: h.Message},
			},
		},
	}
}

// sourceWith returns a source of one space holding the policy of h, with
// an Event whose message is h's.
func sourceWith(h hostile) *fakeSource {
	src := newFakeSource()
	src.policies[h.Space] = []v1alpha1.StagedBindingPolicy{policyWith(h)}
	src.events[h.Space+"/"+h.Name] = []corev1.Event{{Type: corev1.EventTypeWarning, Reason: h.Value, Message: h.Event,
		LastTimestamp: metav1.NewTime(testNow.Add(-time.Second)), Count: 2}}
	return src
}

// pages renders every page that shows the policy of h: the overview, the
// policy's page, both fragments, and an action's confirmation and refusal,
// by a dashboard told to redact the strings given.
func pages(t fataler, h hostile, redact ...string) map[string]string {
	explain := func(context.Context, string, string) (string, error) { return "Waits for:\t" + h.Message, nil }
	act := func(context.Context, Action) (string, error) { return "", fmt.Errorf("refused: %s", h.Message) }
	s, err := New(Options{Source: sourceWith(h), Address: testAddress, Act: act, Explain: explain, Now: func() time.Time { return testNow }, Redact: redact,
		Forecast: func(context.Context, string, *v1alpha1.StagedBindingPolicy) string { return h.Value }})
	if err != nil {
		t.Fatal(err)
	}
	q := url.Values{"space": {h.Space}, "name": {h.Name}}.Encode()
	out := map[string]string{}
	for page, target := range map[string]string{"overview": "/", "policy": "/policy?" + q, "card": "/fragment?" + q,
		"record": "/fragment?view=record&" + q} {
		resp, body := get(s, target, testAddress)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s\n%s", target, resp.Status, body)
		}
		out[page] = body
	}
	resp, _ := get(s, "/", testAddress)
	cookie := resp.Cookies()[0]
	token := s.sessions.tokenOf(cookie.Value)
	form := url.Values{"csrf": {token}, "space": {h.Space}, "name": {h.Name}, "verb": {"approve"}}
	_, out["confirm"] = post(s, form, testAddress, "http://"+testAddress, cookie)
	form.Set("confirmed", "yes")
	form.Set("stage", cut(h.Stage)[:min(len(h.Stage), maxStageName)])
	_, out["refusal"] = post(s, form, testAddress, "http://"+testAddress, cookie)
	return out
}

var (
	tagRE  = regexp.MustCompile(`<(/?[A-Za-z][A-Za-z0-9]*)([^>]*)>`)
	attrRE = regexp.MustCompile(`\s([A-Za-z][A-Za-z0-9-]*)(?:="[^"]*")?`)
)

// structure returns the tags of a page and their attributes' names, as a
// browser would see them were every value double-quoted: what the page's
// data must never change.
func structure(page string) []string {
	var out []string
	for _, m := range tagRE.FindAllStringSubmatch(page, -1) {
		tag := strings.ToLower(m[1])
		for _, a := range attrRE.FindAllStringSubmatch(m[2], -1) {
			tag += " " + strings.ToLower(a[1])
		}
		out = append(out, tag)
	}
	return out
}

// hostileString draws strings made of what breaks out of HTML text and
// attributes, and of what makes script.
func hostileString() *rapid.Generator[string] {
	pieces := []string{"<", ">", `"`, "'", "&", "/", "=", " ", "script", "img", "onerror", "alert(1)", "javascript:",
		"</article>", "<script>alert(1)</script>", `" onmouseover="alert(1)`, "\n", "\t", "\u202e", "x", "é"}
	return rapid.Custom(func(t *rapid.T) string {
		n := rapid.IntRange(1, 12).Draw(t, "n")
		var b strings.Builder
		for range n {
			b.WriteString(rapid.SampledFrom(pieces).Draw(t, "piece"))
		}
		return b.String()
	})
}

// TestHostileStringsNeverChangeThePage renders every page of a policy
// whose every string from the WDS (name, stage, condition and record
// messages, cluster name, analysis value, Event text, space) is drawn from
// what breaks out of HTML, and checks that the pages' tags and attributes
// are those of the same pages with plain strings: no string adds an
// element, an attribute or a script; each shows as text.
func TestHostileStringsNeverChangeThePage(t *testing.T) {
	plain := hostile{Name: "n", Stage: "s", Message: "m", Cluster: "c", Value: "v", Event: "e", Space: "p"}
	rapid.Check(t, func(rt *rapid.T) {
		h := hostile{Name: hostileString().Draw(rt, "name"), Stage: hostileString().Draw(rt, "stage"),
			Message: hostileString().Draw(rt, "message"), Cluster: hostileString().Draw(rt, "cluster"),
			Value: hostileString().Draw(rt, "value"), Event: hostileString().Draw(rt, "event"), Space: hostileString().Draw(rt, "space")}
		if h.Stage == "dev" || h.Stage == "prod" {
			h.Stage += "x"
		}
		want, got := pages(rt, plain), pages(rt, h)
		for page, body := range got {
			if w, g := structure(want[page]), structure(body); !slices.Equal(w, g) {
				rt.Fatalf("page %s: the strings changed its structure:\nwant %v\n got %v\n%s", page, w, g, body)
			}
			if n, w := strings.Count(strings.ToLower(body), "<script"), strings.Count(want[page], "<script"); n != w {
				rt.Fatalf("page %s has %d script elements, want %d (app.js's):\n%s", page, n, w, body)
			}
		}
		if !strings.Contains(got["record"], escapeText(h.Event)) {
			rt.Fatalf("the Event's text %q is not shown escaped", h.Event)
		}
	})
}

// escapeText is how html/template writes s in a text node.
func escapeText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "\x00", "\uFFFD", "+", "&#43;").Replace(s)
}

// TestHostileObjects renders the hostile objects: a policy message
// holding a script, a cluster name with quotes, an Event text with HTML, and
// a refusal with HTML; each shows as escaped text.
func TestHostileObjects(t *testing.T) {
	h := hostile{Name: "web", Stage: "test", Message: "<script>alert(1)</script>", Cluster: `prod"1' onclick="alert(2)`,
		Value: "0.5", Event: `<img src=x onerror="alert(3)">`, Space: "wds1"}
	got := pages(t, h)
	for page, body := range got {
		for _, raw := range []string{h.Message, h.Cluster, h.Event} {
			if strings.Contains(body, raw) {
				t.Fatalf("page %s shows %q unescaped", page, raw)
			}
		}
	}
	for page, want := range map[string]string{"overview": "&lt;script&gt;alert(1)&lt;/script&gt;",
		"policy":  "&lt;img src=x onerror=&#34;alert(3)&#34;&gt;",
		"refusal": "refused: &lt;script&gt;alert(1)&lt;/script&gt;"} {
		if !strings.Contains(got[page], want) {
			t.Fatalf("page %s does not show %q:\n%s", page, want, got[page])
		}
	}
	// The failed cluster is named on the card and listed on the policy's page.
	for _, page := range []string{"overview", "card", "policy", "record"} {
		if want := `prod&#34;1&#39; onclick=&#34;alert(2)`; !strings.Contains(got[page], want) {
			t.Fatalf("page %s does not show the cluster name %q:\n%s", page, want, got[page])
		}
	}
}

var cutMark = regexp.MustCompile(`… \[truncated, 10485\d\d bytes in all\]`)

// TestLongMessageIsCut gives a policy a 1 MB message: every page shows the
// beginning of it with a marker, and stays small.
func TestLongMessageIsCut(t *testing.T) {
	long := strings.Repeat("<b>x</b>", 1<<20/8)
	h := hostile{Name: "web", Stage: "test", Message: long, Cluster: "c", Value: "v", Event: long, Space: "wds1"}
	for page, body := range pages(t, h) {
		if len(body) > 256<<10 {
			t.Fatalf("page %s is %d bytes for a 1 MB message, want at most 256 KiB", page, len(body))
		}
		if page != "confirm" && !cutMark.MatchString(body) {
			t.Fatalf("page %s does not mark the cut message", page)
		}
	}
}

// TestSecurityHeaders checks every response, the refused ones included,
// for the Content-Security-Policy and the other headers.
func TestSecurityHeaders(t *testing.T) {
	s := newTestServer(t, sourceWith(hostile{Name: "web", Stage: "test", Space: "wds1"}), Options{})
	for _, target := range []string{"/", "/policy?space=wds1&name=web", "/policy?space=wds1&name=none", "/fragment?space=wds1&name=web",
		"/static/app.js", "/static/style.css", "/nothing"} {
		for _, host := range []string{testAddress, "evil.example:3100"} {
			resp, _ := get(s, target, host)
			h := resp.Header
			if h.Get("Content-Security-Policy") != ContentSecurityPolicy || h.Get("X-Content-Type-Options") != "nosniff" ||
				h.Get("Referrer-Policy") != "same-origin" {
				t.Errorf("GET %s (Host %s): headers %v", target, host, h)
			}
		}
	}
	want := "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
	if ContentSecurityPolicy != want {
		t.Errorf("Content-Security-Policy %q, want %q", ContentSecurityPolicy, want)
	}
	resp, body := get(s, "/static/app.js", testAddress)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") || !strings.Contains(body, "EventSource") {
		t.Errorf("app.js: %s %v", resp.Status, resp.Header)
	}
}

// TestHostIsChecked serves the dashboard's address and the loopback names
// with its port, and refuses any other Host (DNS rebinding).
func TestHostIsChecked(t *testing.T) {
	s := newTestServer(t, sourceWith(hostile{Name: "web", Stage: "test", Space: "wds1"}), Options{})
	for host, ok := range map[string]bool{testAddress: true, "localhost:3100": true, "LocalHost:3100": true, "[::1]:3100": true,
		"evil.example:3100": false, "127.0.0.1": false, "localhost:3101": false, "127.0.0.2:3100": false, "": false,
		"127.0.0.1:3100.evil.example": false} {
		resp, _ := get(s, "/", host)
		if got := resp.StatusCode == http.StatusOK; got != ok {
			t.Errorf("Host %q: %s, want served %t", host, resp.Status, ok)
		}
	}
}

// TestActionsNeedTokenHostAndOrigin posts an action without a token, with
// a bad one, with another session's, with a bad Host, a bad or no Origin,
// and by GET: every one is refused and nothing is done; with all good, the
// dashboard asks for confirmation first and acts only once confirmed.
func TestActionsNeedTokenHostAndOrigin(t *testing.T) {
	var done []Action
	act := func(_ context.Context, a Action) (string, error) { done = append(done, a); return "approved", nil }
	s := newTestServer(t, sourceWith(hostile{Name: "web", Stage: "test", Space: "wds1"}), Options{Act: act})
	cookie, token := session(t, s)
	other, otherToken := session(t, s)
	if other.Value == cookie.Value || otherToken == token {
		t.Fatal("two sessions got the same cookie or token")
	}
	if !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Errorf("session cookie %+v: want HttpOnly and SameSite=Strict", cookie)
	}
	form := func(token string) url.Values {
		return url.Values{"csrf": {token}, "space": {"wds1"}, "name": {"web"}, "verb": {"approve"}, "stage": {"test"}, "confirmed": {"yes"}}
	}
	origin := "http://" + testAddress
	for what, c := range map[string]struct {
		form         url.Values
		host, origin string
		cookie       *http.Cookie
	}{
		"no token":              {form(""), testAddress, origin, cookie},
		"a bad token":           {form(token[:len(token)-2] + "AA"), testAddress, origin, cookie},
		"another session's":     {form(otherToken), testAddress, origin, cookie},
		"no cookie":             {form(token), testAddress, origin, nil},
		"a bad Host":            {form(token), "evil.example:3100", "http://evil.example:3100", cookie},
		"a bad Origin":          {form(token), testAddress, "http://evil.example", cookie},
		"no Origin":             {form(token), testAddress, "", cookie},
		"the Origin of another": {form(token), testAddress, "http://localhost:3100", cookie},
	} {
		resp, body := post(s, c.form, c.host, c.origin, c.cookie)
		if resp.StatusCode < 400 {
			t.Errorf("a POST with %s: %s, want refused\n%s", what, resp.Status, body)
		}
	}
	if resp, _ := get(s, "/action?"+form(token).Encode(), testAddress, cookie); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /action: %s, want 405", resp.Status)
	}
	if len(done) != 0 {
		t.Fatalf("refused requests acted: %v", done)
	}

	unconfirmed := form(token)
	unconfirmed.Del("confirmed")
	resp, body := post(s, unconfirmed, testAddress, origin, cookie)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `name="confirmed" value="yes"`) || len(done) != 0 {
		t.Fatalf("an unconfirmed action: %s, %d done, want a confirmation page\n%s", resp.Status, len(done), body)
	}
	resp, body = post(s, form(token), testAddress, origin, cookie)
	want := Action{Verb: "approve", Space: "wds1", Policy: "web", Stage: "test"}
	if resp.StatusCode != http.StatusOK || !slices.Equal(done, []Action{want}) || !strings.Contains(body, "approved") {
		t.Fatalf("a confirmed action: %s, done %v, want %v\n%s", resp.Status, done, want, body)
	}
	form(token)
	bad := form(token)
	bad.Set("verb", "delete")
	if resp, _ := post(s, bad, testAddress, origin, cookie); resp.StatusCode != http.StatusBadRequest || len(done) != 1 {
		t.Errorf("an unknown verb: %s, want 400 and nothing done", resp.Status)
	}
}

// TestReadOnlyOffersNoAction checks that a dashboard without Act offers no
// action and refuses one.
func TestReadOnlyOffersNoAction(t *testing.T) {
	s := newTestServer(t, sourceWith(hostile{Name: "web", Stage: "test", Space: "wds1"}), Options{})
	resp, body := get(s, "/", testAddress)
	if strings.Contains(body, `action="/action"`) || !strings.Contains(body, "Read-only") {
		t.Errorf("a read-only dashboard offers actions:\n%s", body)
	}
	cookie := resp.Cookies()[0]
	form := url.Values{"csrf": {s.sessions.tokenOf(cookie.Value)}, "space": {"wds1"}, "name": {"web"}, "verb": {"suspend"}, "confirmed": {"yes"}}
	if resp, _ := post(s, form, testAddress, "http://"+testAddress, cookie); resp.StatusCode != http.StatusForbidden {
		t.Errorf("an action on a read-only dashboard: %s, want 403", resp.Status)
	}
}

// TestNoCredentials makes a space's reads fail with errors that echo a
// bearer token and a secret the dashboard is told to redact: no page shows
// either.
func TestNoCredentials(t *testing.T) {
	const token, secret = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0.sig", "/home/me/.kube/config-with-token"
	src := sourceWith(hostile{Name: "web", Stage: "test", Space: "wds1"})
	src.policies["wds2"] = nil
	src.listErr["wds2"] = fmt.Errorf("Get https://wds2/apis: Authorization: Bearer %s (from %s)", token, secret)
	explain := func(context.Context, string, string) (string, error) {
		return "", fmt.Errorf("bearer %s in %s", token, secret)
	}
	act := func(context.Context, Action) (string, error) { return "", fmt.Errorf("BEARER %s", token) }
	s := newTestServer(t, src, Options{Redact: []string{secret}, Explain: explain, Act: act})
	cookie, csrf := session(t, s)
	_, overview := get(s, "/", testAddress)
	_, policy := get(s, "/policy?space=wds1&name=web", testAddress)
	_, result := post(s, url.Values{"csrf": {csrf}, "space": {"wds1"}, "name": {"web"}, "verb": {"suspend"}, "confirmed": {"yes"}},
		testAddress, "http://"+testAddress, cookie)
	for page, body := range map[string]string{"overview": overview, "policy": policy, "result": result} {
		if strings.Contains(body, token) || strings.Contains(body, secret) || !strings.Contains(body, "[redacted]") {
			t.Errorf("page %s shows a credential or redacts nothing:\n%s", page, body)
		}
	}
}

// TestCredentialsInObjectsAreRedacted puts a credential the dashboard is
// told to redact, drawn with the characters a token or a PEM key carries
// ('+', '/', '='), inside every string a WDS writes that is not a name (a
// condition and a record message, a cluster name, an analysis value, an
// Event's text, an action's refusal): no page shows it, neither as written
// nor as escaped, and each says [redacted].
func TestCredentialsInObjectsAreRedacted(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		secret := rapid.StringMatching(`[A-Za-z0-9+/=._-]{16,48}`).Draw(rt, "secret")
		around := func(label string) string {
			return rapid.SampledFrom([]string{"", "x", "token: ", "<b>"}).Draw(rt, label) + secret +
				rapid.SampledFrom([]string{"", " ", "\n", "\"", "&"}).Draw(rt, label+" after")
		}
		h := hostile{Name: "web", Stage: "test", Space: "wds1", Message: around("message"), Cluster: around("cluster"),
			Value: around("value"), Event: around("event")}
		shown := pages(rt, h, secret)
		for _, page := range slices.Sorted(maps.Keys(shown)) {
			body := shown[page]
			if strings.Contains(body, secret) || strings.Contains(html.UnescapeString(body), secret) {
				rt.Fatalf("page %s shows the credential %q:\n%s", page, secret, body)
			}
			// The confirmation shows no string of the WDS but stage names.
			if page != "confirm" && !strings.Contains(body, "[redacted]") {
				rt.Fatalf("page %s redacts nothing:\n%s", page, body)
			}
		}
	})
}

// TestCheckAddress accepts loopback addresses, refuses others unless
// allowed (then with a warning), and refuses host names and every
// interface even then.
func TestCheckAddress(t *testing.T) {
	for _, c := range []struct {
		address     string
		allowRemote bool
		ok, warning bool
	}{
		{"127.0.0.1:3100", false, true, false},
		{"localhost:3100", false, true, false},
		{"[::1]:3100", false, true, false},
		{"127.0.0.5:0", false, true, false},
		{"192.168.1.5:3100", false, false, false},
		{"192.168.1.5:3100", true, true, true},
		{"0.0.0.0:3100", false, false, false},
		{"0.0.0.0:3100", true, false, false},
		{":3100", true, false, false},
		{"example.com:3100", true, false, false},
		{"127.0.0.1", false, false, false},
	} {
		warning, err := CheckAddress(c.address, c.allowRemote)
		if (err == nil) != c.ok || (warning != "") != c.warning {
			t.Errorf("CheckAddress(%q, %t) = %q, %v; want ok %t, warning %t", c.address, c.allowRemote, warning, err, c.ok, c.warning)
		}
	}
}

// iconLink is a page's <link rel="icon">.
var iconLink = regexp.MustCompile(`<link rel="icon" href="([^"]+)"`)

// TestPagesNameTheirIcon checks that every page names an icon the
// dashboard serves: without one a browser asks for /favicon.ico, a 404 in
// the console of every page (found by test/dashboardbrowser).
func TestPagesNameTheirIcon(t *testing.T) {
	s := newTestServer(t, sourceWith(hostile{Name: "web", Stage: "test", Space: "wds1"}), Options{})
	for _, target := range []string{"/", "/policy?space=wds1&name=web"} {
		_, body := get(s, target, testAddress)
		m := iconLink.FindStringSubmatch(body)
		if m == nil {
			t.Errorf("GET %s: no <link rel=\"icon\"> in the page", target)
			continue
		}
		resp, _ := get(s, m[1], testAddress)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "image/") {
			t.Errorf("GET %s: the icon %s is %s %q", target, m[1], resp.Status, resp.Header.Get("Content-Type"))
		}
	}
}

// TestRedactionSparesThePagesOwnStrings redacts strings so short that the
// page's own would hold them (letters of every verb and of any CSRF
// token): the forms still carry the session's token and the verbs, so
// actions still work, while a WDS's message holding them is redacted.
func TestRedactionSparesThePagesOwnStrings(t *testing.T) {
	letters := []string{"a", "e", "o", "s", "t", "A", "E", "O", "S", "T", "1", "-", "_"}
	src := sourceWith(hostile{Name: "web", Stage: "test", Message: "a test message", Space: "wds1"})
	s := newTestServer(t, src, Options{Redact: letters, Act: func(context.Context, Action) (string, error) { return "done", nil }})
	cookie, csrf := session(t, s)
	if want := s.sessions.tokenOf(cookie.Value); csrf != want {
		t.Fatalf("the page's CSRF token is %q, want the session's %q", csrf, want)
	}
	_, overview := get(s, "/", testAddress, cookie)
	for _, want := range []string{`name="verb" value="approve"`, `class="verb-suspend"`} {
		if !strings.Contains(overview, want) {
			t.Errorf("the overview lacks %s", want)
		}
	}
	if strings.Contains(overview, "a test message") {
		t.Error("the WDS's message was not redacted")
	}
	form := url.Values{"csrf": {csrf}, "space": {"wds1"}, "name": {"web"}, "verb": {"suspend"}}
	if resp, body := post(s, form, testAddress, "http://"+testAddress, cookie); resp.StatusCode != http.StatusOK ||
		!strings.Contains(body, `name="csrf" value="`+csrf+`"`) || !strings.Contains(body, `name="verb" value="suspend"`) {
		t.Errorf("the confirmation: %s, want it to carry the session's token and the verb\n%s", resp.Status, body)
	}
}

// TestRedactionKeepsThePagesFormsWorking follows the page's own forms, as
// a browser does, with credentials so short that the names in them hold
// them: the policy, space and stage names the forms and links carry are
// the API's names, not a WDS's text, and an action still reaches the
// policy it was asked on.
func TestRedactionKeepsThePagesFormsWorking(t *testing.T) {
	letters := []string{"w", "e", "b", "d", "s", "1", "t"}
	var acted []Action
	src := sourceWith(hostile{Name: "web", Stage: "test", Space: "wds1"})
	s := newTestServer(t, src, Options{Redact: letters, Act: func(_ context.Context, a Action) (string, error) {
		acted = append(acted, a)
		return "done", nil
	}})
	cookie, csrf := session(t, s)
	field := func(page, name string) string {
		m := regexp.MustCompile(`name="` + name + `" value="([^"]*)"`).FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no %s field in the page\n%s", name, page)
		}
		return html.UnescapeString(m[1])
	}
	_, overview := get(s, "/", testAddress, cookie)
	if link := regexp.MustCompile(`href="(/policy\?[^"]*)"`).FindStringSubmatch(overview); link == nil ||
		html.UnescapeString(link[1]) != "/policy?space=wds1&name=web" {
		t.Errorf("the policy's link is %q, want /policy?space=wds1&name=web", link)
	}
	ask := url.Values{"csrf": {csrf}, "space": {field(overview, "space")}, "name": {field(overview, "name")}, "verb": {"approve"}}
	_, confirm := post(s, ask, testAddress, "http://"+testAddress, cookie)
	if !strings.Contains(confirm, `<option value="test"`) {
		t.Errorf("the confirmation offers no stage test\n%s", confirm)
	}
	confirmed := url.Values{"csrf": {csrf}, "space": {field(confirm, "space")}, "name": {field(confirm, "name")},
		"verb": {field(confirm, "verb")}, "stage": {"test"}, "confirmed": {"yes"}}
	if resp, body := post(s, confirmed, testAddress, "http://"+testAddress, cookie); resp.StatusCode != http.StatusOK {
		t.Fatalf("the confirmed action: %s\n%s", resp.Status, body)
	}
	if want := (Action{Verb: "approve", Space: "wds1", Policy: "web", Stage: "test"}); len(acted) != 1 || acted[0] != want {
		t.Errorf("acted on %+v, want %+v", acted, want)
	}
}
