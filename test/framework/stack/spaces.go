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

package stack

// This file prepares the spaces the way KubeFlex, OCM and KubeStellar's ITS
// set-up would: KubeFlex ControlPlane objects (with kubeconfig Secrets) in the
// hosting space, and in the ITS the ManagedCluster inventory, a namespace per
// WEC and the WorkStatus API of KubeStellar's OCM status add-on.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/kubestellar"
)

const (
	// ControlPlaneTypeLabel is the label by which KubeStellar finds the
	// KubeFlex ControlPlanes of its spaces; its values are ControlPlaneTypeWDS
	// and ControlPlaneTypeITS (KubeStellar's pkg/ctrlutil).
	ControlPlaneTypeLabel = "kflex.kubestellar.io/cptype"
	// ControlPlaneTypeWDS marks the ControlPlane of a WDS.
	ControlPlaneTypeWDS = "wds"
	// ControlPlaneTypeITS marks the ControlPlane of an ITS.
	ControlPlaneTypeITS = "its"

	// ControlPlaneSecretName is the name of the Secret, in namespace
	// "<space>-system" of the hosting space, that holds the kubeconfig of a
	// space, as KubeFlex names it.
	ControlPlaneSecretName = "admin-kubeconfig"
	// ControlPlaneSecretKey is the data key of that kubeconfig (off-cluster
	// use, which is how KubeStellar runs here).
	ControlPlaneSecretKey = "kubeconfig"
	// ControlPlaneSecretInClusterKey is the data key KubeStellar reads when it
	// runs in a pod; it holds the same kubeconfig, because every space is
	// reached at 127.0.0.1 either way.
	ControlPlaneSecretInClusterKey = "kubeconfig-incluster"

	// WorkStatusGroup is the API group of the WorkStatus API (KubeStellar's
	// OCM status add-on) in the ITS.
	WorkStatusGroup = "control.kubestellar.io"
	// WorkStatusVersion is the version of the WorkStatus API.
	WorkStatusVersion = "v1alpha1"
	// WorkStatusResource is the resource of the WorkStatus API.
	WorkStatusResource = "workstatuses"
	// WorkStatusKind is the kind of a WorkStatus.
	WorkStatusKind = "WorkStatus"
)

var (
	// controlPlaneGVK is KubeFlex's ControlPlane (cluster-scoped).
	controlPlaneGVK = schema.GroupVersionKind{Group: "tenancy.kflex.kubestellar.org", Version: "v1alpha1", Kind: "ControlPlane"}
	// managedClusterGVK is OCM's ManagedCluster (cluster-scoped).
	managedClusterGVK = schema.GroupVersionKind{Group: "cluster.open-cluster-management.io", Version: "v1", Kind: "ManagedCluster"}
	// workStatusGVK is KubeStellar's WorkStatus (namespaced, in the ITS).
	workStatusGVK = schema.GroupVersionKind{Group: WorkStatusGroup, Version: WorkStatusVersion, Kind: WorkStatusKind}
)

// ControlPlaneSecretNamespace returns the namespace of the hosting space
// holding the kubeconfig Secret of the named space, "<space>-system", as
// KubeFlex names it.
func ControlPlaneSecretNamespace(space string) string {
	return space + "-system"
}

