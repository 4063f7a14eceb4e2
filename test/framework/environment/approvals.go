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

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// ApprovalDir is the shipped approvals configuration of a space (the
// approvers' ClusterRole and the admission policy), relative to the
// repository root.
var ApprovalDir = filepath.Join("config", "approval")

// ApproverRole is the name of the shipped approvers' ClusterRole.
const ApproverRole = "workload-stager-approver"

// InstallApprovals creates in the space the objects of ApprovalDir's
// approver_role.yaml and admission_policy.yaml, and waits until the API
// server enforces the admission policy: until it refuses a StageApproval
// whose status.approvedBy names someone other than the writer.
func (s *Space) InstallApprovals(ctx context.Context) error {
	if err := s.createFromApprovalDir(ctx, "approver_role.yaml", "admission_policy.yaml"); err != nil {
		return err
	}
	probe := &v1alpha1.StageApproval{
		ObjectMeta: metav1.ObjectMeta{Name: "approval-policy-probe"},
		Spec:       v1alpha1.StageApprovalSpec{Policy: "probe", Stage: "probe"},
	}
	if err := s.Client.Create(ctx, probe); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("space %s: creating the admission policy's probe: %w", s.Name, err)
	}
	defer func() { _ = s.Client.Delete(context.WithoutCancel(ctx), probe) }()
	attempt := 0
	return s.waitUntilRefused(ctx, "approvals", func() error {
		current := &v1alpha1.StageApproval{}
		if err := s.Client.Get(ctx, client.ObjectKeyFromObject(probe), current); err != nil {
			return fmt.Errorf("reading the probe: %w", err)
		}
		// A new name each time: the policy lets an unchanged approvedBy through.
		attempt++
		current.Status.ApprovedBy = fmt.Sprintf("not-%s-%d", SpaceUserName, attempt)
		return s.Client.Status().Update(ctx, current)
	})
}

// InstallApproverRole creates in the space only the approvers' ClusterRole
// of ApprovalDir, without the admission policy InstallApprovals adds: for a
// space whose other tests record approvals in others' names as its admin.
func (s *Space) InstallApproverRole(ctx context.Context) error {
	return s.createFromApprovalDir(ctx, "approver_role.yaml")
}

// createFromApprovalDir creates in the space the objects of ApprovalDir's
// files, those already there left as they are.
func (s *Space) createFromApprovalDir(ctx context.Context, files ...string) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	for _, file := range files {
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
	return nil
}

// waitUntilRefused repeats write, a write the named admission policy
// refuses, until the API server refuses it (Forbidden or Invalid):
// admission policies take effect a moment after they are created.
func (s *Space) waitUntilRefused(ctx context.Context, policy string, write func() error) error {
	return Poll(ctx, 200*time.Millisecond, time.Minute, "the "+policy+" admission policy to hold", func() error {
		switch err := write(); {
		case err == nil:
			return fmt.Errorf("space %s: the %s admission policy does not hold yet", s.Name, policy)
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
			return nil
		default:
			return err
		}
	})
}

// AddApprover provisions a user bound to the shipped approvers' ClusterRole
// (InstallApprovals creates it) and returns a client acting as that user.
func (s *Space) AddApprover(ctx context.Context, name string) (client.Client, error) {
	return s.AddUserWithRoles(ctx, name, ApproverRole)
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

// Grant binds the named user to the named ClusterRole in the space.
func (s *Space) Grant(ctx context.Context, user, clusterRole string) error {
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: clusterRole + "-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if err := s.Client.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("space %s: binding %s to %s: %w", s.Name, user, clusterRole, err)
	}
	return nil
}
