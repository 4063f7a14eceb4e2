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

package expression

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// setWorkerLimits caps the worker's address space at its size now plus
// memory, so that an allocation past it fails in the worker (the Go
// runtime then ends it with "fatal error: out of memory"), and makes the
// worker the first choice of the kernel's out-of-memory killer, so that a
// container whose limit the workers together reach loses a worker, not the
// stager.
func setWorkerLimits(memory uint64) error {
	size, err := addressSpace()
	if err != nil {
		return err
	}
	limit := size + memory
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		return fmt.Errorf("capping the address space at %d bytes: %w", limit, err)
	}
	// Raising one's own score needs no privilege.
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
	return nil
}

// addressSpace returns the process's virtual memory size (VmSize).
func addressSpace() (uint64, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("reading the process's status: %w", err)
	}
	for _, line := range bytes.Split(status, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmSize:")); ok {
			kb, err := strconv.ParseUint(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte("kB")))), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("reading VmSize %q: %w", rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmSize in /proc/self/status")
}

// workerSysProcAttr ends a worker when the process that started it ends.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// runningBinary is the binary this process runs, even if its file was
// replaced or removed since it started (an upgrade of the plugin, say).
func runningBinary() (string, error) { return "/proc/self/exe", nil }

// mapped is what the worker's address space limit counts.
func mapped() (uint64, error) { return addressSpace() }
