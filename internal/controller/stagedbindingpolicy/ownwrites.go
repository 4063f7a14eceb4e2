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
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// ownWrites lets a reconciler read its own writes of a policy before its
// cache does. It keeps, per policy, the policy as last written and the
// resourceVersions that this reconciler's writes have replaced since the
// cache last caught up. While the cache holds one of those, the written
// policy is newer; any other version in the cache (the write itself, or a
// later write by someone else) is at least as new, and the entry is
// dropped. resourceVersions are only compared for equality. This is a view
// of the API server, not state: a new reconciler starts without it and
// reads the cache. Safe for concurrent use.
type ownWrites struct {
	mu      sync.Mutex
	written map[types.NamespacedName]ownWrite
}

// ownWrite is one policy's last write and the versions it supersedes.
type ownWrite struct {
	policy     *v1alpha1.StagedBindingPolicy
	superseded map[string]bool // resourceVersions older than policy's
}

// record notes that the policy whose version before was read has been
// written, and is now written.
func (o *ownWrites) record(before, written *v1alpha1.StagedBindingPolicy) {
	key := types.NamespacedName{Namespace: written.Namespace, Name: written.Name}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.written == nil {
		o.written = map[types.NamespacedName]ownWrite{}
	}
	entry, ok := o.written[key]
	if !ok || entry.policy.UID != written.UID {
		entry = ownWrite{superseded: map[string]bool{}}
	}
	entry.superseded[before.ResourceVersion] = true
	entry.policy = written.DeepCopy()
	o.written[key] = entry
}

// freshest returns the newest version of the policy this reconciler knows:
// a copy of its last write while cached is a version that write replaced,
// else cached.
func (o *ownWrites) freshest(cached *v1alpha1.StagedBindingPolicy) *v1alpha1.StagedBindingPolicy {
	key := types.NamespacedName{Namespace: cached.Namespace, Name: cached.Name}
	o.mu.Lock()
	defer o.mu.Unlock()
	entry, ok := o.written[key]
	if !ok {
		return cached
	}
	if entry.policy.UID == cached.UID && entry.superseded[cached.ResourceVersion] {
		return entry.policy.DeepCopy()
	}
	delete(o.written, key)
	return cached
}

// forget drops what is known of a policy that no longer exists.
func (o *ownWrites) forget(key types.NamespacedName) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.written, key)
}
