/*
Copyright 2026 The KubeStellar Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubestellar/workload-stager/test/environment"
)

func testCRD(description string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema:       &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Description: description}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
}

func TestResourceSchema(t *testing.T) {
	schema, err := ResourceSchema(testCRD("a widget"))
	if err != nil {
		t.Fatal(err)
	}
	name := schema["metadata"].(map[string]any)["name"].(string)
	if !strings.HasPrefix(name, "v") || !strings.HasSuffix(name, ".widgets.example.com") || len(name) != len("v0123456789.widgets.example.com") {
		t.Errorf("name %q, want v<10 hex>.widgets.example.com", name)
	}
	version := schema["spec"].(map[string]any)["versions"].([]map[string]any)[0]
	if got, ok := version["schema"].(*apiextensionsv1.JSONSchemaProps); !ok || got.Description != "a widget" {
		t.Errorf("version schema = %#v, want the openAPIV3Schema itself", version["schema"])
	}
	if version["subresources"] == nil {
		t.Error("subresources dropped")
	}

	again, _ := ResourceSchema(testCRD("a widget"))
	if again["metadata"].(map[string]any)["name"] != name {
		t.Error("the name is not stable")
	}
	changed, _ := ResourceSchema(testCRD("a better widget"))
	if changed["metadata"].(map[string]any)["name"] == name {
		t.Error("a changed schema keeps its name; APIResourceSchemas are immutable")
	}

	noSchema := testCRD("")
	noSchema.Spec.Versions[0].Schema = nil
	if _, err := ResourceSchema(noSchema); err == nil {
		t.Error("a version without schema is accepted")
	}
}

func TestBindingAcceptsEveryClaim(t *testing.T) {
	b := Binding(StagerExport, StagerClaims)
	claims := b["spec"].(map[string]any)["permissionClaims"].([]map[string]any)
	if len(claims) != len(StagerClaims) {
		t.Fatalf("%d claims accepted, want %d", len(claims), len(StagerClaims))
	}
	for i, c := range claims {
		want := StagerClaims[i]
		if c["state"] != "Accepted" || c["group"] != want.Group || c["resource"] != want.Resource {
			t.Errorf("claim %d = %v, want %s/%s accepted", i, c, want.Group, want.Resource)
		}
		if (want.IdentityHash != "") != (c["identityHash"] != nil) {
			t.Errorf("claim %d identity hash = %v, want %q", i, c["identityHash"], want.IdentityHash)
		}
	}
	if _, ok := Binding(KubeStellarExport, nil)["spec"].(map[string]any)["permissionClaims"]; ok {
		t.Error("a binding to an export without claims accepts claims")
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
	files, err := Files(filepath.Join(root, "config", "crd", "bases"), ksDir)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, "config", "kcp", name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("config/kcp/%s is not up to date (%v): run `make kcp-manifests`", name, err)
		}
	}
}
