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

package kubestellar

// This file mirrors the "what" and "where" resolution of KubeStellar v0.30.0
// (pkg/binding/selectors.go testObject, pkg/binding/bindingpolicy.go,
// pkg/binding/bindingpolicy-resolution.go and pkg/ocm FindClustersBySelectors).

import (
	"fmt"
	"slices"
	"strings"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// objectID mirrors KubeStellar's util.ObjectIdentifier (field names matter:
// they appear in JSON in BindingPolicy status errors).
type objectID struct {
	GVK        schema.GroupVersionKind
	Resource   string
	ObjectName objectName
}

// objectName mirrors client-go's cache.ObjectName.
type objectName struct {
	Namespace string
	Name      string
}

func (id objectID) gvr() schema.GroupVersionResource {
	return id.GVK.GroupVersion().WithResource(id.Resource)
}

func (id objectID) String() string {
	gvr := id.GVK.GroupVersion().String() + "/" + id.Resource
	if id.ObjectName.Namespace != "" {
		return fmt.Sprintf("%s(%s/%s)", gvr, id.ObjectName.Namespace, id.ObjectName.Name)
	}
	return fmt.Sprintf("%s(%s)", gvr, id.ObjectName.Name)
}

func (id objectID) ref() ObjectRef {
	return ObjectRef{
		Group:     id.GVK.Group,
		Version:   id.GVK.Version,
		Resource:  id.Resource,
		Namespace: id.ObjectName.Namespace,
		Name:      id.ObjectName.Name,
	}
}

// workloadObject is what the simulator knows of one workload object.
type workloadObject struct {
	id              objectID
	uid             types.UID
	resourceVersion string
	labels          map[string]string
}

// modulation mirrors KubeStellar's binding.DownsyncModulation.
type modulation struct {
	createOnly       bool
	statusCollectors sets.Set[string]
	wantSingleton    bool
	wantMultiWEC     bool
}

func zeroModulation() modulation {
	return modulation{statusCollectors: sets.New[string]()}
}

func modulationFromExternal(ext ksv1alpha1.DownsyncModulation) modulation {
	return modulation{
		createOnly:       ext.CreateOnly,
		statusCollectors: sets.New(ext.StatusCollectors...),
		wantSingleton:    ext.WantSingletonReportedState,
		wantMultiWEC:     ext.WantMultiWECReportedState,
	}
}

func (m *modulation) addExternal(ext ksv1alpha1.DownsyncModulation) {
	m.createOnly = m.createOnly || ext.CreateOnly
	m.statusCollectors.Insert(ext.StatusCollectors...)
	m.wantSingleton = m.wantSingleton || ext.WantSingletonReportedState
	m.wantMultiWEC = m.wantMultiWEC || ext.WantMultiWECReportedState
}

func (m modulation) equal(o modulation) bool {
	return m.createOnly == o.createOnly && m.wantSingleton == o.wantSingleton &&
		m.wantMultiWEC == o.wantMultiWEC && m.statusCollectors.Equal(o.statusCollectors)
}

func (m modulation) toExternal() ksv1alpha1.DownsyncModulation {
	return ksv1alpha1.DownsyncModulation{
		CreateOnly:                 m.createOnly,
		StatusCollectors:           sets.List(m.statusCollectors),
		WantSingletonReportedState: m.wantSingleton,
		WantMultiWECReportedState:  m.wantMultiWEC,
	}
}

// testObject mirrors KubeStellar's Controller.testObject: it reports whether
// the object matches ANY of the clauses and the modulation merged from all
// matching clauses (createOnly and the want* bits ORed, statusCollectors
// unioned). nsLabels returns the labels of a Namespace and whether it exists.
func testObject(obj workloadObject, clauses []ksv1alpha1.DownsyncPolicyClause,
	nsLabels func(name string) (map[string]string, bool)) (bool, modulation) {
	matched := false
	mod := zeroModulation()
	for _, clause := range clauses {
		if clause.APIGroup != nil && *clause.APIGroup != obj.id.GVK.Group {
			continue
		}
		if !matchesList(clause.Resources, obj.id.Resource) {
			continue
		}
		if !matchesList(clause.Namespaces, obj.id.ObjectName.Namespace) {
			continue
		}
		if !matchesList(clause.ObjectNames, obj.id.ObjectName.Name) {
			continue
		}
		if len(clause.ObjectSelectors) > 0 && !labelsMatchAny(obj.labels, clause.ObjectSelectors) {
			continue
		}
		if len(clause.NamespaceSelectors) > 0 && !aLabelSelectorIsEmpty(clause.NamespaceSelectors) {
			// KubeStellar GETs the Namespace named by the object's namespace;
			// for a cluster-scoped object that is "" and the GET fails.
			if obj.id.ObjectName.Namespace == "" {
				continue
			}
			nsl, found := nsLabels(obj.id.ObjectName.Namespace)
			if !found || !labelsMatchAny(nsl, clause.NamespaceSelectors) {
				continue
			}
		}
		matched = true
		mod.addExternal(clause.DownsyncModulation)
	}
	return matched, mod
}

// labelsMatchAny mirrors KubeStellar's labelsMatchAny: selectors that do not
// convert are skipped.
func labelsMatchAny(labelSet map[string]string, selectors []metav1.LabelSelector) bool {
	for i := range selectors {
		sel, err := metav1.LabelSelectorAsSelector(&selectors[i])
		if err != nil {
			continue
		}
		if sel.Matches(labels.Set(labelSet)) {
			return true
		}
	}
	return false
}

// aLabelSelectorIsEmpty mirrors KubeStellar's ALabelSelectorIsEmpty.
func aLabelSelectorIsEmpty(selectors []metav1.LabelSelector) bool {
	for _, sel := range selectors {
		if len(sel.MatchExpressions) == 0 && len(sel.MatchLabels) == 0 {
			return true
		}
	}
	return false
}

// selectClusters mirrors ocm.FindClustersBySelectors: a cluster is selected
// when it matches ANY of the selectors, so an empty list selects nothing and
// an empty selector ({}) selects every cluster. A selector that does not
// convert is an error (KubeStellar then leaves the Binding alone).
func selectClusters(selectors []metav1.LabelSelector, clusters []Cluster) (sets.Set[string], error) {
	selected := sets.New[string]()
	for i := range selectors {
		sel, err := metav1.LabelSelectorAsSelector(&selectors[i])
		if err != nil {
			return nil, fmt.Errorf("failed to convert metav1.LabelSelector to labels.Selector: %w", err)
		}
		for _, c := range clusters {
			if sel.Matches(labels.Set(c.Labels)) {
				selected.Insert(c.Name)
			}
		}
	}
	return selected, nil
}

// objectData mirrors KubeStellar's binding.ObjectData.
type objectData struct {
	uid             types.UID
	resourceVersion string
	modulation      modulation
}

// resolution mirrors KubeStellar's bindingPolicyResolution for one
// BindingPolicy.
type resolution struct {
	policy       *ksv1alpha1.BindingPolicy
	destinations sets.Set[string]
	objects      map[objectID]objectData
}

// resolve computes the resolution of a BindingPolicy over the given objects.
func resolve(policy *ksv1alpha1.BindingPolicy, destinations sets.Set[string], objects []workloadObject,
	nsLabels func(name string) (map[string]string, bool)) *resolution {
	res := &resolution{policy: policy, destinations: destinations, objects: map[objectID]objectData{}}
	for _, obj := range objects {
		if matched, mod := testObject(obj, policy.Spec.Downsync, nsLabels); matched {
			res.objects[obj.id] = objectData{uid: obj.uid, resourceVersion: obj.resourceVersion, modulation: mod}
		}
	}
	return res
}

// ownerReference mirrors bindingPolicyResolver.createResolution.
func (r *resolution) ownerReference() metav1.OwnerReference {
	ref := metav1.NewControllerRef(r.policy, ksv1alpha1.SchemeGroupVersion.WithKind("BindingPolicy"))
	ref.BlockOwnerDeletion = &[]bool{false}[0]
	return *ref
}

// sortedObjectIDs returns the resolution's objects in a stable order.
func (r *resolution) sortedObjectIDs() []objectID {
	ids := make([]objectID, 0, len(r.objects))
	for id := range r.objects {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b objectID) int { return strings.Compare(a.String(), b.String()) })
	return ids
}

