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

package kcpe2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

// policy is a dev -> prod policy for the ConfigMap labelled app=<name>
// (kcp workspaces serve no Deployments).
func policy(name string) *v1alpha1.StagedBindingPolicy {
	return policytest.Policy(name, map[string]string{"app": name},
		policytest.Stage("dev", policytest.ConfigMaps, policytest.Available),
		policytest.Stage("prod", "", ""))
}

// startRollout creates a ConfigMap workload and its policy in a WDS.
func startRollout(t *testing.T, w *wds, name string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": name}},
		Data: map[string]string{"greeting": "hello"}}
	for _, obj := range []client.Object{cm, policy(name)} {
		if err := w.client.Create(suite.ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating %T %s in %s: %v", obj, name, w.space, err)
		}
	}
}

// waitForStage waits until a policy's active stage and phase are the given ones.
func waitForStage(t *testing.T, w *wds, name, stage string, phase v1alpha1.RolloutPhase) *v1alpha1.StagedBindingPolicy {
	t.Helper()
	ps := policytest.Space{Name: w.space, Client: w.client, Ctx: suite.ctx, Timeout: timeout}
	return ps.WaitFor(t, name, fmt.Sprintf("in stage %s, %s", stage, phase), func(p *v1alpha1.StagedBindingPolicy) bool {
		return p.Status.ActiveStage == stage && p.Status.Phase == phase
	})
}

// makeAvailable makes the dev WECs of a policy report its workload available.
func makeAvailable(w *wds, name string) {
	w.availability.SetAvailable(v1alpha1.StagePlacement(name, "dev").String(), true)
	w.sim.Resync()
}

// metrics returns the stager's metrics exposition, scraped over HTTPS with
// the token of a ServiceAccount bound to the metrics-reader ClusterRole.
func metrics(ctx context.Context) (string, error) {
	return stack.ScrapeMetrics(ctx, suite.stager.Flag("metrics-bind-address"), suite.metricsToken)
}

// waitForSpaceReady waits until the stager reports a space engaged and ready.
func waitForSpaceReady(t *testing.T, space string) {
	t.Helper()
	want := fmt.Sprintf(`stager_space_ready{space=%q} 1`, space)
	environment.Eventually(t, timeout, want, func() error {
		text, err := metrics(suite.ctx)
		if err != nil {
			return err
		}
		if !strings.Contains(text, want) {
			return fmt.Errorf("not in the metrics")
		}
		return nil
	})
}

// TestRolloutsInWorkspacesAndKubeconfigSpace rolls a policy out in two kcp
// workspaces and in a kubeconfig WDS served by the same stager: each space
// is named after its provider and path, and each moves at its own pace.
func TestRolloutsInWorkspacesAndKubeconfigSpace(t *testing.T) {
	const name = "web"
	for _, n := range []string{"wds0", "wds1", "wds2"} {
		waitForSpaceReady(t, wdsNamed(n).space)
		startRollout(t, wdsNamed(n), name)
	}
	for _, n := range []string{"wds0", "wds1", "wds2"} {
		waitForStage(t, wdsNamed(n), name, "dev", v1alpha1.RolloutProgressing)
	}
	makeAvailable(wdsNamed("wds1"), name)
	waitForStage(t, wdsNamed("wds1"), name, "prod", v1alpha1.RolloutCompleted)
	for _, n := range []string{"wds0", "wds2"} {
		if p := waitForStage(t, wdsNamed(n), name, "dev", v1alpha1.RolloutProgressing); p.Status.ActiveStage != "dev" {
			t.Fatalf("%s moved on with another space's WECs", n)
		}
	}
	makeAvailable(wdsNamed("wds0"), name)
	makeAvailable(wdsNamed("wds2"), name)
	for _, n := range []string{"wds0", "wds2"} {
		waitForStage(t, wdsNamed(n), name, "prod", v1alpha1.RolloutCompleted)
	}
	// Only the prod BindingPolicy is left in a workspace, and the stager
	// wrote its Events there (through the export's events claim).
	w := wdsNamed("wds1")
	environment.Eventually(t, timeout, "the StageSucceeded Event in "+w.space, func() error {
		events := &eventsv1.EventList{}
		if err := w.client.List(suite.ctx, events); err != nil {
			return err
		}
		var reasons []string
		for _, e := range events.Items {
			if e.Regarding.Name == name && e.Reason == v1alpha1.EventReasonStageSucceeded {
				return nil
			}
			reasons = append(reasons, e.Reason)
		}
		return fmt.Errorf("Events: %v", reasons)
	})
	environment.Eventually(t, timeout, "only the prod BindingPolicy in "+w.space, func() error {
		list := &ksv1alpha1.BindingPolicyList{}
		if err := w.client.List(suite.ctx, list, client.MatchingLabels{v1alpha1.PolicyLabel: name}); err != nil {
			return err
		}
		if len(list.Items) != 1 || list.Items[0].Name != v1alpha1.StagePlacement(name, "prod").String() {
			return fmt.Errorf("%d BindingPolicies", len(list.Items))
		}
		return nil
	})
}

// TestWorkspaceCreatedAfterStart binds a new workspace while the stager
// runs: it is engaged under its path and its rollout completes.
func TestWorkspaceCreatedAfterStart(t *testing.T) {
	const name = "late"
	w, err := addWorkspace(suite.ctx, "wds3")
	if err != nil {
		t.Fatalf("adding wds3: %v", err)
	}
	if w.space != "kcp#root:wds3" {
		t.Fatalf("space name %q", w.space)
	}
	waitForSpaceReady(t, w.space)
	startRollout(t, w, name)
	waitForStage(t, w, name, "dev", v1alpha1.RolloutProgressing)
	makeAvailable(w, name)
	waitForStage(t, w, name, "prod", v1alpha1.RolloutCompleted)
}

// TestUnboundWorkspaceIsDisengaged deletes a workspace's binding to the
// stager's export: the space is disengaged and its metric series vanish,
// while the other spaces carry on.
func TestUnboundWorkspaceIsDisengaged(t *testing.T) {
	w, err := addWorkspace(suite.ctx, "wds4")
	if err != nil {
		t.Fatalf("adding wds4: %v", err)
	}
	waitForSpaceReady(t, w.space)
	if err := suite.kcp.Unbind(suite.ctx, w.workspace); err != nil {
		t.Fatal(err)
	}
	series := fmt.Sprintf(`space=%q`, w.space)
	environment.Eventually(t, timeout, "the series of "+w.space+" to vanish", func() error {
		text, err := metrics(suite.ctx)
		if err != nil {
			return err
		}
		if n := strings.Count(text, series); n > 0 {
			return fmt.Errorf("%d series left", n)
		}
		return nil
	})

	// The others still work.
	const name = "after"
	other := wdsNamed("wds1")
	startRollout(t, other, name)
	waitForStage(t, other, name, "dev", v1alpha1.RolloutProgressing)
	makeAvailable(other, name)
	waitForStage(t, other, name, "prod", v1alpha1.RolloutCompleted)
}
