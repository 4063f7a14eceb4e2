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

package kcp_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubestellar/workload-stager/test/framework"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/kcp"
)

// server is the one kcp shared by the tests of this package; every test uses
// its own workspaces.
var server *kcp.Server

// logicalClusterID is what kcp's logical cluster IDs look like
// (e.g. 2l6j50mk367awj76).
var logicalClusterID = regexp.MustCompile(`^[a-z0-9]{8,}$`)

func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, "kcp", func(s *framework.Suite) error {
		log.SetLogger(logr.Discard())
		if _, err := kcp.Binary(); err != nil {
			return err
		}
		began := time.Now()
		var err error
		if server, err = kcp.Start(context.Background(), kcp.Options{WorkDir: s.WorkDir}); err != nil {
			return err
		}
		s.Defer(server.Stop)
		fmt.Printf("kcp at %s ready after %s (Start took %s); log %s\n",
			server.URL, server.ReadyAfter().Round(time.Millisecond), time.Since(began).Round(time.Millisecond), server.Log)
		return nil
	}))
}

// testContext returns a context for one test, with a deadline past a
// workspace's own bound (5 min), so that a slow workspace fails with its own
// message.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// createWorkspace creates a workspace under root and checks its path and
// logical cluster ID.
func createWorkspace(ctx context.Context, t *testing.T, name string) (path, id string) {
	t.Helper()
	began := time.Now()
	path, id, err := server.CreateWorkspace(ctx, kcp.RootPath, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("workspace %s (logical cluster %s) ready after %s", path, id, time.Since(began).Round(time.Millisecond))
	if want := kcp.RootPath + ":" + name; path != want {
		t.Errorf("path = %q, want %q", path, want)
	}
	if !logicalClusterID.MatchString(id) {
		t.Errorf("logical cluster ID %q of %s does not look like one", id, path)
	}
	return path, id
}

// checkLogicalCluster checks that the LogicalCluster reached through
// pathOrID belongs to the workspace with the given path and ID.
func checkLogicalCluster(ctx context.Context, t *testing.T, pathOrID, path, id string) {
	t.Helper()
	lc, err := server.LogicalCluster(ctx, pathOrID)
	if err != nil {
		t.Fatal(err)
	}
	if got := lc.GetAnnotations()[kcp.PathAnnotation]; got != path {
		t.Errorf("LogicalCluster reached through %s: annotation %s = %q, want %q", pathOrID, kcp.PathAnnotation, got, path)
	}
	if got := lc.GetAnnotations()["kcp.io/cluster"]; got != id {
		t.Errorf("LogicalCluster reached through %s: annotation kcp.io/cluster = %q, want %q", pathOrID, got, id)
	}
}

func TestCreateWorkspaces(t *testing.T) {
	ctx := testContext(t)
	path1, id1 := createWorkspace(ctx, t, "create-a")
	path2, id2 := createWorkspace(ctx, t, "create-b")
	if id1 == id2 {
		t.Errorf("workspaces %s and %s have the same logical cluster ID %s", path1, path2, id1)
	}
	for _, ws := range []struct{ path, id string }{{path1, id1}, {path2, id2}} {
		checkLogicalCluster(ctx, t, ws.path, ws.path, ws.id)
		// A workspace is reachable by its logical cluster ID too.
		checkLogicalCluster(ctx, t, ws.id, ws.path, ws.id)
	}

	// Creating an existing workspace again returns the same one.
	path, id, err := server.CreateWorkspace(ctx, kcp.RootPath, "create-a")
	if err != nil {
		t.Fatal(err)
	}
	if path != path1 || id != id1 {
		t.Errorf("creating %s again gave %s (%s), want %s (%s)", path1, path, id, path1, id1)
	}

	// A nested workspace.
	nested, nestedID, err := server.CreateWorkspace(ctx, path1, "child")
	if err != nil {
		t.Fatal(err)
	}
	if want := path1 + ":child"; nested != want {
		t.Errorf("nested path = %q, want %q", nested, want)
	}
	checkLogicalCluster(ctx, t, nested, nested, nestedID)
}

func TestWorkspacesAreIsolated(t *testing.T) {
	ctx := testContext(t)
	path1, _ := createWorkspace(ctx, t, "isolated-a")
	path2, _ := createWorkspace(ctx, t, "isolated-b")
	c1, err := server.Client(path1)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := server.Client(path2)
	if err != nil {
		t.Fatal(err)
	}

	const namespace = "isolation"
	for _, c := range []client.Client{c1, c2} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
			t.Fatal(err)
		}
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "only-in-a"},
		Data:       map[string]string{"workspace": path1},
	}
	if err := c1.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}

	got := &corev1.ConfigMap{}
	if err := c1.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatalf("getting the ConfigMap in %s: %v", path1, err)
	}
	if got.Data["workspace"] != path1 {
		t.Errorf("ConfigMap in %s has data %v", path1, got.Data)
	}
	if got.Annotations["kcp.io/cluster"] == "" {
		t.Errorf("ConfigMap in %s has no kcp.io/cluster annotation: %v", path1, got.Annotations)
	}
	err = c2.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("getting the ConfigMap of %s in %s: err = %v, want NotFound", path1, path2, err)
	}
	list := &corev1.ConfigMapList{}
	if err := c2.List(ctx, list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	for _, item := range list.Items {
		if item.Name == cm.Name {
			t.Errorf("%s lists the ConfigMap %s of %s", path2, cm.Name, path1)
		}
	}
}

