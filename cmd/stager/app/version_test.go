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
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	built := &debug.BuildInfo{
		Main: debug.Module{Path: "github.com/kubestellar/workload-stager", Version: "v0.0.0-20261123120000-370c501aaaaa"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "370c501aaaaabbbbccccddddeeeeffff00001111"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	for _, tt := range []struct {
		name           string
		info           *debug.BuildInfo
		linked, commit string
		want           string
	}{
		{"from the toolchain", built, "", "", "workload-stager v0.0.0-20261123120000-370c501aaaaa (commit 370c501aaaaabbbbccccddddeeeeffff00001111, with uncommitted changes)"},
		{"a release set at link time", built, "v0.3.0", "", "workload-stager v0.3.0 (commit 370c501aaaaabbbbccccddddeeeeffff00001111, with uncommitted changes)"},
		{"set at link time, -buildvcs=false", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "v0.3.0-2-g370c501", "370c501aaaa", "workload-stager v0.3.0-2-g370c501 (commit 370c501aaaa)"},
		{"set at link time from a dirty tree", nil, "370c501-dirty", "370c501aaaa", "workload-stager 370c501-dirty (commit 370c501aaaa, with uncommitted changes)"},
		{"no build information", nil, "", "", "workload-stager unknown (commit unknown)"},
		{"no VCS information", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "", "", "workload-stager (devel) (commit unknown)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := versionOf(tt.info, tt.linked, tt.commit).String(); got != tt.want {
				t.Errorf("versionOf() = %q, want %q", got, tt.want)
			}
		})
	}
}
