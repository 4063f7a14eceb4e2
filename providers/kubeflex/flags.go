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

package kubeflex

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubestellar/workload-stager/providers/kubeconfig"
)

// The values of --kubeflex-kubeconfig-key.
const (
	KubeconfigKeyAuto      = "auto"
	KubeconfigKeyInCluster = "in-cluster"
	KubeconfigKeyExternal  = "external"
)

// Flags are the command-line flags of the KubeFlex provider.
type Flags struct {
	// Selector selects the ControlPlanes that are spaces.
	Selector string
	// KubeconfigKey chooses the Secret key of a ControlPlane's kubeconfig:
	// KubeconfigKeyInCluster, KubeconfigKeyExternal, or KubeconfigKeyAuto
	// (in-cluster inside a pod).
	KubeconfigKey string
	// SecretNamespaces, when not empty, are the only namespaces whose
	// Secrets a ControlPlane may name.
	SecretNamespaces []string
	// Resync is how often an engaged ControlPlane's Secret is read again.
	Resync time.Duration
}

// NewFlags returns Flags with their defaults.
func NewFlags() *Flags {
	return &Flags{Selector: DefaultSelector, KubeconfigKey: KubeconfigKeyAuto, Resync: DefaultResync}
}

// AddFlags registers the flags: AddDiscoveryFlags and the resync.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	f.AddDiscoveryFlags(fs)
	fs.DurationVar(&f.Resync, "kubeflex-resync", f.Resync,
		"how often an engaged ControlPlane's Secret is read again, so that a rotated kubeconfig takes over")
}

// AddDiscoveryFlags registers the flags that say which ControlPlanes are
// spaces and how they are reached.
func (f *Flags) AddDiscoveryFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.Selector, "kubeflex-selector", f.Selector,
		"label selector of the KubeFlex ControlPlanes that are spaces, with --provider=kubeflex")
	fs.StringVar(&f.KubeconfigKey, "kubeflex-kubeconfig-key", f.KubeconfigKey,
		`which kubeconfig of a ControlPlane's Secret to use: "in-cluster", "external", or "auto" (in-cluster when the stager runs in a pod)`)
	fs.StringSliceVar(&f.SecretNamespaces, "kubeflex-secret-namespaces", f.SecretNamespaces,
		"the only namespaces whose Secrets a ControlPlane may name (default: any, which needs get on Secrets cluster-wide)")
}

// Validate reports flags that cannot work, for when the provider serves.
func (f *Flags) Validate() error {
	var errs []error
	if _, err := labels.Parse(f.Selector); err != nil || f.Selector == "" {
		errs = append(errs, fmt.Errorf("--kubeflex-selector must be a non-empty label selector: %q", f.Selector))
	}
	if !slices.Contains([]string{KubeconfigKeyAuto, KubeconfigKeyInCluster, KubeconfigKeyExternal}, f.KubeconfigKey) {
		errs = append(errs, fmt.Errorf(`--kubeflex-kubeconfig-key must be "auto", "in-cluster" or "external", not %q`, f.KubeconfigKey))
	}
	return errors.Join(errs...)
}

// inCluster reports whether a ControlPlane's in-cluster kubeconfig is used:
// asked for, or "auto" inside a pod.
func (f *Flags) inCluster() bool {
	return f.KubeconfigKey == KubeconfigKeyInCluster || f.KubeconfigKey == KubeconfigKeyAuto && os.Getenv("KUBERNETES_SERVICE_HOST") != ""
}

// Options are the options of Discover and of the provider as the flags say,
// with the kubeconfig policy.
func (f *Flags) Options(policy kubeconfig.Policy) (Options, error) {
	selector, err := labels.Parse(f.Selector)
	if err != nil {
		return Options{}, fmt.Errorf("--kubeflex-selector: %w", err)
	}
	return Options{Selector: selector, InCluster: f.inCluster(), SecretNamespaces: f.SecretNamespaces,
		Policy: policy, Resync: f.Resync}, nil
}

// DefaultResync is how often each engaged ControlPlane's Secret is read
// again, so that a rotated kubeconfig replaces the space's connection.
const DefaultResync = 30 * time.Second

// Options decide which ControlPlanes are spaces and how their kubeconfigs
// are read and guarded.
type Options struct {
	// Selector selects the ControlPlanes that are spaces.
	Selector labels.Selector
	// InCluster reads the Secret's in-cluster key (the stager runs in the
	// hosting cluster) rather than its external one.
	InCluster bool
	// SecretNamespaces, when not empty, are the only namespaces whose
	// Secrets may be read.
	SecretNamespaces []string
	// Policy is what a ControlPlane's kubeconfig may use.
	Policy kubeconfig.Policy
	// Resync is how often an engaged ControlPlane's Secret is read again.
	// Default DefaultResync.
	Resync time.Duration
}
