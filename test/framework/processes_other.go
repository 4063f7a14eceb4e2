//go:build unix && !linux

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

import "syscall"

// ChildProcesses returns nothing outside Linux: there the guard relies on
// the clean-ups alone.
func ChildProcesses() []int { return nil }

func killGroup(int) {}

// ProcessAttributes starts a suite's child process in its own process group,
// so that a terminal's Ctrl-C reaches only the test process, which then stops
// it in order. Outside Linux there is no parent-death signal: a child
// outlives a test process that is killed before it can stop it.
func ProcessAttributes() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// ProcessUsage reports nothing outside Linux.
func ProcessUsage(int) (name string, cpuSeconds float64, ok bool) { return "", 0, false }
