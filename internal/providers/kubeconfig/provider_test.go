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

package kubeconfig

import (
	"bytes"
	"testing"

	mcrkubeconfig "sigs.k8s.io/multicluster-runtime/providers/kubeconfig"

	"github.com/kubestellar/workload-stager/internal/reqclass"
	findkubeconfig "github.com/kubestellar/workload-stager/providers/kubeconfig"
)

// TestDefaultsAreMulticlusterRuntimes: the kubeconfig Secrets are labelled
// and keyed by default as multicluster-runtime's kubeconfig provider, which
// Provider replaces, has them, so that Secrets made for it serve.
func TestDefaultsAreMulticlusterRuntimes(t *testing.T) {
	if findkubeconfig.DefaultLabel != mcrkubeconfig.DefaultKubeconfigSecretLabel {
		t.Errorf("DefaultLabel = %q, multicluster-runtime's is %q", findkubeconfig.DefaultLabel, mcrkubeconfig.DefaultKubeconfigSecretLabel)
	}
	if findkubeconfig.DefaultKey != mcrkubeconfig.DefaultKubeconfigSecretKey {
		t.Errorf("DefaultKey = %q, multicluster-runtime's is %q", findkubeconfig.DefaultKey, mcrkubeconfig.DefaultKubeconfigSecretKey)
	}
}

// TestSpaceConfigCountsRequests: the config every kubeconfig (and KubeFlex)
// space is built from counts its requests by class (internal/reqclass),
// and is refused as the policy refuses it.
func TestSpaceConfigCountsRequests(t *testing.T) {
	raw := []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://wds1.example:6443
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
users:
- name: u
  user: {token: t}
`)
	cfg, err := spaceConfig(findkubeconfig.Policy{}, raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reqclass.Instrumented(cfg) {
		t.Error("a space's config does not count its requests")
	}
	insecure := bytes.Replace(raw, []byte("https://"), []byte("http://"), 1)
	if _, err := spaceConfig(findkubeconfig.Policy{}, insecure); err == nil {
		t.Error("a plain http kubeconfig was not refused")
	}
}
