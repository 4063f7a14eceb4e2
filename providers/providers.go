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

// Package providers builds the multicluster-runtime cluster provider that
// engages the operator's spaces, from command-line flags.
//
// Four kinds of provider are offered:
//   - "kubeconfig": every Secret with a kubeconfig, in a namespace and with a
//     label of the user's choice in the hosting cluster, is a space. Secrets
//     created at run time engage new spaces; deleted ones disengage them.
//   - "kubeflex": every Ready KubeFlex ControlPlane of the hosting cluster
//     that a label selector selects (WDSes) is a space, reached through the
//     kubeconfig its status.secretRef names (see providers/kubeflex).
//   - "single": the hosting cluster itself is the only space.
//   - "kcp": every kcp logical cluster that binds the stager's APIExport is a
//     space, named after its workspace path (see providers/kcp).
//
// Several kinds can serve at once (e.g. --provider=kubeconfig,kcp) through
// multicluster-runtime's multi provider; the space names are then prefixed
// with the kind and "#" (e.g. "kubeconfig#wds1", "kcp#root:wds2"), so that
// they cannot collide.
package providers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	"sigs.k8s.io/multicluster-runtime/providers/multi"

	"github.com/kubestellar/workload-stager/providers/kcp"
	"github.com/kubestellar/workload-stager/providers/kubeconfig"
	"github.com/kubestellar/workload-stager/providers/kubeflex"
	"github.com/kubestellar/workload-stager/providers/single"
)

// The kinds of provider.
const (
	// KindKubeconfig engages one space per kubeconfig Secret.
	KindKubeconfig = "kubeconfig"
	// KindSingle engages the hosting cluster as the only space.
	KindSingle = "single"
	// KindKCP engages the kcp logical clusters bound to the stager's APIExport.
	KindKCP = "kcp"
	// KindKubeFlex engages the Ready KubeFlex ControlPlanes of the hosting
	// cluster that a label selector selects (WDSes).
	KindKubeFlex = "kubeflex"
	// Separator separates the kind from the space name when several kinds serve.
	Separator = "#"
)

// kinds are the valid kinds, in the order the flag's help lists them.
var kinds = []string{KindKubeconfig, KindKubeFlex, KindSingle, KindKCP}

// Options are the provider flags: --provider here, and each provider's own
// flags in its package.
type Options struct {
	// Kind is one kind of provider (KindKubeconfig, KindKubeFlex,
	// KindSingle, KindKCP) or several, separated by commas.
	Kind string
	// Single are the single provider's flags.
	Single *single.Flags
	// Kubeconfig are the kubeconfig provider's flags, and the guard's that
	// every provider reaching a space by kubeconfig applies.
	Kubeconfig *kubeconfig.Flags
	// KubeFlex are the KubeFlex provider's flags.
	KubeFlex *kubeflex.Flags
	// KCP are the kcp provider's flags.
	KCP *kcp.Flags
	// KCPCache narrow the caches the kcp provider shares among its spaces
	// (set by the program, not a flag).
	KCPCache kcp.CacheOptions
}

// NewOptions returns Options with their defaults.
func NewOptions() *Options {
	return &Options{
		Kind:       KindKubeconfig,
		Single:     single.NewFlags(),
		Kubeconfig: kubeconfig.NewFlags(),
		KubeFlex:   kubeflex.NewFlags(),
		KCP:        kcp.NewFlags(),
	}
}

// Kinds returns the kinds of provider the options select.
func (o *Options) Kinds() []string {
	var out []string
	for _, k := range strings.Split(o.Kind, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

// Has reports whether a kind is selected.
func (o *Options) Has(kind string) bool {
	return slices.Contains(o.Kinds(), kind)
}

// AddFlags registers the provider flags of the stager.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.addKindFlags(fs)
	o.Kubeconfig.AddFlags(fs)
	o.KubeFlex.AddFlags(fs)
	o.KCP.AddFlags(fs)
}

// AddDiscoveryFlags registers the flags by which Discover reads the
// registrations, with the stager's names, defaults and help: all of the
// stager's but the kubeconfig guard's (Discover never loosens it) and the
// KubeFlex resync.
func (o *Options) AddDiscoveryFlags(fs *pflag.FlagSet) {
	o.addKindFlags(fs)
	o.Kubeconfig.AddSecretFlags(fs)
	o.KubeFlex.AddDiscoveryFlags(fs)
	o.KCP.AddFlags(fs)
}

func (o *Options) addKindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kind, "provider", o.Kind,
		`how spaces are found: "kubeconfig", "kubeflex", "single" or "kcp", or several separated by commas (README, "Running it")`)
	o.Single.AddFlags(fs)
}

