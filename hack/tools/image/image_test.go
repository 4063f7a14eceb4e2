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

package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// The image make image built, and the commit it was built from: make test
// sets both, after make image.
const (
	layoutEnv   = "STAGER_IMAGE_LAYOUT"
	revisionEnv = "STAGER_IMAGE_REVISION"
)

// TestImage opens the OCI image layout that make image wrote, as any
// registry client would, and checks what a cluster would run: one image per
// platform (linux/amd64 and linux/arm64), each with a numeric non-root
// user, the binary as entrypoint, no shell, and the OCI labels; the amd64
// binary, taken out of its layer, runs and names the commit it was built
// from.
func TestImage(t *testing.T) {
	dir, revision := os.Getenv(layoutEnv), os.Getenv(revisionEnv)
	if dir == "" || revision == "" {
		t.Fatalf("$%s and $%s are not set: run the tests through make test, which builds the image first", layoutEnv, revisionEnv)
	}
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("opening the OCI image layout %s: %v", dir, err)
	}
	top, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Manifests) != 1 || top.Manifests[0].Annotations[AnnotationRefName] == "" {
		t.Fatalf("the layout's index.json holds %d entries (%v), want one named image index", len(top.Manifests), top.Manifests)
	}
	idx, err := root.ImageIndex(top.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	var amd64 v1.Image
	for _, desc := range manifest.Manifests {
		platforms = append(platforms, desc.Platform.String())
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		checkImage(t, desc.Platform, img, revision)
		if desc.Platform.Architecture == "amd64" {
			amd64 = img
		}
	}
	slices.Sort(platforms)
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(platforms, want) {
		t.Fatalf("the image's platforms are %v, want %v", platforms, want)
	}

	binary := filepath.Join(t.TempDir(), "stager")
	if err := extract(amd64, Entrypoint, binary); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("the image's amd64 binary: --version failed: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "workload-stager ") || !strings.Contains(string(out), "commit "+revision) {
		t.Fatalf("the image's amd64 binary says %q, want workload-stager ... (commit %s)", out, revision)
	}
	t.Logf("the image's amd64 binary says: %s", strings.TrimSpace(string(out)))
}

// checkImage checks one platform's image.
func checkImage(t *testing.T, platform *v1.Platform, img v1.Image, revision string) {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != platform.OS || cfg.Architecture != platform.Architecture {
		t.Errorf("%s: the config says %s/%s", platform, cfg.OS, cfg.Architecture)
	}
	if cfg.Config.User != User {
		t.Errorf("%s: user %q, want %q (numeric, non-root)", platform, cfg.Config.User, User)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{Entrypoint}) {
		t.Errorf("%s: entrypoint %q, want [%s]", platform, cfg.Config.Entrypoint, Entrypoint)
	}
	for key, want := range map[string]string{LabelRevision: revision, LabelSource: "https://github.com/kubestellar/workload-stager"} {
		if got := cfg.Config.Labels[key]; got != want {
			t.Errorf("%s: label %s = %q, want %q", platform, key, got, want)
		}
	}
	if cfg.Config.Labels[LabelVersion] == "" {
		t.Errorf("%s: no %s label", platform, LabelVersion)
	}
	files, err := listFiles(img)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"stager", "tmp/"}; !slices.Equal(files, want) {
		t.Errorf("%s: the image holds %v, want %v alone (no shell, no package manager)", platform, files, want)
	}
}

// listFiles returns the sorted names of every file of an image's layers.
func listFiles(img v1.Image) ([]string, error) {
	var names []string
	err := walk(img, func(h *tar.Header, _ io.Reader) error {
		names = append(names, h.Name)
		return nil
	})
	slices.Sort(names)
	return names, err
}

// extract writes the file at path in the image to dest, executable.
func extract(img v1.Image, path, dest string) error {
	found := false
	err := walk(img, func(h *tar.Header, r io.Reader) error {
		if "/"+h.Name != path {
			return nil
		}
		found = true
		f, err := os.OpenFile(dest, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, r); err != nil {
			_ = f.Close()
			return err
		}
		return f.Close()
	})
	if err == nil && !found {
		err = errors.New(path + " is not in the image")
	}
	return err
}

// walk calls visit for every entry of every layer of an image.
func walk(img v1.Image, visit func(*tar.Header, io.Reader) error) error {
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, layer := range layers {
		rc, err := layer.Uncompressed()
		if err != nil {
			return err
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				_ = rc.Close()
				return err
			}
			if err := visit(h, tr); err != nil {
				_ = rc.Close()
				return err
			}
		}
		_ = rc.Close()
	}
	return nil
}
