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

package dashboardbrowser

import (
	"bytes"
	"flag"
	"image/png"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

var update = flag.Bool("update-screenshots", false, "rewrite the dashboard's screenshots under docs/screenshots/")

// Screenshot files, from the repository's root; the README shows them.
const (
	overviewShot = "docs/screenshots/dashboard-overview.png"
	policyShot   = "docs/screenshots/dashboard-policy.png"
)

// TestScreenshots photographs the overview and a policy's page of live
// rollouts: nginx rolling v2 out after v1 (dev done, test running, with a
// forecast from the v1 rollout) and payments awaiting approval for dev.
// With -update-screenshots (`make screenshots`) it rewrites the committed
// pictures; without, it only checks they are there and are PNGs, as pixels
// differ with the machine's fonts.
func TestScreenshots(t *testing.T) {
	root, err := environment.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	const nginx, payments = "nginx", "payments"
	for _, rev := range []string{"v1", "v2"} {
		d := policytest.Deployment(workloadNamespace, nginx+"-"+rev)
		d.Labels[policytest.AppLabel] = nginx
		d.Labels[v1alpha1.DefaultRevisionLabelKey] = rev
		if err := suite.wds.Client.Create(suite.ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	p := newPolicy(nginx)
	p.Spec.Revision = &v1alpha1.Revision{Name: "v1"}
	if err := suite.wds.Client.Create(suite.ctx, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { policies().Delete(t, nginx) })
	gate := func(rev string, stages ...string) {
		for _, stage := range stages {
			suite.availability.SetAvailable(v1alpha1.StagePlacement(nginx, stage).At(rev).String(), true)
		}
		suite.sim.Resync()
	}
	gate("v1", "dev", "test")
	policies().WaitFor(t, nginx, "v1 completed", func(p *v1alpha1.StagedBindingPolicy) bool {
		return p.Status.Phase == v1alpha1.RolloutCompleted && p.Status.CurrentRevision == "v1"
	})
	p = policies().Get(t, nginx)
	p.Spec.Revision.Name = "v2"
	if err := suite.wds.Client.Update(suite.ctx, p); err != nil {
		t.Fatal(err)
	}
	gate("v2", "dev")
	policies().WaitFor(t, nginx, "v2 in test", func(p *v1alpha1.StagedBindingPolicy) bool {
		return p.Status.UpdateRevision == "v2" && p.Status.ActiveStage == "test"
	})

	approval := newPolicy(payments)
	approval.Spec.Stages[0].Approval = v1alpha1.ApprovalRequired
	startRollout(t, approval)
	policies().WaitForPhase(t, payments, v1alpha1.RolloutAwaitingApproval)

	base := runDashboard(t, suite.wds.Kubeconfig())
	b := chromium.New(t)
	for _, shot := range []struct {
		file, url string
		ready     func()
	}{
		{overviewShot, base.String(), func() {
			waitActive(b, nginx, "test")
			b.WaitText(card(payments)+" .approval.awaiting", "awaiting approval")
		}},
		{policyShot, base.JoinPath("policy").String() + "?" + url.Values{"space": {""}, "name": {nginx}}.Encode(), func() {
			b.WaitText("div.record li.stage.active .stage-name", "test")
			b.WaitText("section#forecast", "earlier rollout")
		}},
	} {
		b.Open(shot.url)
		shot.ready()
		b.WaitText("#live", "live")
		path := filepath.Join(t.TempDir(), filepath.Base(shot.file))
		if *update {
			path = filepath.Join(root, shot.file)
		}
		b.Screenshot(path)
		t.Logf("wrote %s", path)
		committed := filepath.Join(root, shot.file)
		data, err := os.ReadFile(committed)
		if err != nil {
			t.Fatalf("%v; run `make screenshots`", err)
		}
		if _, err := png.Decode(bytes.NewReader(data)); err != nil {
			t.Fatalf("%s is no PNG: %v; run `make screenshots`", committed, err)
		}
	}
	if n := b.ScriptRuns(); n != 0 {
		t.Errorf("the DOM probe ran %d times", n)
	}
	checkClean(t, b)
}
