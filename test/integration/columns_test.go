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

package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// TestPrinterColumns reads a policy as kubectl get does, as a Table from the
// API server, and checks that its columns show the phase, the Progressing
// reason, when the active stage started, when its condition started holding
// and its progress deadline.
func TestPrinterColumns(t *testing.T) {
	s := suite.wds1
	const name = "columns"
	createWorkload(t, s, name)
	policy := newPolicy(name, name)
	policy.Spec.Stages[0].ProgressDeadline = &metav1.Duration{Duration: time.Hour}
	create(t, s, policy)
	p := policies(s).WaitFor(t, name, "dev's progress deadline", func(p *v1alpha1.StagedBindingPolicy) bool {
		return len(p.Status.Stages) > 0 && p.Status.Stages[0].ProgressDeadlineTime != nil
	})
	t.Cleanup(func() { policies(s).Delete(t, name) })

	table := getTable(t, s.Config, "/apis/community.kubestellar.io/v1alpha1/stagedbindingpolicies/"+name)
	if len(table.Rows) != 1 {
		t.Fatalf("%d rows, want 1", len(table.Rows))
	}
	cells := map[string]any{}
	for i, c := range table.ColumnDefinitions {
		cells[c.Name] = table.Rows[0].Cells[i]
	}
	t.Logf("the row kubectl get shows: %v", cells)
	record := p.Status.Stages[0]
	for column, want := range map[string]string{
		"Active Stage": "dev",
		"Phase":        string(v1alpha1.RolloutProgressing),
		"Deadline":     record.ProgressDeadlineTime.UTC().Format(time.RFC3339),
	} {
		if got := fmt.Sprint(cells[column]); got != want {
			t.Errorf("column %q = %q, want %q (row %v)", column, got, want, cells)
		}
	}
	for _, column := range []string{"Reason", "Stage Started", "Condition Met", "Age"} {
		if _, ok := cells[column]; !ok {
			t.Errorf("no column %q (row %v)", column, cells)
		}
	}
	if cells["Reason"] == "" || cells["Stage Started"] == "" || cells["Stage Started"] == "<none>" {
		t.Errorf("Reason %q, Stage Started %q: want both filled for an active stage", cells["Reason"], cells["Stage Started"])
	}
}

// getTable GETs path as a meta.k8s.io/v1 Table, as kubectl get does.
func getTable(t *testing.T, config *rest.Config, path string) *metav1.Table {
	t.Helper()
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(suite.ctx, http.MethodGet, strings.TrimSuffix(config.Host, "/")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s%s: %s %v: %s", config.Host, path, resp.Status, err, body)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(body, table); err != nil {
		t.Fatalf("decoding the Table: %v", err)
	}
	return table
}
