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
	"fmt"
	"os"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// MetricsReaderRoleFile is the shipped ClusterRole that lets its subjects
// scrape the stager's metrics endpoint, relative to the repository root.
var MetricsReaderRoleFile = filepath.Join("config", "rbac", "hosting", "metrics_reader_role.yaml")

// ServiceAccountToken makes the ServiceAccount namespace/name exist in the
// space, with its namespace, and returns a token for it from the
// TokenRequest API, as a Pod running under that ServiceAccount would get.
// The space's API server authenticates the token itself (TokenReview).
func (s *Space) ServiceAccountToken(ctx context.Context, namespace, name string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := s.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("space %s: creating namespace %s: %w", s.Name, namespace, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := s.Client.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("space %s: creating ServiceAccount %s/%s: %w", s.Name, namespace, name, err)
	}
	request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)}}
	if err := s.Client.SubResource("token").Create(ctx, sa, request); err != nil {
		return "", fmt.Errorf("space %s: requesting a token for ServiceAccount %s/%s: %w", s.Name, namespace, name, err)
	}
	return request.Status.Token, nil
}

// GrantMetricsReader creates in the space, unless it exists, the shipped
// metrics-reader ClusterRole (MetricsReaderRoleFile) and binds it to the
// ServiceAccount namespace/name, so that whoever scrapes with that
// ServiceAccount's token proves the shipped role suffices.
func (s *Space) GrantMetricsReader(ctx context.Context, namespace, name string) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(root, MetricsReaderRoleFile))
	if err != nil {
		return fmt.Errorf("reading the metrics-reader role: %w", err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(raw, role); err != nil {
		return fmt.Errorf("parsing the metrics-reader role: %w", err)
	}
	if err := s.Client.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("space %s: creating ClusterRole %s: %w", s.Name, role.Name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name + "-" + namespace + "-" + name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}},
	}
	if err := s.Client.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("space %s: creating ClusterRoleBinding %s: %w", s.Name, binding.Name, err)
	}
	return nil
}
