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
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// fleet is the order in which a stage of every WEC places them: by name.
var fleet = []string{"dev1", "dev2", "edge1", "prod1", "test1"}

// clusterDeadline is each cluster's progressDeadline in the batched stage.
const clusterDeadline = 20 * time.Second

// startFleetRollout creates the workload app, with its pods failing on the
// given WECs, and a policy of one stage over the five WECs, placed two at a
// time with one failure allowed.
func startFleetRollout(t *testing.T, space, name, app string, failing ...string) {
	t.Helper()
	for _, wec := range failing {
		w := suite.stack.RealWECs[wec]
		if err := w.FailPods(suite.ctx, app); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.RecoverPods(suite.ctx, app) })
	}
	createWorkload(t, space, app)
	fleetStage := policytest.Stage("fleet", policytest.Deployments, policytest.Available)
	fleetStage.ClusterSelectors = []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"dev", "test", "prod", "edge"}}}}}
	fleetStage.MaxConcurrency = ptr.To(intstr.FromInt32(2))
	fleetStage.MaxFailures = ptr.To(intstr.FromInt32(1))
	fleetStage.ProgressDeadline = &metav1.Duration{Duration: clusterDeadline}
	createPolicy(t, space, policytest.Policy(name, map[string]string{policytest.AppLabel: app}, fleetStage))
}

// timeline records when each WEC was first seen holding Deployment app/app
// and first seen running it available, polling every WEC in turn.
type timeline struct {
	mu               sync.Mutex
	present, running map[string]time.Time
}

// watchWECs polls the WECs until the test ends.
func watchWECs(t *testing.T, app string) *timeline {
	tl := &timeline{present: map[string]time.Time{}, running: map[string]time.Time{}}
	ctx, cancel := context.WithCancel(suite.ctx)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			for _, wec := range fleet {
				deps, err := suite.stack.RealWECs[wec].Deployments(ctx, app)
				if err != nil {
					continue
				}
				seen := time.Now()
				tl.mu.Lock()
				for _, d := range deps {
					if d.Name != app {
						continue
					}
					if _, ok := tl.present[wec]; !ok {
						tl.present[wec] = seen
					}
					if _, ok := tl.running[wec]; !ok && d.AvailableReplicas == 1 {
						tl.running[wec] = seen
					}
				}
				tl.mu.Unlock()
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return tl
}

// firstPresent returns when each WEC was first seen holding the workload.
func (tl *timeline) firstPresent() map[string]time.Time {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	out := make(map[string]time.Time, len(tl.present))
	for k, v := range tl.present {
		out[k] = v
	}
	return out
}

// runningAt returns when a WEC was first seen running the workload, or the zero time.
func (tl *timeline) runningAt(wec string) time.Time {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.running[wec]
}

// TestBatchesGoOnPastAFailureWithinTheBudget rolls a workload out to a
// stage of five WECs two at a time, one failure allowed, with edge1's pods
// failing: the stage places dev1 and dev2, then edge1 and prod1 once both
// run it, then test1 once edge1 has failed past its deadline; the rollout
// completes, recording edge1's failure.
func TestBatchesGoOnPastAFailureWithinTheBudget(t *testing.T) {
	t.Parallel()
	const space, name, app = "wds1", "batches", "batches"
	tl := watchWECs(t, app)
	startFleetRollout(t, space, name, app, "edge1")

	p := policies(space).WaitForPhase(t, name, v1alpha1.RolloutCompleted)
	first := tl.firstPresent()
	if len(first) != len(fleet) {
		t.Fatalf("WECs seen holding the workload: %v, want all of %v", first, fleet)
	}
	batch1Done := later(tl.runningAt("dev1"), tl.runningAt("dev2"))
	for _, wec := range []string{"edge1", "prod1"} {
		if first[wec].Before(batch1Done) {
			t.Errorf("%s got the workload at %s, before batch 1 (dev1, dev2) ran it at %s", wec, first[wec].Format(time.StampMilli), batch1Done.Format(time.StampMilli))
		}
	}
	if first["dev1"].After(first["edge1"]) || first["dev2"].After(first["edge1"]) {
		t.Errorf("batch 1 was placed after batch 2: %v", first)
	}
	if first["test1"].Before(tl.runningAt("prod1")) {
		t.Errorf("test1 got the workload at %s, before prod1 ran it at %s", first["test1"].Format(time.StampMilli), tl.runningAt("prod1").Format(time.StampMilli))
	}
	// edge1's deadline counts from its BindingPolicy's creation, which is
	// also when test1's was created: both in whole seconds, as Plan reads them.
	edge1Placed, test1Placed := placedAt(t, space, name, "edge1"), placedAt(t, space, name, "test1")
	if test1Placed.Before(edge1Placed.Add(clusterDeadline)) {
		t.Errorf("test1 was placed at %s, before edge1 (placed at %s) was past its %s deadline", test1Placed, edge1Placed, clusterDeadline)
	}
	t.Logf("first held: %s", formatTimeline(first))

	record := p.Status.StageNamed("fleet")
	if record == nil || record.Clusters == nil {
		t.Fatalf("no record of the fleet stage's clusters: %s", policytest.Describe(p))
	}
	got := *record.Clusters
	if got.Total != 5 || got.Placed != 5 || got.Succeeded != 4 || got.Failed+got.TimedOut != 1 || got.Batches != 3 {
		t.Errorf("clusters = %+v, want 5 placed in 3 batches, 4 succeeded, 1 failed", got)
	}
	if len(got.Clusters) == 0 || got.Clusters[0].Name != "edge1" || got.Clusters[0].State != v1alpha1.ClusterFailed {
		t.Errorf("named clusters = %+v, want edge1 Failed first", got.Clusters)
	}
	if !strings.Contains(record.Message, "edge1 (Failed) failed, within maxFailures (1)") {
		t.Errorf("stage message = %q", record.Message)
	}
	if n := policytest.EventsWithReason(policies(space).EventCounts(t, p), v1alpha1.EventReasonClusterFailed); n == 0 {
		t.Error("no ClusterFailed Event")
	}
	if got := running(t, app); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"dev1", "dev2", "prod1", "test1"}) {
		t.Errorf("WECs running the workload: %v", got)
	}
}

