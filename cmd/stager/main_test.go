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

package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubestellar/workload-stager/cmd/stager/app"
)

// flagReference is the page whose table lists every flag of the stager.
var flagReference = filepath.Join("..", "..", "docs", "operations.md")

// documentedFlag is a flag in the first column of a table row.
var documentedFlag = regexp.MustCompile("`--([a-z0-9-]+)`")

// TestDocumentedFlags fails when the flag reference misses a flag of the
// stager, or lists one the stager does not have.
func TestDocumentedFlags(t *testing.T) {
	zapOpts := zap.Options{}
	// controller-runtime registers --kubeconfig on flag.CommandLine, which
	// in a test also holds the test's own flags.
	goFlags := flag.NewFlagSet("stager", flag.ContinueOnError)
	flag.CommandLine.VisitAll(func(f *flag.Flag) {
		if !strings.HasPrefix(f.Name, "test.") {
			goFlags.Var(f.Value, f.Name, f.Usage)
		}
	})
	fs, _ := flags(app.NewOptions(), &zapOpts, goFlags)
	var real []string
	fs.VisitAll(func(f *pflag.Flag) { real = append(real, f.Name) })
	if !slices.Contains(real, "kubeconfig") || !slices.Contains(real, "zap-log-level") || !slices.Contains(real, "provider") {
		t.Fatalf("flags %v lack --kubeconfig, --zap-log-level or --provider: the flag set is not the stager's", real)
	}

	raw, err := os.ReadFile(flagReference)
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		names := documentedFlag.FindAllStringSubmatch(cells[0], -1)
		for _, m := range names {
			documented[m[1]] = true
		}
		// A default given as one value is the flag's.
		if len(names) == 1 && len(cells) > 1 {
			if f := fs.Lookup(names[0][1]); f != nil {
				if want, ok := defaultOf(cells[1]); ok && !sameValue(want, f.DefValue) {
					t.Errorf("%s gives --%s the default %q; it is %q", flagReference, f.Name, want, f.DefValue)
				}
			}
		}
	}
	for _, name := range real {
		if !documented[name] {
			t.Errorf("%s does not list --%s", flagReference, name)
		}
	}
	for name := range documented {
		if !slices.Contains(real, name) {
			t.Errorf("%s lists --%s, which the stager does not have", flagReference, name)
		}
	}
}

// defaultCell is a default column that holds one code span, and nothing but
// words in parentheses after it.
var defaultCell = regexp.MustCompile("^\\s*`([^`]*)`\\s*(\\([^)]*\\))?\\s*$")

// defaultOf returns the value a default column gives, if it gives one.
func defaultOf(cell string) (string, bool) {
	m := defaultCell.FindStringSubmatch(cell)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// sameValue says whether two renderings of a flag's value are the same
// value: durations as durations (5m is 5m0s), the rest as text.
func sameValue(a, b string) bool {
	if a == b {
		return true
	}
	da, errA := time.ParseDuration(a)
	db, errB := time.ParseDuration(b)
	return errA == nil && errB == nil && da == db
}
