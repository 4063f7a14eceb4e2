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
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// controlPlaneWith returns a ControlPlane object with the given labels,
// Ready status and secretRef (nil: none).
func controlPlaneWith(t *testing.T, lbls map[string]string, ready string, ref map[string]any, deleting bool) *controlPlane {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "tenancy.kflex.kubestellar.org/v1alpha1",
		"kind":       "ControlPlane",
		"metadata":   map[string]any{"name": "wds1"},
		"status":     map[string]any{},
	}}
	u.SetLabels(lbls)
	if deleting {
		_ = unstructured.SetNestedField(u.Object, "2026-11-23T12:00:00Z", "metadata", "deletionTimestamp")
	}
	if ready != "" {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Ready", "status": ready}}, "status", "conditions")
	}
	if ref != nil {
		_ = unstructured.SetNestedMap(u.Object, ref, "status", "secretRef")
	}
	cp, err := parseControlPlane(u)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func TestDecide(t *testing.T) {
	selector, err := labels.Parse(DefaultSelector)
	if err != nil {
		t.Fatal(err)
	}
	wds := map[string]string{"kflex.kubestellar.io/cptype": "wds"}
	its := map[string]string{"kflex.kubestellar.io/cptype": "its"}
	ref := map[string]any{"namespace": "wds1-system", "name": "admin-kubeconfig", "key": "kubeconfig", "inClusterKey": "kubeconfig-incluster"}
	for _, tt := range []struct {
		name      string
		cp        *controlPlane
		inCluster bool
		allowed   []string
		want      Decision
	}{
		{"a ready WDS, from outside the cluster", controlPlaneWith(t, wds, "True", ref, false), false, nil,
			Decision{Secret: &SecretRef{Namespace: "wds1-system", Name: "admin-kubeconfig", Key: "kubeconfig", InClusterKey: "kubeconfig-incluster"}, Key: "kubeconfig"}},
		{"a ready WDS, from inside the cluster", controlPlaneWith(t, wds, "True", ref, false), true, nil,
			Decision{Secret: &SecretRef{Namespace: "wds1-system", Name: "admin-kubeconfig", Key: "kubeconfig", InClusterKey: "kubeconfig-incluster"}, Key: "kubeconfig-incluster"}},
		{"an ITS is ignored", controlPlaneWith(t, its, "True", ref, false), false, nil, Decision{Ignore: true}},
		{"a WDS being deleted is ignored", controlPlaneWith(t, wds, "True", ref, true), false, nil, Decision{Ignore: true}},
		{"not ready", controlPlaneWith(t, wds, "False", ref, false), false, nil, Decision{Reason: ReasonNotReady, Message: "the ControlPlane's Ready condition is not True"}},
		{"no Ready condition yet", controlPlaneWith(t, wds, "", ref, false), false, nil, Decision{Reason: ReasonNotReady, Message: "the ControlPlane's Ready condition is not True"}},
		{"no secretRef", controlPlaneWith(t, wds, "True", nil, false), false, nil, Decision{Reason: ReasonNoSecretRef, Message: "the ControlPlane's status.secretRef names no Secret"}},
		{"no external key", controlPlaneWith(t, wds, "True", map[string]any{"namespace": "ns", "name": "s", "inClusterKey": "k"}, false), false, nil,
			Decision{Reason: ReasonNoSecretRef, Message: "the ControlPlane's status.secretRef.key is empty"}},
		{"a Secret outside the allowed namespaces", controlPlaneWith(t, wds, "True", ref, false), false, []string{"kubeflex-system"},
			Decision{Reason: ReasonSecretNotAllowed, Message: "its Secret is in namespace \"wds1-system\", which --kubeflex-secret-namespaces does not list"}},
		{"a Secret inside the allowed namespaces", controlPlaneWith(t, wds, "True", ref, false), false, []string{"wds1-system"},
			Decision{Secret: &SecretRef{Namespace: "wds1-system", Name: "admin-kubeconfig", Key: "kubeconfig", InClusterKey: "kubeconfig-incluster"}, Key: "kubeconfig"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := decide(tt.cp, selector, tt.inCluster, tt.allowed)
			if got.Ignore != tt.want.Ignore || got.Reason != tt.want.Reason || got.Message != tt.want.Message || got.Key != tt.want.Key ||
				(got.Secret == nil) != (tt.want.Secret == nil) || (got.Secret != nil && *got.Secret != *tt.want.Secret) {
				t.Errorf("decide() = %+v (secret %+v), want %+v (secret %+v)", got, got.Secret, tt.want, tt.want.Secret)
			}
		})
	}
}
