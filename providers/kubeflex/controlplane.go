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

// Package kubeflex finds spaces on their own: every KubeFlex ControlPlane of
// the hosting cluster that matches a label selector (WDSes:
// kflex.kubestellar.io/cptype=wds) and is Ready is a space, named after the
// ControlPlane, reached through the kubeconfig its status.secretRef names,
// under the same guard as kubeconfig Secrets (providers/kubeconfig). A
// ControlPlane it cannot use is reported (an Event on it, a log line and
// stager_kubeflex_controlplane_unusable), never skipped silently.
//
// It reads ControlPlanes through a small mirror of the fields it uses
// (KubeFlex's module is not in the public checksum database), and each
// Secret with a single uncached GET, so that its RBAC is get on the
// Secrets, never list or watch.
package kubeflex

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ControlPlaneGVK is KubeFlex's ControlPlane, cluster-scoped.
var ControlPlaneGVK = schema.GroupVersionKind{Group: "tenancy.kflex.kubestellar.org", Version: "v1alpha1", Kind: "ControlPlane"}

// DefaultSelector selects the ControlPlanes of WDSes, as KubeStellar's own
// controllers do.
const DefaultSelector = "kflex.kubestellar.io/cptype=wds"

// Reasons a ControlPlane is not used, one word each, as the metric and the
// Events report them.
const (
	ReasonNotReady         = "NotReady"
	ReasonNoSecretRef      = "NoSecretRef"
	ReasonSecretNotAllowed = "SecretNamespaceNotAllowed"
	ReasonSecretUnreadable = "SecretUnreadable"
	ReasonNoKubeconfig     = "NoKubeconfig"
	// ReasonSharedKubeconfig means another ControlPlane already serves the
	// same kubeconfig: one WDS would be two spaces.
	ReasonSharedKubeconfig = "SharedKubeconfig"
)

// controlPlane is what the provider reads of a ControlPlane.
type controlPlane struct {
	Metadata struct {
		Name              string            `json:"name"`
		Labels            map[string]string `json:"labels"`
		DeletionTimestamp *string           `json:"deletionTimestamp"`
	} `json:"metadata"`
	Status struct {
		Conditions []condition `json:"conditions"`
		SecretRef  *SecretRef  `json:"secretRef"`
	} `json:"status"`
}

// condition is one of a ControlPlane's status conditions.
type condition struct {
	Type   string `json:"type"`
	Status string `json:"status"`
}

// SecretRef names the Secret holding a ControlPlane's kubeconfigs.
type SecretRef struct {
	Namespace    string `json:"namespace"`
	Name         string `json:"name"`
	Key          string `json:"key"`
	InClusterKey string `json:"inClusterKey"`
}

// parseControlPlane reads the fields the provider uses.
func parseControlPlane(u *unstructured.Unstructured) (*controlPlane, error) {
	cp := &controlPlane{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cp); err != nil {
		return nil, fmt.Errorf("reading ControlPlane %s: %w", u.GetName(), err)
	}
	return cp, nil
}

// ready reports whether the ControlPlane's Ready condition is True.
func (cp *controlPlane) ready() bool {
	return slices.ContainsFunc(cp.Status.Conditions, func(c condition) bool {
		return c.Type == "Ready" && c.Status == "True"
	})
}

// Decision is what the provider, and Discover, do with one ControlPlane.
type Decision struct {
	// Ignore is true for a ControlPlane the selector does not select (an ITS,
	// say) or that is being deleted: no space, and nothing to report.
	Ignore bool
	// Reason and Message say why a selected ControlPlane is not a space;
	// empty when it is one, through Secret (key Key).
	Reason, Message string
	// Secret names the Secret and the key to read the kubeconfig from.
	Secret *SecretRef
	// Key is the data key of the kubeconfig in the Secret.
	Key string
}

// Decide decides whether the ControlPlane u is a space, as the options say;
// an error means u does not read as a ControlPlane.
func (o Options) Decide(u *unstructured.Unstructured) (Decision, error) {
	cp, err := parseControlPlane(u)
	if err != nil {
		return Decision{}, err
	}
	return decide(cp, o.Selector, o.InCluster, o.SecretNamespaces), nil
}

// decide decides, from the ControlPlane alone, whether it is a space and
// where its kubeconfig is: the in-cluster key when inCluster (the stager
// runs in the hosting cluster), else the external one; only in the allowed
// namespaces when any are given.
func decide(cp *controlPlane, selector labels.Selector, inCluster bool, allowedNamespaces []string) Decision {
	if cp.Metadata.DeletionTimestamp != nil || !selector.Matches(labels.Set(cp.Metadata.Labels)) {
		return Decision{Ignore: true}
	}
	if !cp.ready() {
		return Decision{Reason: ReasonNotReady, Message: "the ControlPlane's Ready condition is not True"}
	}
	ref := cp.Status.SecretRef
	if ref == nil || ref.Name == "" || ref.Namespace == "" {
		return Decision{Reason: ReasonNoSecretRef, Message: "the ControlPlane's status.secretRef names no Secret"}
	}
	if len(allowedNamespaces) > 0 && !slices.Contains(allowedNamespaces, ref.Namespace) {
		return Decision{Reason: ReasonSecretNotAllowed, Message: fmt.Sprintf("its Secret is in namespace %q, which --kubeflex-secret-namespaces does not list", ref.Namespace)}
	}
	key, which := ref.Key, "key"
	if inCluster && ref.InClusterKey != "" {
		key, which = ref.InClusterKey, "inClusterKey"
	}
	if key == "" {
		return Decision{Reason: ReasonNoSecretRef, Message: fmt.Sprintf("the ControlPlane's status.secretRef.%s is empty", which)}
	}
	return Decision{Secret: ref, Key: key}
}