func TestKubeconfigFor(t *testing.T) {
	ctx := testContext(t)
	path, id := createWorkspace(ctx, t, "kubeconfig")
	data, err := server.KubeconfigFor(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatalf("loading the kubeconfig for %s: %v\n%s", path, err, data)
	}
	if want := server.URL + "/clusters/" + path; cfg.Host != want {
		t.Errorf("server = %q, want %q", cfg.Host, want)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lc := &unstructured.Unstructured{}
	lc.SetGroupVersionKind(kcp.LogicalClusterGVK)
	if err := c.Get(ctx, client.ObjectKey{Name: kcp.LogicalClusterName}, lc); err != nil {
		t.Fatalf("getting the LogicalCluster through the kubeconfig for %s: %v", path, err)
	}
	if got := lc.GetAnnotations()[kcp.PathAnnotation]; got != path {
		t.Errorf("annotation %s = %q, want %q", kcp.PathAnnotation, got, path)
	}
	if got := lc.GetAnnotations()["kcp.io/cluster"]; got != id {
		t.Errorf("annotation kcp.io/cluster = %q, want %q", got, id)
	}
}

func TestDeleteWorkspace(t *testing.T) {
	ctx := testContext(t)
	path, _ := createWorkspace(ctx, t, "deleted")
	began := time.Now()
	if err := server.DeleteWorkspace(ctx, kcp.RootPath, "deleted"); err != nil {
		t.Fatal(err)
	}
	t.Logf("workspace %s gone after %s", path, time.Since(began).Round(time.Millisecond))

	root, err := server.Client(kcp.RootPath)
	if err != nil {
		t.Fatal(err)
	}
	ws := &unstructured.Unstructured{}
	ws.SetGroupVersionKind(kcp.WorkspaceGVK)
	if err := root.Get(ctx, client.ObjectKey{Name: "deleted"}, ws); !apierrors.IsNotFound(err) {
		t.Errorf("getting the deleted workspace %s: err = %v, want NotFound", path, err)
	}
	environment.Eventually(t, 30*time.Second, "the path of a deleted workspace to lead nowhere", func() error {
		_, err := server.LogicalCluster(ctx, path)
		if err == nil {
			return fmt.Errorf("%s still answers", path)
		}
		t.Logf("after deletion, %s answers: %v", path, err)
		return nil
	})
	// Deleting it again is no error.
	if err := server.DeleteWorkspace(ctx, kcp.RootPath, "deleted"); err != nil {
		t.Errorf("deleting %s again: %v", path, err)
	}
}

// TestKillAndRestart comes last: it restarts the kcp of the suite.
func TestKillAndRestart(t *testing.T) {
	ctx := testContext(t)
	path, id := createWorkspace(ctx, t, "survivor")
	c, err := server.Client(path)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "survivor"}, Data: map[string]string{"k": "v"}}
	environment.Eventually(t, 30*time.Second, "a ConfigMap in namespace default of "+path, func() error {
		return c.Create(ctx, cm)
	})
	oldURL := server.URL

	if err := server.Kill(); err != nil {
		t.Fatal(err)
	}
	if !server.Exited() {
		t.Fatal("kcp has not exited after Kill")
	}
	if err := server.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("kcp ready %s after its restart", server.ReadyAfter().Round(time.Millisecond))
	if server.URL != oldURL {
		t.Errorf("URL changed from %s to %s on restart", oldURL, server.URL)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil {
		t.Logf("a client made before the restart fails: %v", err)
	} else {
		t.Logf("a client made before the restart still works")
	}

	checkLogicalCluster(ctx, t, path, path, id)
	c, err = server.Client(path)
	if err != nil {
		t.Fatal(err)
	}
	got := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatalf("the ConfigMap in %s did not survive the restart: %v", path, err)
	}
	if got.Data["k"] != "v" {
		t.Errorf("the ConfigMap in %s has data %v after the restart", path, got.Data)
	}
}
