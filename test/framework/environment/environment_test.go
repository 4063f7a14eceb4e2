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

package environment_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/test/framework"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/kubestellar"
)

// space is the one space shared by the tests of this package.
var space *environment.Space

func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, "environment", environment.SharedSpace(&space, "environment-test", environment.WithKubeStellarCRDs())))
}

func jsonOf(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

func TestLocators(t *testing.T) {
	assets, err := environment.AssetsDir()
	if err != nil || assets != os.Getenv("KUBEBUILDER_ASSETS") {
		t.Errorf("AssetsDir() = %q, %v; want $KUBEBUILDER_ASSETS", assets, err)
	}

	root, err := environment.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.Contains(string(goMod), "module "+environment.ModulePath+"\n") {
		t.Errorf("RepoRoot() = %s, whose go.mod does not declare %s (err %v)", root, environment.ModulePath, err)
	}
	wd, _ := os.Getwd()
	if !strings.HasPrefix(wd, root+string(filepath.Separator)) {
		t.Errorf("RepoRoot() = %s is not above the working directory %s", root, wd)
	}

	crdDir, err := environment.KubeStellarCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(crdDir)))), "kubestellar@v") {
		t.Errorf("KubeStellarCRDDir() = %s is not config/crd/bases of a kubestellar module", crdDir)
	}
	if strings.HasPrefix(crdDir, root) {
		t.Errorf("KubeStellarCRDDir() = %s is inside the repository", crdDir)
	}
	for _, f := range []string{"control.kubestellar.io_bindingpolicies.yaml", "control.kubestellar.io_bindings.yaml", "control.kubestellar.io_combinedstatuses.yaml"} {
		if _, err := os.Stat(filepath.Join(crdDir, f)); err != nil {
			t.Errorf("KubeStellarCRDDir() lacks %s: %v", f, err)
		}
	}

	stagerDir, err := environment.StagerCRDDir()
	if err != nil || stagerDir != filepath.Join(root, "config", "crd", "bases") {
		t.Errorf("StagerCRDDir() = %s, %v", stagerDir, err)
	}
}

func TestMissingAssets(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	if _, err := environment.AssetsDir(); err == nil || !strings.Contains(err.Error(), "make test") {
		t.Errorf("AssetsDir() error = %v, want one that says to run `make test`", err)
	}
	if s, err := environment.StartSpace("no-assets"); err == nil || !strings.Contains(err.Error(), "make test") {
		if s != nil {
			_ = s.Stop()
		}
		t.Errorf("StartSpace error = %v, want one that says to run `make test`", err)
	}
	t.Setenv("KUBEBUILDER_ASSETS", t.TempDir())
	if _, err := environment.AssetsDir(); err == nil || !strings.Contains(err.Error(), "kube-apiserver") {
		t.Errorf("AssetsDir() on an empty directory: error = %v", err)
	}
}

func TestMissingCRDDir(t *testing.T) {
	s, err := environment.StartSpace("bad-crds", environment.WithCRDDirs(filepath.Join(t.TempDir(), "nope")))
	if err == nil {
		_ = s.Stop()
		t.Fatal("StartSpace with a missing CRD directory succeeded")
	}
}

