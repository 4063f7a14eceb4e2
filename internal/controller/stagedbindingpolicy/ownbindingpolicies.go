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

package stagedbindingpolicy

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// ownChangeTTL is how long ownBindingPolicies believes a change its cache
// has not shown: longer than a watch event takes under load, short enough
// that a change the cache never shows (a BindingPolicy created and deleted
// again by someone else before the cache heard of either) is not believed
// for long.
const ownChangeTTL = 10 * time.Second

// ownBindingPolicies lets a reconciler read its own creations and deletions
// of BindingPolicies before its cache does. Several runs of a policy can
// follow each other within a watch event's time (a CombinedStatus updated
// twice, say); without it, the second run finds missing the BindingPolicy
// the first created and creates it again (AlreadyExists, and a retry), or
// finds not yet deleted the one the first deleted and deletes it again.
// Like ownWrites, this is a view of the API server, not state: a change is
// believed until the cache shows it, or for ownChangeTTL at most. Safe for
// concurrent use.
type ownBindingPolicies struct {
	mu      sync.Mutex
	created map[string]ownCreate    // by name
	deleted map[types.UID]time.Time // when this reconciler deleted it
}

// ownCreate is a BindingPolicy as created, and when.
type ownCreate struct {
	bp *ksv1alpha1.BindingPolicy
	at time.Time
}

// recordCreate notes that bp, as the API server returned it, was created at now.
func (o *ownBindingPolicies) recordCreate(bp *ksv1alpha1.BindingPolicy, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.expire(now)
	if o.created == nil {
		o.created = map[string]ownCreate{}
	}
	o.created[bp.Name] = ownCreate{bp: bp.DeepCopy(), at: now}
}

// recordDelete notes that the BindingPolicy with uid was deleted at now.
func (o *ownBindingPolicies) recordDelete(uid types.UID, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.expire(now)
	if o.deleted == nil {
		o.deleted = map[types.UID]time.Time{}
	}
	o.deleted[uid] = now
	// A BindingPolicy created and deleted again before the cache had it
	// is no longer believed to exist.
	maps.DeleteFunc(o.created, func(_ string, c ownCreate) bool { return c.bp.UID == uid })
}

// expire drops the changes older than ownChangeTTL. Callers hold mu.
func (o *ownBindingPolicies) expire(now time.Time) {
	maps.DeleteFunc(o.created, func(_ string, c ownCreate) bool { return now.Sub(c.at) >= ownChangeTTL })
	maps.DeleteFunc(o.deleted, func(_ types.UID, at time.Time) bool { return now.Sub(at) >= ownChangeTTL })
}

// view returns the BindingPolicy named name as this reconciler knows it,
// given cached, the cache's (nil when it has none): the one it created for
// policy (owned by it: not for an earlier policy of the same name) when the
// cache has none yet, or cached marked as being deleted (at the time of the
// delete) when the reconciler deleted it and the cache does not show it
// yet. The result is a copy when it differs from cached.
func (o *ownBindingPolicies) view(name string, cached *ksv1alpha1.BindingPolicy, policy metav1.Object, now time.Time) *ksv1alpha1.BindingPolicy {
	o.mu.Lock()
	defer o.mu.Unlock()
	if cached == nil {
		if c, ok := o.created[name]; ok && now.Sub(c.at) < ownChangeTTL && rollout.OwnedBy(c.bp, policy) {
			return c.bp.DeepCopy()
		}
		return nil
	}
	delete(o.created, name) // the cache has caught up with the create, or with a later change
	at, ok := o.deleted[cached.UID]
	if !ok || now.Sub(at) >= ownChangeTTL {
		return cached
	}
	if cached.DeletionTimestamp != nil {
		delete(o.deleted, cached.UID)
		return cached
	}
	deleting := cached.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: at}
	return deleting
}

