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
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/controller/spaces"
	"github.com/kubestellar/workload-stager/internal/controller/stagedbindingpolicy"
)

// recordingAware records the names it is asked to engage.
type recordingAware struct {
	mu    sync.Mutex
	names []multicluster.ClusterName
	err   error
}

func (a *recordingAware) Engage(_ context.Context, name multicluster.ClusterName, _ cluster.Cluster) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.names = append(a.names, name)
	return a.err
}

func (a *recordingAware) engaged() []multicluster.ClusterName {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]multicluster.ClusterName(nil), a.names...)
}

// fakeCluster is a cluster.Cluster the fake path reader recognizes.
type fakeCluster struct {
	cluster.Cluster
	id string
}

// waitFor polls a condition for up to 5s.
func waitFor(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestNaming checks the names logical clusters are engaged under, and the
// name-to-ID map that Get uses, with the workspace paths given.
func TestNaming(t *testing.T) {
	type engagement struct {
		id multicluster.ClusterName
		// path is what the LogicalCluster says, after failures failed reads,
		// refused unless slow (then timed out).
		path     string
		failures int
		slow     bool
		// indexed is whether the path index has the LogicalCluster (then
		// path is its path, and the space must be named without a read).
		indexed bool
		// want is the name the space must be engaged under.
		want multicluster.ClusterName
	}
	tests := []struct {
		name        string
		engagements []engagement
		engageErr   error
		// unlisted is whether the path index never lists.
		unlisted bool
		// wantIDs is the name-to-ID map after the engagements.
		wantIDs map[multicluster.ClusterName]multicluster.ClusterName
	}{
		{name: "named after the workspace path",
			engagements: []engagement{{id: "2l6j50mk367awj76", path: "root:wds1", want: "root:wds1"}},
			wantIDs:     map[multicluster.ClusterName]multicluster.ClusterName{"root:wds1": "2l6j50mk367awj76"}},
		{name: "two workspaces",
			engagements: []engagement{
				{id: "aaaa", path: "root:wds1", want: "root:wds1"},
				{id: "bbbb", path: "root:team:wds2", want: "root:team:wds2"}},
			wantIDs: map[multicluster.ClusterName]multicluster.ClusterName{"root:wds1": "aaaa", "root:team:wds2": "bbbb"}},
		{name: "the claim takes effect after the binding is ready: the path, once readable",
			engagements: []engagement{{id: "aaaa", path: "root:wds1", failures: 3, want: "root:wds1"}},
			wantIDs:     map[multicluster.ClusterName]multicluster.ClusterName{"root:wds1": "aaaa"}},
		{name: "kcp too slow to answer within the path timeout: the path, once read",
			engagements: []engagement{{id: "aaaa", path: "root:wds1", failures: 7, slow: true, want: "root:wds1"}},
			wantIDs:     map[multicluster.ClusterName]multicluster.ClusterName{"root:wds1": "aaaa"}},
		{name: "the path cannot be read (claim not accepted): the ID",
			engagements: []engagement{{id: "aaaa", path: "root:wds1", failures: 1 << 30, want: "aaaa"}},
			wantIDs:     map[multicluster.ClusterName]multicluster.ClusterName{"aaaa": "aaaa"}},
		{name: "no path annotation: the ID",
			engagements: []engagement{{id: "aaaa", want: "aaaa"}},
			wantIDs:     map[multicluster.ClusterName]multicluster.ClusterName{"aaaa": "aaaa"}},
		{name: "a path still naming another logical cluster: the ID",
			engagements: []engagement{
				{id: "old1", path: "root:wds1", want: "root:wds1"},
				{id: "new2", path: "root:wds1", want: "new2"}},
			wantIDs: map[multicluster.ClusterName]multicluster.ClusterName{"root:wds1": "old1", "new2": "new2"}},
		{name: "the path from the index, without a read",
			engagements: []engagement{
				{id: "aaaa", path: "root:wds1", indexed: true, want: "root:wds1"},
				{id: "bbbb", path: "root:wds2", want: "root:wds2"}},
			wantIDs: map[multicluster.ClusterName]multicluster.ClusterName{"root:wds1": "aaaa", "root:wds2": "bbbb"}},
		{name: "indexed without a path: the ID, without a read",
			engagements: []engagement{{id: "aaaa", indexed: true, want: "aaaa"}},
			wantIDs:     map[multicluster.ClusterName]multicluster.ClusterName{"aaaa": "aaaa"}},
		{name: "an index that never lists: the path, read once it gives up waiting",
			unlisted:    true,
			engagements: []engagement{{id: "aaaa", path: "root:wds1", want: "root:wds1"}},
			wantIDs:     map[multicluster.ClusterName]multicluster.ClusterName{"root:wds1": "aaaa"}},
		{name: "a failed engagement is forgotten",
			engagements: []engagement{{id: "aaaa", path: "root:wds1", want: "root:wds1"}},
			engageErr:   errors.New("no"),
			wantIDs:     map[multicluster.ClusterName]multicluster.ClusterName{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			byID := map[string]*engagement{}
			reads := map[multicluster.ClusterName]int{}
			p := &Provider{
				log:          logr.Discard(),
				ids:          map[multicluster.ClusterName]multicluster.ClusterName{},
				pathTimeout:  2 * time.Second,
				indexTimeout: 500 * time.Millisecond,
				indexedPath: func(id logicalcluster.Name) (string, bool, bool) {
					mu.Lock()
					defer mu.Unlock()
					if e := byID[id.String()]; !tt.unlisted && e.indexed {
						return e.path, true, true
					}
					return "", false, !tt.unlisted
				},
				pathOf: func(_ context.Context, cl cluster.Cluster) (string, error) {
					mu.Lock()
					defer mu.Unlock()
					e := byID[cl.(fakeCluster).id]
					reads[e.id]++
					if e.failures > 0 {
						e.failures--
						if e.slow {
							return "", fmt.Errorf("reading LogicalCluster cluster: %w", context.DeadlineExceeded)
						}
						return "", apierrors.NewForbidden(schema.GroupResource{Group: "core.kcp.io", Resource: "logicalclusters"}, "cluster", errors.New("no claim"))
					}
					return e.path, nil
				},
			}
			aware := &recordingAware{err: tt.engageErr}
			naming := &namingAware{Aware: aware, provider: p}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			for i, e := range tt.engagements {
				mu.Lock()
				byID[string(e.id)] = &e
				mu.Unlock()
				if err := naming.Engage(ctx, e.id, fakeCluster{id: string(e.id)}); err != nil {
					t.Fatalf("Engage(%s) = %v", e.id, err)
				}
				waitFor(t, fmt.Sprintf("engagement %d", i), func() error {
					if names := aware.engaged(); len(names) <= i {
						return fmt.Errorf("engaged %v", names)
					}
					return nil
				})
				if got := aware.engaged()[i]; got != e.want {
					t.Errorf("engagement %d of %s under %q, want %q", i, e.id, got, e.want)
				}
				mu.Lock()
				if n := reads[e.id]; e.indexed && n > 0 || !e.indexed && n == 0 {
					t.Errorf("engagement %d of %s read the path %d times (indexed %t)", i, e.id, n, e.indexed)
				}
				mu.Unlock()
			}
			waitFor(t, "the name-to-ID map", func() error {
				p.mu.RLock()
				defer p.mu.RUnlock()
				if len(p.ids) != len(tt.wantIDs) {
					return fmt.Errorf("%v, want %v", p.ids, tt.wantIDs)
				}
				for name, id := range tt.wantIDs {
					if p.ids[name] != id {
						return fmt.Errorf("%v, want %v", p.ids, tt.wantIDs)
					}
				}
				return nil
			})

			// Disengaging (ctx done) forgets every name.
			cancel()
			waitFor(t, "every name forgotten", func() error {
				p.mu.RLock()
				defer p.mu.RUnlock()
				if len(p.ids) > 0 {
					return fmt.Errorf("%v", p.ids)
				}
				return nil
			})
		})
	}
}

// listRecorder is a ListerWatcher of empty lists that records the label
// selectors it is asked for.
type listRecorder struct {
	list runtime.Object
	mu   sync.Mutex
	sels []string
}

func (r *listRecorder) record(opts metav1.ListOptions) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sels = append(r.sels, opts.LabelSelector)
}

