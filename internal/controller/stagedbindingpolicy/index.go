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

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// The cache indexes a run lists a policy's objects by. Without them, each
// list of a run matches the labels of every object of its kind in the
// space, which grows with the space's policies (docs/performance-log.md,
// "Lists by index").
const (
	// indexPolicy indexes BindingPolicies and StageApprovals by the
	// policy their PolicyLabel names.
	indexPolicy = "stager.policy"
	// indexBindingPolicy indexes CombinedStatuses by the BindingPolicy
	// their StatusLabelBindingPolicy names.
	indexBindingPolicy = "stager.bindingPolicy"
)

// labelIndex is a cache index of the value of a label.
type labelIndex struct {
	field, label string
}

// The reconciler's label indexes.
var (
	byPolicy        = labelIndex{field: indexPolicy, label: v1alpha1.PolicyLabel}
	byBindingPolicy = labelIndex{field: indexBindingPolicy, label: rollout.StatusLabelBindingPolicy}
)

// indexes are the cache indexes of the reconciler's lists, with the kind
// each indexes.
var indexes = []struct {
	labelIndex
	object client.Object
}{
	{byPolicy, &ksv1alpha1.BindingPolicy{}},
	{byPolicy, &v1alpha1.StageApproval{}},
	{byBindingPolicy, &ksv1alpha1.CombinedStatus{}},
}

// IndexFields adds the indexes the reconciler lists by to a space's cache,
// unless the cache has them already: a provider's cache may serve one
// engagement of a space after another, and controller-runtime's cache
// refuses an index it has. The space runner calls it before each start of
// the space's controller (spaces.Options.IndexFields). The space must serve
// the kinds: indexing a kind the space does not serve fails.
func IndexFields(ctx context.Context, c cache.Cache) error {
	for _, idx := range indexes {
		has, err := hasIndex(ctx, c, idx.object, idx.field)
		if err != nil {
			return fmt.Errorf("reading the indexes of %T: %w", idx.object, err)
		}
		if has {
			continue
		}
		if err := c.IndexField(ctx, idx.object, idx.field, idx.values); err != nil {
			return fmt.Errorf("indexing %T by its label %s: %w", idx.object, idx.label, err)
		}
	}
	return nil
}

// hasIndex says whether the cache's informer of obj has the index of field,
// which controller-runtime names "field:<field>". A cache whose informers do
// not show their indexes (kcp's shared caches, which keep track of their
// indexes themselves) is taken to have none.
func hasIndex(ctx context.Context, c cache.Cache, obj client.Object, field string) (bool, error) {
	informer, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return false, err
	}
	shared, ok := informer.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return false, nil
	}
	_, has := shared.GetIndexer().GetIndexers()["field:"+field]
	return has, nil
}

// values extracts the value of an object's label, if it has the label.
func (idx labelIndex) values(obj client.Object) []string {
	if value, ok := obj.GetLabels()[idx.label]; ok {
		return []string{value}
	}
	return nil
}

// labelled selects the objects whose label of idx has the given value: by
// the index when the reconciler reads from a cache with IndexFields'
// indexes, else by the label itself.
func (r *Reconciler) labelled(idx labelIndex, value string) client.ListOption {
	if r.IndexedCache {
		return client.MatchingFields{idx.field: value}
	}
	return client.MatchingLabels{idx.label: value}
}
