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

package kcpe2e

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubestellar/workload-stager/cmd/kubectl-stager/app"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// TestPluginListsWorkspaces runs `kubectl stager get --all-spaces --provider
// kcp` as the stager's identity in the provider workspace: every workspace
// bound to the export is a space, named by its path, with its policies.
func TestPluginListsWorkspaces(t *testing.T) {
	const name = "listed"
	for _, n := range []string{"wds1", "wds2"} {
		waitForSpaceReady(t, wdsNamed(n).space)
		startRollout(t, wdsNamed(n), name)
	}
	kubeconfig, err := suite.kcp.WriteStagerKubeconfig(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	environment.Eventually(t, timeout, "the plugin to list the policy in both workspaces", func() error {
		var out, errOut bytes.Buffer
		cmd := app.New(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, time.Now)
		cmd.SetArgs([]string{"--kubeconfig=" + kubeconfig, "get", name, "--all-spaces", "--provider=kcp"})
		if err := cmd.ExecuteContext(suite.ctx); err != nil {
			return fmt.Errorf("%w: %s", err, errOut.String())
		}
		for _, space := range []string{"root:wds1", "root:wds2"} {
			found := false
			for _, l := range strings.Split(out.String(), "\n") {
				f := strings.Fields(l)
				found = found || len(f) > 2 && f[0] == space && f[1] == name && strings.HasPrefix(f[2], "dev")
			}
			if !found {
				return fmt.Errorf("no row for %s in %s:\n%s%s", name, space, out.String(), errOut.String())
			}
		}
		return nil
	})
}
