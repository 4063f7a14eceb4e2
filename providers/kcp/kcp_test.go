/*
Copyright 2026 The KubeStellar Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package kcp

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// recordingAware records the names it is asked to engage.
type recordingAware struct {
	names []multicluster.ClusterName
	err   error
}

func (a *recordingAware) Engage(_ context.Context, name multicluster.ClusterName, _ cluster.Cluster) error {
	a.names = append(a.names, name)
	return a.err
}

// TestNaming checks the names logical clusters are engaged under, and the
// name-to-ID map that Get uses, with the workspace paths given.
func TestNaming(t *testing.T) {
	type engagement struct {
		id   multicluster.ClusterName
		path string
		err  error
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
		{name: "the path cannot be read (claim not accepted): the ID",
			engagements: []engagement{{id: "aaaa", err: errors.New("forbidden"), want: "aaaa"}},
			wantIDs:     map[multicluster.ClusterName]multicluster.ClusterName{"aaaa": "aaaa"}},
		{name: "no path annotation: the ID",
			engagements: []engagement{{id: "aaaa", want: "aaaa"}},
			wantIDs:     map[multicluster.ClusterName]multicluster.ClusterName{"aaaa": "aaaa"}},
		{name: "a path still naming another logical cluster: the ID",
			engagements: []engagement{
				{id: "old1", path: "root:wds1", want: "root:wds1"},
				{id: "new2", path: "root:wds1", want: "new2"}},
			wantIDs: map[multicluster.ClusterName]multicluster.ClusterName{"root:wds1": "old1", "new2": "new2"}},
		{name: "the same logical cluster engaged again keeps its name",
			engagements: []engagement{
				{id: "aaaa", path: "root:wds1", want: "root:wds1"},
				{id: "aaaa", path: "root:wds1", want: "root:wds1"}},
			wantIDs: map[multicluster.ClusterName]multicluster.ClusterName{"root:wds1": "aaaa"}},
		{name: "a failed engagement is forgotten",
			engagements: []engagement{{id: "aaaa", path: "root:wds1", want: "root:wds1"}},
			engageErr:   errors.New("no"),
			wantIDs:     map[multicluster.ClusterName]multicluster.ClusterName{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var next engagement
			p := &Provider{
				log:    logr.Discard(),
				ids:    map[multicluster.ClusterName]multicluster.ClusterName{},
				pathOf: func(context.Context, cluster.Cluster) (string, error) { return next.path, next.err },
			}
			aware := &recordingAware{err: tt.engageErr}
			naming := &namingAware{Aware: aware, provider: p}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			for i, e := range tt.engagements {
				next = e
				err := naming.Engage(ctx, e.id, nil)
				if (err != nil) != (tt.engageErr != nil) {
					t.Fatalf("Engage(%s) = %v, want error %v", e.id, err, tt.engageErr)
				}
				if aware.names[i] != e.want {
					t.Errorf("engagement %d of %s under %q, want %q", i, e.id, aware.names[i], e.want)
				}
			}
			p.mu.RLock()
			got := len(p.ids)
			for name, id := range tt.wantIDs {
				if p.ids[name] != id {
					t.Errorf("ids[%s] = %q, want %q (all: %v)", name, p.ids[name], id, p.ids)
				}
			}
			p.mu.RUnlock()
			if got != len(tt.wantIDs) {
				t.Errorf("%d names mapped, want %d", got, len(tt.wantIDs))
			}

			// Disengaging (ctx done) forgets every name.
			cancel()
			deadline := time.Now().Add(5 * time.Second)
			for {
				p.mu.RLock()
				n := len(p.ids)
				p.mu.RUnlock()
				if n == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d names still mapped after disengagement", n)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
