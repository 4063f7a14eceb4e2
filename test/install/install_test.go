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
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/helm"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

// policies returns the policy helpers of a WDS.
func policies(wds string) policytest.Space {
	return policytest.Space{Name: wds, Client: suite.stack.WDS[wds].Client, Ctx: suite.ctx, Timeout: timeout}
}

// startRollout creates a workload and its dev → test → prod policy in a WDS.
func startRollout(t *testing.T, wds, name string) {
	t.Helper()
	for _, obj := range []client.Object{policytest.Deployment(namespace, name), policytest.ThreeStages(name, name)} {
		if err := suite.stack.WDS[wds].Client.Create(suite.ctx, obj); err != nil {
			t.Fatalf("creating %T %s in %s: %v", obj, name, wds, err)
		}
	}
	t.Cleanup(func() { policies(wds).Delete(t, name) })
}

// makeAvailable makes the WECs of one stage of a policy report its
// Deployment available.
func makeAvailable(wds, policy, stage string) {
	suite.stack.WECs.SetAvailable(stack.Match{WDS: wds, BindingPolicy: v1alpha1.StagePlacement(policy, stage).String(), Resource: "deployments"}, 1)
	suite.stack.WECs.Resync()
}

// TestRolloutsAsInstalled rolls out dev → test → prod in both WDSes through
// the installed stager: the chart's identity, arguments and RBAC, and the
// space chart's role, suffice for a whole rollout.
func TestRolloutsAsInstalled(t *testing.T) {
	const name = "installed"
	for _, wds := range wdses {
		startRollout(t, wds, name)
	}
	for _, stage := range []string{"dev", "test"} {
		for _, wds := range wdses {
			policies(wds).WaitForActiveStage(t, name, stage)
			makeAvailable(wds, name, stage)
		}
	}
	for _, wds := range wdses {
		p := policies(wds).WaitForPhase(t, name, v1alpha1.RolloutCompleted)
		if p.Status.ActiveStage != "prod" {
			t.Errorf("%s: completed in stage %q, want prod: %s", wds, p.Status.ActiveStage, policytest.Describe(p))
		}
	}
}

// TestMissingPermissionIsNamed takes one rule the stager needs out of the
// space chart's role in a WDS (creating BindingPolicies): the stager's log
// names the missing permission, and once the chart's role is applied again
// the rollout proceeds.
func TestMissingPermissionIsNamed(t *testing.T) {
	const wds, name = "wds2", "unpermitted"
	c := suite.stack.WDS[wds].Client
	chartRole := helm.Find(suite.spaceChart, "ClusterRole", "stager-space")
	if chartRole == nil {
		t.Fatal("the space chart renders no ClusterRole stager-space")
	}
	role := &rbacv1.ClusterRole{}
	if err := c.Get(suite.ctx, client.ObjectKey{Name: chartRole.GetName()}, role); err != nil {
		t.Fatal(err)
	}
	removed := false
	for i, rule := range role.Rules {
		if slices.Contains(rule.Resources, "bindingpolicies") && slices.Contains(rule.Verbs, "create") {
			role.Rules[i].Verbs = slices.DeleteFunc(slices.Clone(rule.Verbs), func(v string) bool { return v == "create" })
			removed = true
		}
	}
	if !removed {
		t.Fatalf("the space chart's role grants no create on bindingpolicies: %v", role.Rules)
	}
	if err := c.Update(suite.ctx, role); err != nil {
		t.Fatalf("taking create on bindingpolicies out of %s: %v", role.Name, err)
	}
	restore := func() {
		if err := helm.Apply(suite.ctx, c, []*unstructured.Unstructured{chartRole}); err != nil {
			t.Fatalf("applying the chart's role again: %v", err)
		}
	}
	t.Cleanup(restore)

	startRollout(t, wds, name)
	want := fmt.Sprintf("User \"%s\" cannot create resource \"bindingpolicies\" in API group \"control.kubestellar.io\"", spaceUser)
	took := environment.Eventually(t, timeout, "the stager's log to name the missing permission", func() error {
		log, err := os.ReadFile(suite.stager.LogPath())
		if err != nil {
			return err
		}
		// The log is JSON: the error's quotes are escaped.
		if !strings.Contains(strings.ReplaceAll(string(log), `\"`, `"`), want) {
			return fmt.Errorf("the log (%s) does not say %s", suite.stager.LogPath(), want)
		}
		return nil
	})
	t.Logf("the stager's log named the missing permission after %s: %s", took, want)
	if p := policies(wds).Get(t, name); p.Status.ActiveStage != "" && p.Status.ActiveStage != "dev" {
		t.Errorf("the rollout moved on without its BindingPolicy: %s", policytest.Describe(p))
	}

	restore()
	policies(wds).WaitForActiveStage(t, name, "dev")
	environment.Eventually(t, timeout, "the dev BindingPolicy once the permission is back", func() error {
		return c.Get(suite.ctx, client.ObjectKey{Name: v1alpha1.StagePlacement(name, "dev").String()}, &ksv1alpha1.BindingPolicy{})
	})
}
