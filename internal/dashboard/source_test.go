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

package dashboard

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// scriptedAPI is an API server's list and watch of policies, scripted: the
// unit under test is ClientSource.Watch's resumption, not the API server.
type scriptedAPI struct {
	client.WithWatch
	mu       sync.Mutex
	lists    []string // the resourceVersions of each List
	watches  []string // the resourceVersion each Watch started from
	watchers chan *watch.FakeWatcher
	listed   []v1alpha1.StagedBindingPolicy
	listRV   string
}

func (a *scriptedAPI) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := list.(*v1alpha1.StagedBindingPolicyList)
	l.Items, l.ResourceVersion = a.listed, a.listRV
	a.lists = append(a.lists, a.listRV)
	return nil
}

func (a *scriptedAPI) Watch(_ context.Context, _ client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	version := "none"
	if o.Raw != nil {
		version = o.Raw.ResourceVersion
	}
	a.mu.Lock()
	a.watches = append(a.watches, version)
	a.mu.Unlock()
	w := watch.NewFakeWithChanSize(10, false)
	a.watchers <- w
	return w, nil
}

func named(name, version string) *v1alpha1.StagedBindingPolicy {
	return &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: version}}
}

// TestWatchResumesWithoutReplay ends the watch of a space three times: after
// a change, it resumes from that change's version without listing or
// reporting anything again; after a bookmark, from the bookmark's; after
// the API server says the version expired, it lists again and reports
// every policy listed, then watches from the new list's version.
func TestWatchResumesWithoutReplay(t *testing.T) {
	api := &scriptedAPI{watchers: make(chan *watch.FakeWatcher), listed: []v1alpha1.StagedBindingPolicy{*named("a", "3"), *named("b", "4")},
		listRV: "5"}
	var mu sync.Mutex
	var changes []string
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ClientSource{"wds1": api}.Watch(ctx, "wds1", func(name string) {
			mu.Lock()
			defer mu.Unlock()
			changes = append(changes, name)
		})
	}()
	next := func() *watch.FakeWatcher {
		select {
		case w := <-api.watchers:
			return w
		case <-time.After(time.Minute):
			t.Fatal("no watch started")
		}
		return nil
	}
	w := next()
	w.Modify(named("a", "6"))
	w.Stop()
	w = next()
	w.Action(watch.Bookmark, named("", "9"))
	w.Stop()
	w = next()
	api.mu.Lock()
	api.listRV = "20"
	api.mu.Unlock()
	w.Error(&apierrors.NewResourceExpired("too old resource version").ErrStatus)
	w.Stop()
	w = next()
	// A cancelled context ends a real watch; the scripted one is stopped.
	cancel()
	w.Stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"5", "20"}; !slices.Equal(api.lists, want) {
		t.Errorf("lists at %v, want %v", api.lists, want)
	}
	if want := []string{"5", "6", "9", "20"}; !slices.Equal(api.watches, want) {
		t.Errorf("watches from %v, want %v", api.watches, want)
	}
	if want := []string{"a", "a", "b"}; !slices.Equal(changes, want) {
		t.Errorf("changes %v, want %v (the modification, then every policy relisted)", changes, want)
	}
}
