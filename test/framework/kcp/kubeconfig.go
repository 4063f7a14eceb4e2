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

package kcp

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigFor returns a kubeconfig (YAML) with the admin credentials of
// the admin kubeconfig's current context, whose only context, named after
// path, points at the workspace with the given path or logical cluster ID:
// its server is URL/clusters/<path>. kcp changes the admin token at every
// start, so a kubeconfig obtained before Restart stops working.
func (s *Server) KubeconfigFor(path string) ([]byte, error) {
	s.mu.Lock()
	raw := s.raw.DeepCopy()
	s.mu.Unlock()

	current, ok := raw.Contexts[raw.CurrentContext]
	if !ok {
		return nil, fmt.Errorf("kubeconfig for kcp workspace %s: admin kubeconfig %s has no current context %q", path, s.Kubeconfig, raw.CurrentContext)
	}
	cluster, ok := raw.Clusters[current.Cluster]
	if !ok {
		return nil, fmt.Errorf("kubeconfig for kcp workspace %s: admin kubeconfig %s has no cluster %q", path, s.Kubeconfig, current.Cluster)
	}
	user, ok := raw.AuthInfos[current.AuthInfo]
	if !ok {
		return nil, fmt.Errorf("kubeconfig for kcp workspace %s: admin kubeconfig %s has no user %q", path, s.Kubeconfig, current.AuthInfo)
	}
	cluster.Server = s.URL + clustersPrefix + path

	out := clientcmdapi.NewConfig()
	out.Clusters[path] = cluster
	out.AuthInfos[current.AuthInfo] = user
	out.Contexts[path] = &clientcmdapi.Context{Cluster: path, AuthInfo: current.AuthInfo}
	out.CurrentContext = path
	if err := clientcmdapi.FlattenConfig(out); err != nil {
		return nil, fmt.Errorf("kubeconfig for kcp workspace %s: inlining files: %w", path, err)
	}
	data, err := clientcmd.Write(*out)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig for kcp workspace %s: %w", path, err)
	}
	return data, nil
}
