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

package realdataplane

// The tests in this file hold KubeStellar v0.30.0's data plane to the
// behaviours the stager's staged changes rely on (or chose not to rely on),
// with BindingPolicies written by hand and no stager involved.
// docs/proposals/revisions.md says what each shows and what
// was chosen.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/test/framework/dataplane"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// versionLabel carries a workload object's revision in these experiments.
const versionLabel = "app.kubernetes.io/version"

// TestCreateOnlyKeepsWhatAWECRuns shows what KubeStellar's createOnly does
// with a changed workload object: the WEC keeps the content it was created
// with until createOnly is turned off, and then gets the change.
func TestCreateOnlyKeepsWhatAWECRuns(t *testing.T) {
	const space, app = "wds1", "createonly"
	createWorkload(t, space, app)
	bp := devBindingPolicy(app+"-dev", []metav1.LabelSelector{{MatchLabels: map[string]string{policytest.AppLabel: app}}})
	bp.Spec.Downsync[0].CreateOnly = true
	createHandBindingPolicy(t, bp)
	waitForImages(t, app, map[string][]string{"dev1": {app + "=nginx"}, "dev2": {app + "=nginx"}})

	setImage(t, space, app, app, "nginx:2")
	environment.Consistently(t, 10*time.Second, "dev1 and dev2 keeping image nginx under createOnly", func() error {
		return imagesAre(t, app, map[string][]string{"dev1": {app + "=nginx"}, "dev2": {app + "=nginx"}})
	})

	begin := time.Now()
	updateHandBindingPolicy(t, space, bp.Name, func(bp *ksv1alpha1.BindingPolicy) { bp.Spec.Downsync[0].CreateOnly = false })
	waitForImages(t, app, map[string][]string{"dev1": {app + "=nginx:2"}, "dev2": {app + "=nginx:2"}})
	t.Logf("createOnly off to the change on both WECs: %s", time.Since(begin).Round(100*time.Millisecond))
}