func (r *listRecorder) List(opts metav1.ListOptions) (runtime.Object, error) {
	r.record(opts)
	return r.list.DeepCopyObject(), nil
}

func (r *listRecorder) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	r.record(opts)
	return watch.NewFake(), nil
}

func (r *listRecorder) asked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sels)
}

// sharedCacheTestProvider is a provider whose shared caches are narrowed as
// the stager narrows them.
func sharedCacheTestProvider(t testing.TB) *Provider {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{ksv1alpha1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return &Provider{scheme: scheme, cacheOptions: CacheOptions{Narrow: stagedbindingpolicy.NarrowCache},
		refused: map[logicalcluster.Name]bool{}}
}

// TestSharedCachesSelectGeneratedBindingPolicies checks that the informers
// of the caches the provider shares among workspaces are kcp's
// cluster-aware ones, and list only the BindingPolicies labelled as a
// policy's, and every other kind whole.
func TestSharedCachesSelectGeneratedBindingPolicies(t *testing.T) {
	o := sharedCacheTestProvider(t).sharedCacheOptions()
	for _, c := range []struct {
		obj  runtime.Object
		list runtime.Object
		want string
	}{
		{&ksv1alpha1.BindingPolicy{}, &ksv1alpha1.BindingPolicyList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, v1alpha1.PolicyLabel},
		{&ksv1alpha1.Binding{}, &ksv1alpha1.BindingList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, ""},
		{&ksv1alpha1.CombinedStatus{}, &ksv1alpha1.CombinedStatusList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, ""},
	} {
		lw := &listRecorder{list: c.list}
		inf := o.NewInformer(lw, c.obj, 0, toolscache.Indexers{})
		if _, ok := inf.GetIndexer().GetIndexers()[kcpcache.ClusterAndNamespaceIndexName]; !ok {
			t.Errorf("the informer of %T has no %s index: not kcp's", c.obj, kcpcache.ClusterAndNamespaceIndexName)
		}
		stop := make(chan struct{})
		go inf.Run(stop)
		waitFor(t, fmt.Sprintf("the first list of %T", c.obj), func() error {
			if len(lw.asked()) == 0 {
				return errors.New("none yet")
			}
			return nil
		})
		close(stop)
		for _, sel := range lw.asked() {
			if sel != c.want {
				t.Errorf("%T: the endpoint was asked for selector %q, want %q", c.obj, sel, c.want)
			}
		}
	}
}

// TestSharedCachesKeepWhatTheStagerReads checks, over 500 random objects of
// random logical clusters, some refused, what the shared caches' transform
// keeps: of a refused logical cluster, a stub under the object's key with
// nothing else; of the others, the object as a space's own cache keeps it
// (no managedFields, a Binding without status).
func TestSharedCachesKeepWhatTheStagerReads(t *testing.T) {
	p := sharedCacheTestProvider(t)
	transform := p.sharedCacheOptions().DefaultTransform
	clusters := []logicalcluster.Name{"c1", "c2", "c3"}
	// A fixed seed: a failure is seen at once and again, with no shrinking.
	rnd := rand.New(rand.NewPCG(54, 4))
	for range 500 {
		p.refusedMu.Lock()
		clear(p.refused)
		for _, c := range clusters {
			if rnd.IntN(2) == 0 {
				p.refused[c] = true
			}
		}
		p.refusedMu.Unlock()
		id := clusters[rnd.IntN(len(clusters))]
		meta := metav1.ObjectMeta{
			Name:            fmt.Sprintf("o%d", rnd.IntN(1000)),
			Namespace:       []string{"", "ns"}[rnd.IntN(2)],
			UID:             "uid",
			ResourceVersion: "7",
			Labels:          map[string]string{v1alpha1.PolicyLabel: "p"},
			Annotations: map[string]string{logicalcluster.AnnotationKey: id.String(),
				"padding": strings.Repeat("x", rnd.IntN(64<<10))},
		}
		if rnd.IntN(2) == 0 {
			meta.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubestellar"}}
		}
		var obj client.Object
		switch rnd.IntN(4) {
		case 0:
			obj = &ksv1alpha1.BindingPolicy{ObjectMeta: meta, Spec: ksv1alpha1.BindingPolicySpec{ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"env": "dev"}}}}}
		case 1:
			obj = &ksv1alpha1.Binding{ObjectMeta: meta, Status: ksv1alpha1.BindingStatus{ObservedGeneration: 3, Errors: []string{"e"}}}
		case 2:
			obj = &ksv1alpha1.CombinedStatus{ObjectMeta: meta, Results: []ksv1alpha1.NamedStatusCombination{{Name: "r"}}}
		default:
			obj = &v1alpha1.StagedBindingPolicy{ObjectMeta: meta, Spec: v1alpha1.StagedBindingPolicySpec{Stages: []v1alpha1.Stage{{Name: "dev"}}}}
		}
		want := obj.DeepCopyObject().(client.Object)
		wantKey, err := kcpcache.MetaClusterNamespaceKeyFunc(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := transform(obj)
		if err != nil {
			t.Fatal(err)
		}
		if key, err := kcpcache.MetaClusterNamespaceKeyFunc(got); err != nil || key != wantKey {
			t.Fatalf("key %q (%v), want %q", key, err, wantKey)
		}
		if p.isRefused(id) {
			s := got.(client.Object)
			size, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			if len(size) > 512 || len(s.GetLabels()) > 0 || len(s.GetAnnotations()) != 1 || s.GetUID() != want.GetUID() {
				t.Fatalf("the stub of a refused cluster's object is %s", size)
			}
			if reflect.TypeOf(got) != reflect.TypeOf(want) {
				t.Fatalf("the stub is a %T, want a %T", got, want)
			}
			continue
		}
		want.SetManagedFields(nil)
		if b, ok := want.(*ksv1alpha1.Binding); ok {
			b.Status = ksv1alpha1.BindingStatus{}
		}
		if !equality.Semantic.DeepEqual(got, want) {
			t.Fatalf("kept %+v, want %+v", got, want)
		}
	}
}

