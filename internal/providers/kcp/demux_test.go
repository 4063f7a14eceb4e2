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
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	mcpcache "github.com/kcp-dev/multicluster-provider/pkg/cache"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// countingInformer is a shared informer counting the handlers added to it.
type countingInformer struct {
	toolscache.SharedIndexInformer
	added atomic.Int64
}

func (i *countingInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	i.added.Add(1)
	return i.SharedIndexInformer.AddEventHandler(h)
}

func (i *countingInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, p time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	i.added.Add(1)
	return i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(h, p)
}

func (i *countingInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, o toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	i.added.Add(1)
	return i.SharedIndexInformer.AddEventHandlerWithOptions(h, o)
}

// informerCache is a cache.Cache serving client-go's kcp-aware shared
// informers fed by fake sources, one per kind: what a shared cache's
// scoped clusters read of it.
type informerCache struct {
	cache.Cache
	informers map[reflect.Type]*countingInformer
	sources   map[reflect.Type]*fcache.FakeControllerSource
}

// newInformerCache returns a cache of the kinds of objs, whose informers
// run until t ends and have synced.
func newInformerCache(t fataler, objs ...client.Object) *informerCache {
	c := &informerCache{informers: map[reflect.Type]*countingInformer{}, sources: map[reflect.Type]*fcache.FakeControllerSource{}}
	stop := make(chan struct{})
	t.Cleanup(func() {
		close(stop)
		for _, source := range c.sources {
			source.Shutdown()
		}
	})
	for _, obj := range objs {
		source := fcache.NewFakeControllerSource()
		inf := &countingInformer{SharedIndexInformer: newClusterAwareInformer(source, obj, 0, toolscache.Indexers{})}
		go inf.Run(stop)
		c.informers[reflect.TypeOf(obj)] = inf
		c.sources[reflect.TypeOf(obj)] = source
	}
	for _, inf := range c.informers {
		if !toolscache.WaitForCacheSync(stop, inf.HasSynced) {
			t.Fatal("the shared informers did not sync")
		}
	}
	return c
}

func (c *informerCache) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	inf, ok := c.informers[reflect.TypeOf(obj)]
	if !ok {
		return nil, fmt.Errorf("no informer of %T", obj)
	}
	return inf, nil
}

func (c *informerCache) WaitForCacheSync(context.Context) bool { return true }

// scopedPath builds the cluster of a logical cluster on a shared cache:
// scopedCluster, or a path to compare it with.
type scopedPath func(id logicalcluster.Name, shared *sharedCache) (cache.Cache, error)

// demuxPath is the provider's: scopedCluster.
func demuxPath(id logicalcluster.Name, shared *sharedCache) (cache.Cache, error) {
	cl, err := scopedCluster(&rest.Config{Host: "http://127.0.0.1:1"}, id, shared, clientgoscheme.Scheme, nil)
	if err != nil {
		return nil, err
	}
	return cl.GetCache(), nil
}

// listenerPath is multicluster-provider's own, with a listener of the
// shared informer per handler.
func listenerPath(id logicalcluster.Name, shared *sharedCache) (cache.Cache, error) {
	cl, err := mcpcache.NewScopedCluster(&rest.Config{Host: "http://127.0.0.1:1"}, id, shared, clientgoscheme.Scheme, nil)
	if err != nil {
		return nil, err
	}
	return cl.GetCache(), nil
}

// configMap returns a ConfigMap of a logical cluster at a resourceVersion.
func configMap(cluster logicalcluster.Name, name string, rv int) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, UID: types.UID(cluster.String() + "/" + name),
		ResourceVersion: strconv.Itoa(rv),
		Annotations:     map[string]string{logicalcluster.AnnotationKey: cluster.String()},
	}}
}

// eventLog records the events a handler is given, as "add c/name v",
// "update c/name v→v" and "delete c/name v".
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func describe(obj any) string {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return "tombstone " + describe(t.Obj)
	}
	o := obj.(client.Object)
	return fmt.Sprintf("%s/%s %s", logicalcluster.From(o), o.GetName(), o.GetResourceVersion())
}