// TestTemplateExpansionIsNotRedoneOnAPropertyChange shows what KubeStellar's
// template expansion does with a property that changes: the transport
// expands "{{.image}}" from the ConfigMap named after each WEC in the ITS
// namespace customization-properties when it first places the object, but
// v0.30.0 does not expand it again when that ConfigMap changes, although
// its code watches those ConfigMaps: neither the ManifestWork nor the WEC
// changes. Should a KubeStellar upgrade change that, this test fails, and
// docs/proposals/revisions.md's choice is to be looked at again.
func TestTemplateExpansionIsNotRedoneOnAPropertyChange(t *testing.T) {
	const space, app = "wds1", "templated"
	its := suite.stack.ITS.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ksv1alpha1.PropertyConfigMapNamespace}}
	if err := its.Create(suite.ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, wec := range []string{"dev1", "dev2"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ksv1alpha1.PropertyConfigMapNamespace, Name: wec},
			Data: map[string]string{"image": "nginx:t1"}}
		if err := its.Create(suite.ctx, cm); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = its.Delete(suite.ctx, cm) })
	}
	workload := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app, Labels: map[string]string{policytest.AppLabel: app}}}
	d := policytest.Deployment(app, app)
	d.Annotations = map[string]string{ksv1alpha1.TemplateExpansionAnnotationKey: "true"}
	d.Spec.Template.Spec.Containers[0].Image = "{{.image}}"
	for _, obj := range []client.Object{workload, d} {
		if err := wds(space).Create(suite.ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	createHandBindingPolicy(t, devBindingPolicy(app+"-dev", []metav1.LabelSelector{{MatchLabels: map[string]string{policytest.AppLabel: app}}}))
	expanded := map[string][]string{"dev1": {app + "=nginx:t1"}, "dev2": {app + "=nginx:t1"}}
	waitForImages(t, app, expanded)

	environment.Eventually(t, timeout, "changing dev1's image property", func() error {
		var cm corev1.ConfigMap
		if err := its.Get(suite.ctx, client.ObjectKey{Namespace: ksv1alpha1.PropertyConfigMapNamespace, Name: "dev1"}, &cm); err != nil {
			return err
		}
		cm.Data["image"] = "nginx:t2"
		return its.Update(suite.ctx, &cm)
	})
	environment.Consistently(t, 15*time.Second, "dev1's ManifestWork and dev1 keeping nginx:t1", func() error {
		for _, mw := range itsList(t, "ManifestWork", "work.open-cluster-management.io", "v1", client.InNamespace("dev1")) {
			if raw, _ := json.Marshal(mw.Object["spec"]); strings.Contains(string(raw), "nginx:t2") {
				return fmt.Errorf("ManifestWork dev1/%s has the new property: KubeStellar now expands templates again on a property change", mw.GetName())
			}
		}
		return imagesAre(t, app, expanded)
	})
}

// TestSideBySideRevisionsSwitchMakeBeforeBreak places revision v1 of a
// workload (a Deployment labelled version v1, and a namespace without a
// version) on dev, then switches dev to v2 (a second Deployment labelled v2)
// with a second BindingPolicy, removing the first once v2 is available.
// dev's WECs run both for the switch, never neither, and the namespace both
// BindingPolicies place stays; the second BindingPolicy's CombinedStatuses
// are of v2 (and the namespace) only.
func TestSideBySideRevisionsSwitchMakeBeforeBreak(t *testing.T) {
	const space, app = "wds1", "sidebyside"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app, Labels: map[string]string{policytest.AppLabel: app}}}
	v1, v2 := versionedDeployment(app, "v1"), versionedDeployment(app, "v2")
	for _, obj := range []client.Object{ns, v1, v2} {
		if err := wds(space).Create(suite.ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	first := devBindingPolicy(app+"-v1", revisionSelectors(app, "v1"))
	createHandBindingPolicy(t, first)
	waitForImages(t, app, map[string][]string{"dev1": {app + "-v1=nginx:v1"}, "dev2": {app + "-v1=nginx:v1"}})

	begin := time.Now()
	second := devBindingPolicy(app+"-v2", revisionSelectors(app, "v2"))
	createHandBindingPolicy(t, second)
	both := map[string][]string{"dev1": {app + "-v1=nginx:v1", app + "-v2=nginx:v2"}, "dev2": {app + "-v1=nginx:v1", app + "-v2=nginx:v2"}}
	waitForImages(t, app, both)
	environment.Eventually(t, timeout, "v2 available on dev1 and dev2", func() error {
		for _, wec := range []string{"dev1", "dev2"} {
			deps, err := suite.stack.RealWECs[wec].Deployments(suite.ctx, app)
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(deps, func(d dataplane.Deployment) bool { return d.Name == app+"-v2" && d.AvailableReplicas == 1 }) {
				return fmt.Errorf("%s: %v", wec, deps)
			}
		}
		return nil
	})
	t.Logf("second BindingPolicy created to v2 available beside v1: %s", time.Since(begin).Round(100*time.Millisecond))
	environment.Eventually(t, timeout, "the second BindingPolicy's CombinedStatuses of the namespace and v2 only", func() error {
		var list ksv1alpha1.CombinedStatusList
		if err := wds(space).List(suite.ctx, &list, client.MatchingLabels{"status.kubestellar.io/binding-policy": second.Name}); err != nil {
			return err
		}
		var objects []string
		for _, cs := range list.Items {
			objects = append(objects, cs.Labels["status.kubestellar.io/resource"]+"/"+cs.Labels["status.kubestellar.io/name"])
		}
		slices.Sort(objects)
		if want := []string{"deployments/" + app + "-v2", "namespaces/" + app}; !slices.Equal(objects, want) {
			return fmt.Errorf("CombinedStatuses of %v, want %v", objects, want)
		}
		return nil
	})

	begin = time.Now()
	if err := wds(space).Delete(suite.ctx, first); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(timeout)
	for {
		got, err := wecImages(app)
		if err != nil {
			t.Fatal(err)
		}
		for _, wec := range []string{"dev1", "dev2"} {
			if !slices.Contains(got[wec], app+"-v2=nginx:v2") {
				t.Fatalf("%s lost v2 while v1 was removed: %v", wec, got[wec])
			}
			var namespace corev1.Namespace
			if err := suite.stack.RealWECs[wec].Space.Client.Get(suite.ctx, client.ObjectKey{Name: app}, &namespace); err != nil || namespace.DeletionTimestamp != nil {
				t.Fatalf("%s lost namespace %s while v1 was removed: %v", wec, app, err)
			}
		}
		if slices.Equal(got["dev1"], []string{app + "-v2=nginx:v2"}) && slices.Equal(got["dev2"], []string{app + "-v2=nginx:v2"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("v1 still on dev after %s: %v", timeout, got)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("first BindingPolicy deleted to v1 gone from dev: %s", time.Since(begin).Round(100*time.Millisecond))
	if err := wds(space).Delete(suite.ctx, second); err != nil {
		t.Fatal(err)
	}
	environment.Eventually(t, timeout, "dev clear of the workload", func() error {
		return imagesAre(t, app, map[string][]string{})
	})
}

// versionedDeployment returns Deployment <app>-<version> running image
// nginx:<version>, labelled AppLabel=<app> and versionLabel=<version>.
func versionedDeployment(app, version string) *appsv1.Deployment {
	d := policytest.Deployment(app, app)
	d.Name = app + "-" + version
	d.Labels = map[string]string{policytest.AppLabel: app, versionLabel: version}
	d.Spec.Selector.MatchLabels = map[string]string{policytest.AppLabel: app, versionLabel: version}
	d.Spec.Template.Labels = d.Spec.Selector.MatchLabels
	d.Spec.Template.Spec.Containers[0].Image = "nginx:" + version
	return d
}

// revisionSelectors selects the objects labelled AppLabel=<app> that carry
// version, or no version at all.
func revisionSelectors(app, version string) []metav1.LabelSelector {
	return []metav1.LabelSelector{
		{MatchLabels: map[string]string{policytest.AppLabel: app, versionLabel: version}},
		{MatchLabels: map[string]string{policytest.AppLabel: app},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: versionLabel, Operator: metav1.LabelSelectorOpDoesNotExist}}},
	}
}

// devBindingPolicy returns a BindingPolicy placing the objects selected on
// the WECs labelled env=dev, their status collected.
func devBindingPolicy(name string, objects []metav1.LabelSelector) *ksv1alpha1.BindingPolicy {
	return &ksv1alpha1.BindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: ksv1alpha1.BindingPolicySpec{
			ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"env": "dev"}}},
			Downsync: []ksv1alpha1.DownsyncPolicyClause{{
				DownsyncObjectTest: ksv1alpha1.DownsyncObjectTest{ObjectSelectors: objects},
				DownsyncModulation: ksv1alpha1.DownsyncModulation{StatusCollectors: []string{policytest.Collector}},
			}},
		},
	}
}

