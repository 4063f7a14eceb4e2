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

package e2e

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

// changeGate is a change-management system on a loopback TLS port: it
// answers GET /api/tickets/<policy>/<stage>, to its bearer token only,
// with the state the test set for the policy (pending until then), and
// records the paths asked.
type changeGate struct {
	*httptest.Server
	mu     sync.Mutex
	states map[string]string
	asked  map[string]int
}

const changeGateToken = "change-gate-token"

func newChangeGate(t *testing.T) *changeGate {
	t.Helper()
	g := &changeGate{states: map[string]string{}, asked: map[string]int{}}
	g.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.Header.Get("Authorization") != "Bearer "+changeGateToken {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/api/tickets/"), "/")
		if len(parts) != 2 {
			http.NotFound(w, r)
			return
		}
		g.mu.Lock()
		g.asked[r.URL.Path]++
		state, ok := g.states[parts[0]]
		g.mu.Unlock()
		if !ok {
			state = "pending"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"ticket": parts[0] + "/" + parts[1], "state": state, "space": r.URL.Query().Get("space")})
	}))
	t.Cleanup(g.Close)
	return g
}

func (g *changeGate) set(policy, state string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.states[policy] = state
}

// TestWebGates runs policies whose test stage waits on a web gate, a
// MetricProvider with spec.web whose CA and token come from a labelled
// Secret, served on a loopback TLS port by the test: the stager's
// measurements say wait (Inconclusive, within inconclusiveLimit, not
// counted) while the ticket is pending; a rejected ticket fails the stage
// and, with onFailure Abort, aborts the rollout; an approved one lets the
// stage advance.
func TestWebGates(t *testing.T) {
	gate := newChangeGate(t)
	c := hostingClient(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: stack.StagerSecretNamespace, Name: "change-gate",
		Labels: map[string]string{hostingv1alpha1.CredentialLabel: "true"}},
		Data: map[string][]byte{"ca.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: gate.Certificate().Raw}),
			"token": []byte(changeGateToken)}}
	if err := c.Create(suite.ctx, secret); err != nil {
		t.Fatalf("creating Secret %s: %v", secret.Name, err)
	}
	t.Cleanup(func() { _ = c.Delete(suite.ctx, secret) })
	mp := &hostingv1alpha1.MetricProvider{ObjectMeta: metav1.ObjectMeta{Name: "change-gate"},
		Spec: hostingv1alpha1.MetricProviderSpec{Spaces: []string{"wds1"}, Web: &hostingv1alpha1.WebProvider{Address: gate.URL + "/api",
			CASecretRef:          &hostingv1alpha1.SecretKeyRef{Name: secret.Name, Key: "ca.crt"},
			BearerTokenSecretRef: &hostingv1alpha1.SecretKeyRef{Name: secret.Name, Key: "token"}}}}
	if err := c.Create(suite.ctx, mp); err != nil {
		t.Fatalf("creating MetricProvider %s: %v", mp.Name, err)
	}
	t.Cleanup(func() { _ = c.Delete(suite.ctx, mp) })

	// gated is ThreeStages whose test stage waits on the change ticket.
	gated := func(name string) *v1alpha1.StagedBindingPolicy {
		p := policytest.ThreeStages(name, name)
		p.Spec.Stages[1].OnFailure = v1alpha1.FailureAbort
		p.Spec.Stages[1].Analysis = []v1alpha1.Analysis{{Name: "change", Provider: "change-gate",
			Web:      &v1alpha1.WebRequest{Path: "tickets/{{policy}}/{{stage}}", Params: map[string]string{"space": "{{space}}"}},
			Interval: &metav1.Duration{Duration: time.Second}, InconclusiveLimit: 1000,
			SuccessCondition: `result.state == 'approved'`, FailureCondition: `result.state == 'rejected'`}}
		return p
	}
	// waiting waits until test's gate said wait twice, the stage still
	// active.
	waiting := func(t *testing.T, name string) {
		t.Helper()
		p := policies("wds1").WaitFor(t, name, "test waiting on its gate", func(p *v1alpha1.StagedBindingPolicy) bool {
			r := p.Status.StageNamed("test")
			return r != nil && len(r.Analyses) == 1 && r.Analyses[0].Inconclusive >= 2
		})
		r := analysisOf(t, p, "test", "change")
		last := r.Measurements[len(r.Measurements)-1]
		if p.Status.ActiveStage != "test" || r.Phase != v1alpha1.AnalysisRunning ||
			!strings.Contains(last.Message, "neither the successCondition nor the failureCondition holds") ||
			!strings.Contains(last.Value, `"state":"pending"`) || !strings.Contains(last.Value, `"space":"wds1"`) {
			t.Fatalf("test %s, its gate %+v; want it waiting, saying why, on the pending ticket", p.Status.ActiveStage, r)
		}
	}

	t.Run("wait, then rejected: the stage fails and the rollout aborts", func(t *testing.T) {
		t.Parallel()
		const name = "web-gate-rejected"
		startAnalysed(t, gated(name))
		makeAvailable("wds1", name, "dev")
		makeAvailable("wds1", name, "test")
		waiting(t, name)
		gate.set(name, "rejected")
		p := policies("wds1").WaitForPhase(t, name, v1alpha1.RolloutAborted)
		if f := p.Status.Failure; f == nil || f.Stage != "test" || f.Reason != v1alpha1.ReasonAnalysisFailed || f.Action != v1alpha1.FailureAbort {
			t.Errorf("failure %+v, want test's gate failed, aborting", p.Status.Failure)
		}
		if r := analysisOf(t, p, "test", "change"); r.Phase != v1alpha1.AnalysisFailed || r.Failed != 1 || r.Successful != 0 {
			t.Errorf("test's gate %+v, want Failed once", r)
		}
		waitForOnlyBindingPolicy(t, "wds1", name, "dev", "dev1", "dev2")
	})

	t.Run("wait, then approved: the stage advances", func(t *testing.T) {
		t.Parallel()
		const name = "web-gate-approved"
		startAnalysed(t, gated(name))
		makeAvailable("wds1", name, "dev")
		makeAvailable("wds1", name, "test")
		waiting(t, name)
		gate.set(name, "approved")
		p := policies("wds1").WaitForActiveStage(t, name, "prod")
		if r := analysisOf(t, p, "test", "change"); r.Phase != v1alpha1.AnalysisSuccessful || r.Successful != 1 || r.Inconclusive < 2 {
			t.Errorf("test's gate %+v, want Successful after its waits", r)
		}
		gate.mu.Lock()
		asked := gate.asked["/api/tickets/"+name+"/test"]
		gate.mu.Unlock()
		if asked < 3 {
			t.Errorf("the gate was asked %d times for test, want at least 3", asked)
		}
	})
}
