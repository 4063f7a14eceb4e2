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
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"
	"github.com/kcp-dev/logicalcluster/v3"
	mcpcache "github.com/kcp-dev/multicluster-provider/pkg/cache"
	mcrecorder "github.com/kcp-dev/multicluster-provider/pkg/events/recorder"
	"github.com/kcp-dev/multicluster-provider/pkg/provider"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
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

// CacheOptions say what the caches the provider shares among spaces hold.
type CacheOptions struct {
	// Narrow, when set, narrows the options of the shared caches as it
	// narrows a space's own (stagedbindingpolicy.NarrowCache): its
	// NewInformer must call the one it is given, which makes kcp's
	// cluster-aware informers, and its DefaultTransform applies to every
	// object of every space.
	Narrow func(cache.Options) cache.Options
	// NewRateLimiter, when set, makes the rate limiter of a space's
	// requests (the stager's --space-qps and --space-burst), one a space:
	// kcp's provider builds each space's client itself, where no
	// client.NewClientFunc is given a say.
	NewRateLimiter func() flowcontrol.RateLimiter
}

// Provider is a multicluster-runtime provider of the logical clusters bound
// to an APIExport, named after their workspace paths.
type Provider struct {
	inner *provider.Provider
	log   logr.Logger
	// scheme is every space's.
	scheme *runtime.Scheme
	// cacheOptions narrow the shared caches.
	cacheOptions CacheOptions
	// indexedPath looks a logical cluster's workspace path up in the path
	// indexes (pathIndex.path); replaced in tests.
	indexedPath func(id logicalcluster.Name) (path string, found, synced bool)
	// pathOf reads a logical cluster's workspace path from kcp, for those
	// the indexes lack; replaced in tests.
	pathOf func(ctx context.Context, cl cluster.Cluster) (string, error)
	// pathTimeout bounds the attempts to read the path of a new space.
	pathTimeout time.Duration
	// indexTimeout is how long a new space waits for the path indexes to
	// list before its path is read.
	indexTimeout time.Duration

	mu sync.RWMutex
	// ids maps a space name to the logical cluster ID it stands for.
	ids map[multicluster.ClusterName]multicluster.ClusterName

	sharedMu sync.Mutex
	// ctx is Start's: the shared caches run until it is done.
	ctx context.Context
	// shared are the caches of the stager's kinds, one per virtual
	// workspace endpoint (by URL), shared by the spaces it serves.
	shared map[string]*sharedCache

	refusedMu sync.RWMutex
	// refused are the logical clusters whose objects the shared caches
	// refuse (SpaceCluster.RefuseCache), for as long as the provider runs.
	refused map[logicalcluster.Name]bool
}

var (
	_ multicluster.Provider         = &Provider{}
	_ multicluster.ProviderRunnable = &Provider{}
)

// New returns a provider of the logical clusters served by the virtual
// workspace of an APIExport. cfg reaches the provider workspace holding the
// APIExportEndpointSlice endpointSlice; scheme (with AddToScheme applied)
// is the scheme of every space.
//
// It is kcp's apiexport provider (github.com/kcp-dev/multicluster-provider's
// apiexport.New, whose defaults it repeats) but for the caches of each
// space's cluster: apiexport.Options take no cache options, and its
// provider builds the caches it shares among spaces with a scheme alone, so
// each space's cluster is built here on caches of the provider's own
// (sharedCache), which cacheOptions narrow. The provider's caches then
// hold its APIBindings alone.
func New(cfg *rest.Config, endpointSlice string, scheme *runtime.Scheme, log logr.Logger, cacheOptions CacheOptions) (*Provider, error) {
	p := &Provider{
		log:          log,
		scheme:       scheme,
		cacheOptions: cacheOptions,
		pathOf:       workspacePath,
		pathTimeout:  PathTimeout,
		indexTimeout: pathAttemptTimeout,
		ids:          map[multicluster.ClusterName]multicluster.ClusterName{},
		shared:       map[string]*sharedCache{},
		refused:      map[logicalcluster.Name]bool{},
	}
	inner, err := provider.NewProvider(cfg, endpointSlice, provider.Options{
		Scheme:                       scheme,
		EndpointSliceObject:          &apisv1alpha1.APIExportEndpointSlice{},
		ExtractURLsFromEndpointSlice: provider.DefaultExtractURLsFromEndpointSlice,
		ObjectToWatch:                &apisv1alpha1.APIBinding{},
		Log:                          &log,
		NewCluster:                   p.newCluster,
		AddFilter:                    provider.ConditionReadyFunc("Ready"),
		UpdateFilter:                 provider.ConditionReadyFunc("Ready"),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the kcp apiexport provider for endpoint slice %s: %w", endpointSlice, err)
	}
	p.inner = inner
	p.indexedPath = p.pathFromIndexes
	return p, nil
}

// Start runs the provider until ctx is done, engaging every bound logical
// cluster with aware under its space name.
func (p *Provider) Start(ctx context.Context, aware multicluster.Aware) error {
	p.sharedMu.Lock()
	p.ctx = ctx
	p.sharedMu.Unlock()
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
	cl, err := p.inner.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("getting logical cluster %s: %w", id, err)
	}
	return p.space(id, cl), nil
}

