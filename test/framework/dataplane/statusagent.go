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

package dataplane

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// DefaultStatusInterval is the default time between two passes of a
	// status agent.
	DefaultStatusInterval = 250 * time.Millisecond

	// SingletonStatusLabel is the label KubeStellar puts on a workload
	// object whose status is returned as is; the status add-on copies it
	// from the object in the WEC to its WorkStatus.
	SingletonStatusLabel = "managed-by.kubestellar.io/singletonstatus"
	// transportLabelPrefix and managedByLabelPrefix start the labels by
	// which the status add-on tells KubeStellar's ManifestWorks.
	transportLabelPrefix = "transport.kubestellar.io/"
	managedByLabelPrefix = "managed-by.kubestellar.io"

	// maxNameLength is the status add-on's limit on WorkStatus names.
	maxNameLength = 253
)

var (
	// WorkStatusGVK is KubeStellar's WorkStatus, written by the status
	// add-on in the ITS.
	WorkStatusGVK = schema.GroupVersionKind{Group: "control.kubestellar.io", Version: "v1alpha1", Kind: "WorkStatus"}
	// ManifestWorkGVK is OCM's ManifestWork, in the ITS.
	ManifestWorkGVK = schema.GroupVersionKind{Group: "work.open-cluster-management.io", Version: "v1", Kind: "ManifestWork"}
	// appliedManifestWorks is OCM's AppliedManifestWork, in a WEC.
	appliedManifestWorks = schema.GroupVersionResource{Group: "work.open-cluster-management.io", Version: "v1", Resource: "appliedmanifestworks"}
)

// WorkStatusName returns the name KubeStellar's OCM status add-on
// (v0.2.0-rc17, pkg/util.BuildWorkstatusName) gives the WorkStatus of an
// object applied in a WEC: "<AppliedManifestWork UID>-<group><version>-<kind>-<namespace>-<name>",
// lowercase but for the namespace and name, cut at 253 characters.
func WorkStatusName(appliedManifestWorkUID string, gvk schema.GroupVersionKind, namespace, name string) string {
	n := fmt.Sprintf("%s-%s-%s-%s-%s",
		appliedManifestWorkUID,
		strings.ToLower(strings.ReplaceAll(gvk.GroupVersion().String(), "/", "")),
		strings.ToLower(gvk.Kind),
		namespace,
		name)
	if len(n) > maxNameLength {
		n = n[:maxNameLength]
	}
	return n
}

// StatusAgent stands in for KubeStellar's OCM status add-on agent in one WEC
// (the add-on's module is not served here). Each pass it reads the
// AppliedManifestWorks OCM's work agent wrote in the WEC and, for every
// object they list that exists there, makes the ITS hold the WorkStatus the
// add-on would: in the cluster's namespace, named by WorkStatusName, with
// the ManifestWork's labels (and the object's singleton-status label), the
// ManifestWork as controlling owner, spec.sourceRef naming the object and
// the object's .status written through the status subresource. It skips
// ManifestWorks without KubeStellar's labels, as the add-on does, and
// deletes the WorkStatuses of objects that are gone. Where the add-on
// watches, it polls: a change reaches the ITS within one interval.
type StatusAgent struct {
	cluster  string
	wec      dynamic.Interface
	its      client.Client
	log      logr.Logger
	interval time.Duration

	// lastErr is the last pass's error: a repeated one is logged once.
	lastErr error
}

// NewStatusAgent returns the status agent of the WEC named cluster.
func NewStatusAgent(cluster string, wec *rest.Config, its client.Client, log logr.Logger, interval time.Duration) *StatusAgent {
	if interval <= 0 {
		interval = DefaultStatusInterval
	}
	return &StatusAgent{cluster: cluster, wec: dynamic.NewForConfigOrDie(wec), its: its, log: log, interval: interval}
}

