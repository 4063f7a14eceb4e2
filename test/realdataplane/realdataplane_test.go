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

package realdataplane

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

const (
	originWDSLabel     = "transport.kubestellar.io/originWdsName"
	originBindingLabel = "transport.kubestellar.io/originOwnerReferenceBindingKey"
)

// TestSameNameInTwoWDSesDoesNotCrossTalk runs the same policy name with the
// same workload in two WDSes that share the ITS and the WECs
// (kubestellar/kubestellar#1982): wds1 rolls out to prod while wds2 holds at
// dev. Each WDS's ManifestWorks, WorkStatuses, CombinedStatuses and policy
// status are its own, and the WECs run what each placed.
func TestSameNameInTwoWDSesDoesNotCrossTalk(t *testing.T) {
	const name, app = "rollout", "shared"
	startRollout(t, "wds1", name, app, nil)
	startRollout(t, "wds2", name, app, func(p *v1alpha1.StagedBindingPolicy) {
		p.Spec.Stages[0].Condition = "false" // wds2 holds at dev
	})

	policies("wds1").WaitForPhase(t, name, v1alpha1.RolloutCompleted)
	policies("wds2").WaitForActiveStage(t, name, "dev")
	// Replace: wds1's earlier stages are gone; dev's WECs run wds2's copy.
	waitForWECs(t, app, "dev1", "dev2", "prod1")

	environment.Eventually(t, timeout, "each WDS's ManifestWorks and WorkStatuses where its stage places them", func() error {
		want := map[string][]string{
			"wds1": {"prod1/" + v1alpha1.StagePlacement(name, "prod").String() + "-wds1-0"},
			"wds2": {"dev1/" + v1alpha1.StagePlacement(name, "dev").String() + "-wds2-0", "dev2/" + v1alpha1.StagePlacement(name, "dev").String() + "-wds2-0"},
		}
		for space, works := range want {
			got := names(itsList(t, "ManifestWork", "work.open-cluster-management.io", "v1", client.MatchingLabels{originWDSLabel: space}))
			if !slices.Equal(got, works) {
				return fmt.Errorf("%s's ManifestWorks are %v, want %v", space, got, works)
			}
			statuses := itsList(t, "WorkStatus", "control.kubestellar.io", "v1alpha1", client.MatchingLabels{originWDSLabel: space})
			var where []string
			for _, ws := range statuses {
				bp := ws.GetLabels()[originBindingLabel]
				if !hasPrefixIn(bp, name+".stage.") {
					return fmt.Errorf("WorkStatus %s/%s of %s names Binding %q", ws.GetNamespace(), ws.GetName(), space, bp)
				}
				where = append(where, ws.GetNamespace())
			}
			slices.Sort(where)
			where = slices.Compact(where)
			wantWhere := make([]string, 0, len(works))
			for _, w := range works {
				ns, _, _ := strings.Cut(w, "/")
				wantWhere = append(wantWhere, ns)
			}
			if !slices.Equal(where, wantWhere) {
				return fmt.Errorf("%s's WorkStatuses are in %v, want %v", space, where, wantWhere)
			}
		}
		return nil
	})

	environment.Eventually(t, timeout, "each WDS's CombinedStatus rows for its own WECs only", func() error {
		want := map[string][]string{"wds1": {"prod1"}, "wds2": {"dev1", "dev2"}}
		for space, wecs := range want {
			got, err := combinedStatusWECs(space, app)
			if err != nil {
				return err
			}
			if !slices.Equal(got, wecs) {
				return fmt.Errorf("%s's CombinedStatus has rows for %v, want %v", space, got, wecs)
			}
		}
		return nil
	})
	if p := policies("wds2").Get(t, name); p.Status.ActiveStage != "dev" || p.Status.Phase == v1alpha1.RolloutCompleted {
		t.Errorf("wds2's policy moved on: %s", policytest.Describe(p))
	}
}

// combinedStatusWECs returns the WECs in the rows of the CombinedStatuses of
// the Deployment app/app in a WDS, sorted.
func combinedStatusWECs(space, app string) ([]string, error) {
	var list ksv1alpha1.CombinedStatusList
	if err := wds(space).List(suite.ctx, &list, client.InNamespace(app)); err != nil {
		return nil, err
	}
	var wecs []string
	for _, cs := range list.Items {
		for _, r := range cs.Results {
			if r.Name != policytest.Collector {
				continue
			}
			for _, row := range r.Rows {
				if len(row.Columns) > 0 && row.Columns[0].String != nil {
					wecs = append(wecs, *row.Columns[0].String)
				}
			}
		}
	}
	slices.Sort(wecs)
	return wecs, nil
}

// TestFailingPodsHoldTheStage fails the pods of a workload in the test
// stage's WEC: the stage holds and its progress deadline fires; once the
// pods recover, the rollout goes on to prod.
func TestFailingPodsHoldTheStage(t *testing.T) {
	const space, name, app = "wds1", "held", "held"
	test1 := suite.stack.RealWECs["test1"]
	if err := test1.FailPods(suite.ctx, app); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = test1.RecoverPods(suite.ctx, app) })
	startRollout(t, space, name, app, func(p *v1alpha1.StagedBindingPolicy) {
		p.Spec.Stages[1].ProgressDeadline = &metav1.Duration{Duration: 20 * time.Second}
	})

	policies(space).WaitForActiveStage(t, name, "test")
	environment.Eventually(t, timeout, "test1 holding the workload, its pod not Ready", func() error {
		if got := present(t, app); !slices.Equal(got, []string{"test1"}) {
			return fmt.Errorf("WECs %v hold it", got)
		}
		if got := notReady(t, app); !slices.Equal(got, []string{"test1"}) {
			return fmt.Errorf("WECs %v have its pod and none Ready", got)
		}
		return nil
	})
	p := policies(space).WaitForPhase(t, name, v1alpha1.RolloutStalled)
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionProgressing); c == nil || c.Reason != v1alpha1.ReasonProgressDeadlineExceeded {
		t.Errorf("Progressing %v, want ProgressDeadlineExceeded", c)
	}
	if p.Status.ActiveStage != "test" {
		t.Errorf("the stalled rollout left stage test: %s", policytest.Describe(p))
	}

	if err := test1.RecoverPods(suite.ctx, app); err != nil {
		t.Fatal(err)
	}
	policies(space).WaitForPhase(t, name, v1alpha1.RolloutCompleted)
	waitForWECs(t, app, "prod1")
}

// TestAccumulateLeavesEveryStagesWECsAndDeleteRemovesIt rolls out with
// placement Accumulate: at the end every stage's WECs run the workload.
// Deleting the policy then removes it from every WEC.
func TestAccumulateLeavesEveryStagesWECsAndDeleteRemovesIt(t *testing.T) {
	const space, name, app = "wds1", "accumulate", "accumulate"
	createWorkload(t, space, app)
	policy := policytest.ThreeStages(name, app)
	policy.Spec.Placement = v1alpha1.PlacementAccumulate
	if err := wds(space).Create(suite.ctx, policy); err != nil {
		t.Fatal(err)
	}
	policies(space).WaitForPhase(t, name, v1alpha1.RolloutCompleted)
	waitForWECs(t, app, "dev1", "dev2", "test1", "prod1")

	policies(space).Delete(t, name)
	policies(space).WaitGone(t, name)
	environment.Eventually(t, timeout, "no WEC holding the workload", func() error {
		if got := present(t, app); len(got) != 0 {
			return fmt.Errorf("WECs %v still hold it", got)
		}
		return nil
	})
}
