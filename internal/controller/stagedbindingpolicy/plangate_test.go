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
	"errors"
	"testing"
	"time"
)

// TestPlanGate lets two runs plan at once: a third waits until one leaves,
// or gives up when its context ends; a nil gate lets every run in.
func TestPlanGate(t *testing.T) {
	ctx := context.Background()
	g := newPlanGate(2)
	for range 2 {
		if err := g.enter(ctx); err != nil {
			t.Fatalf("enter() = %v with a free turn", err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := g.enter(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("third enter() = %v, want it to wait until its context ends", err)
	}
	entered := make(chan error, 1)
	go func() { entered <- g.enter(ctx) }()
	select {
	case err := <-entered:
		t.Fatalf("third enter() = %v before anyone left", err)
	case <-time.After(50 * time.Millisecond):
	}
	g.leave()
	if err := <-entered; err != nil {
		t.Fatalf("third enter() = %v once a turn was free", err)
	}

	unbounded := newPlanGate(0)
	for range 100 {
		if err := unbounded.enter(ctx); err != nil {
			t.Fatalf("enter() on an unbounded gate = %v", err)
		}
	}
	unbounded.leave()
}

// TestPlanGateLetsGoOnPanic: a run whose planning panics (controller-runtime
// recovers it) gives its turn back; otherwise the space's other runs would
// wait for good.
func TestPlanGateLetsGoOnPanic(t *testing.T) {
	g := newPlanGate(1)
	func() {
		defer func() { _ = recover() }()
		_ = g.plan(context.Background(), func() { panic("a bug in Plan") })
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ran := false
	if err := g.plan(ctx, func() { ran = true }); err != nil || !ran {
		t.Fatalf("plan() after a panic = %v (ran: %v), want a free turn", err, ran)
	}
}
