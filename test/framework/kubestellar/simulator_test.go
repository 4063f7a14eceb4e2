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

package kubestellar_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/internal/rollout"
	"github.com/kubestellar/workload-stager/test/framework"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/kubestellar"
)

// space is the one WDS shared by all tests of this package.
var space *environment.Space

func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, "kubestellar", environment.SharedSpace(&space, "kubestellar-simulator-test", environment.WithKubeStellarCRDs())))
}

// eventually polls check until it returns nil or 30s have passed.

// runSimulator runs sim until the test ends.
func runSimulator(t *testing.T, sim *kubestellar.Simulator) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = sim.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func mustCreate(t *testing.T, obj client.Object) {
	t.Helper()
	if err := space.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func deployment(ns, name string, labels map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"pod": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"pod": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
}

func str(s string) *string { return &s }

func strValue(s string) ksv1alpha1.Value {
	return ksv1alpha1.Value{Type: ksv1alpha1.TypeString, String: &s}
}
func numValue(s string) ksv1alpha1.Value {
	return ksv1alpha1.Value{Type: ksv1alpha1.TypeNumber, Number: &s}
}

// testReporter reports, per destination, a row (wec, ready) with a
// settable number of ready replicas, for Deployments only.
type testReporter struct {
	mu    sync.Mutex
	ready string
	calls []string
}

func (r *testReporter) set(ready string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ready = ready
}

func (r *testReporter) report(bindingPolicy string, obj kubestellar.ObjectRef, destinations []string) []ksv1alpha1.NamedStatusCombination {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf("%s %s/%s %v", bindingPolicy, obj.Resource, obj.Name, destinations))
	if obj.Resource != "deployments" {
		return nil
	}
	var rows []ksv1alpha1.StatusCombinationRow
	for _, d := range destinations {
		rows = append(rows, ksv1alpha1.StatusCombinationRow{Columns: []ksv1alpha1.Value{strValue(d), numValue(r.ready)}})
	}
	return []ksv1alpha1.NamedStatusCombination{
		{Name: "ready", ColumnNames: []string{"wec", "ready"}, Rows: rows},
		{Name: "count", ColumnNames: []string{"count"}, Rows: []ksv1alpha1.StatusCombinationRow{{Columns: []ksv1alpha1.Value{numValue(fmt.Sprint(len(destinations)))}}}},
	}
}

