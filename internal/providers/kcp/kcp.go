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

// Package kcp engages, as spaces, the kcp logical clusters that bind the
// stager's APIExport, through the apiexport provider of
// github.com/kcp-dev/multicluster-provider, and names each space after its
// workspace path (e.g. "root:wds1") instead of its logical cluster ID.
//
// The path is the kcp.io/path annotation of the LogicalCluster named
// "cluster" in the workspace, which the stager reads through the export's
// claim on core.kcp.io logicalclusters. A workspace that has not accepted
// that claim is named after its logical cluster ID.
//
// What finding these spaces needs without engaging them (flags, names,
// Discover) is providers/kcp, imported here as findkcp.
package kcp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/kcp-dev/multicluster-provider/apiexport"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	findkcp "github.com/kubestellar/workload-stager/providers/kcp"
)

const (
	// PathTimeout is how long kcp may refuse the path of a new space before
	// the space is named after its logical cluster ID.
	PathTimeout = 30 * time.Second
	// pathAttemptTimeout bounds one read of the path.
	pathAttemptTimeout = 10 * time.Second
)

// Provider is a multicluster-runtime provider of the logical clusters bound
// to an APIExport, named after their workspace paths.
type Provider struct {
	inner *apiexport.Provider
	log   logr.Logger
	// pathOf reads a logical cluster's workspace path; replaced in tests.
	pathOf func(ctx context.Context, cl cluster.Cluster) (string, error)
	// pathTimeout bounds the attempts to read the path of a new space.
	pathTimeout time.Duration

	mu sync.RWMutex
	// ids maps a space name to the logical cluster ID it stands for.
	ids map[multicluster.ClusterName]multicluster.ClusterName
}

var (
	_ multicluster.Provider         = &Provider{}
	_ multicluster.ProviderRunnable = &Provider{}
)

// New returns a provider of the logical clusters served by the virtual
// workspace of an APIExport. cfg reaches the provider workspace holding the
// APIExportEndpointSlice endpointSlice; scheme (with AddToScheme applied)
// is the scheme of every space.
func New(cfg *rest.Config, endpointSlice string, scheme *runtime.Scheme, log logr.Logger) (*Provider, error) {
	inner, err := apiexport.New(cfg, endpointSlice, apiexport.Options{Scheme: scheme, Log: &log})
	if err != nil {
		return nil, fmt.Errorf("creating the kcp apiexport provider for endpoint slice %s: %w", endpointSlice, err)
	}
	return &Provider{
		inner:       inner,
		log:         log,
		pathOf:      workspacePath,
		pathTimeout: PathTimeout,
		ids:         map[multicluster.ClusterName]multicluster.ClusterName{},
	}, nil
}

// Start runs the provider until ctx is done, engaging every bound logical
// cluster with aware under its space name.
func (p *Provider) Start(ctx context.Context, aware multicluster.Aware) error {
	return p.inner.Start(ctx, &namingAware{Aware: aware, provider: p})
}

// Get returns the cluster of a space, by space name or logical cluster ID.
func (p *Provider) Get(ctx context.Context, name multicluster.ClusterName) (cluster.Cluster, error) {
	p.mu.RLock()
	id, ok := p.ids[name]
	p.mu.RUnlock()
	if !ok {
		id = name
	}
	return p.inner.Get(ctx, id)
}

// IndexField adds an index to the clusters of the provider.
func (p *Provider) IndexField(ctx context.Context, obj client.Object, field string, extractValue client.IndexerFunc) error {
	return p.inner.IndexField(ctx, obj, field, extractValue)
}

// SpaceName returns the name of the space of a logical cluster: its
// workspace path, or its ID once kcp has refused the path (or answered
// without one) for PathTimeout. A binding may be ready a moment before its
// claims take effect, so refusals are retried; a read that fails otherwise
// (a timeout, an overloaded kcp) is retried for as long as ctx lasts,
// since a name taken from kcp's load would differ from one replica to the
// next, and so would the space's fence.
func (p *Provider) SpaceName(ctx context.Context, id multicluster.ClusterName, cl cluster.Cluster) multicluster.ClusterName {
	name := id
	var refusedSince time.Time
	var lastErr error
	// Pauses after each failed read doubling from 50 ms to a second (sliding).
	retry := wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Cap: time.Second, Steps: math.MaxInt32}
	_ = retry.DelayFunc().Until(ctx, true, true, func(ctx context.Context) (bool, error) {
		attempt, cancel := context.WithTimeout(ctx, pathAttemptTimeout)
		defer cancel()
		var path string
		path, lastErr = p.pathOf(attempt, cl)
		switch {
		case lastErr == nil && path != "":
			name = multicluster.ClusterName(path)
			return true, nil
		case lastErr == nil:
			lastErr = errors.New("no " + findkcp.PathAnnotation + " annotation")
		case !refused(lastErr):
			return false, nil
		}
		if refusedSince.IsZero() {
			refusedSince = time.Now()
		}
		return time.Since(refusedSince) >= p.pathTimeout, nil
	})
	if lastErr != nil && ctx.Err() == nil {
		p.log.Info("Naming the space after its logical cluster ID: kcp refuses its workspace path (is the logicalclusters claim accepted?)",
			"space", id, "error", lastErr.Error())
	}
	return name
}

// refused tells whether a failed read of the path is kcp's answer rather
// than a failure to get one.
func refused(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsUnauthorized(err)
}

// namingAware engages logical clusters under their space names, and keeps
// the provider's name-to-ID map until they are disengaged.
type namingAware struct {
	multicluster.Aware
	provider *Provider
}

// Engage engages a logical cluster under its space name. The name is
// resolved in the background, so that a workspace whose path cannot be read
// yet does not hold up the others: Engage returns at once.
func (a *namingAware) Engage(ctx context.Context, id multicluster.ClusterName, cl cluster.Cluster) error {
	go a.engage(ctx, id, cl)
	return nil
}

func (a *namingAware) engage(ctx context.Context, id multicluster.ClusterName, cl cluster.Cluster) {
	p := a.provider
	name := p.SpaceName(ctx, id, cl)
	if ctx.Err() != nil {
		return
	}
	p.mu.Lock()
	if other, taken := p.ids[name]; taken && other != id {
		// The workspace was deleted and made again under the same path while
		// the old logical cluster is still engaged: use the ID meanwhile.
		p.log.Info("Workspace path already names another logical cluster; naming the space after its ID",
			"space", id, "path", name, "other", other)
		name = id
	}
	p.ids[name] = id
	p.mu.Unlock()
	if name != id {
		p.log.Info("Engaging logical cluster", "space", name, "logicalCluster", id)
	}
	if err := a.Aware.Engage(ctx, name, cl); err != nil {
		p.forget(name, id)
		p.log.Error(err, "Cannot engage space", "space", name, "logicalCluster", id)
		return
	}
	<-ctx.Done()
	p.forget(name, id)
}

// forget drops a space name once its logical cluster is disengaged.
func (p *Provider) forget(name, id multicluster.ClusterName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ids[name] == id {
		delete(p.ids, name)
	}
}

// workspacePath reads the kcp.io/path annotation of the workspace's
// LogicalCluster, bypassing the caches.
func workspacePath(ctx context.Context, cl cluster.Cluster) (string, error) {
	mc, err := metadata.NewForConfigAndClient(cl.GetConfig(), cl.GetHTTPClient())
	if err != nil {
		return "", fmt.Errorf("building a metadata client: %w", err)
	}
	return findkcp.WorkspacePath(ctx, mc)
}
