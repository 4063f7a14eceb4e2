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

package kcp

import (
	"context"
	"fmt"
	"net/http"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"
	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	findkcp "github.com/kubestellar/workload-stager/providers/kcp"
)

// pathIndex holds the workspace path of every logical cluster an endpoint
// serves whose binding accepted the export's claim on LogicalClusters, from
// one list and watch of them all: a replica learns its spaces' names from
// it without a request a space (which kcp, loaded, refuses with 429s). It
// is an informer of its own rather than one of the shared cache's, whose
// transforms (the stager's narrowing, the stubs of refused clusters) apply
// to every object it holds, and a path must pass both.
type pathIndex struct {
	informer toolscache.SharedIndexInformer
}

// newPathIndex returns the path index of the endpoint whose wildcard
// ("/clusters/*") config and HTTP client are given; run starts it.
func newPathIndex(wildcard *rest.Config, httpClient *http.Client) (*pathIndex, error) {
	mc, err := metadata.NewForConfigAndClient(wildcard, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building a metadata client: %w", err)
	}
	lcs := mc.Resource(findkcp.LogicalClusters)
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return lcs.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return lcs.Watch(ctx, o)
		},
	}
	inf := kcpinformers.NewSharedIndexInformer(lw, &metav1.PartialObjectMetadata{}, 0, toolscache.Indexers{})
	if err := inf.SetTransform(keepPath); err != nil {
		return nil, fmt.Errorf("setting the transform of the path index: %w", err)
	}
	return &pathIndex{informer: inf}, nil
}

// run runs the index until ctx is done.
func (x *pathIndex) run(ctx context.Context) { x.informer.RunWithContext(ctx) }

// path returns the workspace path of logical cluster id, whether the index
// has its LogicalCluster, and whether the index has listed them all yet.
func (x *pathIndex) path(id logicalcluster.Name) (path string, found, synced bool) {
	if !x.informer.HasSynced() {
		return "", false, false
	}
	obj, found, err := x.informer.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(id.String(), "", findkcp.LogicalClusterName))
	if err != nil || !found {
		return "", false, true
	}
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return "", false, true
	}
	return m.Annotations[findkcp.PathAnnotation], true, true
}

// keepPath keeps of a LogicalCluster what keys it in the index and its
// path, and nothing else, for the index holds every workspace's.
func keepPath(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	kept := &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name:            m.Name,
		ResourceVersion: m.ResourceVersion,
		Annotations:     map[string]string{logicalcluster.AnnotationKey: m.Annotations[logicalcluster.AnnotationKey]},
	}}
	if path, ok := m.Annotations[findkcp.PathAnnotation]; ok {
		kept.Annotations[findkcp.PathAnnotation] = path
	}
	return kept, nil
}
