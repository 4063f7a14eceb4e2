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

//go:build unix

package app

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestTestDirNeverWaitsOnAPipe opens a named pipe through the directory
// the gate-test loader reads: a pipe swapped in for a file between the
// loader's check and its open must not hold the command waiting for a
// writer. The open returns, and the file says it is no regular file.
func TestTestDirNeverWaitsOnAPipe(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "binding-dev.yaml"), 0o600); err != nil {
		t.Fatalf("making a named pipe: %v", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = root.Close() }()
	opened := make(chan error, 1)
	go func() {
		f, err := testDir{root}.Open("binding-dev.yaml")
		if err == nil {
			info, statErr := f.Stat()
			if statErr == nil && info.Mode().IsRegular() {
				t.Errorf("a named pipe is said to be a regular file")
			}
			_ = f.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		if err != nil {
			t.Errorf("opening the pipe: %v", err)
		}
	case <-time.After(time.Minute):
		// Unblock the open so the test ends: a writer connects.
		if w, err := os.OpenFile(filepath.Join(dir, "binding-dev.yaml"), os.O_WRONLY, 0); err == nil {
			_ = w.Close()
		}
		t.Fatal("opening a named pipe waits for a writer")
	}
}
