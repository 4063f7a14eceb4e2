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

package rollout

// Rules 13, 15, 16, 18 and 19 for a stage placed in batches
// (maxConcurrency): its census, each cluster's state, the batches, the
// failure budget and the canary batch.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// stores are the clusters of the batched stage, out of name order.
var stores = []string{"store-e", "store-a", "store-d", "store-b", "store-c"}

// fleetStage is stage "prod" placed two clusters at a time, each with a
// progressDeadline of 10 minutes, changed by change.
func fleetStage(change func(*v1alpha1.Stage)) v1alpha1.Stage {
	s := stage("prod")
	s.MaxConcurrency = ptr.To(intstr.FromInt32(2))
	s.ProgressDeadline = &metav1.Duration{Duration: 10 * time.Minute}
	if change != nil {
		change(&s)
	}
	return s
}

// resolvedAs makes bp as KubeStellar resolved it: created at created,
// generation 1, observed.
func resolvedAs(bp *ksv1alpha1.BindingPolicy, uid types.UID, created metav1.Time) *ksv1alpha1.BindingPolicy {
	bp.UID, bp.Generation, bp.ResourceVersion, bp.CreationTimestamp = uid, 1, "100", created
	bp.Status.ObservedGeneration = 1
	return bp
}

// batched returns a policy whose final stage, prod, is placed in batches
// and active, its census resolved and naming clusters (stores by default).
func batched(prod v1alpha1.Stage, clusters ...string) fixture {
	if clusters == nil {
		clusters = stores
	}
	p := atStage(newPolicy(stage("dev"), stage("test"), prod), "prod")
	census := resolvedAs(CensusBindingPolicy(p, prod), "bp-census", muchEarlier)
	f := fixture{newSnapshot(p, census)}
	f.ActiveBindingPolicy = census.DeepCopy()
	f.Binding = bindingFor(census)
	f.Binding.Spec.Workload = ksv1alpha1.DownsyncObjectClauses{}
	f.Binding.Spec.Destinations = nil
	for _, c := range clusters {
		f.Binding.Spec.Destinations = append(f.Binding.Spec.Destinations, ksv1alpha1.Destination{ClusterId: c})
	}
	return f
}

// on adds the BindingPolicy that places cluster, created (and sealed) at
// created and resolved, with its Binding and, unless count is "", the CombinedStatus
// of its Deployment saying count available.
func (f fixture) on(cluster string, created metav1.Time, count string) fixture {
	return f.onStage(f.Policy.Spec.Stages[len(f.Policy.Spec.Stages)-1], cluster, created, count)
}

// onStage is on for a cluster of stage prod, placed in batches.
func (f fixture) onStage(prod v1alpha1.Stage, cluster string, created metav1.Time, count string) fixture {
	bp := resolvedAs(ClusterBindingPolicy(f.Policy, prod, cluster), types.UID("bp-"+cluster), created)
	bp.Annotations = map[string]string{v1alpha1.PlacedAnnotation: SealedPlacement(f.Policy.UID, prod.Name, f.Policy.Status.UpdateRevision, cluster, created.Time)}
	f.BindingPolicies = append(f.BindingPolicies, *bp)
	b := bindingFor(bp)
	b.Spec.Destinations = []ksv1alpha1.Destination{{ClusterId: cluster}}
	f.Bindings = append(f.Bindings, *b)
	if count != "" {
		f.ClusterStatuses = append(f.ClusterStatuses, combinedStatus(bp, deployment, count))
	}
	return f
}

// minutesAgo is Now less n minutes.
func minutesAgo(n int) metav1.Time {
	return metav1.NewTime(now.Add(-time.Duration(n) * time.Minute))
}

// clusterRecord is the prod stage's record of its clusters in the action's status.
func clusterRecord(t *testing.T, action Action) *v1alpha1.StageClusters {
	t.Helper()
	if action.Type != ActionUpdateStatus {
		t.Fatalf("action = %s (%s), want UpdateStatus", action.Type, action.Why)
	}
	r := action.Status.StageNamed("prod")
	if r == nil || r.Clusters == nil {
		t.Fatalf("the prod record has no clusters: %+v", r)
	}
	return r.Clusters
}

