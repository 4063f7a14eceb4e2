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
	"io/fs"
	"os"
)

// testDir is a gate test's directory as the loader reads it: nothing
// outside it (an os.Root), and every file opened without waiting, so a
// named pipe swapped in after the loader's check is refused by its
// second check rather than waited on for a writer.
type testDir struct{ root *os.Root }

// Open opens name read-only, never waiting for a pipe's writer.
func (d testDir) Open(name string) (fs.File, error) {
	f, err := d.root.OpenFile(name, os.O_RDONLY|openNoWait, 0)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Stat returns name's file information, following no link out.
func (d testDir) Stat(name string) (fs.FileInfo, error) { return d.root.Stat(name) }