func (l *eventLog) record(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

func (l *eventLog) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { l.record("add " + describe(obj)) },
		UpdateFunc: func(oldObj, newObj any) {
			l.record("update " + describe(oldObj) + "→" + newObj.(client.Object).GetResourceVersion())
		},
		DeleteFunc: func(obj any) { l.record("delete " + describe(obj)) },
	}
}

// fataler is what the helpers need of a testing.T or a rapid.T.
type fataler interface {
	Cleanup(func())
	Fatal(...any)
	Fatalf(string, ...any)
}

// waitForT waits for check to pass, and fails t with its last error if it
// does not within a generous while.
func waitForT(t fataler, check func() error) {
	var last error
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		last = check()
		return last == nil, nil
	}); err != nil {
		t.Fatalf("%v", last)
	}
}

// TestDemuxDeliversEachClusterItsOwnEvents checks, against a model, that
// each handler registered through a logical cluster's scoped cache gets
// the cluster's objects at registration as adds, then the cluster's
// events until it is removed, and nothing of other clusters: random
// sequences of puts and deletes in three clusters (objects of the same
// names in each), registrations and removals, on client-go's shared
// informer. Before a registration or removal, the informer and the
// handlers are let catch up with the source (a sentinel in a probe
// cluster), which is what makes the expected events exact.
func TestDemuxDeliversEachClusterItsOwnEvents(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		checkDelivery(rt, demuxPath)
	})
}

// registered is a handler of the model: its cluster, log, what it should
// have got, and its registration while it is one.
type registered struct {
	cluster  logicalcluster.Name
	informer cache.Informer
	log      *eventLog
	want     []string
	reg      toolscache.ResourceEventHandlerRegistration
	// inFlight handlers were registered with events in flight: their
	// events need only make a consistent history ending at the model's.
	inFlight bool
}

// history applies a handler's events to its view of the cluster's objects
// (name to resourceVersion), failing on an event that contradicts it: an
// add of an object it holds, an update or delete of one it does not.
func history(events []string) (map[string]string, error) {
	view := map[string]string{}
	for _, e := range events {
		var verb, name, version string
		if _, err := fmt.Sscan(e, &verb, &name, &version); err != nil {
			return nil, fmt.Errorf("parsing %q: %w", e, err)
		}
		held, ok := view[name]
		switch verb {
		case "add":
			if ok {
				return nil, fmt.Errorf("%q of an object held at %s", e, held)
			}
			view[name] = version
		case "update":
			from, to, _ := strings.Cut(version, "→")
			if !ok || held != from {
				return nil, fmt.Errorf("%q of an object held at %q", e, held)
			}
			view[name] = to
		case "delete":
			if !ok {
				return nil, fmt.Errorf("%q of an object not held", e)
			}
			delete(view, name)
		}
	}
	return view, nil
}

