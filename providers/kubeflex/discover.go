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
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/providers/kubeconfig"
)

// Space is a ControlPlane that the provider would engage, as one outside the
// stager finds it: its name and REST config, or why it is not usable.
type Space struct {
	// Name is the ControlPlane's name, which the provider names the space after.
	Name string
	// Config reaches the space; nil when Reason is set.
	Config *rest.Config
	// Reason and Message say why the ControlPlane is selected but not usable,
	// as the provider reports it (ReasonNotReady, ReasonSecretUnreadable, a
	// kubeconfig guard's reason, ...).
	Reason, Message string
}

// Discover lists the ControlPlanes that opts select, with the rules the
// provider engages them by (Ready, a Secret in an allowed namespace, a
// kubeconfig the Policy accepts), reading through reader with its
// permissions. It is what `kubectl stager get --all-spaces` serves from.
func Discover(ctx context.Context, reader client.Reader, opts Options) ([]Space, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(ControlPlaneGVK.GroupVersion().WithKind(ControlPlaneGVK.Kind + "List"))
	if err := reader.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing KubeFlex ControlPlanes: %w", err)
	}
	var spaces []Space
	for i := range list.Items {
		u := &list.Items[i]
		d, err := opts.Decide(u)
		if err != nil {
			continue // the provider reports it; it is no space
		}
		if d.Ignore {
			continue
		}
		space := Space{Name: u.GetName(), Reason: d.Reason, Message: d.Message}
		if d.Reason == "" {
			raw, reason, message := ReadKubeconfig(ctx, reader, d)
			space.Reason, space.Message = reason, message
			if reason == "" {
				if space.Config, err = opts.Policy.RESTConfig(raw); err != nil {
					space.Reason, space.Message = kubeconfig.ReasonOf(err), err.Error()
				}
			}
		}
		spaces = append(spaces, space)
	}
	sort.Slice(spaces, func(i, j int) bool { return spaces[i].Name < spaces[j].Name })
	return spaces, nil
}

// ReadKubeconfig reads the kubeconfig a decision names through reader, or
// says why none can be read (ReasonSecretUnreadable, ReasonNoKubeconfig).
func ReadKubeconfig(ctx context.Context, reader client.Reader, d Decision) (raw []byte, reason, message string) {
	secret := &corev1.Secret{}
	key := types.NamespacedName{Namespace: d.Secret.Namespace, Name: d.Secret.Name}
	if err := reader.Get(ctx, key, secret); err != nil {
		return nil, ReasonSecretUnreadable, fmt.Sprintf("reading Secret %s: %v", key, err)
	}
	raw = secret.Data[d.Key]
	if len(raw) == 0 {
		return nil, ReasonNoKubeconfig, fmt.Sprintf("Secret %s has no data under key %q", key, d.Key)
	}
	return raw, "", ""
}
