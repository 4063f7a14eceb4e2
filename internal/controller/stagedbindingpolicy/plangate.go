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
	"fmt"
)

// planGate bounds how many runs of one space plan at once. Planning
// (compiling and evaluating the stages' expressions) is a run's work on the
// CPU; the rest is reading the cache and waiting for the space's API
// server, which is what a space's many workers are for. The gate keeps what
// one space's policy authors can make the stager compute and allocate at
// once to a few evaluations, however many workers the space has. A nil gate
// bounds nothing.
type planGate chan struct{}

// newPlanGate returns a gate letting n runs plan at once; n < 1 means no bound.
func newPlanGate(n int) planGate {
	if n < 1 {
		return nil
	}
	return make(planGate, n)
}

// enter waits until the run may plan, or ctx ends.
func (g planGate) enter(ctx context.Context) error {
	if g == nil {
		return nil
	}
	select {
	case g <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for a turn to plan: %w", ctx.Err())
	}
}

// leave lets another run plan.
func (g planGate) leave() {
	if g != nil {
		<-g
	}
}

// plan calls f once the run may plan, and lets another run plan when f
// returns or panics (controller-runtime recovers a reconcile's panic: a
// turn kept by one would stall the space's other runs for good).
func (g planGate) plan(ctx context.Context, f func()) error {
	if err := g.enter(ctx); err != nil {
		return err
	}
	defer g.leave()
	f()
	return nil
}
