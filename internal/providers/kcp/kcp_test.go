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
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
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
		// want is the name the space must be engaged under.
		want multicluster.ClusterName
	}
	tests := []struct {
		name        string
		engagements []engagement
		engageErr   error
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
		{name: "a failed engagement is forgotten",
			engagements: []engagement{{id: "aaaa", path: "root:wds1", want: "root:wds1"}},
			engageErr:   errors.New("no"),
			wantIDs:     map[multicluster.ClusterName]multicluster.ClusterName{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			byID := map[string]*engagement{}
			p := &Provider{
				log:         logr.Discard(),
				ids:         map[multicluster.ClusterName]multicluster.ClusterName{},
				pathTimeout: 2 * time.Second,
				pathOf: func(_ context.Context, cl cluster.Cluster) (string, error) {
					mu.Lock()
					defer mu.Unlock()
					e := byID[cl.(fakeCluster).id]
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
