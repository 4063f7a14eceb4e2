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

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/test/framework/dataplane"
	"github.com/kubestellar/workload-stager/test/framework/kubestellar"
)

const (
	// OriginWDSLabel is the label KubeStellar's transport puts on the
	// ManifestWorks of a WDS and the status add-on copies to their
	// WorkStatuses; KubeStellar's status controller ignores WorkStatuses
	// labelled with another WDS.
	OriginWDSLabel = "transport.kubestellar.io/originWdsName"
	// OriginBindingLabel is the label holding the name of the Binding whose
	// ManifestWork carried the object (copied the same way).
	OriginBindingLabel = "transport.kubestellar.io/originOwnerReferenceBindingKey"
	// SingletonStatusLabel is the label KubeStellar puts on a workload
	// object whose status is returned as is; the status add-on copies it
	// from the object to its WorkStatus.
	SingletonStatusLabel = dataplane.SingletonStatusLabel

	// DefaultWECsInterval is the default time between two passes of the
	// simulated WECs.
	DefaultWECsInterval = 200 * time.Millisecond
)

// Match selects reported workload objects for SetAvailable and SetStatus:
// an empty field matches anything.
type Match struct {
	// WDS is the name of the WDS the object comes from.
	WDS string
	// Cluster is the WEC (Binding destination, ManagedCluster name).
	Cluster string
	// BindingPolicy is the BindingPolicy (and Binding) that places the object.
	BindingPolicy string
	// Group is the object's API group; use CoreGroup for the core group,
	// since "" matches every group.
	Group string
	// Resource is the object's resource (lowercase plural).
	Resource string
	// Namespace and Name identify the object ("" Namespace: any namespace).
	Namespace, Name string
}

// reported is one workload object as one WEC reports it.
type reported struct {
	wds, cluster, bindingPolicy string
	group, resource             string
	namespace, name             string
}

func (m Match) matches(r reported) bool {
	return (m.WDS == "" || m.WDS == r.wds) &&
		(m.Cluster == "" || m.Cluster == r.cluster) &&
		(m.BindingPolicy == "" || m.BindingPolicy == r.bindingPolicy) &&
		(m.Group == "" || m.Group == r.group || (m.Group == CoreGroup && r.group == "")) &&
		(m.Resource == "" || m.Resource == r.resource) &&
		(m.Namespace == "" || m.Namespace == r.namespace) &&
		(m.Name == "" || m.Name == r.name)
}

// CoreGroup stands for the core API group ("") in Match.Group, where the
// empty string matches every group.
const CoreGroup = "core"

// rule is one SetAvailable or SetStatus call.
type rule struct {
	match Match
	// available is set by SetAvailable.
	available *int64
	// status is set by SetStatus (nil: no status).
	status map[string]any
}

// WECs simulates, for every WDS of a Stack, what the WECs and KubeStellar's
// OCM status add-on would report: for every Binding in the WDS, every
// destination cluster and every workload object of the Binding, a WorkStatus
// in the ITS namespace of the cluster, whose .status (written through the
// status subresource) is the object's status in the WEC. The status is what
// the last matching SetAvailable or SetStatus call says; without one, a
// Deployment reports none of its replicas available yet and other objects
// report no status.
//
// WorkStatuses are written as the status add-on v0.2.0-rc17 (the one
// KubeStellar v0.30.0 installs) writes them, but for the owner reference, so
// that KubeStellar's status
// controller matches them to the WDS, the Binding and the object:
//
//   - namespace: the cluster's name (KubeStellar's WEC name);
//   - name: "<AppliedManifestWork UID>-<group><version>-<kind>-<namespace>-<name>"
//     (lowercase, cut at 253 characters), see WorkStatusName;
//   - labels: those of the ManifestWork carrying the object, which
//     KubeStellar's transport sets: OriginWDSLabel (the WDS; KubeStellar
//     ignores WorkStatuses of other WDSes) and OriginBindingLabel (the
//     Binding), plus SingletonStatusLabel when the object has it;
//   - spec.sourceRef: group, version, resource, kind, namespace and name of
//     the object (KubeStellar builds from all six the object identifier it
//     looks up in its Binding resolutions, so kind and version matter);
//   - statusDetails.lastCurrencyUpdateTime: the Unix epoch, as at creation.
//
// There is no ManifestWork (the transport controller does not run), so a
// WorkStatus has no owner; the agent deletes the WorkStatuses that no
// Binding asks for any more, as the add-on does when an object leaves a WEC.
// It owns every WorkStatus labelled with one of its WDSes.
//
// KubeStellar v0.30.0's index of WorkStatuses, which it reads when it
// re-evaluates a whole Binding, is keyed by (group, version, resource, kind,
// name, WEC), without the object's namespace and the WDS (it uses the first
// WorkStatus found); its per-WorkStatus path does tell WDSes apart by
// OriginWDSLabel. When two WDSes (or namespaces) place same-named objects on
// one WEC, giving them the same status there, as one real WEC would, avoids
// depending on that detail.
//
// The agent polls: a pass reads every Binding of every WDS and the
// WorkStatuses of the ITS and writes only what differs. Passes run every
// interval and right after SetAvailable, SetStatus, Reset and Resync.
type WECs struct {
	its      client.Client
	logger   logr.Logger
	interval time.Duration

	mu    sync.Mutex
	wdses map[string]client.Client
	rules []rule

	// PassLoop makes the passes (SyncOnce, Resync, Passes), one at a time.
	*kubestellar.PassLoop
}

