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

package prometheus

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// Dashboard is what the tests read of a Grafana dashboard.
type Dashboard struct {
	Title      string  `json:"title"`
	Panels     []Panel `json:"panels"`
	Templating struct {
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Panel is a dashboard panel.
type Panel struct {
	Title   string   `json:"title"`
	Type    string   `json:"type"`
	Targets []Target `json:"targets"`
	// Panels are the panels of a collapsed row.
	Panels []Panel `json:"panels"`
}

// Target is one query of a panel.
type Target struct {
	RefID string `json:"refId"`
	Expr  string `json:"expr"`
	// Instant is true when Grafana runs the query at one time, not over the range.
	Instant bool `json:"instant"`
	Range   bool `json:"range"`
}

// Variable is a template variable.
type Variable struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	Definition string `json:"definition"`
}

// LoadDashboard reads a dashboard JSON file.
func LoadDashboard(path string) (*Dashboard, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the dashboard: %w", err)
	}
	d := &Dashboard{}
	if err := yaml.Unmarshal(data, d); err != nil {
		return nil, fmt.Errorf("parsing the dashboard %s: %w", path, err)
	}
	return d, nil
}

// AllPanels returns the panels, with those of collapsed rows, in order.
func (d *Dashboard) AllPanels() []Panel {
	var all []Panel
	var walk func([]Panel)
	walk = func(panels []Panel) {
		for _, p := range panels {
			all = append(all, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return all
}

// labelValuesQuery matches Grafana's label_values(selector, label) variable query.
var labelValuesQuery = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// LabelValuesQuery splits a label_values(selector, label) variable definition.
func LabelValuesQuery(definition string) (selector, label string, err error) {
	m := labelValuesQuery.FindStringSubmatch(strings.TrimSpace(definition))
	if m == nil {
		return "", "", fmt.Errorf("%q is not a label_values(selector, label) query", definition)
	}
	return m[1], m[2], nil
}

// variableRef matches $name, ${name} and ${name:format} references.
var variableRef = regexp.MustCompile(`\$\{([a-zA-Z0-9_]+)(?::[a-z]+)?\}|\$([a-zA-Z0-9_]+)`)

// Expand replaces Grafana variable references in a query, as Grafana does
// before sending it to Prometheus. It fails on a reference it has no value for.
func Expand(expr string, values map[string]string) (string, error) {
	var missing []string
	out := variableRef.ReplaceAllStringFunc(expr, func(ref string) string {
		m := variableRef.FindStringSubmatch(ref)
		name := m[1] + m[2]
		v, ok := values[name]
		if !ok {
			missing = append(missing, name)
			return ref
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("query %q uses variables without a value: %v", expr, missing)
	}
	return out, nil
}

// prometheusRule is the part of a PrometheusRule object holding the rules.
type prometheusRule struct {
	Kind string `json:"kind"`
	Spec struct {
		Groups []RuleGroup `json:"groups"`
	} `json:"spec"`
}

// RuleGroup is a group of rules, in Prometheus's rule file format.
type RuleGroup struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []Rule `json:"rules"`
}

// Rule is an alerting or recording rule.
type Rule struct {
	Alert       string            `json:"alert,omitempty"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// LoadRuleGroups reads the rule groups of a PrometheusRule manifest.
func LoadRuleGroups(path string) ([]RuleGroup, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the PrometheusRule: %w", err)
	}
	rule := &prometheusRule{}
	if err := yaml.Unmarshal(data, rule); err != nil {
		return nil, fmt.Errorf("parsing the PrometheusRule %s: %w", path, err)
	}
	if rule.Kind != "PrometheusRule" || len(rule.Spec.Groups) == 0 {
		return nil, fmt.Errorf("%s is not a PrometheusRule with rule groups", path)
	}
	return rule.Spec.Groups, nil
}

// WriteRuleFile writes rule groups as a Prometheus rule file.
func WriteRuleFile(path string, groups []RuleGroup) error {
	data, err := yaml.Marshal(map[string][]RuleGroup{"groups": groups})
	if err != nil {
		return fmt.Errorf("encoding the rule file: %w", err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("writing the rule file: %w", err)
	}
	return nil
}

// Promtool runs promtool with the arguments in a directory and returns its
// combined output, failing when it exits non-zero.
func Promtool(dir string, args ...string) (string, error) {
	binary, err := Binary("promtool")
	if err != nil {
		return "", err
	}
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("promtool %s in %s: %w\n%s", strings.Join(args, " "), filepath.Base(dir), err, out.String())
	}
	return out.String(), nil
}
