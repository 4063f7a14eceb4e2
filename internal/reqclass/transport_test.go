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

package reqclass_test

import (
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubestellar/workload-stager/internal/reqclass"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// TestInstrumentCountsByClass sends requests to a real API server through a
// client built on an instrumented config, and finds each counted by its
// class, verb and code; a config instrumented twice counts each request once.
func TestInstrumentCountsByClass(t *testing.T) {
	space := environment.StartTestSpace(t, "reqclass")
	opts := reqclass.Options{FenceLeasePrefix: "fence", PeerLeasePrefix: "peer"}
	cfg := opts.Instrument(opts.Instrument(rest.CopyConfig(space.Config)))
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := counts()
	ctx := t.Context()
	var namespaces corev1.NamespaceList
	if err := c.List(ctx, &namespaces); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fence-a", "peer-b", "other"} {
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
		if err := c.Create(ctx, lease); err != nil {
			t.Fatal(err)
		}
		if err := c.Update(ctx, lease); err != nil {
			t.Fatal(err)
		}
	}
	var missing corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "missing"}, &missing); err == nil {
		t.Fatal("found a Secret that was never made")
	}
	after := counts()
	for _, want := range []struct {
		class, verb, code string
		n                 float64
	}{
		{"namespaces", reqclass.VerbList, "200", 1},
		{"leases", reqclass.VerbPost, "201", 3}, // a Lease's name is in the body of its creation
		{reqclass.ClassFenceLeases, reqclass.VerbPut, "200", 1},
		{reqclass.ClassPeerLeases, reqclass.VerbPut, "200", 1},
		{"leases", reqclass.VerbPut, "200", 1},
		{"secrets", reqclass.VerbGet, "404", 1},
	} {
		key := want.class + " " + want.verb + " " + want.code
		if got := after[key] - before[key]; got != want.n {
			t.Errorf("%s: %v requests counted, want %v", key, got, want.n)
		}
	}
	if n := testutil.CollectAndCount(reqclass.Collectors()[1]); n == 0 {
		t.Error("no request durations recorded")
	}
}

// counts reads stager_api_requests_total by "class verb code".
func counts() map[string]float64 {
	out := map[string]float64{}
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families {
		if f.GetName() != "stager_api_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[labels["class"]+" "+labels["verb"]+" "+labels["code"]] += m.GetCounter().GetValue()
		}
	}
	return out
}

// TestInstrumented finds the counting transport behind other wrappers, and
// not where there is none.
func TestInstrumented(t *testing.T) {
	var opts reqclass.Options
	cfg := &rest.Config{Host: "https://example.invalid"}
	if reqclass.Instrumented(cfg) {
		t.Error("a bare config is instrumented")
	}
	other := func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) { return next.RoundTrip(r) })
	}
	cfg.Wrap(other)
	if reqclass.Instrumented(cfg) {
		t.Error("a config wrapped by another transport alone is instrumented")
	}
	wrapped := opts.Instrument(cfg)
	wrapped.Wrap(other)
	if !reqclass.Instrumented(wrapped) || !reqclass.Instrumented(rest.CopyConfig(wrapped)) {
		t.Error("an instrumented config, wrapped again, or its copy, is not instrumented")
	}
}

// roundTripperFunc is a function as a RoundTripper.
type roundTripperFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
