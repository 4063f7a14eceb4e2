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

package stagedbindingpolicy

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout"
	"github.com/kubestellar/workload-stager/internal/rollout/rollouttest"
)

// TestOwnStatusWritesAreNotQueued: an update of a policy that changes only
// its status (the stager's own writes) does not queue the policy, since the
// run that wrote it goes on by itself; an update of anything else Plan
// reads does.
func TestOwnStatusWritesAreNotQueued(t *testing.T) {
	base := func() *v1alpha1.StagedBindingPolicy {
		return &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: "1", Generation: 1,
			Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "x"},
			Finalizers: []string{v1alpha1.CleanupFinalizer}},
			Status: v1alpha1.StagedBindingPolicyStatus{ActiveStage: "dev"}}
	}
	for name, tc := range map[string]struct {
		change func(*v1alpha1.StagedBindingPolicy)
		queued bool
	}{
		"status":      {func(p *v1alpha1.StagedBindingPolicy) { p.Status.ActiveStage = "test" }, false},
		"spec":        {func(p *v1alpha1.StagedBindingPolicy) { p.Generation++ }, true},
		"restartedAt": {func(p *v1alpha1.StagedBindingPolicy) { p.Annotations[v1alpha1.RestartedAtAnnotation] = "now" }, true},
		"label":       {func(p *v1alpha1.StagedBindingPolicy) { p.Labels["team"] = "b" }, true},
		"finalizer":   {func(p *v1alpha1.StagedBindingPolicy) { p.Finalizers = nil }, true},
		"deletion":    {func(p *v1alpha1.StagedBindingPolicy) { p.DeletionTimestamp = ptr.To(metav1.Now()) }, true},
		"status and deletion": {func(p *v1alpha1.StagedBindingPolicy) {
			p.Status.ActiveStage = ""
			p.DeletionTimestamp = ptr.To(metav1.Now())
		}, true},
	} {
		t.Run(name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			old, updated := base(), base()
			updated.ResourceVersion = "2"
			tc.change(updated)
			policyEvents().Update(context.Background(), event.TypedUpdateEvent[*v1alpha1.StagedBindingPolicy]{ObjectOld: old, ObjectNew: updated}, q)
			if queued := q.Len() == 1; queued != tc.queued {
				t.Errorf("queued = %v, want %v", queued, tc.queued)
			}
		})
	}
}

// TestBindingPolicyEventsQueueAtLowPriority: in controller-runtime's priority
// queue, a policy queued by a BindingPolicy's creation or deletion comes
// after one queued by another object's (the handover of a done stage goes
// before the record of an earlier one), a policy queued already keeps its
// priority, and an update (KubeStellar's resolution, which an assessment
// may wait for last) queues at the default priority.
func TestBindingPolicyEventsQueueAtLowPriority(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	bp := func(policy string) *ksv1alpha1.BindingPolicy {
		return &ksv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: policy + ".stage.test", ResourceVersion: "1",
			Labels: map[string]string{v1alpha1.PolicyLabel: policy}}}
	}
	request := func(policy string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Name: policy}}
	}
	events := bindingPolicyEvents()
	events.Create(context.Background(), event.TypedCreateEvent[*ksv1alpha1.BindingPolicy]{Object: bp("recorded")}, q)
	q.Add(request("handed-over"))
	q.Add(request("both"))
	events.Create(context.Background(), event.TypedCreateEvent[*ksv1alpha1.BindingPolicy]{Object: bp("both")}, q)
	events.Delete(context.Background(), event.TypedDeleteEvent[*ksv1alpha1.BindingPolicy]{Object: bp("deleted")}, q)
	resolved := bp("resolved")
	resolved.ResourceVersion, resolved.Status.ObservedGeneration = "2", 1
	events.Update(context.Background(), event.TypedUpdateEvent[*ksv1alpha1.BindingPolicy]{ObjectOld: bp("resolved"), ObjectNew: resolved}, q)

	var order []string
	priorities := map[string]int{}
	for range 5 {
		item, priority, _ := q.GetWithPriority()
		order = append(order, item.Name)
		priorities[item.Name] = priority
		q.Done(item)
	}
	if priorities["recorded"] != handler.LowPriority || priorities["deleted"] != handler.LowPriority ||
		!slices.Contains(order[3:], "recorded") || !slices.Contains(order[3:], "deleted") {
		t.Errorf("queue order %v with priorities %v, want recorded and deleted last, at %d", order, priorities, handler.LowPriority)
	}
	if priorities["both"] != 0 || priorities["handed-over"] != 0 || priorities["resolved"] != 0 {
		t.Errorf("priorities %v, want 0 for the policies queued by other events and by an update", priorities)
	}
}

