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

package kcpstack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/kcp"
)

const (
	// snapshotFile is the description of a snapshot in its directory; it
	// is written last, so a directory without it holds no snapshot.
	snapshotFile = "snapshot.json"
	// snapshotRoot is kcp's root directory in a snapshot's directory.
	snapshotRoot = "kcp"
	// setupVersion names the set-up code of Start and CreateWorkspace in
	// snapshot keys: change it when that code creates other things, so
	// that older snapshots are not used.
	setupVersion = "1"
)

// ErrNoSnapshot means a directory holds no snapshot, and ErrSnapshotMismatch
// that it holds one made by something else than the key asks.
var (
	ErrNoSnapshot       = errors.New("no kcp snapshot")
	ErrSnapshotMismatch = errors.New("kcp snapshot made by something else")
)

// SnapshotKey says what made a snapshot; one is used only for the same key.
type SnapshotKey struct {
	// KCP is the sha256 of the kcp binary (kcp v0.28.0 reports no version
	// of its own).
	KCP string `json:"kcp"`
	// Setup is the sha256 of config/kcp/**, config/approval/**, the
	// objects CreateWorkspace creates itself and setupVersion.
	Setup string `json:"setup"`
	// Workspaces are the names of the WDS workspaces, in order.
	Workspaces []string `json:"workspaces"`
}

// SavedWorkspace is a WDS workspace of a snapshot.
type SavedWorkspace struct {
	Name      string `json:"name"`
	Path      string `json:"path"`
	ClusterID string `json:"clusterID"`
}

// Snapshot describes kcp's data saved by SaveSnapshot.
type Snapshot struct {
	Key SnapshotKey `json:"key"`
	// Ports are kcp's ports when it was saved; it is started on them again
	// (kcp.Options.Ports says why).
	Ports      kcp.Ports        `json:"ports"`
	Workspaces []SavedWorkspace `json:"savedWorkspaces"`
	// CreatedIn is how long the workspaces took to create; SavedAt when
	// they were saved.
	CreatedIn time.Duration `json:"createdIn"`
	SavedAt   time.Time     `json:"savedAt"`
}

// NewSnapshotKey returns the key of a snapshot of the named workspaces made
// with the kcp binary (empty means kcp.Binary()) and this repository's
// config/kcp and config/approval.
func NewSnapshotKey(binary string, names []string) (SnapshotKey, error) {
	if binary == "" {
		var err error
		if binary, err = kcp.Binary(); err != nil {
			return SnapshotKey{}, err
		}
	}
	binHash, err := hashFiles([]string{binary})
	if err != nil {
		return SnapshotKey{}, err
	}
	root, err := environment.RepoRoot()
	if err != nil {
		return SnapshotKey{}, err
	}
	var files []string
	for _, dir := range []string{"config/kcp", "config/approval"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			return SnapshotKey{}, fmt.Errorf("listing %s: %w", dir, err)
		}
	}
	sort.Strings(files)
	h := sha256.New()
	objects, err := json.Marshal(workspaceObjects())
	if err != nil {
		return SnapshotKey{}, fmt.Errorf("encoding the workspace objects: %w", err)
	}
	_, _ = fmt.Fprintf(h, "setup %s\nobjects %s\n", setupVersion, objects)
	for _, f := range files {
		fileHash, err := hashFiles([]string{f})
		if err != nil {
			return SnapshotKey{}, err
		}
		rel, _ := filepath.Rel(root, f)
		_, _ = fmt.Fprintf(h, "%s %s\n", rel, fileHash)
	}
	return SnapshotKey{KCP: binHash, Setup: hex.EncodeToString(h.Sum(nil)), Workspaces: append([]string(nil), names...)}, nil
}

