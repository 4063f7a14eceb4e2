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

package gatetest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/kubestellar/workload-stager/internal/expression"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

func newEngine(t *testing.T) *expression.Engine {
	t.Helper()
	engine, err := expression.NewEngine()
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	t.Cleanup(engine.Close)
	return engine
}

// webFS is testdata/web as a map, for cases that change one file.
func webFS(t *testing.T) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	entries, err := os.ReadDir("testdata/web")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("testdata/web", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = &fstest.MapFile{Data: data}
	}
	return m
}

func rootFS(t *testing.T, dir string) fs.FS {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = root.Close() })
	return root.FS()
}

// TestRunWeb runs the cases of testdata/web, each expecting what the
// controller's rules say of its inputs, and checks each verdict.
func TestRunWeb(t *testing.T) {
	s, err := Load(rootFS(t, "testdata/web"), "gatetest.yaml", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	results := Run(newEngine(t), s, s.Policy)
	if len(results) != len(s.Cases) {
		t.Fatalf("got %d results for %d cases", len(results), len(s.Cases))
	}
	for _, r := range results {
		if !r.Passed() {
			t.Errorf("case %q: err %v, mismatches %v (verdict %s %s: %s)", r.Case.Name, r.Err, r.Mismatches,
				r.Verdict.Outcome, r.Verdict.Reason, r.Verdict.Message)
		}
	}
}

// TestRunMismatch checks that every part of an expectation is compared:
// each change of the expectation of a passing case is reported.
func TestRunMismatch(t *testing.T) {
	engine := newEngine(t)
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"outcome", "outcome: Done\n    reason: StageAdvanced", "outcome: NotDone\n    reason: StageAdvanced", "outcome: expected NotDone, got Done"},
		{"reason", "reason: StageAdvanced", "reason: ConditionNotMet", "reason: expected ConditionNotMet, got StageAdvanced"},
		{"message", "message: condition holds for all 1 object(s) on 2 cluster(s)", "message: on 3 cluster(s)",
			`message: expected it to contain "on 3 cluster(s)", got "condition holds for all 1 object(s) on 2 cluster(s)"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := webFS(t)
			text := string(m["gatetest.yaml"].Data)
			if !strings.Contains(text, tc.old) {
				t.Fatalf("gatetest.yaml has no %q", tc.old)
			}
			m["gatetest.yaml"].Data = []byte(strings.Replace(text, tc.old, tc.new, 1))
			s, err := Load(m, "gatetest.yaml", DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			r := Run(engine, s, s.Policy)[0]
			if r.Passed() || len(r.Mismatches) != 1 || r.Mismatches[0] != tc.want {
				t.Errorf("mismatches %q, want [%q]", r.Mismatches, tc.want)
			}
		})
	}
}

// TestRunBlocked checks that an expression that does not compile, or
// costs too much, blocks the stage as the controller's rule 5 says, with
// its message naming the stage.
func TestRunBlocked(t *testing.T) {
	engine := newEngine(t)
	for _, tc := range []struct{ name, condition, message string }{
		{"does not compile", "combinedStatus.nosuch(", `stage "dev"`},
		{"unknown variable", "obj2.results.size() > 0", "undeclared reference"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := webFS(t)
			policy := string(m["policy.yaml"].Data)
			old := "condition: |\n      combinedStatus.results.exists(r, r.name == 'deployments-aggregator' &&\n        r.rows.exists(row, row.columns.exists(c, c.type == 'Number' && c.float == '1')))"
			if !strings.Contains(policy, old) {
				t.Fatal("policy.yaml has no dev condition")
			}
			m["policy.yaml"].Data = []byte(strings.Replace(policy, old, "condition: "+tc.condition, 1))
			s, err := Load(m, "gatetest.yaml", DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			r := Run(engine, s, s.Policy)[0]
			if r.Verdict.Outcome != rollout.GateBlocked || r.Verdict.Reason != "InvalidExpression" ||
				!strings.Contains(r.Verdict.Message, tc.message) {
				t.Errorf("verdict %s %s: %s; want Blocked InvalidExpression containing %q", r.Verdict.Outcome,
					r.Verdict.Reason, r.Verdict.Message, tc.message)
			}
		})
	}
}

// TestLoadErrors checks that bad input is an error naming the test file,
// the field and the file read.
func TestLoadErrors(t *testing.T) {
	small := Limits{MaxFileBytes: 4096, MaxTotalBytes: 8192}
	big := strings.Repeat("# padding\n", 500)
	for _, tc := range []struct {
		name   string
		change func(m fstest.MapFS)
		limits Limits
		want   string
	}{
		{"malformed YAML", func(m fstest.MapFS) { m["gatetest.yaml"].Data = []byte("kind: [GateTest\n") }, DefaultLimits,
			"gatetest.yaml: not a GateTest: "},
		{"unknown field", func(m fstest.MapFS) {
			m["gatetest.yaml"].Data = append(m["gatetest.yaml"].Data, []byte("extra: 1\n")...)
		}, DefaultLimits, `gatetest.yaml: not a GateTest: unknown field "extra"`},
		{"unknown field in a case", func(m fstest.MapFS) { replace(m, "gatetest.yaml", "  stage: dev\n", "  stage: dev\n  stages: dev\n") },
			DefaultLimits, `unknown field "cases[0].stages"`},
		{"wrong kind", func(m fstest.MapFS) { replace(m, "gatetest.yaml", "kind: GateTest", "kind: Test") }, DefaultLimits,
			`gatetest.yaml: kind "Test", apiVersion "test.community.kubestellar.io/v1alpha1": want kind GateTest`},
		{"missing input", func(m fstest.MapFS) { delete(m, "binding-dev.yaml") }, DefaultLimits,
			"gatetest.yaml: cases[0].inputs.binding: binding-dev.yaml: file does not exist"},
		{"missing policy", func(m fstest.MapFS) { delete(m, "policy.yaml") }, DefaultLimits,
			"gatetest.yaml: policy: policy.yaml: file does not exist"},
		{"path with ..", func(m fstest.MapFS) {
			replace(m, "gatetest.yaml", "[statuses-dev-ready.yaml]", "[../statuses-dev-ready.yaml]")
		},
			DefaultLimits, `gatetest.yaml: cases[0].inputs.combinedStatuses[0]: "../statuses-dev-ready.yaml": not a path inside the test's directory`},
		{"absolute path", func(m fstest.MapFS) { replace(m, "gatetest.yaml", "binding: binding-dev.yaml", "binding: /etc/passwd") },
			DefaultLimits, `gatetest.yaml: cases[0].inputs.binding: "/etc/passwd": not a path inside the test's directory`},
		{"not an object of the kind", func(m fstest.MapFS) { m["binding-dev.yaml"] = m["statuses-dev-ready.yaml"] }, DefaultLimits,
			`cases[0].inputs.binding: binding-dev.yaml: kind "CombinedStatus", apiVersion "control.kubestellar.io/v1alpha1": want kind Binding`},
		{"unknown field in a status", func(m fstest.MapFS) { replace(m, "statuses-dev-ready.yaml", "results:", "resutls:") },
			DefaultLimits, `cases[0].inputs.combinedStatuses[0]: statuses-dev-ready.yaml: document 1: unknown field "resutls"`},
		{"bad outcome", func(m fstest.MapFS) { replace(m, "outcome: Done", "outcome: Passed") }, DefaultLimits,
			`gatetest.yaml: cases[0].expect.outcome: "Passed" is none of [Done NotDone Failed Inconclusive Blocked]`},
		{"duplicate case", func(m fstest.MapFS) {
			replace(m, "gatetest.yaml", "dev waits while the Deployment is not available", "dev is done when the Deployment is available")
		}, DefaultLimits, `gatetest.yaml: cases[1].name: "dev is done when the Deployment is available" names another case too`},
		{"file and answers", func(m fstest.MapFS) {
			replace(m, "gatetest.yaml", "{file: answers-error-rate.yaml}", "{file: answers-error-rate.yaml, answers: [{values: [1]}]}")
		}, DefaultLimits, "gatetest.yaml: cases[3].inputs.analyses[error-rate]: give exactly one of file and answers"},
		{"policy and policyRef", func(m fstest.MapFS) {
			replace(m, "gatetest.yaml", "policy: policy.yaml", "policy: policy.yaml\npolicyRef: {name: web}")
		}, DefaultLimits, "gatetest.yaml: policy, policyRef: give exactly one"},
		{"a file too large", func(m fstest.MapFS) {
			m["statuses-dev-ready.yaml"].Data = append([]byte(big), m["statuses-dev-ready.yaml"].Data...)
		}, small, "gatetest.yaml: cases[0].inputs.combinedStatuses[0]: statuses-dev-ready.yaml: larger than the 4096 bytes a file may hold"},
		{"files too large together", func(m fstest.MapFS) {
			for _, name := range []string{"statuses-dev-ready.yaml", "statuses-dev-unready.yaml", "statuses-dev-broken.yaml"} {
				m[name].Data = append([]byte(big[:3000]), m[name].Data...)
			}
		}, small, "cases[1].inputs.combinedStatuses[0]: statuses-dev-unready.yaml: the test's files together are larger than the 8192 bytes a test may read"},
		{"a directory", func(m fstest.MapFS) {
			delete(m, "binding-dev.yaml")
			m["binding-dev.yaml/x"] = &fstest.MapFile{}
		}, DefaultLimits, "cases[0].inputs.binding: binding-dev.yaml: not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := webFS(t)
			tc.change(m)
			_, err := Load(m, "gatetest.yaml", tc.limits)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// replace changes old into new in the named file (gatetest.yaml when
// only two strings are given).
func replace(m fstest.MapFS, args ...string) {
	name := "gatetest.yaml"
	if len(args) == 3 {
		name, args = args[0], args[1:]
	}
	m[name].Data = []byte(strings.Replace(string(m[name].Data), args[0], args[1], 1))
}

// TestLoadSymlinkOut checks that a symbolic link inside the test's
// directory that leads out of it is not followed: the loader reads through
// an os.Root of the test's directory.
func TestLoadSymlinkOut(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "token")
	if err := os.WriteFile(secret, []byte("kind: Binding\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, f := range webFS(t) {
		if err := os.WriteFile(filepath.Join(dir, name), f.Data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(dir, "binding-dev.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "binding-dev.yaml")); err != nil {
		t.Fatal(err)
	}
	_, err := Load(rootFS(t, dir), "gatetest.yaml", DefaultLimits)
	if err == nil || !strings.Contains(err.Error(), "cases[0].inputs.binding: binding-dev.yaml: path escapes from parent") {
		t.Errorf("error %v, want the link refused", err)
	}
}

// TestLoadNamedPipe checks that an input that is a named pipe is refused
// without being read: reading it would wait for a writer for ever.
func TestLoadNamedPipe(t *testing.T) {
	dir := t.TempDir()
	for name, f := range webFS(t) {
		if err := os.WriteFile(filepath.Join(dir, name), f.Data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pipe := filepath.Join(dir, "binding-dev.yaml")
	if err := os.Remove(pipe); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Load(rootFS(t, dir), "gatetest.yaml", DefaultLimits)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "cases[0].inputs.binding: binding-dev.yaml: not a regular file") {
			t.Errorf("error %v, want the pipe refused", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Load waits on a named pipe")
	}
}

// TestRunUnknownAnalysis checks that answers to an analysis the stage
// does not have make the case an error naming the field, rather than
// being ignored: a typo in its name would leave the analysis without
// answers, and the case judging something else than it says.
func TestRunUnknownAnalysis(t *testing.T) {
	m := webFS(t)
	replace(m, "error-rate: {file: answers-error-rate.yaml}", "error-rates: {file: answers-error-rate.yaml}")
	s, err := Load(m, "gatetest.yaml", DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	r := Run(newEngine(t), s, s.Policy)[3]
	want := `cases[3].inputs.analyses[error-rates]: stage "prod" of web has no analysis "error-rates"`
	if r.Err == nil || r.Err.Error() != want {
		t.Errorf("error %v, want %q", r.Err, want)
	}
}
