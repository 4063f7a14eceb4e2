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

// Package realdataplane tests the stager on KubeStellar's real data plane
// (test/framework/stack with RealDataPlane): the real controller-manager and
// transport controller per WDS, OCM's work agent per WEC, and WECs whose
// pods kwok runs. What the WECs run is read from their API servers. Only
// KubeStellar's status add-on is a stand-in (dataplane.StatusAgent).
//
// One stack (two WDSes sharing one ITS) and one stager process are shared by
// the package (TestMain).
package realdataplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/dataplane"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/kubestellar"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
	"github.com/kubestellar/workload-stager/test/framework/process"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

// timeout bounds every wait.
const timeout = 3 * time.Minute

// wdses share the ITS and the WECs.
var wdses = []string{"wds1", "wds2"}

// clusters are the WECs.
var clusters = kubestellar.EnvClusters("dev1", "dev2", "test1", "prod1", "edge1")

var suite struct {
	ctx     context.Context
	stack   *stack.Stack
	stager  *process.Process
	workDir string
}

func TestMain(m *testing.M) {
	os.Exit(stack.Main(m, "realdataplane", setUp))
}

// setUp starts the stack on the real data plane, prepares its WDSes and
// starts the stager binary serving them.
func setUp(s *stack.Suite) error {
	suite.ctx, suite.workDir = s.Ctx, s.WorkDir
	st, err := s.StartStack(stack.Options{
		WDSes:      wdses,
		Clusters:   clusters,
		WDSOptions: []environment.SpaceOption{environment.WithStagerCRDs()},
		DataPlane:  stack.RealDataPlane,
	})
	if err != nil {
		return err
	}
	suite.stack = st
	fmt.Printf("KubeStellar with its real data plane started in %s (logs in %s)\n", st.StartedIn.Round(time.Millisecond), suite.workDir)
	for _, name := range wdses {
		if err := suite.stack.ServeWDS(s.Ctx, name, policytest.Collector); err != nil {
			return err
		}
	}
	suite.stager, err = stack.StartStager(s.Ctx, s.Binary, suite.stack.StagerArgs, filepath.Join(suite.workDir, "stager.log"))
	if err != nil {
		return err
	}
	s.Defer(func() error { return suite.stager.Stop() })
	return nil
}

// wds returns a WDS's client.
func wds(name string) client.Client {
	return suite.stack.WDS[name].Client
}

// policies returns the policy helpers of a WDS.
func policies(space string) policytest.Space {
	return policytest.Space{Name: space, Client: wds(space), Ctx: suite.ctx, Timeout: timeout}
}

// createWorkload creates, in a WDS, the workload named app: a namespace of
// the same name and a one-replica Deployment in it, both labelled
// AppLabel=<app> so that the policy carries the namespace to the WECs too.
func createWorkload(t testing.TB, space, app string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app, Labels: map[string]string{policytest.AppLabel: app}}}
	for _, obj := range []client.Object{ns, policytest.Deployment(app, app)} {
		if err := wds(space).Create(suite.ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating %T %s in %s: %v", obj, obj.GetName(), space, err)
		}
	}
}

// startRollout creates the workload app and its dev → test → prod policy
// (ThreeStages, changed by change when given) in a WDS, the policy deleted
// when the test ends.
func startRollout(t testing.TB, space, name, app string, change func(*v1alpha1.StagedBindingPolicy)) {
	t.Helper()
	createWorkload(t, space, app)
	startPolicy(t, space, name, app, change)
}

// startPolicy creates the dev → test → prod policy (ThreeStages, changed by
// change when given) of the workload app in a WDS, the policy deleted when
// the test ends.
func startPolicy(t testing.TB, space, name, app string, change func(*v1alpha1.StagedBindingPolicy)) {
	t.Helper()
	policy := policytest.ThreeStages(name, app)
	if change != nil {
		change(policy)
	}
	createPolicy(t, space, policy)
}

// createPolicy creates a policy in a WDS, deleted when the test ends.
func createPolicy(t testing.TB, space string, policy *v1alpha1.StagedBindingPolicy) {
	t.Helper()
	if err := wds(space).Create(suite.ctx, policy); err != nil {
		t.Fatalf("creating policy %s in %s: %v", policy.Name, space, err)
	}
	t.Cleanup(func() {
		policies(space).Delete(t, policy.Name)
		policies(space).WaitGone(t, policy.Name)
	})
}

// running returns the WECs that run Deployment app/app with all its
// replicas available, read from their API servers.
func running(t testing.TB, app string) []string {
	t.Helper()
	return wecsWith(t, app, func(d dataplane.Deployment) bool { return d.AvailableReplicas == 1 })
}

// present returns the WECs that hold Deployment app/app, available or not.
func present(t testing.TB, app string) []string {
	t.Helper()
	return wecsWith(t, app, func(dataplane.Deployment) bool { return true })
}

// notReady returns the WECs whose Deployment app/app has its pod but no
// Ready replica.
func notReady(t testing.TB, app string) []string {
	t.Helper()
	return wecsWith(t, app, func(d dataplane.Deployment) bool { return d.Replicas >= 1 && d.ReadyReplicas == 0 })
}

// wecsWith returns the WECs whose Deployment app/app satisfies ok.
func wecsWith(t testing.TB, app string, ok func(dataplane.Deployment) bool) []string {
	t.Helper()
	var names []string
	for _, c := range clusters {
		deps, err := suite.stack.RealWECs[c.Name].Deployments(suite.ctx, app)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(deps, func(d dataplane.Deployment) bool { return d.Name == app && ok(d) }) {
			names = append(names, c.Name)
		}
	}
	return names
}

// waitForWECs waits until exactly the given WECs hold Deployment app/app,
// all of them with it available.
func waitForWECs(t testing.TB, app string, want ...string) {
	t.Helper()
	environment.Eventually(t, timeout, fmt.Sprintf("exactly WECs %v running %s", want, app), func() error {
		if got := present(t, app); !slices.Equal(got, want) {
			return fmt.Errorf("WECs %v hold it", got)
		}
		if got := running(t, app); !slices.Equal(got, want) {
			return fmt.Errorf("WECs %v have it available", got)
		}
		return nil
	})
}

// itsList lists objects of a kind in the ITS.
func itsList(t testing.TB, kind, group, version string, opts ...client.ListOption) []unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(group + "/" + version)
	list.SetKind(kind + "List")
	if err := suite.stack.ITS.Client.List(suite.ctx, list, opts...); err != nil {
		t.Fatalf("listing %s in the ITS: %v", kind, err)
	}
	return list.Items
}

// names returns the namespace/name of objects, sorted.
func names(objs []unstructured.Unstructured) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.GetNamespace()+"/"+o.GetName())
	}
	slices.Sort(out)
	return out
}

// hasPrefixIn says whether s starts with any of the prefixes.
func hasPrefixIn(s string, prefixes ...string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(s, p) })
}
