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

package spaces

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// fakeEndpoint is a kcp-like virtual workspace endpoint: it serves many
// spaces under /clusters/<id>, has no /readyz, and answers the discovery
// the Runner asks of a space requiring ConfigMaps. It counts the probes
// (GETs of /readyz and /apis) it is sent, and answers 503 to everything
// while down.
type fakeEndpoint struct {
	server *httptest.Server
	down   atomic.Bool
	probes atomic.Int64
	// broken, when set, is the one space whose path answers 403.
	broken atomic.Pointer[string]
}

// newFakeEndpoint starts a fakeEndpoint, stopped when the test ends.
func newFakeEndpoint(t *testing.T) *fakeEndpoint {
	t.Helper()
	f := &fakeEndpoint{}
	f.server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.server.Close)
	return f
}

// serve answers a request to one of the endpoint's spaces.
func (f *fakeEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/clusters/")
	id, path, found := strings.Cut(rest, "/")
	if !ok || !found {
		http.NotFound(w, r)
		return
	}
	path = "/" + path
	if path == "/readyz" || path == "/apis" {
		f.probes.Add(1)
	}
	if f.down.Load() {
		http.Error(w, "the endpoint is down", http.StatusServiceUnavailable)
		return
	}
	if broken := f.broken.Load(); broken != nil && *broken == id {
		http.Error(w, "this logical cluster is not served", http.StatusForbidden)
		return
	}
	var body any
	switch path {
	case "/apis":
		body = &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	case "/api":
		body = &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}}
	case "/api/v1":
		body = &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1",
			APIResources: []metav1.APIResource{{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: []string{"get", "list", "watch"}}}}
	default: // /readyz among them, as on kcp's virtual workspaces
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// endpointCluster is a kcp-like space: its API server is the endpoint's
// /clusters/<id>, and its caches are those of a cluster it shares with the
// endpoint's other spaces, as kcp's spaces share the provider's.
type endpointCluster struct {
	cluster.Cluster
	config   *rest.Config
	endpoint string
}

// GetConfig returns the config of the space's own path on the endpoint.
func (c *endpointCluster) GetConfig() *rest.Config { return c.config }

// ProbeEndpoint names the endpoint, as kcp's spaces do.
func (c *endpointCluster) ProbeEndpoint() string { return c.endpoint }

// engageEndpointSpaces engages n spaces of the endpoint, on one shared
// cluster of the shared space, and waits until they are all ready: the
// first alone before the others, so that it is the one the endpoint's
// probe asks. It returns their names, their logical cluster IDs and their
// disengaging functions.
func engageEndpointSpaces(t *testing.T, h *harness, f *fakeEndpoint, n int) (names, ids []string, disengage []context.CancelFunc) {
	t.Helper()
	shared := h.newCluster()
	for i := range n {
		id := fmt.Sprintf("lc%03d", i)
		ids, names = append(ids, id), append(names, "root:space"+id)
		cl := &endpointCluster{Cluster: shared, config: &rest.Config{Host: f.server.URL + "/clusters/" + id}, endpoint: f.server.URL}
		disengage = append(disengage, h.engage(names[i], cl))
		if i == 0 {
			environment.Eventually(t, waitTimeout, "the first space ready", func() error { return allReady(h, names, true) })
		}
	}
	environment.Eventually(t, waitTimeout, "every space of the endpoint ready", func() error { return allReady(h, names, true) })
	return names, ids, disengage
}

// allReady returns an error unless the Runner lists every named space as
// ready (or, with ready false, as unreachable).
func allReady(h *harness, names []string, ready bool) error {
	states := map[string]State{}
	for _, s := range h.runner.Spaces() {
		states[s.Name] = s
	}
	for _, name := range names {
		s, ok := states[name]
		switch {
		case !ok:
			return fmt.Errorf("the Runner does not list %s", name)
		case ready && (!s.Ready || s.Reason != ReasonReady):
			return fmt.Errorf("%s is not ready: %s %q", name, s.Reason, s.Message)
		case !ready && (s.Ready || s.Reason != ReasonUnreachable):
			return fmt.Errorf("%s is not unreachable: Ready=%t %s %q", name, s.Ready, s.Reason, s.Message)
		}
	}
	return nil
}

// endpointSpaces is how many spaces the tests engage on one endpoint.
const endpointSpaces = 30

