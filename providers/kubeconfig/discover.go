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

package kubeconfig

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Space is a kubeconfig Secret that the provider would engage, as one
// outside the stager finds it: its name and REST config, or why it is not
// usable.
type Space struct {
	// Name is the Secret's name, which the provider names the space after.
	Name string
	// Config reaches the space; nil when Problem is set.
	Config *rest.Config
	// Problem says why the Secret is no usable space.
	Problem string
}

// Discover lists the kubeconfig Secrets the flags name, by name, with the
// guard the provider engages them through, reading through reader with its
// permissions. It is what `kubectl stager get --all-spaces` serves from.
func Discover(ctx context.Context, reader client.Reader, f *Flags) ([]Space, error) {
	secrets := &corev1.SecretList{}
	if err := reader.List(ctx, secrets, client.InNamespace(f.Namespace), client.MatchingLabels{f.Label: "true"}); err != nil {
		return nil, fmt.Errorf("listing the kubeconfig Secrets of namespace %s: %w", f.Namespace, err)
	}
	policy := f.Policy()
	spaces := make([]Space, 0, len(secrets.Items))
	for _, secret := range secrets.Items {
		space := Space{Name: secret.Name}
		raw := secret.Data[f.Key]
		if len(raw) == 0 {
			space.Problem = fmt.Sprintf("no kubeconfig under key %q", f.Key)
		} else if cfg, err := policy.RESTConfig(raw); err != nil {
			space.Problem = fmt.Sprintf("%s: %v", ReasonOf(err), err)
		} else {
			space.Config = cfg
		}
		spaces = append(spaces, space)
	}
	sort.Slice(spaces, func(i, j int) bool { return spaces[i].Name < spaces[j].Name })
	return spaces, nil
}
