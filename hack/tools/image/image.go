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
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's fixed parts.
const (
	// Entrypoint is the binary's path in the image, and its entrypoint.
	Entrypoint = "/stager"
	// User is the numeric non-root user and group the stager runs as (the
	// "nonroot" user of distroless images); no /etc/passwd names it.
	User = "65532:65532"
)

// OCI annotation and label keys the image carries.
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelRevision = "org.opencontainers.image.revision"
	LabelVersion  = "org.opencontainers.image.version"
	LabelTitle    = "org.opencontainers.image.title"
	LabelLicenses = "org.opencontainers.image.licenses"
	// AnnotationRefName names the image in the layout's index.json.
	AnnotationRefName = "org.opencontainers.image.ref.name"
)

// Options say what to build.
type Options struct {
	// Binaries are the static stager binaries, by platform ("linux/amd64").
	Binaries map[string]string
	// Version, Revision and Source fill the OCI labels.
	Version, Revision, Source string
	// Created is the images' creation time, and every file's modification
	// time: the same sources give the same image.
	Created time.Time
}

// Build returns the multi-platform image index of the stager: one image per
// platform, each FROM scratch with a single layer holding the binary and an
// empty world-writable /tmp (where Go's os.TempDir points; the stager itself
// writes nothing: its metrics certificate, when none is mounted, is made in
// memory), run as a numeric non-root user, the binary as entrypoint, and no
// shell.
func Build(o Options) (v1.ImageIndex, error) {
	if len(o.Binaries) == 0 {
		return nil, fmt.Errorf("no binary to put in the image")
	}
	labels := map[string]string{
		LabelSource:   o.Source,
		LabelRevision: o.Revision,
		LabelVersion:  o.Version,
		LabelTitle:    "KubeStellar Workload Stager",
		LabelLicenses: "Apache-2.0",
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, platform := range sortedKeys(o.Binaries) {
		p, err := v1.ParsePlatform(platform)
		if err != nil {
			return nil, fmt.Errorf("platform %q: %w", platform, err)
		}
		img, err := platformImage(o.Binaries[platform], p, labels, o.Created)
		if err != nil {
			return nil, fmt.Errorf("the %s image: %w", platform, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	}
	return mutate.Annotations(idx, labels).(v1.ImageIndex), nil
}

// platformImage returns the image of one platform.
func platformImage(binary string, p *v1.Platform, labels map[string]string, created time.Time) (v1.Image, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	files, err := layerTar(data, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarballLayer(files)
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "make image: " + Entrypoint + " and /tmp", Comment: "the static stager binary"},
	})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Variant = p.OS, p.Architecture, p.Variant
	cfg.Created = v1.Time{Time: created}
	cfg.Config.User = User
	cfg.Config.Entrypoint = []string{Entrypoint}
	cfg.Config.Cmd = nil
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = labels
	return mutate.ConfigFile(img, cfg)
}

// layerTar returns the layer's files: /stager (0755) and /tmp (1777), owned
// by root so that the non-root user cannot change the binary.
func layerTar(binary []byte, modified time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	headers := []*tar.Header{
		{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777, ModTime: modified},
		{Typeflag: tar.TypeReg, Name: Entrypoint[1:], Mode: 0o755, Size: int64(len(binary)), ModTime: modified},
	}
	for _, h := range headers {
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(binary); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarballLayer returns an OCI layer of the tar, gzip-compressed.
func tarballLayer(data []byte) (v1.Layer, error) {
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// Write writes the index as an OCI image layout in dir (replacing what was
// there), named ref in the layout's index.json.
func Write(dir, ref string, idx v1.ImageIndex) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{AnnotationRefName: ref}))
}
