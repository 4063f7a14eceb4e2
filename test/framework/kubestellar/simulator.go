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

// Package kubestellar simulates, inside one WDS kube-apiserver, the parts of
// KubeStellar v0.30.0 that the workload stager depends on:
//
//   - the binding controller: for every BindingPolicy it adds KubeStellar's
//     finalizer, resolves the downsync clauses ("what") against the workload
//     objects and the clusterSelectors ("where") against a simulated
//     inventory of WECs, writes the Binding of the same name (owned by the
//     BindingPolicy) and then writes the BindingPolicy's status
//     (observedGeneration, conditions and errors, as KubeStellar does);
//   - the status controller: it sets the StatusCollectorsAvailable condition
//     on each Binding and maintains one CombinedStatus per (workload object,
//     BindingPolicy) pair whose modulation names at least one
//     StatusCollector, with the results supplied by a Reporter;
//   - the Kubernetes garbage collector, which envtest lacks: Bindings whose
//     owning BindingPolicy is gone are deleted.
//
// Not simulated: transport to WECs (and the transport controller's Binding
// finalizer and status), CEL evaluation of StatusCollectors (a Reporter
// stands in for it), singleton/multi-WEC reported state in workload objects'
// .status and the kubestellar.io/executing-count label, CustomTransforms.
//
// The simulator polls: every pass lists everything it needs and converges the
// apiserver towards KubeStellar's desired state, writing only what differs.
// A pass runs every 100ms (WithInterval), on Resync, or synchronously with
// SyncOnce.
//
// Run at most one Simulator per apiserver: like KubeStellar, it owns every
// Binding and CombinedStatus there (it deletes the CombinedStatuses it does
// not want). Deleting a BindingPolicy waits for the simulator to remove
// KubeStellar's finalizer, unless WithoutBindingPolicyFinalizer is used.
package kubestellar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kubestellar/workload-stager/internal/rollout"
)

const (
	// BindingPolicyFinalizer is the finalizer KubeStellar's binding
	// controller adds to every BindingPolicy and removes when the
	// BindingPolicy is being deleted.
	BindingPolicyFinalizer = "bindingpolicy.kubestellar.io/kscontroller"

	// ClusterScopedReportNamespace is the namespace of the CombinedStatus
	// objects of cluster-scoped workload objects. The simulator creates it,
	// as KubeStellar's status controller does.
	ClusterScopedReportNamespace = "kubestellar-report"

	// DefaultInterval is the default time between two passes of Run.
	DefaultInterval = 100 * time.Millisecond
)

// CombinedStatusName returns the name KubeStellar gives the CombinedStatus of
// a (workload object, BindingPolicy) pair: "<object UID>.<BindingPolicy UID>".
func CombinedStatusName(objectUID, bindingPolicyUID types.UID) string {
	return fmt.Sprintf("%s.%s", objectUID, bindingPolicyUID)
}

// CombinedStatusNamespace returns the namespace of the CombinedStatus of a
// workload object in the given namespace: the same namespace, or
// ClusterScopedReportNamespace for a cluster-scoped object ("").
func CombinedStatusNamespace(objectNamespace string) string {
	if objectNamespace == metav1.NamespaceNone {
		return ClusterScopedReportNamespace
	}
	return objectNamespace
}

// Cluster is a simulated WEC: an entry in the ITS inventory, matched by
// BindingPolicy clusterSelectors against its labels.
type Cluster struct {
	// Name is the inventory name, used as the Binding destination clusterId.
	Name string
	// Labels are the inventory object's labels.
	Labels map[string]string
}

// NameLabel is the ManagedCluster label that holds the cluster's name, as
// KubeStellar's getting-started registers its WECs (OCM sets none itself).
const NameLabel = "name"

// EnvClusters returns WECs with the given names, each labelled env=<its
// name without the trailing digits> (dev1 and dev2 are env=dev) and
// NameLabel=<its name>.
func EnvClusters(names ...string) []Cluster {
	clusters := make([]Cluster, 0, len(names))
	for _, name := range names {
		clusters = append(clusters, Cluster{Name: name,
			Labels: map[string]string{"env": strings.TrimRight(name, "0123456789"), NameLabel: name}})
	}
	return clusters
}

// ObjectRef identifies a workload object.
type ObjectRef struct {
	Group, Version, Resource, Namespace, Name string
}

