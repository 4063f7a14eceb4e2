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
	"slices"
	"sync"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The demultiplexer of this file is why a replica's cost of an event does
// not grow with the spaces it serves (issue 61).
//
// multicluster-provider's scoped informers (v0.8.0, pkg/cache/cache.go)
// register every handler of every space as a listener of its own on the
// endpoint's wildcard informer, which filters by logical cluster inside
// the callback: each event of every workspace went through every space's
// ~11 listeners (a goroutine and channel hops each) before being dropped,
// and each new listener was replayed every workspace's objects. Here the
// wildcard informer of a kind holds one handler, a demux, which hands each
// event to the handlers of its object's logical cluster alone, and replays
// a new handler its own cluster's objects alone.
//
// The demux replays from the objects it has itself dispatched, not from the
// informer's store: client-go updates the store before its listeners are
// called, so the store runs ahead of the demux, and a replay from it would
// deliver some objects twice (their add is still queued) or miss a delete.
// Handlers are called under the demux's lock, in its listener's goroutine:
// they must not block, as controller-runtime's (which enqueue) and the
// stager's meters (which add up sizes) do not, nor register handlers.

// objectKey is an object's place in its logical cluster.
type objectKey struct{ namespace, name string }

// demux is the one handler of a kind's wildcard informer, dispatching
// every event to the handlers registered for its logical cluster.
type demux struct {
	informer cache.Informer

	mu sync.Mutex
	// real is the demux's registration on informer, made on first use.
	real toolscache.ResourceEventHandlerRegistration
	// objects are the objects dispatched and not deleted since, by logical cluster.
	objects map[logicalcluster.Name]map[objectKey]any
	// handlers are the registrations of each logical cluster.
	handlers map[logicalcluster.Name][]*demuxRegistration
}

// demuxRegistration is a handler of one logical cluster's events.
type demuxRegistration struct {
	// ResourceEventHandlerRegistration is the demux's own on the shared
	// informer: its replay was delivered before the registration was
	// returned, so it has synced once the demux has.
	toolscache.ResourceEventHandlerRegistration
	cluster logicalcluster.Name
	handler toolscache.ResourceEventHandler
}

// newDemux returns the demux of informer, which has no handler until the
// first registration.
func newDemux(informer cache.Informer) *demux {
	return &demux{
		informer: informer,
		objects:  map[logicalcluster.Name]map[objectKey]any{},
		handlers: map[logicalcluster.Name][]*demuxRegistration{},
	}
}

// add registers handler for cluster's events, after replaying it the
// cluster's objects as adds.
func (d *demux) add(cluster logicalcluster.Name, handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.real == nil {
		// client-go queues the store's replay to the demux without calling it.
		real, err := d.informer.AddEventHandler(demuxHandler{d})
		if err != nil {
			return nil, fmt.Errorf("adding the demultiplexer to the shared informer: %w", err)
		}
		d.real = real
	}
	for _, obj := range d.objects[cluster] {
		handler.OnAdd(obj, true)
	}
	r := &demuxRegistration{ResourceEventHandlerRegistration: d.real, cluster: cluster, handler: handler}
	d.handlers[cluster] = append(d.handlers[cluster], r)
	return r, nil
}

// remove removes a registration; it reports false if r is not the demux's.
func (d *demux) remove(handle toolscache.ResourceEventHandlerRegistration) bool {
	r, ok := handle.(*demuxRegistration)
	if !ok {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	rs := slices.DeleteFunc(d.handlers[r.cluster], func(other *demuxRegistration) bool { return other == r })
	if len(rs) == 0 {
		delete(d.handlers, r.cluster)
	} else {
		d.handlers[r.cluster] = rs
	}
	return true
}

// locate returns the logical cluster and key of obj, or of the object a
// tombstone stands for.
func locate(obj any) (logicalcluster.Name, objectKey, bool) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	m, err := apimeta.Accessor(obj)
	if err != nil {
		return "", objectKey{}, false
	}
	return logicalcluster.From(m), objectKey{m.GetNamespace(), m.GetName()}, true
}

// demuxHandler is the demux as the shared informer's handler.
type demuxHandler struct{ d *demux }

// OnAdd records obj and hands it to its cluster's handlers.
func (h demuxHandler) OnAdd(obj any, isInInitialList bool) {
	cluster, key, ok := locate(obj)
	if !ok {
		return
	}
	d := h.d
	d.mu.Lock()
	defer d.mu.Unlock()
	d.store(cluster, key, obj)
	for _, r := range d.handlers[cluster] {
		r.handler.OnAdd(obj, isInInitialList)
	}
}

