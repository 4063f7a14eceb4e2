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

// Package browser drives a real headless Chromium from Go tests, over the
// DevTools protocol (github.com/chromedp/chromedp): open a page, wait for text,
// click (accepting a confirm() dialog), read text, evaluate a DOM probe, collect
// console errors and Content-Security-Policy violations, and take full-page
// screenshots. Every step has a bounded time. A test's browser is a tab in a
// browser context of its own (fresh cookies, storage and cache) in a Chromium
// of its own (New) or one its package's tests share (Shared); the tab goes
// when the test ends, the Chromium with its processes and profile when its
// owner does.
//
// The Chromium is $STAGER_CHROMIUM (make sets it from `hack/tool.sh chromium`,
// which installs Debian's chromium package), else a chromium on PATH. Without
// one, New fails the test naming the package to install: a skipped browser
// test would hide a missing install. $STAGER_SKIP_BROWSER=1 turns that into
// a skip, for a machine that cannot install Chromium; never under CI=true.
package browser

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// EnvChromium names the environment variable holding the Chromium to run.
const EnvChromium = "STAGER_CHROMIUM"

// InstallHint is what to run to get a Chromium, as the skip message says.
const InstallHint = "apt-get install chromium"

// Defaults of the Options.
const (
	DefaultStepTimeout  = 30 * time.Second
	DefaultStartTimeout = 90 * time.Second
	DefaultWidth        = 1280
	DefaultHeight       = 800
)

// ProbeVariable is the global a hostile payload sets when it runs: the
// HostileStrings each add one to window.__pwned, and ScriptRuns reads it.
const ProbeVariable = "__pwned"

// HostileStrings are strings that run the DOM probe (window.__pwned += 1) as
// soon as a page renders them as HTML in the usual places: element content,
// a double- or single-quoted attribute, a <title> or <textarea>, with no user
// action. A page that renders them as text runs none; see ScriptRuns.
var HostileStrings = []string{
	`<script>window.__pwned=(window.__pwned||0)+1</script>`,
	`<img src=x onerror="window.__pwned=(window.__pwned||0)+1">`,
	`"><img src=x onerror="window.__pwned=(window.__pwned||0)+1">`,
	`'><img src=x onerror='window.__pwned=(window.__pwned||0)+1'>`,
	`</title></textarea><svg><image href=x onerror="window.__pwned=(window.__pwned||0)+1"/></svg>`,
}

// Options tune a Browser; zero fields take the defaults.
type Options struct {
	// StepTimeout bounds each step (open, wait, click, read, screenshot).
	StepTimeout time.Duration
	// StartTimeout bounds the start of Chromium.
	StartTimeout time.Duration
	// Width and Height are the window's size in CSS pixels, which is the
	// width of the screenshots.
	Width, Height int
}

func (o Options) withDefaults() Options {
	if o.StepTimeout <= 0 {
		o.StepTimeout = DefaultStepTimeout
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.Width <= 0 || o.Height <= 0 {
		o.Width, o.Height = DefaultWidth, DefaultHeight
	}
	return o
}

// Violation is one securitypolicyviolation event the page fired: a
// Content-Security-Policy blocked something.
type Violation struct {
	Directive  string `json:"directive"`
	BlockedURI string `json:"blockedURI"`
	Sample     string `json:"sample"`
	SourceFile string `json:"sourceFile"`
	Line       int    `json:"line"`
}

// Dialog is a JavaScript dialog the page opened.
type Dialog struct {
	Type     string
	Message  string
	Accepted bool
}

// violationBinding is the function the page calls (through a DevTools
// binding, which no Content-Security-Policy blocks) to report a violation.
const violationBinding = "__stagerReportViolation"

// violationListener runs in every document before the page's own scripts.
// Listening on window in the capture phase sees the events fired at the
// document and at every element.
const violationListener = `window.addEventListener('securitypolicyviolation', function (e) {
  window.` + violationBinding + `({directive: e.effectiveDirective || e.violatedDirective || '',
    blockedURI: e.blockedURI || '', sample: e.sample || '', sourceFile: e.sourceFile || '',
    line: e.lineNumber || 0});
}, true);`

// Find returns the Chromium the tests run: $STAGER_CHROMIUM, which must be
// executable, else chromium (or chromium-browser) on PATH.
func Find() (string, error) {
	if path := os.Getenv(EnvChromium); path != "" {
		info, err := os.Stat(path)
		if err != nil {
			return "", fmt.Errorf("$%s: %w (unset it, or point it at a Chromium)", EnvChromium, err)
		}
		if !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
			return "", fmt.Errorf("$%s: %s is not an executable file (unset it, or point it at a Chromium)", EnvChromium, path)
		}
		return path, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path, nil
		}
	}
	return "", errNoChromium
}

