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
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// Tenures knows until when this replica holds each space's fence, from the
// fence Leases it writes itself, and holds back the release of a fence
// while a write to its space is in flight. The Coordinator (as
// multicluster-runtime v0.24.1's) learns that a fence is lost only when its
// next renewal fails, and keeps the space's controller running until then:
// when a renewal comes late and another replica takes the expired fence,
// both write to the space. A space's controller holds its Tenure around
// each write instead.
//
// A tenure starts from the renew time written in the Lease, which the
// coordinator reads from its clock before it sends the renewal, and ends a
// quarter of the Lease's duration before the Lease expires: that quarter
// is left for a write sent just before the end to land, and for the
// replicas' clocks to differ. A release ends the tenure before it is sent,
// waits for the writes in flight, and is not sent while a write that ended
// without an answer may land yet, that is, until the fence as renewed when
// that write began expires: the Lease expires instead. A space's Quiet
// waits the same way, per space, before its controller starts again on
// this replica. Safe for concurrent use.
type Tenures struct {
	prefix string
	holder string
	clock  clock.Clock
	log    logr.Logger

	mu   sync.Mutex
	idle *sync.Cond // signalled whenever a write ends
	// ended is closed, and replaced, whenever a write ends: Quiet waits
	// on it with a context, which idle cannot do.
	ended  chan struct{}
	fences map[string]*fence
	// sweepAt is when a record may next have become prunable by the clock
	// alone, or zero: the fence of a space gone is never touched again, so
	// any access past it sweeps every record.
	sweepAt time.Time
}

// fence is this replica's view of one fence Lease.
type fence struct {
	// until is when the tenure ends; zero when it has.
	until time.Time
	// epoch counts the tenure's ends, so that a renewal answered after a
	// release does not start the tenure again.
	epoch uint64
	// lasts is the fence's duration, as this replica last wrote it.
	lasts time.Duration
	// writing counts the writes to the space in flight.
	writing int
	// pinned counts the writes of the fence Lease in flight and the
	// releases waiting for the space's writes: each holds on to this
	// record, which must stay the fence's until they are done.
	pinned int
	// unansweredUntil is when the fence, as renewed when a write that
	// ended without the API server's answer began, expires: that write
	// may land until then, so the fence is not released before.
	unansweredUntil time.Time
	// spaces are the same counts per space of the slot, for a space's
	// Quiet: the other spaces' writes are not its business. Each goes
	// once it holds nothing.
	spaces map[multicluster.ClusterName]*spaceWrites
}

// spaceWrites are one space's writes that may still land.
type spaceWrites struct {
	// writing counts the space's writes in flight.
	writing int
	// unansweredUntil is the latest a write to the space that ended
	// without an answer may land.
	unansweredUntil time.Time
}

// settled reports whether no write to the space may land after now.
func (w *spaceWrites) settled(now time.Time) bool {
	return w.writing == 0 && !now.Before(w.unansweredUntil)
}

// spaceLocked returns the record of one space's writes, made on first use.
func (f *fence) spaceLocked(space multicluster.ClusterName) *spaceWrites {
	if f.spaces == nil {
		f.spaces = map[multicluster.ClusterName]*spaceWrites{}
	}
	w := f.spaces[space]
	if w == nil {
		w = &spaceWrites{}
		f.spaces[space] = w
	}
	return w
}

// NewTenures returns the tenures of holder (the fences' holder identity:
// the peer registry's Self().ID) over the fences named
// <prefix>-<space's fence key>.
func NewTenures(prefix, holder string, log logr.Logger) *Tenures {
	t := &Tenures{prefix: prefix, holder: holder, clock: clock.RealClock{}, log: log, ended: make(chan struct{}), fences: map[string]*fence{}}
	t.idle = sync.NewCond(&t.mu)
	return t
}

// errTakenAgain refuses a fence's release that a take of the fence
// overtook while the release waited for the writes in flight.
var errTakenAgain = errors.New("the fence was taken again while its release waited")

