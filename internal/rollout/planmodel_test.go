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

package rollout_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
	"github.com/kubestellar/workload-stager/internal/rollout"
	"github.com/kubestellar/workload-stager/internal/rollout/rollouttest"
)

// The model of KubeStellar and a WDS that the state-machine test drives
// Plan against: the space's objects (the policy, its BindingPolicies and
// StageApprovals), what KubeStellar makes of them (Bindings, resolved
// after a delay, and CombinedStatuses, reported after another), and the
// WECs, each healthy, progressing or failing, joining and leaving. The
// stager's side is what the reconciler does: a snapshot as
// Reconciler.snapshot reads one, Plan, and the Action applied as
// Reconciler.apply does, with the API server's optimistic locking and
// generations. The reconciler's caches of its own writes are left out:
// the model's reads are never stale, which the reconciler's caches are
// there to approximate.

// health is a WEC's state as the workload's status reports it.
type health int

const (
	progressing health = iota
	healthy
	failing
)

// wec is a Workload Execution Cluster of the model.
type wec struct {
	name   string
	stage  string // the value of its stage label, "" for none
	joined bool
	health health
}

// revisionKey is the label that says which revision a workload object is.
const revisionKey = v1alpha1.DefaultRevisionLabelKey

// failureCondition holds when a WEC reports the workload failing (count -1).
const failureCondition = `obj.results.exists(r, r.name == 'deployments-aggregator' && r.rows.exists(row, row.columns.exists(col, col.type == 'Number' && col.float == '-1')))`

// world is the space, KubeStellar and the WECs.
type world struct {
	engine *expression.Engine
	now    time.Time

	policy    *v1alpha1.StagedBindingPolicy // nil once deleted
	bps       map[string]*ksv1alpha1.BindingPolicy
	bindings  map[string]*ksv1alpha1.Binding
	statuses  map[string][]ksv1alpha1.CombinedStatus // by BindingPolicy name
	approvals map[string]*v1alpha1.StageApproval
	wecs      []*wec
	revisions []string // the revisions whose objects exist in the WDS
	// unlabelled is true once the WDS holds the workload of a policy
	// without spec.revision: a Deployment without the revision label,
	// which the user guide says to keep until a revision is everywhere.
	unlabelled bool
	metric     float64      // what every analysis query answers
	wave       *waveModel   // the RolloutWave ordering the policy, or nil
	freeze     *freezeModel // the RolloutFreeze selecting it, or nil

	// askedFor is, by StageApproval UID and generation, the fingerprint
	// of the policy whose stager wrote that spec: what it asks to
	// approve. approvedAs is the same for the StageApprovals a user
	// approved.
	askedFor, approvedAs map[string]string

	uids int
	rv   int
}

// newWorld returns a world with the given WECs and no policy.
func newWorld(engine *expression.Engine, wecs []*wec) *world {
	return &world{
		engine:     engine,
		now:        rollouttest.Now.Time,
		bps:        map[string]*ksv1alpha1.BindingPolicy{},
		bindings:   map[string]*ksv1alpha1.Binding{},
		statuses:   map[string][]ksv1alpha1.CombinedStatus{},
		approvals:  map[string]*v1alpha1.StageApproval{},
		wecs:       wecs,
		revisions:  []string{"r1"},
		askedFor:   map[string]string{},
		approvedAs: map[string]string{},
	}
}

func (w *world) nextUID(kind string) types.UID {
	w.uids++
	return types.UID(fmt.Sprintf("%s-%d", kind, w.uids))
}

func (w *world) nextRV() string {
	w.rv++
	return strconv.Itoa(w.rv)
}

// fingerprint is what an approval approves: the policy's spec but
// spec.suspend, and its restartedAt annotation.
func fingerprint(p *v1alpha1.StagedBindingPolicy) string {
	spec := p.Spec.DeepCopy()
	spec.Suspend = false
	spec.Promotion = nil // as the stager's spec digest: a promotion keeps approvals
	raw, err := json.Marshal(spec)
	if err != nil {
		panic(err)
	}
	return string(raw) + "|" + p.Annotations[v1alpha1.RestartedAtAnnotation]
}