// checkDelivery runs one random sequence against path (see
// TestDemuxDeliversEachClusterItsOwnEvents).
func checkDelivery(rt *rapid.T, path scopedPath) {
	clusters := []logicalcluster.Name{"a", "b", "c"}
	names := []string{"x", "y"}
	shared := newSharedCacheOf(newInformerCache(rt, &corev1.ConfigMap{}), nil, nil)
	ic := shared.Cache.(*informerCache)
	source := ic.sources[reflect.TypeOf(&corev1.ConfigMap{})]
	store := ic.informers[reflect.TypeOf(&corev1.ConfigMap{})].GetStore()

	informerOf := func(id logicalcluster.Name) cache.Informer {
		c, err := path(id, shared)
		if err != nil {
			rt.Fatalf("building the cluster of %s: %v", id, err)
		}
		inf, err := c.GetInformer(context.Background(), &corev1.ConfigMap{})
		if err != nil {
			rt.Fatalf("getting the informer of %s: %v", id, err)
		}
		return inf
	}
	// The probe cluster's handler sees a sentinel once everything before it is dispatched.
	probe := &eventLog{}
	if _, err := informerOf("probe").AddEventHandler(probe.handler()); err != nil {
		rt.Fatalf("registering the probe: %v", err)
	}
	sentinels := 0
	rv := 0
	model := map[logicalcluster.Name]map[string]int{}
	var handlers []*registered

	settle := func() {
		sentinels++
		rv++
		source.Add(configMap("probe", "s"+strconv.Itoa(sentinels), rv))
		want := "add probe/s" + strconv.Itoa(sentinels) + " " + strconv.Itoa(rv)
		waitForT(rt, func() error {
			if !slices.Contains(probe.got(), want) {
				return fmt.Errorf("the probe did not get %q", want)
			}
			return nil
		})
		// The listener path replays from the store, which must have caught up too.
		waitForT(rt, func() error {
			n := 0
			for _, objs := range model {
				n += len(objs)
			}
			if got := len(store.List()) - sentinels; got != n {
				return fmt.Errorf("the store holds %d objects, the model %d", got, n)
			}
			return nil
		})
		for i, h := range handlers {
			waitForT(rt, func() error {
				if h.inFlight {
					return checkHistory(h, model)
				}
				if got := h.log.got(); !slices.Equal(got, h.want) {
					return fmt.Errorf("handler %d of %s got\n%q\nwant\n%q", i, h.cluster, got, h.want)
				}
				return nil
			})
		}
	}
	expect := func(cluster logicalcluster.Name, event string) {
		for _, h := range handlers {
			if h.reg != nil && h.cluster == cluster && !h.inFlight {
				h.want = append(h.want, event)
			}
		}
	}

	rt.Repeat(map[string]func(*rapid.T){
		"put": func(rt *rapid.T) {
			c := rapid.SampledFrom(clusters).Draw(rt, "cluster")
			n := rapid.SampledFrom(names).Draw(rt, "name")
			rv++
			obj := configMap(c, n, rv)
			if model[c] == nil {
				model[c] = map[string]int{}
			}
			if old, ok := model[c][n]; ok {
				source.Modify(obj)
				expect(c, fmt.Sprintf("update %s/%s %d→%d", c, n, old, rv))
			} else {
				source.Add(obj)
				expect(c, fmt.Sprintf("add %s/%s %d", c, n, rv))
			}
			model[c][n] = rv
		},
		"delete": func(rt *rapid.T) {
			c := rapid.SampledFrom(clusters).Draw(rt, "cluster")
			n := rapid.SampledFrom(names).Draw(rt, "name")
			if _, ok := model[c][n]; !ok {
				rt.Skip("nothing to delete")
			}
			rv++
			source.Delete(configMap(c, n, rv))
			expect(c, fmt.Sprintf("delete %s/%s %d", c, n, rv))
			delete(model[c], n)
		},
		"register in flight": func(rt *rapid.T) {
			c := rapid.SampledFrom(clusters).Draw(rt, "cluster")
			h := &registered{cluster: c, informer: informerOf(c), log: &eventLog{}, inFlight: true}
			reg, err := h.informer.AddEventHandler(h.log.handler())
			if err != nil {
				rt.Fatalf("registering a handler of %s: %v", c, err)
			}
			h.reg = reg
			handlers = append(handlers, h)
		},
		"register": func(rt *rapid.T) {
			c := rapid.SampledFrom(clusters).Draw(rt, "cluster")
			settle()
			h := &registered{cluster: c, informer: informerOf(c), log: &eventLog{}}
			for _, n := range names {
				if v, ok := model[c][n]; ok {
					h.want = append(h.want, fmt.Sprintf("add %s/%s %d", c, n, v))
				}
			}
			reg, err := h.informer.AddEventHandler(h.log.handler())
			if err != nil {
				rt.Fatalf("registering a handler of %s: %v", c, err)
			}
			h.reg = reg
			handlers = append(handlers, h)
			// The replay's order is the store's: compare it as a set.
			waitForT(rt, func() error {
				got := h.log.got()
				if len(got) < len(h.want) {
					return fmt.Errorf("the new handler of %s got %q, want %q", c, got, h.want)
				}
				replay := slices.Clone(got[:len(h.want)])
				slices.Sort(replay)
				if !slices.Equal(replay, h.want) {
					return fmt.Errorf("the new handler of %s was replayed %q, want %q", c, got, h.want)
				}
				h.want = got[:len(h.want)]
				return nil
			})
			waitForT(rt, func() error {
				if !h.reg.HasSynced() {
					return fmt.Errorf("the handler of %s has not synced once replayed", c)
				}
				return nil
			})
		},
		"remove": func(rt *rapid.T) {
			var live []*registered
			for _, h := range handlers {
				if h.reg != nil {
					live = append(live, h)
				}
			}
			if len(live) == 0 {
				rt.Skip("no handler to remove")
			}
			h := rapid.SampledFrom(live).Draw(rt, "handler")
			settle()
			if err := h.informer.RemoveEventHandler(h.reg); err != nil {
				rt.Fatalf("removing a handler of %s: %v", h.cluster, err)
			}
			h.reg = nil
		},
	})
	settle()
}

