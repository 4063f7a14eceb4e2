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
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// PromoterRole is the name of the shipped promoters' ClusterRole.
const PromoterRole = "workload-stager-promoter"

// InstallPromotions creates in the space the objects of ApprovalDir's
// promoter_role.yaml and promotion_policy.yaml (the break-glass promotion's
// role and admission policy), and waits until the API server enforces the
// admission policy: until it refuses, in a dry run, a policy whose
// spec.promotion names someone other than the writer (a dry run leaves
// nothing for a stager to act on).
func (s *Space) InstallPromotions(ctx context.Context) error {
	if err := s.createFromApprovalDir(ctx, "promoter_role.yaml", "promotion_policy.yaml"); err != nil {
		return err
	}
	probe := &v1alpha1.StagedBindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "promotion-policy-probe"},
		Spec: v1alpha1.StagedBindingPolicySpec{
			Stages: []v1alpha1.Stage{{Name: "probe", ClusterSelectors: []metav1.LabelSelector{{}}}},
			Promotion: &v1alpha1.Promotion{Stage: "probe", Reason: "probe", RequestedBy: "not-" + SpaceUserName,
				RequestedAt: metav1.Now()},
		},
	}
	return s.waitUntilRefused(ctx, "promotion", func() error {
		return s.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll)
	})
}

// AddPromoter provisions a user bound to the shipped promoters' ClusterRole
// (InstallPromotions creates it), and to the further ClusterRoles given,
// and returns a client acting as that user.
func (s *Space) AddPromoter(ctx context.Context, name string, alsoRoles ...string) (client.Client, error) {
	return s.AddUserWithRoles(ctx, name, append([]string{PromoterRole}, alsoRoles...)...)
}