// hashFiles returns the sha256 of the files' contents, one after the other.
func hashFiles(files []string) (string, error) {
	h := sha256.New()
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return "", fmt.Errorf("hashing %s: %w", name, err)
		}
		_, err = io.Copy(h, f)
		_ = f.Close()
		if err != nil {
			return "", fmt.Errorf("hashing %s: %w", name, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// equal reports whether two keys are the same.
func (k SnapshotKey) equal(o SnapshotKey) bool {
	return len(k.Workspaces) == len(o.Workspaces) && k.begins(o)
}

// begins reports whether o is k made for fewer workspaces: the same kcp and
// set-up, and its workspaces the first of k's.
func (k SnapshotKey) begins(o SnapshotKey) bool {
	if k.KCP != o.KCP || k.Setup != o.Setup || len(o.Workspaces) > len(k.Workspaces) {
		return false
	}
	for i := range o.Workspaces {
		if k.Workspaces[i] != o.Workspaces[i] {
			return false
		}
	}
	return true
}

// SaveSnapshot saves kcp's data, with workspaces made by CreateWorkspace and
// not attached yet (no simulator has touched them), into dir under key,
// replacing any snapshot there: it stops kcp so that its embedded etcd's
// files are consistent, copies its root directory, and starts kcp again on
// the same ports. Clients obtained before stop working (kcp's admin token
// changes); Attach makes new ones.
func (s *Stack) SaveSnapshot(ctx context.Context, dir string, key SnapshotKey, workspaces []*Workspace, createdIn time.Duration) (err error) {
	s.mu.Lock()
	attached := len(s.workspaces)
	s.mu.Unlock()
	if attached > 0 {
		return fmt.Errorf("saving a kcp snapshot: %d workspaces have simulators already; save before Attach", attached)
	}
	snap := Snapshot{Key: key, Ports: s.KCP.Ports, CreatedIn: createdIn, SavedAt: time.Now().UTC()}
	for _, w := range workspaces {
		snap.Workspaces = append(snap.Workspaces, SavedWorkspace{Name: w.Name, Path: w.Path, ClusterID: w.ClusterID})
	}
	data, err := json.MarshalIndent(snap, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the kcp snapshot: %w", err)
	}
	if err := s.KCP.Stop(); err != nil {
		return err
	}
	defer func() {
		if restartErr := s.KCP.Restart(ctx); restartErr != nil {
			err = errors.Join(err, fmt.Errorf("restarting kcp after saving its data: %w", restartErr))
		}
	}()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	// Without its description the directory holds no snapshot, whatever
	// else is left there.
	for _, old := range []string{snapshotFile, snapshotRoot} {
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			return fmt.Errorf("removing the old kcp snapshot: %w", err)
		}
	}
	if err := copyTree(s.KCP.RootDir, filepath.Join(dir, snapshotRoot)); err != nil {
		return fmt.Errorf("saving kcp's data: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, snapshotFile), data, 0o644); err != nil {
		return fmt.Errorf("writing the kcp snapshot's description: %w", err)
	}
	return nil
}

// ReadSnapshot reads the description of the snapshot in dir. It fails with
// ErrNoSnapshot when there is none, and ErrSnapshotMismatch when its key
// differs from key.
func ReadSnapshot(dir string, key SnapshotKey) (*Snapshot, error) {
	return readSnapshot(dir, key, SnapshotKey.equal)
}

// readSnapshot reads the description of the snapshot in dir, and fails
// with ErrSnapshotMismatch unless fits(key, its key).
func readSnapshot(dir string, key SnapshotKey, fits func(SnapshotKey, SnapshotKey) bool) (*Snapshot, error) {
	data, err := os.ReadFile(filepath.Join(dir, snapshotFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s", ErrNoSnapshot, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the kcp snapshot in %s: %w", dir, err)
	}
	snap := &Snapshot{}
	if err := json.Unmarshal(data, snap); err != nil {
		return nil, fmt.Errorf("reading the kcp snapshot in %s: %w", dir, err)
	}
	if !fits(key, snap.Key) {
		return nil, fmt.Errorf("%w in %s: its key is %s, want %s", ErrSnapshotMismatch, dir, describe(snap.Key), describe(key))
	}
	return snap, nil
}

// describe summarises a key for an error message.
func describe(k SnapshotKey) string {
	first, last := "", ""
	if n := len(k.Workspaces); n > 0 {
		first, last = k.Workspaces[0], k.Workspaces[n-1]
	}
	return fmt.Sprintf("kcp %.12s, set-up %.12s, %d workspaces (%s…%s)", k.KCP, k.Setup, len(k.Workspaces), first, last)
}

// StartFromSnapshot starts a Stack on a copy of the snapshot in dir (which
// it never changes) in o.WorkDir, which must not hold kcp data yet, on the
// snapshot's ports, and attaches every saved workspace (Attach). It fails
// with ErrNoSnapshot or ErrSnapshotMismatch (see ReadSnapshot) before
// touching anything, and with kcp.ErrPortTaken when a port is in use.
func StartFromSnapshot(ctx context.Context, dir string, key SnapshotKey, o Options) (*Stack, []*Workspace, *Snapshot, error) {
	s, workspaces, snap, err := startFrom(ctx, dir, key, o, SnapshotKey.equal)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, w := range workspaces {
		if err := s.Attach(ctx, w); err != nil {
			return nil, nil, nil, errors.Join(err, s.Stop())
		}
	}
	return s, workspaces, snap, nil
}

// StartFromEarlierSnapshot starts a Stack, as StartFromSnapshot does, on a
// snapshot made for the first of key's workspaces (or all of them), so that
// a larger snapshot is made without creating again what a smaller one
// holds. It leaves the saved workspaces unattached: the caller creates the
// rest (CreateWorkspace), may save them all (SaveSnapshot), then attaches
// them. It fails with ErrSnapshotMismatch when the snapshot's workspaces
// are not the first of key's, or its kcp or set-up differ.
func StartFromEarlierSnapshot(ctx context.Context, dir string, key SnapshotKey, o Options) (*Stack, []*Workspace, *Snapshot, error) {
	return startFrom(ctx, dir, key, o, SnapshotKey.begins)
}

// startFrom starts a Stack on a copy of the snapshot in dir when
// fits(key, its key), and returns its workspaces unattached.
func startFrom(ctx context.Context, dir string, key SnapshotKey, o Options, fits func(SnapshotKey, SnapshotKey) bool) (*Stack, []*Workspace, *Snapshot, error) {
	snap, err := readSnapshot(dir, key, fits)
	if err != nil {
		return nil, nil, nil, err
	}
	root := filepath.Join(o.WorkDir, snapshotRoot)
	if _, err := os.Stat(root); !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil, fmt.Errorf("starting kcp from a snapshot: %s exists already", root)
	}
	if err := os.MkdirAll(o.WorkDir, 0o755); err != nil {
		return nil, nil, nil, fmt.Errorf("creating %s: %w", o.WorkDir, err)
	}
	if err := copyTree(filepath.Join(dir, snapshotRoot), root); err != nil {
		return nil, nil, nil, fmt.Errorf("copying the kcp snapshot: %w", err)
	}
	s, err := start(ctx, o, snap.Ports, (*Stack).loadProvider)
	if err != nil {
		return nil, nil, nil, err
	}
	workspaces := make([]*Workspace, len(snap.Workspaces))
	for i, saved := range snap.Workspaces {
		workspaces[i] = &Workspace{Name: saved.Name, Path: saved.Path, ClusterID: saved.ClusterID}
	}
	return s, workspaces, snap, nil
}

// copyTree copies the directory src to dst (which must not exist) with
// its files' modes; kcp's root directory holds only directories and
// regular files.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(target, info.Mode().Perm())
		case d.Type().IsRegular():
			return copyFile(path, target, info.Mode().Perm())
		default:
			return fmt.Errorf("%s is neither a directory nor a regular file", path)
		}
	})
}

// copyFile copies the regular file src to dst, created with mode.
func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return out.Close()
}
