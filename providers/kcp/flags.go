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
	"errors"
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Flags are the command-line flags of the kcp provider.
type Flags struct {
	// Kubeconfig is the kubeconfig file of the kcp workspace holding the
	// stager's APIExport; empty means the hosting cluster's.
	Kubeconfig string
	// EndpointSlice is the APIExportEndpointSlice of the stager's APIExport.
	EndpointSlice string
}

// NewFlags returns Flags with their defaults.
func NewFlags() *Flags {
	return &Flags{EndpointSlice: DefaultEndpointSlice}
}

// AddFlags registers the flags.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.Kubeconfig, "kcp-kubeconfig", f.Kubeconfig,
		"kubeconfig of the kcp workspace holding the stager's APIExport and its endpoint slice (default: the hosting cluster's)")
	fs.StringVar(&f.EndpointSlice, "kcp-apiexport-endpointslice", f.EndpointSlice,
		"name of the APIExportEndpointSlice of the stager's APIExport, in the --kcp-kubeconfig workspace")
}

// Validate reports flags that cannot work, for when the provider serves.
func (f *Flags) Validate() error {
	if f.EndpointSlice == "" {
		return errors.New("--kcp-apiexport-endpointslice must not be empty")
	}
	return nil
}

// Config returns the REST config of the export's workspace: --kcp-kubeconfig's,
// or hosting when it is empty.
func (f *Flags) Config(hosting *rest.Config) (*rest.Config, error) {
	if f.Kubeconfig == "" {
		return hosting, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", f.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading --kcp-kubeconfig %s: %w", f.Kubeconfig, err)
	}
	return cfg, nil
}
