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

package process_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubestellar/workload-stager/test/framework/process"
)

// TestFreeAddressesAreDistinct asks for more ports than a process takes:
// each is distinct and free. (A CI run of test/e2e gave a restarted stager
// the same port for its metrics and its probes, found one at a time; its
// metrics server could not listen and it exited.)
func TestFreeAddressesAreDistinct(t *testing.T) {
	addrs, err := process.FreeAddresses(64)
	if err != nil {
		t.Fatal(err)
	}
	if len(addrs) != 64 {
		t.Fatalf("%d addresses, want 64", len(addrs))
	}
	seen := map[string]bool{}
	for _, addr := range addrs {
		if seen[addr] {
			t.Errorf("%s given twice", addr)
		}
		seen[addr] = true
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("%s is not free: %v", addr, err)
			continue
		}
		_ = l.Close()
	}
}

// TestStartWaitsForItsLineAndStops runs a shell that logs a line and waits:
// WaitReady returns once the line is logged, the log holds the command line
// and the output, and Stop ends the process with SIGTERM.
func TestStartWaitsForItsLineAndStops(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "sh.log")
	p, err := process.Start(process.Spec{
		Name:    "a shell",
		Binary:  "/bin/sh",
		Args:    []string{"-c", "sleep 0.2; echo serving now; exec sleep 60"},
		LogPath: logPath,
		Ready:   func(line string) bool { return strings.Contains(line, "serving") },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if p.Exited() {
		t.Fatal("the shell exited")
	}
	begin := time.Now()
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if !p.Exited() || time.Since(begin) > 5*time.Second {
		t.Errorf("Stop took %s; exited %v", time.Since(begin), p.Exited())
	}
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "=== ") || !strings.Contains(string(log), "serving now") {
		t.Errorf("log:\n%s", log)
	}
}

// TestWaitReadyFailsWhenTheProcessExits: a process that exits before its
// line fails WaitReady, quoting its last lines.
func TestWaitReadyFailsWhenTheProcessExits(t *testing.T) {
	p, err := process.Start(process.Spec{
		Name:    "a failing shell",
		Binary:  "/bin/sh",
		Args:    []string{"-c", "echo listen tcp: address already in use; exit 3"},
		LogPath: filepath.Join(t.TempDir(), "sh.log"),
		Ready:   func(line string) bool { return strings.Contains(line, "never") },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = p.WaitReady(ctx)
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("WaitReady = %v", err)
	}
	if !p.PortTaken() {
		t.Error("PortTaken is false")
	}
}

// TestKillEndsAProcessThatIgnoresSIGTERM runs a shell that ignores SIGTERM,
// as a crashed or hung program would: Wait does not return while it runs,
// Kill ends it at once, and Flag reads its --name=value arguments.
func TestKillEndsAProcessThatIgnoresSIGTERM(t *testing.T) {
	p, err := process.Start(process.Spec{
		Name:    "a stubborn shell",
		Binary:  "/bin/sh",
		Args:    []string{"-c", "trap '' TERM; while :; do sleep 0.1; done", "--probe=127.0.0.1:1", "--metrics=0"},
		LogPath: filepath.Join(t.TempDir(), "sh.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Flag("probe"); got != "127.0.0.1:1" {
		t.Errorf("Flag(probe) = %q", got)
	}
	if got := p.Flag("none"); got != "" {
		t.Errorf("Flag(none) = %q", got)
	}
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := p.Wait(short); err == nil {
		t.Fatal("Wait returned while the shell runs")
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if !p.Exited() {
		t.Error("the shell runs after Kill")
	}
	if err := p.Wait(context.Background()); err != nil {
		t.Errorf("Wait after Kill = %v", err)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("Stop after Kill = %v", err)
	}
}
