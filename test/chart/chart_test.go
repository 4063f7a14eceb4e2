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

// Package chart checks the Helm charts of config/chart with a real helm
// (built by hack/tool.sh): helm lint, and helm template with the default
// values and every optional part enabled, against what config/ ships.
package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	helmtest "github.com/kubestellar/workload-stager/test/framework/helm"
)

// configDir is config/, seen from this package; helm runs in the
// repository root, where the charts are helmtest.StagerChart and
// helmtest.SpaceChart.
var (
	configDir  = filepath.Join("..", "..", "config")
	chart      = helmtest.StagerChart
	spaceChart = helmtest.SpaceChart
)

// helm runs helm, failing the test when it fails.
func helm(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := helmtest.Run(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// objects parses a stream of YAML documents, failing the test when it cannot.
func objects(t *testing.T, stream []byte) []*unstructured.Unstructured {
	t.Helper()
	objs, err := helmtest.Objects(stream)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// configObjects returns the objects of the YAML files of a config/ directory.
func configObjects(t *testing.T, dir string, files ...string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(configDir, dir, f))
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, objects(t, data)...)
	}
	return objs
}

// find returns the object of the kind and name, failing the test when there is none.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	o := helmtest.Find(objs, kind, name)
	if o == nil {
		t.Fatalf("no %s %s among %s", kind, name, names(objs))
	}
	return o
}

// names lists objects as Kind/name.
func names(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	slices.Sort(out)
	return out
}

// into converts an object to a typed one.
func into[T any](t *testing.T, o *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, out); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
	return out
}

func TestChartsLint(t *testing.T) {
	for _, c := range []string{chart, spaceChart} {
		out := helm(t, "lint", "--strict", c)
		t.Logf("%s", out)
	}
	helm(t, "lint", "--strict", chart, "--set", "metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.dashboard.enabled=true")
}

// TestChartShipsWhatConfigShips renders the chart with its default values
// and checks it against config/: the same RBAC objects and rules as
// config/rbac/hosting (the stager's ServiceAccount bound in the release's
// namespace), the same CRDs (the spaces' and the hosting cluster's), and a Deployment with the secure defaults.
func TestChartShipsWhatConfigShips(t *testing.T) {
	rendered := objects(t, helm(t, "template", "stager", chart, "--namespace", "kubestellar-stager", "--include-crds"))
	want := configObjects(t, "rbac/hosting", "service_account.yaml", "role.yaml", "leader_election_role.yaml", "metrics_auth_role.yaml", "metrics_reader_role.yaml",
		"metric_provider_role.yaml", "rollout_wave_role.yaml", "rollout_freeze_role.yaml", "notification_destination_role.yaml")
	for _, w := range want {
		got := find(t, rendered, w.GetKind(), w.GetName())
		switch w.GetKind() {
		case "Role", "ClusterRole":
			if g, w := into[rbacv1.ClusterRole](t, got).Rules, into[rbacv1.ClusterRole](t, w).Rules; !reflect.DeepEqual(g, w) {
				t.Errorf("%s %s: the chart's rules %v differ from config's %v", got.GetKind(), got.GetName(), g, w)
			}
			if got.GetKind() == "Role" && got.GetNamespace() != "kubestellar-stager" {
				t.Errorf("Role %s is in namespace %q, want the release's", got.GetName(), got.GetNamespace())
			}
		case "RoleBinding", "ClusterRoleBinding":
			binding := into[rbacv1.RoleBinding](t, got)
			if !reflect.DeepEqual(binding.RoleRef, into[rbacv1.RoleBinding](t, w).RoleRef) {
				t.Errorf("%s %s binds %v, want %v", got.GetKind(), got.GetName(), binding.RoleRef, into[rbacv1.RoleBinding](t, w).RoleRef)
			}
			if want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "stager", Namespace: "kubestellar-stager"}}; !reflect.DeepEqual(binding.Subjects, want) {
				t.Errorf("%s %s binds %v, want %v", got.GetKind(), got.GetName(), binding.Subjects, want)
			}
		}
	}
	// The chart's crds/ holds CRDs only: Helm applies whatever is there.
	crds := filepath.Join("..", "..", chart, "crds")
	entries, err := os.ReadDir(crds)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(crds, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objects(t, data) {
			if o.GetKind() != "CustomResourceDefinition" {
				t.Errorf("crds/%s holds a %s", e.Name(), o.GetKind())
			}
		}
	}
	wantCRDs := append(configObjects(t, "crd/bases", "community.kubestellar.io_stagedbindingpolicies.yaml", "community.kubestellar.io_stageapprovals.yaml"),
		configObjects(t, "crd/hosting", "community.kubestellar.io_metricproviders.yaml", "community.kubestellar.io_rolloutwaves.yaml",
			"community.kubestellar.io_rolloutfreezes.yaml", "community.kubestellar.io_notificationdestinations.yaml")...)
	for _, wantCRD := range wantCRDs {
		if crd := find(t, rendered, "CustomResourceDefinition", wantCRD.GetName()); !reflect.DeepEqual(crd.Object, wantCRD.Object) {
			t.Errorf("the chart's CRD %s differs from config/crd/bases'", wantCRD.GetName())
		}
	}

	deploy := into[appsv1.Deployment](t, find(t, rendered, "Deployment", "stager"))
	pod := deploy.Spec.Template.Spec
	if *deploy.Spec.Replicas != 2 || pod.ServiceAccountName != "stager" {
		t.Errorf("Deployment: %d replicas as %q, want 2 as stager", *deploy.Spec.Replicas, pod.ServiceAccountName)
	}
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 65532 {
		t.Errorf("pod security context %+v, want non-root user 65532", sc)
	}
	container := pod.Containers[0]
	if sc := container.SecurityContext; sc == nil || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("container security context %+v, want a read-only root, no privilege escalation, every capability dropped", sc)
	}
	if container.Image != "ghcr.io/kubestellar/workload-stager:0.1.0" {
		t.Errorf("image %q, want the chart's appVersion", container.Image)
	}
	for _, arg := range []string{"--leader-elect=true", "--provider=kubeconfig", "--kubeconfig-namespace=kubestellar-stager", "--metrics-secure=true", "--metrics-bind-address=:8443"} {
		if !slices.Contains(container.Args, arg) {
			t.Errorf("the stager's arguments %q lack %s", container.Args, arg)
		}
	}
	for _, arg := range container.Args {
		if strings.HasPrefix(arg, "--insecure-") {
			t.Errorf("the default values pass %s", arg)
		}
	}
	for _, o := range rendered {
		if k := o.GetKind(); k == "ServiceMonitor" || k == "PrometheusRule" || k == "ConfigMap" {
			t.Errorf("%s %s is rendered though not enabled", k, o.GetName())
		}
	}
}

