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

package prometheus_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/prometheus"
)

// ruleFile extracts the groups of config/prometheus/rules.yaml into
// dir/rules.yaml and returns them.
func ruleFile(t *testing.T, dir string) []prometheus.RuleGroup {
	t.Helper()
	root, err := environment.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	groups, err := prometheus.LoadRuleGroups(filepath.Join(root, "config", "prometheus", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := prometheus.WriteRuleFile(filepath.Join(dir, "rules.yaml"), groups); err != nil {
		t.Fatal(err)
	}
	return groups
}

// TestCheckRules runs `promtool check rules` on the PrometheusRule's groups.
func TestCheckRules(t *testing.T) {
	dir := t.TempDir()
	groups := ruleFile(t, dir)
	out, err := prometheus.Promtool(dir, "check", "rules", "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range groups {
		n += len(g.Rules)
	}
	t.Logf("%d rules: %s", n, out)
}

// TestAlertRules runs the alerts' unit tests (testdata/alerts_test.yaml) with
// `promtool test rules`, and fails when an alert has no test case there.
func TestAlertRules(t *testing.T) {
	dir := t.TempDir()
	groups := ruleFile(t, dir)
	tests, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}

	var cases struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(tests, &cases); err != nil {
		t.Fatalf("parsing the alert tests: %v", err)
	}
	var tested []string
	for _, tc := range cases.Tests {
		for _, a := range tc.AlertRuleTest {
			tested = append(tested, a.Alertname)
		}
	}
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert != "" && !slices.Contains(tested, r.Alert) {
				t.Errorf("alert %s has no test case in testdata/alerts_test.yaml", r.Alert)
			}
		}
	}

	out, err := prometheus.Promtool(dir, "test", "rules", "alerts_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Log(out)
}
