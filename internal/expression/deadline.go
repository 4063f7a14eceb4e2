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
// multiple of deadlineResolution after base: one context, and one timer, for
// all the evaluations that end in the same interval, where a context of
// their own would each take a timer. cel-go stops an evaluation when its
// context is done. Times are taken from base on the monotonic clock, so
// that a step of the wall clock moves no deadline.
type deadlines struct {
	base time.Time
	// last is the context handed out last, looked up without the lock.
	last  atomic.Pointer[endContext]
	mu    sync.Mutex
	byEnd map[int64]*endContext // by end, in intervals since base
}

// newDeadlines returns deadlines whose intervals start now.
func newDeadlines() *deadlines {
	return &deadlines{base: time.Now(), byEnd: map[int64]*endContext{}}
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

// interval returns the number of the interval since base that t falls in,
// counting an interval's end as its own.
func (d *deadlines) interval(t time.Time) int64 {
	since := t.Sub(d.base)
	if since <= 0 {
		return -int64(-since / deadlineResolution)
	}
	return int64((since + deadlineResolution - 1) / deadlineResolution)
}

// shared returns the context of deadline's interval.
func (d *deadlines) shared(deadline time.Time) context.Context {
	end := d.interval(deadline)
	if last := d.last.Load(); last != nil && last.end == end {
		return last.ctx
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.byEnd[end]
	if !ok {
		// Forget the contexts whose interval has ended; their deadline
		// has passed, so cancelling them stops nothing early.
		now := int64(time.Since(d.base) / deadlineResolution)
		for e, old := range d.byEnd {
			if e < now {
				old.cancel()
				delete(d.byEnd, e)
			}
		}
		ctx, cancel := context.WithDeadline(context.Background(), d.base.Add(time.Duration(end)*deadlineResolution))
		c = &endContext{end: end, ctx: ctx, cancel: cancel}
		d.byEnd[end] = c
	}
	d.last.Store(c)
	return c.ctx
}