// EnvSkipBrowser names the variable that, set to 1, makes a missing Chromium skip a browser test
// instead of failing it, outside CI=true.
const EnvSkipBrowser = "STAGER_SKIP_BROWSER"

var errNoChromium = errors.New("no Chromium: $" + EnvChromium + " is not set and no chromium is on PATH")

// unavailable ends a test that cannot have a browser. A missing Chromium is
// a failure naming what to install, or a skip if $STAGER_SKIP_BROWSER=1 asks
// for one outside CI=true; a broken one (an
// unusable $STAGER_CHROMIUM, a failed start) is a failure anywhere.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if !errors.Is(err, errNoChromium) {
		t.Fatal(err)
	}
	msg := fmt.Sprintf("browser test: %v; install Debian's chromium package (%s, or `hack/tool.sh chromium` as root) or set $%s",
		err, InstallHint, EnvChromium)
	if os.Getenv(EnvSkipBrowser) != "1" || os.Getenv("CI") == "true" {
		t.Fatal(msg + " (a browser test must run, not skip; $" + EnvSkipBrowser + "=1 skips it outside CI)")
	}
	t.Skip(msg)
}

// Chromium is one running headless Chromium. Tests share it, each in a
// browser context of its own (its own cookies, storage and cache, as a
// fresh profile has): starting Chromium costs about 2 s of CPU, a new tab a
// fraction of that.
type Chromium struct {
	path    string
	opts    Options
	dir     string // the profile and the browser's home; removed by Close
	profile string
	output  *tail
	ctx     context.Context // the browser's; its first tab
	cancel  func()
}

// launchAttempts is how many times Start launches Chromium that dies
// before its DevTools endpoint answers: on a loaded machine it can die at
// launch and start at once the next time.
const launchAttempts = 2

// Start starts a headless Chromium found by Find, with a fresh profile in a
// new temporary directory; Close stops it and removes the directory. A
// Chromium that dies at launch is launched once more.
func Start(options Options) (*Chromium, error) {
	var err error
	for attempt := 1; attempt <= launchAttempts; attempt++ {
		var c *Chromium
		if c, err = start(options); err == nil || !diedAtLaunch(err) {
			return c, err
		}
	}
	return nil, err
}

// diedAtLaunch reports whether Start failed because Chromium exited before
// its DevTools endpoint answered (chromedp says so in words alone).
func diedAtLaunch(err error) bool {
	return strings.Contains(err.Error(), "chrome failed to start")
}

// start launches Chromium once.
func start(options Options) (*Chromium, error) {
	path, err := Find()
	if err != nil {
		return nil, err
	}
	o := options.withDefaults()
	dir, err := os.MkdirTemp("", "stager-chromium-")
	if err != nil {
		return nil, fmt.Errorf("browser: %w", err)
	}
	c := &Chromium{path: path, opts: o, dir: dir, profile: filepath.Join(dir, "profile"), output: &tail{limit: 16 << 10}}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("browser: %w", err)
	}
	// docs/testing.md#browser-tests says why each flag is needed here.
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.WindowSize(o.Width, o.Height),
		chromedp.UserDataDir(c.profile),
		chromedp.CombinedOutput(c.output),
		// The browser gets none of the test's environment (kubeconfigs,
		// tokens), and a home of its own.
		chromedp.NoInheritEnv,
		chromedp.Env("PATH="+os.Getenv("PATH"), "HOME="+home, "TMPDIR="+dir, "LANG=C.UTF-8"),
	)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	c.ctx = ctx
	c.cancel = func() { cancelTab(); cancelAlloc() }

	// Start it under a timer rather than a context with a deadline: the
	// first run's context is the browser's life (chromedp).
	timer := time.AfterFunc(o.StartTimeout, cancelAlloc)
	err = chromedp.Do(ctx)
	if !timer.Stop() {
		err = fmt.Errorf("did not start within %s: %w", o.StartTimeout, err)
	}
	if err != nil {
		err = fmt.Errorf("browser: starting %s: %w; chromium's output ends:\n%s", path, err, c.output.String())
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close stops the browser, kills the processes still running with its
// profile (a renderer can outlive the browser and write into the profile
// while it is removed) and removes its directory.
func (c *Chromium) Close() {
	closeCtx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	_ = chromedp.Cancel(closeCtx)
	cancel()
	c.cancel()
	killLeftovers(c.profile)
	_ = os.RemoveAll(c.dir)
}

// Shared is a Chromium a test package's tests share, started by the first
// New and stopped by Close, which the package's TestMain calls after m.Run:
//
//	var chromium browser.Shared
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		chromium.Close()
//		os.Exit(code)
//	}
type Shared struct {
	// Options are the Chromium's, read by the first New.
	Options Options

	mu       sync.Mutex
	chromium *Chromium
	err      error
}

// New opens a browser for the test in the shared Chromium, starting it on
// the first call. Without a Chromium, it skips (fails under CI) as the
// package's New does; a failed start fails every test that asks.
func (s *Shared) New(t testing.TB) *Browser {
	t.Helper()
	s.mu.Lock()
	if s.chromium == nil && s.err == nil {
		started := time.Now()
		s.chromium, s.err = Start(s.Options)
		if s.err == nil {
			t.Logf("browser: %s started in %s", s.chromium.path, time.Since(started).Round(time.Millisecond))
		}
	}
	c, err := s.chromium, s.err
	s.mu.Unlock()
	if err != nil {
		unavailable(t, err)
	}
	return c.New(t)
}

// Close stops the shared Chromium, if it was started.
func (s *Shared) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.chromium != nil {
		s.chromium.Close()
		s.chromium = nil
	}
}