// editSpec changes the policy's spec as a user's update does: a new generation.
func (w *world) editSpec(edit func(*v1alpha1.StagedBindingPolicy)) {
	before := w.policy.Spec.DeepCopy()
	edit(w.policy)
	if !equality.Semantic.DeepEqual(before, &w.policy.Spec) {
		w.policy.Generation++
		w.policy.ResourceVersion = w.nextRV()
	}
}

// ownedBindingPolicies returns the policy's BindingPolicies, by name.
func (w *world) ownedBindingPolicies() []*ksv1alpha1.BindingPolicy {
	var out []*ksv1alpha1.BindingPolicy
	for _, name := range slices.Sorted(maps.Keys(w.bps)) {
		if w.policy != nil && rollout.OwnedBy(w.bps[name], w.policy) || w.policy == nil {
			out = append(out, w.bps[name])
		}
	}
	return out
}

// snapshot reads the space as Reconciler.snapshot does: what rollout.Reads names.
func (w *world) snapshot() *rollout.Snapshot {
	policy := w.policy.DeepCopy()
	snap := &rollout.Snapshot{Policy: policy, Now: metav1.NewTime(w.now.Truncate(time.Second))}
	snap.Wave = w.waveDecision(policy, snap.Now.Time)
	snap.Freeze = w.freezeDecision(policy, snap.Now.Time)
	for _, name := range slices.Sorted(maps.Keys(w.bps)) {
		if w.bps[name].Labels[v1alpha1.PolicyLabel] == policy.Name {
			snap.BindingPolicies = append(snap.BindingPolicies, *w.bps[name].DeepCopy())
		}
	}
	for _, name := range slices.Sorted(maps.Keys(w.approvals)) {
		snap.Approvals = append(snap.Approvals, *w.approvals[name].DeepCopy())
	}
	reads := rollout.Reads(policy, snap.BindingPolicies, snap.Now)
	if reads.Bindings {
		for _, bp := range snap.BindingPolicies {
			if b := w.bindings[bp.Name]; b != nil {
				snap.Bindings = append(snap.Bindings, *b.DeepCopy())
			}
			if reads.AbortStatuses {
				snap.AbortStatuses = append(snap.AbortStatuses, w.statusesOf(bp.Name)...)
			}
		}
	}
	if reads.Active == "" {
		return snap
	}
	if bp := w.bps[reads.Active]; bp != nil {
		snap.ActiveBindingPolicy = bp.DeepCopy()
	}
	if bp := w.bps[reads.Next]; reads.Next != "" && bp != nil {
		snap.NextBindingPolicy = bp.DeepCopy()
	}
	if b := w.bindings[reads.Active]; b != nil {
		snap.Binding = b.DeepCopy()
	}
	snap.CombinedStatuses = w.statusesOf(reads.Active)
	for _, name := range reads.ClusterStatuses {
		snap.ClusterStatuses = append(snap.ClusterStatuses, w.statusesOf(name)...)
	}
	for _, name := range reads.Watched {
		if b := w.bindings[name]; b != nil {
			snap.WatchedBindings = append(snap.WatchedBindings, *b.DeepCopy())
		}
		snap.WatchedStatuses = append(snap.WatchedStatuses, w.statusesOf(name)...)
	}
	for _, a := range reads.Analyses {
		snap.Measurements = append(snap.Measurements, rollout.Measurement{Stage: policy.Status.ActiveStage, Analysis: a.Name,
			Time: snap.Now, Values: []float64{w.metric}})
	}
	return snap
}

func (w *world) statusesOf(bpName string) []ksv1alpha1.CombinedStatus {
	out := make([]ksv1alpha1.CombinedStatus, 0, len(w.statuses[bpName]))
	for _, cs := range w.statuses[bpName] {
		out = append(out, *cs.DeepCopy())
	}
	return out
}