// RegisterControlPlane makes the named space known the way KubeFlex does: a
// Secret holding its kubeconfig in the hosting space, and a ControlPlane
// labelled with its type whose status (written through the status
// subresource) is Ready and whose status.secretRef points at that Secret.
// The ControlPlane is of type "external" (an existing API server adopted by
// KubeFlex); its Secret still carries both keys, because KubeStellar v0.30.0
// reads "key" when it runs outside a cluster.
func RegisterControlPlane(ctx context.Context, hosting client.Client, name, cpType string, kubeconfig []byte) error {
	ns := ControlPlaneSecretNamespace(name)
	if err := hosting.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s in the hosting space: %w", ns, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ControlPlaneSecretName},
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			ControlPlaneSecretKey:          kubeconfig,
			ControlPlaneSecretInClusterKey: kubeconfig,
		},
	}
	if err := hosting.Create(ctx, secret); err != nil {
		return fmt.Errorf("creating the kubeconfig Secret of %s in the hosting space: %w", name, err)
	}
	cp := &unstructured.Unstructured{}
	cp.SetGroupVersionKind(controlPlaneGVK)
	cp.SetName(name)
	cp.SetLabels(map[string]string{ControlPlaneTypeLabel: cpType})
	if err := unstructured.SetNestedField(cp.Object, "external", "spec", "type"); err != nil {
		return err
	}
	if err := hosting.Create(ctx, cp); err != nil {
		return fmt.Errorf("creating ControlPlane %s in the hosting space: %w", name, err)
	}
	cp.Object["status"] = map[string]any{
		"conditions":         []any{readyCondition(true)},
		"observedGeneration": cp.GetGeneration(),
		"secretRef": map[string]any{
			"namespace":    ns,
			"name":         ControlPlaneSecretName,
			"key":          ControlPlaneSecretKey,
			"inClusterKey": ControlPlaneSecretInClusterKey,
		},
	}
	if err := hosting.Status().Update(ctx, cp); err != nil {
		return fmt.Errorf("writing the status of ControlPlane %s in the hosting space: %w", name, err)
	}
	return nil
}

// readyCondition is a ControlPlane's Ready condition, as KubeFlex writes it.
func readyCondition(ready bool) map[string]any {
	status, reason := "True", "Available"
	if !ready {
		status, reason = "False", "Unavailable"
	}
	now := time.Now().UTC().Format(time.RFC3339)
	return map[string]any{"type": "Ready", "status": status, "reason": reason, "message": "",
		"lastTransitionTime": now, "lastUpdateTime": now}
}

// SetControlPlaneReady sets a ControlPlane's Ready condition, as KubeFlex
// does when its API server comes up or goes down.
func SetControlPlaneReady(ctx context.Context, hosting client.Client, name string, ready bool) error {
	cp := &unstructured.Unstructured{}
	cp.SetGroupVersionKind(controlPlaneGVK)
	if err := hosting.Get(ctx, client.ObjectKey{Name: name}, cp); err != nil {
		return fmt.Errorf("reading ControlPlane %s: %w", name, err)
	}
	if err := unstructured.SetNestedSlice(cp.Object, []any{readyCondition(ready)}, "status", "conditions"); err != nil {
		return err
	}
	if err := hosting.Status().Update(ctx, cp); err != nil {
		return fmt.Errorf("writing the status of ControlPlane %s: %w", name, err)
	}
	return nil
}

// unregisterControlPlane deletes what registerControlPlane made for the
// named space (but the namespace). Missing objects are no error.
func unregisterControlPlane(ctx context.Context, hosting client.Client, name string) error {
	cp := &unstructured.Unstructured{}
	cp.SetGroupVersionKind(controlPlaneGVK)
	cp.SetName(name)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ControlPlaneSecretNamespace(name), Name: ControlPlaneSecretName}}
	var errs []error
	for _, obj := range []client.Object{cp, secret} {
		if err := hosting.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %T %s of %s from the hosting space: %w", obj, obj.GetName(), name, err))
		}
	}
	return errors.Join(errs...)
}