// Reporter returns the status combinations KubeStellar would report in the
// CombinedStatus of one workload object placed by the named BindingPolicy on
// the given destination clusters (sorted names). Returning nil means "no rows
// yet": the simulator then reports, for each StatusCollector named by the
// object's modulation, a result with that name, the StatusCollector's column
// names (when the StatusCollector object exists, else none) and no rows.
//
// The results are sorted by name (as KubeStellar does); nil columnNames and
// row columns are written as empty lists. A Reporter is called on every pass
// for every such object, from the goroutine running the pass; it must be
// safe for that and cheap. After changing what it returns, call Resync (or
// SyncOnce).
type Reporter func(bindingPolicy string, obj ObjectRef, destinations []string) []ksv1alpha1.NamedStatusCombination

// Option configures a Simulator.
type Option func(*Simulator)

// WithReporter sets the Reporter that supplies CombinedStatus results.
func WithReporter(r Reporter) Option {
	return func(s *Simulator) { s.reporter = r }
}

// WithResources sets the resources scanned for workload objects when
// resolving downsync clauses, replacing DefaultResources. Resources that the
// apiserver does not (yet) serve are skipped until it does.
func WithResources(gvrs ...schema.GroupVersionResource) Option {
	return func(s *Simulator) { s.resources = slices.Clone(gvrs) }
}

// WithInterval sets the time between two passes of Run (default
// DefaultInterval).
func WithInterval(d time.Duration) Option {
	return func(s *Simulator) { s.interval = d }
}

// WithoutBindingPolicyFinalizer stops the simulator from adding
// BindingPolicyFinalizer to BindingPolicies (KubeStellar adds it, so that
// deleting a BindingPolicy waits for the simulator). An existing finalizer is
// still removed from BindingPolicies being deleted.
func WithoutBindingPolicyFinalizer() Option {
	return func(s *Simulator) { s.addFinalizer = false }
}

// WithLogger sets the logger that reports failed passes of Run (default:
// discard).
func WithLogger(l logr.Logger) Option {
	return func(s *Simulator) { s.log = l }
}

// DefaultResources returns the resources scanned by default: apps/v1
// deployments, v1 configmaps, v1 services and v1 namespaces.
func DefaultResources() []schema.GroupVersionResource {
	return []schema.GroupVersionResource{
		{Group: "apps", Version: "v1", Resource: "deployments"},
		{Version: "v1", Resource: "configmaps"},
		{Version: "v1", Resource: "services"},
		{Version: "v1", Resource: "namespaces"},
	}
}

// Simulator plays KubeStellar v0.30.0's binding and status controllers for
// one WDS; see the package documentation. Create it with New; its methods
// are safe for concurrent use.
type Simulator struct {
	client       client.Client
	reporter     Reporter
	resources    []schema.GroupVersionResource
	interval     time.Duration
	addFinalizer bool
	log          logr.Logger

	// PassLoop makes the passes (SyncOnce, Resync, Passes), one at a time.
	*PassLoop

	mu       sync.Mutex // guards clusters
	clusters []Cluster

	// Only passes use these, one at a time.
	reportNSOK bool
	gvrToGVK   map[schema.GroupVersionResource]schema.GroupVersionKind
}

// New returns a Simulator that works in the apiserver of the given client
// with the given simulated WEC inventory. The client must read directly from
// the apiserver (not from a cache) and have the KubeStellar control/v1alpha1
// and client-go types in its scheme; it must be allowed to list the
// scanned resources, Namespaces, and all KubeStellar objects, and to write
// BindingPolicies, Bindings, CombinedStatuses and Namespaces.
func New(c client.Client, clusters []Cluster, opts ...Option) *Simulator {
	s := &Simulator{
		client:       c,
		resources:    DefaultResources(),
		interval:     DefaultInterval,
		addFinalizer: true,
		log:          logr.Discard(),
		gvrToGVK:     map[schema.GroupVersionResource]schema.GroupVersionKind{},
	}
	for _, o := range opts {
		o(s)
	}
	s.PassLoop = NewPassLoop("KubeStellar simulator", s.interval, s.pass)
	s.SetClusters(clusters)
	return s
}

// SetClusters replaces the simulated WEC inventory and requests a pass.
func (s *Simulator) SetClusters(clusters []Cluster) {
	cp := make([]Cluster, len(clusters))
	for i, c := range clusters {
		cp[i] = Cluster{Name: c.Name, Labels: maps.Clone(c.Labels)}
	}
	s.mu.Lock()
	s.clusters = cp
	s.mu.Unlock()
	s.Resync()
}

