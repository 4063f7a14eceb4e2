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

package framework_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubestellar/workload-stager/test/framework"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// timedOutSuiteEnv, when set, makes this test binary the suite that
// TestTimeoutStopsTheSuite lets time out: its set-up starts a space and
// writes the IDs of the processes it started to the file the variable names.
const timedOutSuiteEnv = "STAGER_FRAMEWORK_TIMED_OUT_SUITE"

func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, "framework", func(s *framework.Suite) error {
		pidFile := os.Getenv(timedOutSuiteEnv)
		if pidFile == "" {
			return nil
		}
		space, err := environment.StartSpace("timed-out")
		if err != nil {
			return err
		}
		s.Defer(space.Stop)
		var pids []string
		for _, pid := range framework.ChildProcesses() {
			pids = append(pids, strconv.Itoa(pid))
		}
		return os.WriteFile(pidFile, []byte(strings.Join(pids, "\n")), 0o600)
	}))
}

// TestOutliveTheTimeout blocks until the test binary times out, in the suite
// TestTimeoutStopsTheSuite starts; anywhere else it returns at once.
func TestOutliveTheTimeout(t *testing.T) {
	if os.Getenv(timedOutSuiteEnv) == "" {
		return
	}
	<-t.Context().Done() // never: the testing package's timeout panics first
}

// TestTimeoutStopsTheSuite runs a suite whose test outlives the binary's
// -test.timeout: the testing package then panics and runs no deferred
// function, so without Main's guard the suite's kube-apiserver and etcd
// would run on, orphaned.
func TestTimeoutStopsTheSuite(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pids")
	cmd := exec.Command(os.Args[0], "-test.run=^TestOutliveTheTimeout$", "-test.timeout=25s", "-test.v")
	cmd.Env = append(os.Environ(), timedOutSuiteEnv+"="+pidFile)
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || !strings.Contains(string(out), "test timed out after 25s") {
		t.Fatalf("the suite was to time out; it ended with %v:\n%s", err, out)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the suite did not record its processes: %v\n%s", err, out)
	}
	pids := strings.Fields(string(data))
	if len(pids) < 2 {
		t.Fatalf("the suite recorded %d processes (%q), want its kube-apiserver and etcd", len(pids), pids)
	}
	environment.Eventually(t, 10*time.Second, "the timed-out suite's processes to be gone", func() error {
		var running []string
		for _, pid := range pids {
			if alive(pid) {
				running = append(running, pid)
			}
		}
		if len(running) > 0 {
			return fmt.Errorf("still running: %v", running)
		}
		return nil
	})
}

// alive reports whether a process exists and is not a zombie.
func alive(pid string) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return false
	}
	text := string(stat)
	end := strings.LastIndexByte(text, ')')
	return end >= 0 && !strings.HasPrefix(strings.TrimSpace(text[end+1:]), "Z")
}
