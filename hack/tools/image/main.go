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

// Command image-builder writes the stager's multi-platform OCI image, from its
// static binaries, as an OCI image layout that any registry client can push
// (crane push, skopeo copy oci:..., oras): no container daemon is needed.
// make image runs it.
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// binaries is the repeated --binary PLATFORM=PATH flag.
type binaries map[string]string

func (b binaries) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binaries) Set(v string) error {
	platform, path, ok := strings.Cut(v, "=")
	if !ok || platform == "" || path == "" {
		return fmt.Errorf("want PLATFORM=PATH (linux/amd64=bin/linux-amd64/stager), got %q", v)
	}
	b[platform] = path
	return nil
}

func main() {
	bins := binaries{}
	flag.Var(bins, "binary", "PLATFORM=PATH of a static stager binary (repeat for each platform)")
	out := flag.String("out", "bin/image", "directory of the OCI image layout to write")
	ref := flag.String("ref", "", "the image's name in the layout (default: the version)")
	version := flag.String("version", "unknown", "the image's version label")
	revision := flag.String("revision", "unknown", "the image's revision label (the commit)")
	source := flag.String("source", "https://github.com/kubestellar/workload-stager", "the image's source label")
	flag.Parse()

	created := time.Unix(0, 0).UTC()
	if epoch := os.Getenv("SOURCE_DATE_EPOCH"); epoch != "" {
		secs, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			fail(fmt.Errorf("SOURCE_DATE_EPOCH: %w", err))
		}
		created = time.Unix(secs, 0).UTC()
	}
	idx, err := Build(Options{Binaries: bins, Version: *version, Revision: *revision, Source: *source, Created: created})
	if err != nil {
		fail(err)
	}
	if *ref == "" {
		*ref = *version
	}
	if err := Write(*out, *ref, idx); err != nil {
		fail(fmt.Errorf("writing %s: %w", *out, err))
	}
	digest, err := idx.Digest()
	if err != nil {
		fail(err)
	}
	fmt.Printf("wrote the OCI image layout %s: %s (%s) for %s\n", *out, *ref, digest, strings.Join(sortedKeys(bins), ", "))
}

// sortedKeys returns a map's keys, sorted.
func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "image-builder:", err)
	os.Exit(1)
}
