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

// Command dashboards writes the stager's Grafana dashboard,
// config/grafana/stage-progress.json, from its definition as code on
// grafana-foundation-sdk. make generate runs it; make verify fails when the
// file in the repository is not what it writes.
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: dashboards <output file>")
		os.Exit(2)
	}
	if err := write(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "dashboards:", err)
		os.Exit(1)
	}
}

func write(path string) error {
	d, err := stageProgress().Build()
	if err != nil {
		return fmt.Errorf("building the dashboard: %w", err)
	}
	// Panels are numbered in order, as Grafana numbers those it is given
	// without an id, so that links to a panel stay put.
	for i := range d.Panels {
		if p := d.Panels[i].Panel; p != nil {
			id := uint32(i + 1)
			p.Id = &id
		}
	}
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the dashboard: %w", err)
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
