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

package kcp

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDiedOfStartRace: only a crash logged after the launch's offset, of
// a concurrent map access, counts; a crash of an earlier run does not, nor
// any other exit.
func TestDiedOfStartRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kcp.log")
	earlier := "I1130 started\nfatal error: concurrent map read and map write\n\ngoroutine 1 [running]:\n"
	if err := os.WriteFile(path, []byte(earlier), 0o600); err != nil {
		t.Fatal(err)
	}
	offset := logSize(path)
	if diedOfStartRace(path, offset) {
		t.Error("an earlier run's crash counted as this launch's")
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("E1130 listen tcp 127.0.0.1:1: bind: address already in use\n"); err != nil {
		t.Fatal(err)
	}
	if diedOfStartRace(path, offset) {
		t.Error("another exit counted as the race")
	}
	if _, err := f.WriteString(earlier); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	if !diedOfStartRace(path, offset) {
		t.Error("this launch's crash of a concurrent map access not seen")
	}
	if diedOfStartRace(filepath.Join(t.TempDir(), "none.log"), 0) {
		t.Error("a missing log counted as the race")
	}
}
