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

// deadlineContext is a context.Context done at its deadline, like one from
// context.WithDeadline, whose timer and channel are reused: an evaluation
// takes one with withDeadline and releases it when it returns, and one
// released before its deadline serves a later evaluation. A context.WithDeadline
// per evaluation (a context, a channel and a runtime timer, about a quarter
// of the time of evaluating the seed condition without cost tracking) would
// be garbage at once. It carries no values and has no parent.
type deadlineContext struct {
	deadline time.Time
	done     chan struct{}
	timer    *time.Timer // closes done at the deadline
}

// deadlines holds released, unexpired deadlineContexts.
var deadlines sync.Pool

// withDeadline returns a context done at deadline. Release it with release.
func withDeadline(deadline time.Time) *deadlineContext {
	if c, ok := deadlines.Get().(*deadlineContext); ok {
		c.deadline = deadline
		c.timer.Reset(time.Until(deadline))
		return c
	}
	c := &deadlineContext{deadline: deadline, done: make(chan struct{})}
	c.timer = time.AfterFunc(time.Until(deadline), func() { close(c.done) })
	return c
}

// release gives c back for reuse if its timer has not fired (a stopped
// AfterFunc timer never runs its function, so done stays open); an expired
// context is left to the garbage collector. c must not be used afterwards.
func (c *deadlineContext) release() {
	if c.timer.Stop() {
		deadlines.Put(c)
	}
}

// Deadline implements context.Context.
func (c *deadlineContext) Deadline() (time.Time, bool) { return c.deadline, true }

// Done implements context.Context.
func (c *deadlineContext) Done() <-chan struct{} { return c.done }

// Err implements context.Context: context.DeadlineExceeded once done.
func (c *deadlineContext) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// Value implements context.Context; c carries no values.
func (c *deadlineContext) Value(any) any { return nil }
