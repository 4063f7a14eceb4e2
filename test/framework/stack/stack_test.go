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

package stack_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/internal/expression"
	"github.com/kubestellar/workload-stager/test/framework"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/kubestellar"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

// clusters is the inventory of simulated WECs.
var clusters = kubestellar.EnvClusters("dev1", "dev2", "prod1")

// st is the stack shared by the tests of this package.
var st *stack.Stack

func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, "stack", func(s *framework.Suite) error {
		ctx, cancel := context.WithTimeout(s.Ctx, 8*time.Minute)
		defer cancel()
		begin := time.Now()
		var err error
		st, err = stack.Start(ctx, stack.Options{
			WDSes:    []string{"wds1"},
			Clusters: clusters,
			WorkDir:  s.WorkDir,
			Logger:   s.Logger,
		})
		if err != nil {
			return fmt.Errorf("starting KubeStellar: %w", err)
		}
		fmt.Printf("stack started in %s (logs in %s)\n", time.Since(begin).Round(time.Millisecond), s.WorkDir)
		s.Defer(func() error { return stopAndCheck(st) })
		return nil
	}))
}

// stopAndCheck stops the stack and checks that exactly its processes (one
// controller-manager per WDS, one kube-apiserver and one etcd per space) ran
// until then, and that none is left running.
func stopAndCheck(st *stack.Stack) error {
	leftovers := processesOf(st)
	var errs []error
	running := leftovers.check()
	if want := len(st.WDS) + 2*(2+len(st.WDS)); len(running) != want {
		errs = append(errs, fmt.Errorf("found %d processes of the stack, want %d: %s", len(running), want, strings.Join(running, "; ")))
	}
	begin := time.Now()
	if err := st.Stop(); err != nil {
		errs = append(errs, fmt.Errorf("stopping the stack: %w", err))
	}
	fmt.Printf("stack stopped in %s\n", time.Since(begin).Round(time.Millisecond))
	if left := leftovers.check(); len(left) > 0 {
		errs = append(errs, fmt.Errorf("processes left running after Stop: %s", strings.Join(left, "; ")))
	}
	return errors.Join(errs...)
}

// processes identifies the processes of a stack by a distinctive argument.
type processes []string

// processesOf returns the arguments identifying the stack's processes: the
// hosting kubeconfig (controller-managers), each kube-apiserver's secure
// port and each etcd's client URL.
func processesOf(s *stack.Stack) processes {
	ps := processes{"--kubeconfig=" + s.HostingKubeconfig}
	for _, sp := range append([]*environment.Space{s.Hosting, s.ITS}, mapValues(s.WDS)...) {
		if u, err := url.Parse(sp.Config.Host); err == nil {
			ps = append(ps, "--secure-port="+u.Port())
		}
		if etcd := sp.Environment.ControlPlane.Etcd; etcd != nil && etcd.URL != nil {
			ps = append(ps, "--listen-client-urls="+etcd.URL.String())
		}
	}
	return ps
}

// check returns the running processes having one of the arguments.
func (ps processes) check() []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if len(args) == 0 {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && strings.Contains(string(stat), ") Z ") {
			continue // a zombie has exited
		}
		for _, p := range ps {
			if slices.Contains(args, p) {
				found = append(found, fmt.Sprintf("pid %s %s", e.Name(), filepath.Base(args[0])))
				break
			}
		}
	}
	return found
}

func mapValues[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func jsonOf(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

// workload creates, in a WDS, a namespace, an nginx Deployment labelled
// app.kubernetes.io/name=nginx, the deployments-aggregator StatusCollector
// (once) and a BindingPolicy placing the Deployment on the dev clusters.
func workload(ctx context.Context, t *testing.T, c client.Client, ns, deployName, policy string) (*appsv1.Deployment, *ksv1alpha1.BindingPolicy) {
	t.Helper()
	deploy := policytest.Deployment(ns, "nginx")
	deploy.Name = deployName
	labels := deploy.Labels
	bp := &ksv1alpha1.BindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policy},
		Spec: ksv1alpha1.BindingPolicySpec{
			ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"env": "dev"}}},
			Downsync: []ksv1alpha1.DownsyncPolicyClause{{
				DownsyncObjectTest: ksv1alpha1.DownsyncObjectTest{
					Namespaces:      []string{ns},
					ObjectSelectors: []metav1.LabelSelector{{MatchLabels: labels}},
				},
				DownsyncModulation: ksv1alpha1.DownsyncModulation{StatusCollectors: []string{stack.DeploymentsAggregator}},
			}},
		},
	}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		deploy,
		stack.NewDeploymentsAggregator(""),
		bp,
	} {
		err := c.Create(ctx, obj)
		if _, shared := obj.(*ksv1alpha1.StatusCollector); shared && apierrors.IsAlreadyExists(err) {
			continue // an earlier test's workload in this WDS made it
		}
		if err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	return deploy, bp
}

