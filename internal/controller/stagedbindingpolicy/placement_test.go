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
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout"
	"github.com/kubestellar/workload-stager/internal/rollout/rollouttest"
)

// batchedAtProd creates a policy whose stage prod is placed in batches
// (two clusters at a time) and active, with its census resolved by
// KubeStellar into a Binding that names clusters.
func batchedAtProd(t *testing.T, base string, clusters ...string) *v1alpha1.StagedBindingPolicy {
	t.Helper()
	ctx := t.Context()
	p := createPolicy(t, base, v1alpha1.CleanupFinalizer)
	prod := &p.Spec.Stages[2]
	prod.MaxConcurrency = ptr.To(intstr.FromInt32(2))
	prod.ProgressDeadline = &metav1.Duration{Duration: 10 * time.Minute}
	if err := testSpace.Client.Update(ctx, p); err != nil {
		t.Fatalf("placing stage prod in batches: %v", err)
	}
	rollouttest.AtStage(p, "prod")
	if err := testSpace.Client.Status().Update(ctx, p); err != nil {
		t.Fatalf("recording stage prod active: %v", err)
	}
	census := rollout.CensusBindingPolicy(p, p.Spec.Stages[2])
	if err := testSpace.Client.Create(ctx, census); err != nil {
		t.Fatalf("creating the census %s: %v", census.Name, err)
	}
	census.Status.ObservedGeneration = census.Generation
	if err := testSpace.Client.Status().Update(ctx, census); err != nil {
		t.Fatalf("recording the census observed: %v", err)
	}
	b := rollouttest.BindingFor(census)
	b.UID = ""
	b.Spec.Workload = ksv1alpha1.DownsyncObjectClauses{}
	b.Spec.Destinations = nil
	for _, c := range clusters {
		b.Spec.Destinations = append(b.Spec.Destinations, ksv1alpha1.Destination{ClusterId: c})
	}
	if err := testSpace.Client.Create(ctx, b); err != nil {
		t.Fatalf("creating the census's Binding: %v", err)
	}
	return p
}

// TestReconcileReportsATakenClusterName: a BindingPolicy that someone else
// made under the name of a cluster's (without the policy's labels, so that
// the policy's list does not show it) blocks the stage, saying so in the
// status and a Warning Event, instead of a create that fails every second.
func TestReconcileReportsATakenClusterName(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	p := batchedAtProd(t, "reconcile-squatted", "store-a", "store-b")
	squat := &ksv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.StagePlacement(p.Name, "prod").On("store-a").String()}}
	if err := testSpace.Client.Create(ctx, squat); err != nil {
		t.Fatalf("creating the squatter: %v", err)
	}

	r := newTestReconciler(t, time.Now())
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	got := getPolicy(t, p.Name)
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	if got.Status.Phase != v1alpha1.RolloutBlocked || ready == nil || ready.Reason != v1alpha1.ReasonBindingPolicyConflict ||
		!strings.Contains(ready.Message, squat.Name) {
		t.Fatalf("phase %s, Ready %+v; want Blocked by a BindingPolicyConflict naming %s", got.Status.Phase, ready, squat.Name)
	}
	recorder := r.Recorder.(*events.FakeRecorder)
	select {
	case e := <-recorder.Events:
		if !strings.Contains(e, "Warning") || !strings.Contains(e, v1alpha1.ReasonBindingPolicyConflict) {
			t.Errorf("event %q, want a Warning BindingPolicyConflict", e)
		}
	default:
		t.Error("no Event")
	}
}

// TestReconcileSealsTheClustersItPlaces: the BindingPolicy the reconciler
// creates for a cluster bears its seal as the API server stores it, and one
// that someone else made with the policy's owner reference is not counted
// as placed: it is taken over, sealed, when the stage's order reaches its
// cluster, and the stage's record then counts both.
func TestReconcileSealsTheClustersItPlaces(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	p := batchedAtProd(t, "reconcile-sealed", "store-a", "store-b")
	forged := rollout.ClusterBindingPolicy(p, p.Spec.Stages[2], "store-b")
	if err := testSpace.Client.Create(ctx, forged); err != nil {
		t.Fatalf("creating the forged BindingPolicy: %v", err)
	}

	r := newTestReconciler(t, time.Now())
	run := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	run()
	if a := getBP(t, v1alpha1.StagePlacement(p.Name, "prod").On("store-a").String()); a.Annotations[v1alpha1.PlacedAnnotation] == "" {
		t.Fatalf("store-a's BindingPolicy bears no seal: %v", a.Annotations)
	}
	if b := getBP(t, forged.Name); b.Annotations[v1alpha1.PlacedAnnotation] != "" {
		t.Fatalf("store-b's forged BindingPolicy was sealed before store-a was placed")
	}
	run()
	if b := getBP(t, forged.Name); b.Annotations[v1alpha1.PlacedAnnotation] == "" {
		t.Fatalf("store-b's BindingPolicy was not taken over, sealed, as the batch filled: %v", b.Annotations)
	}
	run()
	got := getPolicy(t, p.Name).Status.StageNamed("prod")
	if got == nil || got.Clusters == nil || got.Clusters.Placed != 2 {
		t.Errorf("prod's record %+v, want both clusters placed", got)
	}
}