// TestSpaceClusterRefusesReadsOnceRefused checks that once a space's
// objects are refused by the shared caches, whose stubs of them must not be
// read, its client and cache refuse every read, while another space's still
// read; and that its API reader reads the space's API server, uncached,
// before and after (the provider's reads the shared cache, which holds no
// BindingPolicy the stager did not generate).
func TestSpaceClusterRefusesReadsOnceRefused(t *testing.T) {
	p := sharedCacheTestProvider(t)
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/namespaces/ns/configmaps/cm" {
			http.NotFound(w, r)
			return
		}
		served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(cm)
	}))
	defer srv.Close()
	cached := fake.NewClientBuilder().WithObjects(cm.DeepCopy()).Build()
	cl := &readingCluster{client: cached, config: &rest.Config{Host: srv.URL}, http: srv.Client()}
	a, b := p.space("a", cl), p.space("b", cl)
	reads := func(s *SpaceCluster) []error {
		return []error{
			s.GetClient().Get(t.Context(), client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}),
			s.GetClient().List(t.Context(), &corev1.ConfigMapList{}),
		}
	}
	uncached := func(s *SpaceCluster) {
		t.Helper()
		before := served.Load()
		if err := s.GetAPIReader().Get(t.Context(), client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil {
			t.Errorf("an uncached read: %v", err)
		}
		if served.Load() != before+1 {
			t.Errorf("the API reader did not ask the API server")
		}
	}
	for _, err := range reads(a) {
		if err != nil {
			t.Fatalf("a read before the refusal: %v", err)
		}
	}
	uncached(a)
	if a.CacheRefused() {
		t.Fatal("a refused before RefuseCache")
	}
	a.RefuseCache()
	if !a.CacheRefused() || b.CacheRefused() {
		t.Fatalf("refused: a %t, b %t; want a only", a.CacheRefused(), b.CacheRefused())
	}
	errs := append(reads(a),
		a.GetCache().Get(t.Context(), client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}),
		a.GetCache().List(t.Context(), &corev1.ConfigMapList{}))
	for i, err := range errs {
		if !errors.Is(err, ErrCacheRefused) {
			t.Errorf("read %d of a once refused: %v, want ErrCacheRefused", i, err)
		}
	}
	uncached(a)
	for _, err := range reads(b) {
		if err != nil {
			t.Errorf("a read of b once a is refused: %v", err)
		}
	}
}