// checkBinding waits until KubeStellar has resolved the BindingPolicy into a
// Binding placing exactly the Deployment on the dev clusters.
func checkBinding(ctx context.Context, t *testing.T, c client.Client, deploy *appsv1.Deployment, bp *ksv1alpha1.BindingPolicy) {
	t.Helper()
	took := environment.Eventually(t, time.Minute, "Binding "+bp.Name, func() error {
		b := &ksv1alpha1.Binding{}
		if err := c.Get(ctx, client.ObjectKey{Name: bp.Name}, b); err != nil {
			return err
		}
		if want := []ksv1alpha1.Destination{{ClusterId: "dev1"}, {ClusterId: "dev2"}}; !reflect.DeepEqual(b.Spec.Destinations, want) {
			return fmt.Errorf("destinations = %v, want %v", b.Spec.Destinations, want)
		}
		ws := b.Spec.Workload.NamespaceScope
		if len(ws) != 1 || ws[0].Group != "apps" || ws[0].Version != "v1" || ws[0].Resource != "deployments" ||
			ws[0].Namespace != deploy.Namespace || ws[0].Name != deploy.Name ||
			!slices.Equal(ws[0].StatusCollectors, []string{stack.DeploymentsAggregator}) || len(b.Spec.Workload.ClusterScope) != 0 {
			return fmt.Errorf("workload = %s", jsonOf(b.Spec.Workload))
		}
		if len(b.OwnerReferences) != 1 || b.OwnerReferences[0].UID != bp.UID {
			return fmt.Errorf("ownerReferences = %s", jsonOf(b.OwnerReferences))
		}
		return nil
	})
	t.Logf("KubeStellar made Binding %s %s after the BindingPolicy", bp.Name, took.Round(time.Millisecond))
}

// checkWorkStatuses waits until the simulated WECs have written the
// Deployment's WorkStatus in each dev cluster's ITS namespace.
func checkWorkStatuses(ctx context.Context, t *testing.T, wds string, c client.Client, deploy *appsv1.Deployment, bp *ksv1alpha1.BindingPolicy) {
	t.Helper()
	b := &ksv1alpha1.Binding{}
	if err := c.Get(ctx, client.ObjectKey{Name: bp.Name}, b); err != nil {
		t.Fatal(err)
	}
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	for _, cluster := range []string{"dev1", "dev2"} {
		name := stack.WorkStatusName(wds, b.UID, cluster, gvk, deploy.Namespace, deploy.Name)
		environment.Eventually(t, 30*time.Second, "WorkStatus "+cluster+"/"+name, func() error {
			ws := &unstructured.Unstructured{}
			ws.SetGroupVersionKind(schema.GroupVersionKind{Group: stack.WorkStatusGroup, Version: stack.WorkStatusVersion, Kind: stack.WorkStatusKind})
			if err := st.ITS.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: name}, ws); err != nil {
				return err
			}
			wantLabels := map[string]string{stack.OriginWDSLabel: wds, stack.OriginBindingLabel: bp.Name}
			if !reflect.DeepEqual(ws.GetLabels(), wantLabels) {
				return fmt.Errorf("labels = %v", ws.GetLabels())
			}
			ref, _, _ := unstructured.NestedStringMap(ws.Object, "spec", "sourceRef")
			wantRef := map[string]string{"group": "apps", "version": "v1", "resource": "deployments", "kind": "Deployment",
				"namespace": deploy.Namespace, "name": deploy.Name}
			if !reflect.DeepEqual(ref, wantRef) {
				return fmt.Errorf("sourceRef = %v", ref)
			}
			status, _, _ := unstructured.NestedMap(ws.Object, "status")
			if want := map[string]any{"replicas": int64(1), "updatedReplicas": int64(1), "unavailableReplicas": int64(1)}; !reflect.DeepEqual(status, want) {
				return fmt.Errorf("status = %v, want %v", status, want)
			}
			return nil
		})
	}
}

