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

package dashboardrun

// What a browser test (test/framework/browser) reads and clicks on the
// dashboard's pages, shared by test/dashboardbrowser and test/e2e.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/browser"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// Card is the CSS selector of a policy's card on the overview of a
// dashboard run with Run, whose one space is the kubeconfig's (shown as
// space "").
func Card(name string) string {
	return fmt.Sprintf(`article.policy[data-space=""][data-name=%q]`, name)
}

// MarkPage waits until the page is live and sets a global in it that a
// reload would lose, so that a test can tell that what it then sees was
// swapped in by the page's script (CheckNotReloaded).
func MarkPage(b *browser.Browser) {
	b.WaitText("#live", "live")
	browser.Evaluate[int](b, `window.__noReload = 1`)
}

// CheckNotReloaded fails the test if the page was reloaded since MarkPage.
func CheckNotReloaded(t testing.TB, b *browser.Browser) {
	t.Helper()
	if !browser.Evaluate[bool](b, `window.__noReload === 1`) {
		t.Error("the page was reloaded: what it shows did not come from its live updates")
	}
}

// WaitActive waits until the policy's card shows stage as its active stage.
func WaitActive(b *browser.Browser, name, stage string) {
	b.WaitText(Card(name)+" li.stage.active .stage-name", stage)
}

// WaitStage waits until the policy's card shows its stage in phase.
func WaitStage(b *browser.Browser, name, stage string, phase v1alpha1.StagePhase) {
	b.WaitJS(fmt.Sprintf(`Array.from(document.querySelectorAll(%s)).some(li =>
		li.querySelector('.stage-name').textContent === %s && li.classList.contains(%s))`,
		strconv.Quote(Card(name)+" li.stage"), strconv.Quote(stage), strconv.Quote("phase-"+string(phase))))
}

// Submit clicks a button that submits a form and waits, up to timeout, for
// the page it navigates to, whose body's data-view is view. It asks the page
// again until then: an evaluation during the navigation fails.
func Submit(ctx context.Context, t testing.TB, b *browser.Browser, timeout time.Duration, button, view string) {
	t.Helper()
	b.Click(button)
	var last string
	err := environment.Poll(ctx, 100*time.Millisecond, timeout, "the "+view+" page", func() error {
		ctx, cancel := context.WithTimeout(b.Context(), 2*time.Second)
		defer cancel()
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](
			`document.body ? document.body.dataset.view + ': ' + document.body.innerText.slice(0, 2000) : ''`))
		if err != nil {
			return err
		}
		last = got
		if !strings.HasPrefix(got, view+": ") {
			return fmt.Errorf("the page is %q", got)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("after clicking %s: %v (the page: %q)", button, err, last)
	}
}

// CheckClean fails the test on a console error or a Content-Security-Policy
// violation in the browser's pages so far.
func CheckClean(t testing.TB, b *browser.Browser) {
	t.Helper()
	if errs := b.ConsoleErrors(); len(errs) != 0 {
		t.Errorf("console errors: %q", errs)
	}
	if v := b.Violations(); len(v) != 0 {
		t.Errorf("Content-Security-Policy violations: %+v", v)
	}
}
