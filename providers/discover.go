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

package providers

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/providers/kcp"
	"github.com/kubestellar/workload-stager/providers/kubeconfig"
	"github.com/kubestellar/workload-stager/providers/kubeflex"
)

// Space is a space the selected providers would engage, as one outside the
// stager finds it from the same registrations.
type Space struct {
	// Name is the space's name as the stager names it (with the
	// "<provider>#" prefix when several providers serve).
	Name string
	// Config reaches the space; nil when Problem is set.
	Config *rest.Config
	// Problem says why the registration is no usable space.
	Problem string
}

// Discover lists the spaces the selected providers would engage, reading
// their registrations (kubeconfig Secrets, KubeFlex ControlPlanes, the
// hosting cluster itself, the logical clusters bound to the kcp export)
// through hosting, with its permissions, and their kubeconfigs through the
// same guard. hostingConfig is the hosting cluster's REST config: the space of
// provider single, and the kcp workspace of the export unless
// --kcp-kubeconfig names another.
func Discover(ctx context.Context, o *Options, hosting client.Reader, hostingConfig *rest.Config) ([]Space, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	selected := o.Kinds()
	var spaces []Space
	for _, kind := range selected {
		found, err := discover(ctx, kind, o, hosting, hostingConfig)
		if err != nil {
			return nil, err
		}
		if len(selected) > 1 {
			for i := range found {
				found[i].Name = kind + Separator + found[i].Name
			}
		}
		spaces = append(spaces, found...)
	}
	return spaces, nil
}

func discover(ctx context.Context, kind string, o *Options, hosting client.Reader, hostingConfig *rest.Config) ([]Space, error) {
	switch kind {
	case KindSingle:
		return []Space{{Name: o.Single.Name, Config: hostingConfig}}, nil
	case KindKubeconfig:
		found, err := kubeconfig.Discover(ctx, hosting, o.Kubeconfig)
		if err != nil {
			return nil, err
		}
		spaces := make([]Space, 0, len(found))
		for _, f := range found {
			spaces = append(spaces, Space{Name: f.Name, Config: f.Config, Problem: f.Problem})
		}
		return spaces, nil
	case KindKubeFlex:
		opts, err := o.KubeFlex.Options(o.Kubeconfig.Policy())
		if err != nil {
			return nil, err
		}
		found, err := kubeflex.Discover(ctx, hosting, opts)
		if err != nil {
			return nil, err
		}
		spaces := make([]Space, 0, len(found))
		for _, f := range found {
			space := Space{Name: f.Name, Config: f.Config}
			if f.Reason != "" {
				space.Problem = fmt.Sprintf("%s: %s", f.Reason, f.Message)
			}
			spaces = append(spaces, space)
		}
		return spaces, nil
	case KindKCP:
		cfg, err := o.KCP.Config(hostingConfig)
		if err != nil {
			return nil, err
		}
		found, err := kcp.Discover(ctx, cfg, o.KCP.EndpointSlice)
		if err != nil {
			return nil, err
		}
		spaces := make([]Space, 0, len(found))
		for _, f := range found {
			spaces = append(spaces, Space{Name: f.Name, Config: f.Config, Problem: f.Problem})
		}
		return spaces, nil
	default:
		return nil, fmt.Errorf("unknown provider %q", kind)
	}
}