// combinedStatus returns the CombinedStatus of the Deployment and the
// BindingPolicy.
func combinedStatus(ctx context.Context, c client.Client, deploy *appsv1.Deployment, bp *ksv1alpha1.BindingPolicy) (*ksv1alpha1.CombinedStatus, error) {
	cs := &ksv1alpha1.CombinedStatus{}
	err := c.Get(ctx, client.ObjectKey{Namespace: deploy.Namespace, Name: string(deploy.UID) + "." + string(bp.UID)}, cs)
	return cs, err
}

// availableColumn returns the availableReplicas per WEC in a
// deployments-aggregator result.
func availableColumn(cs *ksv1alpha1.CombinedStatus) (map[string]string, error) {
	for _, r := range cs.Results {
		if r.Name != stack.DeploymentsAggregator {
			continue
		}
		if !slices.Equal(r.ColumnNames, []string{stack.AggregatorWECColumn, stack.AggregatorAvailableColumn}) {
			return nil, fmt.Errorf("columns = %v", r.ColumnNames)
		}
		got := map[string]string{}
		for _, row := range r.Rows {
			if len(row.Columns) != 2 || row.Columns[0].Type != ksv1alpha1.TypeString || row.Columns[1].Type != ksv1alpha1.TypeNumber {
				return nil, fmt.Errorf("row = %s", jsonOf(row))
			}
			got[*row.Columns[0].String] = *row.Columns[1].Number
		}
		return got, nil
	}
	return nil, fmt.Errorf("no %s result in %s", stack.DeploymentsAggregator, jsonOf(cs.Results))
}

// checkCombinedStatus waits until the CombinedStatus reports the given
// availableReplicas per dev WEC and checks the seed condition on it.
func checkCombinedStatus(ctx context.Context, t *testing.T, c client.Client, deploy *appsv1.Deployment, bp *ksv1alpha1.BindingPolicy,
	want map[string]string, wantCondition bool) {
	t.Helper()
	engine, err := expression.NewEngine()
	if err != nil {
		t.Fatal(err)
	}
	cond, err := engine.Compile(expression.KindCondition, policytest.Available)
	if err != nil {
		t.Fatal(err)
	}
	var cs *ksv1alpha1.CombinedStatus
	took := environment.Eventually(t, time.Minute, fmt.Sprintf("CombinedStatus reporting %v", want), func() error {
		var err error
		if cs, err = combinedStatus(ctx, c, deploy, bp); err != nil {
			return err
		}
		got, err := availableColumn(cs)
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(got, want) {
			return fmt.Errorf("availableReplicas per WEC = %v", got)
		}
		return nil
	})
	wantLabels := map[string]string{
		"status.kubestellar.io/api-group":      "apps",
		"status.kubestellar.io/resource":       "deployments",
		"status.kubestellar.io/namespace":      deploy.Namespace,
		"status.kubestellar.io/name":           deploy.Name,
		"status.kubestellar.io/binding-policy": bp.Name,
	}
	if !reflect.DeepEqual(cs.Labels, wantLabels) {
		t.Errorf("CombinedStatus labels = %v, want %v", cs.Labels, wantLabels)
	}
	holds, err := cond.EvalCondition(cs)
	if err != nil {
		t.Fatalf("evaluating the seed condition on %s: %v", jsonOf(cs.Results), err)
	}
	if holds != wantCondition {
		t.Fatalf("seed condition = %v, want %v, on %s", holds, wantCondition, jsonOf(cs.Results))
	}
	t.Logf("CombinedStatus %v (condition %v) after %s", want, holds, took.Round(time.Millisecond))
}

