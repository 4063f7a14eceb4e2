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

// Package dashboardrun runs `kubectl stager dashboard` in-process for a
// test, as the integration and browser suites do.
package dashboardrun

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	plugin "github.com/kubestellar/workload-stager/cmd/kubectl-stager/app"
	"github.com/kubestellar/workload-stager/test/framework"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// served is the line the dashboard prints once it listens.
var served = regexp.MustCompile(`Serving the dashboard at (http://\S+)`)

// Run runs `kubectl stager dashboard --address=127.0.0.1:0 args...` with
// the kubeconfig until the test ends (or ctx does), waits up to timeout
// until it serves, and returns the URL it serves at. The dashboard's
// output is logged when the test fails; an error it stops with fails the
// test.
func Run(ctx context.Context, t *testing.T, timeout time.Duration, kubeconfig []byte, args ...string) *url.URL {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	out := &framework.LockedBuffer{}
	cmd := plugin.New(genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: out}, time.Now)
	cmd.SetArgs(append([]string{"--kubeconfig=" + path, "dashboard", "--address=127.0.0.1:0"}, args...))
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the dashboard stopped with %v: %s", err, out.String())
		}
		if t.Failed() {
			t.Logf("the dashboard's output:\n%s", out.String())
		}
	})
	var base *url.URL
	environment.Eventually(t, timeout, "the dashboard to serve", func() error {
		m := served.FindStringSubmatch(out.String())
		if m == nil {
			return fmt.Errorf("output so far: %q", out.String())
		}
		var err error
		base, err = url.Parse(m[1])
		return err
	})
	return base
}
