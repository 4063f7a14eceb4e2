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

package reqclass

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// leases are the Lease name prefixes of the tests, the stager's own.
var leases = Options{FenceLeasePrefix: "workload-stager-shard", PeerLeasePrefix: "workload-stager-peer"}

// TestClassify maps requests the stager sends to their class and verb,
// through kcp's prefixes too.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		method, url string
		class, verb string
	}{
		{"GET", "/api", ClassDiscovery, VerbGet},
		{"GET", "/api/v1", ClassDiscovery, VerbGet},
		{"GET", "/apis", ClassDiscovery, VerbGet},
		{"GET", "/apis/control.kubestellar.io", ClassDiscovery, VerbGet},
		{"GET", "/apis/control.kubestellar.io/v1alpha1", ClassDiscovery, VerbGet},
		{"GET", "/version", ClassDiscovery, VerbGet},
		{"GET", "/openapi/v3", ClassDiscovery, VerbGet},
		{"GET", "/readyz", ClassReadyz, VerbGet},
		{"GET", "/readyz?verbose=1", ClassReadyz, VerbGet},
		{"GET", "/healthz", ClassOther, VerbGet},
		{"GET", "/", ClassOther, VerbGet},
		{"POST", "/api/v1/namespaces/x/events", "events", VerbPost},
		{"PATCH", "/api/v1/namespaces/x/events/e1", "events", VerbPatch},
		{"GET", "/api/v1/namespaces", "namespaces", VerbList},
		{"GET", "/api/v1/namespaces/x", "namespaces", VerbGet},
		{"GET", "/api/v1/namespaces/x/secrets?labelSelector=a%3Db", "secrets", VerbList},
		{"GET", "/api/v1/namespaces/x/secrets?watch=true&resourceVersion=5", "secrets", VerbWatch},
		{"GET", "/api/v1/namespaces/x/secrets?watch=1", "secrets", VerbWatch},
		{"GET", "/api/v1/watch/namespaces/x/secrets", "secrets", VerbWatch},
		{"GET", "/api/v1/namespaces/x/secrets/s", "secrets", VerbGet},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/workload-stager-shard-abc", ClassFenceLeases, VerbPut},
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/workload-stager-peer-r1", ClassPeerLeases, VerbGet},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/workload-stager.community.kubestellar.io", "leases", VerbPut},
		{"POST", "/apis/coordination.k8s.io/v1/namespaces/ns/leases", "leases", VerbPost},
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/ns/leases?labelSelector=x", "leases", VerbList},
		{"GET", "/apis/control.kubestellar.io/v1alpha1/bindingpolicies", "bindingpolicies", VerbList},
		{"DELETE", "/apis/control.kubestellar.io/v1alpha1/bindingpolicies/p", "bindingpolicies", VerbDelete},
		{"PUT", "/apis/community.kubestellar.io/v1alpha1/stagedbindingpolicies/p/status", "stagedbindingpolicies/status", VerbPut},
		{"GET", "/apis/community.kubestellar.io/v1alpha1/stagedbindingpolicies/p/scale", ClassOther, VerbGet},
		{"GET", "/apis/control.kubestellar.io/v1alpha1/namespaces/n/combinedstatuses", "combinedstatuses", VerbList},
		// kcp: a workspace, every workspace, and a workspace through the APIExport's virtual workspace.
		{"GET", "/clusters/root:wds001/apis/control.kubestellar.io/v1alpha1/bindingpolicies?watch=true", "bindingpolicies", VerbWatch},
		{"GET", "/clusters/*/apis/control.kubestellar.io/v1alpha1/bindingpolicies", "bindingpolicies", VerbList},
		{"PUT", "/services/apiexport/root:stager/workload-stager/clusters/2x9a/apis/community.kubestellar.io/v1alpha1/stagedbindingpolicies/p/status",
			"stagedbindingpolicies/status", VerbPut},
		{"POST", "/services/apiexport/root:stager/workload-stager/clusters/2x9a/api/v1/namespaces/default/events", "events", VerbPost},
		{"GET", "/services/apiexport/root:stager/workload-stager/clusters/*/apis/apis.kcp.io/v1alpha1/apibindings", "apibindings", VerbList},
		{"GET", "/services/apiexport/root:stager/workload-stager/clusters/2x9a/api", ClassDiscovery, VerbGet},
		{"GET", "/clusters/root:wds001/apis/core.kcp.io/v1alpha1/logicalclusters/cluster", "logicalclusters", VerbGet},
		{"GET", "/clusters/root/readyz", ClassReadyz, VerbGet},
		// Hostile or unknown paths stay within the fixed labels.
		{"GET", "/apis/evil.example.com/v1/namespaces/x/bitcoins", ClassOther, VerbList},
		{"GET", "/api/v1/namespaces/x/pods/p/exec", ClassOther, VerbGet},
		{"GET", "/clusters", ClassOther, VerbGet},
		{"GET", "/services/apiexport/a", ClassOther, VerbGet},
		{"GET", "/apis/g/v/namespaces/x/secrets/s/status/more", ClassOther, VerbGet},
		{"BREW", "/api/v1/namespaces", "namespaces", VerbOther},
		{"DELETE", "/api/v1/namespaces/x/secrets", "secrets", VerbDelete},
	} {
		u, err := url.Parse("https://kcp.example:6443" + tc.url)
		if err != nil {
			t.Fatal(err)
		}
		class, verb := leases.Classify(tc.method, u)
		if class != tc.class || verb != tc.verb {
			t.Errorf("%s %s: %s %s, want %s %s", tc.method, tc.url, class, verb, tc.class, tc.verb)
		}
	}
}

// TestClassifyIsBounded: whatever the method and path, the class, the verb
// and the code are among the fixed labels, so that no server and no name
// grows the series.
func TestClassifyIsBounded(t *testing.T) {
	classes := map[string]bool{ClassDiscovery: true, ClassReadyz: true, ClassOther: true, ClassFenceLeases: true, ClassPeerLeases: true}
	for _, r := range resources {
		classes[r] = true
		classes[r+"/status"] = true
	}
	verbs := map[string]bool{VerbGet: true, VerbList: true, VerbWatch: true, VerbPost: true, VerbPut: true, VerbPatch: true, VerbDelete: true, VerbOther: true}
	segment := rapid.OneOf(rapid.SampledFrom([]string{"api", "apis", "v1", "clusters", "services", "apiexport", "namespaces", "watch",
		"leases", "status", "*", "", "workload-stager-shard-x", "readyz", "version"}), rapid.String())
	rapid.Check(t, func(t *rapid.T) {
		method := rapid.OneOf(rapid.SampledFrom([]string{"GET", "PUT", "POST", "PATCH", "DELETE"}), rapid.String()).Draw(t, "method")
		path := "/" + strings.Join(rapid.SliceOfN(segment, 0, 12).Draw(t, "segments"), "/")
		u := &url.URL{Scheme: "https", Host: "h", Path: path, RawQuery: rapid.SampledFrom([]string{"", "watch=true", "watch=%zz"}).Draw(t, "query")}
		class, verb := leases.Classify(method, u)
		if !classes[class] || !verbs[verb] {
			t.Fatalf("%s %s: %q %q, not a fixed label", method, u, class, verb)
		}
		code := codeOf(&http.Response{StatusCode: rapid.Int().Draw(t, "code")}, nil)
		if !strings.HasSuffix(code, "xx") && !knownCodes[code] && code != CodeError && code != ClassOther {
			t.Fatalf("code %q is not a fixed label", code)
		}
	})
}