// newWECs returns the agent writing into the ITS through the given client.
func newWECs(its client.Client, logger logr.Logger, interval time.Duration) *WECs {
	if interval <= 0 {
		interval = DefaultWECsInterval
	}
	w := &WECs{
		its:      its,
		logger:   logger,
		interval: interval,
		wdses:    map[string]client.Client{},
	}
	w.PassLoop = kubestellar.NewPassLoop("Simulated WECs", interval, w.pass)
	return w
}

// addWDS makes the agent serve a WDS, read through the given client (whose
// scheme must hold KubeStellar's types).
func (w *WECs) addWDS(name string, c client.Client) {
	w.mu.Lock()
	w.wdses[name] = c
	w.mu.Unlock()
	w.Resync()
}

// SetAvailable makes the matching objects report a Deployment's status with
// the given number of available (and ready) replicas, out of the replicas of
// the object's spec (1 when unset): replicas, updatedReplicas,
// readyReplicas, availableReplicas and unavailableReplicas, zeros left out
// as a Deployment's status does. It overrides earlier calls for the objects
// it matches.
func (w *WECs) SetAvailable(m Match, availableReplicas int32) {
	n := int64(max(availableReplicas, 0))
	w.addRule(rule{match: m, available: &n})
}

// SetStatus makes the matching objects report the given status (a JSON
// object: maps, slices, strings, numbers, booleans and nil); nil means no
// status, as for objects without one (ConfigMaps, ...). It overrides earlier
// calls for the objects it matches.
func (w *WECs) SetStatus(m Match, status map[string]any) {
	w.addRule(rule{match: m, status: status})
}

// Reset forgets every SetAvailable and SetStatus call.
func (w *WECs) Reset() {
	w.mu.Lock()
	w.rules = nil
	w.mu.Unlock()
	w.Resync()
}

func (w *WECs) addRule(r rule) {
	w.mu.Lock()
	w.rules = slices.DeleteFunc(w.rules, func(o rule) bool { return o.match == r.match })
	w.rules = append(w.rules, r)
	w.mu.Unlock()
	w.Resync()
}

// run runs passes until ctx is done.
func (w *WECs) run(ctx context.Context) {
	w.Run(ctx, w.logger)
}

