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

package main

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// testCRD is a one-version CRD; modify edits it before it is returned.
func testCRD(modify func(*apiextensionsv1.CustomResourceDefinition)) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Description: "a widget",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object"}},
				}},
			}},
		},
	}
	crd.Name = "widgets.example.com"
	if modify != nil {
		modify(crd)
	}
	return crd
}

// toMap renders obj as generic YAML values, as a reader of the generated file sees it.
func toMap(t *testing.T, obj any) map[string]any {
	t.Helper()
	data, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// schemaYAML is the APIResourceSchema of the unmodified testCRD, as YAML.
const schemaYAML = `
apiVersion: apis.kcp.io/v1alpha1
kind: APIResourceSchema
spec:
  group: example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      type: object
      description: a widget
      properties:
        spec: {type: object}
`

func TestResourceSchema(t *testing.T) {
	base := map[string]any{}
	if err := yaml.Unmarshal([]byte(schemaYAML), &base); err != nil {
		t.Fatal(err)
	}
	firstVersion := func(m map[string]any) map[string]any {
		return m["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)
	}
	for _, tc := range []struct {
		name    string
		modify  func(*apiextensionsv1.CustomResourceDefinition)
		wantErr bool
		// want edits the expected object (base, without metadata).
		want func(map[string]any)
	}{
		{name: "plain"},
		{
			name: "namespaced, subresources and printer columns",
			modify: func(crd *apiextensionsv1.CustomResourceDefinition) {
				crd.Spec.Scope = apiextensionsv1.NamespaceScoped
				crd.Spec.Versions[0].Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
				crd.Spec.Versions[0].AdditionalPrinterColumns = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Phase", Type: "string", JSONPath: ".status.phase"}}
			},
			want: func(m map[string]any) {
				m["spec"].(map[string]any)["scope"] = "Namespaced"
				v := firstVersion(m)
				v["subresources"] = map[string]any{"status": map[string]any{}}
				v["additionalPrinterColumns"] = []any{map[string]any{"name": "Phase", "type": "string", "jsonPath": ".status.phase"}}
			},
		},
		{
			name: "deprecated with a warning",
			modify: func(crd *apiextensionsv1.CustomResourceDefinition) {
				warning := "use v2"
				crd.Spec.Versions[0].Deprecated = true
				crd.Spec.Versions[0].DeprecationWarning = &warning
			},
			want: func(m map[string]any) {
				v := firstVersion(m)
				v["deprecated"] = true
				v["deprecationWarning"] = "use v2"
			},
		},
		{
			name: "two versions, in order",
			modify: func(crd *apiextensionsv1.CustomResourceDefinition) {
				v2 := *crd.Spec.Versions[0].DeepCopy()
				v2.Name, v2.Storage = "v2", false
				crd.Spec.Versions = append(crd.Spec.Versions, v2)
			},
			want: func(m map[string]any) {
				spec := m["spec"].(map[string]any)
				v2 := toMap(t, firstVersion(m))
				v2["name"], v2["storage"] = "v2", false
				spec["versions"] = append(spec["versions"].([]any), v2)
			},
		},
		{
			name:    "a version without schema",
			modify:  func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Versions[0].Schema = nil },
			wantErr: true,
		},
		{
			name:    "no version",
			modify:  func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Versions = nil },
			wantErr: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResourceSchema(testCRD(tc.modify))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			gotMap := toMap(t, got)
			name := gotMap["metadata"].(map[string]any)["name"].(string)
			hash, rest, _ := strings.Cut(name, ".")
			if rest != "widgets.example.com" || len(hash) != 11 || hash[0] != 'v' || strings.Trim(hash[1:], "0123456789abcdef") != "" {
				t.Errorf("name %q, want v<10 hex digits>.widgets.example.com", name)
			}
			delete(gotMap, "metadata")
			want := toMap(t, base)
			if tc.want != nil {
				tc.want(want)
			}
			if !reflect.DeepEqual(gotMap, want) {
				g, _ := yaml.Marshal(gotMap)
				w, _ := yaml.Marshal(want)
				t.Errorf("got\n%s\nwant\n%s", g, w)
			}
		})
	}
}