// OnUpdate records newObj and hands the update to its cluster's handlers.
func (h demuxHandler) OnUpdate(oldObj, newObj any) {
	cluster, key, ok := locate(newObj)
	if !ok {
		return
	}
	d := h.d
	d.mu.Lock()
	defer d.mu.Unlock()
	d.store(cluster, key, newObj)
	for _, r := range d.handlers[cluster] {
		r.handler.OnUpdate(oldObj, newObj)
	}
}

// OnDelete forgets obj (an object or a tombstone) and hands it to its
// cluster's handlers.
func (h demuxHandler) OnDelete(obj any) {
	cluster, key, ok := locate(obj)
	if !ok {
		return
	}
	d := h.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if objs := d.objects[cluster]; objs != nil {
		delete(objs, key)
		if len(objs) == 0 {
			delete(d.objects, cluster)
		}
	}
	for _, r := range d.handlers[cluster] {
		r.handler.OnDelete(obj)
	}
}

// store records obj as cluster's object under key. Callers hold d.mu.
func (d *demux) store(cluster logicalcluster.Name, key objectKey, obj any) {
	objs := d.objects[cluster]
	if objs == nil {
		objs = map[objectKey]any{}
		d.objects[cluster] = objs
	}
	objs[key] = obj
}

// demuxInformer is a shared informer as one logical cluster's scoped cache
// sees it: its handlers go through the kind's demux; the rest is the
// shared informer's.
type demuxInformer struct {
	cache.Informer
	demux   *demux
	cluster logicalcluster.Name
}

// AddEventHandler registers handler for the cluster's events.
func (i *demuxInformer) AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.demux.add(i.cluster, handler)
}

// AddEventHandlerWithResyncPeriod registers handler for the cluster's
// events; the resync period is the shared informer's.
func (i *demuxInformer) AddEventHandlerWithResyncPeriod(handler toolscache.ResourceEventHandler, _ time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.demux.add(i.cluster, handler)
}

// AddEventHandlerWithOptions registers handler for the cluster's events;
// the resync period and logger are the shared informer's.
func (i *demuxInformer) AddEventHandlerWithOptions(handler toolscache.ResourceEventHandler, _ toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.demux.add(i.cluster, handler)
}

// RemoveEventHandler removes a registration of the demux, or else one of
// the shared informer.
func (i *demuxInformer) RemoveEventHandler(handle toolscache.ResourceEventHandlerRegistration) error {
	if i.demux.remove(handle) {
		return nil
	}
	if err := i.Informer.RemoveEventHandler(handle); err != nil {
		return fmt.Errorf("removing an event handler from the shared informer: %w", err)
	}
	return nil
}

// clusterCache is the shared cache as the scoped cache of one logical
// cluster reads it (mcpcache.NewScopedCluster's base): its informers are
// demuxInformers; the rest is the shared cache's.
type clusterCache struct {
	*sharedCache
	cluster logicalcluster.Name
}

// GetInformer returns the cluster's view of the shared informer of obj's kind.
func (c *clusterCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	inf, err := c.sharedCache.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, fmt.Errorf("getting the shared informer of %T: %w", obj, err)
	}
	return c.demuxed(inf), nil
}

// GetInformerForKind returns the cluster's view of the shared informer of gvk.
func (c *clusterCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	inf, err := c.sharedCache.GetInformerForKind(ctx, gvk, opts...)
	if err != nil {
		return nil, fmt.Errorf("getting the shared informer of %s: %w", gvk, err)
	}
	return c.demuxed(inf), nil
}

// demuxed returns the cluster's view of inf through inf's demux.
func (c *clusterCache) demuxed(inf cache.Informer) cache.Informer {
	return &demuxInformer{Informer: inf, demux: c.demuxOf(inf), cluster: c.cluster}
}

// demuxOf returns the demux of a shared informer, made on first use.
func (c *sharedCache) demuxOf(inf cache.Informer) *demux {
	c.demuxMu.Lock()
	defer c.demuxMu.Unlock()
	d, ok := c.demuxes[inf]
	if !ok {
		d = newDemux(inf)
		c.demuxes[inf] = d
	}
	return d
}

// forCluster returns the shared cache as logical cluster id's scoped cache
// reads it.
func (c *sharedCache) forCluster(id logicalcluster.Name) *clusterCache {
	return &clusterCache{sharedCache: c, cluster: id}
}
