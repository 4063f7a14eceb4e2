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
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	"github.com/kubestellar/workload-stager/internal/controller/metrics"
	"github.com/kubestellar/workload-stager/internal/controller/sharding"
	"github.com/kubestellar/workload-stager/internal/controller/spaces"
	"github.com/kubestellar/workload-stager/internal/controller/wave"
	"github.com/kubestellar/workload-stager/internal/providers/kubeconfig"
	"github.com/kubestellar/workload-stager/internal/providers/kubeflex"
	"github.com/kubestellar/workload-stager/internal/reqclass"
)

// exportedMetrics returns the name of every metric the stager exports,
// sorted; a histogram's series add _bucket, _sum and _count to its name.
func exportedMetrics(t *testing.T) []string {
	t.Helper()
	collectors := slices.Concat(metrics.Collectors(), spaces.MetricCollectors(), sharding.MetricCollectors(), kubeconfig.MetricCollectors(), kubeflex.MetricCollectors(), wave.MetricCollectors(), reqclass.Collectors())
	var names []string
	descs := 0
	for _, c := range collectors {
		ch := make(chan *prometheus.Desc, 1)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			descs++
			// A Desc prints as Desc{fqName: "name", ...}.
			if _, rest, ok := strings.Cut(d.String(), `fqName: "`); ok {
				name, _, _ := strings.Cut(rest, `"`)
				names = append(names, name)
			}
		}
	}
	// One collector (the policies' gauges, computed at scrape time)
	// describes several metrics.
	if len(names) != descs || descs < len(collectors) {
		t.Fatalf("%d metric names for %d descriptions of %d collectors", len(names), descs, len(collectors))
	}
	slices.Sort(names)
	return names
}

// configDir is the repository's config directory, seen from this package.
var configDir = filepath.Join("..", "..", "..", "config")

// metricName finds the stager's metric names in a PromQL expression.
var metricName = regexp.MustCompile(`\bstager_[a-z_]+\b`)

// dashboardExprs returns every query of the stage-progress dashboard:
// panel targets and template variables.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(configDir, "grafana", "stage-progress.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &dashboard); err != nil {
		t.Fatalf("parsing the dashboard: %v", err)
	}
	var exprs []string
	for _, p := range dashboard.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			exprs = append(exprs, target.Expr)
		}
	}
	for _, v := range dashboard.Templating.List {
		if v.Definition != "" { // the data source variable has no query
			exprs = append(exprs, v.Definition)
		}
	}
	return exprs
}

// ruleExprs returns every alert expression of the PrometheusRule.
func ruleExprs(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(configDir, "prometheus", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert string `json:"alert"`
					Expr  string `json:"expr"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &rule); err != nil {
		t.Fatalf("parsing the rules: %v", err)
	}
	var exprs []string
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	return exprs
}

// TestDashboardsAndRulesNameExportedMetrics fails when the dashboard or an
// alert names a metric the stager does not export.
func TestDashboardsAndRulesNameExportedMetrics(t *testing.T) {
	exported := exportedMetrics(t)
	known := func(name string) bool {
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			if slices.Contains(exported, strings.TrimSuffix(name, suffix)) && (suffix == "" || strings.HasSuffix(name, suffix)) {
				return true
			}
		}
		return false
	}
	for source, exprs := range map[string][]string{"dashboard": dashboardExprs(t), "rules": ruleExprs(t)} {
		if len(exprs) == 0 {
			t.Fatalf("no expressions found in the %s", source)
		}
		for _, expr := range exprs {
			names := metricName.FindAllString(expr, -1)
			if len(names) == 0 {
				t.Errorf("%s expression names no stager metric: %s", source, expr)
			}
			for _, name := range names {
				if !known(name) {
					t.Errorf("%s expression names %s, which the stager does not export (it exports %v): %s", source, name, exported, expr)
				}
			}
		}
	}
}

// TestDocumentedMetrics fails when docs/metrics.md misses an exported metric.
func TestDocumentedMetrics(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(configDir, "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range exportedMetrics(t) {
		if !strings.Contains(string(raw), "`"+name+"`") {
			t.Errorf("docs/metrics.md does not document %s", name)
		}
	}
}