// pass makes the ITS hold exactly the WorkStatuses the WDSes' Bindings call
// for, with the statuses configured.
func (w *WECs) pass(ctx context.Context) error {
	w.mu.Lock()
	wdses := maps.Clone(w.wdses)
	rules := slices.Clone(w.rules)
	w.mu.Unlock()

	var errs []error
	desired := map[types.NamespacedName]*dataplane.WorkStatus{}
	for _, name := range slices.Sorted(maps.Keys(wdses)) {
		if err := collectOrphanedBindings(ctx, wdses[name]); err != nil {
			errs = append(errs, fmt.Errorf("WDS %s: %w", name, err))
		}
		if err := w.collect(ctx, name, wdses[name], rules, desired); err != nil {
			errs = append(errs, fmt.Errorf("WDS %s: %w", name, err))
		}
	}
	if err := w.apply(ctx, wdses, desired, len(errs) > 0); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// collect adds the WorkStatuses one WDS calls for to desired.
func (w *WECs) collect(ctx context.Context, wds string, c client.Client, rules []rule, desired map[types.NamespacedName]*dataplane.WorkStatus) error {
	var bindings ksv1alpha1.BindingList
	if err := c.List(ctx, &bindings); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil // KubeStellar's CRDs are not there yet
		}
		return fmt.Errorf("listing Bindings: %w", err)
	}
	var errs []error
	for i := range bindings.Items {
		b := &bindings.Items[i]
		if b.DeletionTimestamp != nil || len(b.Spec.Destinations) == 0 {
			continue
		}
		type object struct {
			gvr             schema.GroupVersionResource
			namespace, name string
		}
		var objects []object
		for _, cl := range b.Spec.Workload.ClusterScope {
			objects = append(objects, object{schema.GroupVersionResource(cl.GroupVersionResource), "", cl.Name})
		}
		for _, cl := range b.Spec.Workload.NamespaceScope {
			objects = append(objects, object{schema.GroupVersionResource(cl.GroupVersionResource), cl.Namespace, cl.Name})
		}
		for _, o := range objects {
			gvk, err := c.RESTMapper().KindFor(o.gvr)
			if err != nil {
				errs = append(errs, fmt.Errorf("binding %s: kind of %s: %w", b.Name, o.gvr, err))
				continue
			}
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(gvk)
			if err := c.Get(ctx, client.ObjectKey{Namespace: o.namespace, Name: o.name}, obj); err != nil {
				if !apierrors.IsNotFound(err) {
					errs = append(errs, fmt.Errorf("binding %s: getting %s %s/%s: %w", b.Name, o.gvr, o.namespace, o.name, err))
				}
				continue // gone from the WDS: KubeStellar drops it from the Binding soon
			}
			for _, d := range b.Spec.Destinations {
				r := reported{wds: wds, cluster: d.ClusterId, bindingPolicy: b.Name,
					group: o.gvr.Group, resource: o.gvr.Resource, namespace: o.namespace, name: o.name}
				status, err := normalize(statusFor(r, gvk, obj, rules))
				if err != nil {
					errs = append(errs, fmt.Errorf("status of %s %s/%s in %s: %w", o.gvr, o.namespace, o.name, d.ClusterId, err))
					continue
				}
				labels := map[string]string{OriginWDSLabel: wds, OriginBindingLabel: b.Name}
				if v, ok := obj.GetLabels()[SingletonStatusLabel]; ok {
					labels[SingletonStatusLabel] = v
				}
				ws := &dataplane.WorkStatus{
					Namespace: d.ClusterId,
					Name:      WorkStatusName(wds, b.UID, d.ClusterId, gvk, o.namespace, o.name),
					Labels:    labels,
					SourceRef: map[string]any{
						"group": o.gvr.Group, "version": o.gvr.Version, "resource": o.gvr.Resource,
						"kind": gvk.Kind, "namespace": o.namespace, "name": o.name,
					},
					Status: status,
				}
				desired[types.NamespacedName{Namespace: ws.Namespace, Name: ws.Name}] = ws
			}
		}
	}
	return errors.Join(errs...)
}

// statusFor returns the status a WEC reports for an object: that of the last
// matching rule, else a Deployment's with no replica available, else none.
func statusFor(r reported, gvk schema.GroupVersionKind, obj *unstructured.Unstructured, rules []rule) map[string]any {
	for i := len(rules) - 1; i >= 0; i-- {
		if !rules[i].match.matches(r) {
			continue
		}
		if rules[i].available != nil {
			return deploymentStatus(obj, *rules[i].available)
		}
		return rules[i].status
	}
	if gvk.Group == "apps" && gvk.Kind == "Deployment" {
		return deploymentStatus(obj, 0)
	}
	return nil
}

// deploymentStatus returns a Deployment's status with the given number of
// available replicas, out of the object's spec.replicas (default 1); like a
// Deployment's status, it leaves zero counts out.
func deploymentStatus(obj *unstructured.Unstructured, available int64) map[string]any {
	replicas, found, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if err != nil || !found {
		replicas = 1
	}
	status := map[string]any{}
	set := func(key string, v int64) {
		if v > 0 {
			status[key] = v
		}
	}
	set("replicas", replicas)
	set("updatedReplicas", replicas)
	set("readyReplicas", available)
	set("availableReplicas", available)
	set("unavailableReplicas", replicas-available)
	return status
}