// New starts a headless Chromium for the test alone, with a fresh profile,
// and stops it when the test ends. Without a Chromium, it fails the test
// naming the package to install (a skip if $STAGER_SKIP_BROWSER=1, outside CI). The tests of a
// package share one with Shared.
func New(t testing.TB, options ...Options) *Browser {
	t.Helper()
	var o Options
	if len(options) > 0 {
		o = options[0]
	}
	started := time.Now()
	c, err := Start(o)
	if err != nil {
		unavailable(t, err)
	}
	t.Logf("browser: %s started in %s", c.path, time.Since(started).Round(time.Millisecond))
	t.Cleanup(c.Close) // registered first, so run after the Browser's clean-up
	return c.New(t)
}

// Browser is a tab for one test, in a browser context of its own.
type Browser struct {
	t    testing.TB
	opts Options
	ctx  context.Context // the tab's; ends in the clean-up
	c    *Chromium

	mu         sync.Mutex
	acceptNext int
	dialogs    []Dialog
	console    []chromedp.ConsoleMessage
	violations []Violation
}

// New opens a tab for the test in a new browser context, closed when the
// test ends. An unexpected JavaScript dialog (one no ClickConfirm awaited,
// an alert() from a hostile string, say) fails the test at its end.
func (c *Chromium) New(t testing.TB) *Browser {
	t.Helper()
	ctx, cancel := chromedp.NewContext(c.ctx, chromedp.WithNewBrowserContext())
	b := &Browser{t: t, opts: c.opts, ctx: ctx, c: c}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel() // closes the tab and disposes of its browser context
		wg.Wait()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, d := range b.dialogs {
			if !d.Accepted {
				t.Errorf("browser: the page opened an unexpected %s dialog: %q", d.Type, d.Message)
			}
		}
	})
	// The first run's context is the tab's life (chromedp), so it runs on
	// the tab's own context, bounded by a timer. A new tab starts a
	// renderer, seconds on a loaded machine: it gets the start's bound.
	timer := time.AfterFunc(c.opts.StartTimeout, cancel)
	err := chromedp.Do(ctx)
	if !timer.Stop() {
		err = fmt.Errorf("no tab within %s: %w", c.opts.StartTimeout, err)
	}
	if err != nil {
		t.Fatalf("browser: opening a tab: %v%s", err, b.diagnostics())
	}

	// Subscriptions start when these calls return, before any page loads.
	messages := chromedp.Console(ctx)
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			if len(b.console) < 1000 {
				b.console = append(b.console, m)
			}
			b.mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			b.mu.Lock()
			accept := b.acceptNext > 0 && ev.Type == page.DialogTypeConfirm
			if accept {
				b.acceptNext--
			}
			b.dialogs = append(b.dialogs, Dialog{Type: string(ev.Type), Message: ev.Message, Accepted: accept})
			b.mu.Unlock()
			// An unexpected dialog is dismissed, so that it blocks nothing;
			// the clean-up reports it.
			callCtx, cancel := context.WithTimeout(ctx, b.opts.StepTimeout)
			_, _ = chromedp.Call(callCtx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: accept})
			cancel()
		}
	}()
	b.do("installing the CSP violation listener",
		chromedp.ExposeFunc(violationBinding, func(_ context.Context, v Violation) (chromedp.Void, error) {
			b.mu.Lock()
			defer b.mu.Unlock()
			if len(b.violations) < 1000 {
				b.violations = append(b.violations, v)
			}
			return chromedp.Void{}, nil
		}),
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument,
				page.AddScriptToEvaluateOnNewDocumentParams{Source: violationListener})
			return err
		}),
	)
	return b
}