func TestSpace(t *testing.T) {
	ctx := context.Background()
	if space.Name != "environment-test" || space.Config == nil || space.Client == nil || space.Environment == nil {
		t.Fatalf("space fields not set: %+v", space)
	}

	// KubeStellar's CRDs are established.
	for _, name := range []string{"bindingpolicies", "bindings", "combinedstatuses", "statuscollectors", "customtransforms"} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := space.Client.Get(ctx, client.ObjectKey{Name: name + ".control.kubestellar.io"}, crd); err != nil {
			t.Errorf("CRD %s: %v", name, err)
			continue
		}
		established := slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
			return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
		})
		if !established {
			t.Errorf("CRD %s not established", name)
		}
	}
	if err := space.Client.List(ctx, &ksv1alpha1.BindingPolicyList{}); err != nil {
		t.Errorf("listing BindingPolicies: %v", err)
	}

	// The kubeconfig works on its own and authenticates the
	// system:masters user.
	kubeconfig := space.Kubeconfig()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatalf("parsing Kubeconfig(): %v", err)
	}
	if strings.TrimSuffix(cfg.Host, "/") != strings.TrimSuffix(space.Config.Host, "/") {
		t.Errorf("kubeconfig server %s, Config.Host %s", cfg.Host, space.Config.Host)
	}
	c, err := client.New(cfg, client.Options{Scheme: environment.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range []client.Client{c, space.Client} {
		review := &authenticationv1.SelfSubjectReview{}
		if err := cl.Create(ctx, review); err != nil {
			t.Fatalf("SelfSubjectReview: %v", err)
		}
		if ui := review.Status.UserInfo; ui.Username != environment.SpaceUserName || !slices.Contains(ui.Groups, "system:masters") {
			t.Errorf("authenticated as %s %v, want %s in system:masters", ui.Username, ui.Groups, environment.SpaceUserName)
		}
	}
	kubeconfig[0] ^= 0xff
	if again := space.Kubeconfig(); again[0] == kubeconfig[0] {
		t.Error("Kubeconfig() returns shared storage")
	}
}

func TestKubeconfigSecret(t *testing.T) {
	ctx := context.Background()
	c := space.Client
	const ns, name = "kubeconfigs", "wds1"
	if err := environment.RegisterKubeconfigSecret(ctx, c, ns, name, "", []byte("first")); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, secret); err != nil {
		t.Fatal(err)
	}
	if string(secret.Data["kubeconfig"]) != "first" || !reflect.DeepEqual(secret.Labels, map[string]string{"sigs.k8s.io/multicluster-runtime-kubeconfig": "true"}) {
		t.Errorf("secret = labels %v, data %v", secret.Labels, secret.Data)
	}

	// Registering again updates; the namespace already exists.
	if err := environment.RegisterKubeconfigSecret(ctx, c, ns, name, "example.com/space", space.Kubeconfig()); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, secret); err != nil {
		t.Fatal(err)
	}
	if string(secret.Data["kubeconfig"]) != string(space.Kubeconfig()) || secret.Labels["example.com/space"] != "true" {
		t.Errorf("updated secret = labels %v, kubeconfig %d bytes", secret.Labels, len(secret.Data["kubeconfig"]))
	}

	if err := environment.UnregisterKubeconfigSecret(ctx, c, ns, name); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, secret); !apierrors.IsNotFound(err) {
		t.Errorf("secret after unregistering: err %v", err)
	}
	if err := environment.UnregisterKubeconfigSecret(ctx, c, ns, name); err != nil {
		t.Errorf("unregistering a missing secret: %v", err)
	}
}

func TestSecondSpace(t *testing.T) {
	ctx := context.Background()
	other, err := environment.StartSpace("second")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := other.Stop(); err != nil {
			t.Error(err)
		}
		if err := other.Stop(); err != nil {
			t.Errorf("second Stop: %v", err)
		}
	}()
	if other.Config.Host == space.Config.Host {
		t.Fatalf("both spaces at %s", other.Config.Host)
	}
	if err := other.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "only-in-second"}}); err != nil {
		t.Fatal(err)
	}
	if err := space.Client.Get(ctx, client.ObjectKey{Name: "only-in-second"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace of the second space seen in the first (err %v)", err)
	}
	if err := other.Client.List(ctx, &ksv1alpha1.BindingPolicyList{}); !meta.IsNoMatchError(err) {
		t.Errorf("listing BindingPolicies in a space without KubeStellar CRDs: err %v, want no match", err)
	}
}