// bindingSpec mirrors bindingPolicyResolution.toBindingSpec.
func (r *resolution) bindingSpec() ksv1alpha1.BindingSpec {
	workload := ksv1alpha1.DownsyncObjectClauses{}
	for id, data := range r.objects {
		gvr := metav1.GroupVersionResource(id.gvr())
		if id.ObjectName.Namespace == metav1.NamespaceNone {
			workload.ClusterScope = append(workload.ClusterScope, ksv1alpha1.ClusterScopeDownsyncClause{
				ClusterScopeDownsyncObject: ksv1alpha1.ClusterScopeDownsyncObject{
					GroupVersionResource: gvr,
					Name:                 id.ObjectName.Name,
					ResourceVersion:      data.resourceVersion,
				},
				DownsyncModulation: data.modulation.toExternal(),
			})
			continue
		}
		workload.NamespaceScope = append(workload.NamespaceScope, ksv1alpha1.NamespaceScopeDownsyncClause{
			NamespaceScopeDownsyncObject: ksv1alpha1.NamespaceScopeDownsyncObject{
				GroupVersionResource: gvr,
				Namespace:            id.ObjectName.Namespace,
				Name:                 id.ObjectName.Name,
				ResourceVersion:      data.resourceVersion,
			},
			DownsyncModulation: data.modulation.toExternal(),
		})
	}
	sortWorkload(&workload)
	dests := make([]ksv1alpha1.Destination, 0, len(r.destinations))
	for _, d := range sets.List(r.destinations) {
		dests = append(dests, ksv1alpha1.Destination{ClusterId: d})
	}
	return ksv1alpha1.BindingSpec{Workload: workload, Destinations: dests}
}

