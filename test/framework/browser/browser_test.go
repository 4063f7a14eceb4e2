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

package browser_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubestellar/workload-stager/test/framework/browser"
)

// chromium is the package's shared Chromium; TestScreenshotIsAPNG starts one
// of its own (New).
var chromium browser.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	chromium.Close()
	os.Exit(code)
}

// strictCSP is what the dashboard will send: scripts only from its own files.
const strictCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'"

const appPage = `<!doctype html><html><head><title>harness</title><script src="/app.js" defer></script></head>
<body><h1 id="title">Harness</h1>
<p id="late"></p>
<button id="go">go</button><p id="out">not clicked</p>
<button id="abort">abort</button><p id="answer">unanswered</p>
<div id="astext"></div><div id="ashtml"></div>
</body></html>`

// appJS sets #late after a delay (a live update), answers the buttons, and
// renders the hostile strings into #astext as text, or into #ashtml as HTML
// when the page's query asks for it.
const appJS = `setTimeout(() => { document.getElementById('late').textContent = 'stage test: Succeeded'; }, 300);
document.getElementById('go').addEventListener('click', () => { document.getElementById('out').textContent = 'clicked'; });
document.getElementById('abort').addEventListener('click', () => {
  document.getElementById('answer').textContent = confirm('Abort the rollout of nginx?') ? 'confirmed' : 'cancelled';
});
fetch('/hostile').then(r => r.json()).then(list => {
  for (const s of list) {
    const p = document.createElement('p'); p.textContent = s; document.getElementById('astext').appendChild(p);
  }
  if (location.search === '?html') {
    document.getElementById('ashtml').innerHTML = list.join('');
  }
  document.body.dataset.rendered = 'yes';
});`