// checkHistory checks that a handler registered with events in flight
// got a consistent history of its cluster, which ends at the model's
// objects while it is registered.
func checkHistory(h *registered, model map[logicalcluster.Name]map[string]int) error {
	view, err := history(h.log.got())
	if err != nil {
		return fmt.Errorf("the handler of %s registered in flight: %w", h.cluster, err)
	}
	if h.reg == nil {
		return nil
	}
	want := map[string]string{}
	for n, v := range model[h.cluster] {
		want[h.cluster.String()+"/"+n] = strconv.Itoa(v)
	}
	if !maps.Equal(view, want) {
		return fmt.Errorf("the handler of %s registered in flight holds %v, want %v", h.cluster, view, want)
	}
	return nil
}

// TestDemuxDeliversTombstones checks that a delete the informer learns of
// on a relist, as a tombstone, reaches its cluster's handlers alone, and
// that the cluster's next handler is not replayed the object.
func TestDemuxDeliversTombstones(t *testing.T) {
	shared := newSharedCacheOf(newInformerCache(t, &corev1.ConfigMap{}), nil, nil)
	logs := map[logicalcluster.Name]*eventLog{}
	var inf cache.Informer
	for _, id := range []logicalcluster.Name{"a", "b", "a"} {
		c, err := demuxPath(id, shared)
		if err != nil {
			t.Fatal(err)
		}
		if inf, err = c.GetInformer(context.Background(), &corev1.ConfigMap{}); err != nil {
			t.Fatal(err)
		}
		if logs[id] != nil {
			break
		}
		logs[id] = &eventLog{}
		if _, err := inf.AddEventHandler(logs[id].handler()); err != nil {
			t.Fatal(err)
		}
	}
	// The informer's events, as its listener would deliver them.
	d := shared.demuxOf(shared.Cache.(*informerCache).informers[reflect.TypeOf(&corev1.ConfigMap{})])
	demuxHandler{d}.OnAdd(configMap("a", "x", 1), false)
	demuxHandler{d}.OnAdd(configMap("b", "x", 2), false)
	demuxHandler{d}.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "a|ns/x", Obj: configMap("a", "x", 1)})
	if got, want := logs["a"].got(), []string{"add a/x 1", "delete tombstone a/x 1"}; !slices.Equal(got, want) {
		t.Errorf("a's handler got %q, want %q", got, want)
	}
	if got, want := logs["b"].got(), []string{"add b/x 2"}; !slices.Equal(got, want) {
		t.Errorf("b's handler got %q, want %q", got, want)
	}
	next := &eventLog{}
	if _, err := inf.AddEventHandler(next.handler()); err != nil {
		t.Fatal(err)
	}
	if got := next.got(); len(got) != 0 {
		t.Errorf("a's next handler was replayed %q, want nothing", got)
	}
}