// Validate reports flags that cannot work together.
func (o *Options) Validate() error {
	var errs []error
	selected := o.Kinds()
	if len(selected) == 0 {
		errs = append(errs, fmt.Errorf("--provider must name at least one of %s", strings.Join(kinds, ", ")))
	}
	seen := map[string]bool{}
	for _, kind := range selected {
		if !slices.Contains(kinds, kind) {
			errs = append(errs, fmt.Errorf("--provider must be among %s, not %q", strings.Join(kinds, ", "), kind))
			continue
		}
		if seen[kind] {
			errs = append(errs, fmt.Errorf("--provider names %q twice", kind))
			continue
		}
		seen[kind] = true
		switch kind {
		case KindKubeconfig:
			errs = append(errs, o.Kubeconfig.Validate())
		case KindSingle:
			errs = append(errs, o.Single.Validate())
		case KindKCP:
			errs = append(errs, o.KCP.Validate())
		case KindKubeFlex:
			errs = append(errs, o.KubeFlex.Validate())
		}
	}
	if seen[KindSingle] && seen[KindKubeconfig] {
		// The kubeconfig provider narrows the hosting cluster's cache to its
		// Secrets, which the single provider's space needs whole.
		errs = append(errs, errors.New(`--provider cannot combine "single" with "kubeconfig": register the hosting cluster with a kubeconfig Secret instead`))
	}
	return errors.Join(errs...)
}

// HostingNamespace is the namespace of the hosting cluster that the
// providers already use, for the stager's Leases where no flag or pod names
// one: the kubeconfig Secrets'. It reports false when no provider has one.
func (o *Options) HostingNamespace() (string, bool) {
	if o.Has(KindKubeconfig) {
		return o.Kubeconfig.Namespace, true
	}
	return "", false
}

// HostingCacheOptions narrows the hosting cluster's cache to what the provider
// reads there: with kubeconfig Secrets, only the labelled Secrets of their
// namespace, screened by the kubeconfig policy (kubeconfig.Policy.Screen).
// spaceCache is the cache configuration of a space, used as is when the
// hosting cluster is itself the space.
func (o *Options) HostingCacheOptions(spaceCache cache.Options) cache.Options {
	if !o.Has(KindKubeconfig) {
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
func (o *Options) HostingObjects() []client.Object {
	if o.Has(KindKubeconfig) {
		return []client.Object{&corev1.Secret{}}
	}
	return nil
}

// Provider is a cluster provider that is set up once the manager exists.
type Provider interface {
	multicluster.Provider
	// SetupWithManager registers what the provider runs with the manager.
	SetupWithManager(ctx context.Context, mgr mcmanager.Manager) error
}

// SharesCaches reports whether the space's cluster serves from caches its
// provider shares among spaces (kcp's wildcard informers), which a space's
// own fresh caches would duplicate. The space is named as the provider
// engaged it.
func (o *Options) SharesCaches(space string) bool {
	kinds := o.Kinds()
	if len(kinds) == 1 {
		return kinds[0] == KindKCP
	}
	return strings.HasPrefix(space, KindKCP+Separator)
}

// New builds the provider chosen by the options, and adds to hosting what
// the chosen providers run there (the Auditor that reports refused kubeconfig
// Secrets). hosting is the manager of the hosting cluster, whose scheme is
// every space's (with kcp.AddToScheme applied for the kcp provider);
// spaceOptions configure the cluster of every space engaged through a
// kubeconfig (scheme, cache).
func New(o *Options, hosting manager.Manager, spaceOptions ...cluster.Option) (Provider, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	selected := o.Kinds()
	built := make([]Provider, 0, len(selected))
	for _, kind := range selected {
		p, err := newProvider(kind, o, hosting, spaceOptions)
		if err != nil {
			return nil, err
		}
		built = append(built, p)
	}
	if err := o.addKubeconfigAuditor(hosting); err != nil {
		return nil, err
	}
	if len(built) == 1 {
		// The provider itself, not a wrapper: the manager starts it when
		// it is a multicluster.ProviderRunnable.
		return built[0], nil
	}
	m := &multiProvider{Provider: multi.New(multi.Options{Separator: Separator}), kinds: selected, providers: built}
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
func (o *Options) addKubeconfigAuditor(hosting manager.Manager) error {
	if !o.Has(KindKubeconfig) {
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
func newProvider(kind string, o *Options, hosting manager.Manager, spaceOptions []cluster.Option) (Provider, error) {
	switch kind {
	case KindSingle:
		return single.New(o.Single, hosting), nil
	case KindKubeFlex:
		opts, err := o.KubeFlex.Options(o.Kubeconfig.Policy(), spaceOptions...)
		if err != nil {
			return nil, err
		}
		return kubeflex.New(opts, hosting.GetLogger().WithName("kubeflex-provider")), nil
	case KindKCP:
		cfg, err := o.KCP.Config(hosting.GetConfig())
		if err != nil {
			return nil, err
		}
		p, err := kcp.New(cfg, o.KCP.EndpointSlice, hosting.GetScheme(), hosting.GetLogger().WithName("kcp-provider"), o.KCPCache)
		if err != nil {
			return nil, err
		}
		return &kcpProvider{Provider: p}, nil
	default:
		return kubeconfig.New(o.Kubeconfig.Options(spaceOptions...), hosting.GetLogger().WithName("kubeconfig-provider")), nil
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
		if err := p.SetupWithManager(ctx, &prefixingManager{Manager: mgr, prefix: m.kinds[i] + Separator}); err != nil {
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
