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

// Package single engages the hosting cluster as the only space, through
// multicluster-runtime's single provider, named as providers/single's flag
// (imported here as findsingle) says.
package single

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/cluster"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	"sigs.k8s.io/multicluster-runtime/providers/single"

	findsingle "github.com/kubestellar/workload-stager/providers/single"
)

// Provider engages the hosting cluster as the only space when it starts.
type Provider struct {
	*single.Provider
}

// New returns the provider of the hosting cluster, named as the flags say.
func New(f *findsingle.Flags, hosting cluster.Cluster) *Provider {
	return &Provider{Provider: single.New(multicluster.ClusterName(f.Name), hosting)}
}

// SetupWithManager does nothing: the provider engages its cluster when it
// starts.
func (p *Provider) SetupWithManager(context.Context, mcmanager.Manager) error { return nil }
