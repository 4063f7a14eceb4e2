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
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubestellar/workload-stager/internal/rollout/rollouttest"
)

// TestOwnBindingPoliciesCreated: a BindingPolicy the reconciler created is
// seen, by its policy only, until the cache has it or for ownChangeTTL.
func TestOwnBindingPoliciesCreated(t *testing.T) {
	p := rollouttest.NewPolicy()
	other := rollouttest.NewPolicy()
	other.UID = "an-earlier-policy-of-the-same-name"
	created := rollouttest.OwnedBP(p, "test", "bp-test")
	t0 := time.Now()

	var o ownBindingPolicies
	o.recordCreate(created, t0)
	if got := o.view(created.Name, nil, p, t0.Add(time.Second)); got == nil || got.UID != "bp-test" {
		t.Errorf("view() before the cache has it = %v, want the created BindingPolicy", got)
	}
	if got := o.viewList(nil, p, t0.Add(time.Second)); len(got) != 1 || got[0].Name != created.Name {
		t.Errorf("viewList() before the cache has it = %v, want the created BindingPolicy", got)
	}
	if got := o.view(created.Name, nil, other, t0.Add(time.Second)); got != nil {
		t.Errorf("view() for another policy of the same name = %v, want none", got)
	}
	if got := o.view(created.Name, nil, p, t0.Add(ownChangeTTL)); got != nil {
		t.Errorf("view() after ownChangeTTL = %v, want the cache's (none)", got)
	}

	o.recordCreate(created, t0)
	cached := created.DeepCopy()
	cached.ResourceVersion = "101"
	if got := o.view(created.Name, cached, p, t0.Add(time.Second)); got != cached {
		t.Errorf("view() once the cache has it = %v, want the cache's", got)
	}
	if got := o.view(created.Name, nil, p, t0.Add(2*time.Second)); got != nil {
		t.Errorf("view() after the cache had it and dropped it = %v, want none", got)
	}
}

// TestOwnBindingPoliciesDeleted: a BindingPolicy the reconciler deleted is
// seen as being deleted until the cache says so, or for ownChangeTTL.
func TestOwnBindingPoliciesDeleted(t *testing.T) {
	p := rollouttest.NewPolicy()
	dev := rollouttest.OwnedBP(p, "dev", "bp-dev")
	t0 := time.Now()

	var o ownBindingPolicies
	o.recordDelete(types.UID("bp-dev"), t0)
	got := o.view(dev.Name, dev, p, t0.Add(time.Second))
	if got.DeletionTimestamp == nil || dev.DeletionTimestamp != nil {
		t.Errorf("view() before the cache shows the delete: deletionTimestamp %v (cache's object changed: %v), want set on a copy",
			got.DeletionTimestamp, dev.DeletionTimestamp != nil)
	}
	if list := o.viewList([]ksv1alpha1.BindingPolicy{*dev}, p, t0.Add(time.Second)); len(list) != 1 || list[0].DeletionTimestamp == nil {
		t.Errorf("viewList() before the cache shows the delete = %v, want it being deleted", list)
	}
	if got := o.view(dev.Name, dev, p, t0.Add(ownChangeTTL)); got.DeletionTimestamp != nil {
		t.Errorf("view() after ownChangeTTL: deletionTimestamp %v, want the cache's (none)", got.DeletionTimestamp)
	}

	o.recordDelete(types.UID("bp-dev"), t0)
	deleting := rollouttest.BeingDeleted(dev.DeepCopy())
	if got := o.view(dev.Name, deleting, p, t0.Add(time.Second)); got != deleting {
		t.Errorf("view() once the cache shows the delete = %v, want the cache's", got)
	}
	if got := o.view(dev.Name, dev, p, t0.Add(2*time.Second)); got.DeletionTimestamp != nil {
		t.Errorf("view() after the cache showed the delete: deletionTimestamp %v, want the cache's", got.DeletionTimestamp)
	}
	other := rollouttest.OwnedBP(p, "test", "bp-test")
	if got := o.view(other.Name, other, p, t0.Add(time.Second)); got != other {
		t.Errorf("view() of a BindingPolicy not deleted = %v, want the cache's", got)
	}
}

// TestOwnBindingPoliciesCreatedThenDeleted: a BindingPolicy created and
// deleted again before the cache had either is not believed to exist, and
// a create keeps its policy's wait short only while it is believed.
func TestOwnBindingPoliciesCreatedThenDeleted(t *testing.T) {
	p := rollouttest.NewPolicy()
	other := rollouttest.NewPolicy()
	other.UID = "another-policy"
	created := rollouttest.OwnedBP(p, "test", "bp-test")
	t0 := time.Now()

	var o ownBindingPolicies
	o.recordCreate(created, t0)
	if left := o.believedFor(p, t0.Add(time.Second)); left != ownChangeTTL-time.Second {
		t.Errorf("believedFor() a second after the create = %s, want %s", left, ownChangeTTL-time.Second)
	}
	if left := o.believedFor(other, t0.Add(time.Second)); left != 0 {
		t.Errorf("believedFor() another policy = %s, want 0", left)
	}
	o.recordDelete(created.UID, t0.Add(time.Second))
	if got := o.view(created.Name, nil, p, t0.Add(2*time.Second)); got != nil {
		t.Errorf("view() after the create and the delete = %v, want none", got)
	}
	if got := o.viewList(nil, p, t0.Add(2*time.Second)); len(got) != 0 {
		t.Errorf("viewList() after the create and the delete = %v, want none", got)
	}
	if left := o.believedFor(p, t0.Add(2*time.Second)); left != 0 {
		t.Errorf("believedFor() after the delete = %s, want 0", left)
	}
}
