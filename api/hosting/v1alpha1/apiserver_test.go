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

package v1alpha1_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// startHosting starts a hosting cluster's API server with the hosting
// CRDs, stopped at the test's end, and returns its client; it skips the
// test under -short.
func startHosting(t *testing.T) client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a kube-apiserver; run without -short (make test)")
	}
	scheme := environment.Scheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	hostingCRDs, err := environment.HostingCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	return environment.StartTestSpace(t, "hosting", environment.WithCRDDirs(hostingCRDs), environment.WithScheme(scheme)).Client
}

// refusal is a change that makes a valid object invalid, and what the
// API server's refusal must name.
type refusal[T client.Object] struct {
	change func(T)
	want   string
}

// checkRefusals creates, through c, valid() changed by each refusal, and
// checks the API server refuses it naming what the refusal wants.
func checkRefusals[T client.Object](t *testing.T, c client.Client, valid func() T, refusals map[string]refusal[T]) {
	t.Helper()
	for name, r := range refusals {
		t.Run(name, func(t *testing.T) {
			obj := valid()
			r.change(obj)
			err := c.Create(t.Context(), obj)
			if err == nil {
				u, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
				t.Fatalf("admitted the spec %v", u["spec"])
			}
			if !strings.Contains(err.Error(), r.want) {
				t.Errorf("refused with %v, want a reason naming %q", err, r.want)
			}
		})
	}
}

// checkHostingClustersOnly checks that no manifest a space gets (its
// CRDs, the space chart, kcp's export) names the kind, by its Kind or
// its plural, and that the hosting cluster's CRD of the kind is there.
func checkHostingClustersOnly(t *testing.T, kind, plural string) {
	t.Helper()
	root, err := environment.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"config/crd/bases", "config/chart/workload-stager-space", "config/kcp"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if strings.Contains(string(data), plural) || strings.Contains(string(data), kind) {
				t.Errorf("%s names the %s: a space would get the kind", path, kind)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "config/crd/hosting", v1alpha1.GroupVersion.Group+"_"+plural+".yaml")); err != nil {
		t.Errorf("the hosting cluster's CRD: %v", err)
	}
}