// TestKubeStellarCombinesSimulatedWECStatus proves the real KubeStellar
// resolves a BindingPolicy into a Binding with the dev clusters and turns
// the simulated WECs' WorkStatuses into a CombinedStatus that the seed
// condition reads: false while the WECs report 0 available replicas, true
// once one reports 1.
func TestKubeStellarCombinesSimulatedWECStatus(t *testing.T) {
	ctx := context.Background()
	c := st.WDS["wds1"].Client
	deploy, bp := workload(ctx, t, c, "e2e", "nginx", "nginx-bp")
	checkBinding(ctx, t, c, deploy, bp)
	checkWorkStatuses(ctx, t, "wds1", c, deploy, bp)

	checkCombinedStatus(ctx, t, c, deploy, bp, map[string]string{"dev1": "0", "dev2": "0"}, false)
	// It stays false while the WECs report 0.
	time.Sleep(6 * time.Second)
	checkCombinedStatus(ctx, t, c, deploy, bp, map[string]string{"dev1": "0", "dev2": "0"}, false)

	st.WECs.SetAvailable(stack.Match{WDS: "wds1", BindingPolicy: bp.Name, Cluster: "dev1"}, 1)
	checkCombinedStatus(ctx, t, c, deploy, bp, map[string]string{"dev1": "1", "dev2": "0"}, true)

	st.WECs.SetAvailable(stack.Match{WDS: "wds1", BindingPolicy: bp.Name}, 0)
	checkCombinedStatus(ctx, t, c, deploy, bp, map[string]string{"dev1": "0", "dev2": "0"}, false)

	st.WECs.SetAvailable(stack.Match{WDS: "wds1", BindingPolicy: bp.Name}, 1)
	checkCombinedStatus(ctx, t, c, deploy, bp, map[string]string{"dev1": "1", "dev2": "1"}, true)
}

// TestAddWDS adds a WDS while the stack runs: its own controller-manager
// serves it, and the simulated WECs report its workload separately.
func TestAddWDS(t *testing.T) {
	ctx := context.Background()
	begin := time.Now()
	space, err := st.AddWDS(ctx, "wds2")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("WDS wds2 added in %s", time.Since(begin).Round(time.Millisecond))
	if st.WDS["wds2"] != space {
		t.Fatal("AddWDS did not record the space in Stack.WDS")
	}
	if _, err := st.AddWDS(ctx, "wds2"); err == nil {
		t.Error("adding wds2 twice: no error")
	}
	c := space.Client
	deploy, bp := workload(ctx, t, c, "e2e2", "web", "web-bp")
	checkBinding(ctx, t, c, deploy, bp)
	checkWorkStatuses(ctx, t, "wds2", c, deploy, bp)
	st.WECs.SetAvailable(stack.Match{WDS: "wds2", Cluster: "dev2", Group: "apps", Resource: "deployments", Namespace: "e2e2", Name: "web"}, 1)
	checkCombinedStatus(ctx, t, c, deploy, bp, map[string]string{"dev1": "0", "dev2": "1"}, true)
}

// TestControllerManagerOutage stops wds1's controller-manager: a
// BindingPolicy made meanwhile gets no Binding, and once the
// controller-manager is started again it gets one and its CombinedStatus
// follows the simulated WECs.
func TestControllerManagerOutage(t *testing.T) {
	ctx := context.Background()
	if err := st.StopControllerManager("wds1"); err != nil {
		t.Fatal(err)
	}
	if err := st.StartControllerManager(ctx, "wds9"); err == nil {
		t.Error("starting the controller-manager of an unknown WDS: no error")
	}
	c := st.WDS["wds1"].Client
	// The Deployment's name is its own: KubeStellar v0.30.0 finds a WEC's
	// WorkStatus by the object's name without its namespace and WDS, and its
	// status controller panics when it starts with a Binding whose object
	// shares a name with another WDS's (TestAddWDS places "web").
	deploy, bp := workload(ctx, t, c, "outage", "outage-web", "outage-bp")
	// KubeStellar makes a Binding within about 2 s when it runs.
	environment.Consistently(t, 8*time.Second, "no Binding while KubeStellar is down", func() error {
		if err := c.Get(ctx, client.ObjectKey{Name: bp.Name}, &ksv1alpha1.Binding{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("getting Binding %s: %w, want NotFound", bp.Name, err)
		}
		return nil
	})
	begin := time.Now()
	if err := st.StartControllerManager(ctx, "wds1"); err != nil {
		t.Fatal(err)
	}
	t.Logf("controller-manager of wds1 started again in %s", time.Since(begin).Round(time.Millisecond))
	if err := st.StartControllerManager(ctx, "wds1"); err == nil {
		t.Error("starting a running controller-manager again: no error")
	}
	checkBinding(ctx, t, c, deploy, bp)
	st.WECs.SetAvailable(stack.Match{WDS: "wds1", BindingPolicy: bp.Name}, 1)
	checkCombinedStatus(ctx, t, c, deploy, bp, map[string]string{"dev1": "1", "dev2": "1"}, true)
}