// Run makes passes every interval (and on Resync) until ctx is done, then
// returns nil. Failed passes are logged (once per distinct error) and
// retried by the next pass.
func (s *Simulator) Run(ctx context.Context) error {
	s.PassLoop.Run(ctx, s.log)
	return nil
}

// pass converges the apiserver towards what KubeStellar would make of it.
func (s *Simulator) pass(ctx context.Context) error {
	var errs []error
	addErr := func(err error) { errs = append(errs, err) }

	if !s.reportNSOK {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ClusterScopedReportNamespace}}
		if err := s.client.Create(ctx, ns); err == nil || apierrors.IsAlreadyExists(err) {
			s.reportNSOK = true
		} else {
			addErr(fmt.Errorf("creating namespace %s: %w", ClusterScopedReportNamespace, err))
		}
	}

	var policies ksv1alpha1.BindingPolicyList
	var bindingList ksv1alpha1.BindingList
	var combinedStatuses ksv1alpha1.CombinedStatusList
	var collectorList ksv1alpha1.StatusCollectorList
	var namespaces corev1.NamespaceList
	for _, list := range []client.ObjectList{&policies, &bindingList, &combinedStatuses, &collectorList, &namespaces} {
		if err := s.client.List(ctx, list); err != nil {
			return errors.Join(append(errs, fmt.Errorf("listing %T: %w", list, err))...)
		}
	}
	objects, err := s.listWorkload(ctx)
	if err != nil {
		addErr(err)
	}

	nsLabelsByName := map[string]map[string]string{}
	for i := range namespaces.Items {
		nsLabelsByName[namespaces.Items[i].Name] = namespaces.Items[i].Labels
	}
	nsLabels := func(name string) (map[string]string, bool) {
		l, ok := nsLabelsByName[name]
		return l, ok
	}
	collectors := map[string]*ksv1alpha1.StatusCollectorSpec{}
	for i := range collectorList.Items {
		collectors[collectorList.Items[i].Name] = &collectorList.Items[i].Spec
	}
	s.mu.Lock()
	clusters := s.clusters
	s.mu.Unlock()

	slices.SortFunc(policies.Items, func(a, b ksv1alpha1.BindingPolicy) int { return strings.Compare(a.Name, b.Name) })
	policyUIDs := sets.New[types.UID]()
	for i := range policies.Items {
		policyUIDs.Insert(policies.Items[i].UID)
	}

	// The garbage collector: a Binding goes when all its owners are gone
	// (owners other than BindingPolicies cannot be checked; they are
	// assumed present).
	bindings := map[string]*ksv1alpha1.Binding{}
	for i := range bindingList.Items {
		b := &bindingList.Items[i]
		if ownersGone(b.OwnerReferences, policyUIDs) {
			if err := s.client.Delete(ctx, b, client.Preconditions{UID: &b.UID}); err != nil && !apierrors.IsNotFound(err) {
				addErr(fmt.Errorf("deleting Binding %s of a deleted BindingPolicy: %w", b.Name, err))
			}
			continue
		}
		bindings[b.Name] = b
	}

	// The binding controller's BindingPolicy handling: finalizer and
	// resolution.
	var resolutions []*resolution
	for i := range policies.Items {
		policy := &policies.Items[i]
		if policy.DeletionTimestamp != nil {
			if controllerutil.ContainsFinalizer(policy, BindingPolicyFinalizer) {
				controllerutil.RemoveFinalizer(policy, BindingPolicyFinalizer)
				if err := s.client.Update(ctx, policy); err != nil && !apierrors.IsNotFound(err) {
					addErr(fmt.Errorf("removing finalizer from BindingPolicy %s: %w", policy.Name, err))
				}
			}
			continue // no resolution: no Binding update, no CombinedStatuses
		}
		if s.addFinalizer && !controllerutil.ContainsFinalizer(policy, BindingPolicyFinalizer) {
			controllerutil.AddFinalizer(policy, BindingPolicyFinalizer)
			if err := s.client.Update(ctx, policy); err != nil {
				addErr(fmt.Errorf("adding finalizer to BindingPolicy %s: %w", policy.Name, err))
				continue
			}
		}
		destinations, err := selectClusters(policy.Spec.ClusterSelectors, clusters)
		if err != nil {
			addErr(fmt.Errorf("BindingPolicy %s: %w", policy.Name, err))
			continue
		}
		resolutions = append(resolutions, resolve(policy, destinations, objects, nsLabels))
	}

	// The binding controller's Binding sync plus the status controller's
	// StatusCollectorsAvailable condition.
	for _, res := range resolutions {
		if err := s.syncBinding(ctx, res, bindings[res.policy.Name], resolutions, collectors); err != nil {
			addErr(err)
		}
	}

	// The status controller's CombinedStatuses.
	desired := map[types.NamespacedName]*ksv1alpha1.CombinedStatus{}
	for _, res := range resolutions {
		for _, id := range res.sortedObjectIDs() {
			data := res.objects[id]
			if data.modulation.statusCollectors.Len() == 0 {
				continue
			}
			cs := s.desiredCombinedStatus(res, id, data, collectors)
			desired[types.NamespacedName{Namespace: cs.Namespace, Name: cs.Name}] = cs
		}
	}
	for i := range combinedStatuses.Items {
		existing := &combinedStatuses.Items[i]
		key := types.NamespacedName{Namespace: existing.Namespace, Name: existing.Name}
		want, ok := desired[key]
		if !ok {
			if err := s.client.Delete(ctx, existing); err != nil && !apierrors.IsNotFound(err) {
				addErr(fmt.Errorf("deleting CombinedStatus %s: %w", key, err))
			}
			continue
		}
		delete(desired, key)
		if combinedStatusMatches(existing, want) {
			continue
		}
		updated := existing.DeepCopy()
		if updated.Labels == nil {
			updated.Labels = map[string]string{}
		}
		maps.Copy(updated.Labels, want.Labels)
		updated.OwnerReferences = want.OwnerReferences
		updated.Results = want.Results
		if err := s.client.Update(ctx, updated); err != nil && !apierrors.IsNotFound(err) {
			addErr(fmt.Errorf("updating CombinedStatus %s: %w", key, err))
		}
	}
	for _, key := range slices.SortedFunc(maps.Keys(desired), func(a, b types.NamespacedName) int {
		return strings.Compare(a.String(), b.String())
	}) {
		if err := s.client.Create(ctx, desired[key]); err != nil {
			addErr(fmt.Errorf("creating CombinedStatus %s: %w", key, err))
		}
	}
	return errors.Join(errs...)
}