// IndexField adds an index to the clusters of the provider.
func (p *Provider) IndexField(ctx context.Context, obj client.Object, field string, extractValue client.IndexerFunc) error {
	return p.inner.IndexField(ctx, obj, field, extractValue)
}

// SpaceName returns the name of the space of a logical cluster: its
// workspace path, or its ID once kcp has refused the path (or answered
// without one) for PathTimeout. The path comes from the endpoint's path
// index, which a replica fills with one list and watch; only a logical
// cluster the index lacks once it has listed (or that has not listed
// within indexTimeout) costs a read of its own. A binding may be
// ready a moment before its claims take effect, so refusals are retried; a
// read that fails otherwise (a timeout, an overloaded kcp) is retried for
// as long as ctx lasts, since a name taken from kcp's load would differ
// from one replica to the next, and so would the space's fence.
func (p *Provider) SpaceName(ctx context.Context, id multicluster.ClusterName, cl cluster.Cluster) multicluster.ClusterName {
	name := id
	start := time.Now()
	var refusedSince time.Time
	var lastErr error
	// Pauses after each failed look-up doubling from 50 ms to a second (sliding).
	retry := wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Cap: time.Second, Steps: math.MaxInt32}
	_ = retry.DelayFunc().Until(ctx, true, true, func(ctx context.Context) (bool, error) {
		path, found, synced := p.indexedPath(logicalcluster.Name(id))
		switch {
		case found:
			lastErr = nil
		case !synced && time.Since(start) < p.indexTimeout:
			lastErr = errors.New("the path index has not listed the logical clusters yet")
			return false, nil
		default:
			attempt, cancel := context.WithTimeout(ctx, pathAttemptTimeout)
			defer cancel()
			path, lastErr = p.pathOf(attempt, cl)
		}
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
	if err := a.Aware.Engage(ctx, name, p.space(id, cl)); err != nil {
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

// pathFromIndexes looks a logical cluster up in the path indexes of every
// endpoint (IDs are unique across kcp's shards): synced is whether every
// index has listed, found whether one has the logical cluster.
func (p *Provider) pathFromIndexes(id logicalcluster.Name) (path string, found, synced bool) {
	p.sharedMu.Lock()
	indexes := make([]*pathIndex, 0, len(p.shared))
	for _, c := range p.shared {
		if c.paths != nil {
			indexes = append(indexes, c.paths)
		}
	}
	p.sharedMu.Unlock()
	synced = true
	for _, x := range indexes {
		path, found, listed := x.path(id)
		if found {
			return path, true, true
		}
		synced = synced && listed
	}
	return "", false, synced
}

// workspacePath reads the kcp.io/path annotation of the workspace's
// LogicalCluster from kcp: for a logical cluster the path indexes lack.
func workspacePath(ctx context.Context, cl cluster.Cluster) (string, error) {
	mc, err := metadata.NewForConfigAndClient(cl.GetConfig(), cl.GetHTTPClient())
	if err != nil {
		return "", fmt.Errorf("building a metadata client: %w", err)
	}
	return findkcp.WorkspacePath(ctx, mc)
}

// newCluster builds the cluster of a logical cluster served at cfg's
// endpoint, as the provider's default (mcpcache.NewScopedCluster) does, but
// on the provider's own shared cache of that endpoint instead of base, and
// with the space's requests limited by a rate limiter of its own.
func (p *Provider) newCluster(cfg *rest.Config, id logicalcluster.Name, _ mcpcache.WildcardCache, scheme *runtime.Scheme,
	recorder mcrecorder.EventRecorderGetter) (*mcpcache.ScopedCluster, error) {
	shared, err := p.sharedCache(cfg)
	if err != nil {
		return nil, err
	}
	if p.cacheOptions.NewRateLimiter != nil && cfg.RateLimiter == nil && cfg.QPS >= 0 {
		cfg = rest.CopyConfig(cfg)
		cfg.RateLimiter = p.cacheOptions.NewRateLimiter()
	}
	return scopedCluster(cfg, id, shared, scheme, recorder)
}

// scopedCluster builds the cluster of logical cluster id on the shared
// cache of cfg's endpoint, whose informers it reads through their
// demultiplexers (demux.go).
func scopedCluster(cfg *rest.Config, id logicalcluster.Name, shared *sharedCache, scheme *runtime.Scheme,
	recorder mcrecorder.EventRecorderGetter) (*mcpcache.ScopedCluster, error) {
	cl, err := mcpcache.NewScopedCluster(cfg, id, shared.forCluster(id), scheme, recorder)
	if err != nil {
		return nil, fmt.Errorf("building the cluster of logical cluster %s: %w", id, err)
	}
	return cl, nil
}

// sharedCache returns the shared cache of the endpoint cfg reaches, built
// and started on first use. It runs until Start's context is done, though
// the endpoint may leave the slice before: endpoints are kcp's shards,
// which seldom go.
func (p *Provider) sharedCache(cfg *rest.Config) (*sharedCache, error) {
	p.sharedMu.Lock()
	defer p.sharedMu.Unlock()
	if c, ok := p.shared[cfg.Host]; ok {
		return c, nil
	}
	if p.ctx == nil {
		return nil, errors.New("the kcp provider is not started")
	}
	c, err := newSharedCache(cfg, p.sharedCacheOptions())
	if err != nil {
		return nil, fmt.Errorf("building the shared cache of endpoint %s: %w", cfg.Host, err)
	}
	p.shared[cfg.Host] = c
	ctx, log := p.ctx, p.log.WithValues("url", cfg.Host)
	go func() {
		if err := c.Start(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "The shared cache of an endpoint stopped")
		}
	}()
	if c.paths != nil {
		go c.paths.run(ctx)
	}
	return c, nil
}

// sharedCacheOptions are the options of every shared cache but its HTTP
// client and mapper: kcp's cluster-aware informers, narrowed by
// CacheOptions.Narrow, whose transform is followed by p.screen.
func (p *Provider) sharedCacheOptions() cache.Options {
	o := cache.Options{Scheme: p.scheme, NewInformer: newClusterAwareInformer}
	if p.cacheOptions.Narrow != nil {
		o = p.cacheOptions.Narrow(o)
	}
	narrowed := o.DefaultTransform
	o.DefaultTransform = func(obj any) (any, error) {
		if narrowed != nil {
			var err error
			if obj, err = narrowed(obj); err != nil {
				return obj, err
			}
		}
		return p.screen(obj), nil
	}
	return o
}

// newClusterAwareInformer makes kcp's informer, whose keys carry the
// logical cluster, with the indexes the scoped caches read
// (mcpcache.NewWildcardCache's NewInformer).
func newClusterAwareInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	inf := kcpinformers.NewSharedIndexInformer(lw, obj, resync, indexers)
	if err := inf.AddIndexers(toolscache.Indexers{
		kcpcache.ClusterIndexName:             mcpcache.ClusterIndexFunc,
		kcpcache.ClusterAndNamespaceIndexName: mcpcache.ClusterAndNamespaceIndexFunc,
	}); err != nil {
		utilruntime.HandleError(fmt.Errorf("unable to add cluster name indexers: %w", err))
	}
	return inf
}

// screen passes obj on, unless the shared caches refuse its logical
// cluster's objects: then it returns a stub of obj instead, which keeps
// obj's place in the store (its key) and nothing else.
func (p *Provider) screen(obj any) any {
	o, ok := obj.(client.Object)
	if !ok || !p.isRefused(logicalcluster.From(o)) {
		return obj
	}
	return stub(o)
}

// stub returns an object of obj's type holding only what keys and
// indexes it in a kcp store: its logical cluster, namespace and name (and
// its UID and resourceVersion).
func stub(obj client.Object) client.Object {
	s, ok := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(client.Object)
	if !ok {
		return obj
	}
	s.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	s.SetName(obj.GetName())
	s.SetNamespace(obj.GetNamespace())
	s.SetUID(obj.GetUID())
	s.SetResourceVersion(obj.GetResourceVersion())
	s.SetAnnotations(map[string]string{logicalcluster.AnnotationKey: logicalcluster.From(obj).String()})
	return s
}

// refuse makes the shared caches refuse the objects of a logical cluster.
func (p *Provider) refuse(id logicalcluster.Name) {
	p.refusedMu.Lock()
	defer p.refusedMu.Unlock()
	p.refused[id] = true
}

// isRefused reports whether the shared caches refuse a logical cluster's objects.
func (p *Provider) isRefused(id logicalcluster.Name) bool {
	p.refusedMu.RLock()
	defer p.refusedMu.RUnlock()
	return p.refused[id]
}

// space returns the cluster of logical cluster id, whose caches the
// provider shares, as the stager engages it.
func (p *Provider) space(id multicluster.ClusterName, cl cluster.Cluster) *SpaceCluster {
	name := logicalcluster.Name(id)
	return &SpaceCluster{
		Cluster:   cl,
		clusterID: name,
		refuse:    func() { p.refuse(name) },
		refused:   func() bool { return p.isRefused(name) },
	}
}

// ErrCacheRefused is returned by the reads of a space whose objects the
// shared caches refuse: what they hold of it are stubs.
var ErrCacheRefused = errors.New("the caches shared among kcp workspaces refuse this space's objects")

// SpaceCluster is the cluster of a kcp space, whose caches the provider shares
// among the spaces of its endpoint. Once RefuseCache is called, the shared
// caches keep stubs of the space's objects instead of them, for as long as
// the provider runs, and the space's client and caches refuse every read
// (ErrCacheRefused): a space past its bound is served, if at all, from
// caches of its own. The rest is the provider's cluster.
type SpaceCluster struct {
	cluster.Cluster
	clusterID logicalcluster.Name
	refuse    func()
	refused   func() bool

	readerOnce sync.Once
	reader     client.Reader
}

// RefuseCache makes the shared caches refuse the space's objects from now on.
func (s *SpaceCluster) RefuseCache() { s.refuse() }

// CacheRefused reports whether the shared caches refuse the space's objects.
func (s *SpaceCluster) CacheRefused() bool { return s.refused() }

// ProbeEndpoint names the virtual workspace endpoint serving the space:
// its URL without the space's /clusters/<id>. The stager probes an endpoint
// once for all its spaces (spaces.SharedEndpoint).
func (s *SpaceCluster) ProbeEndpoint() string {
	return strings.TrimSuffix(s.GetConfig().Host, s.clusterID.Path().RequestPath())
}

// LogicalCluster returns the ID of the space's logical cluster.
func (s *SpaceCluster) LogicalCluster() logicalcluster.Name { return s.clusterID }

// GetClient returns the space's client, whose reads fail once its objects are refused.
func (s *SpaceCluster) GetClient() client.Client {
	return &refusingClient{Client: s.Cluster.GetClient(), refused: s.refused}
}

// GetCache returns the space's cache, whose reads fail once its objects are refused.
func (s *SpaceCluster) GetCache() cache.Cache {
	return &refusingCache{Cache: s.Cluster.GetCache(), refused: s.refused}
}

// GetAPIReader returns a reader of the space's API server, uncached: the
// provider's reads from the shared cache, where a BindingPolicy the stager
// did not generate is not (stagedbindingpolicy.NarrowCache), though the
// reconciler reads one so when it holds a name the stager wants.
func (s *SpaceCluster) GetAPIReader() client.Reader {
	s.readerOnce.Do(func() {
		c, err := client.New(s.GetConfig(), client.Options{HTTPClient: s.GetHTTPClient(), Scheme: s.GetScheme(), Mapper: s.GetRESTMapper()})
		if err != nil {
			s.reader = failingReader{fmt.Errorf("building the uncached reader of logical cluster %s: %w", s.clusterID, err)}
			return
		}
		s.reader = c
	})
	return s.reader
}

// failingReader fails every read with err.
type failingReader struct{ err error }

func (r failingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return r.err
}

func (r failingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return r.err
}

// refusingClient is a client whose reads fail once refused says so.
type refusingClient struct {
	client.Client
	refused func() bool
}

func (c *refusingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if c.refused() {
		return ErrCacheRefused
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *refusingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if c.refused() {
		return ErrCacheRefused
	}
	return c.Client.List(ctx, list, opts...)
}

// refusingCache is a cache whose reads fail once refused says so.
type refusingCache struct {
	cache.Cache
	refused func() bool
}

func (c *refusingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if c.refused() {
		return ErrCacheRefused
	}
	return c.Cache.Get(ctx, key, obj, opts...)
}

func (c *refusingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if c.refused() {
		return ErrCacheRefused
	}
	return c.Cache.List(ctx, list, opts...)
}

// sharedCache is a cache of the stager's kinds on an endpoint's wildcard
// path (/clusters/*), shared by the logical clusters the endpoint serves.
//
// Forked from github.com/kcp-dev/multicluster-provider v0.8.0
// pkg/cache/wildcard.go (NewWildcardCache, GetSharedInformer, IndexField),
// because NewWildcardCache replaces the options' NewInformer, where the
// BindingPolicies are selected (stagedbindingpolicy.NarrowCache). Its List
// and Get across logical clusters are not forked: the scoped caches read
// through GetSharedInformer alone.
type sharedCache struct {
	cache.Cache
	scheme *runtime.Scheme
	mapper apimeta.RESTMapper
	// paths are the workspace paths of the endpoint's logical clusters;
	// nil in tests.
	paths *pathIndex

	indexMu sync.Mutex
	indexed map[string]bool

	demuxMu sync.Mutex
	// demuxes are the demultiplexers of the informers, by informer.
	demuxes map[cache.Informer]*demux
}

var _ mcpcache.WildcardCache = &sharedCache{}

// newSharedCache returns the shared cache of the endpoint cfg reaches, with
// opts (whose NewInformer must make cluster-aware informers).
func newSharedCache(cfg *rest.Config, opts cache.Options) (*sharedCache, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Host = strings.TrimSuffix(cfg.Host, "/") + "/clusters/*"
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the HTTP client: %w", err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building the REST mapper: %w", err)
	}
	opts.HTTPClient, opts.Mapper = httpClient, mapper
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("building the cache: %w", err)
	}
	paths, err := newPathIndex(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	shared := newSharedCacheOf(c, opts.Scheme, mapper)
	shared.paths = paths
	return shared, nil
}