func TestBatchedStageLearnsItsClustersFromItsCensus(t *testing.T) {
	engine := newEngine(t)
	prod := fleetStage(nil)

	t.Run("the census is created, not the stage's BindingPolicy", func(t *testing.T) {
		p := atStage(newPolicy(stage("dev"), stage("test"), prod), "prod")
		action := planThrough(newSnapshot(p), engine)
		if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.clusters.selected" {
			t.Fatalf("action = %s %v, want the census created", action.Type, action.BindingPolicy)
		}
		if bp := action.BindingPolicy; len(bp.Spec.Downsync) != 0 || len(bp.Spec.ClusterSelectors) != 1 ||
			bp.Spec.ClusterSelectors[0].MatchLabels["stage"] != "prod" {
			t.Errorf("census spec = %+v, want the stage's selectors and no downsync", bp.Spec)
		}
	})

	t.Run("nothing is placed until KubeStellar resolves the census", func(t *testing.T) {
		f := batched(prod)
		f.Binding = nil
		action := planThrough(f.Snapshot, engine)
		if action.Type == ActionCreateBindingPolicy {
			t.Fatalf("placed %s before the census was resolved", action.BindingPolicy.Name)
		}
		if got := condition(t, action.Status, v1alpha1.ConditionProgressing).Reason; got != v1alpha1.ReasonWaitingForBinding {
			t.Errorf("reason = %s, want WaitingForBinding", got)
		}
	})

	t.Run("a census that names no cluster waits, saying so", func(t *testing.T) {
		f := batched(prod, []string{}...)
		f.Binding.Spec.Destinations = nil
		action := planThrough(f.Snapshot, engine)
		if got := condition(t, action.Status, v1alpha1.ConditionProgressing).Reason; got != v1alpha1.ReasonNoClustersSelected {
			t.Errorf("reason = %s, want NoClustersSelected", got)
		}
	})
}

func TestBatchesPlaceClustersByNameAFewAtATime(t *testing.T) {
	engine := newEngine(t)
	prod := fleetStage(nil)

	t.Run("the first cluster by name starts batch 1", func(t *testing.T) {
		action := planThrough(batched(prod).Snapshot, engine)
		if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.on.store-a" {
			t.Fatalf("action = %s (%s), want store-a placed", action.Type, action.Why)
		}
		bp := action.BindingPolicy
		if bp.Labels[v1alpha1.ClusterLabel] != "store-a" || bp.Labels[v1alpha1.StageLabel] != "prod" {
			t.Errorf("labels = %v", bp.Labels)
		}
		want := metav1.LabelSelectorRequirement{Key: "name", Operator: metav1.LabelSelectorOpIn, Values: []string{"store-a"}}
		if sel := bp.Spec.ClusterSelectors; len(sel) != 1 || sel[0].MatchLabels["stage"] != "prod" ||
			len(sel[0].MatchExpressions) != 1 || sel[0].MatchExpressions[0].Key != want.Key || sel[0].MatchExpressions[0].Values[0] != "store-a" {
			t.Errorf("selectors = %+v, want the stage's and name In (store-a)", sel)
		}
		if len(bp.Spec.Downsync) == 0 {
			t.Error("the cluster's BindingPolicy places no workload")
		}
		if got := eventKeys(action.Events); !slices.Equal(got, []string{"Normal/BatchStarted"}) {
			t.Errorf("events = %v", got)
		}
	})

	t.Run("a batch fills at once", func(t *testing.T) {
		action := planThrough(batched(prod).on("store-a", now, "").Snapshot, engine)
		if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.on.store-b" {
			t.Fatalf("action = %s (%s), want store-b placed", action.Type, action.Why)
		}
		if len(action.Events) != 0 {
			t.Errorf("events = %v, want none: batch 1 started with store-a", eventKeys(action.Events))
		}
	})

	t.Run("the next batch waits while a cluster of this one progresses", func(t *testing.T) {
		f := batched(prod).on("store-a", minutesAgo(2), "1").on("store-b", minutesAgo(2), "0")
		action := planThrough(f.Snapshot, engine)
		got := clusterRecord(t, action)
		want := v1alpha1.StageClusters{Total: 5, Placed: 2, Succeeded: 1, Batch: 1, Batches: 3}
		if got.Total != want.Total || got.Placed != want.Placed || got.Succeeded != want.Succeeded || got.Batch != want.Batch || got.Batches != want.Batches {
			t.Errorf("clusters = %+v, want %+v", got, want)
		}
		if !slices.Equal(got.Clusters, []v1alpha1.ClusterStatus{{Name: "store-b", State: v1alpha1.ClusterProgressing}, {Name: "store-a", State: v1alpha1.ClusterSucceeded}}) {
			t.Errorf("named clusters = %+v", got.Clusters)
		}
		progressing := condition(t, action.Status, v1alpha1.ConditionProgressing)
		if progressing.Reason != v1alpha1.ReasonBatchInProgress || !strings.Contains(progressing.Message, "batch 1 of 3: waiting for store-b") {
			t.Errorf("progressing = %s %q", progressing.Reason, progressing.Message)
		}
		if action.RequeueAfter != 8*time.Minute+time.Second {
			t.Errorf("requeue after %s, want store-b's deadline (8m1s)", action.RequeueAfter)
		}
	})

	t.Run("a done batch starts the next", func(t *testing.T) {
		f := batched(prod).on("store-a", minutesAgo(2), "1").on("store-b", minutesAgo(2), "1")
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.on.store-c" {
			t.Fatalf("action = %s (%s), want store-c placed", action.Type, action.Why)
		}
		if len(action.Events) != 1 || !strings.Contains(action.Events[0].Note, "batch 2 of 3 started with cluster store-c") {
			t.Errorf("events = %+v", action.Events)
		}
	})

	t.Run("a done batch soaks before the next", func(t *testing.T) {
		soaking := fleetStage(func(s *v1alpha1.Stage) { s.SoakDuration = &metav1.Duration{Duration: 5 * time.Minute} })
		f := batched(soaking).on("store-a", minutesAgo(9), "1").on("store-b", minutesAgo(9), "1")
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionUpdateStatus || !timeEqual(action.Status.StageNamed("prod").ConditionMetTime, now) {
			t.Fatalf("action = %s (%s), want the soak's start recorded", action.Type, action.Why)
		}
		f.Policy.Status.StageNamed("prod").ConditionMetTime = ptr.To(minutesAgo(6))
		if action := planThrough(f.Snapshot, engine); action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.on.store-c" {
			t.Fatalf("after the soak: action = %s (%s), want store-c placed", action.Type, action.Why)
		}
	})

	t.Run("a percentage is of the stage's clusters, rounded up", func(t *testing.T) {
		pct := fleetStage(func(s *v1alpha1.Stage) { s.MaxConcurrency = ptr.To(intstr.FromString("50%")) })
		f := batched(pct).on("store-a", minutesAgo(2), "0").on("store-b", minutesAgo(2), "0")
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.on.store-c" {
			t.Fatalf("action = %s (%s), want store-c placed: 50%% of 5 is 3", action.Type, action.Why)
		}
	})

	t.Run("the stage is done once every cluster is", func(t *testing.T) {
		f := batched(prod)
		for _, c := range stores {
			f = f.on(c, minutesAgo(2), "1")
		}
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionUpdateStatus || action.Status.Phase != v1alpha1.RolloutCompleted {
			t.Fatalf("action = %s (%s), want the rollout completed", action.Type, action.Why)
		}
		if got := clusterRecord(t, action); got.Succeeded != 5 || got.Placed != 5 || got.Batch != 3 {
			t.Errorf("clusters = %+v", got)
		}
	})
}

