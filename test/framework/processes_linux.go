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

package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ChildProcesses returns the IDs of this process's child processes (the API
// servers, etcds and controllers a suite started), read from /proc.
func ChildProcesses() []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	self := os.Getpid()
	var children []int
	for _, stat := range stats {
		data, err := os.ReadFile(stat)
		if err != nil {
			continue // the process has gone
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		text := string(data)
		end := strings.LastIndexByte(text, ')')
		if end < 0 {
			continue
		}
		fields := strings.Fields(text[end+1:])
		if len(fields) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(fields[1]); err != nil || ppid != self {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(stat))); err == nil {
			children = append(children, pid)
		}
	}
	return children
}

// ProcessAttributes starts a suite's child process (a controller-manager,
// the stager, kcp, Prometheus) in its own process group, so that a
// terminal's Ctrl-C reaches only the test process, which then stops it in
// order, and has the kernel kill it if the thread that started it exits.
func ProcessAttributes() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills a process and, when it leads one (envtest and the stack
// start their processes in their own groups), its process group.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// clockTicks is the unit of the CPU times in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux architecture Go supports).
const clockTicks = 100

// ProcessUsage returns a process's command name and the CPU seconds (user
// and system) it has used, read from /proc; ok is false when it has gone.
func ProcessUsage(pid int) (name string, cpuSeconds float64, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	text := string(data)
	start, end := strings.IndexByte(text, '('), strings.LastIndexByte(text, ')')
	if start < 0 || end < start {
		return "", 0, false
	}
	fields := strings.Fields(text[end+1:])
	if len(fields) < 13 {
		return "", 0, false
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return text[start+1 : end], (utime + stime) / clockTicks, true
}
