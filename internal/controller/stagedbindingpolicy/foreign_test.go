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
	"fmt"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout"
	"github.com/kubestellar/workload-stager/internal/rollout/rollouttest"
)

// bulky is a BindingPolicy named name as large as its maker likes: many
// labels, annotations, owner references (one the policy's) and selectors.
func bulky(policy *metav1.ObjectMeta, name string, size int) *ksv1alpha1.BindingPolicy {
	bp := &ksv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "7",
		Labels: map[string]string{}, Annotations: map[string]string{"big": strings.Repeat("x", size)}}}
	for i := range size / 100 {
		bp.Labels[fmt.Sprintf("l%d", i)] = "v"
		bp.OwnerReferences = append(bp.OwnerReferences, metav1.OwnerReference{Name: fmt.Sprintf("o%d", i), UID: types.UID(fmt.Sprintf("o%d", i))})
		bp.Spec.ClusterSelectors = append(bp.Spec.ClusterSelectors, metav1.LabelSelector{MatchLabels: map[string]string{"k": strings.Repeat("y", 60)}})
	}
	bp.OwnerReferences = append(bp.OwnerReferences, metav1.OwnerReference{Name: policy.Name, UID: policy.UID})
	return bp
}

// TestForeignBindingPoliciesKeepStubsBoundedPerPolicy: whatever the
// objects found and however many, foreignBindingPolicies keeps at most
// maxForeignPerPolicy per policy, the latest found, each with its name,
// UID and resourceVersion only (none owned by the policy, so that Plan
// reports the name taken and writes nothing), and one policy's never
// displace another's.
func TestForeignBindingPoliciesKeepStubsBoundedPerPolicy(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := rollouttest.NewPolicy()
		other := "other-policy"
		var f foreignBindingPolicies
		start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		f.record(other, bulky(&p.ObjectMeta, "kept-by-other", 10), start)

		n := rapid.IntRange(1, 40).Draw(t, "found")
		size := rapid.IntRange(0, 20_000).Draw(t, "size")
		now := start
		for i := range n {
			now = start.Add(time.Duration(i) * time.Millisecond)
			f.record(p.Name, bulky(&p.ObjectMeta, fmt.Sprintf("%s.stage.s%02d", p.Name, i), size), now)
		}

		got := f.withFound(p.Name, nil, now)
		if want := min(n, maxForeignPerPolicy); len(got) != want {
			t.Fatalf("%d kept of %d found, want %d", len(got), n, want)
		}
		for _, bp := range got {
			index := 0
			if _, err := fmt.Sscanf(strings.TrimPrefix(bp.Name, p.Name+".stage.s"), "%d", &index); err != nil || index < n-maxForeignPerPolicy {
				t.Errorf("kept %s, not one of the latest %d found", bp.Name, maxForeignPerPolicy)
			}
			if bp.UID != types.UID("uid-"+bp.Name) || bp.ResourceVersion != "7" {
				t.Errorf("%s: UID %q, resourceVersion %q; want them kept", bp.Name, bp.UID, bp.ResourceVersion)
			}
			if len(bp.Labels)+len(bp.Annotations)+len(bp.OwnerReferences)+len(bp.Spec.ClusterSelectors) != 0 {
				t.Errorf("%s keeps %d labels, %d annotations, %d owner references, %d selectors; want none", bp.Name,
					len(bp.Labels), len(bp.Annotations), len(bp.OwnerReferences), len(bp.Spec.ClusterSelectors))
			}
			if rollout.OwnedBy(&bp, p) {
				t.Errorf("%s is taken for the policy's own", bp.Name)
			}
		}
		if kept := f.withFound(other, nil, now); len(kept) != 1 || kept[0].Name != "kept-by-other" {
			t.Errorf("the other policy's: %v, want kept-by-other", kept)
		}
	})
}

// TestForeignBindingPoliciesAreBelievedForAWhile: a name found is in the
// snapshot's list until foreignTTL has passed, or until the cache lists an
// object of that name, and no more once the policy is gone.
func TestForeignBindingPoliciesAreBelievedForAWhile(t *testing.T) {
	p := rollouttest.NewPolicy()
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	name := v1alpha1.StagePlacement(p.Name, "dev").At(p.Status.UpdateRevision).String()
	var f foreignBindingPolicies
	f.record(p.Name, bulky(&p.ObjectMeta, name, 10), at)
	if got := f.withFound(p.Name, nil, at.Add(foreignTTL-time.Second)); len(got) != 1 || got[0].Name != name {
		t.Errorf("within foreignTTL: %v, want %s", got, name)
	}
	if got := f.withFound(p.Name, nil, at.Add(foreignTTL)); len(got) != 0 {
		t.Errorf("after foreignTTL: %v, want none", got)
	}
	f.record(p.Name, bulky(&p.ObjectMeta, name, 10), at)
	cached := *rollouttest.OwnedBP(p, "dev", "bp-dev")
	if got := f.withFound(p.Name, []ksv1alpha1.BindingPolicy{cached}, at); len(got) != 1 || got[0].UID != "bp-dev" {
		t.Errorf("listed by the cache: %v, want the cache's only", got)
	}
	if got := f.withFound(p.Name, nil, at); len(got) != 0 {
		t.Errorf("after the cache listed it: %v, want none", got)
	}
	f.record(p.Name, bulky(&p.ObjectMeta, name, 10), at)
	f.forget(p.Name)
	if got := f.withFound(p.Name, nil, at); len(got) != 0 {
		t.Errorf("after forget: %v, want none", got)
	}
}