func TestBatchesCountFailuresAgainstTheBudget(t *testing.T) {
	engine := newEngine(t)
	budget1 := fleetStage(func(s *v1alpha1.Stage) { s.MaxFailures = ptr.To(intstr.FromInt32(1)) })

	t.Run("a cluster failing past its deadline is Failed, one with no status TimedOut", func(t *testing.T) {
		f := batched(fleetStage(func(s *v1alpha1.Stage) { s.MaxFailures = ptr.To(intstr.FromInt32(2)) })).
			on("store-a", minutesAgo(30), "0").on("store-b", minutesAgo(30), "").
			on("store-c", minutesAgo(1), "0").on("store-d", minutesAgo(1), "0")
		action := planThrough(f.Snapshot, engine)
		got := clusterRecord(t, action)
		if got.Failed != 1 || got.TimedOut != 1 || got.Placed != 4 || got.Batch != 2 {
			t.Errorf("clusters = %+v", got)
		}
		if !slices.Equal(got.Clusters[:2], []v1alpha1.ClusterStatus{{Name: "store-a", State: v1alpha1.ClusterFailed}, {Name: "store-b", State: v1alpha1.ClusterTimedOut}}) {
			t.Errorf("named clusters = %+v, want the failures first", got.Clusters)
		}
		if keys := eventKeys(action.Events); !slices.Equal(keys, []string{"Warning/ClusterFailed", "Warning/ClusterFailed"}) {
			t.Errorf("events = %v", keys)
		}
		if action.Status.Phase != v1alpha1.RolloutProgressing {
			t.Errorf("phase = %s, want Progressing within the budget", action.Status.Phase)
		}
		// Announced once: a status that says so already emits no Event.
		f.Policy.Status = *action.Status
		if again := planThrough(f.Snapshot, engine); len(again.Events) != 0 {
			t.Errorf("events again = %v", eventKeys(again.Events))
		}
	})

	t.Run("within the budget the next batch goes on without the failed cluster", func(t *testing.T) {
		f := batched(budget1).on("store-a", minutesAgo(30), "1").on("store-b", minutesAgo(30), "0")
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.on.store-c" {
			t.Fatalf("action = %s (%s), want store-c placed", action.Type, action.Why)
		}
	})

	t.Run("over the budget the rollout stalls, naming the failed clusters, and places no more", func(t *testing.T) {
		f := batched(budget1).on("store-a", minutesAgo(30), "0").on("store-b", minutesAgo(30), "1").
			on("store-c", minutesAgo(15), "0").on("store-d", minutesAgo(15), "1")
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionUpdateStatus || action.Status.Phase != v1alpha1.RolloutStalled {
			t.Fatalf("action = %s (%s), want the rollout Stalled", action.Type, action.Why)
		}
		progressing := condition(t, action.Status, v1alpha1.ConditionProgressing)
		if progressing.Reason != v1alpha1.ReasonFailureBudgetExceeded ||
			!strings.Contains(progressing.Message, "2 cluster(s) failed, more than maxFailures allows (1): store-a (Failed), store-c (Failed)") {
			t.Errorf("progressing = %s %q", progressing.Reason, progressing.Message)
		}
		if !slices.Contains(eventKeys(action.Events), corev1.EventTypeWarning+"/"+v1alpha1.ReasonFailureBudgetExceeded) {
			t.Errorf("events = %v", eventKeys(action.Events))
		}
		f.Policy.Status = *action.Status
		if again := planThrough(f.Snapshot, engine); again.Type != ActionNone {
			t.Errorf("then: action = %s (%s), want none", again.Type, again.Why)
		}
	})

	t.Run("a failed cluster that recovers lets the rollout go on", func(t *testing.T) {
		f := batched(budget1).on("store-a", minutesAgo(30), "1").on("store-b", minutesAgo(30), "1").
			on("store-c", minutesAgo(15), "0").on("store-d", minutesAgo(15), "1")
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.on.store-e" {
			t.Fatalf("action = %s (%s), want store-e placed", action.Type, action.Why)
		}
	})

	t.Run("a stage with failures within the budget is done", func(t *testing.T) {
		f := batched(budget1)
		for _, c := range stores {
			f = f.on(c, minutesAgo(30), map[bool]string{true: "0", false: "1"}[c == "store-d"])
		}
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionUpdateStatus || action.Status.Phase != v1alpha1.RolloutCompleted {
			t.Fatalf("action = %s (%s), want the rollout completed", action.Type, action.Why)
		}
		if msg := action.Status.StageNamed("prod").Message; !strings.Contains(msg, "store-d (Failed) failed, within maxFailures (1)") {
			t.Errorf("message = %q", msg)
		}
	})

	t.Run("a stage where no cluster succeeded is not done", func(t *testing.T) {
		all := fleetStage(func(s *v1alpha1.Stage) { s.MaxFailures = ptr.To(intstr.FromString("100%")) })
		f := batched(all, "store-a").on("store-a", minutesAgo(30), "0")
		action := planThrough(f.Snapshot, engine)
		if action.Status == nil || action.Status.Phase == v1alpha1.RolloutCompleted {
			t.Fatalf("action = %s (%s), want the stage not done", action.Type, action.Why)
		}
	})

	t.Run("a failure in the canary batch stalls whatever the budget", func(t *testing.T) {
		canary := fleetStage(func(s *v1alpha1.Stage) { s.Canary = ptr.To[int32](1); s.MaxFailures = ptr.To(intstr.FromInt32(3)) })
		f := batched(canary).on("store-a", minutesAgo(30), "0")
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionUpdateStatus || action.Status.Phase != v1alpha1.RolloutStalled ||
			!strings.Contains(condition(t, action.Status, v1alpha1.ConditionProgressing).Message, "canary cluster(s) store-a failed") {
			t.Fatalf("action = %s (%s), want the rollout stalled by its canary", action.Type, action.Why)
		}
	})

	t.Run("the canary batch is done before the next is placed", func(t *testing.T) {
		canary := fleetStage(func(s *v1alpha1.Stage) { s.Canary = ptr.To[int32](1) })
		f := batched(canary).on("store-a", minutesAgo(1), "0")
		if action := planThrough(f.Snapshot, engine); action.Type == ActionCreateBindingPolicy {
			t.Fatalf("placed %s while the canary progresses", action.BindingPolicy.Name)
		}
		f = batched(canary).on("store-a", minutesAgo(1), "1")
		if action := planThrough(f.Snapshot, engine); action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.on.store-b" {
			t.Fatalf("action = %s (%s), want store-b placed", action.Type, action.Why)
		}
	})

	t.Run("a cluster whose BindingPolicy selects nothing says which label is missing", func(t *testing.T) {
		f := batched(budget1).on("store-a", minutesAgo(1), "").on("store-b", minutesAgo(1), "")
		f.Bindings[0].Spec.Destinations = nil
		action := planThrough(f.Snapshot, engine)
		if msg := condition(t, action.Status, v1alpha1.ConditionProgressing).Message; !strings.Contains(msg, "does cluster store-a carry the label name=store-a?") {
			t.Errorf("message = %q", msg)
		}
	})

	t.Run("an evaluation error on one cluster blocks the rollout", func(t *testing.T) {
		erring := fleetStage(func(s *v1alpha1.Stage) { s.Condition = `obj.results[5].name == 'x'` })
		f := batched(erring).on("store-a", minutesAgo(1), "1")
		action := planThrough(f.Snapshot, engine)
		if action.Status == nil || action.Status.Phase != v1alpha1.RolloutBlocked ||
			!strings.Contains(condition(t, action.Status, v1alpha1.ConditionProgressing).Message, "cluster store-a:") {
			t.Fatalf("action = %s (%s), want the rollout blocked naming store-a", action.Type, action.Why)
		}
	})
}