// ownersGone reports whether an object with these ownerReferences would be
// garbage: it has at least one owner and every BindingPolicy owner is gone
// (other owners count as present).
func ownersGone(refs []metav1.OwnerReference, policyUIDs sets.Set[types.UID]) bool {
	if len(refs) == 0 {
		return false
	}
	for _, ref := range refs {
		gv, _ := schema.ParseGroupVersion(ref.APIVersion)
		if gv.Group != ksv1alpha1.SchemeGroupVersion.Group || ref.Kind != "BindingPolicy" || policyUIDs.Has(ref.UID) {
			return false
		}
	}
	return true
}

// listWorkload lists the objects of every scanned resource. Resources the
// apiserver does not serve are skipped silently.
func (s *Simulator) listWorkload(ctx context.Context) ([]workloadObject, error) {
	var objects []workloadObject
	var errs []error
	for _, gvr := range s.resources {
		gvk, ok := s.gvrToGVK[gvr]
		if !ok {
			var err error
			gvk, err = s.client.RESTMapper().KindFor(gvr)
			if err != nil {
				if !meta.IsNoMatchError(err) {
					errs = append(errs, fmt.Errorf("mapping %s to a kind: %w", gvr, err))
				}
				continue
			}
			s.gvrToGVK[gvr] = gvk
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := s.client.List(ctx, list); err != nil {
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				delete(s.gvrToGVK, gvr)
				continue
			}
			errs = append(errs, fmt.Errorf("listing %s: %w", gvr, err))
			continue
		}
		for i := range list.Items {
			obj := &list.Items[i]
			objGVK := obj.GroupVersionKind()
			if objGVK.Kind == "" {
				objGVK = gvk
			}
			objects = append(objects, workloadObject{
				id: objectID{
					GVK:        objGVK,
					Resource:   gvr.Resource,
					ObjectName: objectName{Namespace: obj.GetNamespace(), Name: obj.GetName()},
				},
				uid:             obj.GetUID(),
				resourceVersion: obj.GetResourceVersion(),
				labels:          obj.GetLabels(),
			})
		}
	}
	return objects, errors.Join(errs...)
}