// readingCluster is a cluster whose client reads client, and whose API
// server is at config.
type readingCluster struct {
	cluster.Cluster
	client client.Client
	config *rest.Config
	http   *http.Client
}

func (c *readingCluster) GetClient() client.Client    { return c.client }
func (c *readingCluster) GetCache() cache.Cache       { return nil }
func (c *readingCluster) GetConfig() *rest.Config     { return c.config }
func (c *readingCluster) GetHTTPClient() *http.Client { return c.http }
func (c *readingCluster) GetScheme() *runtime.Scheme  { return clientgoscheme.Scheme }
func (c *readingCluster) GetRESTMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	return m
}

// waitRefusingLimiter is a rate limiter whose Wait refuses every request,
// and counts them.
type waitRefusingLimiter struct {
	flowcontrol.RateLimiter
	waits atomic.Int32
}

var errNoToken = errors.New("no token for this request")

func (l *waitRefusingLimiter) Wait(context.Context) error {
	l.waits.Add(1)
	return errNoToken
}

// TestSpaceRequestsWaitForTheSpacesRateLimiter checks that the requests
// of a kcp space's client, its discovery among them, go through a rate
// limiter of the space's own, from CacheOptions.NewRateLimiter (the
// stager's --space-qps and --space-burst): before issue 61 they went
// unlimited to the API server, as kcp's provider builds the client
// itself. A limiter that refuses every request must keep them all from
// the server.
func TestSpaceRequestsWaitForTheSpacesRateLimiter(t *testing.T) {
	p := sharedCacheTestProvider(t)
	p.ctx, p.shared = t.Context(), map[string]*sharedCache{}
	var limiters []*waitRefusingLimiter
	p.cacheOptions.NewRateLimiter = func() flowcontrol.RateLimiter {
		l := &waitRefusingLimiter{RateLimiter: flowcontrol.NewFakeAlwaysRateLimiter()}
		limiters = append(limiters, l)
		return l
	}
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The endpoint's own requests (the path index's list of every
		// logical cluster) are no space's.
		if !strings.HasPrefix(r.URL.Path, "/clusters/*") {
			served.Add(1)
		}
		http.Error(w, "unexpected", http.StatusInternalServerError)
	}))
	defer srv.Close()
	endpoint := &rest.Config{Host: srv.URL}
	for i, id := range []logicalcluster.Name{"lc1", "lc2"} {
		cl, err := p.newCluster(endpoint, id, nil, clientgoscheme.Scheme, nil)
		if err != nil {
			t.Fatalf("building the cluster of %s: %v", id, err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
		if err := cl.GetClient().Create(t.Context(), cm); err == nil {
			t.Errorf("%s: a create went through a limiter refusing every request", id)
		}
		if len(limiters) != i+1 {
			t.Fatalf("%s: %d limiters made for %d spaces, want one a space", id, len(limiters), i+1)
		}
		if limiters[i].waits.Load() == 0 {
			t.Errorf("%s: the space's limiter was never waited on", id)
		}
	}
	if n := served.Load(); n != 0 {
		t.Errorf("the server was sent %d requests past the limiters", n)
	}
	if endpoint.RateLimiter != nil {
		t.Error("the endpoint's config was given a space's limiter")
	}
}

var _ spaces.SharedEndpoint = &SpaceCluster{}

// TestSpacesOfAnEndpointNameIt checks that the spaces of one virtual
// workspace endpoint name it, and only it, as the endpoint the stager
// probes once for all of them (issue 61).
func TestSpacesOfAnEndpointNameIt(t *testing.T) {
	p := sharedCacheTestProvider(t)
	p.ctx, p.shared = t.Context(), map[string]*sharedCache{}
	endpoints := []string{"https://kcp.example:6443/services/apiexport/root/stager", "https://kcp.example:6443/services/apiexport/root/other"}
	for _, endpoint := range endpoints {
		for _, id := range []logicalcluster.Name{"lc1", "2x8nq1yvtkgv0ebb"} {
			cl, err := p.newCluster(&rest.Config{Host: endpoint}, id, nil, clientgoscheme.Scheme, nil)
			if err != nil {
				t.Fatalf("building the cluster of %s: %v", id, err)
			}
			space := p.space(multicluster.ClusterName(id), cl)
			if got := space.ProbeEndpoint(); got != endpoint {
				t.Errorf("space %s of %s (at %s) names endpoint %s", id, endpoint, cl.GetConfig().Host, got)
			}
		}
	}
}
