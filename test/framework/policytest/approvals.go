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

package policytest

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// Approve approves the StageApproval of the named policy's stage through its
// status subresource, as an approver does: the Approved condition True at
// the StageApproval's current generation, and status.approvedBy set to by.
// It returns the StageApproval as approved.
func Approve(ctx context.Context, c client.Client, policy, stage, by string) (*v1alpha1.StageApproval, error) {
	approval := &v1alpha1.StageApproval{}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, types.NamespacedName{Name: v1alpha1.StagePlacement(policy, stage).String()}, approval); err != nil {
			return err
		}
		approval.SetApproved(by, metav1.Now())
		return c.Status().Update(ctx, approval)
	})
	if err != nil {
		return nil, fmt.Errorf("approving stage %q of %s as %s: %w", stage, policy, by, err)
	}
	return approval, nil
}