// WorkStatusCRD returns a minimal CustomResourceDefinition of KubeStellar's
// WorkStatus (control.kubestellar.io/v1alpha1, namespaced, status
// subresource): spec.sourceRef{group,version,resource,kind,namespace,name},
// a free-form status (the WEC object's .status) and the status add-on's
// statusDetails. It holds what KubeStellar v0.30.0 reads and what its OCM
// status add-on (v0.2.0-rc17) writes.
func WorkStatusCRD() *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: WorkStatusResource + "." + WorkStatusGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: WorkStatusGroup,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural:     WorkStatusResource,
				Singular:   "workstatus",
				Kind:       WorkStatusKind,
				ListKind:   WorkStatusKind + "List",
				ShortNames: []string{"ws", "wss"},
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name:    WorkStatusVersion,
				Served:  true,
				Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
				},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"apiVersion": str,
						"kind":       str,
						"metadata":   {Type: "object"},
						"spec": {
							Type: "object",
							Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"sourceRef": {
									Type:     "object",
									Required: []string{"group", "namespace"},
									Properties: map[string]apiextensionsv1.JSONSchemaProps{
										"group": str, "version": str, "resource": str,
										"kind": str, "namespace": str, "name": str,
									},
								},
							},
						},
						"status": {Type: "object", XPreserveUnknownFields: &preserve},
						"statusDetails": {
							Type: "object",
							Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"lastGeneration":          {Type: "integer", Format: "int64"},
								"lastGenerationIsApplied": {Type: "boolean"},
								"lastCurrencyUpdateTime":  {Type: "string", Format: "date-time"},
							},
						},
					},
				}},
			}},
		},
	}
}

// prepareITS installs the WorkStatus CRD in the ITS and creates the inventory:
// one ManagedCluster per WEC, labelled with the cluster's labels, and the
// namespace of the same name where OCM (and the status add-on) keep that
// WEC's objects.
func prepareITS(ctx context.Context, its *environment.Space, clusters []kubestellar.Cluster) error {
	if _, err := envtest.InstallCRDs(its.Config, envtest.CRDInstallOptions{
		CRDs:         []*apiextensionsv1.CustomResourceDefinition{WorkStatusCRD()},
		PollInterval: 100 * time.Millisecond,
		MaxTime:      time.Minute,
	}); err != nil {
		return fmt.Errorf("installing the WorkStatus CRD in the ITS: %w", err)
	}
	for _, c := range clusters {
		if err := AddCluster(ctx, its.Client, c); err != nil {
			return err
		}
	}
	return nil
}

// AddCluster registers a WEC in an ITS: a ManagedCluster named after the
// cluster, carrying exactly its labels and accepted by the hub, and the
// namespace of the same name. The Stack does this for Options.Clusters;
// call it (with Stack.ITS.Client) to add a simulated WEC while the stack
// runs. With RealDataPlane it adds inventory only: no WEC applies the
// cluster's ManifestWorks.
func AddCluster(ctx context.Context, its client.Client, c kubestellar.Cluster) error {
	mc := &unstructured.Unstructured{}
	mc.SetGroupVersionKind(managedClusterGVK)
	mc.SetName(c.Name)
	mc.SetLabels(maps.Clone(c.Labels))
	if err := unstructured.SetNestedField(mc.Object, true, "spec", "hubAcceptsClient"); err != nil {
		return err
	}
	if err := its.Create(ctx, mc); err != nil {
		return fmt.Errorf("creating ManagedCluster %s in the ITS: %w", c.Name, err)
	}
	if err := its.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.Name}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s in the ITS: %w", c.Name, err)
	}
	return nil
}

// waitForKubeStellarCRDs waits until KubeStellar's CRDs (which its
// controller-manager installs by itself) are established in a WDS.
func waitForKubeStellarCRDs(ctx context.Context, wds client.Client, timeout time.Duration) error {
	names := []string{"bindingpolicies", "bindings", "combinedstatuses", "customtransforms", "statuscollectors"}
	return environment.Poll(ctx, 200*time.Millisecond, timeout, "KubeStellar's CRDs to be established", func() error {
		for _, n := range names {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := wds.Get(ctx, client.ObjectKey{Name: n + ".control.kubestellar.io"}, crd); err != nil {
				return err // not yet there, or the API server is busy: try again
			}
			if !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
				return fmt.Errorf("%s is not established", crd.Name)
			}
		}
		return nil
	})
}
