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
	"fmt"
	"slices"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// TestIndexedListsMatchLabelledLists lists a policy's BindingPolicies and
// StageApprovals, and a BindingPolicy's CombinedStatuses, from a cache with
// IndexFields' indexes, by index, and checks that each list names the
// objects the label selector names, and only them, while the other
// policy's objects, and objects without the label, are in the cache too.
// Indexing the cache a second time, once started, succeeds.
func TestIndexedListsMatchLabelledLists(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	c := testSpace.Client
	mine, theirs := objectName("index-policy", "mine"), objectName("index-policy", "theirs")
	namespace := objectName("Namespace", "index-statuses")
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	objectsOf := func(policy string, labelled bool) []client.Object {
		labels := func(key, value string) map[string]string {
			if !labelled {
				return nil
			}
			return map[string]string{key: value}
		}
		suffix := "-unlabelled"
		if labelled {
			suffix = ""
		}
		var objs []client.Object
		for _, stage := range []string{"dev", "prod"} {
			bp := v1alpha1.StagePlacement(policy, stage).String() + suffix
			objs = append(objs,
				&ksv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: bp, Labels: labels(v1alpha1.PolicyLabel, policy)}},
				&v1alpha1.StageApproval{ObjectMeta: metav1.ObjectMeta{Name: policy + "-" + stage + suffix, Labels: labels(v1alpha1.PolicyLabel, policy)},
					Spec: v1alpha1.StageApprovalSpec{Policy: policy, Stage: stage}},
				&ksv1alpha1.CombinedStatus{ObjectMeta: metav1.ObjectMeta{Name: bp + "-web", Namespace: namespace,
					Labels: labels(rollout.StatusLabelBindingPolicy, v1alpha1.StagePlacement(policy, "dev").String())}},
			)
		}
		return objs
	}
	var all []client.Object
	for _, policy := range []string{mine, theirs} {
		all = append(all, objectsOf(policy, true)...)
		all = append(all, objectsOf(policy, false)...)
	}
	for _, obj := range all {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}

	cl := startIndexedCluster(ctx, t)
	// A cache may serve one engagement after another: indexing it again,
	// started, leaves it as it is.
	if err := IndexFields(ctx, cl.GetCache()); err != nil {
		t.Fatalf("indexing the cache again: %v", err)
	}
	indexed := &Reconciler{Client: cl.GetClient(), IndexedCache: true}
	names := func(list client.ObjectList) []string {
		var out []string
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range items {
			out = append(out, item.(client.Object).GetName())
		}
		slices.Sort(out)
		return out
	}
	for _, q := range []struct {
		list         func() client.ObjectList
		index        labelIndex
		label, value string
		want         int
	}{
		{func() client.ObjectList { return &ksv1alpha1.BindingPolicyList{} }, byPolicy, v1alpha1.PolicyLabel, mine, 2},
		{func() client.ObjectList { return &v1alpha1.StageApprovalList{} }, byPolicy, v1alpha1.PolicyLabel, mine, 2},
		{func() client.ObjectList { return &ksv1alpha1.CombinedStatusList{} }, byBindingPolicy, rollout.StatusLabelBindingPolicy, v1alpha1.StagePlacement(mine, "dev").String(), 2},
	} {
		byLabel, byIndex := q.list(), q.list()
		environment.Eventually(t, 30*time.Second, "the cache to hold the labelled objects", func() error {
			if err := cl.GetClient().List(ctx, byLabel, client.MatchingLabels{q.label: q.value}); err != nil {
				return err
			}
			if n := meta.LenList(byLabel); n != q.want {
				return fmt.Errorf("%d of %d in the cache", n, q.want)
			}
			return nil
		})
		if err := cl.GetClient().List(ctx, byIndex, indexed.labelled(q.index, q.value)); err != nil {
			t.Fatalf("listing %T by index: %v", byIndex, err)
		}
		got, want := names(byIndex), names(byLabel)
		if !slices.Equal(got, want) {
			t.Errorf("%T by index %s=%s: %v; by label: %v (want %d)", byIndex, q.label, q.value, got, want, q.want)
		}
	}
}

// startIndexedCluster starts a cluster of the shared space, until ctx is
// done, with IndexFields' indexes on its cache, and waits for the cache to
// sync; opts change its options after the scheme is set.
func startIndexedCluster(ctx context.Context, t *testing.T, opts ...cluster.Option) cluster.Cluster {
	t.Helper()
	withScheme := func(o *cluster.Options) { o.Scheme = testSpace.Client.Scheme() }
	cl, err := cluster.New(testSpace.Config, append([]cluster.Option{withScheme}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := IndexFields(ctx, cl.GetCache()); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cl.Start(ctx) }()
	if !cl.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	return cl
}
