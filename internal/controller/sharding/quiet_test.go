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

package sharding

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// quietHarness is a space whose fence this replica holds, on a fake clock.
type quietHarness struct {
	t       *testing.T
	tenures *Tenures
	clock   *clocktesting.FakeClock
	now     time.Time
	space   multicluster.ClusterName
}

// fenceSeconds is the duration of the quiet tests' fence: its tenure ends
// at 15 s, and a write cut off by then may land until 20 s.
const fenceSeconds = 20

func newQuietHarness(t *testing.T) *quietHarness {
	t.Helper()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	h := &quietHarness{t: t, tenures: NewTenures(fencePrefix, "a", logr.Discard()),
		clock: clocktesting.NewFakeClock(now), now: now, space: "kcp#root:wds031"}
	h.tenures.clock = h.clock
	if err := h.tenures.write(fenceOf(h.space, "a", now, fenceSeconds), func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	return h
}

// hold starts a write to space.
func (h *quietHarness) hold(space multicluster.ClusterName) func(error) {
	h.t.Helper()
	_, done, err := h.tenures.Of(space).Hold(context.Background(), h.clock.Now())
	if err != nil {
		h.t.Fatalf("Hold while the fence is held: %v", err)
	}
	return done
}

// quiet runs the space's Quiet in the background and returns its result's
// channel, once Quiet returned or waits on the clock.
func (h *quietHarness) quiet(ctx context.Context, space multicluster.ClusterName) <-chan error {
	h.t.Helper()
	result := make(chan error, 1)
	go func() { result <- h.tenures.Of(space).Quiet(ctx) }()
	environment.Eventually(h.t, 10*time.Second, "Quiet returned or waiting", func() error {
		if len(result) > 0 || h.clock.HasWaiters() {
			return nil
		}
		return errors.New("neither")
	})
	return result
}

// waiting fails the test if Quiet has returned, holding a moment for one
// that would return late.
func (h *quietHarness) waiting(result <-chan error, why string) {
	h.t.Helper()
	environment.Consistently(h.t, 100*time.Millisecond, "Quiet waits "+why, func() error {
		if len(result) > 0 {
			return fmt.Errorf("Quiet returned %w", <-result)
		}
		return nil
	})
}

// returned returns Quiet's result, failing the test if it does not come.
func (h *quietHarness) returned(result <-chan error, what string) error {
	h.t.Helper()
	select {
	case err := <-result:
		return err
	case <-time.After(10 * time.Second):
		h.t.Fatalf("Quiet did not return %s", what)
		return nil
	}
}

// TestQuietReturnsAtOnceWithNothingInFlight: a space never written, and a
// space whose writes were all answered (a success, a refusal), are quiet.
func TestQuietReturnsAtOnceWithNothingInFlight(t *testing.T) {
	h := newQuietHarness(t)
	if err := h.returned(h.quiet(context.Background(), "kcp#root:never"), "for a space never written"); err != nil {
		t.Errorf("Quiet of a space never written: %v", err)
	}
	h.hold(h.space)(nil)
	h.hold(h.space)(apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "c", errors.New("changed")))
	if err := h.returned(h.quiet(context.Background(), h.space), "with every write answered"); err != nil {
		t.Errorf("Quiet with every write answered: %v", err)
	}
}

// TestQuietWaitsForTheWritesInFlight: Quiet returns once the space's write
// in flight has returned, answered, and not before.
func TestQuietWaitsForTheWritesInFlight(t *testing.T) {
	h := newQuietHarness(t)
	done := h.hold(h.space)
	result := h.quiet(context.Background(), h.space)
	h.waiting(result, "for the write in flight")
	done(nil)
	if err := h.returned(result, "once the write was answered"); err != nil {
		t.Errorf("Quiet once the write was answered: %v", err)
	}
}

// TestQuietWaitsOutAnUnansweredWrite: a write that returned without an
// answer may land until the fence, as renewed when it began, expires:
// Quiet returns then, and not before, even with the fence renewed since.
func TestQuietWaitsOutAnUnansweredWrite(t *testing.T) {
	h := newQuietHarness(t)
	h.hold(h.space)(fmt.Errorf("patching: %w", context.DeadlineExceeded))
	expires := h.now.Add(fenceSeconds * time.Second)
	renewed := h.now.Add(5 * time.Second)
	h.clock.SetTime(renewed)
	if err := h.tenures.write(fenceOf(h.space, "a", renewed, fenceSeconds), func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	result := h.quiet(context.Background(), h.space)
	h.waiting(result, "while the unanswered write may land")
	h.clock.SetTime(expires.Add(-time.Millisecond))
	h.waiting(result, "a millisecond before the fence would have expired")
	h.clock.SetTime(expires)
	if err := h.returned(result, "once the fence would have expired"); err != nil {
		t.Errorf("Quiet once the fence would have expired: %v", err)
	}
}

// TestQuietWaitsForItsSpaceAlone: the writes to another space of the same
// slot (fence) do not hold up the space's Quiet.
func TestQuietWaitsForItsSpaceAlone(t *testing.T) {
	h := newQuietHarness(t)
	sibling := siblingOf(t, h.space)
	done := h.hold(sibling)
	defer done(nil)
	h.hold(sibling)(fmt.Errorf("patching: %w", context.DeadlineExceeded))
	if err := h.returned(h.quiet(context.Background(), h.space), "with only another space's writes in flight"); err != nil {
		t.Errorf("Quiet with only another space's writes in flight: %v", err)
	}
	h.waiting(h.quiet(context.Background(), sibling), "for the other space's own writes")
}

// siblingOf returns another space of space's slot.
func siblingOf(t *testing.T, space multicluster.ClusterName) multicluster.ClusterName {
	t.Helper()
	for i := range 100 * Slots {
		other := multicluster.ClusterName(fmt.Sprintf("kcp#root:other%d", i))
		if FenceKey(other) == FenceKey(space) {
			return other
		}
	}
	t.Fatal("no other space of the slot found")
	return ""
}

// TestQuietReturnsWhenItsContextEnds: a Quiet cut off by its context says
// so, the write still in flight.
func TestQuietReturnsWhenItsContextEnds(t *testing.T) {
	h := newQuietHarness(t)
	done := h.hold(h.space)
	defer done(nil)
	ctx, cancel := context.WithCancel(context.Background())
	result := h.quiet(ctx, h.space)
	h.waiting(result, "for the write in flight")
	cancel()
	if err := h.returned(result, "once its context ended"); !errors.Is(err, context.Canceled) {
		t.Errorf("Quiet once its context ended returned %v, want context.Canceled", err)
	}
}

// TestQuietIsBoundedByTheFence: a write that never returns, though its
// context ended with the tenure, holds Quiet up for the fence's duration
// at most, after which Quiet says that the space is not quiet.
func TestQuietIsBoundedByTheFence(t *testing.T) {
	h := newQuietHarness(t)
	done := h.hold(h.space)
	defer done(nil)
	result := h.quiet(context.Background(), h.space)
	h.clock.SetTime(h.now.Add(fenceSeconds*time.Second - time.Millisecond))
	h.waiting(result, "within the fence's duration")
	h.clock.SetTime(h.now.Add(fenceSeconds * time.Second))
	if err := h.returned(result, "past the fence's duration"); err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("Quiet past the fence's duration, a write in flight, returned %v; want that the space is not quiet", err)
	}
}