// errConflict is the API server refusing a write: a stale resourceVersion,
// a name taken, a precondition not met.
var errConflict = fmt.Errorf("conflict")

// apply makes the change an Action describes, as Reconciler.apply does
// against an API server: creates refused for a name taken, updates and
// deletes conditional on resourceVersion or UID, generations bumped on a
// change of spec.
func (w *world) apply(action rollout.Action) error {
	switch action.Type {
	case rollout.ActionNone:
		return nil
	case rollout.ActionAddFinalizer:
		if !slices.Contains(w.policy.Finalizers, v1alpha1.CleanupFinalizer) {
			w.policy.Finalizers = append(w.policy.Finalizers, v1alpha1.CleanupFinalizer)
		}
	case rollout.ActionRemoveFinalizer:
		w.policy.Finalizers = slices.DeleteFunc(w.policy.Finalizers, func(f string) bool { return f == v1alpha1.CleanupFinalizer })
		if w.policy.DeletionTimestamp != nil && len(w.policy.Finalizers) == 0 {
			w.policy = nil
			return nil
		}
	case rollout.ActionCreateBindingPolicy:
		if w.bps[action.BindingPolicy.Name] != nil {
			return errConflict
		}
		bp := action.BindingPolicy.DeepCopy()
		bp.UID, bp.Generation, bp.ResourceVersion = w.nextUID("bp"), 1, w.nextRV()
		bp.CreationTimestamp = metav1.NewTime(w.now.Truncate(time.Second))
		bp.Status = ksv1alpha1.BindingPolicyStatus{}
		w.bps[bp.Name] = bp
		return nil
	case rollout.ActionUpdateBindingPolicy:
		cur := w.bps[action.BindingPolicy.Name]
		if cur == nil || cur.ResourceVersion != action.BindingPolicy.ResourceVersion {
			return errConflict
		}
		bp := action.BindingPolicy.DeepCopy()
		bp.Status = cur.Status
		if !equality.Semantic.DeepEqual(cur.Spec, bp.Spec) {
			bp.Generation = cur.Generation + 1
		}
		bp.ResourceVersion = w.nextRV()
		w.bps[bp.Name] = bp
		return nil
	case rollout.ActionDeleteBindingPolicy:
		cur := w.bps[action.BindingPolicy.Name]
		if cur == nil {
			return nil
		}
		if cur.UID != action.BindingPolicy.UID {
			return errConflict
		}
		// KubeStellar's Binding and CombinedStatuses go with it (its
		// owner reference and its controller), which takes the workload
		// off the Binding's clusters.
		delete(w.bps, cur.Name)
		delete(w.bindings, cur.Name)
		delete(w.statuses, cur.Name)
		return nil
	case rollout.ActionCreateStageApproval:
		if w.approvals[action.StageApproval.Name] != nil {
			return errConflict
		}
		a := action.StageApproval.DeepCopy()
		a.UID, a.Generation, a.ResourceVersion = w.nextUID("sa"), 1, w.nextRV()
		a.Status = v1alpha1.StageApprovalStatus{}
		w.approvals[a.Name] = a
		w.askedFor[approvalKey(a)] = fingerprint(w.policy)
		return nil
	case rollout.ActionUpdateStageApproval:
		cur := w.approvals[action.StageApproval.Name]
		if cur == nil || cur.ResourceVersion != action.StageApproval.ResourceVersion {
			return errConflict
		}
		a := action.StageApproval.DeepCopy()
		a.Status = cur.Status
		if !equality.Semantic.DeepEqual(cur.Spec, a.Spec) {
			a.Generation = cur.Generation + 1
		}
		a.ResourceVersion = w.nextRV()
		w.approvals[a.Name] = a
		w.askedFor[approvalKey(a)] = fingerprint(w.policy)
		return nil
	case rollout.ActionDeleteStageApproval:
		cur := w.approvals[action.StageApproval.Name]
		if cur == nil {
			return nil
		}
		if cur.UID != action.StageApproval.UID {
			return errConflict
		}
		delete(w.approvals, cur.Name)
		return nil
	case rollout.ActionUpdateStatus:
		w.policy.Status = *action.Status.DeepCopy()
	default:
		return fmt.Errorf("unknown action %q", action.Type)
	}
	w.policy.ResourceVersion = w.nextRV()
	return nil
}

