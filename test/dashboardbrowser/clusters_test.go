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
	"fmt"
	"net/url"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/browser"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// counted is the policy TestClusterCounts rolls out.
const counted = "counted"

// waitStageText waits until what selector matches inside the stage's box
// on the card of counted holds text.
func waitStageText(b *browser.Browser, stage, selector, text string) {
	b.WaitJS(fmt.Sprintf(`Array.from(document.querySelectorAll(%s)).some(li =>
		li.querySelector('.stage-name').textContent === %s &&
		Array.from(li.querySelectorAll(%s)).some(e => e.textContent.includes(%s)))`,
		strconv.Quote(card(counted)+" li.stage"), strconv.Quote(stage), strconv.Quote(selector), strconv.Quote(text)))
}

// setClusterAvailable makes one WEC of a stage placed in batches report
// the workload available (each cluster has a BindingPolicy of its own).
func setClusterAvailable(policy, stage, cluster string) {
	suite.availability.SetAvailable(v1alpha1.StagePlacement(policy, stage).On(cluster).String(), true)
	suite.sim.Resync()
}

// TestClusterCounts rolls out a policy whose dev and prod stages are
// placed in batches, the stages the stager judges cluster by cluster
// (status.stages[].clusters): the card shows dev's two clusters
// progressing, then both succeeded, live; in prod, prod1 reports the
// workload available and prod2 reports it unavailable, which prod's
// failureCondition fails at once: the card shows one succeeded and one
// failed, and names prod2 as failed; the policy's page lists each
// cluster with its state.
func TestClusterCounts(t *testing.T) {
	const name = counted
	policy := newPolicy(name)
	dev, prod := &policy.Spec.Stages[0], &policy.Spec.Stages[2]
	dev.MaxConcurrency = ptr.To(intstr.FromInt32(2))
	prod.Filter, prod.Condition = policytest.Deployments, policytest.Available
	prod.FailureCondition = `obj.results.exists(r, r.rows.exists(row, row.columns.exists(c, c.type == 'Number' && c.float == '0')))`
	prod.MaxConcurrency, prod.MaxFailures = ptr.To(intstr.FromInt32(2)), ptr.To(intstr.FromInt32(1))
	prod.ProgressDeadline = &metav1.Duration{Duration: 10 * time.Minute}
	setClusterAvailable(name, "prod", "prod1")
	startRollout(t, policy)
	policies().WaitForActiveStage(t, name, "dev")
	base := runDashboard(t, suite.wds.Kubeconfig())

	b := chromium.New(t)
	b.Open(base.String())
	waitStageText(b, "dev", ".clusters", "0 succeeded · 2 progressing · 0 failed (of 2), batch 1 of 1")
	markPage(b)
	setClusterAvailable(name, "dev", "dev1")
	setClusterAvailable(name, "dev", "dev2")
	waitStageText(b, "dev", ".clusters", "2 succeeded · 0 progressing · 0 failed (of 2)")
	openGate(name, "test")
	waitStageText(b, "prod", ".clusters", "1 succeeded · 0 progressing · 1 failed (of 2)")
	waitStageText(b, "prod", ".failed-clusters", "failed: prod2")
	checkNotReloaded(t, b)
	checkClean(t, b)

	b.Open(base.JoinPath("policy").String() + "?" + url.Values{"space": {""}, "name": {name}}.Encode())
	for _, row := range []string{"dev dev1 Succeeded", "dev dev2 Succeeded", "prod prod2 Failed", "prod prod1 Succeeded"} {
		b.WaitJS(fmt.Sprintf(`Array.from(document.querySelectorAll('section.cluster-states tbody tr')).some(tr =>
			Array.from(tr.cells).map(c => c.textContent).join(' ') === %s)`, strconv.Quote(row)))
	}
}