// server serves the harness's test pages: / and /app.js under the strict CSP,
// /inline with an inline script under the strict CSP (or none, ?nocsp).
func server(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", strictCSP)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(appPage))
	})
	mux.HandleFunc("/app.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = w.Write([]byte(appJS))
	})
	mux.HandleFunc("/hostile", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(browser.HostileStrings)
	})
	mux.HandleFunc("/inline", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery != "nocsp" {
			w.Header().Set("Content-Security-Policy", strictCSP)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><p id="p">inline</p><script>window.__pwned=(window.__pwned||0)+1</script>`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestWaitClickAndConfirm: a wait sees text a script sets later, a click runs
// the page's handler, and a confirm() dialog is accepted with its message
// returned.
func TestWaitClickAndConfirm(t *testing.T) {
	srv := server(t)
	b := chromium.New(t)
	b.Open(srv.URL)
	if got := b.Text("#title"); got != "Harness" {
		t.Fatalf("title %q, want Harness", got)
	}
	b.WaitText("#late", "Succeeded")

	b.Click("#go")
	b.WaitText("#out", "clicked")

	msg := b.ClickConfirm("#abort")
	if msg != "Abort the rollout of nginx?" {
		t.Errorf("dialog message %q", msg)
	}
	b.WaitText("#answer", "confirmed")
	if d := b.Dialogs(); len(d) != 1 || d[0].Type != "confirm" || !d[0].Accepted {
		t.Errorf("dialogs %+v, want one accepted confirm", d)
	}
	if errs := b.ConsoleErrors(); len(errs) != 0 {
		t.Errorf("console errors on a clean page: %q", errs)
	}
	if v := b.Violations(); len(v) != 0 {
		t.Errorf("CSP violations on a clean page: %+v", v)
	}
}

// TestStrictCSPBlocksInlineScript: under the strict CSP an inline script does
// not run (the probe stays 0), and the harness reports the violation, both as
// a securitypolicyviolation event and as a console error. Without the CSP the
// same page runs it, so the probe can see a script run.
func TestStrictCSPBlocksInlineScript(t *testing.T) {
	srv := server(t)
	b := chromium.New(t)

	b.Open(srv.URL + "/inline?nocsp")
	if n := b.ScriptRuns(); n != 1 {
		t.Fatalf("without a CSP the inline script ran %d times, want 1: the probe sees nothing", n)
	}
	if v := b.Violations(); len(v) != 0 {
		t.Fatalf("violations without a CSP: %+v", v)
	}

	b.Open(srv.URL + "/inline")
	b.WaitText("#p", "inline")
	if n := b.ScriptRuns(); n != 0 {
		t.Errorf("the strict CSP let the inline script run %d times", n)
	}
	v := b.WaitViolations(1)
	if len(v) != 1 || !strings.HasPrefix(v[0].Directive, "script-src") || v[0].BlockedURI != "inline" {
		t.Errorf("violations %+v, want one script-src violation of an inline script", v)
	}
	// The console's errors, as the violations, reach the harness as
	// DevTools events some time after the page changed.
	found := false
	for deadline := time.Now().Add(10 * time.Second); !found && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, e := range b.ConsoleErrors() {
			found = found || strings.Contains(e, "Content Security Policy")
		}
	}
	if !found {
		t.Errorf("no console error names the Content Security Policy: %q", b.ConsoleErrors())
	}
}

// TestEvaluateRightAfterOpen: an evaluation just after a navigation runs in
// the new page. chromedp can still hold the old page's execution context
// then, and DevTools refuses it ("Cannot find context with specified id");
// CI saw that fail TestStrictCSPBlocksInlineScript on a loaded machine. The
// pages alternate so that every Open replaces a context.
func TestEvaluateRightAfterOpen(t *testing.T) {
	srv := server(t)
	b := chromium.New(t)
	for i := range 40 {
		b.Open(srv.URL + "/inline?nocsp")
		if n := b.ScriptRuns(); n != 1 {
			t.Fatalf("round %d: the page without a CSP ran its script %d times, want 1", i, n)
		}
		b.Open(srv.URL + "/inline")
		b.WaitText("#p", "inline")
		if n := b.ScriptRuns(); n != 0 {
			t.Fatalf("round %d: the strict CSP let the inline script run %d times", i, n)
		}
	}
}

// TestHostileStringsAsTextRunNothing: every hostile string inserted as text
// shows verbatim and runs nothing; inserted as HTML (the bug a dashboard must
// not have) they run the probe, so the probe can fail.
func TestHostileStringsAsTextRunNothing(t *testing.T) {
	srv := server(t)
	b := chromium.New(t)

	b.Open(srv.URL)
	b.WaitText("#astext", browser.HostileStrings[len(browser.HostileStrings)-1])
	for i, s := range browser.HostileStrings {
		if got := browser.Evaluate[string](b, `document.querySelectorAll('#astext p')[`+strconv.Itoa(i)+`].textContent`); got != s {
			t.Errorf("hostile string %d shows as %q, want it verbatim", i, got)
		}
	}
	if n := b.ScriptRuns(); n != 0 {
		t.Errorf("hostile strings inserted as text ran %d times", n)
	}

	// The same strings as HTML: the page's CSP lets no inline handler run
	// either, and reports each attempt.
	b.Open(srv.URL + "/?html")
	b.WaitText("#astext", browser.HostileStrings[0])
	if n := b.ScriptRuns(); n != 0 {
		t.Errorf("under the strict CSP hostile HTML ran %d times", n)
	}
	b.WaitViolations(1)
}

// TestProbeSeesHostileHTML: without a CSP, the hostile strings rendered as
// HTML run the probe (the innerHTML control of the test above, in a page
// that has no CSP to stop them).
func TestProbeSeesHostileHTML(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		// Each string where a template without escaping would put it: in
		// content, in a double- and a single-quoted attribute, in a title.
		_, _ = w.Write([]byte(`<!doctype html><title>` + browser.HostileStrings[4] + `</title><div>` +
			browser.HostileStrings[0] + browser.HostileStrings[1] + `</div><a title="` + browser.HostileStrings[2] +
			`">a</a><a title='` + browser.HostileStrings[3] + `'>b</a><p id="end">end</p>`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	b := chromium.New(t)
	b.Open(srv.URL)
	b.WaitText("#end", "end")
	// The images' error handlers run after the load.
	b.WaitJS(`Number(window.__pwned || 0) >= ` + strconv.Itoa(len(browser.HostileStrings)))
	if n := b.ScriptRuns(); n != len(browser.HostileStrings) {
		t.Errorf("unescaped hostile strings ran the probe %d times, want %d (one each)", n, len(browser.HostileStrings))
	}
}

// TestBrowsersAreIsolated: two tests' browsers in the shared Chromium see
// none of each other's cookies or storage.
func TestBrowsersAreIsolated(t *testing.T) {
	srv := server(t)
	first := chromium.New(t)
	first.Open(srv.URL)
	browser.Evaluate[bool](first, `(document.cookie = 'session=first', localStorage.setItem('k', 'first'), true)`)
	if got := browser.Evaluate[string](first, `document.cookie`); got != "session=first" {
		t.Fatalf("the first browser's cookie is %q", got)
	}
	second := chromium.New(t)
	second.Open(srv.URL)
	if got := browser.Evaluate[string](second, `document.cookie + '|' + (localStorage.getItem('k') || '')`); got != "|" {
		t.Errorf("the second browser sees the first's cookie and storage: %q", got)
	}
}

// TestScreenshotIsAPNG: a full-page screenshot, in a Chromium of the test's
// own (New) with a window of its size, is a PNG of the window's width and of
// plausible size.
func TestScreenshotIsAPNG(t *testing.T) {
	srv := server(t)
	b := browser.New(t, browser.Options{Width: 800, Height: 600})
	b.Open(srv.URL)
	b.WaitText("#late", "Succeeded")
	path := filepath.Join(t.TempDir(), "shots", "page.png")
	b.Screenshot(path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the screenshot is no PNG: %v", err)
	}
	if w := img.Bounds().Dx(); w != 800 {
		t.Errorf("screenshot %d pixels wide, want 800", w)
	}
	if h := img.Bounds().Dy(); h < 100 || h > 4000 {
		t.Errorf("screenshot %d pixels high", h)
	}
	if len(data) < 2<<10 || len(data) > 4<<20 {
		t.Errorf("screenshot of %d bytes: implausible", len(data))
	}
}

// TestNoChromiumSkipsOrFailsUnderCI runs this package's test binary again
// with no Chromium to find: a test asking for a browser (its own or the
// shared one) fails, naming the package; it skips only when
// $STAGER_SKIP_BROWSER=1 asks, and never under CI=true. A $STAGER_CHROMIUM
// that names no program fails whatever is asked.
func TestNoChromiumSkipsOrFailsUnderCI(t *testing.T) {
	if os.Getenv("BROWSER_TEST_CHILD") == "1" {
		if os.Getenv("BROWSER_TEST_SHARED") == "1" {
			chromium.New(t)
		} else {
			browser.New(t)
		}
		t.Fatal("New returned without a Chromium")
	}
	for _, tc := range []struct {
		ci, shared, env, skip string
		wantFail              bool
		want                  string
	}{
		{"", "0", "", "", true, browser.InstallHint},
		{"", "0", "", "1", false, browser.InstallHint},
		{"true", "0", "", "1", true, browser.InstallHint},
		{"", "1", "", "", true, browser.InstallHint},
		{"", "1", "", "1", false, browser.InstallHint},
		{"true", "1", "", "1", true, browser.InstallHint},
		{"", "0", "/nonexistent/chromium", "1", true, "$STAGER_CHROMIUM: stat /nonexistent/chromium"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNoChromiumSkipsOrFailsUnderCI$", "-test.v")
		cmd.Env = []string{"BROWSER_TEST_CHILD=1", "BROWSER_TEST_SHARED=" + tc.shared, "PATH=" + t.TempDir(),
			"HOME=" + os.Getenv("HOME"), "CI=" + tc.ci, browser.EnvChromium + "=" + tc.env, browser.EnvSkipBrowser + "=" + tc.skip}
		out, err := cmd.CombinedOutput()
		failed := err != nil
		if failed != tc.wantFail {
			t.Errorf("CI=%q shared=%s %s=%q: failed=%v, want %v:\n%s", tc.ci, tc.shared, browser.EnvChromium, tc.env, failed, tc.wantFail, out)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("CI=%q shared=%s %s=%q: the message does not say %q:\n%s", tc.ci, tc.shared, browser.EnvChromium, tc.env, tc.want, out)
		}
		if !tc.wantFail && !strings.Contains(string(out), "--- SKIP") {
			t.Errorf("CI=%q shared=%s: the test did not skip:\n%s", tc.ci, tc.shared, out)
		}
	}
}

// TestChromiumDyingAtLaunchIsLaunchedAgain starts a Chromium behind a
// wrapper that exits before Chromium's DevTools endpoint answers the first
// times it is run: once is survived by a second launch; a Chromium that
// dies at every launch fails Start after two.
func TestChromiumDyingAtLaunchIsLaunchedAgain(t *testing.T) {
	chromiumPath, err := browser.Find()
	if err != nil {
		browser.New(t) // fails, or skips, as every browser test does
	}
	for _, tc := range []struct {
		deaths    int
		wantStart bool
	}{
		{deaths: 1, wantStart: true},
		{deaths: 3, wantStart: false},
	} {
		dir := t.TempDir()
		launches := filepath.Join(dir, "launches")
		wrapper := filepath.Join(dir, "chromium")
		script := fmt.Sprintf(`#!/bin/sh
echo launched >> %[1]q
if [ "$(wc -l < %[1]q)" -le %[2]d ]; then echo "dying at launch" >&2; exit 1; fi
exec %[3]q "$@"
`, launches, tc.deaths, chromiumPath)
		if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv(browser.EnvChromium, wrapper)
		c, err := browser.Start(browser.Options{})
		if c != nil {
			c.Close()
		}
		if started := err == nil; started != tc.wantStart {
			t.Errorf("dying %d times: started %t (%v), want %t", tc.deaths, started, err, tc.wantStart)
		}
		data, readErr := os.ReadFile(launches)
		if readErr != nil {
			t.Fatal(readErr)
		}
		if n := strings.Count(string(data), "launched"); n != 2 {
			t.Errorf("dying %d times: launched %d times, want 2", tc.deaths, n)
		}
	}
}