// errWritesUnanswered refuses a fence's release while a write to its space
// may still land.
var errWritesUnanswered = errors.New("a write to the space ended without an answer and may land yet: the fence is left to expire")

// Client returns c with every write of a fence Lease recorded: a write
// that makes this replica the holder starts or extends its tenure once it
// succeeds; any other write of the fence (a release) ends the tenure first.
// A fence read with another holder ends the tenure too.
func (t *Tenures) Client(c client.WithWatch) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return t.write(obj, func() error { return c.Create(ctx, obj, opts...) })
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return t.write(obj, func() error { return c.Update(ctx, obj, opts...) })
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if lease, ok := t.fenceLease(obj); ok && !t.ours(lease) {
				t.lost(lease.Name)
			}
			return nil
		},
	})
}

// fenceLease returns obj as a fence Lease.
func (t *Tenures) fenceLease(obj client.Object) (*coordinationv1.Lease, bool) {
	lease, ok := obj.(*coordinationv1.Lease)
	return lease, ok && strings.HasPrefix(lease.Name, t.prefix+"-")
}

// ours reports whether the Lease names this replica as its holder, with a
// renew time and a duration.
func (t *Tenures) ours(lease *coordinationv1.Lease) bool {
	spec := lease.Spec
	return spec.HolderIdentity != nil && *spec.HolderIdentity == t.holder && spec.RenewTime != nil && spec.LeaseDurationSeconds != nil
}

// write sends a write of obj and records what it means for the tenures.
func (t *Tenures) write(obj client.Object, send func() error) error {
	lease, ok := t.fenceLease(obj)
	if !ok {
		return send()
	}
	if !t.ours(lease) {
		if err := t.end(lease.Name); err != nil {
			return err
		}
		return send()
	}
	t.mu.Lock()
	t.sweepLocked()
	f := t.fenceLocked(lease.Name)
	epoch := f.epoch
	f.pinned++
	t.mu.Unlock()
	err := send()
	t.mu.Lock()
	defer t.mu.Unlock()
	f.pinned--
	// A failed write leaves the tenure recorded as it was: no other
	// replica takes the fence before it expires. A tenure that ended while
	// the write was in flight stays ended.
	if err == nil && f.epoch == epoch {
		lasts := time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
		f.lasts = lasts
		if until := lease.Spec.RenewTime.Add(lasts - lasts/4); until.After(f.until) {
			f.until = until
		}
	}
	// A take that failed, for a space that then moves away, is never
	// written again: its record goes now or at a later sweep.
	t.pruneLocked(lease.Name, f)
	return err
}

// fenceLocked returns the record of a fence Lease, made on first use.
func (t *Tenures) fenceLocked(lease string) *fence {
	f := t.fences[lease]
	if f == nil {
		f = &fence{}
		t.fences[lease] = f
	}
	return f
}

// endLocked ends the tenure, and forgets the fence once nothing of it is
// left to wait for.
func (t *Tenures) endLocked(lease string, f *fence) {
	f.until = time.Time{}
	f.epoch++
	t.pruneLocked(lease, f)
}

// pruneLocked forgets the fence once its record holds nothing: no tenure
// in force, no write of the space or of the fence in flight, and no
// unanswered write that may land yet. Otherwise, when only the clock
// stands in the way, it has the record swept once that time has come.
func (t *Tenures) pruneLocked(lease string, f *fence) {
	now := t.clock.Now()
	for space, w := range f.spaces {
		if w.settled(now) {
			delete(f.spaces, space)
		}
	}
	if t.fences[lease] != f || f.writing > 0 || f.pinned > 0 {
		return // whoever is in flight prunes it once done
	}
	due := f.until
	if f.unansweredUntil.After(due) {
		due = f.unansweredUntil
	}
	if !now.Before(due) {
		delete(t.fences, lease)
		return
	}
	if t.sweepAt.IsZero() || due.Before(t.sweepAt) {
		t.sweepAt = due
	}
}

