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

package e2e

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubestellar/workload-stager/test/framework/stack"
)

// TestProfilesServedOnLoopbackOnly reads a goroutine profile from the
// stager, served at its --pprof-bind-address, and checks that the binary
// refuses to serve its profiles, which are unauthenticated, on any address
// but a loopback one: it exits at once, naming the flag.
func TestProfilesServedOnLoopbackOnly(t *testing.T) {
	addr := suite.stager.Flag("pprof-bind-address")
	ctx, cancel := context.WithTimeout(suite.ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/goroutine?debug=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("reading the goroutine profile at %s: %v", addr, err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("goroutine profile: status %d: %.200s", resp.StatusCode, body)
	}
	// The space runner's goroutines show the profile is the stager's own.
	if runner := "workload-stager/internal/controller/spaces.(*Runner)"; !strings.Contains(string(body), runner) {
		t.Errorf("the goroutine profile names no %s:\n%.2000s", runner, body)
	}

	for _, bad := range []string{":0", "0.0.0.0:0"} {
		log := filepath.Join(t.TempDir(), "stager.log")
		args, err := suite.stack.StagerArgs()
		if err != nil {
			t.Fatal(err)
		}
		p, err := stack.StartProcess(suite.binary, append(args, "--leader-elect=false", "--pprof-bind-address="+bad), log)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(ctx); err != nil {
			_ = p.Stop()
			t.Fatalf("--pprof-bind-address=%s: the stager did not exit: %v", bad, err)
		}
		data, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		// Its first line is the command line, which names the flag.
		_, out, _ := strings.Cut(string(data), "\n")
		if !strings.Contains(out, "--pprof-bind-address") || !strings.Contains(out, "loopback") {
			t.Errorf("--pprof-bind-address=%s: the stager's log does not say why it stopped:\n%s", bad, out)
		}
	}
}
