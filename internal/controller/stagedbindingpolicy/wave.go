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

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kubestellar/workload-stager/api/v1alpha1"

	"github.com/kubestellar/workload-stager/internal/wave"
)

// Waves is what the reconciler may ask of the hosting cluster's
// RolloutWaves (internal/controller/wave.Gates): whether they let a policy
// of the space start a revision, and a source that queues the space's
// ordered policies when a wave changes. Nil: no wave orders any policy.
// The reconciler asks it for every snapshot (waveDecision).
type Waves interface {
	// Decision decides for policy of space starting revision at now, the
	// reconciler's clock; an error holds what would have started.
	Decision(ctx context.Context, space, policy, revision string, now time.Time) (wave.Decision, error)
	// Source queues the space's policies a wave orders when the wave
	// changes in a way that may change their Decision.
	Source(space string) source.Source
}

// ReasonWavesUnreadable is the reason of the decision that holds a policy's
// start while the hosting cluster's RolloutWaves cannot be read.
const ReasonWavesUnreadable = "WavesUnreadable"

// wavesUnreadableRetry is when a run held by unreadable waves is due again.
const wavesUnreadableRetry = 10 * time.Second

// waveDecision is the snapshot's Wave for policy at now (the reconciler's
// clock): nil without Waves or when no wave orders the policy, else the
// waves' decision on the revision the spec names. When the waves cannot be
// read, it fails closed: a decision that holds what would start (Plan's
// rule 6a), since any wave might order the policy, and lets a rollout
// running a revision go on. The error goes to the log only, as it may name
// the hosting cluster; the space reads that the waves are unreadable.
func (r *Reconciler) waveDecision(ctx context.Context, policy *v1alpha1.StagedBindingPolicy, now time.Time) *wave.Decision {
	if r.Waves == nil {
		return nil
	}
	d, err := r.Waves.Decision(ctx, r.Space, policy.Name, policy.Spec.SpecRevision(), now)
	if err != nil {
		log.FromContext(ctx).Error(err, "Reading the RolloutWaves; holding the policy's start until they can be read",
			"space", r.Space, "policy", policy.Name)
		return &wave.Decision{StepIndex: -1, Reason: ReasonWavesUnreadable, RecheckAfter: wavesUnreadableRetry,
			Message: "the stager cannot read the hosting cluster's RolloutWaves: no revision starts until it can"}
	}
	if d.Reason == wave.ReasonNotOrdered {
		return nil
	}
	return &d
}
