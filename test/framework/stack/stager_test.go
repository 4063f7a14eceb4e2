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

package stack_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubestellar/workload-stager/test/framework/stack"
)

// stagerArgs returns a function giving the arguments of a stager serving
// the stack, counting its calls, with change applied to each.
func stagerArgs(calls *int, change func(call int, args []string) []string) func() ([]string, error) {
	return func() ([]string, error) {
		*calls++
		args, err := st.StagerArgs()
		if err != nil {
			return nil, err
		}
		return change(*calls, append(args, "--leader-elect=false")), nil
	}
}

// replaceFlag sets the value of a --name=value argument.
func replaceFlag(args []string, name, value string) []string {
	for i, arg := range args {
		if strings.HasPrefix(arg, "--"+name+"=") {
			args[i] = "--" + name + "=" + value
		}
	}
	return args
}

// TestStartStagerTakesFreshPortsWhenOneIsTaken starts the stager binary
// with a metrics port something else listens on: its health probes answer
// at first, then it exits, and StartStager starts it again with fresh ports.
func TestStartStagerTakesFreshPortsWhenOneIsTaken(t *testing.T) {
	binary, err := stack.StagerBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	calls := 0
	args := stagerArgs(&calls, func(call int, args []string) []string {
		if call == 1 {
			return replaceFlag(args, "metrics-bind-address", taken.Addr().String())
		}
		return args
	})
	logPath := filepath.Join(t.TempDir(), "stager.log")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := stack.StartStager(ctx, binary, args, logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Stop() }()
	if calls != 2 {
		t.Errorf("started %d times, want 2: once on the taken port, once on fresh ones", calls)
	}
	if got := p.Flag("metrics-bind-address"); got == taken.Addr().String() {
		t.Errorf("serving metrics at the taken %s", got)
	}
	if p.Exited() {
		t.Error("the stager StartStager returned has exited")
	}
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "address already in use") {
		t.Errorf("the first run did not fail on the taken port; log:\n%s", log)
	}
}

// TestStartStagerQuotesTheLogOfAStagerThatExits starts the stager binary
// with a flag it does not know: StartStager fails at once, quoting its log,
// and does not start it again.
func TestStartStagerQuotesTheLogOfAStagerThatExits(t *testing.T) {
	binary, err := stack.StagerBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	args := stagerArgs(&calls, func(_ int, args []string) []string { return append(args, "--no-such-flag") })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := stack.StartStager(ctx, binary, args, filepath.Join(t.TempDir(), "stager.log"))
	if err == nil {
		_ = p.Stop()
		t.Fatal("no error")
	}
	if !strings.Contains(err.Error(), "exited") || !strings.Contains(err.Error(), "no-such-flag") {
		t.Errorf("error %q does not say the stager exited, quoting its log", err)
	}
	if calls != 1 {
		t.Errorf("started %d times, want 1", calls)
	}
}
