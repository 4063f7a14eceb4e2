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

// Package providers engages the operator's spaces: it builds, from the
// flags of providers (imported here as findproviders), the
// multicluster-runtime cluster provider of each selected kind, serves
// several kinds at once through multicluster-runtime's multi provider, and
// narrows the hosting cluster's cache to what the providers read there.
// It links controller-runtime's manager, which the kubectl plugin does not.
package providers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	"sigs.k8s.io/multicluster-runtime/providers/multi"

	"github.com/kubestellar/workload-stager/internal/providers/kcp"
	"github.com/kubestellar/workload-stager/internal/providers/kubeconfig"
	"github.com/kubestellar/workload-stager/internal/providers/kubeflex"
	"github.com/kubestellar/workload-stager/internal/providers/single"
	"github.com/kubestellar/workload-stager/internal/reqclass"
	findproviders "github.com/kubestellar/workload-stager/providers"
)

// Provider is a cluster provider that is set up once the manager exists.
type Provider interface {
	multicluster.Provider
	// SetupWithManager registers what the provider runs with the manager.
	SetupWithManager(ctx context.Context, mgr mcmanager.Manager) error
}

// HostingCacheOptions narrows the hosting cluster's cache to what the provider
// reads there: with kubeconfig Secrets, only the labelled Secrets of their
// namespace, screened by the kubeconfig policy (providers/kubeconfig.Policy.Screen).
// spaceCache is the cache configuration of a space, used as is when the
// hosting cluster is itself the space.
func HostingCacheOptions(o *findproviders.Options, spaceCache cache.Options) cache.Options {
	if !o.Has(findproviders.KindKubeconfig) {
		return spaceCache
	}
	k := o.Kubeconfig
	return cache.Options{
		DefaultNamespaces: map[string]cache.Config{k.Namespace: {}},
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{k.Label: "true"}),
				Transform: k.Policy().Screen(k.Key)},
		},
		DefaultTransform: cache.TransformStripManagedFields(),
	}
}

// HostingObjects are the kinds the providers read from the hosting
// cluster's cache, which a replica keeps warm whether it serves or not.
func HostingObjects(o *findproviders.Options) []client.Object {
	if o.Has(findproviders.KindKubeconfig) {
		return []client.Object{&corev1.Secret{}}
	}
	return nil
}

// New builds the provider chosen by the options, and adds to hosting what
// the chosen providers run there (the Auditor that reports refused kubeconfig
// Secrets). hosting is the manager of the hosting cluster, whose scheme is
// every space's (with providers/kcp.AddToScheme applied for the kcp provider);
// kcpCache says what the caches the kcp provider shares among its spaces
// hold (the zero value: what they would without it); spaceOptions configure
// the cluster of every space engaged through a kubeconfig (scheme, cache).
func New(o *findproviders.Options, hosting manager.Manager, kcpCache kcp.CacheOptions, spaceOptions ...cluster.Option) (Provider, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	selected := o.Kinds()
	built := make([]Provider, 0, len(selected))
	for _, kind := range selected {
		p, err := newProvider(kind, o, hosting, kcpCache, spaceOptions)
		if err != nil {
			return nil, err
		}
		built = append(built, p)
	}
	if err := addKubeconfigAuditor(o, hosting); err != nil {
		return nil, err
	}
	if len(built) == 1 {
		// The provider itself, not a wrapper: the manager starts it when
		// it is a multicluster.ProviderRunnable.
		return built[0], nil
	}
	m := &multiProvider{Provider: multi.New(multi.Options{Separator: findproviders.Separator}), kinds: selected, providers: built}
	for i, kind := range selected {
		if err := m.AddProvider(kind, built[i]); err != nil {
			return nil, fmt.Errorf("adding the %s provider: %w", kind, err)
		}
	}
	return m, nil
}

// addKubeconfigAuditor adds to the hosting cluster's manager the Auditor that
// reports every kubeconfig Secret the provider refuses (an Event on the
// Secret, a log line, and a metric), when kubeconfig Secrets are a selected
// provider.
func addKubeconfigAuditor(o *findproviders.Options, hosting manager.Manager) error {
	if !o.Has(findproviders.KindKubeconfig) {
		return nil
	}
	k := o.Kubeconfig
	auditor := &kubeconfig.Auditor{
		Client:    hosting.GetClient(),
		Recorder:  hosting.GetEventRecorder("workload-stager"),
		Policy:    k.Policy(),
		Namespace: k.Namespace,
		Label:     k.Label,
		Key:       k.Key,
	}
	if err := auditor.SetupWithManager(hosting); err != nil {
		return fmt.Errorf("setting up the kubeconfig auditor: %w", err)
	}
	return nil
}

// newProvider builds the provider of one kind.
func newProvider(kind string, o *findproviders.Options, hosting manager.Manager, kcpCache kcp.CacheOptions, spaceOptions []cluster.Option) (Provider, error) {
	switch kind {
	case findproviders.KindSingle:
		return single.New(o.Single, hosting), nil
	case findproviders.KindKubeFlex:
		opts, err := o.KubeFlex.Options(o.Kubeconfig.Policy())
		if err != nil {
			return nil, err
		}
		return kubeflex.New(kubeflex.Options{Options: opts, ClusterOptions: spaceOptions}, hosting.GetLogger().WithName("kubeflex-provider")), nil
	case findproviders.KindKCP:
		cfg, err := o.KCP.Config(hosting.GetConfig())
		if err != nil {
			return nil, err
		}
		// Every workspace's config is a copy of cfg's, counting its
		// requests as the hosting cluster's do (once, when cfg is its).
		cfg = reqclass.Options{}.Instrument(cfg)
		p, err := kcp.New(cfg, o.KCP.EndpointSlice, hosting.GetScheme(), hosting.GetLogger().WithName("kcp-provider"), kcpCache)
		if err != nil {
			return nil, err
		}
		return &kcpProvider{Provider: p}, nil
	default:
		return kubeconfig.New(kubeconfig.OptionsOf(o.Kubeconfig, spaceOptions...), hosting.GetLogger().WithName("kubeconfig-provider")), nil
	}
}

// kcpProvider gives the kcp provider the setup step the others have; the
// manager runs it, as a multicluster.ProviderRunnable.
type kcpProvider struct {
	*kcp.Provider
}

// SetupWithManager does nothing: the provider engages spaces when it runs.
func (p *kcpProvider) SetupWithManager(context.Context, mcmanager.Manager) error { return nil }

// multiProvider serves the spaces of several providers, named
// "<kind>#<space>". Providers that engage through the manager rather than
// when run (kubeconfig) are set up with a manager that adds the prefix.
type multiProvider struct {
	*multi.Provider
	kinds     []string
	providers []Provider
}

// SetupWithManager sets up every provider, each engaging under its prefix.
func (m *multiProvider) SetupWithManager(ctx context.Context, mgr mcmanager.Manager) error {
	for i, p := range m.providers {
		if err := p.SetupWithManager(ctx, &prefixingManager{Manager: mgr, prefix: m.kinds[i] + findproviders.Separator}); err != nil {
			return fmt.Errorf("setting up the %s provider: %w", m.kinds[i], err)
		}
	}
	return nil
}

// prefixingManager engages clusters under prefixed names, as the multi
// provider does for the providers it runs.
type prefixingManager struct {
	mcmanager.Manager
	prefix string
}

// Engage engages a cluster under the prefixed name.
func (m *prefixingManager) Engage(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	return m.Manager.Engage(ctx, multicluster.ClusterName(m.prefix)+name, cl)
}
