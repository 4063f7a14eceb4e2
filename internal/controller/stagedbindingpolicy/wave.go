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

	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kubestellar/workload-stager/internal/wave"
)

// Waves is what the reconciler may ask of the hosting cluster's
// RolloutWaves (internal/controller/wave.Gates): whether they let a policy
// of the space start a revision, and a source that queues the space's
// ordered policies when a wave changes. Nil: no wave orders any policy.
// The reconciler does not ask it yet; filling Snapshot.Wave from Decision
// is the next step of issue 56 (docs/proposals/waves.md, "Entering Plan").
type Waves interface {
	// Decision decides for policy of space starting revision at now, the
	// reconciler's clock; an error holds what would have started.
	Decision(ctx context.Context, space, policy, revision string, now time.Time) (wave.Decision, error)
	// Source queues the space's policies a wave orders when the wave
	// changes in a way that may change their Decision.
	Source(space string) source.Source
}
