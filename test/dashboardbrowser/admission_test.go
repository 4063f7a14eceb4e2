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
	"strings"
	"testing"

	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// TestAdmissionRefusalByClick runs the dashboard with the kubeconfig of
// pia, bound to the shipped promoter role, which lets her patch policies:
// clicking suspend and confirming reaches the API server, whose shipped
// admission policy workload-stager-promotions refuses a spec change beyond
// spec.promotion from who lacks the verb update; the result page shows
// its message as text, quotes and all.
func TestAdmissionRefusalByClick(t *testing.T) {
	const user, name = "pia", "click-admission"
	if err := suite.wds.InstallPromotions(suite.ctx); err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := suite.wds.AddUser(user)
	if err != nil {
		t.Fatal(err)
	}
	if err := suite.wds.Grant(suite.ctx, user, environment.PromoterRole); err != nil {
		t.Fatal(err)
	}
	startRollout(t, newPolicy(name))
	policies().WaitForActiveStage(t, name, "dev")
	base := runDashboard(t, kubeconfig)

	b := chromium.New(t)
	b.Open(base.String())
	submit(t, b, card(name)+" button.verb-suspend", "confirm")
	submit(t, b, `form.confirm button[type=submit]`, "result")
	b.WaitText("pre.refusal", "ValidatingAdmissionPolicy 'workload-stager-promotions' with binding 'workload-stager-promotions' "+
		"denied request: changing the spec of a StagedBindingPolicy beyond spec.promotion needs the verb update on it; "+user+" may only promote")
	if got := b.Text("p.refused"); !strings.Contains(got, "Refused") {
		t.Errorf("the result page's verdict is %q, want Refused", got)
	}
	if policies().Get(t, name).Spec.Suspend {
		t.Error("the refused suspend suspended the rollout")
	}
	checkClean(t, b)
}
