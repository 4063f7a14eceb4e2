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

package analysis

import (
	"fmt"
	"testing"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
)

func TestRender(t *testing.T) {
	c := Context{Space: "root:org:wds1", Policy: "web", Stage: "prod", Revision: "v2", Clusters: []string{"prod1", "prod2"}}
	for _, tc := range []struct{ query, want string }{
		{`sum(rate(http_errors{cluster=~"{{clusters}}",stage="{{stage}}"}[5m]))`, `sum(rate(http_errors{cluster=~"prod1|prod2",stage="prod"}[5m]))`},
		{`up{space="{{space}}",policy="{{policy}}",version="{{revision}}"}`, `up{space="root:org:wds1",policy="web",version="v2"}`},
		{`vector(1) {{unknown}}`, `vector(1) {{unknown}}`},
	} {
		if got := Render(tc.query, c); got != tc.want {
			t.Errorf("Render(%q) = %q, want %q", tc.query, got, tc.want)
		}
	}
	// A value cannot end the string literal it is put in, and a cluster
	// name's regular expression characters match only themselves.
	hostile := Context{Stage: `x"} or vector(1) #`, Clusters: []string{"a.b", `c"`}}
	if got, want := Render(`m{stage="{{stage}}",cluster=~"{{clusters}}"}`, hostile),
		`m{stage="x\"} or vector(1) #",cluster=~"a\\.b|c\""}`; got != want {
		t.Errorf("hostile values rendered %s, want %s", got, want)
	}
	if got, want := Render(`m{cluster=~"{{clusters}}"}`, Context{}), `m{cluster=~"[^\\s\\S]"}`; got != want {
		t.Errorf("no clusters rendered %s, want %s (a regular expression that matches nothing)", got, want)
	}
}

func TestClusterNames(t *testing.T) {
	b := &ksv1alpha1.Binding{Spec: ksv1alpha1.BindingSpec{Destinations: []ksv1alpha1.Destination{
		{ClusterId: "prod1"}, {ClusterId: `x"|.*`}, {ClusterId: "edge.east"}, {ClusterId: "UPPER"},
	}}}
	if got := ClusterNames(b); fmt.Sprint(got) != "[prod1 edge.east]" {
		t.Errorf("ClusterNames = %v, want the DNS subdomains only", got)
	}
	if got := ClusterNames(nil); got != nil {
		t.Errorf("ClusterNames(nil) = %v", got)
	}
}