// Context is the tab's context, for chromedp actions the helpers lack;
// bound each with context.WithTimeout.
func (b *Browser) Context() context.Context { return b.ctx }

// Open navigates to url and waits for its load event.
func (b *Browser) Open(url string) {
	b.t.Helper()
	b.do("opening "+url, chromedp.Navigate(url))
}

// WaitText waits until the first element selector (CSS) matches holds text in
// its textContent, polling the page.
func (b *Browser) WaitText(selector, text string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.opts.StepTimeout)
	defer cancel()
	_, err := retryStale(ctx, func(ctx context.Context) (bool, error) {
		return chromedp.Run(ctx, chromedp.PollFunction[bool](
			`(sel, text) => { const e = document.querySelector(sel); return !!e && e.textContent.includes(text); }`,
			chromedp.WithPollingArgs(selector, text), chromedp.WithPollingInterval(50*time.Millisecond),
			chromedp.WithPollingTimeout(remaining(ctx))))
	})
	if err != nil {
		now, _ := b.textContent(selector)
		b.t.Fatalf("browser: waiting for %q in %s: %v (it holds %q)%s", text, selector, err, now, b.diagnostics())
	}
}

// WaitJS waits until a JavaScript expression (DevTools evaluation, see
// Evaluate) is true, polling the page.
func (b *Browser) WaitJS(expression string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.opts.StepTimeout)
	defer cancel()
	_, err := retryStale(ctx, func(ctx context.Context) (bool, error) {
		return chromedp.Run(ctx, chromedp.Poll[bool](expression,
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(remaining(ctx))))
	})
	if err != nil {
		b.t.Fatalf("browser: waiting for %s: %v%s", expression, err, b.diagnostics())
	}
}

// Text returns the visible text (innerText) of the first element selector
// matches, waiting for it to be there.
func (b *Browser) Text(selector string) string {
	b.t.Helper()
	return run(b, "reading the text of "+selector, chromedp.Text(chromedp.CSS(selector)))
}

func (b *Browser) textContent(selector string) (string, error) {
	ctx, cancel := context.WithTimeout(b.ctx, time.Second)
	defer cancel()
	return retryStale(ctx, func(ctx context.Context) (string, error) {
		return chromedp.Run(ctx, chromedp.Evaluate[string](
			`(e => e ? e.textContent : '<no element>')(document.querySelector(`+strconv.Quote(selector)+`))`))
	})
}

// Click clicks the first element selector matches, once it is visible.
func (b *Browser) Click(selector string) {
	b.t.Helper()
	b.do("clicking "+selector, chromedp.Click(chromedp.CSS(selector)))
}

// ClickConfirm clicks the first element selector matches and accepts the
// confirm() dialog the click opens, returning the dialog's message. It fails
// the test when no confirm dialog opens.
func (b *Browser) ClickConfirm(selector string) string {
	b.t.Helper()
	b.mu.Lock()
	b.acceptNext = 1
	seen := len(b.dialogs)
	b.mu.Unlock()
	// The click returns only once the dialog is closed: the handler is
	// blocked on it until then.
	b.do("clicking "+selector+" and accepting its confirm dialog", chromedp.Click(chromedp.CSS(selector)))
	b.mu.Lock()
	defer b.mu.Unlock()
	b.acceptNext = 0
	for _, d := range b.dialogs[seen:] {
		if d.Accepted {
			return d.Message
		}
	}
	b.t.Fatalf("browser: clicking %s opened no confirm dialog%s", selector, b.diagnosticsLocked())
	return ""
}

// Evaluate evaluates a JavaScript expression in the page (DevTools
// evaluation, which the page's Content-Security-Policy does not restrict)
// and decodes its JSON value into T.
func Evaluate[T any](b *Browser, expression string) T {
	b.t.Helper()
	return run(b, "evaluating "+expression, chromedp.Evaluate[T](expression))
}

// ScriptRuns is the DOM probe: how many times a hostile string ran
// (window.__pwned, 0 when none did).
func (b *Browser) ScriptRuns() int {
	b.t.Helper()
	return Evaluate[int](b, `Number(window.`+ProbeVariable+` || 0)`)
}

