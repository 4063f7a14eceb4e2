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
	"sync/atomic"
	"time"
)

// deadlineResolution is how far past its deadline an evaluation may run
// before its context is done, besides the iterations between two interrupt
// checks.
const deadlineResolution = 10 * time.Millisecond

// deadlines hands out contexts that are done at a deadline rounded up to a
// multiple of deadlineResolution: one context, and one timer, for all the
// evaluations that end in the same interval. cel-go stops an evaluation
// when its context is done; a context and timer of its own took about as
// long as evaluating the seed condition.
type deadlines struct {
	// last is the context handed out last, looked up without the lock.
	last  atomic.Pointer[endContext]
	mu    sync.Mutex
	byEnd map[int64]*endContext // by end, in deadlineResolution since the epoch
}

// endContext is a context done at the end of interval end.
type endContext struct {
	end    int64
	ctx    context.Context
	cancel context.CancelFunc
}

// until returns a context that is done at deadline or at most
// deadlineResolution after it, and the function that releases it. A
// deadline nearer than deadlineResolution to now gets a context of its own,
// done at the deadline itself.
func (d *deadlines) until(now, deadline time.Time) (context.Context, context.CancelFunc) {
	if deadline.Sub(now) < deadlineResolution {
		return context.WithDeadline(context.Background(), deadline)
	}
	return d.shared(deadline), func() {}
}

// shared returns the context of deadline's interval.
func (d *deadlines) shared(deadline time.Time) context.Context {
	end := (deadline.UnixNano() + int64(deadlineResolution) - 1) / int64(deadlineResolution)
	if last := d.last.Load(); last != nil && last.end == end {
		return last.ctx
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.byEnd[end]
	if !ok {
		if d.byEnd == nil {
			d.byEnd = map[int64]*endContext{}
		}
		// Forget the contexts that are done.
		now := time.Now().UnixNano() / int64(deadlineResolution)
		for e, old := range d.byEnd {
			if e < now {
				old.cancel()
				delete(d.byEnd, e)
			}
		}
		ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, end*int64(deadlineResolution)))
		c = &endContext{end: end, ctx: ctx, cancel: cancel}
		d.byEnd[end] = c
	}
	d.last.Store(c)
	return c.ctx
}
