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

package environment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// PromoterRole is the name of the shipped promoters' ClusterRole.
const PromoterRole = "workload-stager-promoter"

// InstallPromotions creates in the space the objects of ApprovalDir's
// promoter_role.yaml and promotion_policy.yaml (the break-glass promotion's
// role and admission policy), and waits until the API server enforces the
// admission policy.
func (s *Space) InstallPromotions(ctx context.Context) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	for _, file := range []string{"promoter_role.yaml", "promotion_policy.yaml"} {
		raw, err := os.ReadFile(filepath.Join(root, ApprovalDir, file))
		if err != nil {
			return fmt.Errorf("reading %s: %w", file, err)
		}
		decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := decoder.Decode(&obj.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return fmt.Errorf("parsing %s: %w", file, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			if err := s.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("space %s: creating %s %s: %w", s.Name, obj.GetKind(), obj.GetName(), err)
			}
		}
	}
	return s.waitForPromotionPolicy(ctx)
}

// waitForPromotionPolicy waits until the API server refuses, in a dry run,
// a policy whose spec.promotion names someone other than the writer:
// admission policies take effect a moment after they are created, and a
// dry run leaves nothing for a stager to act on.
func (s *Space) waitForPromotionPolicy(ctx context.Context) error {
	probe := &v1alpha1.StagedBindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "promotion-policy-probe"},
		Spec: v1alpha1.StagedBindingPolicySpec{
			Stages: []v1alpha1.Stage{{Name: "probe", ClusterSelectors: []metav1.LabelSelector{{}}}},
			Promotion: &v1alpha1.Promotion{Stage: "probe", Reason: "probe", RequestedBy: "not-" + SpaceUserName,
				RequestedAt: metav1.Now()},
		},
	}
	return Poll(ctx, 200*time.Millisecond, time.Minute, "the promotions admission policy to hold", func() error {
		switch err := s.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll); {
		case err == nil:
			return fmt.Errorf("space %s: the promotion admission policy does not hold yet", s.Name)
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
			return nil
		default:
			return err
		}
	})
}

// AddPromoter provisions a user bound to the shipped promoters' ClusterRole
// (InstallPromotions creates it), and to the further ClusterRoles given,
// and returns a client acting as that user.
func (s *Space) AddPromoter(ctx context.Context, name string, alsoRoles ...string) (client.Client, error) {
	return s.AddUserWithRoles(ctx, name, append([]string{PromoterRole}, alsoRoles...)...)
}

// AddUserWithRoles provisions a user bound to the named ClusterRoles and
// returns a client acting as that user.
func (s *Space) AddUserWithRoles(ctx context.Context, name string, clusterRoles ...string) (client.Client, error) {
	kubeconfig, err := s.AddUser(name)
	if err != nil {
		return nil, err
	}
	for _, role := range clusterRoles {
		if err := s.Grant(ctx, name, role); err != nil {
			return nil, err
		}
	}
	config, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("space %s: the kubeconfig of %s: %w", s.Name, name, err)
	}
	return client.New(config, client.Options{Scheme: s.Client.Scheme()})
}
