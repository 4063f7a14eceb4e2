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

// Package providers builds the multicluster-runtime cluster provider that
// engages the operator's spaces, from command-line flags.
//
// Two kinds of provider are offered:
//   - "kubeconfig": every Secret with a kubeconfig, in a namespace and with a
//     label of the user's choice in the hosting cluster, is a space. Secrets
//     created at run time engage new spaces; deleted ones disengage them.
//   - "single": the hosting cluster itself is the only space.
package providers

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	"sigs.k8s.io/multicluster-runtime/providers/kubeconfig"
	"sigs.k8s.io/multicluster-runtime/providers/single"
)

// The kinds of provider.
const (
	// KindKubeconfig engages one space per kubeconfig Secret.
	KindKubeconfig = "kubeconfig"
	// KindSingle engages the hosting cluster as the only space.
	KindSingle = "single"
)

// Defaults of the flags.
const (
	// DefaultKubeconfigNamespace is where kubeconfig Secrets are looked for.
	DefaultKubeconfigNamespace = "kubestellar-stager"
	// DefaultSingleName is the space name of the hosting cluster in single mode.
	DefaultSingleName = "local"
)

// Options are the provider flags.
type Options struct {
	// Kind is KindKubeconfig or KindSingle.
	Kind string
	// KubeconfigNamespace is the namespace of the kubeconfig Secrets.
	KubeconfigNamespace string
	// KubeconfigLabel is the label (with value "true") that marks a kubeconfig Secret.
	KubeconfigLabel string
	// KubeconfigKey is the key of the kubeconfig in a Secret's data.
	KubeconfigKey string
	// SingleName is the space name of the hosting cluster in single mode.
	SingleName string
}

// NewOptions returns Options with their defaults.
func NewOptions() *Options {
	return &Options{
		Kind:                KindKubeconfig,
		KubeconfigNamespace: DefaultKubeconfigNamespace,
		KubeconfigLabel:     kubeconfig.DefaultKubeconfigSecretLabel,
		KubeconfigKey:       kubeconfig.DefaultKubeconfigSecretKey,
		SingleName:          DefaultSingleName,
	}
}

// AddFlags registers the provider flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kind, "provider", o.Kind,
		`how spaces are found: "kubeconfig" (one space per labelled kubeconfig Secret in the hosting cluster) or "single" (the hosting cluster is the only space)`)
	fs.StringVar(&o.KubeconfigNamespace, "kubeconfig-namespace", o.KubeconfigNamespace,
		"namespace of the hosting cluster holding the kubeconfig Secrets of the spaces")
	fs.StringVar(&o.KubeconfigLabel, "kubeconfig-label", o.KubeconfigLabel,
		`label that marks a Secret as a space's kubeconfig (its value must be "true"); the space is named after the Secret`)
	fs.StringVar(&o.KubeconfigKey, "kubeconfig-key", o.KubeconfigKey,
		"key of the kubeconfig in a space Secret's data")
	fs.StringVar(&o.SingleName, "single-space-name", o.SingleName,
		"name of the hosting cluster's space with --provider=single")
}

// Validate reports flags that cannot work together.
func (o *Options) Validate() error {
	var errs []error
	switch o.Kind {
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
	default:
		errs = append(errs, fmt.Errorf("--provider must be %q or %q, not %q", KindKubeconfig, KindSingle, o.Kind))
	}
	return errors.Join(errs...)
}

// HostingCacheOptions narrows the hosting cluster's cache to what the provider
// reads there: with kubeconfig Secrets, only the labelled Secrets of their
// namespace. spaceCache is the cache configuration of a space, used as is
// when the hosting cluster is itself the space.
func (o *Options) HostingCacheOptions(spaceCache cache.Options) cache.Options {
	if o.Kind != KindKubeconfig {
		return spaceCache
	}
	return cache.Options{
		DefaultNamespaces: map[string]cache.Config{o.KubeconfigNamespace: {}},
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{o.KubeconfigLabel: "true"})},
		},
		DefaultTransform: cache.TransformStripManagedFields(),
	}
}

// Provider is a cluster provider that is set up once the manager exists.
type Provider interface {
	multicluster.Provider
	// SetupWithManager registers what the provider runs with the manager.
	SetupWithManager(ctx context.Context, mgr mcmanager.Manager) error
}

// New builds the provider chosen by the options. hosting is the manager of
// the hosting cluster; spaceOptions configure the cluster of every space it
// engages (scheme, cache).
func New(o *Options, hosting manager.Manager, spaceOptions ...cluster.Option) (Provider, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	switch o.Kind {
	case KindSingle:
		return &singleProvider{Provider: single.New(multicluster.ClusterName(o.SingleName), hosting)}, nil
	default:
		return kubeconfig.New(kubeconfig.Options{
			Namespace:             o.KubeconfigNamespace,
			KubeconfigSecretLabel: o.KubeconfigLabel,
			KubeconfigSecretKey:   o.KubeconfigKey,
			ClusterOptions:        spaceOptions,
		}), nil
	}
}

// singleProvider gives the single provider the setup step the others have.
type singleProvider struct {
	*single.Provider
}

// SetupWithManager does nothing: the single provider engages its cluster when it starts.
func (p *singleProvider) SetupWithManager(context.Context, mcmanager.Manager) error { return nil }