func jsonOf(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

func TestSimulatorBindingAndCombinedStatus(t *testing.T) {
	ctx := context.Background()
	c := space.Client
	const ns = "sim-basic"
	mustCreate(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	web := deployment(ns, "web", map[string]string{"app": "web"})
	mustCreate(t, web)
	mustCreate(t, deployment(ns, "other", map[string]string{"app": "other"}))
	mustCreate(t, &ksv1alpha1.StatusCollector{
		ObjectMeta: metav1.ObjectMeta{Name: "ready"},
		Spec: ksv1alpha1.StatusCollectorSpec{Limit: 20, Select: []ksv1alpha1.NamedExpression{
			{Name: "wec", Def: "inventory.name"}, {Name: "ready", Def: "returned.status.readyReplicas"}}},
	})
	mustCreate(t, &ksv1alpha1.StatusCollector{
		ObjectMeta: metav1.ObjectMeta{Name: "count"},
		Spec: ksv1alpha1.StatusCollectorSpec{Limit: 20, CombinedFields: []ksv1alpha1.NamedAggregator{
			{Name: "count", Type: ksv1alpha1.AggregatorTypeCount}}},
	})

	reporter := &testReporter{ready: "2"}
	sim := kubestellar.New(c, []kubestellar.Cluster{
		{Name: "cluster-a", Labels: map[string]string{"stage": "dev"}},
		{Name: "cluster-b", Labels: map[string]string{"stage": "prod"}},
	}, kubestellar.WithReporter(reporter.report))
	runSimulator(t, sim)

	bp := &ksv1alpha1.BindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "bp-basic"},
		Spec: ksv1alpha1.BindingPolicySpec{
			ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"stage": "dev"}}},
			Downsync: []ksv1alpha1.DownsyncPolicyClause{
				{
					DownsyncObjectTest: ksv1alpha1.DownsyncObjectTest{APIGroup: str("apps"), Resources: []string{"deployments"},
						Namespaces: []string{ns}, ObjectSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"app": "web"}}}},
					DownsyncModulation: ksv1alpha1.DownsyncModulation{StatusCollectors: []string{"ready"}},
				},
				{
					DownsyncObjectTest: ksv1alpha1.DownsyncObjectTest{APIGroup: str("apps"), Namespaces: []string{ns}, ObjectNames: []string{"web"}},
					DownsyncModulation: ksv1alpha1.DownsyncModulation{CreateOnly: true, StatusCollectors: []string{"count"}},
				},
			},
		},
	}
	mustCreate(t, bp)

	// The Binding.
	binding := &ksv1alpha1.Binding{}
	environment.Eventually(t, 30*time.Second, "Binding", func() error {
		if err := c.Get(ctx, client.ObjectKey{Name: bp.Name}, binding); err != nil {
			return err
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(web), web); err != nil {
			return err
		}
		wantOwners := []metav1.OwnerReference{{APIVersion: "control.kubestellar.io/v1alpha1", Kind: "BindingPolicy",
			Name: bp.Name, UID: bp.UID, Controller: &[]bool{true}[0], BlockOwnerDeletion: &[]bool{false}[0]}}
		if !reflect.DeepEqual(binding.OwnerReferences, wantOwners) {
			return fmt.Errorf("ownerReferences = %s, want %s", jsonOf(binding.OwnerReferences), jsonOf(wantOwners))
		}
		wantSpec := ksv1alpha1.BindingSpec{
			Workload: ksv1alpha1.DownsyncObjectClauses{NamespaceScope: []ksv1alpha1.NamespaceScopeDownsyncClause{{
				NamespaceScopeDownsyncObject: ksv1alpha1.NamespaceScopeDownsyncObject{
					GroupVersionResource: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
					Namespace:            ns, Name: "web", ResourceVersion: web.ResourceVersion,
				},
				DownsyncModulation: ksv1alpha1.DownsyncModulation{CreateOnly: true, StatusCollectors: []string{"count", "ready"}},
			}}},
			Destinations: []ksv1alpha1.Destination{{ClusterId: "cluster-a"}},
		}
		if jsonOf(binding.Spec) != jsonOf(wantSpec) {
			return fmt.Errorf("spec = %s, want %s", jsonOf(binding.Spec), jsonOf(wantSpec))
		}
		if len(binding.Status.Conditions) != 1 || binding.Status.Conditions[0].Type != ksv1alpha1.TypeStatusCollectorsAvailable ||
			binding.Status.Conditions[0].Status != corev1.ConditionTrue {
			return fmt.Errorf("binding conditions = %s", jsonOf(binding.Status.Conditions))
		}
		return nil
	})

	// The BindingPolicy's finalizer and status.
	environment.Eventually(t, 30*time.Second, "BindingPolicy status", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(bp), bp); err != nil {
			return err
		}
		if !slices.Equal(bp.Finalizers, []string{kubestellar.BindingPolicyFinalizer}) {
			return fmt.Errorf("finalizers = %v", bp.Finalizers)
		}
		if bp.Generation != 1 || bp.Status.ObservedGeneration != 1 {
			return fmt.Errorf("generation %d, observedGeneration %d", bp.Generation, bp.Status.ObservedGeneration)
		}
		if jsonOf(bp.Status.Conditions) != jsonOf(binding.Status.Conditions) || len(bp.Status.Errors) != 0 {
			return fmt.Errorf("status = %s, want conditions %s", jsonOf(bp.Status), jsonOf(binding.Status.Conditions))
		}
		return nil
	})

	// The CombinedStatus.
	csKey := client.ObjectKey{Namespace: ns, Name: string(web.UID) + "." + string(bp.UID)}
	wantLabels := map[string]string{
		"status.kubestellar.io/api-group":      "apps",
		"status.kubestellar.io/resource":       "deployments",
		"status.kubestellar.io/namespace":      ns,
		"status.kubestellar.io/name":           "web",
		"status.kubestellar.io/binding-policy": bp.Name,
	}
	checkCS := func(ready string, destinations ...string) func() error {
		return func() error {
			cs := &ksv1alpha1.CombinedStatus{}
			if err := c.Get(ctx, csKey, cs); err != nil {
				return err
			}
			if !reflect.DeepEqual(cs.Labels, wantLabels) {
				return fmt.Errorf("labels = %v", cs.Labels)
			}
			wantOwners := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: web.UID}}
			if !reflect.DeepEqual(cs.OwnerReferences, wantOwners) {
				return fmt.Errorf("ownerReferences = %s", jsonOf(cs.OwnerReferences))
			}
			var readyRows []ksv1alpha1.StatusCombinationRow
			for _, d := range destinations {
				readyRows = append(readyRows, ksv1alpha1.StatusCombinationRow{Columns: []ksv1alpha1.Value{strValue(d), numValue(ready)}})
			}
			want := []ksv1alpha1.NamedStatusCombination{
				{Name: "count", ColumnNames: []string{"count"}, Rows: []ksv1alpha1.StatusCombinationRow{{Columns: []ksv1alpha1.Value{numValue(fmt.Sprint(len(destinations)))}}}},
				{Name: "ready", ColumnNames: []string{"wec", "ready"}, Rows: readyRows},
			}
			if jsonOf(cs.Results) != jsonOf(want) {
				return fmt.Errorf("results = %s, want %s", jsonOf(cs.Results), jsonOf(want))
			}
			return nil
		}
	}
	environment.Eventually(t, 30*time.Second, "CombinedStatus", checkCS("2", "cluster-a"))
	reporter.mu.Lock()
	calledRight := slices.Contains(reporter.calls, "bp-basic deployments/web [cluster-a]")
	reporter.mu.Unlock()
	if !calledRight {
		t.Errorf("Reporter never called with (bp-basic, deployments/web, [cluster-a])")
	}
	var all ksv1alpha1.CombinedStatusList
	if err := c.List(ctx, &all, client.MatchingLabels{"status.kubestellar.io/binding-policy": bp.Name}); err != nil {
		t.Fatal(err)
	}
	if len(all.Items) != 1 {
		t.Fatalf("%d CombinedStatuses for %s, want 1 (only the selected Deployment)", len(all.Items), bp.Name)
	}

	// A changed report shows up after Resync.
	reporter.set("3")
	sim.Resync()
	environment.Eventually(t, 30*time.Second, "CombinedStatus after report change", checkCS("3", "cluster-a"))

	// A spec change: both clusters; observedGeneration follows.
	environment.Eventually(t, 30*time.Second, "updating BindingPolicy", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(bp), bp); err != nil {
			return err
		}
		bp.Spec.ClusterSelectors = append(bp.Spec.ClusterSelectors, metav1.LabelSelector{MatchLabels: map[string]string{"stage": "prod"}})
		return c.Update(ctx, bp)
	})
	environment.Eventually(t, 30*time.Second, "Binding destinations after spec change", func() error {
		if err := c.Get(ctx, client.ObjectKey{Name: bp.Name}, binding); err != nil {
			return err
		}
		want := []ksv1alpha1.Destination{{ClusterId: "cluster-a"}, {ClusterId: "cluster-b"}}
		if !reflect.DeepEqual(binding.Spec.Destinations, want) {
			return fmt.Errorf("destinations = %v", binding.Spec.Destinations)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(bp), bp); err != nil {
			return err
		}
		if bp.Generation != 2 || bp.Status.ObservedGeneration != 2 {
			return fmt.Errorf("generation %d, observedGeneration %d", bp.Generation, bp.Status.ObservedGeneration)
		}
		return nil
	})
	environment.Eventually(t, 30*time.Second, "CombinedStatus for two clusters", checkCS("3", "cluster-a", "cluster-b"))

	// Dropping the label leaves only the objectNames clause: modulation and
	// resourceVersion change.
	environment.Eventually(t, 30*time.Second, "relabelling Deployment", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(web), web); err != nil {
			return err
		}
		web.Labels = map[string]string{"app": "changed"}
		return c.Update(ctx, web)
	})
	environment.Eventually(t, 30*time.Second, "Binding after relabel", func() error {
		if err := c.Get(ctx, client.ObjectKey{Name: bp.Name}, binding); err != nil {
			return err
		}
		ws := binding.Spec.Workload.NamespaceScope
		if len(ws) != 1 || ws[0].ResourceVersion != web.ResourceVersion || !ws[0].CreateOnly ||
			!slices.Equal(ws[0].StatusCollectors, []string{"count"}) {
			return fmt.Errorf("workload = %s (deployment resourceVersion %s)", jsonOf(binding.Spec.Workload), web.ResourceVersion)
		}
		return nil
	})

	// Deleting the BindingPolicy removes its finalizer, Binding and
	// CombinedStatuses.
	if err := c.Delete(ctx, bp); err != nil {
		t.Fatal(err)
	}
	environment.Eventually(t, 30*time.Second, "cleanup after BindingPolicy deletion", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(bp), &ksv1alpha1.BindingPolicy{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("BindingPolicy still there (err %w)", err)
		}
		if err := c.Get(ctx, client.ObjectKey{Name: bp.Name}, &ksv1alpha1.Binding{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Binding still there (err %w)", err)
		}
		var left ksv1alpha1.CombinedStatusList
		if err := c.List(ctx, &left, client.MatchingLabels{"status.kubestellar.io/binding-policy": bp.Name}); err != nil {
			return err
		}
		if len(left.Items) != 0 {
			return fmt.Errorf("%d CombinedStatuses left", len(left.Items))
		}
		return nil
	})
}

