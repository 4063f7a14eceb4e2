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

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

const (
	// DefaultKubeconfigSecretLabel is the label key by which the
	// multicluster-runtime kubeconfig provider recognises kubeconfig Secrets
	// (sigs.k8s.io/multicluster-runtime/providers/kubeconfig
	// DefaultKubeconfigSecretLabel). RegisterKubeconfigSecret uses it when
	// given an empty label.
	DefaultKubeconfigSecretLabel = "sigs.k8s.io/multicluster-runtime-kubeconfig"

	// KubeconfigSecretKey is the data key that holds the kubeconfig in a
	// kubeconfig Secret (the provider's DefaultKubeconfigSecretKey).
	KubeconfigSecretKey = "kubeconfig"
)

// RegisterKubeconfigSecret makes the Secret namespace/secretName hold the
// given kubeconfig under data key "kubeconfig" and carry the label
// `<label>=true`, the convention of the multicluster-runtime kubeconfig
// provider (an empty label means DefaultKubeconfigSecretLabel). The namespace
// is created if missing; an existing Secret is updated.
func RegisterKubeconfigSecret(ctx context.Context, c client.Client, namespace, secretName, label string, kubeconfig []byte) error {
	if label == "" {
		label = DefaultKubeconfigSecretLabel
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace,
			Name:      secretName,
			Labels:    map[string]string{label: "true"},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{KubeconfigSecretKey: kubeconfig},
	}
	err := c.Create(ctx, secret)
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating secret %s/%s: %w", namespace, secretName, err)
	}
	existing := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(secret), existing); err != nil {
		return fmt.Errorf("getting secret %s/%s: %w", namespace, secretName, err)
	}
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	existing.Labels[label] = "true"
	if existing.Data == nil {
		existing.Data = map[string][]byte{}
	}
	existing.Data[KubeconfigSecretKey] = kubeconfig
	if err := c.Update(ctx, existing); err != nil {
		return fmt.Errorf("updating secret %s/%s: %w", namespace, secretName, err)
	}
	return nil
}

// UnregisterKubeconfigSecret deletes the Secret namespace/secretName made by
// RegisterKubeconfigSecret. A missing Secret is not an error.
func UnregisterKubeconfigSecret(ctx context.Context, c client.Client, namespace, secretName string) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secretName}}
	if err := c.Delete(ctx, secret); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting secret %s/%s: %w", namespace, secretName, err)
	}
	return nil
}

// AddUser provisions a user without any group in the space and returns a
// kubeconfig for it.
func (s *Space) AddUser(name string) ([]byte, error) {
	user, err := s.Environment.AddUser(envtest.User{Name: name}, nil)
	if err != nil {
		return nil, fmt.Errorf("space %s: adding user %s: %w", s.Name, name, err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("space %s: making the kubeconfig of %s: %w", s.Name, name, err)
	}
	return kubeconfig, nil
}

// GrantStagerRole creates, in the space, the ClusterRole generated from the
// controller's RBAC markers (config/rbac/space/role.yaml) and binds it to the
// named user, so that whoever uses that user proves those permissions suffice.
func (s *Space) GrantStagerRole(ctx context.Context, user string) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(root, "config", "rbac", "space", "role.yaml"))
	if err != nil {
		return fmt.Errorf("reading the generated space role: %w", err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(raw, role); err != nil {
		return fmt.Errorf("parsing the generated space role: %w", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := s.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("space %s: creating %T %s: %w", s.Name, obj, obj.GetName(), err)
		}
	}
	return nil
}

// RegisterWithStager gives the stager an identity (user) in the space, bound
// to the generated space role (GrantStagerRole), and registers that
// identity's kubeconfig as a Secret named after the space in the namespace of
// the hosting cluster, where the stager's kubeconfig provider finds it.
func (s *Space) RegisterWithStager(ctx context.Context, hosting client.Client, namespace, user string) error {
	if err := s.GrantStagerRole(ctx, user); err != nil {
		return err
	}
	kubeconfig, err := s.AddUser(user)
	if err != nil {
		return err
	}
	return RegisterKubeconfigSecret(ctx, hosting, namespace, s.Name, "", kubeconfig)
}
