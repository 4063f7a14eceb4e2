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

package app

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/providers"
)

// target is one WDS whose rollouts a command shows: the current context's
// (space ""), or one the stager serves (--all-spaces).
type target struct {
	space  string
	client client.Client
	// config is what client was made from (the dashboard watches with it).
	config *rest.Config
}

// spaceFlags are the flags of --all-spaces: which registrations to read,
// as the stager's provider flags say.
type spaceFlags struct {
	all       bool
	providers *providers.Options
}

// addSpaceFlags registers --all-spaces and the provider flags it reads the
// registrations by: the stager's own, with its names, defaults and help,
// but for the kubeconfig guard's, which the plugin never loosens.
func addSpaceFlags(fs *pflag.FlagSet) *spaceFlags {
	f := &spaceFlags{providers: providers.NewOptions()}
	fs.BoolVarP(&f.all, "all-spaces", "A", false,
		"Every space the stager serves, found from its registrations in the current context's cluster (the stager's hosting cluster), with your permissions")
	f.providers.AddDiscoveryFlags(fs)
	return f
}

// targets returns the current context's WDS, or with --all-spaces every
// space the registrations name. A registration that is no usable space is
// reported on the error stream and left out: one broken space does not hide
// the others.
func (o *options) targets(ctx context.Context, f *spaceFlags) ([]target, error) {
	config, err := o.configFlags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	if !f.all {
		c, err := clientFor(config)
		if err != nil {
			return nil, err
		}
		return []target{{client: c, config: config}}, nil
	}
	hosting, err := clientFor(config)
	if err != nil {
		return nil, err
	}
	spaces, err := providers.Discover(ctx, f.providers, hosting, config)
	if err != nil {
		return nil, err
	}
	var targets []target
	for _, s := range spaces {
		if s.Problem != "" {
			fprintf(o.streams.ErrOut, "space %s: not usable: %s\n", s.Name, s.Problem)
			continue
		}
		c, err := clientFor(s.Config)
		if err != nil {
			fprintf(o.streams.ErrOut, "space %s: %v\n", s.Name, err)
			continue
		}
		targets = append(targets, target{space: s.Name, client: c, config: s.Config})
	}
	return targets, nil
}
