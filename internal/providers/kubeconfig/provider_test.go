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
	"testing"

	mcrkubeconfig "sigs.k8s.io/multicluster-runtime/providers/kubeconfig"

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
