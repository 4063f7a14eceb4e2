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
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// kcp's own objects, handled as unstructured objects.
var (
	// WorkspaceGVK is the kind of kcp's workspaces, which live in their
	// parent workspace.
	WorkspaceGVK = schema.GroupVersionKind{Group: "tenancy.kcp.io", Version: "v1alpha1", Kind: "Workspace"}
	// LogicalClusterGVK is the kind of the object describing a workspace
	// from inside it, named LogicalClusterName.
	LogicalClusterGVK = schema.GroupVersionKind{Group: "core.kcp.io", Version: "v1alpha1", Kind: "LogicalCluster"}
)

const (
	// LogicalClusterName is the name of the LogicalCluster object of every
	// workspace.
	LogicalClusterName = "cluster"
	// PathAnnotation is the annotation of a LogicalCluster (and of the
	// objects kcp serves from a workspace) holding the workspace's path.
	PathAnnotation = "kcp.io/path"
	// WorkspacePhaseReady is the status.phase of a usable workspace.
	WorkspacePhaseReady = "Ready"

	// workspaceTimeout bounds the wait for a workspace to become ready or
	// disappear; it takes about 2 s and 6 s on an idle kcp, and over two
	// minutes on one creating hundreds on 2 cores.
	workspaceTimeout = 5 * time.Minute
)

// CreateWorkspace creates a workspace of type root:universal named name in
// the workspace parentPath, and waits until it is Ready and reachable by its
// path. It returns that path, parentPath:name, and the workspace's logical
// cluster ID (its spec.cluster). A workspace that already exists is waited
// for, not created again.
func (s *Server) CreateWorkspace(ctx context.Context, parentPath, name string) (path, logicalClusterID string, err error) {
	if parentPath == "" || name == "" {
		return "", "", fmt.Errorf("creating kcp workspace %q in %q: both the parent path and the name are required", name, parentPath)
	}
	path = parentPath + ":" + name
	c, err := s.Client(parentPath)
	if err != nil {
		return "", "", err
	}
	ws := newWorkspace(name)
	if err := unstructured.SetNestedStringMap(ws.Object, map[string]string{"name": "universal", "path": RootPath}, "spec", "type"); err != nil {
		return "", "", fmt.Errorf("creating kcp workspace %s: %w", path, err)
	}
	ctx, cancel := context.WithTimeout(ctx, workspaceTimeout)
	defer cancel()
	if err := createRetryingUnknownType(ctx, c, ws); err != nil {
		return "", "", fmt.Errorf("creating kcp workspace %s: %w", path, err)
	}
	var phase string
	err = environment.Poll(ctx, pollInterval, workspaceTimeout, "kcp workspace "+path+" to be ready", func() error {
		got := newWorkspace(name)
		if err := c.Get(ctx, client.ObjectKeyFromObject(got), got); err != nil {
			return err
		}
		phase, _, _ = unstructured.NestedString(got.Object, "status", "phase")
		logicalClusterID, _, _ = unstructured.NestedString(got.Object, "spec", "cluster")
		if phase != WorkspacePhaseReady || logicalClusterID == "" {
			return fmt.Errorf("phase %q, logical cluster %q", phase, logicalClusterID)
		}
		return nil
	})
	if err != nil {
		return "", "", err
	}

	// Ready in its parent; wait until requests for its path reach it too.
	err = environment.Poll(ctx, pollInterval, workspaceTimeout, "kcp workspace "+path+" (cluster "+logicalClusterID+") to be reachable by its path", func() error {
		lc, err := s.LogicalCluster(ctx, path)
		if err != nil {
			return err
		}
		if got := lc.GetAnnotations()[PathAnnotation]; got != path {
			return fmt.Errorf("its path is %q", got)
		}
		return nil
	})
	if err != nil {
		return "", "", err
	}
	return path, logicalClusterID, nil
}

// typeNotKnownYet reports whether kcp refused a workspace because its
// admission has not yet seen the workspace's type. A kcp answers /readyz
// before its admission caches hold the root workspace types it bootstrapped,
// so a workspace created in its first moments can be refused this way.
func typeNotKnownYet(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "workspacetypes.tenancy.kcp.io") &&
		strings.Contains(err.Error(), "not found")
}

// createRetryingUnknownType creates ws, again while kcp refuses it with
// typeNotKnownYet, until ctx ends. A workspace that exists already is not an
// error.
func createRetryingUnknownType(ctx context.Context, c client.Client, ws *unstructured.Unstructured) error {
	for {
		err := c.Create(ctx, ws.DeepCopy())
		switch {
		case err == nil || apierrors.IsAlreadyExists(err):
			return nil
		case !typeNotKnownYet(err):
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (still refused: %w)", context.Cause(ctx), err)
		case <-time.After(pollInterval):
		}
	}
}

// DeleteWorkspace deletes the workspace named name in the workspace
// parentPath and waits until it is gone (about 6 s). Deleting a missing
// workspace is not an error. Requests for the path of a deleted workspace
// are answered with 403 Forbidden, not 404.
func (s *Server) DeleteWorkspace(ctx context.Context, parentPath, name string) error {
	path := parentPath + ":" + name
	c, err := s.Client(parentPath)
	if err != nil {
		return err
	}
	if err := c.Delete(ctx, newWorkspace(name)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("deleting kcp workspace %s: %w", path, err)
	}
	ctx, cancel := context.WithTimeout(ctx, workspaceTimeout)
	defer cancel()
	return environment.Poll(ctx, pollInterval, workspaceTimeout, "kcp workspace "+path+" to be gone", func() error {
		got := newWorkspace(name)
		switch err := c.Get(ctx, client.ObjectKeyFromObject(got), got); {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		}
		return errors.New("still there")
	})
}

// LogicalCluster returns the LogicalCluster object of the workspace with
// the given path or logical cluster ID. Its annotation PathAnnotation holds
// the workspace's path and its annotation "kcp.io/cluster" its logical
// cluster ID.
func (s *Server) LogicalCluster(ctx context.Context, path string) (*unstructured.Unstructured, error) {
	c, err := s.Client(path)
	if err != nil {
		return nil, err
	}
	lc := &unstructured.Unstructured{}
	lc.SetGroupVersionKind(LogicalClusterGVK)
	if err := c.Get(ctx, client.ObjectKey{Name: LogicalClusterName}, lc); err != nil {
		return nil, fmt.Errorf("getting the LogicalCluster of kcp workspace %s: %w", path, err)
	}
	return lc, nil
}

// newWorkspace returns an unstructured Workspace with only a kind and a name.
func newWorkspace(name string) *unstructured.Unstructured {
	ws := &unstructured.Unstructured{}
	ws.SetGroupVersionKind(WorkspaceGVK)
	ws.SetName(name)
	return ws
}