// Run makes passes until ctx ends.
func (a *StatusAgent) Run(ctx context.Context) {
	t := time.NewTicker(a.interval)
	defer t.Stop()
	for {
		err := a.pass(ctx)
		if err != nil && !errors.Is(err, ctx.Err()) && (a.lastErr == nil || a.lastErr.Error() != err.Error()) {
			a.log.Error(err, "A status pass failed")
		}
		a.lastErr = err
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// WorkStatus is a WorkStatus as the status add-on writes it.
type WorkStatus struct {
	Namespace, Name string
	Labels          map[string]string
	// Owner, when set, is its controlling owner (the ManifestWork).
	Owner     *metav1.OwnerReference
	SourceRef map[string]any
	// Status is the object's status; nil when it reports none.
	Status map[string]any
}

// pass makes the ITS's WorkStatuses of the cluster match the WEC.
func (a *StatusAgent) pass(ctx context.Context) error {
	amws, err := a.wec.Resource(appliedManifestWorks).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing AppliedManifestWorks: %w", err)
	}
	desired := map[string]*WorkStatus{}
	var errs []error
	for i := range amws.Items {
		if err := a.desire(ctx, &amws.Items[i], desired); err != nil {
			errs = append(errs, err)
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(WorkStatusGVK.GroupVersion().WithKind(WorkStatusGVK.Kind + "List"))
	if err := a.its.List(ctx, list, client.InNamespace(a.cluster)); err != nil {
		return errors.Join(append(errs, fmt.Errorf("listing WorkStatuses: %w", err))...)
	}
	existing := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		ws := &list.Items[i]
		if _, ok := desired[ws.GetName()]; ok {
			existing[ws.GetName()] = ws
			continue
		}
		if errs != nil || !kubeStellarLabelled(ws.GetLabels()) || ws.GetDeletionTimestamp() != nil {
			continue // a failed read must not delete; others' WorkStatuses are not ours
		}
		if err := a.its.Delete(ctx, ws); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting WorkStatus %s/%s: %w", a.cluster, ws.GetName(), err))
		}
	}
	for name, want := range desired {
		if err := ApplyWorkStatus(ctx, a.its, want, existing[name]); err != nil {
			errs = append(errs, fmt.Errorf("WorkStatus %s/%s: %w", a.cluster, name, err))
		}
	}
	return errors.Join(errs...)
}

// desire adds the WorkStatuses of one AppliedManifestWork's objects.
func (a *StatusAgent) desire(ctx context.Context, amw *unstructured.Unstructured, desired map[string]*WorkStatus) error {
	mwName, _, _ := unstructured.NestedString(amw.Object, "spec", "manifestWorkName")
	mw := &unstructured.Unstructured{}
	mw.SetGroupVersionKind(ManifestWorkGVK)
	if err := a.its.Get(ctx, client.ObjectKey{Namespace: a.cluster, Name: mwName}, mw); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // being deleted: the work agent removes its objects
		}
		return fmt.Errorf("reading ManifestWork %s/%s: %w", a.cluster, mwName, err)
	}
	if !kubeStellarLabelled(mw.GetLabels()) {
		return nil
	}
	resources, _, _ := unstructured.NestedSlice(amw.Object, "status", "appliedResources")
	var errs []error
	for _, r := range resources {
		res, ok := r.(map[string]any)
		if !ok {
			continue
		}
		str := func(k string) string { s, _ := res[k].(string); return s }
		gvr := schema.GroupVersionResource{Group: str("group"), Version: str("version"), Resource: str("resource")}
		obj, err := a.wec.Resource(gvr).Namespace(str("namespace")).Get(ctx, str("name"), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("reading %s %s/%s: %w", gvr, str("namespace"), str("name"), err))
			continue
		}
		if uid := str("uid"); uid != "" && uid != string(obj.GetUID()) {
			continue // a newer object of the same name, not applied yet
		}
		gvk := obj.GroupVersionKind()
		labels := maps.Clone(mw.GetLabels())
		if v, ok := obj.GetLabels()[SingletonStatusLabel]; ok {
			labels[SingletonStatusLabel] = v
		}
		status, _, _ := unstructured.NestedMap(obj.Object, "status")
		controller := true
		want := &WorkStatus{
			Namespace: a.cluster,
			Name:      WorkStatusName(string(amw.GetUID()), gvk, obj.GetNamespace(), obj.GetName()),
			Labels:    labels,
			Owner: &metav1.OwnerReference{
				APIVersion: ManifestWorkGVK.GroupVersion().String(), Kind: ManifestWorkGVK.Kind,
				Name: mw.GetName(), UID: mw.GetUID(), Controller: &controller, BlockOwnerDeletion: &controller,
			},
			SourceRef: map[string]any{
				"group": gvr.Group, "version": gvr.Version, "resource": gvr.Resource,
				"kind": gvk.Kind, "namespace": obj.GetNamespace(), "name": obj.GetName(),
			},
			Status: status,
		}
		desired[want.Name] = want
	}
	return errors.Join(errs...)
}

// kubeStellarLabelled says whether labels mark a ManifestWork (or its
// WorkStatus) as KubeStellar's, as the add-on tells them.
func kubeStellarLabelled(labels map[string]string) bool {
	for k := range labels {
		if strings.HasPrefix(k, transportLabelPrefix) || strings.HasPrefix(k, managedByLabelPrefix) {
			return true
		}
	}
	return false
}

// ApplyWorkStatus makes the ITS hold want, as the status add-on writes a
// WorkStatus: metadata and spec at creation (and the singleton-status label
// later, which the add-on adds but never removes), then .status through the
// status subresource. existing is the WorkStatus the ITS holds, or nil.
func ApplyWorkStatus(ctx context.Context, its client.Client, want *WorkStatus, existing *unstructured.Unstructured) error {
	ws := existing
	if ws == nil {
		ws = &unstructured.Unstructured{}
		ws.SetGroupVersionKind(WorkStatusGVK)
		ws.SetNamespace(want.Namespace)
		ws.SetName(want.Name)
		ws.SetLabels(want.Labels)
		if want.Owner != nil {
			ws.SetOwnerReferences([]metav1.OwnerReference{*want.Owner})
		}
		ws.Object["spec"] = map[string]any{"sourceRef": want.SourceRef}
		ws.Object["statusDetails"] = map[string]any{
			"lastGeneration":          int64(0),
			"lastGenerationIsApplied": false,
			"lastCurrencyUpdateTime":  metav1.Unix(0, 0).UTC().Format(time.RFC3339),
		}
		if err := its.Create(ctx, ws); err != nil {
			return fmt.Errorf("creating: %w", err)
		}
	} else if v, ok := want.Labels[SingletonStatusLabel]; ok && ws.GetLabels()[SingletonStatusLabel] != v {
		labels := ws.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[SingletonStatusLabel] = v
		ws.SetLabels(labels)
		if err := its.Update(ctx, ws); err != nil {
			return fmt.Errorf("labelling: %w", err)
		}
	}
	current, _, err := unstructured.NestedMap(ws.Object, "status")
	if err != nil {
		current = nil
	}
	if reflect.DeepEqual(current, want.Status) {
		return nil
	}
	if want.Status == nil {
		delete(ws.Object, "status")
	} else {
		ws.Object["status"] = want.Status
	}
	if err := its.Status().Update(ctx, ws); err != nil {
		return fmt.Errorf("writing the status: %w", err)
	}
	return nil
}
