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

package app

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// TestTuneRuntime sets the GC target and the soft memory limit from the
// cgroup's limit, unless the environment sets them, and leaves the limit
// alone where the cgroup has none.
func TestTuneRuntime(t *testing.T) {
	gcBefore := debug.SetGCPercent(100)
	limitBefore := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() {
		debug.SetGCPercent(gcBefore)
		debug.SetMemoryLimit(limitBefore)
	})
	dir := t.TempDir()
	// memoryMax writes a cgroup memory.max file, named name, that holds content.
	memoryMax := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// current returns the GC target and soft memory limit in force.
	current := func() (int, int64) {
		gc := debug.SetGCPercent(-1)
		debug.SetGCPercent(gc)
		return gc, debug.SetMemoryLimit(-1)
	}

	for _, tc := range []struct {
		name      string
		env       map[string]string
		memoryMax string
		wantGC    int
		wantLimit int64
		wantSet   int
	}{
		{name: "a 512 MiB container", memoryMax: memoryMax("512Mi", "536870912\n"), wantGC: 400, wantLimit: 483183820, wantSet: 2},
		{name: "no limit", memoryMax: memoryMax("max", "max\n"), wantGC: 400, wantLimit: math.MaxInt64, wantSet: 1},
		{name: "no cgroup file", memoryMax: filepath.Join(dir, "missing"), wantGC: 400, wantLimit: math.MaxInt64, wantSet: 1},
		{name: "GOGC and GOMEMLIMIT set", env: map[string]string{"GOGC": "150", "GOMEMLIMIT": "1GiB"}, memoryMax: memoryMax("set", "536870912"),
			wantGC: 100, wantLimit: math.MaxInt64, wantSet: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(math.MaxInt64)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			set := TuneRuntime(DefaultGCPercent, tc.memoryMax)
			gc, limit := current()
			if gc != tc.wantGC || limit != tc.wantLimit || len(set) != tc.wantSet {
				t.Errorf("GOGC %d, memory limit %d, set %q; want %d, %d and %d settings", gc, limit, set, tc.wantGC, tc.wantLimit, tc.wantSet)
			}
		})
	}
}