// TestChartMonitoring enables the ServiceMonitor, the PrometheusRule and the
// dashboard: they are config/prometheus's and config/grafana's, labelled as
// asked, the dashboard for Grafana's sidecar.
func TestChartMonitoring(t *testing.T) {
	rendered := objects(t, helm(t, "template", "stager", chart, "--namespace", "monitoring-test",
		"--set", "metrics.serviceMonitor.enabled=true,metrics.serviceMonitor.labels.release=prom",
		"--set", "metrics.prometheusRule.enabled=true,metrics.prometheusRule.labels.release=prom",
		"--set", "metrics.dashboard.enabled=true,metrics.dashboard.namespace=grafana"))
	rules := find(t, rendered, "PrometheusRule", "stager")
	wantRules := configObjects(t, "prometheus", "rules.yaml")[0]
	if !reflect.DeepEqual(rules.Object["spec"], wantRules.Object["spec"]) {
		t.Error("the chart's PrometheusRule differs from config/prometheus/rules.yaml")
	}
	monitor := find(t, rendered, "ServiceMonitor", "stager")
	for _, o := range []*unstructured.Unstructured{rules, monitor} {
		if o.GetLabels()["release"] != "prom" || o.GetNamespace() != "monitoring-test" {
			t.Errorf("%s: labels %v in %q, want release=prom in the release's namespace", o.GetKind(), o.GetLabels(), o.GetNamespace())
		}
	}
	endpoints, _, _ := unstructured.NestedSlice(monitor.Object, "spec", "endpoints")
	if len(endpoints) != 1 || endpoints[0].(map[string]any)["scheme"] != "https" {
		t.Errorf("ServiceMonitor endpoints %v, want one over https", endpoints)
	}
	dashboard := find(t, rendered, "ConfigMap", "stager-stage-progress-dashboard")
	want, err := os.ReadFile(filepath.Join(configDir, "grafana", "stage-progress.json"))
	if err != nil {
		t.Fatal(err)
	}
	data, _, _ := unstructured.NestedString(dashboard.Object, "data", "stage-progress.json")
	if strings.TrimSpace(data) != strings.TrimSpace(string(want)) || dashboard.GetLabels()["grafana_dashboard"] != "1" || dashboard.GetNamespace() != "grafana" {
		t.Errorf("the dashboard ConfigMap (labels %v, namespace %q) is not config/grafana's stage-progress.json for Grafana's sidecar", dashboard.GetLabels(), dashboard.GetNamespace())
	}
}