// TestCombinedStatusEventsQueueAssessmentsFirst: a CombinedStatus created or
// updated for the active stage of a rollout in progress queues its policy at
// AssessmentPriority, ahead of everything else, and so does one of the stage
// the active stage has handed over to, before the status records the
// advance, and one of a cluster of an active stage placed in batches; one
// of another stage (the next one's left from an earlier start
// of the active stage among them), of a completed rollout, or deleted, at
// the default priority; the cache's initial list and resyncs at
// handler.LowPriority.
func TestCombinedStatusEventsQueueAssessmentsFirst(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	events := combinedStatusEvents(testSpace.Client, rollout.HandoverKey{})

	// inRollout creates a policy in the given phase and stage, and the
	// BindingPolicy of stage reported on; it returns that BindingPolicy's
	// CombinedStatus, at resourceVersion "1".
	inRollout := func(base string, phase v1alpha1.RolloutPhase, active, reportedOn string) *ksv1alpha1.CombinedStatus {
		p := createPolicy(t, base)
		startPolicy(t, p, active)
		if phase != v1alpha1.RolloutProgressing {
			p.Status.Phase = phase
			if err := testSpace.Client.Status().Update(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		cs := rollouttest.CombinedStatus(createBP(t, p, reportedOn), rollouttest.Deployment, "1")
		cs.ResourceVersion = "1"
		return &cs
	}
	// handedOver creates a policy whose stage dev, started at earlier, has
	// handed over to stage test, with the mark of the start given, and
	// returns the CombinedStatus of test's BindingPolicy.
	handedOver := func(base string, start time.Time) *ksv1alpha1.CombinedStatus {
		p := createPolicy(t, base)
		rollouttest.AtStage(p, "dev")
		if err := testSpace.Client.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
		bp := rollouttest.OwnedBP(p, "test", "")
		bp.ResourceVersion, bp.Generation, bp.Status = "", 0, ksv1alpha1.BindingPolicyStatus{}
		bp.Annotations = map[string]string{v1alpha1.HandedOverFromAnnotation: rollout.HandoverKey{}.Mark(p.UID, "dev", start)}
		if err := testSpace.Client.Create(ctx, bp); err != nil {
			t.Fatal(err)
		}
		cs := rollouttest.CombinedStatus(bp, rollouttest.Deployment, "1")
		cs.ResourceVersion = "1"
		return &cs
	}
	// onCluster creates a policy whose stage dev is placed in batches and
	// active, and the BindingPolicy that places cluster dev1; it returns
	// that BindingPolicy's CombinedStatus.
	onCluster := func(base string) *ksv1alpha1.CombinedStatus {
		p := createPolicy(t, base)
		p.Spec.Stages[0].MaxConcurrency = ptr.To(intstr.FromInt32(1))
		if err := testSpace.Client.Update(ctx, p); err != nil {
			t.Fatal(err)
		}
		startPolicy(t, p, "dev")
		bp := rollout.ClusterBindingPolicy(p, p.Spec.Stages[0], "dev1")
		if err := testSpace.Client.Create(ctx, bp); err != nil {
			t.Fatal(err)
		}
		cs := rollouttest.CombinedStatus(bp, rollouttest.Deployment, "1")
		cs.ResourceVersion = "1"
		return &cs
	}
	updated := func(cs *ksv1alpha1.CombinedStatus, resourceVersion string) event.TypedUpdateEvent[*ksv1alpha1.CombinedStatus] {
		changed := cs.DeepCopy()
		changed.ResourceVersion = resourceVersion
		return event.TypedUpdateEvent[*ksv1alpha1.CombinedStatus]{ObjectOld: cs, ObjectNew: changed}
	}

	events.Create(ctx, event.TypedCreateEvent[*ksv1alpha1.CombinedStatus]{
		Object: inRollout("cs-listed", v1alpha1.RolloutProgressing, "dev", "dev"), IsInInitialList: true}, q)
	events.Update(ctx, updated(inRollout("cs-resynced", v1alpha1.RolloutProgressing, "dev", "dev"), "1"), q)
	events.Update(ctx, updated(inRollout("cs-next-stage", v1alpha1.RolloutProgressing, "dev", "test"), "2"), q)
	events.Update(ctx, updated(inRollout("cs-completed", v1alpha1.RolloutCompleted, "prod", "prod"), "2"), q)
	events.Delete(ctx, event.TypedDeleteEvent[*ksv1alpha1.CombinedStatus]{Object: inRollout("cs-deleted", v1alpha1.RolloutProgressing, "dev", "dev")}, q)
	events.Create(ctx, event.TypedCreateEvent[*ksv1alpha1.CombinedStatus]{Object: inRollout("cs-created", v1alpha1.RolloutProgressing, "dev", "dev")}, q)
	events.Update(ctx, updated(inRollout("cs-updated", v1alpha1.RolloutProgressing, "test", "test"), "2"), q)
	events.Create(ctx, event.TypedCreateEvent[*ksv1alpha1.CombinedStatus]{Object: handedOver("cs-handed-over", rollouttest.Earlier.Time)}, q)
	events.Create(ctx, event.TypedCreateEvent[*ksv1alpha1.CombinedStatus]{Object: handedOver("cs-earlier-start", rollouttest.MuchEarlier.Time)}, q)
	events.Update(ctx, updated(onCluster("cs-on-cluster"), "2"), q)

	got := map[string]int{}
	var order []string
	for range 10 {
		item, priority, _ := q.GetWithPriority()
		got[item.Name], order = priority, append(order, item.Name)
		q.Done(item)
	}
	want := map[string]int{
		"cs-created": AssessmentPriority, "cs-updated": AssessmentPriority, "cs-handed-over": AssessmentPriority,
		"cs-on-cluster": AssessmentPriority, "cs-next-stage": 0, "cs-earlier-start": 0, "cs-completed": 0, "cs-deleted": 0,
		"cs-listed": handler.LowPriority, "cs-resynced": handler.LowPriority,
	}
	if !maps.Equal(got, want) {
		t.Errorf("priorities %v, want %v", got, want)
	}
	if first := order[:4]; !slices.Contains(first, "cs-created") || !slices.Contains(first, "cs-updated") || !slices.Contains(first, "cs-handed-over") ||
		!slices.Contains(first, "cs-on-cluster") {
		t.Errorf("queue order %v, want cs-created, cs-updated, cs-handed-over and cs-on-cluster first", order)
	}
}

// TestUpdatesPlanDoesNotReadQueueNothing: an update of a BindingPolicy or a
// Binding that changes nothing Plan reads (KubeStellar's finalizer, a
// Binding's status, a resync) does not queue the policy.
func TestUpdatesPlanDoesNotReadQueueNothing(t *testing.T) {
	bp := func() *ksv1alpha1.BindingPolicy {
		return &ksv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p.stage.dev", ResourceVersion: "1", Generation: 1,
			Labels: map[string]string{v1alpha1.PolicyLabel: "p"}, Annotations: map[string]string{"note": "x"}}}
	}
	for name, tc := range map[string]struct {
		change func(*ksv1alpha1.BindingPolicy)
		queued bool
	}{
		"resync":                        {func(*ksv1alpha1.BindingPolicy) {}, false},
		"KubeStellar's finalizer":       {func(b *ksv1alpha1.BindingPolicy) { b.Finalizers = []string{"kubestellar"} }, false},
		"spec":                          {func(b *ksv1alpha1.BindingPolicy) { b.Generation++ }, true},
		"status":                        {func(b *ksv1alpha1.BindingPolicy) { b.Status.ObservedGeneration = 1 }, true},
		"annotation":                    {func(b *ksv1alpha1.BindingPolicy) { b.Annotations["note"] = "y" }, true},
		"label":                         {func(b *ksv1alpha1.BindingPolicy) { b.Labels["team"] = "a" }, true},
		"owner":                         {func(b *ksv1alpha1.BindingPolicy) { b.OwnerReferences = []metav1.OwnerReference{{Name: "p"}} }, true},
		"deletion":                      {func(b *ksv1alpha1.BindingPolicy) { b.DeletionTimestamp = ptr.To(metav1.Now()) }, true},
		"finalizer while being deleted": {func(b *ksv1alpha1.BindingPolicy) { b.Finalizers = []string{"kubestellar"} }, true},
	} {
		t.Run("BindingPolicy "+name, func(t *testing.T) {
			old, updated := bp(), bp()
			if name == "finalizer while being deleted" {
				old.DeletionTimestamp = ptr.To(metav1.Now())
				updated.DeletionTimestamp = old.DeletionTimestamp
			}
			tc.change(updated)
			if got := bindingPolicyUpdates().Update(event.TypedUpdateEvent[*ksv1alpha1.BindingPolicy]{ObjectOld: old, ObjectNew: updated}); got != tc.queued {
				t.Errorf("bindingPolicyChanged = %v, want %v", got, tc.queued)
			}
		})
	}
	binding := func() *ksv1alpha1.Binding {
		return &ksv1alpha1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p.stage.dev", ResourceVersion: "1", Generation: 1}}
	}
	for name, tc := range map[string]struct {
		change func(*ksv1alpha1.Binding)
		queued bool
	}{
		"status":    {func(b *ksv1alpha1.Binding) { b.Status.ObservedGeneration = 1 }, false},
		"finalizer": {func(b *ksv1alpha1.Binding) { b.Finalizers = []string{"transport"} }, false},
		"spec":      {func(b *ksv1alpha1.Binding) { b.Generation++ }, true},
		"owner":     {func(b *ksv1alpha1.Binding) { b.OwnerReferences = []metav1.OwnerReference{{Name: "p.stage.dev"}} }, true},
		"deletion":  {func(b *ksv1alpha1.Binding) { b.DeletionTimestamp = ptr.To(metav1.Now()) }, true},
	} {
		t.Run("Binding "+name, func(t *testing.T) {
			old, updated := binding(), binding()
			tc.change(updated)
			if got := bindingUpdates().Update(event.TypedUpdateEvent[*ksv1alpha1.Binding]{ObjectOld: old, ObjectNew: updated}); got != tc.queued {
				t.Errorf("queued = %v, want %v", got, tc.queued)
			}
		})
	}
}