// newSharedCacheOf returns the shared cache made of c.
func newSharedCacheOf(c cache.Cache, scheme *runtime.Scheme, mapper apimeta.RESTMapper) *sharedCache {
	return &sharedCache{Cache: c, scheme: scheme, mapper: mapper, indexed: map[string]bool{}, demuxes: map[cache.Informer]*demux{}}
}

// GetSharedInformer returns the informer of obj's kind, with its kind and scope.
func (c *sharedCache) GetSharedInformer(obj runtime.Object) (toolscache.SharedIndexInformer, schema.GroupVersionKind, apimeta.RESTScopeName, error) {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return nil, gvk, "", fmt.Errorf("failed to get GVK for object: %w", err)
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, gvk, "", fmt.Errorf("failed to get REST mapping: %w", err)
	}
	var empty client.Object
	switch obj.(type) {
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		empty = &metav1.PartialObjectMetadata{}
		empty.GetObjectKind().SetGroupVersionKind(gvk)
	default:
		o, err := c.scheme.New(gvk)
		if err != nil {
			return nil, gvk, "", fmt.Errorf("failed to create new object for GVK: %w", err)
		}
		var ok bool
		if empty, ok = o.(client.Object); !ok {
			return nil, gvk, "", errors.New("runtime.Object returned from scheme is not a client.Object")
		}
	}
	inf, err := c.GetInformer(context.TODO(), empty)
	if err != nil {
		return nil, gvk, "", fmt.Errorf("failed to get informer: %w", err)
	}
	sii, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return nil, gvk, "", errors.New("informer returned by cache is not a SharedIndexInformer")
	}
	return sii, gvk, mapping.Scope.Name(), nil
}

// IndexField adds an index for obj's kind, under keys prefixed with the
// logical cluster (and "*" for all of them), once per kind and field.
func (c *sharedCache) IndexField(ctx context.Context, obj client.Object, field string, extractValue client.IndexerFunc) error {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return fmt.Errorf("failed to get GVK for object: %w", err)
	}
	key := gvk.String() + "|" + field
	c.indexMu.Lock()
	if c.indexed[key] {
		c.indexMu.Unlock()
		return nil
	}
	c.indexed[key] = true
	c.indexMu.Unlock()
	if err := c.Cache.IndexField(ctx, obj, field, func(obj client.Object) []string {
		keys := extractValue(obj)
		withCluster := make([]string, len(keys)*2)
		for i, key := range keys {
			withCluster[i] = fmt.Sprintf("%s/%s", logicalcluster.From(obj), key)
			withCluster[i+len(keys)] = "*/" + key
		}
		return withCluster
	}); err != nil {
		return fmt.Errorf("indexing %s by %s: %w", gvk.Kind, field, err)
	}
	return nil
}