// TestChartProviderValues renders the provider values: kcp's kubeconfig
// mounted from a Secret, the kubeconfig Secrets' Role in their own
// namespace, the opt-ins passed only when set.
func TestChartProviderValues(t *testing.T) {
	rendered := objects(t, helm(t, "template", "stager", chart, "--namespace", "stager",
		"--set", "provider=kubeconfig\\,kcp,kubeconfig.namespace=wdses,kubeconfig.insecureTLS=true",
		"--set", "kcp.kubeconfigSecret=kcp-admin,kcp.apiExportEndpointSlice=stager,reconcileTimeout=10s,leaderElection.enabled=false,replicas=1"))
	deploy := into[appsv1.Deployment](t, find(t, rendered, "Deployment", "stager"))
	args := deploy.Spec.Template.Spec.Containers[0].Args
	for _, arg := range []string{"--provider=kubeconfig,kcp", "--kubeconfig-namespace=wdses", "--insecure-kubeconfig-tls", "--kcp-kubeconfig=/etc/stager/kcp/kubeconfig",
		"--kcp-apiexport-endpointslice=stager", "--reconcile-timeout=10s", "--leader-elect=false"} {
		if !slices.Contains(args, arg) {
			t.Errorf("arguments %q lack %s", args, arg)
		}
	}
	if slices.Contains(args, "--insecure-kubeconfig-exec") {
		t.Error("--insecure-kubeconfig-exec is passed though not set")
	}
	mounted := false
	for _, v := range deploy.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == "kcp-admin" {
			mounted = true
		}
	}
	if !mounted {
		t.Error("the kcp kubeconfig Secret is not mounted")
	}
	for _, kind := range []string{"Role", "RoleBinding"} {
		if o := find(t, rendered, kind, "stager-kubeconfigs"); o.GetNamespace() != "wdses" {
			t.Errorf("%s stager-kubeconfigs is in %q, want the Secrets' namespace wdses", kind, o.GetNamespace())
		}
	}
}

// TestSpaceChartShipsWhatConfigShips renders the per-WDS chart: the CRD and
// controller-gen's ClusterRole of config/rbac/space, bound to the subjects
// given.
func TestSpaceChartShipsWhatConfigShips(t *testing.T) {
	rendered := objects(t, helm(t, "template", "space", spaceChart, "--include-crds",
		"--set", "subjects[0].kind=ServiceAccount,subjects[0].name=stager,subjects[0].namespace=wds-access"))
	want := configObjects(t, "rbac/space", "role.yaml")[0]
	role := find(t, rendered, "ClusterRole", want.GetName())
	if g, w := into[rbacv1.ClusterRole](t, role).Rules, into[rbacv1.ClusterRole](t, want).Rules; !reflect.DeepEqual(g, w) {
		t.Errorf("the space chart's rules %v differ from config/rbac/space's %v", g, w)
	}
	binding := into[rbacv1.ClusterRoleBinding](t, find(t, rendered, "ClusterRoleBinding", want.GetName()))
	if want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "stager", Namespace: "wds-access"}}; !reflect.DeepEqual(binding.Subjects, want) {
		t.Errorf("the binding's subjects are %v, want %v", binding.Subjects, want)
	}
	find(t, rendered, "CustomResourceDefinition", "stagedbindingpolicies.community.kubestellar.io")
	find(t, rendered, "CustomResourceDefinition", "stageapprovals.community.kubestellar.io")
	if got := fmt.Sprint(names(rendered)); !strings.Contains(got, "ClusterRoleBinding/stager-space") {
		t.Errorf("rendered %s", got)
	}

	// Approvals: the approvers' role and the admission policy as
	// config/approval ships them; approvers bound only when named.
	for _, w := range configObjects(t, "approval", "approver_role.yaml", "admission_policy.yaml") {
		got := find(t, rendered, w.GetKind(), w.GetName())
		if !reflect.DeepEqual(got.Object["spec"], w.Object["spec"]) || !reflect.DeepEqual(got.Object["rules"], w.Object["rules"]) {
			t.Errorf("the space chart's %s %s differs from config/approval's", w.GetKind(), w.GetName())
		}
	}
	for _, o := range rendered {
		if o.GetKind() == "ClusterRoleBinding" && o.GetName() == "workload-stager-approver" {
			t.Error("approvers bound though none was named")
		}
	}
	approvers := objects(t, helm(t, "template", "space", spaceChart, "--set", "approval.admissionPolicy=false",
		"--set", "subjects[0].kind=User,subjects[0].name=stager,approval.approvers[0].kind=Group,approval.approvers[0].name=release-managers"))
	binding = into[rbacv1.ClusterRoleBinding](t, find(t, approvers, "ClusterRoleBinding", "workload-stager-approver"))
	if want := []rbacv1.Subject{{Kind: "Group", Name: "release-managers"}}; !reflect.DeepEqual(binding.Subjects, want) {
		t.Errorf("the approvers' binding's subjects are %v, want %v", binding.Subjects, want)
	}
	for _, o := range approvers {
		if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") {
			t.Errorf("%s rendered with approval.admissionPolicy=false", o.GetKind())
		}
	}
}