func TestBatchesFollowTheCensus(t *testing.T) {
	engine := newEngine(t)
	prod := fleetStage(nil)

	t.Run("a cluster that left the stage keeps its BindingPolicy, out of the count", func(t *testing.T) {
		// KubeStellar takes the workload away: the BindingPolicy selects
		// it no more. Deleting the BindingPolicy as well races
		// KubeStellar v0.30.0's transport, which then leaves the
		// cluster's ManifestWork behind (docs/proposals/batches.md).
		f := batched(prod, "store-b", "store-c").on("store-a", minutesAgo(2), "1").on("store-b", minutesAgo(2), "1")
		action := planThrough(f.Snapshot, engine)
		if action.Type == ActionDeleteBindingPolicy {
			t.Fatalf("deleted %s", action.BindingPolicy.Name)
		}
		if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.on.store-c" {
			t.Fatalf("action = %s (%s), want store-c placed", action.Type, action.Why)
		}
		f = f.on("store-c", minutesAgo(1), "0")
		if got := clusterRecord(t, Plan(f.Snapshot, engine)); got.Total != 2 || got.Placed != 2 {
			t.Errorf("clusters = %+v, want store-a out of the count", got)
		}
	})

	t.Run("a cluster that joined is placed in name order among the unplaced", func(t *testing.T) {
		f := batched(prod, "store-0", "store-a", "store-b", "store-c").on("store-a", minutesAgo(2), "1").on("store-b", minutesAgo(2), "1")
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionCreateBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.on.store-0" {
			t.Fatalf("action = %s (%s), want store-0 placed", action.Type, action.Why)
		}
	})
}