// objectsOf returns the revisions of the workload objects a
// BindingPolicy's downsync selects: one Deployment per revision, labelled
// with it, and v1alpha1.Unrevisioned for the unlabelled one, if any.
func (w *world) objectsOf(bp *ksv1alpha1.BindingPolicy) []string {
	var revs []string
	all := w.revisions
	if w.unlabelled {
		all = append([]string{v1alpha1.Unrevisioned}, all...)
	}
	for _, rev := range all {
		objLabels := labels.Set{revisionKey: rev}
		if rev == v1alpha1.Unrevisioned {
			objLabels = labels.Set{}
		}
		for _, c := range bp.Spec.Downsync {
			if !slices.Contains(c.Resources, "deployments") || c.APIGroup == nil || *c.APIGroup != "apps" {
				continue
			}
			if len(c.Namespaces) > 0 && !slices.Contains(c.Namespaces, "web") {
				continue
			}
			selected := len(c.ObjectSelectors) == 0
			for _, s := range c.ObjectSelectors {
				sel, err := metav1.LabelSelectorAsSelector(&s)
				if err == nil && sel.Matches(objLabels) {
					selected = true
				}
			}
			if selected {
				revs = append(revs, rev)
				break
			}
		}
	}
	return revs
}

// selects reports whether a BindingPolicy's cluster selectors select a WEC.
func selects(bp *ksv1alpha1.BindingPolicy, c *wec) bool {
	if !c.joined {
		return false
	}
	set := labels.Set{"name": c.name}
	if c.stage != "" {
		set["stage"] = c.stage
	}
	for _, s := range bp.Spec.ClusterSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&s)
		if err == nil && sel.Matches(set) {
			return true
		}
	}
	return false
}

// resolve is KubeStellar resolving every BindingPolicy into its Binding:
// the clusters its selectors select, the objects its downsync selects.
func (w *world) resolve() {
	for _, name := range slices.Sorted(maps.Keys(w.bps)) {
		w.resolveOne(name)
	}
}

// resolveOne is KubeStellar resolving one BindingPolicy: it takes them in
// no order the stager may count on.
func (w *world) resolveOne(name string) {
	bp := w.bps[name]
	b := &ksv1alpha1.Binding{ObjectMeta: metav1.ObjectMeta{Name: bp.Name, UID: "binding-" + bp.UID,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "control.kubestellar.io/v1alpha1", Kind: "BindingPolicy",
			Name: bp.Name, UID: bp.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}}}
	for _, c := range w.wecs {
		if selects(bp, c) {
			b.Spec.Destinations = append(b.Spec.Destinations, ksv1alpha1.Destination{ClusterId: c.name})
		}
	}
	for _, rev := range w.objectsOf(bp) {
		b.Spec.Workload.NamespaceScope = append(b.Spec.Workload.NamespaceScope, ksv1alpha1.NamespaceScopeDownsyncClause{
			NamespaceScopeDownsyncObject: ksv1alpha1.NamespaceScopeDownsyncObject{GroupVersionResource: rollouttest.Deployment.GVR,
				Namespace: "web", Name: objectName(rev), ResourceVersion: "7"},
			DownsyncModulation: ksv1alpha1.DownsyncModulation{StatusCollectors: []string{"deployments-aggregator"}},
		})
	}
	w.bindings[bp.Name] = b
	bp.Status.ObservedGeneration = bp.Generation
}

