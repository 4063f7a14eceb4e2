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

package install

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

// TestWaveAsInstalled runs a RolloutWave [wds1] → [wds2] through the
// installed stager, whose hosting identity is the chart's ServiceAccount
// with only the chart's ClusterRoles (stager-rollout-waves among them): it
// reports both spaces into the wave's status and holds wds2's v1 until
// wds1 has completed it, and its log shows no request of that identity
// refused.
func TestWaveAsInstalled(t *testing.T) {
	const name, revision = "waved", "v1"
	hosting := hostingClient(t)
	w := &hostingv1alpha1.RolloutWave{ObjectMeta: metav1.ObjectMeta{Name: "installed"}, Spec: hostingv1alpha1.RolloutWaveSpec{
		Policies: []string{name},
		Steps:    []hostingv1alpha1.WaveStep{{Name: "first", Spaces: []string{wdses[0]}}, {Name: "second", Spaces: []string{wdses[1]}}},
	}}
	if err := hosting.Create(suite.ctx, w); err != nil {
		t.Fatalf("creating the RolloutWave: %v", err)
	}
	t.Cleanup(func() {
		if err := hosting.Delete(suite.ctx, w); err != nil {
			t.Errorf("deleting the RolloutWave: %v", err)
		}
	})
	for _, wds := range wdses {
		d := policytest.Deployment(namespace, name)
		d.Labels["app.kubernetes.io/version"] = revision
		p := policytest.Policy(name, map[string]string{policytest.AppLabel: name},
			policytest.Stage("dev", policytest.Deployments, policytest.Available),
			policytest.Stage("prod", "", ""))
		p.Spec.Revision = &v1alpha1.Revision{Name: revision}
		for _, obj := range []client.Object{d, p} {
			if err := suite.stack.WDS[wds].Client.Create(suite.ctx, obj); err != nil {
				t.Fatalf("creating %T %s in %s: %v", obj, name, wds, err)
			}
		}
		t.Cleanup(func() { policies(wds).Delete(t, name) })
	}
	first, second := policies(wdses[0]), policies(wdses[1])
	openDev := func(wds string) {
		suite.stack.WECs.SetAvailable(stack.Match{WDS: wds, BindingPolicy: v1alpha1.StagePlacement(name, "dev").At(revision).String(), Resource: "deployments"}, 1)
		suite.stack.WECs.Resync()
	}
	reported := func(want map[string]string) func() error {
		return func() error {
			got := &hostingv1alpha1.RolloutWave{}
			if err := hosting.Get(suite.ctx, client.ObjectKeyFromObject(w), got); err != nil {
				return err
			}
			for space, phase := range want {
				i := slices.IndexFunc(got.Status.Spaces, func(r hostingv1alpha1.WaveSpaceReport) bool { return r.Space == space })
				if i < 0 || !got.Status.Spaces[i].Engaged {
					return fmt.Errorf("no engaged report of %s: %+v", space, got.Status.Spaces)
				}
				r := got.Status.Spaces[i]
				if len(r.Policies) != 1 || r.Policies[0].Name != name || r.Policies[0].Phase != phase {
					return fmt.Errorf("%s reports %+v, want %s %s", space, r.Policies, name, phase)
				}
			}
			return nil
		}
	}

	first.WaitForActiveStage(t, name, "dev")
	second.WaitForCondition(t, name, v1alpha1.ConditionWaitingForWave, metav1.ConditionTrue, "WaitingForEarlierSteps")
	environment.Eventually(t, timeout, "both spaces reported into the wave", reported(map[string]string{
		wdses[0]: string(v1alpha1.RolloutProgressing), wdses[1]: string(v1alpha1.RolloutPending)}))
	if p := second.Get(t, name); p.Status.Phase != v1alpha1.RolloutPending || p.Status.UpdateRevision != "" {
		t.Fatalf("%s started while held: %s", wdses[1], policytest.Describe(p))
	}
	if bps := boundPolicies(t, wdses[1], name); len(bps) != 0 {
		t.Fatalf("%s placed %v while held", wdses[1], bps)
	}

	openDev(wdses[0])
	first.WaitFor(t, name, "to complete "+revision, func(p *v1alpha1.StagedBindingPolicy) bool {
		return p.Status.Phase == v1alpha1.RolloutCompleted && p.Status.CurrentRevision == revision
	})
	second.WaitForActiveStage(t, name, "dev")
	if c := meta.FindStatusCondition(second.Get(t, name).Status.Conditions, v1alpha1.ConditionWaitingForWave); c != nil {
		t.Errorf("%s still has %s once released: %+v", wdses[1], v1alpha1.ConditionWaitingForWave, c)
	}
	openDev(wdses[1])
	second.WaitFor(t, name, "to complete "+revision, func(p *v1alpha1.StagedBindingPolicy) bool {
		return p.Status.Phase == v1alpha1.RolloutCompleted && p.Status.CurrentRevision == revision
	})
	environment.Eventually(t, timeout, "both spaces reported Completed into the wave", reported(map[string]string{
		wdses[0]: string(v1alpha1.RolloutCompleted), wdses[1]: string(v1alpha1.RolloutCompleted)}))

	got := &hostingv1alpha1.RolloutWave{}
	if err := hosting.Get(suite.ctx, client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatal(err)
	}
	if got.Generation != 1 {
		t.Errorf("the wave's spec was changed: generation %d", got.Generation)
	}
	if refused := refusedRequests(t); len(refused) != 0 {
		t.Errorf("the stager's hosting identity was refused (%s):\n%s", suite.stager.LogPath(), strings.Join(refused, "\n"))
	}
}

// hostingClient returns a client of the hosting space that knows its kinds.
func hostingClient(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := hostingv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(suite.stack.Hosting.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("a client of the hosting space: %v", err)
	}
	return c
}

// boundPolicies returns the names of the BindingPolicies of a policy in a WDS.
func boundPolicies(t *testing.T, wds, policy string) []string {
	t.Helper()
	list := &ksv1alpha1.BindingPolicyList{}
	if err := suite.stack.WDS[wds].Client.List(suite.ctx, list, client.MatchingLabels{v1alpha1.PolicyLabel: policy}); err != nil {
		t.Fatalf("listing BindingPolicies in %s: %v", wds, err)
	}
	var names []string
	for _, bp := range list.Items {
		names = append(names, bp.Name)
	}
	return names
}

// refusal is how the API server words a request its authorizer refused.
var refusal = regexp.MustCompile(`cannot [a-z]+ resource`)

// refusedRequests returns the lines of the stager's log in which the API
// server refused a request of the chart's ServiceAccount (the hosting
// identity), or of anyone on a RolloutWave.
func refusedRequests(t *testing.T) []string {
	t.Helper()
	log, err := os.ReadFile(suite.stager.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	var refused []string
	lines := bufio.NewScanner(bytes.NewReader(log))
	lines.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for lines.Scan() {
		line := strings.ToLower(lines.Text())
		if !strings.Contains(line, "forbidden") && !refusal.MatchString(line) {
			continue
		}
		if strings.Contains(line, "system:serviceaccount:"+releaseNamespace+":") || strings.Contains(line, "rolloutwave") {
			refused = append(refused, lines.Text())
		}
	}
	if err := lines.Err(); err != nil {
		t.Fatalf("reading %s: %v", suite.stager.LogPath(), err)
	}
	return refused
}
