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
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// DefaultGCPercent is the Go garbage collector's target (GOGC) the stager
// runs with unless the GOGC environment variable is set. Go's own 100 makes
// the collector run often while many rollouts advance at once, taking CPU
// a stage advance waits for; 400 spends memory instead, which the soft
// memory limit bounds (docs/performance-log.md has the measurements).
const DefaultGCPercent = 400

// CgroupMemoryMax is the file of cgroup v2 that holds the container's
// memory limit ("max" when there is none).
const CgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// memoryLimitShare is the share of the container's memory limit that the
// stager takes as the Go runtime's soft memory limit, unless GOMEMLIMIT is
// set: near it, the collector runs as often as it must to stay below,
// whatever the GC target.
const memoryLimitShare = 0.9

// TuneRuntime sets the garbage collector's target to gcPercent unless
// GOGC is set, and the runtime's soft memory limit to 90% of the memory
// limit in the cgroup file memoryMax (CgroupMemoryMax) unless GOMEMLIMIT is
// set or the file holds no limit. It returns what it set, for the log.
func TuneRuntime(gcPercent int, memoryMax string) []string {
	var set []string
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(gcPercent)
		set = append(set, fmt.Sprintf("GOGC=%d", gcPercent))
	}
	if _, ok := os.LookupEnv("GOMEMLIMIT"); !ok {
		if limit, ok := cgroupMemoryLimit(memoryMax); ok {
			soft := int64(float64(limit) * memoryLimitShare)
			debug.SetMemoryLimit(soft)
			set = append(set, fmt.Sprintf("GOMEMLIMIT=%d (%.0f%% of the cgroup's %d bytes)", soft, memoryLimitShare*100, limit))
		}
	}
	return set
}

// cgroupMemoryLimit reads a cgroup v2 memory.max file: the limit in bytes,
// or false when the file is missing, says "max" or holds no number.
func cgroupMemoryLimit(path string) (int64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	limit, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || limit <= 0 || limit == math.MaxInt64 {
		return 0, false
	}
	return limit, true
}
