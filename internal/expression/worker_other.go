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

//go:build !linux

package expression

import (
	"os"
	"runtime/metrics"
	"syscall"
)

// setWorkerLimits bounds a worker's memory only through the Go runtime's
// soft limit (see serveWorker) outside Linux, where RLIMIT_AS is not
// enforced everywhere; the deadline's kill still applies (docs/security.md).
func setWorkerLimits(uint64) error { return nil }

// workerSysProcAttr is empty outside Linux, which alone has a parent-death
// signal: a worker whose parent is gone ends when it reads the end of its
// requests.
func workerSysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// runningBinary is the binary this process runs.
func runningBinary() (string, error) { return os.Executable() }

// mapped is the memory the Go runtime has mapped.
func mapped() (uint64, error) {
	sample := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64(), nil
}
