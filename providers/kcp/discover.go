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
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Space is a logical cluster bound to the stager's APIExport, as one
// outside the stager finds it.
type Space struct {
	// Name is the space's name as the stager names it: the workspace path,
	// or the logical cluster ID when the path cannot be read.
	Name string
	// Config reaches the logical cluster through the export's virtual
	// workspace, where the stager reads and writes it.
	Config *rest.Config
}

// Discover lists the logical clusters that bind the APIExport whose
// APIExportEndpointSlice endpointSlice lives in the workspace cfg reaches,
// as the provider engages them: through each endpoint of the slice, the
// logical clusters of the APIBindings its virtual workspace serves, named
// after their workspace paths. It reads with cfg's permissions (the
// export's content), and is what `kubectl stager get --all-spaces` serves
// from.
func Discover(ctx context.Context, cfg *rest.Config, endpointSlice string) ([]Space, error) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	slice := &apisv1alpha1.APIExportEndpointSlice{}
	if err := c.Get(ctx, types.NamespacedName{Name: endpointSlice}, slice); err != nil {
		return nil, fmt.Errorf("reading APIExportEndpointSlice %s: %w", endpointSlice, err)
	}
	seen := map[string]bool{}
	var spaces []Space
	for _, endpoint := range slice.Status.APIExportEndpoints {
		base := strings.TrimSuffix(endpoint.URL, "/")
		wildcard := rest.CopyConfig(cfg)
		wildcard.Host = base + "/clusters/*"
		wc, err := client.New(wildcard, client.Options{Scheme: scheme})
		if err != nil {
			return nil, fmt.Errorf("connecting to %s: %w", wildcard.Host, err)
		}
		bindings := &apisv1alpha1.APIBindingList{}
		if err := wc.List(ctx, bindings); err != nil {
			return nil, fmt.Errorf("listing the APIBindings of %s: %w", wildcard.Host, err)
		}
		for i := range bindings.Items {
			id := logicalcluster.From(&bindings.Items[i]).String()
			if id == "" || seen[id] {
				continue
			}
			seen[id] = true
			space := rest.CopyConfig(cfg)
			space.Host = base + "/clusters/" + id
			name := id
			if path, err := pathOf(ctx, space); err == nil && path != "" {
				name = path
			}
			spaces = append(spaces, Space{Name: name, Config: space})
		}
	}
	sort.Slice(spaces, func(i, j int) bool { return spaces[i].Name < spaces[j].Name })
	return spaces, nil
}

// pathOf reads the workspace path of the logical cluster cfg reaches.
func pathOf(ctx context.Context, cfg *rest.Config) (string, error) {
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	return pathFrom(ctx, mc)
}
