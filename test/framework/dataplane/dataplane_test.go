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

package dataplane_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubestellar/workload-stager/test/framework"
	"github.com/kubestellar/workload-stager/test/framework/dataplane"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

// The ITS (a hub with OCM's work CRDs and KubeStellar's WorkStatus CRD) and
// one WEC, shared by the tests of this package.
var (
	its     *environment.Space
	wec     *dataplane.WEC
	workDir string
)

const cluster = "wec1"

func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, "dataplane", func(s *framework.Suite) error {
		ctx, cancel := context.WithTimeout(s.Ctx, 5*time.Minute)
		defer cancel()
		workDir = s.WorkDir
		bins, err := dataplane.FindBinaries()
		if err != nil {
			return err
		}
		workCRDs, err := dataplane.WorkCRDDir()
		if err != nil {
			return err
		}
		if its, err = environment.StartSpace("its", environment.WithCRDDirs(workCRDs)); err != nil {
			return err
		}
		s.Defer(its.Stop)
		if _, err := envtest.InstallCRDs(its.Config, envtest.CRDInstallOptions{
			CRDs: []*apiextensionsv1.CustomResourceDefinition{stack.WorkStatusCRD()}, MaxTime: time.Minute,
		}); err != nil {
			return err
		}
		if err := its.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster}}); err != nil {
			return err
		}
		hub := filepath.Join(workDir, "its.kubeconfig")
		if err := os.WriteFile(hub, its.Kubeconfig(), 0o600); err != nil {
			return err
		}
		begin := time.Now()
		wec, err = dataplane.StartWEC(ctx, dataplane.WECOptions{
			Name: cluster, Binaries: bins, HubKubeconfig: hub, ITS: its.Client, WorkDir: workDir, Logger: s.Logger,
		})
		if err != nil {
			return err
		}
		fmt.Printf("WEC started in %s (logs in %s)\n", time.Since(begin).Round(time.Millisecond), workDir)
		s.Defer(wec.Stop)
		return nil
	}))
}

// manifestWork returns a ManifestWork for the WEC carrying a namespace and a
// two-replica Deployment, labelled as KubeStellar's transport labels its own.
func manifestWork(t *testing.T, name, namespace, image string) *unstructured.Unstructured {
	t.Helper()
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	labels := map[string]string{"app": name}
	dep := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
			},
		},
	}
	var manifests []any
	for _, obj := range []runtime.Object{ns, dep} {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		manifests = append(manifests, u)
	}
	mw := &unstructured.Unstructured{}
	mw.SetGroupVersionKind(dataplane.ManifestWorkGVK)
	mw.SetNamespace(cluster)
	mw.SetName(name + "-wds1-0")
	mw.SetLabels(map[string]string{
		"transport.kubestellar.io/originWdsName":                  "wds1",
		"transport.kubestellar.io/originOwnerReferenceBindingKey": name,
	})
	if err := unstructured.SetNestedSlice(mw.Object, manifests, "spec", "workload", "manifests"); err != nil {
		t.Fatal(err)
	}
	return mw
}

// workStatusOf returns the WorkStatus of Deployment demo/web, or nil.
func workStatusOf(ctx context.Context, t *testing.T) *unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(dataplane.WorkStatusGVK.GroupVersion().WithKind("WorkStatusList"))
	if err := its.Client.List(ctx, list, client.InNamespace(cluster)); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		ref, _, _ := unstructured.NestedStringMap(list.Items[i].Object, "spec", "sourceRef")
		if ref["kind"] == "Deployment" && ref["namespace"] == "demo" && ref["name"] == "web" {
			return &list.Items[i]
		}
	}
	return nil
}

// reportsAvailable fails unless the WorkStatus of Deployment demo/web
// reports want available replicas.
func reportsAvailable(ctx context.Context, t *testing.T, want int64) error {
	ws := workStatusOf(ctx, t)
	if ws == nil {
		return fmt.Errorf("no WorkStatus")
	}
	// A Deployment's status omits availableReplicas when it is 0; its
	// replicas say the status is there at all.
	if replicas, _, _ := unstructured.NestedInt64(ws.Object, "status", "replicas"); replicas != 2 {
		return fmt.Errorf("WorkStatus reports %d replicas, want 2", replicas)
	}
	if avail, _, _ := unstructured.NestedInt64(ws.Object, "status", "availableReplicas"); avail != want {
		return fmt.Errorf("WorkStatus reports %d available replicas, want %d", avail, want)
	}
	return nil
}