// ConsoleErrors returns the text of the console's errors so far: console.error
// calls, uncaught exceptions and the browser's error log entries (a refused
// resource, a CSP report).
func (b *Browser) ConsoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, m := range b.console {
		if m.Type == chromedp.ConsoleError || m.IsException() {
			out = append(out, m.Text)
		}
	}
	return out
}

// WaitViolations waits until the pages have fired at least n
// Content-Security-Policy violations and returns them. A violation reaches
// the harness through a DevTools binding event, after the page's DOM has
// changed: a check right after WaitText can come before it.
func (b *Browser) WaitViolations(n int) []Violation {
	b.t.Helper()
	deadline := time.Now().Add(b.opts.StepTimeout)
	for {
		if v := b.Violations(); len(v) >= n {
			return v
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("browser: waiting for %d Content-Security-Policy violations: %d within %s%s", n, len(b.Violations()), b.opts.StepTimeout, b.diagnostics())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Violations returns the Content-Security-Policy violations the pages fired.
func (b *Browser) Violations() []Violation {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Violation(nil), b.violations...)
}

// Dialogs returns the JavaScript dialogs the pages opened.
func (b *Browser) Dialogs() []Dialog {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Dialog(nil), b.dialogs...)
}

// Screenshot writes a PNG of the whole page (beyond the window's height) to
// path, creating its directory.
func (b *Browser) Screenshot(path string) {
	b.t.Helper()
	png := run(b, "taking a screenshot", chromedp.FullScreenshot(100))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

func (b *Browser) do(step string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.opts.StepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %s: %v%s", step, err, b.diagnostics())
	}
}

func run[T any](b *Browser, step string, action chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.opts.StepTimeout)
	defer cancel()
	v, err := retryStale(ctx, func(ctx context.Context) (T, error) { return chromedp.Run(ctx, action) })
	if err != nil {
		b.t.Fatalf("browser: %s: %v%s", step, err, b.diagnostics())
	}
	return v
}

// retryStale runs an evaluation again while DevTools refuses the execution
// context it ran in as unknown: chromedp learns that a navigation replaced
// the page's context from an event it may not have handled when the load
// event ends Open, so the first evaluation after it can name the old one.
// Nothing ran in the page then, so running it again is safe.
func retryStale[T any](ctx context.Context, evaluate func(context.Context) (T, error)) (T, error) {
	for {
		v, err := evaluate(ctx)
		if !staleContext(err) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// staleContext reports whether err is DevTools' answer to an evaluation in
// an execution context that no longer exists.
func staleContext(err error) bool {
	var cdp *cdproto.Error
	return errors.As(err, &cdp) && cdp.Code == -32000 &&
		(strings.Contains(cdp.Message, "Cannot find context with specified id") ||
			strings.Contains(cdp.Message, "Execution context was destroyed"))
}

// remaining is what is left of ctx's deadline, for a poll's own timeout.
func remaining(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return 0
}

// diagnostics is what a failure message adds: the console's last messages
// and the tail of Chromium's own output.
func (b *Browser) diagnostics() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.diagnosticsLocked()
}

func (b *Browser) diagnosticsLocked() string {
	var s strings.Builder
	console := b.console
	if len(console) > 10 {
		console = console[len(console)-10:]
	}
	for _, m := range console {
		fmt.Fprintf(&s, "\n  console %s", m)
	}
	if out := b.c.output.String(); out != "" {
		fmt.Fprintf(&s, "\n  chromium's output ends:\n%s", out)
	}
	return s.String()
}

// tail keeps the last limit bytes written to it.
type tail struct {
	mu    sync.Mutex
	limit int
	buf   []byte
}

func (w *tail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - w.limit; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}

func (w *tail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

// killLeftovers kills the processes still running with the profile: a
// Chromium child (zygote, renderer) can outlive the browser killed by the
// allocator and write into the profile while it is removed. They are found by
// their --user-data-dir, which is unique to the test; /proc is Linux's, and
// elsewhere nothing is found.
func killLeftovers(profile string) {
	want := []byte("--user-data-dir=" + profile)
	deadline := time.Now().Add(2 * time.Second)
	for quiet := 0; quiet < 3 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		found := 0
		cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, file := range cmdlines {
			cmdline, err := os.ReadFile(file)
			if err != nil {
				continue
			}
			for arg := range bytes.SplitSeq(cmdline, []byte{0}) {
				if bytes.Equal(arg, want) {
					pid, err := strconv.Atoi(filepath.Base(filepath.Dir(file)))
					if err != nil || pid == os.Getpid() {
						break
					}
					if p, err := os.FindProcess(pid); err == nil && p.Kill() == nil {
						found++
					}
					break
				}
			}
		}
		if found == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
}