// viewList returns cached, the cache's BindingPolicies of policy, as view
// sees each, with those this reconciler created for policy that the cache
// does not have yet.
func (o *ownBindingPolicies) viewList(cached []ksv1alpha1.BindingPolicy, policy metav1.Object, now time.Time) []ksv1alpha1.BindingPolicy {
	out := make([]ksv1alpha1.BindingPolicy, 0, len(cached))
	seen := make(map[string]bool, len(cached))
	for i := range cached {
		seen[cached[i].Name] = true
		out = append(out, *o.view(cached[i].Name, &cached[i], policy, now))
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var added []ksv1alpha1.BindingPolicy
	for name, c := range o.created {
		if !seen[name] && now.Sub(c.at) < ownChangeTTL && rollout.OwnedBy(c.bp, policy) {
			added = append(added, *c.bp.DeepCopy())
		}
	}
	slices.SortFunc(added, func(a, b ksv1alpha1.BindingPolicy) int { return strings.Compare(a.Name, b.Name) })
	return append(out, added...)
}

// believedFor returns how long at most a create of a BindingPolicy of
// policy that the cache did not show yet is still believed; 0 when there
// is none.
func (o *ownBindingPolicies) believedFor(policy metav1.Object, now time.Time) time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	var longest time.Duration
	for _, c := range o.created {
		if left := ownChangeTTL - now.Sub(c.at); left > longest && rollout.OwnedBy(c.bp, policy) {
			longest = left
		}
	}
	return longest
}

// withNamesakes returns listed, the policy's BindingPolicies, with those
// that bear the name of the BindingPolicy of a cluster of the policy's
// active stage, placed in batches, without the policy's label: census is
// the Binding of the stage's census, which names its clusters. Such an
// object is someone else's, and Plan reports the name taken
// (BindingPolicyConflict) rather than create it again and again. The reads
// are the cache's, one per cluster not listed, seen through view: the cache
// holds only generated BindingPolicies, and view adds one that a refused
// create found on the API server (foreignBindingPolicies).
func withNamesakes(ctx context.Context, reader client.Reader, policy *v1alpha1.StagedBindingPolicy, census *ksv1alpha1.Binding,
	listed []ksv1alpha1.BindingPolicy, view func(name string, cached *ksv1alpha1.BindingPolicy) *ksv1alpha1.BindingPolicy,
) ([]ksv1alpha1.BindingPolicy, error) {
	active, started, _ := rollout.ActiveStage(policy)
	if !started || census == nil || !policy.Spec.Stages[active].Batched() {
		return listed, nil
	}
	seen := make(map[string]bool, len(listed))
	for i := range listed {
		seen[listed[i].Name] = true
	}
	stage := policy.Spec.Stages[active].Name
	for _, d := range census.Spec.Destinations {
		name := v1alpha1.StagePlacement(policy.Name, stage).At(policy.Status.UpdateRevision).On(d.ClusterId).String()
		if seen[name] {
			continue
		}
		seen[name] = true
		bp, err := getNamed(ctx, reader, "BindingPolicy", name, &ksv1alpha1.BindingPolicy{})
		if err != nil {
			return nil, err
		}
		if bp = view(name, bp); bp != nil {
			listed = append(listed, *bp)
		}
	}
	return listed, nil
}

// foreignTTL is how long foreignBindingPolicies believes a BindingPolicy
// the API server showed: a conflict is looked at again (one refused create
// and one GET) at most this often per name, and a squatter's deletion is
// seen at most this late.
const foreignTTL = time.Minute

// maxForeignPerPolicy bounds how many names foreignBindingPolicies keeps
// per policy. Plan stops at the first taken name it meets, so one is
// enough to report a conflict; a few more spare the refused creates of a
// policy whose several names are taken. Past it the oldest is forgotten,
// and found again by a refused create.
const maxForeignPerPolicy = 8