func TestBatchesKeepMakeBeforeBreak(t *testing.T) {
	engine := newEngine(t)
	prod := fleetStage(nil)

	t.Run("the stage before goes once a cluster is placed, the clusters' BindingPolicies stay", func(t *testing.T) {
		f := batched(prod).on("store-a", minutesAgo(1), "0").on("store-b", minutesAgo(1), "0")
		f = f.alsoBP(ownedBP(f.Policy, "test", "bp-test"))
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionDeleteBindingPolicy || action.BindingPolicy.Name != "web.stage.test" {
			t.Fatalf("action = %s (%s), want stage test's BindingPolicy deleted", action.Type, action.Why)
		}
	})

	t.Run("nothing of the stage goes before a cluster is placed", func(t *testing.T) {
		f := batched(prod).on("store-a", now, "").on("store-b", now, "")
		f.Bindings = nil
		f = f.alsoBP(ownedBP(f.Policy, "test", "bp-test"))
		if action := planThrough(f.Snapshot, engine); action.Type == ActionDeleteBindingPolicy {
			t.Fatalf("deleted %s before the stage placed a cluster", action.BindingPolicy.Name)
		}
	})

	t.Run("the stage's own BindingPolicy from before it had batches stays until every cluster has its own", func(t *testing.T) {
		f := batched(prod).on("store-a", minutesAgo(1), "1").on("store-b", minutesAgo(1), "0")
		f = f.alsoBP(ownedBP(f.Policy, "prod", "bp-prod"))
		if action := planThrough(f.Snapshot, engine); action.Type == ActionDeleteBindingPolicy {
			t.Fatalf("deleted %s with clusters unplaced", action.BindingPolicy.Name)
		}
		f = batched(prod)
		for _, c := range stores {
			f = f.on(c, minutesAgo(1), "0")
		}
		f = f.alsoBP(ownedBP(f.Policy, "prod", "bp-prod"))
		if action := planThrough(f.Snapshot, engine); action.Type != ActionDeleteBindingPolicy || action.BindingPolicy.Name != "web.stage.prod" {
			t.Fatalf("action = %s (%s), want web.stage.prod deleted", action.Type, action.Why)
		}
	})

	t.Run("a done stage does not hand over to a stage placed in batches", func(t *testing.T) {
		p := atStage(newPolicy(stage("dev"), stage("test"), prod), "test")
		f := at("test", p.Spec.Stages...).bound().reporting(deployment, "1")
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionUpdateStatus || action.Status.ActiveStage != "prod" {
			t.Fatalf("action = %s (%s), want the advance recorded first", action.Type, action.Why)
		}
	})
}

func TestBatchSizes(t *testing.T) {
	for _, tt := range []struct {
		name                  string
		concurrency, failures *intstr.IntOrString
		canary                *int32
		total                 int
		first, size, allowed  int
	}{
		{name: "numbers", concurrency: ptr.To(intstr.FromInt32(2)), failures: ptr.To(intstr.FromInt32(1)), total: 5, first: 2, size: 2, allowed: 1},
		{name: "percentages", concurrency: ptr.To(intstr.FromString("25%")), failures: ptr.To(intstr.FromString("25%")), total: 10, first: 3, size: 3, allowed: 2},
		{name: "a small percentage is one cluster", concurrency: ptr.To(intstr.FromString("1%")), total: 5, first: 1, size: 1},
		{name: "a canary", concurrency: ptr.To(intstr.FromInt32(4)), canary: ptr.To[int32](1), total: 9, first: 1, size: 4},
		{name: "a canary larger than the stage", concurrency: ptr.To(intstr.FromInt32(4)), canary: ptr.To[int32](7), total: 3, first: 3, size: 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := v1alpha1.Stage{MaxConcurrency: tt.concurrency, MaxFailures: tt.failures, Canary: tt.canary}
			first, size, allowed := batchSizes(s, tt.total)
			if first != tt.first || size != tt.size || allowed != tt.allowed {
				t.Errorf("batchSizes = %d, %d, %d; want %d, %d, %d", first, size, allowed, tt.first, tt.size, tt.allowed)
			}
		})
	}
}