func TestSimulatorClusterScopedAndDefaultReport(t *testing.T) {
	ctx := context.Background()
	c := space.Client
	mustCreate(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sim-cluster-scoped", Labels: map[string]string{"team": "blue"}}})
	mustCreate(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "sim-cluster-scoped", Name: "settings"}})

	sim := kubestellar.New(c, []kubestellar.Cluster{{Name: "only", Labels: map[string]string{"x": "y"}}},
		kubestellar.WithoutBindingPolicyFinalizer())
	// Synchronous passes: no Run loop in this test.
	bp := &ksv1alpha1.BindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "bp-cluster-scoped"},
		Spec: ksv1alpha1.BindingPolicySpec{
			ClusterSelectors: []metav1.LabelSelector{{}},
			Downsync: []ksv1alpha1.DownsyncPolicyClause{
				{
					DownsyncObjectTest: ksv1alpha1.DownsyncObjectTest{APIGroup: str(""), Resources: []string{"namespaces"},
						Namespaces: []string{"*"}, ObjectNames: []string{"sim-cluster-scoped"}},
					DownsyncModulation: ksv1alpha1.DownsyncModulation{StatusCollectors: []string{"absent"}},
				},
				{
					DownsyncObjectTest: ksv1alpha1.DownsyncObjectTest{APIGroup: str(""), Resources: []string{"configmaps"},
						NamespaceSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"team": "blue"}}}},
				},
			},
		},
	}
	mustCreate(t, bp)
	if err := sim.SyncOnce(ctx); err != nil {
		t.Fatalf("SyncOnce: %v", err)
	}

	binding := &ksv1alpha1.Binding{}
	if err := c.Get(ctx, client.ObjectKey{Name: bp.Name}, binding); err != nil {
		t.Fatal(err)
	}
	nsObj := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: "sim-cluster-scoped"}, nsObj); err != nil {
		t.Fatal(err)
	}
	cs := binding.Spec.Workload.ClusterScope
	if len(cs) != 1 || cs[0].Group != "" || cs[0].Version != "v1" || cs[0].Resource != "namespaces" ||
		cs[0].Name != "sim-cluster-scoped" || cs[0].ResourceVersion != nsObj.ResourceVersion ||
		!slices.Equal(cs[0].StatusCollectors, []string{"absent"}) {
		t.Errorf("clusterScope = %s", jsonOf(cs))
	}
	nsc := binding.Spec.Workload.NamespaceScope
	if len(nsc) != 1 || nsc[0].Resource != "configmaps" || nsc[0].Namespace != "sim-cluster-scoped" || nsc[0].Name != "settings" ||
		len(nsc[0].StatusCollectors) != 0 {
		t.Errorf("namespaceScope = %s", jsonOf(nsc))
	}
	if !reflect.DeepEqual(binding.Spec.Destinations, []ksv1alpha1.Destination{{ClusterId: "only"}}) {
		t.Errorf("destinations = %v", binding.Spec.Destinations)
	}
	if len(binding.Status.Conditions) != 1 || binding.Status.Conditions[0].Status != corev1.ConditionFalse ||
		binding.Status.Conditions[0].Message != "Missing StatusCollector(s) [absent]" {
		t.Errorf("binding conditions = %s", jsonOf(binding.Status.Conditions))
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(bp), bp); err != nil {
		t.Fatal(err)
	}
	if len(bp.Finalizers) != 0 {
		t.Errorf("finalizers = %v, want none", bp.Finalizers)
	}
	if bp.Status.ObservedGeneration != bp.Generation || jsonOf(bp.Status.Conditions) != jsonOf(binding.Status.Conditions) {
		t.Errorf("BindingPolicy status = %s", jsonOf(bp.Status))
	}

	// Only the Namespace has a collector: one CombinedStatus, in
	// kubestellar-report, with the default (empty) report.
	var list ksv1alpha1.CombinedStatusList
	if err := c.List(ctx, &list, client.MatchingLabels{rollout.StatusLabelBindingPolicy: bp.Name}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("%d CombinedStatuses, want 1", len(list.Items))
	}
	got := list.Items[0]
	if got.Namespace != "kubestellar-report" || got.Name != kubestellar.CombinedStatusName(nsObj.UID, bp.UID) {
		t.Errorf("CombinedStatus is %s/%s", got.Namespace, got.Name)
	}
	if got.Labels[rollout.StatusLabelNamespace] != "" || got.Labels[rollout.StatusLabelResource] != "namespaces" || len(got.Labels) != 5 {
		t.Errorf("labels = %v", got.Labels)
	}
	wantResults := []ksv1alpha1.NamedStatusCombination{{Name: "absent", ColumnNames: []string{}}}
	if jsonOf(got.Results) != jsonOf(wantResults) {
		t.Errorf("results = %s, want %s", jsonOf(got.Results), jsonOf(wantResults))
	}

	// A second pass changes nothing.
	rv := got.ResourceVersion
	bindingRV := binding.ResourceVersion
	if err := sim.SyncOnce(ctx); err != nil {
		t.Fatalf("second SyncOnce: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(&got), &got); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: bp.Name}, binding); err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != rv || binding.ResourceVersion != bindingRV {
		t.Errorf("second pass rewrote objects")
	}

	// Without the finalizer the BindingPolicy goes at once; the simulator
	// then collects the Binding and the CombinedStatus.
	if err := c.Delete(ctx, bp); err != nil {
		t.Fatal(err)
	}
	if err := sim.SyncOnce(ctx); err != nil {
		t.Fatalf("SyncOnce after delete: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: bp.Name}, binding); !apierrors.IsNotFound(err) {
		t.Errorf("Binding still there (err %v)", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(&got), &got); !apierrors.IsNotFound(err) {
		t.Errorf("CombinedStatus still there (err %v)", err)
	}
}

// TestConvergedSimulatorWritesNothing runs passes over a BindingPolicy whose
// Binding and CombinedStatus are written, with the Availability reporter
// the scale runs use: no pass may write any of them again. A simulator
// that rewrote a CombinedStatus at every pass would send every stager
// watching it an event every pass, and make a rollout's cost grow with
// its length.
func TestConvergedSimulatorWritesNothing(t *testing.T) {
	ctx := context.Background()
	c := space.Client
	const ns, collector = "sim-converged", "converged-aggregator"
	mustCreate(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	mustCreate(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: map[string]string{"app": "converged"}}})
	mustCreate(t, &ksv1alpha1.StatusCollector{
		ObjectMeta: metav1.ObjectMeta{Name: collector},
		Spec: ksv1alpha1.StatusCollectorSpec{
			Select: []ksv1alpha1.NamedExpression{
				{Name: "wec", Def: "inventory.name"},
				{Name: "availableReplicas", Def: "returned.status != null && has(returned.status.availableReplicas) ? returned.status.availableReplicas : 0"},
			},
			Limit: 20,
		},
	})
	availability := kubestellar.NewAvailability(collector)
	sim := kubestellar.New(c, []kubestellar.Cluster{{Name: "a", Labels: map[string]string{"env": "dev"}}, {Name: "b", Labels: map[string]string{"env": "dev"}}},
		kubestellar.WithReporter(availability.Report))
	bp := &ksv1alpha1.BindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "bp-converged"},
		Spec: ksv1alpha1.BindingPolicySpec{
			ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"env": "dev"}}},
			Downsync: []ksv1alpha1.DownsyncPolicyClause{{
				DownsyncObjectTest: ksv1alpha1.DownsyncObjectTest{ObjectSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"app": "converged"}}}},
				DownsyncModulation: ksv1alpha1.DownsyncModulation{StatusCollectors: []string{collector}},
			}},
		},
	}
	availability.SetAvailable(bp.Name, true)
	mustCreate(t, bp)
	versions := func() string {
		var all []string
		var css ksv1alpha1.CombinedStatusList
		if err := c.List(ctx, &css, client.MatchingLabels{rollout.StatusLabelBindingPolicy: bp.Name}); err != nil {
			t.Fatal(err)
		}
		for _, cs := range css.Items {
			all = append(all, "CombinedStatus "+cs.Name+" "+cs.ResourceVersion)
		}
		binding := &ksv1alpha1.Binding{}
		if err := c.Get(ctx, client.ObjectKey{Name: bp.Name}, binding); err != nil {
			t.Fatal(err)
		}
		got := &ksv1alpha1.BindingPolicy{}
		if err := c.Get(ctx, client.ObjectKey{Name: bp.Name}, got); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(append(all, "Binding "+binding.ResourceVersion, "BindingPolicy "+got.ResourceVersion))
	}
	for range 2 {
		if err := sim.SyncOnce(ctx); err != nil {
			t.Fatalf("SyncOnce: %v", err)
		}
	}
	// kcp labels every object of a resource an APIExport claims
	// (claimed.internal.apis.kcp.io/<hash>) at every write: a label not
	// the simulator's, which it must leave be.
	var css ksv1alpha1.CombinedStatusList
	if err := c.List(ctx, &css, client.MatchingLabels{rollout.StatusLabelBindingPolicy: bp.Name}); err != nil || len(css.Items) != 1 {
		t.Fatalf("%d CombinedStatuses (%v), want 1", len(css.Items), err)
	}
	cs := &css.Items[0]
	cs.Labels["claimed.internal.apis.kcp.io/test"] = "claimed"
	if err := c.Update(ctx, cs); err != nil {
		t.Fatal(err)
	}
	converged := versions()
	for i := range 3 {
		if err := sim.SyncOnce(ctx); err != nil {
			t.Fatalf("SyncOnce: %v", err)
		}
		if now := versions(); now != converged {
			t.Fatalf("pass %d after converging rewrote objects: %s, then %s", i+1, converged, now)
		}
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cs), cs); err != nil {
		t.Fatal(err)
	}
	if cs.Labels["claimed.internal.apis.kcp.io/test"] != "claimed" {
		t.Errorf("the CombinedStatus lost a label not the simulator's: %v", cs.Labels)
	}
}
