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
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/freeze"
)

// Freezes is what the reconciler may ask of the hosting cluster's
// RolloutFreezes (internal/controller/freeze.Freezes): which stages of a
// policy of the space they hold at a time, and a source that queues the
// space's policies when a freeze changes. Nil: no freeze holds anything.
// The reconciler asks it for every snapshot (freezeDecision).
type Freezes interface {
	// Decision decides for policy of space at now, the reconciler's
	// clock; an error holds every start (freezeDecision).
	Decision(ctx context.Context, space, policy string, now time.Time) (freeze.Decision, error)
	// Source queues the space's policies a freeze selects when it
	// changes; policies lists the space's policies.
	Source(space string, policies client.Reader) source.Source
}

// freezesUnreadableRetry is when a run held by unreadable freezes is due again.
const freezesUnreadableRetry = 10 * time.Second

// freezeDecision is the snapshot's Freeze for policy at now (the
// reconciler's clock): nil without Freezes or when no freeze holds or
// will hold the policy, else the freezes' decision. When the freezes
// cannot be read it fails closed: a decision that holds every stage's
// start (Plan's rule 6c, FreezesUnreadable), since any freeze might be
// on; what runs goes on. The error goes to the log only, as it may name
// the hosting cluster.
func (r *Reconciler) freezeDecision(ctx context.Context, policy *v1alpha1.StagedBindingPolicy, now time.Time) *freeze.Decision {
	if r.Freezes == nil {
		return nil
	}
	d, err := r.Freezes.Decision(ctx, r.Space, policy.Name, now)
	if err != nil {
		log.FromContext(ctx).Error(err, "Reading the RolloutFreezes; holding the policy's starts until they can be read",
			"space", r.Space, "policy", policy.Name)
		return &freeze.Decision{RecheckAfter: freezesUnreadableRetry, Holds: []freeze.Hold{{Reason: freeze.ReasonFreezesUnreadable,
			Message: "the stager cannot read the hosting cluster's RolloutFreezes: no stage starts until it can"}}}
	}
	if len(d.Holds) == 0 {
		return nil
	}
	return &d
}