func TestAccumulatedBatchesGoOnceTheStageWidePlacementIsResolved(t *testing.T) {
	engine := newEngine(t)
	dev := fleetStage(func(s *v1alpha1.Stage) { s.Name = "dev"; s.ClusterSelectors[0].MatchLabels["stage"] = "dev" })
	f := at("test", dev, stage("test")).bound().reporting(deployment, "0").
		with(func(s *Snapshot) { s.Policy.Spec.Placement = v1alpha1.PlacementAccumulate })
	perCluster := resolvedAs(ClusterBindingPolicy(f.Policy, dev, "store-a"), "bp-store-a", muchEarlier)
	stageWide := ownedBP(f.Policy, "dev", "bp-dev")
	stageWide.Status.ObservedGeneration = 0
	f = f.alsoBP(perCluster).alsoBP(stageWide)
	if action := planThrough(f.Snapshot, engine); action.Type == ActionDeleteBindingPolicy {
		t.Fatalf("deleted %s before stage dev's own BindingPolicy was resolved", action.BindingPolicy.Name)
	}
	f.BindingPolicies[len(f.BindingPolicies)-1].Status.ObservedGeneration = 1
	f.Bindings = append(f.Bindings, *bindingFor(stageWide))
	if action := planThrough(f.Snapshot, engine); action.Type != ActionDeleteBindingPolicy || action.BindingPolicy.Name != perCluster.Name {
		t.Fatalf("action = %s (%s), want %s deleted", action.Type, action.Why, perCluster.Name)
	}
}

func TestBatchesRefuseClustersTheyCannotPlace(t *testing.T) {
	engine := newEngine(t)
	prod := fleetStage(nil)
	for _, tt := range []struct {
		name, cluster, want string
	}{
		{name: "a name that is no DNS label", cluster: "Store_A", want: `cluster "Store_A" of stage "prod" cannot be placed by itself: its name is not a DNS label`},
		{name: "a BindingPolicy name too long for KubeStellar's label", cluster: strings.Repeat("s", 50),
			want: "is longer than the 63 characters of KubeStellar's status.kubestellar.io/binding-policy label"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := batched(prod, tt.cluster, "store-b")
			action := planThrough(f.Snapshot, engine)
			if action.Type == ActionCreateBindingPolicy {
				t.Fatalf("created %s", action.BindingPolicy.Name)
			}
			if action.Status == nil || action.Status.Phase != v1alpha1.RolloutBlocked {
				t.Fatalf("action = %s (%s), want the rollout blocked", action.Type, action.Why)
			}
			progressing := condition(t, action.Status, v1alpha1.ConditionProgressing)
			if progressing.Reason != v1alpha1.ReasonClusterNotPlaceable || !strings.Contains(progressing.Message, tt.want) {
				t.Errorf("progressing = %s %q, want %q", progressing.Reason, progressing.Message, tt.want)
			}
			if !slices.Contains(eventKeys(action.Events), "Warning/"+v1alpha1.ReasonClusterNotPlaceable) {
				t.Errorf("events = %v", eventKeys(action.Events))
			}
		})
	}
}

func TestClusterStatesAreBoundedFailuresFirst(t *testing.T) {
	var placed []placedCluster
	for i := range 150 {
		state := v1alpha1.ClusterSucceeded
		if i == 149 {
			state = v1alpha1.ClusterTimedOut
		}
		placed = append(placed, placedCluster{name: fmt.Sprintf("c%03d", i), state: state})
	}
	got := clusterStates(placed)
	if len(got) != v1alpha1.MaxClusterStates {
		t.Fatalf("%d clusters named, want %d", len(got), v1alpha1.MaxClusterStates)
	}
	if got[0] != (v1alpha1.ClusterStatus{Name: "c149", State: v1alpha1.ClusterTimedOut}) || got[1].Name != "c000" {
		t.Errorf("named %v, %v first; want the timed-out c149, then c000", got[0], got[1])
	}
}

