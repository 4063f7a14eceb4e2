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

package expression

import (
	"context"
	"sync"
	"time"
)

// timeoutSlack is the fraction of the evaluation timeout by which an
// evaluation may be stopped early, so that evaluations can share contexts.
const timeoutSlack = 16

// timeouts hands out the contexts that stop evaluations at the evaluation
// timeout. A context with a deadline (and its timer) for every evaluation
// costs about a third as much as evaluating a simple condition, so the
// evaluations that start within the same sixteenth of the timeout share
// one: each is stopped between 15/16 of the timeout and the whole timeout
// after it starts. Safe for concurrent use.
type timeouts struct {
	timeout time.Duration

	mu  sync.Mutex
	ctx context.Context
	end time.Time
	// cancel is never called: the context ends at its deadline, when
	// its timer is released, and evaluations still use it until then.
	cancel context.CancelFunc
}

// context returns a context that ends between 15/16 of the timeout and the
// timeout after now, and its deadline.
func (t *timeouts) context(now time.Time) (context.Context, time.Time) {
	latest := now.Add(t.timeout)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctx == nil || t.end.After(latest) || t.end.Before(latest.Add(-t.timeout/timeoutSlack)) {
		t.ctx, t.cancel = context.WithDeadline(context.Background(), latest)
		t.end = latest
	}
	return t.ctx, t.end
}
