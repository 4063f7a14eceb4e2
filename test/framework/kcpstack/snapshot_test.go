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

package kcpstack_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubestellar/workload-stager/cmd/stager/app"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/kcp"
	"github.com/kubestellar/workload-stager/test/framework/kcpstack"
)

// TestSnapshotServesItsWorkspacesFromACopy saves a kcp with three bound
// workspaces, starts a second Stack from the snapshot in another work
// directory, and checks that the stager's export serves the three
// workspaces there, that the snapshot is unchanged afterwards, that a
// snapshot is not used for another key, and that a larger snapshot begun
// from it serves its workspaces and the new one.
func TestSnapshotServesItsWorkspacesFromACopy(t *testing.T) {
	log.SetLogger(logr.Discard())
	if _, err := kcp.Binary(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	scheme, err := app.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	snapDir := filepath.Join(base, "snapshot")
	names := []string{"wds0", "wds1", "wds2"}
	key, err := kcpstack.NewSnapshotKey("", names)
	if err != nil {
		t.Fatal(err)
	}

	first, err := kcpstack.Start(ctx, kcpstack.Options{WorkDir: filepath.Join(base, "first"), Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	var created []*kcpstack.Workspace
	for _, name := range names {
		w, err := first.CreateWorkspace(ctx, name)
		if err != nil {
			_ = first.Stop()
			t.Fatal(err)
		}
		created = append(created, w)
	}
	if err := first.SaveSnapshot(ctx, snapDir, key, created, time.Since(began)); err != nil {
		_ = first.Stop()
		t.Fatal(err)
	}
	// The saving kcp runs on after saving, on the snapshot's ports.
	checkServed(ctx, t, first, created)
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	before := hashTree(t, snapDir)

	second, got, snap, err := kcpstack.StartFromSnapshot(ctx, snapDir, key, kcpstack.Options{
		WorkDir: filepath.Join(base, "second"), Scheme: scheme, SimulatorInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kcp from the snapshot (saved %s, created in %s) ready after %s", snap.SavedAt, snap.CreatedIn, second.KCP.ReadyAfter())
	if second.KCP.RootDir == first.KCP.RootDir {
		t.Fatalf("the second kcp runs on the first one's root directory %s", first.KCP.RootDir)
	}
	if len(got) != len(created) {
		t.Fatalf("%d workspaces from the snapshot, want %d", len(got), len(created))
	}
	for i := range got {
		if got[i].Path != created[i].Path || got[i].ClusterID != created[i].ClusterID || got[i].Simulator == nil {
			t.Errorf("workspace %d from the snapshot is %s (%s, simulator %v), want %s (%s) with a simulator",
				i, got[i].Path, got[i].ClusterID, got[i].Simulator != nil, created[i].Path, created[i].ClusterID)
		}
	}
	checkServed(ctx, t, second, got)
	if err := second.Stop(); err != nil {
		t.Fatal(err)
	}
	if after := hashTree(t, snapDir); after != before {
		t.Errorf("the snapshot changed while a kcp ran from a copy of it:\nbefore %s\nafter  %s", before, after)
	}

	checkNotUsed(ctx, t, snapDir, key, base)

	// A larger snapshot begins from this one: only the new workspace is
	// created, and the larger snapshot serves all four.
	more := append(append([]string(nil), names...), "wds3")
	moreKey, err := kcpstack.NewSnapshotKey("", more)
	if err != nil {
		t.Fatal(err)
	}
	third, earlier, _, err := kcpstack.StartFromEarlierSnapshot(ctx, snapDir, moreKey, kcpstack.Options{
		WorkDir: filepath.Join(base, "third"), Scheme: scheme, SimulatorInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = third.Stop() }()
	if len(earlier) != len(names) || earlier[0].Simulator != nil {
		t.Fatalf("%d workspaces from the earlier snapshot (the first attached: %v), want %d unattached", len(earlier), earlier[0].Simulator != nil, len(names))
	}
	w, err := third.CreateWorkspace(ctx, "wds3")
	if err != nil {
		t.Fatal(err)
	}
	all := append(append([]*kcpstack.Workspace(nil), earlier...), w)
	moreDir := filepath.Join(base, "more")
	if err := third.SaveSnapshot(ctx, moreDir, moreKey, all, time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, w := range all {
		if err := third.Attach(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	checkServed(ctx, t, third, all)
	if _, err := kcpstack.ReadSnapshot(moreDir, moreKey); err != nil {
		t.Errorf("the larger snapshot: %v", err)
	}
}

// checkNotUsed checks that a snapshot is refused, before anything is
// copied or started, for keys differing from its own in any part, and that
// an empty directory holds none.
func checkNotUsed(ctx context.Context, t *testing.T, snapDir string, key kcpstack.SnapshotKey, base string) {
	t.Helper()
	other := func(change func(*kcpstack.SnapshotKey)) kcpstack.SnapshotKey {
		k := key
		k.Workspaces = append([]string(nil), key.Workspaces...)
		change(&k)
		return k
	}
	for name, k := range map[string]kcpstack.SnapshotKey{
		"another kcp":           other(func(k *kcpstack.SnapshotKey) { k.KCP = "0" + k.KCP[1:] }),
		"another set-up":        other(func(k *kcpstack.SnapshotKey) { k.Setup = "0" + k.Setup[1:] }),
		"fewer workspaces":      other(func(k *kcpstack.SnapshotKey) { k.Workspaces = k.Workspaces[:2] }),
		"more workspaces":       other(func(k *kcpstack.SnapshotKey) { k.Workspaces = append(k.Workspaces, "wds3") }),
		"other workspace names": other(func(k *kcpstack.SnapshotKey) { k.Workspaces[1] = "other" }),
	} {
		if k.KCP == key.KCP && k.Setup == key.Setup && strings.Join(k.Workspaces, ",") == strings.Join(key.Workspaces, ",") {
			continue // a hash starting with 0 already
		}
		workDir := filepath.Join(base, "mismatch")
		_, _, _, err := kcpstack.StartFromSnapshot(ctx, snapDir, k, kcpstack.Options{WorkDir: workDir})
		if !errors.Is(err, kcpstack.ErrSnapshotMismatch) {
			t.Errorf("%s: StartFromSnapshot returned %v, want ErrSnapshotMismatch", name, err)
		}
		if name != "more workspaces" {
			_, _, _, err := kcpstack.StartFromEarlierSnapshot(ctx, snapDir, k, kcpstack.Options{WorkDir: workDir})
			if !errors.Is(err, kcpstack.ErrSnapshotMismatch) {
				t.Errorf("%s: StartFromEarlierSnapshot returned %v, want ErrSnapshotMismatch", name, err)
			}
		}
		if _, err := os.Stat(workDir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: a snapshot it does not use made %s (%v)", name, workDir, err)
		}
	}
	if _, err := kcpstack.ReadSnapshot(t.TempDir(), key); !errors.Is(err, kcpstack.ErrNoSnapshot) {
		t.Errorf("ReadSnapshot of an empty directory returned %v, want ErrNoSnapshot", err)
	}
}

// checkServed checks that the stager's export serves each workspace: its
// virtual workspace lists every workspace's LogicalCluster (a claimed
// resource) and, in each workspace, the StagedBindingPolicies.
func checkServed(ctx context.Context, t *testing.T, s *kcpstack.Stack, workspaces []*kcpstack.Workspace) {
	t.Helper()
	cfg, err := s.StagerExportConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cfg.Host, s.KCP.URL+"/") {
		t.Errorf("the stager's export is served at %s, not by the running kcp at %s", cfg.Host, s.KCP.URL)
	}
	all, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	environment.Eventually(t, 2*time.Minute, "every workspace's LogicalCluster through the stager's export", func() error {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(kcp.LogicalClusterGVK.GroupVersion().WithKind("LogicalClusterList"))
		if err := all.List(ctx, list); err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, lc := range list.Items {
			seen[lc.GetAnnotations()["kcp.io/cluster"]] = true
		}
		for _, w := range workspaces {
			if !seen[w.ClusterID] {
				return fmt.Errorf("%s (%s) missing among %d", w.Path, w.ClusterID, len(list.Items))
			}
		}
		return nil
	})
	for _, w := range workspaces {
		one := *cfg
		one.Host = strings.TrimSuffix(cfg.Host, "*") + w.ClusterID
		c, err := client.New(&one, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "community.kubestellar.io/v1alpha1", "kind": "StagedBindingPolicyList"}}
		if err := c.List(ctx, list); err != nil {
			t.Errorf("listing the StagedBindingPolicies of %s through the stager's export: %v", w.Path, err)
		}
	}
}

// hashTree returns a digest of every file's path, mode and contents under
// dir.
func hashTree(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %s", strings.TrimPrefix(path, dir), info.Mode())
		if d.Type().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			line += " " + hex.EncodeToString(sum[:])
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}
