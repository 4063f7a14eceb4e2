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

package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWorkDir: --workdir names a directory that may not exist yet; without
// it the demo makes a temporary one.
func TestWorkDir(t *testing.T) {
	wanted := filepath.Join(t.TempDir(), "not", "yet")
	got, err := prepareWorkDir(wanted)
	if err != nil || got != wanted {
		t.Fatalf("prepareWorkDir(%q) = %q, %v", wanted, got, err)
	}
	if info, err := os.Stat(wanted); err != nil || !info.IsDir() {
		t.Errorf("%s after prepareWorkDir: %v", wanted, err)
	}
	temp, err := prepareWorkDir("")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(temp) }()
	if info, err := os.Stat(temp); err != nil || !info.IsDir() {
		t.Errorf("temporary work directory %q: %v", temp, err)
	}
}