// sweepLocked prunes every record once one may have become prunable by the
// clock: a release refused while a write may land, or a tenure that lapsed
// unrenewed, leaves a record that nothing else touches again.
func (t *Tenures) sweepLocked() {
	if t.sweepAt.IsZero() || t.clock.Now().Before(t.sweepAt) {
		return
	}
	t.sweepAt = time.Time{}
	for lease, f := range t.fences {
		t.pruneLocked(lease, f)
	}
}

// lost ends the tenure of a fence read with another holder.
func (t *Tenures) lost(lease string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweepLocked()
	if f := t.fences[lease]; f != nil {
		t.endLocked(lease, f)
	}
}

// end ends the tenure, waits for the writes in flight, and refuses when
// one of them ended without an answer.
func (t *Tenures) end(lease string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweepLocked()
	f := t.fences[lease]
	if f == nil {
		return nil
	}
	f.until = time.Time{}
	f.epoch++
	f.pinned++
	err := t.awaitWritesLocked(f)
	f.pinned--
	if err == nil && t.clock.Now().Before(f.unansweredUntil) {
		t.log.Info("Not releasing a fence: a write to its space went unanswered and may land until the fence expires",
			"fence", lease, "until", f.unansweredUntil)
		err = errWritesUnanswered
	}
	t.pruneLocked(lease, f)
	return err
}

// awaitWritesLocked waits for the space's writes in flight, and refuses
// when a take of the fence overtook the release meanwhile.
func (t *Tenures) awaitWritesLocked(f *fence) error {
	// Every write's context ends by the end of the tenure as it was when
	// the write began, so this wait ends too.
	for f.writing > 0 {
		t.idle.Wait()
		if !f.until.IsZero() {
			return errTakenAgain
		}
	}
	if !f.until.IsZero() {
		return errTakenAgain
	}
	return nil
}

// Of returns the tenure of one space.
func (t *Tenures) Of(space multicluster.ClusterName) Tenure {
	return Tenure{tenures: t, space: space, lease: leaseOf(t.prefix, FenceKey(space))}
}

// Tenure is this replica's tenure of one space's fence.
type Tenure struct {
	tenures *Tenures
	space   multicluster.ClusterName
	lease   string
}

// HeldUntil is when the tenure ends; the zero time when this replica does
// not hold the fence.
func (t Tenure) HeldUntil() time.Time {
	t.tenures.mu.Lock()
	defer t.tenures.mu.Unlock()
	t.tenures.sweepLocked()
	if f := t.tenures.fences[t.lease]; f != nil {
		return f.until
	}
	return time.Time{}
}

// LapsedError says that the tenure ended before a write.
type LapsedError struct {
	Space multicluster.ClusterName
	// Until is when the tenure ended; zero when this replica has not held
	// the fence since it last gave it up.
	Until time.Time
}

// Error says when the tenure ended.
func (e *LapsedError) Error() string {
	if e.Until.IsZero() {
		return fmt.Sprintf("this replica does not hold the fence of space %s", e.Space)
	}
	return fmt.Sprintf("this replica's tenure of the fence of space %s ended at %s", e.Space, e.Until.Format(time.RFC3339Nano))
}

