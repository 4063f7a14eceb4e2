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
	"bytes"
	"encoding/json"
	"errors"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// Unconfirmed keeps, per space and policy, the last status write whose
// answer was lost (answerLost): the API server may have made it or not.
// Its Events and stage completions are reported by the first run that sees
// the status as written, in the controller that made the write or in the
// next one of the same space: a space's controller is restarted on fresh
// caches after an outage, which is when answers are lost, and the write's
// own context is then cancelled. A later status write of the policy that is
// answered, a status that is neither the one before nor the one written, or
// an hour without either (unconfirmedFor) drops it. It relies on a space
// having one controller at a time (spaces.Runner starts the next once the
// last has stopped): two at once could each report the same write.
// Safe for concurrent use; the zero value is empty and ready.
type Unconfirmed struct {
	mu     sync.Mutex
	writes map[string]map[types.NamespacedName]unconfirmedWrite
}

// unconfirmedWrite is a status write whose answer was lost: the status it
// replaced, the status it wrote (as JSON, as the write sent it), and what
// it reports.
type unconfirmedWrite struct {
	uid      types.UID
	at       time.Time
	previous *v1alpha1.StagedBindingPolicyStatus
	after    []byte
	action   rollout.Action
}

// unconfirmedFor is how long an unconfirmed write is kept unseen: a policy
// deleted, or a status left as it was, while no run looks at it, would
// otherwise keep it until the space goes.
const unconfirmedFor = time.Hour

// NewUnconfirmed returns an empty Unconfirmed.
func NewUnconfirmed() *Unconfirmed { return &Unconfirmed{} }

// Forget drops the unconfirmed writes of a space, once it is disengaged.
func (u *Unconfirmed) Forget(space string) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.writes, space)
}

// add records that the answer to action, a status write of policy made at
// now, was lost, and drops the space's writes kept for unconfirmedFor.
func (u *Unconfirmed) add(space string, policy *v1alpha1.StagedBindingPolicy, action rollout.Action, now time.Time) error {
	if u == nil {
		return nil
	}
	after, err := json.Marshal(action.Status)
	if err != nil {
		return err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.writes == nil {
		u.writes = map[string]map[types.NamespacedName]unconfirmedWrite{}
	}
	if u.writes[space] == nil {
		u.writes[space] = map[types.NamespacedName]unconfirmedWrite{}
	}
	for key, w := range u.writes[space] {
		if now.Sub(w.at) >= unconfirmedFor {
			delete(u.writes[space], key)
		}
	}
	u.writes[space][client.ObjectKeyFromObject(policy)] = unconfirmedWrite{
		uid: policy.UID, at: now, previous: policy.Status.DeepCopy(), after: after, action: action}
	return nil
}

// drop forgets the unconfirmed write of a policy, if any.
func (u *Unconfirmed) drop(space string, key types.NamespacedName) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.writes[space], key)
}

// landed returns the unconfirmed write of policy when policy's status is the
// one it wrote, and drops it then, or when the status is neither that nor
// the one it replaced. While the status is still the one it replaced, the
// write may yet show in a lagging cache, and it is kept.
func (u *Unconfirmed) landed(space string, policy *v1alpha1.StagedBindingPolicy) (unconfirmedWrite, bool) {
	if u == nil {
		return unconfirmedWrite{}, false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	key := client.ObjectKeyFromObject(policy)
	w, ok := u.writes[space][key]
	if !ok {
		return unconfirmedWrite{}, false
	}
	now, err := json.Marshal(policy.Status)
	before, errBefore := json.Marshal(w.previous)
	same := w.uid == policy.UID && err == nil && errBefore == nil
	if same && bytes.Equal(now, before) {
		return unconfirmedWrite{}, false
	}
	delete(u.writes[space], key)
	return w, same && bytes.Equal(now, w.after)
}

// answerLost reports whether err leaves a write's outcome unknown: the
// request failed without an answer from the API server (cancelled, timed
// out, connection lost), or with a server error (5xx), which the API server
// or a proxy before it may answer while the write is made, as when etcd
// answers late. A write refused before it is made (4xx, 429 included) is
// known not to have been made.
func answerLost(err error) bool {
	var status apierrors.APIStatus
	return err != nil && (!errors.As(err, &status) || status.Status().Code >= 500)
}