// TestChartKubeFlex renders provider kubeflex: config/rbac/kubeflex's
// ClusterRole and the provider's flags; with kubeflex.secretNamespaces, get
// on Secrets only in those namespaces. Without kubeflex, none of it.
func TestChartKubeFlex(t *testing.T) {
	if o := helmtest.Find(objects(t, helm(t, "template", "stager", chart, "--namespace", "stager")), "ClusterRole", "workload-stager-kubeflex"); o != nil {
		t.Error("the kubeflex ClusterRole is rendered though the provider is kubeconfig")
	}

	rendered := objects(t, helm(t, "template", "stager", chart, "--namespace", "stager", "--set", "provider=kubeflex"))
	want := configObjects(t, "rbac/kubeflex", "role.yaml")
	role := find(t, rendered, "ClusterRole", "workload-stager-kubeflex")
	if g, w := into[rbacv1.ClusterRole](t, role).Rules, into[rbacv1.ClusterRole](t, want[0]).Rules; !reflect.DeepEqual(g, w) {
		t.Errorf("the chart's kubeflex rules %v differ from config/rbac/kubeflex's %v", g, w)
	}
	// The provider only GETs the Secret a ControlPlane names: it never lists
	// or watches Secrets (docs/security.md).
	for _, rule := range into[rbacv1.ClusterRole](t, role).Rules {
		if slices.Contains(rule.Resources, "secrets") && !slices.Equal(rule.Verbs, []string{"get"}) {
			t.Errorf("the kubeflex ClusterRole grants %v on secrets, want get alone", rule.Verbs)
		}
	}
	binding := into[rbacv1.ClusterRoleBinding](t, find(t, rendered, "ClusterRoleBinding", "workload-stager-kubeflex"))
	if want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "stager", Namespace: "stager"}}; !reflect.DeepEqual(binding.Subjects, want) {
		t.Errorf("the kubeflex binding's subjects are %v, want %v", binding.Subjects, want)
	}
	args := into[appsv1.Deployment](t, find(t, rendered, "Deployment", "stager")).Spec.Template.Spec.Containers[0].Args
	for _, arg := range []string{"--provider=kubeflex", "--kubeflex-selector=kflex.kubestellar.io/cptype=wds", "--kubeflex-kubeconfig-key=auto", "--kubeflex-resync=30s"} {
		if !slices.Contains(args, arg) {
			t.Errorf("arguments %q lack %s", args, arg)
		}
	}

	narrowed := objects(t, helm(t, "template", "stager", chart, "--namespace", "stager", "--set", "provider=kubeflex,kubeflex.secretNamespaces={wds1-system,wds2-system}"))
	for _, rule := range into[rbacv1.ClusterRole](t, find(t, narrowed, "ClusterRole", "workload-stager-kubeflex")).Rules {
		if slices.Contains(rule.Resources, "secrets") {
			t.Errorf("with kubeflex.secretNamespaces, the ClusterRole still grants %v on secrets", rule.Verbs)
		}
	}
	var namespaces []string
	for _, o := range narrowed {
		if o.GetKind() == "Role" && o.GetName() == "workload-stager-kubeflex-secrets" {
			namespaces = append(namespaces, o.GetNamespace())
			for _, rule := range into[rbacv1.Role](t, o).Rules {
				if !slices.Equal(rule.Verbs, []string{"get"}) {
					t.Errorf("the Secrets Role in %s grants %v, want get alone", o.GetNamespace(), rule.Verbs)
				}
			}
		}
	}
	if want := []string{"wds1-system", "wds2-system"}; !slices.Equal(namespaces, want) {
		t.Errorf("the Secrets Roles are in %v, want %v", namespaces, want)
	}
	args = into[appsv1.Deployment](t, find(t, narrowed, "Deployment", "stager")).Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(args, "--kubeflex-secret-namespaces=wds1-system,wds2-system") {
		t.Errorf("arguments %q lack --kubeflex-secret-namespaces", args)
	}
}