// createHandBindingPolicy creates bp in wds1, deleted when the test ends.
func createHandBindingPolicy(t testing.TB, bp *ksv1alpha1.BindingPolicy) {
	const space = "wds1"
	t.Helper()
	if err := wds(space).Create(suite.ctx, bp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := wds(space).Delete(suite.ctx, bp); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting BindingPolicy %s: %v", bp.Name, err)
		}
	})
}

// updateHandBindingPolicy changes a BindingPolicy of a WDS.
func updateHandBindingPolicy(t testing.TB, space, name string, change func(*ksv1alpha1.BindingPolicy)) {
	t.Helper()
	environment.Eventually(t, timeout, "updating BindingPolicy "+name, func() error {
		var bp ksv1alpha1.BindingPolicy
		if err := wds(space).Get(suite.ctx, client.ObjectKey{Name: name}, &bp); err != nil {
			return err
		}
		change(&bp)
		return wds(space).Update(suite.ctx, &bp)
	})
}

// setImage sets the image of Deployment namespace/name in a WDS.
func setImage(t testing.TB, space, namespace, name, image string) {
	t.Helper()
	environment.Eventually(t, timeout, "setting the image of "+name, func() error {
		var d appsv1.Deployment
		if err := wds(space).Get(suite.ctx, client.ObjectKey{Namespace: namespace, Name: name}, &d); err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = image
		return wds(space).Update(suite.ctx, &d)
	})
}

// wecImages returns, for each WEC that holds a Deployment in namespace,
// "<name>=<image>" of each of its Deployments, sorted.
func wecImages(namespace string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, c := range clusters {
		deps, err := suite.stack.RealWECs[c.Name].Deployments(suite.ctx, namespace)
		if err != nil {
			return nil, err
		}
		for _, d := range deps {
			out[c.Name] = append(out[c.Name], d.Name+"="+d.Images[0])
		}
		slices.Sort(out[c.Name])
	}
	return out, nil
}

// imagesAre says how the WECs' Deployments in namespace differ from want.
func imagesAre(t testing.TB, namespace string, want map[string][]string) error {
	t.Helper()
	got, err := wecImages(namespace)
	if err != nil {
		return err
	}
	for _, c := range clusters {
		if !slices.Equal(got[c.Name], want[c.Name]) {
			return fmt.Errorf("the WECs run %v, want %v", got, want)
		}
	}
	return nil
}

// waitForImages waits until the WECs' Deployments in namespace are want.
func waitForImages(t testing.TB, namespace string, want map[string][]string) {
	t.Helper()
	environment.Eventually(t, timeout, fmt.Sprintf("WECs running %v", want), func() error {
		return imagesAre(t, namespace, want)
	})
}
