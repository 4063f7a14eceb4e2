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
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcrkubeconfig "sigs.k8s.io/multicluster-runtime/providers/kubeconfig"
	"sigs.k8s.io/multicluster-runtime/providers/multi"
	"sigs.k8s.io/multicluster-runtime/providers/single"

	"github.com/kubestellar/workload-stager/providers/kcp"
	"github.com/kubestellar/workload-stager/providers/kubeconfig"
	"github.com/kubestellar/workload-stager/providers/kubeflex"
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

// Defaults of the flags.
const (
	// DefaultKubeconfigNamespace is where kubeconfig Secrets are looked for.
	DefaultKubeconfigNamespace = "kubestellar-stager"
	// DefaultSingleName is the space name of the hosting cluster in single mode.
	DefaultSingleName = "local"
)

// Options are the provider flags.
type Options struct {
	// Kind is one kind of provider (KindKubeconfig, KindSingle, KindKCP) or
	// several, separated by commas.
	Kind string
	// KubeconfigNamespace is the namespace of the kubeconfig Secrets.
	KubeconfigNamespace string
	// KubeconfigLabel is the label (with value "true") that marks a kubeconfig Secret.
	KubeconfigLabel string
	// KubeconfigKey is the key of the kubeconfig in a Secret's data.
	KubeconfigKey string
	// SingleName is the space name of the hosting cluster in single mode.
	SingleName string
	// KCPKubeconfig is the kubeconfig file of the kcp workspace holding the
	// stager's APIExport; empty means the hosting cluster's.
	KCPKubeconfig string
	// KCPEndpointSlice is the APIExportEndpointSlice of the stager's APIExport.
	KCPEndpointSlice string
	// InsecureKubeconfigExec lets kubeconfig Secrets run exec credential
	// plugins inside the stager.
	InsecureKubeconfigExec bool
	// InsecureKubeconfigTLS lets kubeconfig Secrets skip the verification of
	// the server's certificate, or use plain http servers.
	InsecureKubeconfigTLS bool
	// KubeFlexSelector selects the ControlPlanes that are spaces.
	KubeFlexSelector string
	// KubeFlexKubeconfigKey chooses the Secret key of a ControlPlane's
	// kubeconfig: "in-cluster", "external", or "auto" (in-cluster inside a pod).
	KubeFlexKubeconfigKey string
	// KubeFlexSecretNamespaces, when not empty, are the only namespaces whose
	// Secrets a ControlPlane may name.
	KubeFlexSecretNamespaces []string
	// KubeFlexResync is how often an engaged ControlPlane's Secret is read again.
	KubeFlexResync time.Duration
}