// TestBatchesStopOverTheFailureBudget rolls the same stage out with the
// pods of dev2 (batch 1) and edge1 (batch 2) failing: two failures are
// more than the one allowed, so the rollout stalls after batch 2, naming
// both, and test1 never gets the workload.
func TestBatchesStopOverTheFailureBudget(t *testing.T) {
	t.Parallel()
	const space, name, app = "wds2", "overbudget", "overbudget"
	startFleetRollout(t, space, name, app, "dev2", "edge1")

	p := policies(space).WaitForCondition(t, name, v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonFailureBudgetExceeded)
	if p.Status.Phase != v1alpha1.RolloutStalled {
		t.Errorf("phase = %s, want Stalled", p.Status.Phase)
	}
	c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionProgressing)
	if !strings.Contains(c.Message, "2 cluster(s) failed, more than maxFailures allows (1): dev2 (Failed), edge1 (Failed)") {
		t.Errorf("Progressing message = %q, want it to name dev2 and edge1", c.Message)
	}
	environment.Consistently(t, 5*time.Second, "test1 without the workload", func() error {
		if got := present(t, app); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"dev1", "dev2", "edge1", "prod1"}) {
			return fmt.Errorf("WECs %v hold it", got)
		}
		return nil
	})
	if n := policytest.EventsWithReason(policies(space).EventCounts(t, p), v1alpha1.ReasonFailureBudgetExceeded); n != 1 {
		t.Errorf("%d FailureBudgetExceeded Events, want 1", n)
	}
}

// placedAt returns when the batched stage "fleet" of a policy placed a
// cluster: its BindingPolicy's creation.
func placedAt(t *testing.T, space, policy, cluster string) time.Time {
	t.Helper()
	var bp ksv1alpha1.BindingPolicy
	if err := wds(space).Get(suite.ctx, client.ObjectKey{Name: v1alpha1.StagePlacement(policy, "fleet").On(cluster).String()}, &bp); err != nil {
		t.Fatalf("reading the BindingPolicy of %s: %v", cluster, err)
	}
	return bp.CreationTimestamp.Time
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// formatTimeline lists WECs by when they were first seen, with the offset
// from the first.
func formatTimeline(at map[string]time.Time) string {
	wecs := make([]string, 0, len(at))
	for w := range at {
		wecs = append(wecs, w)
	}
	slices.SortFunc(wecs, func(a, b string) int { return at[a].Compare(at[b]) })
	parts := make([]string, 0, len(wecs))
	for _, w := range wecs {
		parts = append(parts, fmt.Sprintf("%s +%s", w, at[w].Sub(at[wecs[0]]).Round(100*time.Millisecond)))
	}
	return strings.Join(parts, ", ")
}

// TestClustersJoiningAndLeavingABatchedStage changes which clusters a
// batched stage selects while it rolls out, one cluster at a time: a
// cluster that joins is placed in name order once the batch before is
// done, and one that leaves loses the workload and drops out of the count.
func TestClustersJoiningAndLeavingABatchedStage(t *testing.T) {
	t.Parallel()
	const space, name, app, mark = "wds1", "joiners", "joiners", "stager-joiners"
	for _, wec := range []string{"dev1", "dev2"} {
		labelCluster(t, wec, mark, "in")
	}
	t.Cleanup(func() {
		for _, wec := range []string{"dev1", "dev2", "edge1"} {
			labelCluster(t, wec, mark, "")
		}
	})
	createWorkload(t, space, app)
	stage := policytest.Stage("fleet", policytest.Deployments, policytest.Available)
	stage.ClusterSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{mark: "in"}}}
	stage.MaxConcurrency = ptr.To(intstr.FromInt32(1))
	createPolicy(t, space, policytest.Policy(name, map[string]string{policytest.AppLabel: app}, stage))

	environment.Eventually(t, timeout, "dev1 running the workload", func() error {
		if got := running(t, app); !slices.Contains(got, "dev1") {
			return fmt.Errorf("WECs %v run it", got)
		}
		return nil
	})
	labelCluster(t, "edge1", mark, "in")
	p := policies(space).WaitForPhase(t, name, v1alpha1.RolloutCompleted)
	if c := p.Status.StageNamed("fleet").Clusters; c == nil || c.Total != 3 || c.Succeeded != 3 {
		t.Errorf("clusters = %+v, want 3 succeeded: edge1 joined", c)
	}
	waitForWECs(t, app, "dev1", "dev2", "edge1")

	labelCluster(t, "dev1", mark, "")
	environment.Eventually(t, timeout, "dev1 without the workload, out of the count", func() error {
		if got := present(t, app); slices.Contains(got, "dev1") {
			return fmt.Errorf("WECs %v hold it", got)
		}
		p := policies(space).Get(t, name)
		if c := p.Status.StageNamed("fleet").Clusters; c == nil || c.Total != 2 || c.Placed != 2 {
			return fmt.Errorf("clusters = %+v", c)
		}
		return nil
	})
	if got := running(t, app); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"dev2", "edge1"}) {
		t.Errorf("WECs running the workload: %v, want dev2 and edge1", got)
	}
}