// sortWorkload mirrors KubeStellar's sortBindingWorkloadObjects.
// matchesList applies a list criterion of a downsync clause: an empty list
// and the "*" entry match everything, otherwise the value must be listed.
func matchesList(list []string, value string) bool {
	return len(list) == 0 || slices.Contains(list, "*") || slices.Contains(list, value)
}

func sortWorkload(w *ksv1alpha1.DownsyncObjectClauses) {
	slices.SortFunc(w.ClusterScope, func(a, b ksv1alpha1.ClusterScopeDownsyncClause) int {
		if c := strings.Compare(a.String(), b.String()); c != 0 {
			return c
		}
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.ResourceVersion, b.ResourceVersion)
	})
	slices.SortFunc(w.NamespaceScope, func(a, b ksv1alpha1.NamespaceScopeDownsyncClause) int {
		if c := strings.Compare(a.String(), b.String()); c != 0 {
			return c
		}
		if c := strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.ResourceVersion, b.ResourceVersion)
	})
}

// matchesBindingSpec mirrors bindingPolicyResolution.matchesBindingSpec: the
// destinations and, for every object, the resource version and modulation
// must match (order does not matter).
func (r *resolution) matchesBindingSpec(spec *ksv1alpha1.BindingSpec) bool {
	if len(r.destinations) != len(spec.Destinations) {
		return false
	}
	for _, d := range spec.Destinations {
		if !r.destinations.Has(d.ClusterId) {
			return false
		}
	}
	if len(r.objects) != len(spec.Workload.ClusterScope)+len(spec.Workload.NamespaceScope) {
		return false
	}
	type key struct {
		gvr       schema.GroupVersionResource
		namespace string
		name      string
	}
	have := map[key]objectData{}
	for _, c := range spec.Workload.ClusterScope {
		have[key{schema.GroupVersionResource(c.GroupVersionResource), "", c.Name}] =
			objectData{resourceVersion: c.ResourceVersion, modulation: modulationFromExternal(c.DownsyncModulation)}
	}
	for _, c := range spec.Workload.NamespaceScope {
		have[key{schema.GroupVersionResource(c.GroupVersionResource), c.Namespace, c.Name}] =
			objectData{resourceVersion: c.ResourceVersion, modulation: modulationFromExternal(c.DownsyncModulation)}
	}
	for id, data := range r.objects {
		got, ok := have[key{id.gvr(), id.ObjectName.Namespace, id.ObjectName.Name}]
		if !ok || got.resourceVersion != data.resourceVersion || !got.modulation.equal(data.modulation) {
			return false
		}
	}
	return true
}

// statusCollectorNames returns the union of the statusCollectors of the
// resolution's objects, sorted.
func (r *resolution) statusCollectorNames() []string {
	names := sets.New[string]()
	for _, data := range r.objects {
		names = names.Union(data.modulation.statusCollectors)
	}
	return sets.List(names)
}