// syncBinding mirrors the binding controller's syncBinding (write the
// Binding if it differs from the resolution, then the BindingPolicy status)
// with the status controller's StatusCollectorsAvailable condition in
// between.
func (s *Simulator) syncBinding(ctx context.Context, res *resolution, existing *ksv1alpha1.Binding,
	all []*resolution, collectors map[string]*ksv1alpha1.StatusCollectorSpec) error {
	policy := res.policy
	binding := existing
	switch {
	case binding == nil:
		binding = &ksv1alpha1.Binding{
			ObjectMeta: metav1.ObjectMeta{
				Name:            policy.Name,
				OwnerReferences: []metav1.OwnerReference{res.ownerReference()},
			},
			Spec: res.bindingSpec(),
		}
		if err := s.client.Create(ctx, binding); err != nil {
			return fmt.Errorf("creating Binding %s: %w", policy.Name, err)
		}
	case !res.matchesBindingSpec(&binding.Spec):
		binding = binding.DeepCopy()
		binding.Spec = res.bindingSpec()
		binding.OwnerReferences = []metav1.OwnerReference{res.ownerReference()}
		if err := s.client.Update(ctx, binding); err != nil {
			return fmt.Errorf("updating Binding %s: %w", policy.Name, err)
		}
	}

	// Status controller: StatusCollectorsAvailable.
	var missing []string
	for _, name := range res.statusCollectorNames() {
		if collectors[name] == nil {
			missing = append(missing, name)
		}
	}
	condition := ksv1alpha1.BindingPolicyCondition{
		Type:    ksv1alpha1.TypeStatusCollectorsAvailable,
		Status:  corev1.ConditionTrue,
		Reason:  ksv1alpha1.ReasonReconcileSuccess,
		Message: "All StatusCollector(s) are available",
	}
	if len(missing) > 0 {
		condition = ksv1alpha1.BindingPolicyCondition{
			Type:    ksv1alpha1.TypeStatusCollectorsAvailable,
			Status:  corev1.ConditionFalse,
			Reason:  ksv1alpha1.ReasonReconcileError,
			Message: fmt.Sprintf("Missing StatusCollector(s) %s", missing),
		}
	}
	withCondition := binding.DeepCopy()
	if conditions, changed := ksv1alpha1.SetCondition(withCondition.Status.Conditions, condition); changed {
		withCondition.Status.Conditions = conditions
		if err := s.client.Status().Update(ctx, withCondition); err != nil {
			return fmt.Errorf("updating status of Binding %s: %w", policy.Name, err)
		}
		binding = withCondition
	}

	// Binding controller: BindingPolicy status.
	policyErrors := singletonErrors(res, all)
	status := ksv1alpha1.BindingPolicyStatus{
		ObservedGeneration: policy.Generation,
		Conditions:         binding.Status.Conditions,
		Errors:             append(policyErrors, binding.Status.Errors...),
	}
	if !policyStatusEqual(policy.Status, status) {
		withStatus := policy.DeepCopy()
		withStatus.Status = status
		if err := s.client.Status().Update(ctx, withStatus); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("updating status of BindingPolicy %s: %w", policy.Name, err)
		}
	}
	return nil
}

// singletonErrors mirrors the BindingPolicy status error that KubeStellar
// reports when singleton reported state is requested for objects that do not
// go to exactly one WEC (at most four examples).
func singletonErrors(res *resolution, all []*resolution) []string {
	type objectWithNumWECs struct {
		ObjectID objectID
		NumWECs  int
	}
	var bad []objectWithNumWECs
	for _, id := range res.sortedObjectIDs() {
		want := false
		wecs := sets.New[string]()
		for _, other := range all {
			if data, ok := other.objects[id]; ok && data.modulation.wantSingleton {
				want = true
				wecs = wecs.Union(other.destinations)
			}
		}
		if want && wecs.Len() != 1 {
			bad = append(bad, objectWithNumWECs{id, wecs.Len()})
			if len(bad) > 3 {
				break
			}
		}
	}
	if len(bad) == 0 {
		return nil
	}
	data, err := json.Marshal(bad)
	if err != nil {
		return []string{fmt.Sprintf("Failed to json.Marshal some example blighted objects (%#v): %s", bad, err)}
	}
	return []string{fmt.Sprintf("Singleton reported status return is requested but some objects have the wrong number of associated WECs, for example: %s", string(data))}
}