// NewOptions returns Options with their defaults.
func NewOptions() *Options {
	return &Options{
		Kind:                  KindKubeconfig,
		KubeconfigNamespace:   DefaultKubeconfigNamespace,
		KubeconfigLabel:       mcrkubeconfig.DefaultKubeconfigSecretLabel,
		KubeconfigKey:         mcrkubeconfig.DefaultKubeconfigSecretKey,
		SingleName:            DefaultSingleName,
		KCPEndpointSlice:      kcp.DefaultEndpointSlice,
		KubeFlexSelector:      kubeflex.DefaultSelector,
		KubeFlexKubeconfigKey: "auto",
		KubeFlexResync:        kubeflex.DefaultResync,
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

// AddFlags registers the provider flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kind, "provider", o.Kind,
		`how spaces are found: "kubeconfig" (one space per labelled kubeconfig Secret in the hosting cluster), "kubeflex" (one space per Ready KubeFlex ControlPlane of the hosting cluster that --kubeflex-selector selects), "single" (the hosting cluster is the only space) or "kcp" (one space per kcp workspace bound to the stager's APIExport); several, separated by commas, serve together with space names prefixed by "<provider>#"`)
	fs.StringVar(&o.KubeconfigNamespace, "kubeconfig-namespace", o.KubeconfigNamespace,
		"namespace of the hosting cluster holding the kubeconfig Secrets of the spaces")
	fs.StringVar(&o.KubeconfigLabel, "kubeconfig-label", o.KubeconfigLabel,
		`label that marks a Secret as a space's kubeconfig (its value must be "true"); the space is named after the Secret`)
	fs.StringVar(&o.KubeconfigKey, "kubeconfig-key", o.KubeconfigKey,
		"key of the kubeconfig in a space Secret's data")
	fs.BoolVar(&o.InsecureKubeconfigExec, "insecure-kubeconfig-exec", o.InsecureKubeconfigExec,
		"let kubeconfig Secrets run exec credential plugins inside the stager: whoever can write a Secret in --kubeconfig-namespace can then run any command as the stager")
	fs.BoolVar(&o.InsecureKubeconfigTLS, "insecure-kubeconfig-tls", o.InsecureKubeconfigTLS,
		"let kubeconfig Secrets use insecure-skip-tls-verify or plain http servers")
	fs.StringVar(&o.SingleName, "single-space-name", o.SingleName,
		"name of the hosting cluster's space with --provider=single")
	fs.StringVar(&o.KCPKubeconfig, "kcp-kubeconfig", o.KCPKubeconfig,
		"kubeconfig of the kcp workspace holding the stager's APIExport and its endpoint slice (default: the hosting cluster's)")
	fs.StringVar(&o.KCPEndpointSlice, "kcp-apiexport-endpointslice", o.KCPEndpointSlice,
		"name of the APIExportEndpointSlice of the stager's APIExport, in the --kcp-kubeconfig workspace")
	fs.StringVar(&o.KubeFlexSelector, "kubeflex-selector", o.KubeFlexSelector,
		"label selector of the KubeFlex ControlPlanes that are spaces, with --provider=kubeflex")
	fs.StringVar(&o.KubeFlexKubeconfigKey, "kubeflex-kubeconfig-key", o.KubeFlexKubeconfigKey,
		`which kubeconfig of a ControlPlane's Secret to use: "in-cluster" (status.secretRef.inClusterKey), "external" (status.secretRef.key), or "auto" (in-cluster when the stager runs in a pod)`)
	fs.StringSliceVar(&o.KubeFlexSecretNamespaces, "kubeflex-secret-namespaces", o.KubeFlexSecretNamespaces,
		"the only namespaces whose Secrets a ControlPlane may name (default: any; the stager then needs get on Secrets cluster-wide)")
	fs.DurationVar(&o.KubeFlexResync, "kubeflex-resync", o.KubeFlexResync,
		"how often an engaged ControlPlane's Secret is read again, so that a rotated kubeconfig takes over")
}

// kubeFlexInCluster reports whether a ControlPlane's in-cluster kubeconfig
// is used: asked for, or "auto" inside a pod.
func (o *Options) kubeFlexInCluster() bool {
	return o.KubeFlexKubeconfigKey == "in-cluster" || o.KubeFlexKubeconfigKey == "auto" && os.Getenv("KUBERNETES_SERVICE_HOST") != ""
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
			if o.KubeconfigNamespace == "" {
				errs = append(errs, errors.New("--kubeconfig-namespace must not be empty"))
			}
			if o.KubeconfigLabel == "" {
				errs = append(errs, errors.New("--kubeconfig-label must not be empty"))
			}
			if o.KubeconfigKey == "" {
				errs = append(errs, errors.New("--kubeconfig-key must not be empty"))
			}
		case KindSingle:
			if o.SingleName == "" {
				errs = append(errs, errors.New("--single-space-name must not be empty"))
			}
		case KindKCP:
			if o.KCPEndpointSlice == "" {
				errs = append(errs, errors.New("--kcp-apiexport-endpointslice must not be empty"))
			}
		case KindKubeFlex:
			if _, err := labels.Parse(o.KubeFlexSelector); err != nil || o.KubeFlexSelector == "" {
				errs = append(errs, fmt.Errorf("--kubeflex-selector must be a non-empty label selector: %q", o.KubeFlexSelector))
			}
			if !slices.Contains([]string{"auto", "in-cluster", "external"}, o.KubeFlexKubeconfigKey) {
				errs = append(errs, fmt.Errorf(`--kubeflex-kubeconfig-key must be "auto", "in-cluster" or "external", not %q`, o.KubeFlexKubeconfigKey))
			}
		}
	}
	if seen[KindSingle] && seen[KindKubeconfig] {
		// The kubeconfig provider narrows the hosting cluster's cache to its
		// Secrets, which the single provider's space needs whole.
		errs = append(errs, errors.New(`--provider cannot combine "single" with "kubeconfig": register the hosting cluster with a kubeconfig Secret instead`))
	}
	return errors.Join(errs...)
}

