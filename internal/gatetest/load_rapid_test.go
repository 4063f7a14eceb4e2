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

package gatetest

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"pgregory.net/rapid"
)

// countingFS counts the bytes read from its files.
type countingFS struct {
	fs.FS
	read int64
}

func (c *countingFS) Open(name string) (fs.File, error) {
	f, err := c.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, fs: c}, nil
}

type countingFile struct {
	fs.File
	fs *countingFS
}

func (f *countingFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.fs.read += int64(n)
	return n, err
}

// TestLoadBounded checks, on test files and inputs made of the valid
// ones' lines shuffled, cut, repeated and mixed with random bytes and
// paths, that Load never panics, and never reads from the file system more
// than the total cap (and the one byte past it that tells it is over).
func TestLoadBounded(t *testing.T) {
	web := webFS(t)
	var lines []string
	for _, f := range web {
		lines = append(lines, strings.SplitAfter(string(f.Data), "\n")...)
	}
	names := []string{"gatetest.yaml", "policy.yaml", "binding-dev.yaml", "binding-prod.yaml", "statuses-dev-ready.yaml",
		"statuses-prod.yaml", "answers-error-rate.yaml", "big.yaml", "../x.yaml", "/abs.yaml", "dir"}
	rapid.Check(t, func(t *rapid.T) {
		limits := Limits{MaxFileBytes: rapid.Int64Range(64, 4096).Draw(t, "maxFile")}
		limits.MaxTotalBytes = rapid.Int64Range(limits.MaxFileBytes, 4*limits.MaxFileBytes).Draw(t, "maxTotal")
		m := fstest.MapFS{}
		for name, f := range web {
			m[name] = &fstest.MapFile{Data: f.Data}
		}
		for i, n := 0, rapid.IntRange(0, 6).Draw(t, "files"); i < n; i++ {
			name := rapid.SampledFrom(names).Draw(t, fmt.Sprintf("name%d", i))
			var b strings.Builder
			for j, k := 0, rapid.IntRange(0, 60).Draw(t, fmt.Sprintf("lines%d", i)); j < k; j++ {
				switch rapid.IntRange(0, 9).Draw(t, "kind") {
				case 0:
					b.Write(rapid.SliceOfN(rapid.Byte(), 0, 80).Draw(t, "bytes"))
				case 1:
					fmt.Fprintf(&b, "  - %s\n", rapid.SampledFrom(names).Draw(t, "path"))
				case 2:
					b.WriteString(strings.Repeat("x", rapid.IntRange(0, 8192).Draw(t, "long")))
				default:
					b.WriteString(rapid.SampledFrom(lines).Draw(t, "line"))
				}
			}
			if name == "dir" {
				m["dir/x"] = &fstest.MapFile{Data: []byte(b.String())}
				continue
			}
			m[name] = &fstest.MapFile{Data: []byte(b.String())}
		}
		c := &countingFS{FS: m}
		s, err := Load(c, "gatetest.yaml", limits)
		if c.read > limits.MaxTotalBytes+1 {
			t.Fatalf("read %d bytes, more than the cap %d (+1); err %v", c.read, limits.MaxTotalBytes, err)
		}
		if err == nil && s.BytesRead > limits.MaxTotalBytes {
			t.Fatalf("loaded %d bytes, more than the cap %d", s.BytesRead, limits.MaxTotalBytes)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "gatetest.yaml: ") {
			t.Fatalf("error %q does not name the test file", err)
		}
	})
}