func TestResourceSchemaName(t *testing.T) {
	name := func(modify func(*apiextensionsv1.CustomResourceDefinition)) string {
		t.Helper()
		s, err := ResourceSchema(testCRD(modify))
		if err != nil {
			t.Fatal(err)
		}
		return schemaName(s)
	}
	base := name(nil)
	if again := name(nil); again != base {
		t.Errorf("the name is not stable: %s, then %s", base, again)
	}
	// The CRD's metadata is not part of the schema.
	if other := name(func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Labels = map[string]string{"a": "b"} }); other != base {
		t.Errorf("a CRD label changes the name: %s, want %s", other, base)
	}
	for _, tc := range []struct {
		name   string
		modify func(*apiextensionsv1.CustomResourceDefinition)
	}{
		{"description", func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Description = "a better widget"
		}},
		{"served", func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Versions[0].Served = false }},
		{"short names", func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Names.ShortNames = []string{"w"} }},
		{"scope", func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Scope = apiextensionsv1.NamespaceScoped }},
	} {
		if changed := name(tc.modify); changed == base {
			t.Errorf("a changed %s keeps the name %s; APIResourceSchemas are immutable", tc.name, base)
		}
	}
}

func TestCanonical(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
		want string
	}{
		{"sorted keys", map[string]any{"b": 1, "a": map[string]any{"d": true, "c": "x"}}, `{"a":{"c":"x","d":true},"b":1}`},
		{"struct fields sorted", struct {
			Z string `json:"z"`
			A int    `json:"a"`
		}{"z", 1}, `{"a":1,"z":"z"}`},
		{"big numbers kept", map[string]any{"n": int64(9007199254740993)}, `{"n":9007199254740993}`},
		{"lists keep their order", []string{"b", "a"}, `["b","a"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, got, err := Canonical(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestExport(t *testing.T) {
	schema, err := ResourceSchema(testCRD(nil))
	if err != nil {
		t.Fatal(err)
	}
	resource := Exported(schema)
	for _, tc := range []struct {
		name   string
		claims []Claim
		want   string
	}{
		{"no claims", nil, `
apiVersion: apis.kcp.io/v1alpha2
kind: APIExport
metadata: {name: widgets}
spec:
  resources:
  - {group: example.com, name: widgets, schema: SCHEMA, storage: {crd: {}}}
`},
		{"claims", []Claim{
			{Group: "example.com", Resource: "gadgets", IdentityHash: "HASH", Verbs: []string{"get"}},
			{Group: "", Resource: "configmaps", Verbs: []string{"get", "list"}},
		}, `
apiVersion: apis.kcp.io/v1alpha2
kind: APIExport
metadata: {name: widgets}
spec:
  resources:
  - {group: example.com, name: widgets, schema: SCHEMA, storage: {crd: {}}}
  permissionClaims:
  - {group: example.com, resource: gadgets, identityHash: HASH, verbs: [get]}
  - {group: "", resource: configmaps, verbs: [get, list]}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := map[string]any{}
			if err := yaml.Unmarshal([]byte(strings.ReplaceAll(tc.want, "SCHEMA", schemaName(schema))), &want); err != nil {
				t.Fatal(err)
			}
			if got := toMap(t, Export("widgets", []ExportedResource{resource}, tc.claims)); !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestBinding(t *testing.T) {
	for _, tc := range []struct {
		name   string
		claims []Claim
		want   string
	}{
		{"no claims", nil, `
apiVersion: apis.kcp.io/v1alpha2
kind: APIBinding
metadata: {name: widgets}
spec:
  reference: {export: {path: "${PROVIDER_WORKSPACE_PATH}", name: widgets}}
`},
		{"every claim accepted", []Claim{
			{Group: "example.com", Resource: "gadgets", IdentityHash: "HASH", Verbs: []string{"get"}},
			{Group: "core.kcp.io", Resource: "logicalclusters", Verbs: []string{"get", "list"}},
		}, `
apiVersion: apis.kcp.io/v1alpha2
kind: APIBinding
metadata: {name: widgets}
spec:
  reference: {export: {path: "${PROVIDER_WORKSPACE_PATH}", name: widgets}}
  permissionClaims:
  - {group: example.com, resource: gadgets, identityHash: HASH, verbs: [get], selector: {matchAll: true}, state: Accepted}
  - {group: core.kcp.io, resource: logicalclusters, verbs: [get, list], selector: {matchAll: true}, state: Accepted}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := map[string]any{}
			if err := yaml.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if got := toMap(t, Binding("widgets", tc.claims)); !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestStagerClaims(t *testing.T) {
	want := map[string][]string{
		"control.kubestellar.io/bindingpolicies":  {"create", "delete", "get", "list", "patch", "update", "watch"},
		"control.kubestellar.io/bindings":         {"get", "list", "watch"},
		"control.kubestellar.io/combinedstatuses": {"get", "list", "watch"},
		"events.k8s.io/events":                    {"create", "get", "list", "patch", "update", "watch"},
		"core.kcp.io/logicalclusters":             {"get", "list", "watch"},
	}
	if len(StagerClaims) != len(want) {
		t.Errorf("%d claims, want %d", len(StagerClaims), len(want))
	}
	for _, c := range StagerClaims {
		key := c.Group + "/" + c.Resource
		verbs := slices.Sorted(slices.Values(c.Verbs))
		if !slices.Equal(verbs, want[key]) {
			t.Errorf("claim %s verbs %v, want %v", key, verbs, want[key])
		}
		// Resources that are not built in are claimed by the identity hash of their export.
		if wantHash := c.Group == KubeStellarExport; (c.IdentityHash == IdentityHashPlaceholder) != wantHash || (!wantHash && c.IdentityHash != "") {
			t.Errorf("claim %s identity hash %q", key, c.IdentityHash)
		}
	}
}

func TestRBAC(t *testing.T) {
	const want = `
apiVersion: v1
kind: ServiceAccount
metadata: {name: workload-stager, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: workload-stager-kcp}
rules:
- apiGroups: [apis.kcp.io]
  resources: [apiexportendpointslices]
  verbs: [get, list, watch]
- apiGroups: [apis.kcp.io]
  resources: [apiexports/content]
  resourceNames: [community.kubestellar.io]
  verbs: ["*"]
- nonResourceURLs: [/]
  verbs: [access]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: workload-stager-kcp}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: workload-stager-kcp}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "${STAGER_USER}"}
- {kind: ServiceAccount, name: workload-stager, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: workload-stager-kcp-leases, namespace: default}
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, list, watch, create, update, patch, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: workload-stager-kcp-leases, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: workload-stager-kcp-leases}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "${STAGER_USER}"}
- {kind: ServiceAccount, name: workload-stager, namespace: default}
`
	docs := strings.Split(want, "---\n")
	objs := RBAC()
	if len(objs) != len(docs) {
		t.Fatalf("%d objects, want %d", len(objs), len(docs))
	}
	for i, doc := range docs {
		w := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &w); err != nil {
			t.Fatal(err)
		}
		if got := toMap(t, objs[i]); !reflect.DeepEqual(got, w) {
			t.Errorf("object %d = %v, want %v", i, got, w)
		}
	}
}

// TestRBACNamesNoFixedUser: every user or group the RBAC binds is one the
// operator names through a placeholder. A fixed name is granted to whoever
// any of kcp's authenticators names so; config/kcp/rbac bound the user
// workload-stager.
func TestRBACNamesNoFixedUser(t *testing.T) {
	for _, obj := range RBAC() {
		m := toMap(t, obj)
		subjects, _ := m["subjects"].([]any)
		for _, s := range subjects {
			subject := s.(map[string]any)
			kind, name := subject["kind"], subject["name"].(string)
			placeholder := strings.HasPrefix(name, "${") && strings.HasSuffix(name, "}")
			if (kind == "User" || kind == "Group") && !placeholder {
				t.Errorf("%s %v binds the %s %q", m["kind"], m["metadata"].(map[string]any)["name"], kind, name)
			}
		}
	}
}

func TestDocuments(t *testing.T) {
	for _, tc := range []struct {
		name    string
		comment string
		objs    []any
		want    string
	}{
		{"one object", "", []any{map[string]any{"a": 1}}, Marker + "\na: 1\n"},
		{"comment and two objects", "line one\n\nline three", []any{map[string]any{"a": 1}, map[string]any{"b": "x"}},
			Marker + "\n# line one\n#\n# line three\na: 1\n---\nb: x\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Documents(tc.comment, tc.objs...)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestGenerateRemovesStaleFiles(t *testing.T) {
	ksDir, err := environment.KubeStellarCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	stagerDir, err := environment.StagerCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	stale := filepath.Join(out, "stager", "old-schema.yaml")
	mine := filepath.Join(out, "stager", "overlay-notes.yaml")
	for path, content := range map[string]string{stale: Marker + "\nkind: Old\n", mine: "# mine\n"} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Generate(stagerDir, ksDir, out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale generated file is still there (%v)", err)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("a file the generator did not write was removed: %v", err)
	}
	if err := Generate(stagerDir, "", out); err == nil {
		t.Error("Generate without KubeStellar's CRDs succeeded")
	}
}

// TestUpToDate fails when config/kcp is not what the generator makes of the
// current CRDs (run `make kcp-manifests`).
func TestUpToDate(t *testing.T) {
	root, err := environment.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ksDir, err := environment.KubeStellarCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	stagerDir, err := environment.StagerCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	files, err := Files(stagerDir, ksDir)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "config", "kcp")
	for _, name := range slices.Sorted(maps.Keys(files)) {
		want := files[name]
		got, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(name)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("config/kcp/%s is not up to date (%v): run `make kcp-manifests`", name, err)
		}
	}
	stale, err := Stale(out, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range stale {
		t.Errorf("config/kcp/%s is no longer generated: run `make kcp-manifests`", name)
	}
	// Every schema an export names is in the same directory.
	for _, dir := range []string{"kubestellar", "stager"} {
		var schemas string
		for name, data := range files {
			if strings.HasPrefix(name, dir+"/apiresourceschema") {
				schemas += string(data)
			}
		}
		export := map[string]any{}
		if err := yaml.Unmarshal(files[dir+"/apiexport.yaml"], &export); err != nil {
			t.Fatal(err)
		}
		for _, r := range export["spec"].(map[string]any)["resources"].([]any) {
			name := r.(map[string]any)["schema"].(string)
			if !strings.Contains(schemas, "  name: "+name+"\n") {
				t.Errorf("%s/apiexport.yaml names schema %s, which is not in %s/", dir, name, dir)
			}
		}
	}
}

// stagerCRDFile is the stager's real CRD in config/crd/bases.
const stagerCRDFile = StagerExport + "_stagedbindingpolicies.yaml"

// secondStagerCRD is a copy of the real stager CRD renamed to StageApproval
// (cluster-scoped, with a status subresource), as YAML; modify edits it
// before it is rendered.
func secondStagerCRD(t *testing.T, real string, modify func(*apiextensionsv1.CustomResourceDefinition)) []byte {
	t.Helper()
	crd, err := readCRD(real)
	if err != nil {
		t.Fatal(err)
	}
	crd.Name = "stageapprovals." + StagerExport
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{
		Plural: "stageapprovals", Singular: "stageapproval", Kind: "StageApproval", ListKind: "StageApprovalList",
		ShortNames: []string{"sap"}, Categories: []string{"kubestellar"},
	}
	crd.Spec.Scope = apiextensionsv1.ClusterScoped
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	}
	if modify != nil {
		modify(crd)
	}
	data, err := yaml.Marshal(crd)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// documents parses a generated multi-document YAML file.
func documents(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var docs []map[string]any
	for _, doc := range strings.Split(string(data), "\n---\n") {
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, m)
	}
	return docs
}

// grants reports whether the ClusterRole among rbac lets the stager identity
// use resource of the stager's export: through the export's virtual
// workspace (apiexports/content of StagerExport, every verb), which serves
// every resource of the export and its subresources, or by a rule of its own.
func grants(t *testing.T, rbac []map[string]any, resource string) bool {
	t.Helper()
	for _, obj := range rbac {
		if obj["kind"] != "ClusterRole" {
			continue
		}
		for _, r := range obj["rules"].([]any) {
			rule := toMap(t, r)
			has := func(field, value string) bool {
				list, _ := rule[field].([]any)
				return slices.Contains(list, any(value))
			}
			if has("apiGroups", "apis.kcp.io") && has("resources", "apiexports/content") &&
				has("resourceNames", StagerExport) && has("verbs", "*") {
				return true
			}
			if has("apiGroups", StagerExport) && has("resources", resource) && has("verbs", "*") {
				return true
			}
		}
	}
	return false
}

func TestFilesStagerCRDs(t *testing.T) {
	ksDir, err := environment.KubeStellarCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	stagerDir, err := environment.StagerCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	realPath := filepath.Join(stagerDir, stagerCRDFile)
	real, err := os.ReadFile(realPath)
	if err != nil {
		t.Fatal(err)
	}
	second := secondStagerCRD(t, realPath, nil)
	for _, tc := range []struct {
		name string
		// files are the contents of --stager-crds.
		files map[string][]byte
		// want are the plurals of the stager's export, in order; none wants an error.
		want    []string
		wantErr string
		// comment is the comment line of stager/apiresourceschema.yaml.
		comment string
	}{
		{
			name:    "the real CRD",
			files:   map[string][]byte{stagerCRDFile: real},
			want:    []string{"stagedbindingpolicies"},
			comment: "# Apply in the provider workspace. The StagedBindingPolicy CRD as an APIResourceSchema.",
		},
		{
			name:    "a second CRD of the group, sorted by file name",
			files:   map[string][]byte{stagerCRDFile: real, StagerExport + "_stageapprovals.yaml": second},
			want:    []string{"stageapprovals", "stagedbindingpolicies"},
			comment: "# Apply in the provider workspace. The StageApproval and StagedBindingPolicy CRDs as APIResourceSchemas.",
		},
		{
			name: "other files ignored",
			files: map[string][]byte{
				stagerCRDFile: real, "notes.txt": []byte("not a CRD"),
				"example.com_stageapprovals.yaml": second, StagerExport + "_stageapprovals.yaml.orig": second,
			},
			want:    []string{"stagedbindingpolicies"},
			comment: "# Apply in the provider workspace. The StagedBindingPolicy CRD as an APIResourceSchema.",
		},
		{
			name:    "no stager CRD",
			files:   map[string][]byte{"example.com_stageapprovals.yaml": second},
			wantErr: "no stager CRD",
		},
		{
			name: "another group",
			files: map[string][]byte{stagerCRDFile: real, StagerExport + "_stageapprovals.yaml": secondStagerCRD(t, realPath,
				func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Group = "example.com" })},
			wantErr: `of group "example.com"`,
		},
		{
			name: "a plural twice",
			files: map[string][]byte{stagerCRDFile: real, StagerExport + "_stageapprovals.yaml": secondStagerCRD(t, realPath,
				func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Names.Plural = "stagedbindingpolicies" })},
			wantErr: "both define stagedbindingpolicies",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			files, err := Files(dir, ksDir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}

			// One APIResourceSchema per CRD, in order, each keeping its scope and status subresource.
			schemaFile := files["stager/apiresourceschema.yaml"]
			if line := strings.Split(string(schemaFile), "\n")[1]; line != tc.comment {
				t.Errorf("schema comment %q, want %q", line, tc.comment)
			}
			schemas := documents(t, schemaFile)
			var schemaNames []string
			for _, s := range schemas {
				spec := s["spec"].(map[string]any)
				name := schemaName(s)
				plural := spec["names"].(map[string]any)["plural"].(string)
				schemaNames = append(schemaNames, name)
				if s["kind"] != "APIResourceSchema" || spec["group"] != StagerExport || !strings.HasSuffix(name, "."+plural+"."+StagerExport) {
					t.Errorf("schema %s: kind %v, group %v", name, s["kind"], spec["group"])
				}
				if spec["scope"] != "Cluster" {
					t.Errorf("schema %s scope %v, want Cluster", name, spec["scope"])
				}
				for _, v := range spec["versions"].([]any) {
					if _, ok := v.(map[string]any)["subresources"].(map[string]any)["status"]; !ok {
						t.Errorf("schema %s version %v has no status subresource", name, v.(map[string]any)["name"])
					}
				}
			}
			if len(schemas) != len(tc.want) {
				t.Fatalf("%d schemas %v, want %d", len(schemas), schemaNames, len(tc.want))
			}

			// The export lists every schema, in the same order, besides its claims.
			export := documents(t, files["stager/apiexport.yaml"])[0]
			var plurals, exportedSchemas []string
			for _, r := range export["spec"].(map[string]any)["resources"].([]any) {
				r := r.(map[string]any)
				if r["group"] != StagerExport {
					t.Errorf("exported resource %v of group %v", r["name"], r["group"])
				}
				plurals = append(plurals, r["name"].(string))
				exportedSchemas = append(exportedSchemas, r["schema"].(string))
			}
			if !slices.Equal(plurals, tc.want) || !slices.Equal(exportedSchemas, schemaNames) {
				t.Errorf("export resources %v (schemas %v), want %v (schemas %v)", plurals, exportedSchemas, tc.want, schemaNames)
			}
			if n := len(export["spec"].(map[string]any)["permissionClaims"].([]any)); n != len(StagerClaims) {
				t.Errorf("%d claims, want %d", n, len(StagerClaims))
			}

			// The stager identity may use every resource and its status.
			rbac := documents(t, files["rbac/rbac.yaml"])
			for _, plural := range tc.want {
				for _, resource := range []string{plural, plural + "/status"} {
					if !grants(t, rbac, resource) {
						t.Errorf("the RBAC does not grant %s", resource)
					}
				}
			}

			// The README names every schema; the WDS binds the stager's export.
			readme := string(files["README.md"])
			for _, name := range schemaNames {
				if !strings.Contains(readme, "`"+name+"`") {
					t.Errorf("README.md does not name %s", name)
				}
			}
			if wantWord := map[bool]string{false: "APIResourceSchema `", true: "APIResourceSchemas `"}[len(schemaNames) > 1]; !strings.Contains(readme, "| "+wantWord) {
				t.Errorf("README.md does not list the stager's schemas as %q", wantWord)
			}
			if bindings := documents(t, files["consumer/apibindings.yaml"]); len(bindings) != 2 ||
				bindings[1]["metadata"].(map[string]any)["name"] != StagerExport {
				t.Errorf("consumer bindings %v, want the stager's second", bindings)
			}
		})
	}
}

// TestApprovalPoliciesDeclareNoVariables reads config/approval, which every
// kcp WDS workspace gets (ApprovalDir), and fails on a
// ValidatingAdmissionPolicy with spec.variables. k8s.io/apiserver v0.32.3,
// which kcp v0.28.0 builds on, adds each variable to a type shared by every
// policy compiled from the same template (CompositionEnv.AddField), and kcp
// compiles each workspace's policies in a goroutine of its own: with a
// policy with variables in hundreds of workspaces, kcp restarted on their
// data died of "concurrent map writes" there once the first requests
// reached the workspaces (the 300-workspace scale run, 2026-11-30).
func TestApprovalPoliciesDeclareNoVariables(t *testing.T) {
	root, err := environment.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "approval", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no files in config/approval (%v)", err)
	}
	policies := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---\n") {
			var obj struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
				Spec struct {
					Variables []any `json:"variables"`
				} `json:"spec"`
			}
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if obj.Kind != "ValidatingAdmissionPolicy" {
				continue
			}
			policies++
			if len(obj.Spec.Variables) > 0 {
				t.Errorf("%s: ValidatingAdmissionPolicy %s declares %d variables: kcp v0.28.0 compiling it in many workspaces at once races on them; write them into the expressions",
					filepath.Base(file), obj.Metadata.Name, len(obj.Spec.Variables))
			}
		}
	}
	if policies == 0 {
		t.Error("no ValidatingAdmissionPolicy in config/approval: the check checks nothing")
	}
}