// Hold starts one write to the space at now: it returns the write's
// context, which ends when the tenure does, and the function to call with
// the write's result once it has returned; or a LapsedError once the
// tenure has ended by now.
func (t Tenure) Hold(ctx context.Context, now time.Time) (context.Context, func(error), error) {
	tt := t.tenures
	tt.mu.Lock()
	tt.sweepLocked()
	f := tt.fences[t.lease]
	if f == nil || !now.Before(f.until) {
		var until time.Time
		if f != nil {
			until = f.until
		}
		tt.mu.Unlock()
		return nil, nil, &LapsedError{Space: t.space, Until: until}
	}
	w := f.spaceLocked(t.space)
	f.writing++
	w.writing++
	left := f.until.Sub(now)
	expires := f.until.Add(f.lasts / 4)
	tt.mu.Unlock()
	write, cancel := context.WithTimeout(ctx, left)
	return write, func(err error) {
		cancel()
		tt.mu.Lock()
		defer tt.mu.Unlock()
		f.writing--
		w.writing--
		if unanswered(err) {
			f.unansweredUntil = later(f.unansweredUntil, expires)
			w.unansweredUntil = later(w.unansweredUntil, expires)
		}
		// The last write of a space whose tenure was lost meanwhile.
		tt.pruneLocked(t.lease, f)
		tt.idle.Broadcast()
		close(tt.ended)
		tt.ended = make(chan struct{})
	}, nil
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// NotQuietError says that a space's writes outlasted Quiet's bound, the
// fence's duration.
type NotQuietError struct {
	Space multicluster.ClusterName
	// Writing counts the space's writes still in flight.
	Writing int
	// Until is the latest an unanswered write to the space may land.
	Until time.Time
	// After is how long Quiet waited.
	After time.Duration
}

// Error says what is left to wait for.
func (e *NotQuietError) Error() string {
	return fmt.Sprintf("space %s not quiet after %s, the fence's duration: %d write(s) in flight, unanswered ones may land until %s",
		e.Space, e.After, e.Writing, e.Until.Format(time.RFC3339Nano))
}

// Quiet waits until no write to the space that this replica started may
// still land: until the space's writes in flight have returned and, after
// one that returned without an answer (cut off by its context, say), until
// the fence as renewed when that write began expires. A controller started
// on the space afterwards finds every write of the one before in what it
// reads. The other spaces of the slot are not waited for.
//
// The wait is bounded by the fence's duration, from when Quiet is called:
// each write's context ends with the tenure as it was when the write began,
// and an unanswered write's window with the fence's expiry, both within
// it. Past that bound Quiet returns a NotQuietError, and the ctx's error
// if ctx ends first.
func (t Tenure) Quiet(ctx context.Context) error {
	tt := t.tenures
	var began, deadline time.Time
	for {
		now := tt.clock.Now()
		writing, until, lasts, ended := t.pending()
		if writing == 0 && !now.Before(until) {
			return nil
		}
		if began.IsZero() {
			began, deadline = now, now.Add(lasts)
			tt.log.Info("Waiting for the writes to the space that may still land before serving it again",
				"space", t.space, "inFlight", writing, "unansweredUntil", until, "atMost", lasts)
		}
		if !now.Before(deadline) {
			return &NotQuietError{Space: t.space, Writing: writing, Until: until, After: now.Sub(began)}
		}
		wake := deadline
		if writing == 0 && until.Before(wake) {
			wake = until
		}
		if err := tt.sleep(ctx, wake.Sub(now), ended); err != nil {
			return fmt.Errorf("waiting for the writes to space %s: %w", t.space, err)
		}
	}
}

// pending returns how many writes to the space are in flight,
// until when an unanswered one may land, the fence's duration, and the
// channel closed once the next write ends.
func (t Tenure) pending() (writing int, until time.Time, lasts time.Duration, ended <-chan struct{}) {
	tt := t.tenures
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.sweepLocked()
	f := tt.fences[t.lease]
	if f == nil {
		return 0, time.Time{}, 0, tt.ended
	}
	if w := f.spaces[t.space]; w != nil {
		writing, until = w.writing, w.unansweredUntil
	}
	return writing, until, f.lasts, tt.ended
}

// sleep waits for d on the tenures' clock, or until ended is closed; it
// returns ctx's error if ctx ends first.
func (t *Tenures) sleep(ctx context.Context, d time.Duration, ended <-chan struct{}) error {
	timer := t.clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-ended:
	case <-timer.C():
	}
	return nil
}

// unanswered reports whether a write may have landed without the API
// server saying so: anything but success or a refusal, that is, an error
// with an API status below 500 other than a timeout. Its context may have
// ended first, the connection broken, or the server given up waiting for
// a write it may still commit.
func unanswered(err error) bool {
	if err == nil {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	return status.Status().Code >= 500 || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)
}