// normalize returns the JSON form of a status (as read back from an API
// server: int64 and float64 numbers, []any, map[string]any).
func normalize(status map[string]any) (map[string]any, error) {
	if status == nil {
		return nil, nil
	}
	raw, err := json.Marshal(status)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := utiljson.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// WorkStatusName returns the name the OCM status add-on gives the WorkStatus
// of a workload object carried by a Binding's ManifestWork to a WEC:
// "<AppliedManifestWork UID>-<group><version>-<kind>-<namespace>-<name>",
// lowercase, cut at 253 characters. The AppliedManifestWork's UID, which in a
// real WEC is random, is derived here from the WDS, the Binding's UID and
// the cluster, so a re-created Binding (as when a BindingPolicy of the same
// name is re-created) gets new WorkStatuses, as it gets new ManifestWorks.
func WorkStatusName(wds string, bindingUID types.UID, cluster string, gvk schema.GroupVersionKind, namespace, name string) string {
	return dataplane.WorkStatusName(appliedManifestWorkUID(wds, bindingUID, cluster), gvk, namespace, name)
}

// appliedManifestWorkUID returns a UUID-shaped, deterministic stand-in for
// the UID of the AppliedManifestWork of a Binding's ManifestWork in a WEC.
func appliedManifestWorkUID(wds string, bindingUID types.UID, cluster string) string {
	sum := sha256.Sum256([]byte(wds + "\x00" + string(bindingUID) + "\x00" + cluster))
	b := sum[:16]
	b[6] = (b[6] & 0x0f) | 0x50 // version 5 (name-based)
	b[8] = (b[8] & 0x3f) | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// apply makes the ITS hold the desired WorkStatuses. WorkStatuses of the
// agent's WDSes that are not desired are deleted, unless partial says that
// some WDS could not be read completely.
func (w *WECs) apply(ctx context.Context, wdses map[string]client.Client, desired map[types.NamespacedName]*dataplane.WorkStatus, partial bool) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(workStatusGVK.GroupVersion().WithKind(WorkStatusKind + "List"))
	if err := w.its.List(ctx, list); err != nil {
		return fmt.Errorf("listing WorkStatuses in the ITS: %w", err)
	}
	existing := map[types.NamespacedName]*unstructured.Unstructured{}
	var errs []error
	for i := range list.Items {
		ws := &list.Items[i]
		key := types.NamespacedName{Namespace: ws.GetNamespace(), Name: ws.GetName()}
		if _, ours := wdses[ws.GetLabels()[OriginWDSLabel]]; !ours {
			continue
		}
		if _, want := desired[key]; want {
			existing[key] = ws
			continue
		}
		if partial || ws.GetDeletionTimestamp() != nil {
			continue
		}
		if err := w.its.Delete(ctx, ws); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting WorkStatus %s: %w", key, err))
		}
	}
	for _, key := range slices.SortedFunc(maps.Keys(desired), func(a, b types.NamespacedName) int {
		return strings.Compare(a.String(), b.String())
	}) {
		if err := dataplane.ApplyWorkStatus(ctx, w.its, desired[key], existing[key]); err != nil {
			errs = append(errs, fmt.Errorf("WorkStatus %s: %w", key, err))
		}
	}
	return errors.Join(errs...)
}

// collectOrphanedBindings stands in for the Kubernetes garbage collector,
// which envtest does not run: it deletes the Bindings whose owning
// BindingPolicy is gone. KubeStellar relies on it: when a BindingPolicy is
// deleted and one of the same name created, KubeStellar leaves the old
// Binding (owned by the old BindingPolicy's UID) alone as long as its spec
// is right, and the garbage collector deletes it so that KubeStellar makes a
// new one owned by the new BindingPolicy.
func collectOrphanedBindings(ctx context.Context, c client.Client) error {
	var policies ksv1alpha1.BindingPolicyList
	if err := c.List(ctx, &policies); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil
		}
		return fmt.Errorf("listing BindingPolicies: %w", err)
	}
	live := make(map[types.UID]bool, len(policies.Items))
	for _, bp := range policies.Items {
		live[bp.UID] = true
	}
	var bindings ksv1alpha1.BindingList
	if err := c.List(ctx, &bindings); err != nil {
		return fmt.Errorf("listing Bindings: %w", err)
	}
	var errs []error
	for i := range bindings.Items {
		b := &bindings.Items[i]
		orphaned := len(b.OwnerReferences) > 0
		for _, ref := range b.OwnerReferences {
			if ref.Kind != "BindingPolicy" || live[ref.UID] {
				orphaned = false
			}
		}
		if !orphaned || b.DeletionTimestamp != nil {
			continue
		}
		uid := b.UID
		if err := c.Delete(ctx, b, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting orphaned Binding %s: %w", b.Name, err))
		}
	}
	return errors.Join(errs...)
}
