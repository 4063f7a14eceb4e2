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
	"runtime/debug"
	"strings"
)

// version and commit, when set at link time (-ldflags "-X
// github.com/kubestellar/workload-stager/cmd/stager/app.version=v1.2.3 -X
// ...app.commit=<sha>", as `make build` and `make image` do), override what
// the Go toolchain records (nothing about the repository when it builds with
// -buildvcs=false).
var version, commit string

// Version is what the stager binary says of itself.
type Version struct {
	// Version is the release (set at link time) or the module version the
	// Go toolchain derived from the repository (v0.0.0-<time>-<commit> when
	// no tag names the commit).
	Version string
	// Commit is the revision of the repository the binary was built from,
	// "unknown" when the build recorded none.
	Commit string
	// Modified is true when the working tree had uncommitted changes.
	Modified bool
}

// String renders the version as `stager --version` prints it.
func (v Version) String() string {
	s := fmt.Sprintf("workload-stager %s (commit %s", v.Version, v.Commit)
	if v.Modified {
		s += ", with uncommitted changes"
	}
	return s + ")"
}

// BinaryVersion returns the running binary's version, from the link-time
// version and the build information the Go toolchain embeds.
func BinaryVersion() Version {
	info, _ := debug.ReadBuildInfo()
	return versionOf(info, version, commit)
}

// versionOf returns the version that build information and a link-time
// version and commit give.
func versionOf(info *debug.BuildInfo, linkedVersion, linkedCommit string) Version {
	v := Version{Version: "unknown", Commit: "unknown"}
	if info != nil {
		if info.Main.Version != "" {
			v.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if linkedVersion != "" {
		v.Version = linkedVersion
	}
	if linkedCommit != "" {
		v.Commit = linkedCommit
		v.Modified = strings.HasSuffix(linkedVersion, "-dirty")
	}
	return v
}