// report is KubeStellar reporting, for every Binding, one CombinedStatus
// per object: 1 when every cluster it places on is healthy, -1 when one
// fails, else 0.
func (w *world) report() {
	w.statuses = map[string][]ksv1alpha1.CombinedStatus{}
	for _, name := range slices.Sorted(maps.Keys(w.bindings)) {
		b, bp := w.bindings[name], w.bps[name]
		count := "1"
		for _, d := range b.Spec.Destinations {
			switch c := w.wec(d.ClusterId); {
			case c == nil || !c.joined:
			case c.health == failing:
				count = "-1"
			case c.health == progressing && count == "1":
				count = "0"
			}
		}
		if len(b.Spec.Destinations) == 0 {
			count = "0"
		}
		for _, o := range b.Spec.Workload.NamespaceScope {
			obj := rollouttest.WorkloadObject{GVR: o.GroupVersionResource, Namespace: o.Namespace, Name: o.Name, UID: types.UID("obj-" + o.Name)}
			w.statuses[name] = append(w.statuses[name], rollouttest.CombinedStatus(bp, obj, count))
		}
	}
}

func (w *world) wec(name string) *wec {
	for _, c := range w.wecs {
		if c.name == name {
			return c
		}
	}
	return nil
}

// objectName is the name of the Deployment of a revision: "nginx" for
// the unlabelled one.
func objectName(rev string) string {
	if rev == v1alpha1.Unrevisioned {
		return "nginx"
	}
	return "nginx-" + rev
}

// revisionOf is the revision of the Deployment named name (objectName).
func revisionOf(name string) string {
	if name == "nginx" {
		return v1alpha1.Unrevisioned
	}
	return strings.TrimPrefix(name, "nginx-")
}

// runs returns, by WEC, the revisions the Bindings place on it
// (v1alpha1.Unrevisioned for the unlabelled Deployment).
func (w *world) runs() map[string][]string {
	out := map[string][]string{}
	for _, b := range w.bindings {
		for _, d := range b.Spec.Destinations {
			for _, o := range b.Spec.Workload.NamespaceScope {
				rev := revisionOf(o.Name)
				if !slices.Contains(out[d.ClusterId], rev) {
					out[d.ClusterId] = append(out[d.ClusterId], rev)
				}
			}
		}
	}
	return out
}

// statusSays returns what the CombinedStatuses of a BindingPolicy say of
// its workload: "1" done everywhere, "-1" failing somewhere, "0" not done,
// "" none reported (or no object placed).
func (w *world) statusSays(bpName string) string {
	says := ""
	for _, cs := range w.statuses[bpName] {
		v := *cs.Results[0].Rows[0].Columns[0].Number
		switch {
		case says == "" || v == "-1":
			says = v
		case v == "0" && says == "1":
			says = v
		}
	}
	return says
}

// describe says where the world is, for a failure's message.
func (w *world) describe() string {
	var b strings.Builder
	if p := w.policy; p != nil {
		fmt.Fprintf(&b, "\npolicy: phase %s, active %q, update %q, current %q, spec revision %q", p.Status.Phase, p.Status.ActiveStage,
			p.Status.UpdateRevision, p.Status.CurrentRevision, p.Spec.SpecRevision())
		for _, r := range p.Status.Stages {
			fmt.Fprintf(&b, "\n  stage %s: %s revision %q bp %q: %s", r.Name, r.Phase, r.Revision, r.BindingPolicy, r.Message)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(w.bps)) {
		bp := w.bps[name]
		fmt.Fprintf(&b, "\nBindingPolicy %s gen %d observed %d, statuses say %q", name, bp.Generation, bp.Status.ObservedGeneration, w.statusSays(name))
	}
	for _, c := range w.wecs {
		fmt.Fprintf(&b, "\nWEC %s stage %q joined %v health %d runs %v", c.name, c.stage, c.joined, c.health, w.runs()[c.name])
	}
	return b.String()
}