// appliedManifestWorkUID returns the UID of the WEC's AppliedManifestWork
// of the named ManifestWork, or "".
func appliedManifestWorkUID(ctx context.Context, t *testing.T, manifestWork string) string {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("work.open-cluster-management.io/v1")
	list.SetKind("AppliedManifestWorkList")
	if err := wec.Space.Client.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	for _, amw := range list.Items {
		if name, _, _ := unstructured.NestedString(amw.Object, "spec", "manifestWorkName"); name == manifestWork {
			return string(amw.GetUID())
		}
	}
	return ""
}

// TestAWorkloadRunsAndReportsItsStatus applies a ManifestWork through the
// real work agent: the Deployment's pods run on kwok's node, the Deployment
// becomes available, the status agent reports it in a WorkStatus named and
// labelled as the add-on does; failing pods take availability away and
// deleting the ManifestWork removes the Deployment and its WorkStatus.
func TestAWorkloadRunsAndReportsItsStatus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	mw := manifestWork(t, "web", "demo", "nginx:1.27")
	if err := its.Client.Create(ctx, mw); err != nil {
		t.Fatal(err)
	}
	environment.Eventually(t, time.Minute, "the Deployment is available in the WEC and its WorkStatus says so", func() error {
		deps, err := wec.Deployments(ctx, "demo")
		if err != nil {
			return err
		}
		if len(deps) != 1 || deps[0].AvailableReplicas != 2 || deps[0].Images[0] != "nginx:1.27" ||
			len(deps[0].ManifestWorks) != 1 || deps[0].ManifestWorks[0] != mw.GetName() {
			return fmt.Errorf("the WEC runs %+v", deps)
		}
		ws := workStatusOf(ctx, t)
		if ws == nil {
			return fmt.Errorf("no WorkStatus yet")
		}
		avail, _, _ := unstructured.NestedInt64(ws.Object, "status", "availableReplicas")
		if avail != 2 {
			return fmt.Errorf("WorkStatus %s reports %d available replicas", ws.GetName(), avail)
		}
		if ws.GetLabels()["transport.kubestellar.io/originWdsName"] != "wds1" {
			return fmt.Errorf("WorkStatus %s has labels %v", ws.GetName(), ws.GetLabels())
		}
		if want := dataplane.WorkStatusName(appliedManifestWorkUID(ctx, t, mw.GetName()), appsv1.SchemeGroupVersion.WithKind("Deployment"), "demo", "web"); ws.GetName() != want {
			return fmt.Errorf("WorkStatus named %s, want %s", ws.GetName(), want)
		}
		owners := ws.GetOwnerReferences()
		if len(owners) != 1 || owners[0].Kind != "ManifestWork" || owners[0].Name != mw.GetName() {
			return fmt.Errorf("WorkStatus %s has owners %v", ws.GetName(), owners)
		}
		return nil
	})

	if err := wec.FailPods(ctx, "demo"); err != nil {
		t.Fatal(err)
	}
	environment.Eventually(t, time.Minute, "failing pods take the Deployment's availability away", func() error {
		return reportsAvailable(ctx, t, 0)
	})
	if err := wec.RecoverPods(ctx, "demo"); err != nil {
		t.Fatal(err)
	}
	environment.Eventually(t, time.Minute, "recovered pods make it available again", func() error {
		return reportsAvailable(ctx, t, 2)
	})

	if err := its.Client.Delete(ctx, mw); err != nil {
		t.Fatal(err)
	}
	environment.Eventually(t, time.Minute, "deleting the ManifestWork removes the Deployment and its WorkStatus", func() error {
		var dep appsv1.Deployment
		err := wec.Space.Client.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "web"}, &dep)
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("the WEC still has the Deployment (%w)", err)
		}
		if ws := workStatusOf(ctx, t); ws != nil {
			return fmt.Errorf("WorkStatus %s is still there", ws.GetName())
		}
		return nil
	})
}