// TestBatchedClusterBindingPolicyFollowsTheDownsync checks that a placed cluster's
// BindingPolicy follows a change of the policy's downsync.
func TestBatchedClusterBindingPolicyFollowsTheDownsync(t *testing.T) {
	engine := newEngine(t)
	prod := fleetStage(nil)

	t.Run("a placed cluster's BindingPolicy follows a change of the downsync", func(t *testing.T) {
		f := batched(prod).on("store-a", minutesAgo(2), "1").on("store-b", minutesAgo(2), "0")
		downsync := *f.Policy.Spec.DeepCopy()
		downsync.Downsync[0].Namespaces = []string{"web", "shop"}
		f.Policy.Spec.Downsync = downsync.Downsync
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionUpdateBindingPolicy || action.BindingPolicy.Labels[v1alpha1.ClusterLabel] == "" {
			t.Fatalf("action = %s (%s), want a cluster's BindingPolicy updated", action.Type, action.Why)
		}
		if got := action.BindingPolicy.Spec.Downsync[0].Namespaces; !slices.Equal(got, []string{"web", "shop"}) {
			t.Errorf("namespaces = %v", got)
		}
	})
}

// TestCompletedBatchedStageReleasesAndRecords checks that a batched stage that is
// done lets the previous revision go and records its last count of clusters.
func TestCompletedBatchedStageReleasesAndRecords(t *testing.T) {
	engine := newEngine(t)
	prod := fleetStage(nil)

	t.Run("the previous revision leaves a completed batched stage", func(t *testing.T) {
		f := batched(prod, "store-a")
		f.Policy.Spec.Revision = &v1alpha1.Revision{Name: "r2"}
		f.Policy.Status.UpdateRevision, f.Policy.Status.CurrentRevision = "r2", "r2"
		f.Policy.Status.Phase = v1alpha1.RolloutCompleted
		record := f.Policy.Status.StageNamed("prod")
		record.Phase, record.Revision, record.CompletionTime = v1alpha1.StageSucceeded, "r2", ptr.To(minutesAgo(1))
		f = f.on("store-a", minutesAgo(5), "1")
		old := RevisionBindingPolicy(f.Policy, prod, "r1")
		f = f.alsoBP(resolvedAs(old, "bp-r1", muchEarlier))
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionDeleteBindingPolicy || action.BindingPolicy.Name != "web.stage.prod.r1" {
			t.Fatalf("action = %s (%s), want web.stage.prod.r1 deleted", action.Type, action.Why)
		}
	})

	t.Run("the advance records the stage's last count of its clusters", func(t *testing.T) {
		fleet := fleetStage(func(s *v1alpha1.Stage) {
			s.Name, s.ClusterSelectors[0].MatchLabels["stage"] = "test", "test"
			s.MaxFailures = ptr.To(intstr.FromInt32(1))
		})
		p := atStage(newPolicy(stage("dev"), fleet, stage("prod")), "test")
		census := resolvedAs(CensusBindingPolicy(p, fleet), "bp-census", muchEarlier)
		f := fixture{newSnapshot(p, census)}
		f.ActiveBindingPolicy = census.DeepCopy()
		f.Binding = bindingFor(census)
		f.Binding.Spec.Workload = ksv1alpha1.DownsyncObjectClauses{}
		f.Binding.Spec.Destinations = []ksv1alpha1.Destination{{ClusterId: "store-a"}, {ClusterId: "store-b"}}
		for _, c := range []struct{ name, count string }{{"store-a", "1"}, {"store-b", "0"}} {
			bp := resolvedAs(ClusterBindingPolicy(p, fleet, c.name), types.UID("bp-"+c.name), minutesAgo(30))
			bp.Annotations = map[string]string{v1alpha1.PlacedAnnotation: SealedPlacement(p.UID, fleet.Name, "", c.name, minutesAgo(30).Time)}
			f.BindingPolicies = append(f.BindingPolicies, *bp)
			b := bindingFor(bp)
			b.Spec.Destinations = []ksv1alpha1.Destination{{ClusterId: c.name}}
			f.Bindings = append(f.Bindings, *b)
			f.ClusterStatuses = append(f.ClusterStatuses, combinedStatus(bp, deployment, c.count))
		}
		f.Policy.Status.StageNamed("test").StartTime = nil // no handover: the status records the advance
		action := planThrough(f.Snapshot, engine)
		if action.Type != ActionUpdateStatus || action.Status.ActiveStage != "prod" {
			t.Fatalf("action = %s (%s), want the advance to prod", action.Type, action.Why)
		}
		if got := action.Status.StageNamed("test").Clusters; got == nil || got.Failed != 1 || got.Succeeded != 1 {
			t.Errorf("test's clusters = %+v, want 1 succeeded and 1 failed", got)
		}
		if !slices.Contains(eventKeys(action.Events), "Warning/"+v1alpha1.EventReasonClusterFailed) {
			t.Errorf("events = %v, want ClusterFailed", eventKeys(action.Events))
		}
	})
}