// TestSharedInformerHoldsOneHandlerPerKind checks that 50 logical
// clusters' handlers of two kinds add one handler to each kind's shared
// informer, not one each.
func TestSharedInformerHoldsOneHandlerPerKind(t *testing.T) {
	kinds := []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}}
	shared := newSharedCacheOf(newInformerCache(t, kinds...), nil, nil)
	for i := range 50 {
		c, err := demuxPath(logicalcluster.Name("c"+strconv.Itoa(i)), shared)
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range kinds {
			inf, err := c.GetInformer(context.Background(), kind)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for kind, inf := range shared.Cache.(*informerCache).informers {
		if n := inf.added.Load(); n != 1 {
			t.Errorf("the shared informer of %v got %d handlers, want 1", kind, n)
		}
	}
}

// handlersPerSpace is how many handlers a served space registers on the
// shared informers (issue 61): 5 controller watches, 5 cache meters and a
// wave reporter's.
const handlersPerSpace = 11

// BenchmarkEventFanOut delivers updates of S spaces' objects, round robin,
// to S spaces of handlersPerSpace handlers each on one shared informer:
// through a listener of the shared informer per handler
// (multicluster-provider's path) and through the demux (scopedCluster's).
// ns/op is the time per event, from the source's change to its last
// handler.
func BenchmarkEventFanOut(b *testing.B) {
	paths := []struct {
		name string
		path scopedPath
	}{{"listeners", listenerPath}, {"demux", demuxPath}}
	for _, spaces := range []int{10, 100, 300} {
		for _, p := range paths {
			b.Run(fmt.Sprintf("S=%d/%s", spaces, p.name), func(b *testing.B) {
				benchmarkFanOut(b, p.path, spaces)
			})
		}
	}
}

// benchmarkFanOut is BenchmarkEventFanOut's run of a path with a number of spaces.
func benchmarkFanOut(b *testing.B, path scopedPath, spaces int) {
	shared := newSharedCacheOf(newInformerCache(b, &corev1.ConfigMap{}), nil, nil)
	source := shared.Cache.(*informerCache).sources[reflect.TypeOf(&corev1.ConfigMap{})]
	rv := 0
	for s := range spaces {
		rv++
		source.Add(configMap(logicalcluster.Name("c"+strconv.Itoa(s)), "x", rv))
	}
	var updates atomic.Int64
	target := int64(-1)
	done := make(chan struct{})
	var doneOnce sync.Once
	handler := toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(any, any) {
		if updates.Add(1) == atomic.LoadInt64(&target) {
			doneOnce.Do(func() { close(done) })
		}
	}}
	var regs []toolscache.ResourceEventHandlerRegistration
	for s := range spaces {
		c, err := path(logicalcluster.Name("c"+strconv.Itoa(s)), shared)
		if err != nil {
			b.Fatal(err)
		}
		inf, err := c.GetInformer(context.Background(), &corev1.ConfigMap{})
		if err != nil {
			b.Fatal(err)
		}
		for range handlersPerSpace {
			reg, err := inf.AddEventHandler(handler)
			if err != nil {
				b.Fatal(err)
			}
			regs = append(regs, reg)
		}
	}
	for _, reg := range regs {
		if !toolscache.WaitForCacheSync(nil, reg.HasSynced) {
			b.Fatal("a handler did not sync")
		}
	}
	atomic.StoreInt64(&target, int64(b.N)*handlersPerSpace)
	b.ResetTimer()
	for i := range b.N {
		rv++
		source.Modify(configMap(logicalcluster.Name("c"+strconv.Itoa(i%spaces)), "x", rv))
	}
	<-done
}