// TestSpacesOfAnEndpointAreProbedOnceARound engages 30 kcp-like spaces of
// one endpoint and counts the probes reaching it over three probe
// intervals: one a round (issue 61: one per space and round was most of
// the fleet's requests at 300 spaces), every space staying ready. Once
// they are all disengaged, the endpoint is probed no more.
func TestSpacesOfAnEndpointAreProbedOnceARound(t *testing.T) {
	needsAPIServer(t)
	h := newHarness(t, &corev1.ConfigMap{})
	h.start()
	f := newFakeEndpoint(t)
	names, _, disengage := engageEndpointSpaces(t, h, f, endpointSpaces)

	const rounds = 3
	before := f.probes.Load()
	time.Sleep(rounds * probeInterval)
	probes := f.probes.Load() - before
	t.Logf("%d probes of the endpoint's %d spaces in %d probe intervals", probes, len(names), rounds)
	// At most one more round than the window holds, whatever its phase.
	if probes > rounds+1 {
		t.Errorf("%d probes in %d probe intervals, want at most %d: one a round for the whole endpoint", probes, rounds, rounds+1)
	}
	if err := allReady(h, names, true); err != nil {
		t.Error(err)
	}

	for _, cancel := range disengage {
		cancel()
	}
	environment.Eventually(t, waitTimeout, "every space disengaged", func() error {
		if states := h.runner.Spaces(); len(states) > 0 {
			return fmt.Errorf("the Runner still lists %s", summary(states))
		}
		return nil
	})
	before = f.probes.Load()
	time.Sleep(2 * probeInterval)
	if probes := f.probes.Load() - before; probes != 0 {
		t.Errorf("%d probes of an endpoint with no space engaged", probes)
	}
}

// TestEndpointDownMarksEverySpaceUnreachableAndBack takes down the endpoint
// of 30 kcp-like spaces, after disengaging the first engaged of them (which
// the endpoint's probe asked until then): every space left is
// reported unreachable, through OnChange too, and ready again once the
// endpoint answers.
func TestEndpointDownMarksEverySpaceUnreachableAndBack(t *testing.T) {
	needsAPIServer(t)
	h := newHarness(t, &corev1.ConfigMap{})
	h.start()
	f := newFakeEndpoint(t)
	names, _, disengage := engageEndpointSpaces(t, h, f, endpointSpaces)
	disengage[0]()
	names = names[1:]
	environment.Eventually(t, waitTimeout, "the first space disengaged", func() error {
		if n := len(h.runner.Spaces()); n != len(names) {
			return fmt.Errorf("the Runner lists %d spaces, want %d", n, len(names))
		}
		return nil
	})

	f.down.Store(true)
	environment.Eventually(t, waitTimeout, "every space unreachable", func() error { return allReady(h, names, false) })
	f.down.Store(false)
	environment.Eventually(t, waitTimeout, "every space ready again", func() error { return allReady(h, names, true) })
	var errs []error
	for _, name := range names {
		errs = append(errs, h.changes.saw(name, false, ReasonUnreachable))
	}
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
}

// TestProbedSpaceFailingAloneMarksItAloneUnreachable breaks the path of
// the space the endpoint's probe asks, the endpoint answering for the
// others: that space alone is reported unreachable, and ready again once
// its path answers.
func TestProbedSpaceFailingAloneMarksItAloneUnreachable(t *testing.T) {
	needsAPIServer(t)
	h := newHarness(t, &corev1.ConfigMap{})
	h.start()
	f := newFakeEndpoint(t)
	names, ids, _ := engageEndpointSpaces(t, h, f, endpointSpaces)

	f.broken.Store(&ids[0])
	environment.Eventually(t, waitTimeout, "the probed space unreachable", func() error { return allReady(h, names[:1], false) })
	environment.Consistently(t, 2*probeInterval, "the other spaces ready", func() error {
		if err := allReady(h, names[:1], false); err != nil {
			return err
		}
		return allReady(h, names[1:], true)
	})
	f.broken.Store(nil)
	environment.Eventually(t, waitTimeout, "every space ready again", func() error { return allReady(h, names, true) })
	for _, name := range names[1:] {
		if err := h.changes.saw(name, false, ReasonUnreachable); err == nil {
			t.Errorf("%s was reported unreachable: %s", name, summary(h.changes.of(name)))
		}
	}
}