func policyStatusEqual(a, b ksv1alpha1.BindingPolicyStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration || !slices.Equal(a.Errors, b.Errors) {
		return false
	}
	if len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		ca, cb := a.Conditions[i], b.Conditions[i]
		if !ksv1alpha1.AreConditionsEqual(ca, cb) || !ca.LastTransitionTime.Equal(&cb.LastTransitionTime) {
			return false
		}
	}
	return true
}

// desiredCombinedStatus mirrors combinedStatusResolution.generateCombinedStatus,
// with the results from the Reporter.
func (s *Simulator) desiredCombinedStatus(res *resolution, id objectID, data objectData,
	collectors map[string]*ksv1alpha1.StatusCollectorSpec) *ksv1alpha1.CombinedStatus {
	destinations := sets.List(res.destinations)
	var results []ksv1alpha1.NamedStatusCombination
	if s.reporter != nil {
		results = s.reporter(res.policy.Name, id.ref(), destinations)
	}
	if results == nil {
		for _, name := range sets.List(data.modulation.statusCollectors) {
			results = append(results, ksv1alpha1.NamedStatusCombination{
				Name:        name,
				ColumnNames: columnNames(collectors[name]),
			})
		}
	}
	results = normalizeResults(results)
	return &ksv1alpha1.CombinedStatus{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: CombinedStatusNamespace(id.ObjectName.Namespace),
			Name:      CombinedStatusName(data.uid, res.policy.UID),
			Labels: map[string]string{
				rollout.StatusLabelAPIGroup:      id.GVK.Group,
				rollout.StatusLabelResource:      id.Resource,
				rollout.StatusLabelNamespace:     id.ObjectName.Namespace,
				rollout.StatusLabelName:          id.ObjectName.Name,
				rollout.StatusLabelBindingPolicy: res.policy.Name,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: id.GVK.GroupVersion().String(),
				Kind:       id.GVK.Kind,
				Name:       id.ObjectName.Name,
				UID:        data.uid,
			}},
		},
		Results: results,
	}
}

// columnNames mirrors the column names KubeStellar reports for a
// StatusCollector: the select names, or else the groupBy names followed by
// the combinedFields names. A missing StatusCollector has none.
func columnNames(spec *ksv1alpha1.StatusCollectorSpec) []string {
	names := []string{}
	if spec == nil {
		return names
	}
	if len(spec.Select) > 0 {
		for _, e := range spec.Select {
			names = append(names, e.Name)
		}
		return names
	}
	for _, e := range spec.GroupBy {
		names = append(names, e.Name)
	}
	for _, a := range spec.CombinedFields {
		names = append(names, a.Name)
	}
	return names
}

// normalizeResults returns a deep copy sorted by name, with nil columnNames
// and row columns replaced by empty lists (the CRD requires them).
func normalizeResults(in []ksv1alpha1.NamedStatusCombination) []ksv1alpha1.NamedStatusCombination {
	out := make([]ksv1alpha1.NamedStatusCombination, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
		if out[i].ColumnNames == nil {
			out[i].ColumnNames = []string{}
		}
		for j := range out[i].Rows {
			if out[i].Rows[j].Columns == nil {
				out[i].Rows[j].Columns = []ksv1alpha1.Value{}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b ksv1alpha1.NamedStatusCombination) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// combinedStatusMatches reports whether an existing CombinedStatus already
// has the desired labels, owner and results (compared as JSON values).
// Labels not the simulator's are left be: kcp labels every object of a
// resource an APIExport claims at every write, and removing that label would
// rewrite each CombinedStatus at every pass.
func combinedStatusMatches(existing, want *ksv1alpha1.CombinedStatus) bool {
	if !labels.SelectorFromSet(want.Labels).Matches(labels.Set(existing.Labels)) {
		return false
	}
	if !reflect.DeepEqual(jsonValue(existing.OwnerReferences), jsonValue(want.OwnerReferences)) {
		return false
	}
	return reflect.DeepEqual(jsonValue(existing.Results), jsonValue(want.Results))
}

// jsonValue returns v as a generic JSON value, so that equal JSON compares
// equal whatever its Go representation (nil vs empty omitted lists, raw
// JSON whitespace).
func jsonValue(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return err.Error()
	}
	if s, ok := out.([]any); ok && len(s) == 0 {
		return nil
	}
	return out
}