// TestStageWideBindingPolicyStaysUntilClustersAreResolved checks that a batched stage's
// stage-wide BindingPolicy goes only once every cluster's own is resolved.
func TestStageWideBindingPolicyStaysUntilClustersAreResolved(t *testing.T) {
	engine := newEngine(t)
	prod := fleetStage(nil)

	t.Run("the stage-wide BindingPolicy stays until every cluster's own is resolved", func(t *testing.T) {
		f := batched(prod)
		for _, c := range stores {
			f = f.on(c, minutesAgo(1), "0")
		}
		f.BindingPolicies[len(f.BindingPolicies)-1].Status.ObservedGeneration = 0
		f = f.alsoBP(ownedBP(f.Policy, "prod", "bp-prod"))
		if action := planThrough(f.Snapshot, engine); action.Type == ActionDeleteBindingPolicy && action.BindingPolicy.Name == "web.stage.prod" {
			t.Fatalf("deleted web.stage.prod before every cluster's BindingPolicy was resolved")
		}
	})
}

// TestBatchSoakStartsAtItsLastPlacement checks that a soak timed for an earlier
// batch does not count for the next.
func TestBatchSoakStartsAtItsLastPlacement(t *testing.T) {
	engine := newEngine(t)

	t.Run("a batch's soak starts no earlier than its last cluster's placement", func(t *testing.T) {
		soaking := fleetStage(func(s *v1alpha1.Stage) { s.SoakDuration = &metav1.Duration{Duration: 5 * time.Minute} })
		f := batched(soaking).on("store-a", minutesAgo(30), "1").on("store-b", minutesAgo(30), "1").
			on("store-c", minutesAgo(2), "1").on("store-d", minutesAgo(2), "1")
		f.Policy.Status.StageNamed("prod").ConditionMetTime = ptr.To(minutesAgo(20)) // batch 1's
		action := planThrough(f.Snapshot, engine)
		if action.Type == ActionCreateBindingPolicy {
			t.Fatalf("placed %s without batch 2 soaking", action.BindingPolicy.Name)
		}
	})
}

// TestBatchedStageCountsOnlyLivePlacements checks that a cluster's BindingPolicy being
// deleted is not placed, and that an empty census withdraws nothing.
func TestBatchedStageCountsOnlyLivePlacements(t *testing.T) {
	engine := newEngine(t)
	prod := fleetStage(nil)

	t.Run("a cluster's BindingPolicy being deleted does not count as placed", func(t *testing.T) {
		f := batched(prod).on("store-a", minutesAgo(2), "1").on("store-b", minutesAgo(2), "1")
		beingDeleted(&f.BindingPolicies[len(f.BindingPolicies)-1])
		action := planThrough(f.Snapshot, engine)
		if action.Type == ActionCreateBindingPolicy {
			t.Fatalf("placed %s while store-b's BindingPolicy is being deleted", action.BindingPolicy.Name)
		}
	})

	t.Run("an empty census withdraws nothing", func(t *testing.T) {
		f := batched(prod, []string{}...).on("store-a", minutesAgo(2), "1")
		f.Binding.Spec.Destinations = nil
		if action := planThrough(f.Snapshot, engine); action.Type == ActionDeleteBindingPolicy {
			t.Fatalf("deleted %s on an empty census", action.BindingPolicy.Name)
		}
	})
}

func TestReadsBindingsWhileAClusterBindingPolicyIsLeft(t *testing.T) {
	p := atStage(newPolicy(), "test")
	perCluster := ClusterBindingPolicy(p, stage("dev"), "store-a")
	if !ReadsBindings(p, []ksv1alpha1.BindingPolicy{*perCluster}) {
		t.Error("a policy with a cluster's BindingPolicy left reads no Bindings: it could never let it go")
	}
	if ReadsBindings(p, nil) {
		t.Error("a policy without revisions or batches reads Bindings")
	}
}

func TestBatchesRefuseNumbersTheCRDAdmits(t *testing.T) {
	engine := newEngine(t)
	for _, tt := range []struct {
		name   string
		change func(*v1alpha1.Stage)
		want   string
	}{
		{"maxConcurrency of zero", func(s *v1alpha1.Stage) { s.MaxConcurrency = ptr.To(intstr.FromInt32(0)) },
			`stage "prod": maxConcurrency must be a number of at least 1 or a percentage from 1% to 100%, not 0`},
		{"maxFailures below zero", func(s *v1alpha1.Stage) { s.MaxFailures = ptr.To(intstr.FromInt32(-1)) },
			`stage "prod": maxFailures must be a number of at least 0 or a percentage from 0% to 100%, not -1`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			action := planThrough(batched(fleetStage(tt.change)).Snapshot, engine)
			if action.Type != ActionUpdateStatus || action.Status.Phase != v1alpha1.RolloutBlocked {
				t.Fatalf("action = %s (%s), want the rollout blocked", action.Type, action.Why)
			}
			if c := condition(t, action.Status, v1alpha1.ConditionProgressing); c.Reason != v1alpha1.ReasonInvalidBatches || c.Message != tt.want {
				t.Errorf("progressing = %s %q, want %q", c.Reason, c.Message, tt.want)
			}
			if !slices.Contains(eventKeys(action.Events), "Warning/"+v1alpha1.ReasonInvalidBatches) {
				t.Errorf("events = %v", eventKeys(action.Events))
			}
		})
	}
}