// TestSpaceWithSimulator runs the KubeStellar simulator in a space: a
// Deployment selected by a BindingPolicy with statusCollectors gets a
// Binding and a CombinedStatus, which go away with the BindingPolicy.
func TestSpaceWithSimulator(t *testing.T) {
	ctx := context.Background()
	c := space.Client
	const ns = "with-simulator"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app", Labels: map[string]string{"app.kubernetes.io/name": "app"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"pod": "app"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"pod": "app"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
	if err := c.Create(ctx, deploy); err != nil {
		t.Fatal(err)
	}

	available := "1"
	reporter := func(bindingPolicy string, obj kubestellar.ObjectRef, destinations []string) []ksv1alpha1.NamedStatusCombination {
		var rows []ksv1alpha1.StatusCombinationRow
		for _, d := range destinations {
			rows = append(rows, ksv1alpha1.StatusCombinationRow{Columns: []ksv1alpha1.Value{
				{Type: ksv1alpha1.TypeString, String: &d},
				{Type: ksv1alpha1.TypeNumber, Number: &available},
			}})
		}
		return []ksv1alpha1.NamedStatusCombination{{Name: "availability", ColumnNames: []string{"wec", "available"}, Rows: rows}}
	}
	sim := kubestellar.New(c, []kubestellar.Cluster{
		{Name: "wec-east", Labels: map[string]string{"region": "east"}},
		{Name: "wec-west", Labels: map[string]string{"region": "west"}},
	}, kubestellar.WithReporter(reporter))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = sim.Run(runCtx) }()
	defer func() { cancel(); <-done }()

	apps := "apps"
	bp := &ksv1alpha1.BindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "app-east"},
		Spec: ksv1alpha1.BindingPolicySpec{
			ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"region": "east"}}},
			Downsync: []ksv1alpha1.DownsyncPolicyClause{{
				DownsyncObjectTest: ksv1alpha1.DownsyncObjectTest{APIGroup: &apps, Resources: []string{"deployments"},
					Namespaces: []string{ns}, ObjectSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"app.kubernetes.io/name": "app"}}}},
				DownsyncModulation: ksv1alpha1.DownsyncModulation{StatusCollectors: []string{"availability"}},
			}},
		},
	}
	if err := c.Create(ctx, bp); err != nil {
		t.Fatal(err)
	}

	environment.Eventually(t, 30*time.Second, "Binding and BindingPolicy status", func() error {
		binding := &ksv1alpha1.Binding{}
		if err := c.Get(ctx, client.ObjectKey{Name: "app-east"}, binding); err != nil {
			return err
		}
		if len(binding.OwnerReferences) != 1 || binding.OwnerReferences[0].UID != bp.UID || binding.OwnerReferences[0].Kind != "BindingPolicy" ||
			binding.OwnerReferences[0].Controller == nil || !*binding.OwnerReferences[0].Controller ||
			binding.OwnerReferences[0].BlockOwnerDeletion == nil || *binding.OwnerReferences[0].BlockOwnerDeletion {
			return fmt.Errorf("ownerReferences = %s", jsonOf(binding.OwnerReferences))
		}
		ws := binding.Spec.Workload.NamespaceScope
		if len(ws) != 1 || ws[0].Group != "apps" || ws[0].Version != "v1" || ws[0].Resource != "deployments" ||
			ws[0].Namespace != ns || ws[0].Name != "app" || ws[0].ResourceVersion != deploy.ResourceVersion ||
			!slices.Equal(ws[0].StatusCollectors, []string{"availability"}) || len(binding.Spec.Workload.ClusterScope) != 0 {
			return fmt.Errorf("workload = %s", jsonOf(binding.Spec.Workload))
		}
		if !reflect.DeepEqual(binding.Spec.Destinations, []ksv1alpha1.Destination{{ClusterId: "wec-east"}}) {
			return fmt.Errorf("destinations = %v", binding.Spec.Destinations)
		}
		got := &ksv1alpha1.BindingPolicy{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(bp), got); err != nil {
			return err
		}
		if got.Status.ObservedGeneration != got.Generation || got.Generation == 0 {
			return fmt.Errorf("observedGeneration %d, generation %d", got.Status.ObservedGeneration, got.Generation)
		}
		return nil
	})

	environment.Eventually(t, 30*time.Second, "CombinedStatus", func() error {
		cs := &ksv1alpha1.CombinedStatus{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: string(deploy.UID) + "." + string(bp.UID)}, cs); err != nil {
			return err
		}
		wantLabels := map[string]string{
			"status.kubestellar.io/api-group":      "apps",
			"status.kubestellar.io/resource":       "deployments",
			"status.kubestellar.io/namespace":      ns,
			"status.kubestellar.io/name":           "app",
			"status.kubestellar.io/binding-policy": "app-east",
		}
		if !reflect.DeepEqual(cs.Labels, wantLabels) {
			return fmt.Errorf("labels = %v", cs.Labels)
		}
		if len(cs.OwnerReferences) != 1 || cs.OwnerReferences[0].UID != deploy.UID {
			return fmt.Errorf("ownerReferences = %s", jsonOf(cs.OwnerReferences))
		}
		want := `[{"name":"availability","columnNames":["wec","available"],"rows":[{"columns":[{"type":"String","string":"wec-east"},{"type":"Number","float":"1"}]}]}]`
		if got := jsonOf(cs.Results); got != want {
			return fmt.Errorf("results = %s, want %s", got, want)
		}
		return nil
	})

	if err := c.Delete(ctx, bp); err != nil {
		t.Fatal(err)
	}
	environment.Eventually(t, 30*time.Second, "cleanup", func() error {
		if err := c.Get(ctx, client.ObjectKey{Name: "app-east"}, &ksv1alpha1.BindingPolicy{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("BindingPolicy still there (err %w)", err)
		}
		if err := c.Get(ctx, client.ObjectKey{Name: "app-east"}, &ksv1alpha1.Binding{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Binding still there (err %w)", err)
		}
		var list ksv1alpha1.CombinedStatusList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(list.Items) != 0 {
			return fmt.Errorf("%d CombinedStatuses left", len(list.Items))
		}
		return nil
	})
}

// TestRestartAPIServer stops a space's kube-apiserver and starts it again:
// clients are refused meanwhile, and afterwards the same clients reach it at
// the same address with the same credentials and find the space's objects.
// Stop stops the restarted server too.
func TestRestartAPIServer(t *testing.T) {
	ctx := context.Background()
	restarted, err := environment.StartSpace("restarted")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = restarted.Stop() }()
	kept := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}
	if err := restarted.Client.Create(ctx, kept); err != nil {
		t.Fatal(err)
	}
	if err := restarted.StartAPIServer(ctx); err == nil {
		t.Error("StartAPIServer while it runs: no error")
	}
	if err := restarted.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if err := restarted.StopAPIServer(); err == nil {
		t.Error("StopAPIServer twice: no error")
	}
	address := strings.TrimPrefix(restarted.Config.Host, "https://")
	if conn, err := net.DialTimeout("tcp", address, time.Second); err == nil {
		_ = conn.Close()
		t.Fatalf("%s still accepts connections after StopAPIServer", address)
	}
	if err := restarted.Client.Get(ctx, client.ObjectKeyFromObject(kept), &corev1.Namespace{}); err == nil {
		t.Fatal("a Get succeeded while the API server was stopped")
	}
	begin := time.Now()
	if err := restarted.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver ready again %s after StartAPIServer", time.Since(begin).Round(time.Millisecond))
	got := &corev1.Namespace{}
	if err := restarted.Client.Get(ctx, client.ObjectKeyFromObject(kept), got); err != nil || got.UID != kept.UID {
		t.Fatalf("namespace after the restart: %v (UID %s, want %s)", err, got.UID, kept.UID)
	}
	if err := restarted.Stop(); err != nil {
		t.Fatal(err)
	}
	if conn, err := net.DialTimeout("tcp", address, time.Second); err == nil {
		_ = conn.Close()
		t.Errorf("%s still accepts connections after Stop", address)
	}
}
