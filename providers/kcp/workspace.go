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

// Package kcp finds the kcp logical clusters that bind the stager's
// APIExport, as the stager names them: its flags, the names kcp gives the
// objects it reads, and Discover, which `kubectl stager` serves from.
// Engaging them, through github.com/kcp-dev/multicluster-provider, is
// internal/providers/kcp's, so that the kubectl plugin links no controller
// manager.
package kcp

import (
	"context"
	"fmt"

	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
)

const (
	// DefaultEndpointSlice is the APIExportEndpointSlice kcp makes for the
	// stager's APIExport: it has the export's name.
	DefaultEndpointSlice = "community.kubestellar.io"
	// PathAnnotation is the annotation of a LogicalCluster holding its workspace path.
	PathAnnotation = "kcp.io/path"
	// LogicalClusterName is the name of the LogicalCluster object of every workspace.
	LogicalClusterName = "cluster"
)

// LogicalClusters is the resource whose object in each workspace
// (LogicalClusterName) holds the workspace path.
var LogicalClusters = schema.GroupVersionResource{Group: "core.kcp.io", Version: "v1alpha1", Resource: "logicalclusters"}

// AddToScheme adds the kcp types the provider reads in the provider
// workspace (APIExportEndpointSlices) and through the virtual workspace
// (APIBindings) to a scheme.
func AddToScheme(s *runtime.Scheme) error {
	return apisv1alpha1.AddToScheme(s)
}

// WorkspacePath reads the kcp.io/path annotation of the workspace's
// LogicalCluster through mc: the name of the space.
func WorkspacePath(ctx context.Context, mc metadata.Interface) (string, error) {
	obj, err := mc.Resource(LogicalClusters).Get(ctx, LogicalClusterName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading LogicalCluster %s: %w", LogicalClusterName, err)
	}
	return obj.GetAnnotations()[PathAnnotation], nil
}
