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

// Package providers says how the operator's spaces are found: the
// --provider flag and each provider's own flags, and Discover, which lists
// the spaces the stager would engage as one outside it (`kubectl stager`)
// finds them. Engaging them, through multicluster-runtime's cluster
// providers, is internal/providers'; this package and its subpackages link
// no controller manager (depguard keeps it so), and the kubectl plugin
// links them.
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
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

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