// HostingCacheOptions narrows the hosting cluster's cache to what the provider
// reads there: with kubeconfig Secrets, only the labelled Secrets of their
// namespace, screened by the kubeconfig policy (kubeconfig.Policy.Screen). spaceCache is the cache configuration of a space, used as is
// when the hosting cluster is itself the space.
func (o *Options) HostingCacheOptions(spaceCache cache.Options) cache.Options {
	if !o.Has(KindKubeconfig) {
		return spaceCache
	}
	return cache.Options{
		DefaultNamespaces: map[string]cache.Config{o.KubeconfigNamespace: {}},
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{o.KubeconfigLabel: "true"}),
				Transform: o.KubeconfigPolicy().Screen(o.KubeconfigKey)},
		},
		DefaultTransform: cache.TransformStripManagedFields(),
	}
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

// KubeconfigPolicy is what kubeconfig Secrets may use, as the flags say.
func (o *Options) KubeconfigPolicy() kubeconfig.Policy {
	return kubeconfig.Policy{AllowExec: o.InsecureKubeconfigExec, AllowInsecureTLS: o.InsecureKubeconfigTLS}
}

// AddKubeconfigAuditor adds to the hosting cluster's manager the Auditor that
// reports every kubeconfig Secret the provider refuses (an Event on the
// Secret, a log line, and a metric). It does nothing unless kubeconfig
// Secrets are a selected provider.
func (o *Options) AddKubeconfigAuditor(hosting manager.Manager) error {
	if !o.Has(KindKubeconfig) {
		return nil
	}
	auditor := &kubeconfig.Auditor{
		Client:    hosting.GetClient(),
		Recorder:  hosting.GetEventRecorder("workload-stager"),
		Policy:    o.KubeconfigPolicy(),
		Namespace: o.KubeconfigNamespace,
		Label:     o.KubeconfigLabel,
		Key:       o.KubeconfigKey,
	}
	if err := auditor.SetupWithManager(hosting); err != nil {
		return fmt.Errorf("setting up the kubeconfig auditor: %w", err)
	}
	return nil
}

// Provider is a cluster provider that is set up once the manager exists.
type Provider interface {
	multicluster.Provider
	// SetupWithManager registers what the provider runs with the manager.
	SetupWithManager(ctx context.Context, mgr mcmanager.Manager) error
}

// New builds the provider chosen by the options. hosting is the manager of
// the hosting cluster, whose scheme is every space's (with kcp.AddToScheme
// applied for the kcp provider); spaceOptions configure the cluster of every
// space engaged through a kubeconfig Secret (scheme, cache).
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
	if len(built) == 1 {
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

// newProvider builds the provider of one kind.
func newProvider(kind string, o *Options, hosting manager.Manager, spaceOptions []cluster.Option) (Provider, error) {
	switch kind {
	case KindSingle:
		return &singleProvider{Provider: single.New(multicluster.ClusterName(o.SingleName), hosting)}, nil
	case KindKubeFlex:
		selector, err := labels.Parse(o.KubeFlexSelector)
		if err != nil {
			return nil, fmt.Errorf("--kubeflex-selector: %w", err)
		}
		return kubeflex.New(kubeflex.Options{
			Selector:         selector,
			InCluster:        o.kubeFlexInCluster(),
			SecretNamespaces: o.KubeFlexSecretNamespaces,
			Policy:           o.KubeconfigPolicy(),
			ClusterOptions:   spaceOptions,
			Resync:           o.KubeFlexResync,
		}, hosting.GetLogger().WithName("kubeflex-provider")), nil
	case KindKCP:
		cfg := hosting.GetConfig()
		if o.KCPKubeconfig != "" {
			var err error
			if cfg, err = clientcmd.BuildConfigFromFlags("", o.KCPKubeconfig); err != nil {
				return nil, fmt.Errorf("reading --kcp-kubeconfig %s: %w", o.KCPKubeconfig, err)
			}
		}
		p, err := kcp.New(cfg, o.KCPEndpointSlice, hosting.GetScheme(), hosting.GetLogger().WithName("kcp-provider"))
		if err != nil {
			return nil, err
		}
		return &kcpProvider{Provider: p}, nil
	default:
		return kubeconfig.New(kubeconfig.Options{
			Namespace:      o.KubeconfigNamespace,
			Label:          o.KubeconfigLabel,
			Key:            o.KubeconfigKey,
			Policy:         o.KubeconfigPolicy(),
			ClusterOptions: spaceOptions,
		}, hosting.GetLogger().WithName("kubeconfig-provider")), nil
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

// singleProvider gives the single provider the setup step the others have.
type singleProvider struct {
	*single.Provider
}

// SetupWithManager does nothing: the single provider engages its cluster when it starts.
func (p *singleProvider) SetupWithManager(context.Context, mcmanager.Manager) error { return nil }
