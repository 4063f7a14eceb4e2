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
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
	"github.com/kubestellar/workload-stager/internal/gatetest"
)

func newTestCommand(o *options) *cobra.Command {
	var junit string
	cmd := &cobra.Command{
		Use:   "test [DIR|FILE...]",
		Short: "Run offline tests of policies' gates on recorded or hand-written statuses",
		Long: `Run GateTest files: each names a StagedBindingPolicy (a file, or one of the
WDS with policyRef) and cases, each a stage, the inputs its gates read (its
Binding, CombinedStatuses, answers to its analyses' queries) and the outcome
expected (Done, NotDone, Failed, Inconclusive or Blocked, a reason, part of
the message). The gates are judged with the stager's own functions, CEL
engine, limits and messages, without a cluster (but for a policyRef).

A directory is searched, recursively, for files named gatetest.yaml or
*.gatetest.yaml; a file named is run whatever its name. The files a test
names are read from its own directory only. The command prints a table per
file, and what each mismatched case's gates said; it exits non-zero when a
case does not pass or a file cannot be read. --junit writes a JUnit XML
report too.`,
		Example: `  # record dev's gates from the live rollout, then test them
  kubectl stager record web --stage dev -o web-dev
  kubectl stager test web-dev

  # every test under tests/, with a report for CI
  kubectl stager test tests/ --junit report.xml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{"."}
			}
			return o.gateTest(cmd.Context(), args, junit)
		},
	}
	cmd.Flags().StringVar(&junit, "junit", "", "Also write a JUnit XML report to this file")
	return cmd
}

// testFile is the run of one GateTest file.
type testFile struct {
	path    string
	policy  *v1alpha1.StagedBindingPolicy
	results []gatetest.Result
	err     error // the file could not be read or its policy found
}

// gateTest runs the GateTest files found at paths.
func (o *options) gateTest(ctx context.Context, paths []string, junit string) error {
	files, err := findTests(paths)
	if err != nil {
		return err
	}
	engine, err := newEngine()
	if err != nil {
		return err
	}
	defer engine.Close()
	out := o.streams.Out
	var runs []testFile
	var passed, failed, caseErrors, fileErrors int
	for i, path := range files {
		if i > 0 {
			fmt.Fprintln(out)
		}
		run := o.runTestFile(ctx, engine, path)
		runs = append(runs, run)
		printTestFile(out, run)
		if run.err != nil {
			fileErrors++
		}
		for _, r := range run.results {
			switch {
			case r.Err != nil:
				caseErrors++
			case !r.Passed():
				failed++
			default:
				passed++
			}
		}
	}
	if junit != "" {
		if err := writeJUnit(junit, runs); err != nil {
			return err
		}
	}
	fprintf(out, "\n%d case(s) in %d file(s): %d passed, %d failed, %d could not be judged; %d file(s) could not be read\n",
		passed+failed+caseErrors, len(files), passed, failed, caseErrors, fileErrors)
	if failed+caseErrors+fileErrors > 0 {
		return fmt.Errorf("%d case(s) failed, %d could not be judged, %d file(s) could not be read", failed, caseErrors, fileErrors)
	}
	return nil
}

// findTests returns the GateTest files of paths: each file, and the files
// named gatetest.yaml or *.gatetest.yaml under each directory, sorted.
func findTests(paths []string) ([]string, error) {
	var files []string
	for _, path := range paths {
		info, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if !info.IsDir() {
			files = append(files, path)
			continue
		}
		var found []string
		err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if name := d.Name(); d.Type().IsRegular() && (name == "gatetest.yaml" || strings.HasSuffix(name, ".gatetest.yaml")) {
				found = append(found, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("searching %s: %w", path, err)
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("no gatetest.yaml or *.gatetest.yaml under %s", path)
		}
		slices.Sort(found)
		files = append(files, found...)
	}
	return files, nil
}

// runTestFile loads the GateTest at path, from its directory only, and
// runs it.
func (o *options) runTestFile(ctx context.Context, engine *expression.Engine, path string) testFile {
	run := testFile{path: path}
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		run.err = fmt.Errorf("%s: %w", path, err)
		return run
	}
	defer func() { _ = root.Close() }()
	s, err := gatetest.Load(testDir{root}, filepath.Base(path), gatetest.DefaultLimits)
	if err != nil {
		run.err = fmt.Errorf("%s%w", strings.TrimSuffix(path, filepath.Base(path)), err)
		return run
	}
	policy := s.Policy
	if ref := s.File.PolicyRef; ref != nil {
		_, p, err := o.policy(ctx, ref.Name)
		if err != nil {
			run.err = fmt.Errorf("%s: policyRef: %w", path, err)
			return run
		}
		policy = p
	}
	run.policy = policy
	run.results = gatetest.Run(engine, s, policy)
	return run
}

// printTestFile prints the table of one file's cases, then what each
// case that failed said.
func printTestFile(out io.Writer, run testFile) {
	if run.err != nil {
		fprintf(out, "%s: ERROR\n  %s\n", run.path, run.err)
		return
	}
	fprintf(out, "%s (StagedBindingPolicy %s):\n", run.path, run.policy.Name)
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "CASE\tSTAGE\tEXPECTED\tGOT\tRESULT")
	for _, r := range run.results {
		expected := string(r.Case.Expect.Outcome)
		if r.Case.Expect.Reason != "" {
			expected += " " + r.Case.Expect.Reason
		}
		got := string(r.Verdict.Outcome) + " " + r.Verdict.Reason
		result := "pass"
		switch {
		case r.Err != nil:
			got, result = "-", "ERROR"
		case !r.Passed():
			result = "FAIL"
		}
		fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.Case.Name, r.Case.Stage, expected, got, result)
	}
	_ = w.Flush()
	for _, r := range run.results {
		if r.Passed() {
			continue
		}
		fprintf(out, "\n--- %s: %s\n", resultWord(r), r.Case.Name)
		if r.Err != nil {
			fprintf(out, "  %s\n", r.Err)
			continue
		}
		for _, m := range r.Mismatches {
			fprintf(out, "  %s\n", m)
		}
		fprintf(out, "  the gates said: %s %s: %s\n", r.Verdict.Outcome, r.Verdict.Reason, r.Verdict.Message)
		if stage := run.policy.Spec.StageNamed(r.Case.Stage); stage != nil {
			printStageGates(out, stage)
		}
		printGates(out, r)
	}
}

func resultWord(r gatetest.Result) string {
	if r.Err != nil {
		return "ERROR"
	}
	return "FAIL"
}

// printGates prints the expressions of a failed case's stage, its
// analyses' records and what its expressions said of each object.
func printGates(out io.Writer, r gatetest.Result) {
	for _, a := range r.Verdict.Analyses {
		summary := fmt.Sprintf("%s, %d successful, %d failed, %d inconclusive", a.Phase, a.Successful, a.Failed, a.Inconclusive)
		for _, m := range a.Measurements {
			summary += fmt.Sprintf("; %s %s", m.Phase, m.Value)
			if m.Message != "" {
				summary += ": " + m.Message
			}
		}
		fprintf(out, "  analysis %s: %s\n", a.Name, summary)
	}
	if r.Verdict.Explanation.Objects == nil && slices.Contains([]string{v1alpha1.ReasonInvalidExpression, v1alpha1.ReasonExpressionTooCostly},
		r.Verdict.Reason) {
		return // no object was judged: an expression does not compile
	}
	printObjectTable(out, r.Verdict.Explanation)
}

// printStageGates prints a stage's expressions, for a failed case.
func printStageGates(out io.Writer, stage *v1alpha1.Stage) {
	for _, e := range [][2]string{{"filter", stage.Filter}, {"condition", stage.Condition}, {"failureCondition", stage.FailureCondition}} {
		if e[1] != "" {
			printExpression(out, e[0], e[1])
		}
	}
	for _, a := range stage.Analysis {
		if a.SuccessCondition != "" {
			printExpression(out, "analysis "+a.Name+" successCondition", a.SuccessCondition)
		}
		if a.FailureCondition != "" {
			printExpression(out, "analysis "+a.Name+" failureCondition", a.FailureCondition)
		}
	}
}

// printExpression prints an expression, one line of it per line.
func printExpression(out io.Writer, what, expr string) {
	lines := strings.Split(strings.TrimSpace(expr), "\n")
	fprintf(out, "  %s: %s\n", what, lines[0])
	for _, line := range lines[1:] {
		fprintf(out, "    %s\n", line)
	}
}

// JUnit XML, in the shape CI systems read (testsuites, a testsuite per
// file, a testcase per case with a failure or an error).
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// junitReport is the JUnit report of runs.
func junitReport(runs []testFile) junitSuites {
	report := junitSuites{Name: "kubectl stager test"}
	for _, run := range runs {
		suite := junitSuite{Name: run.path}
		if run.err != nil {
			suite.Errors = 1
			suite.Cases = []junitCase{{Name: "load", Classname: run.path,
				Error: &junitProblem{Message: xmlText(run.err.Error()), Type: "LoadError", Text: xmlText(run.err.Error())}}}
		}
		for _, r := range run.results {
			c := junitCase{Name: xmlText(r.Case.Name), Classname: xmlText(run.path + "." + r.Case.Stage)}
			switch {
			case r.Err != nil:
				suite.Errors++
				c.Error = &junitProblem{Message: xmlText(r.Err.Error()), Type: "CaseError", Text: xmlText(r.Err.Error())}
			case !r.Passed():
				suite.Failures++
				var b strings.Builder
				for _, m := range r.Mismatches {
					b.WriteString(m + "\n")
				}
				var details strings.Builder
				if stage := run.policy.Spec.StageNamed(r.Case.Stage); stage != nil {
					printStageGates(&details, stage)
				}
				printGates(&details, r)
				fmt.Fprintf(&b, "the gates said: %s %s: %s\n%s", r.Verdict.Outcome, r.Verdict.Reason, r.Verdict.Message, details.String())
				c.Failure = &junitProblem{Message: xmlText(strings.Join(r.Mismatches, "; ")), Type: "Mismatch", Text: xmlText(b.String())}
			}
			suite.Cases = append(suite.Cases, c)
		}
		suite.Tests = len(suite.Cases)
		report.Tests += suite.Tests
		report.Failures += suite.Failures
		report.Errors += suite.Errors
		report.Suites = append(report.Suites, suite)
	}
	return report
}

// xmlText escapes text for the JUnit report as the plugin escapes what
// it prints (printable), line by line: a CI system's page shows it, and
// XML 1.0 cannot hold most control characters, which encoding/xml would
// write as they are.
func xmlText(s string) string {
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		lines[i] = printable(line)
	}
	return strings.Join(lines, "\n")
}

// writeJUnit writes the JUnit report of runs to path.
func writeJUnit(path string, runs []testFile) error {
	data, err := xml.MarshalIndent(junitReport(runs), "", "  ")
	if err != nil {
		return fmt.Errorf("writing the JUnit report: %w", err)
	}
	data = append([]byte(xml.Header), append(data, '\n')...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("writing the JUnit report: %w", err)
	}
	return nil
}
