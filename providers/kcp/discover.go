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
	"errors"
	"fmt"
	"net/url"
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
	// workspace, where the stager reads and writes it; nil when Problem
	// is set.
	Config *rest.Config
	// Problem says why an endpoint of the slice was not read: Name then
	// names the endpoint, whose logical clusters are not listed.
	Problem string
}

// Discover lists the logical clusters that bind the APIExport whose
// APIExportEndpointSlice endpointSlice lives in the workspace cfg reaches,
// as the provider engages them: through each endpoint of the slice, the
// logical clusters of the APIBindings its virtual workspace serves, named
// after their workspace paths. It reads with cfg's permissions (the
// export's content), and is what `kubectl stager get --all-spaces` serves
// from. An endpoint that endpointURL refuses is not contacted, and is
// returned as a Space with its Problem: the other endpoints are read.
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
	for i, endpoint := range slice.Status.APIExportEndpoints {
		base, err := endpointURL(endpoint.URL, cfg)
		if err != nil {
			spaces = append(spaces, Space{Name: fmt.Sprintf("%s/endpoint[%d]", endpointSlice, i), Problem: err.Error()})
			continue
		}
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
	return WorkspacePath(ctx, mc)
}

// endpointURL returns an endpoint of an APIExportEndpointSlice as the base
// URL of the clients built on it, or why it is refused. Whoever can write
// the slice's status chooses the URL, and every client built on it sends
// cfg's credentials: so it must be https, with a host and without user
// information, a query or a fragment; and when cfg does not verify the
// server's certificate, nothing vouches for another host, so it must be
// cfg's own. The refusal names the URL without a password.
func endpointURL(raw string, cfg *rest.Config) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", errors.New("the endpoint's URL does not parse: your credentials are not sent to it")
	}
	shown := u.Redacted()
	switch {
	case u.Scheme != "https":
		return "", fmt.Errorf("the endpoint %q is not an https URL: your credentials are not sent to it", shown)
	case u.Host == "":
		return "", fmt.Errorf("the endpoint %q names no host", shown)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return "", fmt.Errorf("the endpoint %q carries user information, a query or a fragment", shown)
	}
	if cfg.Insecure {
		own, err := url.Parse(cfg.Host)
		if err == nil && own.Host == "" {
			own, err = url.Parse("https://" + cfg.Host)
		}
		if err != nil || !strings.EqualFold(own.Host, u.Host) {
			return "", fmt.Errorf("the endpoint %q is not on the kubeconfig's server, whose certificate is not verified (insecure-skip-tls-verify): your credentials are not sent to it", shown)
		}
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}
