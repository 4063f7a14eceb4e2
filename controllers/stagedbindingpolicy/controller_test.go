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
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// TestStageStartJumpsTheQueue: among the policies waiting in a space's queue,
// one whose status has just started a stage is reconciled first, since
// creating that stage's BindingPolicy is what its rollout waits for; other
// updates keep their order.
func TestStageStartJumpsTheQueue(t *testing.T) {
	policy := func(name, rv, active string) *v1alpha1.StagedBindingPolicy {
		return &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv},
			Status: v1alpha1.StagedBindingPolicyStatus{ActiveStage: active}}
	}
	update := func(name, from, to string) event.TypedUpdateEvent[*v1alpha1.StagedBindingPolicy] {
		return event.TypedUpdateEvent[*v1alpha1.StagedBindingPolicy]{ObjectOld: policy(name, "1", from), ObjectNew: policy(name, "2", to)}
	}
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	h := policyEvents()
	ctx := context.Background()
	h.Update(ctx, update("waiting", "dev", "dev"), q)
	h.Create(ctx, event.TypedCreateEvent[*v1alpha1.StagedBindingPolicy]{Object: policy("new", "1", "")}, q)
	h.Update(ctx, update("advanced", "dev", "test"), q)
	h.Update(ctx, update("started", "", "dev"), q)

	var order []string
	for range 4 {
		req, _ := q.Get()
		order = append(order, req.Name)
		q.Done(req)
	}
	first := []string{order[0], order[1]}
	slices.Sort(first)
	if !slices.Equal(first, []string{"advanced", "started"}) {
		t.Errorf("reconciled in the order %v, want the two stage starts (advanced, started) first", order)
	}
}