// foreignBindingPolicies remembers, per policy, the names it needs that a
// reconciler found taken on the API server by a BindingPolicy its cache
// does not hold: the cache holds only those labelled as generated
// (NarrowCache), so such a name shows only as a refused create. It keeps
// of each object only what Plan needs to report the name taken (stub),
// at most maxForeignPerPolicy per policy, each believed for foreignTTL at
// most, or until the cache holds an object of that name. Safe for
// concurrent use.
type foreignBindingPolicies struct {
	mu    sync.Mutex
	found map[string]map[string]ownCreate // by policy, then by name; at is when it was read
}

// stub is what foreignBindingPolicies keeps of bp, a BindingPolicy without
// the stager's labels: its name, UID, resourceVersion and timestamps, and
// no owner reference, labels or spec. Such an object is not the stager's
// whatever its owner references say (anyone who can read a policy can
// write its UID there), so Plan reports its name taken
// (BindingPolicyConflict) and never writes it; its size, up to what the
// API server admits, stays out of the stager's memory.
func stub(bp *ksv1alpha1.BindingPolicy) *ksv1alpha1.BindingPolicy {
	return &ksv1alpha1.BindingPolicy{TypeMeta: bp.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: bp.Name, UID: bp.UID, ResourceVersion: bp.ResourceVersion,
		CreationTimestamp: bp.CreationTimestamp, DeletionTimestamp: bp.DeletionTimestamp,
	}}
}

// record notes that bp, read from the API server at now, holds a name that
// policy needs.
func (f *foreignBindingPolicies) record(policy string, bp *ksv1alpha1.BindingPolicy, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.found == nil {
		f.found = map[string]map[string]ownCreate{}
	}
	found := f.found[policy]
	if found == nil {
		found = map[string]ownCreate{}
		f.found[policy] = found
	}
	maps.DeleteFunc(found, func(_ string, c ownCreate) bool { return now.Sub(c.at) >= foreignTTL })
	delete(found, bp.Name)
	for len(found) >= maxForeignPerPolicy {
		oldest := ""
		for name, c := range found {
			if oldest == "" || c.at.Before(found[oldest].at) {
				oldest = name
			}
		}
		delete(found, oldest)
	}
	found[bp.Name] = ownCreate{bp: stub(bp), at: now}
}

// view returns the BindingPolicy named name, which policy needs, as the
// reconciler knows it, given cached, the cache's (nil when it has none):
// cached when there is one, else the one found on the API server under
// that name, if it was found less than foreignTTL ago.
func (f *foreignBindingPolicies) view(policy, name string, cached *ksv1alpha1.BindingPolicy, now time.Time) *ksv1alpha1.BindingPolicy {
	f.mu.Lock()
	defer f.mu.Unlock()
	found := f.found[policy]
	c, ok := found[name]
	if cached != nil || (ok && now.Sub(c.at) >= foreignTTL) {
		delete(found, name)
		return cached
	}
	if !ok {
		return nil
	}
	return c.bp.DeepCopy()
}

// withFound returns listed, the BindingPolicies the cache lists for
// policy, with those found on the API server under names policy needs
// that listed lacks, found less than foreignTTL ago: so that Plan sees
// every name it would create taken, whichever rule creates it.
func (f *foreignBindingPolicies) withFound(policy string, listed []ksv1alpha1.BindingPolicy, now time.Time) []ksv1alpha1.BindingPolicy {
	f.mu.Lock()
	defer f.mu.Unlock()
	found := f.found[policy]
	for i := range listed {
		delete(found, listed[i].Name)
	}
	var extra []ksv1alpha1.BindingPolicy
	for name, c := range found {
		if now.Sub(c.at) >= foreignTTL {
			delete(found, name)
			continue
		}
		extra = append(extra, *c.bp.DeepCopy())
	}
	slices.SortFunc(extra, func(a, b ksv1alpha1.BindingPolicy) int { return strings.Compare(a.Name, b.Name) })
	return append(listed, extra...)
}

// forget drops what was found for policy, which no longer exists.
func (f *foreignBindingPolicies) forget(policy string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.found, policy)
}
