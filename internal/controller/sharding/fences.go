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
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// Slots is how many fences the spaces share: a space hashes to one of
// Slots fixed slots, and the slot is what is placed, fenced, renewed,
// taken and released (docs/reliability.md, "Slot fences", says why 64).
// Every replica of a fleet must agree on it, so it is no option.
const Slots = 64

// FenceKey is the name the coordinator knows a space by: its slot,
// "slot-<k>", k the space's name hashed (FNV-1a, then MurmurHash3's
// finalizer, as Rendezvous does) modulo Slots. The spaces of a slot share
// its fence, and the sharder places the slot, not the space.
func FenceKey(space multicluster.ClusterName) multicluster.ClusterName {
	h := fnv.New64a()
	_, _ = h.Write([]byte(space))
	return multicluster.ClusterName(fmt.Sprintf("slot-%d", fmix64(h.Sum64())%Slots))
}

// leaseOf names the fence Lease of the slot whose FenceKey is key.
func leaseOf(prefix string, key multicluster.ClusterName) string {
	return prefix + "-" + string(key)
}

// fenceGuard takes, renews and releases one slot's fence Lease, which the
// engaged spaces of the slot share. It is a
// fork of multicluster-runtime v0.24.1's leaseGuard
// (pkg/manager/coordinator/sharded/leaseguard.go), whose rules it keeps: a
// take creates the Lease or adopts it when free, expired or already its
// holder's, and renews it every renew until a renewal fails, which calls
// lost and releases it; a release clears the holder if it is still this
// replica. It differs in that it is safe for concurrent use, since the
// Coordinator takes fences outside its lock: a take and a release wait for
// each other, as long as their contexts allow; a renewal cut off by a
// release neither calls lost nor releases the fence again (upstream did,
// even once the fence had been taken anew); a release that meets a
// conflicting renewal still in flight tries again; a renewal is one write
// of the Lease as last written, read only when that conflicts (upstream
// read and wrote every time); a renewal not answered within the fence's
// duration is given up and the next one sent, and neither it nor one whose
// connection broke, nor one the API server was too busy to act on, gives
// the fence up (upstream waited for the answer however long, and gave the
// fence up at any error), and one the API server was too busy for is
// tried again within a quarter period (busyRetry); the first renewal comes at a random point of the
// period's second half, counted from the take's send (or, if the take is
// answered after that point, at a random point of the quarter period after
// the answer), so that fences taken together are renewed apart and a take
// answered late is renewed sooner; it believes another holder's renew time
// and duration only so far (expired), where upstream believed any; and it
// reads the time from a clock.
type fenceGuard struct {
	client          client.Client
	clock           clock.WithTicker
	key             types.NamespacedName
	holder          string
	duration, renew time.Duration
	lost            func(error) // called with why a renewal failed
	// unanswered, when set, is called with a renewal given up for want
	// of an answer, or refused as the API server was too busy.
	unanswered func(error)
	// observe times each renewal by its result: observeRenewal, unless a
	// test sets its own before the first TryAcquire.
	observe func(result string, took time.Duration)

	lock   chan struct{}      // held through a take and a release
	held   atomic.Bool        // set under lock; read by anyone
	cancel context.CancelFunc // stops the renewals; under lock

	// releasing and taking count the releases and the takes the
	// Coordinator has started and not seen end; under its lock.
	releasing, taking int

	aheadMu sync.Mutex
	ahead   sighting // the last renewal read too far ahead; under aheadMu
}

func newFenceGuard(c client.Client, clk clock.WithTicker, namespace, name, holder string, duration, renew time.Duration, lost func(error)) *fenceGuard {
	return &fenceGuard{client: c, clock: clk, key: types.NamespacedName{Namespace: namespace, Name: name},
		holder: holder, duration: duration, renew: renew, lost: lost, observe: observeRenewal, lock: make(chan struct{}, 1)}
}

func (g *fenceGuard) unlock() { <-g.lock }

// TryAcquire takes the fence, unless another holder's has not expired,
// and reports whether this replica holds it.
func (g *fenceGuard) TryAcquire(ctx context.Context) bool {
	select {
	case g.lock <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	defer g.unlock()
	if g.held.Load() {
		return true
	}
	now := metav1.NewMicroTime(g.clock.Now())
	seconds := g.leaseSeconds()
	var lease coordinationv1.Lease
	err := g.client.Get(ctx, g.key, &lease)
	switch {
	case apierrors.IsNotFound(err):
		lease = coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: g.key.Namespace, Name: g.key.Name},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       &g.holder,
				LeaseDurationSeconds: &seconds,
				AcquireTime:          &now,
				RenewTime:            &now,
			},
		}
		if err := g.client.Create(ctx, &lease); err != nil {
			return false
		}
	case err != nil:
		return false
	default:
		holder := ""
		if lease.Spec.HolderIdentity != nil {
			holder = *lease.Spec.HolderIdentity
		}
		if holder != "" && holder != g.holder && !g.expired(&lease, now.Time) {
			return false
		}
		lease.Spec.HolderIdentity = &g.holder
		lease.Spec.LeaseDurationSeconds = &seconds
		if holder != g.holder || lease.Spec.AcquireTime == nil {
			lease.Spec.AcquireTime = &now
		}
		lease.Spec.RenewTime = &now
		if err := g.client.Update(ctx, &lease); err != nil {
			return false
		}
	}
	rctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	g.held.Store(true)
	go g.renewals(rctx, lease.DeepCopy(), now.Time)
	return true
}

// renewals renews the fence, last written as last by a take sent at sent,
// every renew until a renewal fails or ctx ends, that is, until the fence
// is released.
func (g *fenceGuard) renewals(ctx context.Context, last *coordinationv1.Lease, sent time.Time) {
	// The first renewal comes at a random point of the period's second
	// half, so that fences taken together are not renewed together ever
	// after. The period counts from the take's send, as the tenure does:
	// a take answered late has used up some of it. A take answered after
	// that point is renewed within a quarter period of its answer, so that
	// takes answered late together are still renewed apart.
	first := g.renew/2 + rand.N(g.renew/2+1) - g.clock.Since(sent)
	if first <= 0 {
		first = rand.N(g.renew/4 + 1)
	}
	firstTimer := g.clock.NewTimer(first)
	defer firstTimer.Stop()
	select {
	case <-ctx.Done():
		return
	case <-firstTimer.C():
	}
	ticker := g.clock.NewTicker(g.renew)
	defer ticker.Stop()
	early := false // whether this renewal is a busy one's early retry
	for {
		start := g.clock.Now()
		renewed, err := g.renewWithin(ctx, last)
		took := g.clock.Since(start)
		switch {
		case err == nil:
			g.observe(renewalRenewed, took)
			last = renewed
		case ctx.Err() != nil:
			// Cut off by a release: it says nothing of the API server.
		case silent(err):
			g.observe(silentResult(err), took)
			// Silence is not a loss: the fence is lost to a holder or
			// a refusal that an answer shows. A saturated API server
			// answers late, and giving the space up for it costs a
			// release, a take and an engagement more; the tenure keeps
			// the writes out meanwhile.
			if g.unanswered != nil {
				g.unanswered(err)
			}
		default:
			g.observe(renewalFailed, took)
			g.renewalFailed(ctx, err)
			return
		}
		var ok bool
		if early, ok = nextStep(ctx, g.clock, ticker.C(), err, g.renew, !early); !ok {
			return
		}
	}
}

// nextStep waits for a Lease's next step (a fence's renewal, a peer
// Lease's renewal or read): the next tick or, if mayRetry and the API
// server refused the last step, which failed with err, as too busy,
// sooner (busyRetry), on clk. Only a step sent on the period is retried
// early, so that a fleet of Leases refused together at most doubles its
// steps while the API server sheds load. It reports whether the next
// step is such a retry, and false once ctx ends.
func nextStep(ctx context.Context, clk clock.Clock, tick <-chan time.Time, err error, renew time.Duration, mayRetry bool) (early, ok bool) {
	var retry <-chan time.Time
	if delay, busy := busyRetry(err, renew); busy && mayRetry {
		timer := clk.NewTimer(delay)
		defer timer.Stop()
		retry = timer.C()
	}
	select {
	case <-ctx.Done():
		return false, false
	case <-tick:
		return false, true
	case <-retry:
		return true, true
	}
}

// busyRetry returns when to try again a renewal that the API server
// refused as too busy (429, 5xx), and whether it did: at a random point
// of the second half of the server's wait or a quarter of the renew
// period, whichever is shorter. The Lease client does not wait inside the
// request (LeaseConfig), and a whole period, or kcp's 32 s, would use up
// much of the tenure; the jitter keeps the fences refused together from
// being retried together. A renewal not answered is not: the next period
// has come by the time it is given up.
func busyRetry(err error, renew time.Duration) (time.Duration, bool) {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) || !silent(err) {
		return 0, false
	}
	limit := renew / 4
	if seconds, ok := apierrors.SuggestsClientDelay(err); ok && seconds > 0 {
		limit = min(limit, time.Duration(seconds)*time.Second)
	}
	return limit - rand.N(limit/2+1), true
}

// silentResult is the result a silent renewal is timed under: throttled
// for a 429, so that the API server's shedding shows apart.
func silentResult(err error) string {
	if apierrors.IsTooManyRequests(err) {
		return renewalThrottled
	}
	return renewalUnanswered
}

// renewalFailed stops serving the space and releases the fence, unless the
// fence was released while the renewal was in flight, which is why it
// failed: a later take may hold the fence again by now.
func (g *fenceGuard) renewalFailed(ctx context.Context, err error) {
	g.lock <- struct{}{}
	defer g.unlock()
	if ctx.Err() != nil {
		return
	}
	// Not held from here on, so that a take answered meanwhile does not
	// serve the space on a fence that is gone.
	g.cancel()
	g.held.Store(false)
	if g.lost != nil {
		g.lost(err)
	}
	rctx, cancel := context.WithTimeout(context.Background(), g.duration/2)
	defer cancel()
	g.releaseLocked(rctx)
}

// errNotAnswered is the cause of a renewal given up for want of an answer.
var errNotAnswered = errors.New("not answered")

// errHeldByAnother is why a renewal fails that finds another holder.
var errHeldByAnother = errors.New("the fence is held by another replica")

// silent reports whether a renewal failed without saying who holds the
// fence: cut off by its limit, its connection broken, or the API server
// too busy to act on it (429, a timeout, 5xx). The tenures' unanswered
// asks another question, of a write to the space: whether it may still
// land, which a 429 answers (it did not).
func silent(err error) bool {
	if errors.Is(err, errNotAnswered) {
		return true
	}
	if errors.Is(err, errHeldByAnother) {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	return apierrors.IsTooManyRequests(err) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) ||
		status.Status().Code >= 500
}

// renewWithin renews the fence, unless the fence's duration passes first by
// the guard's clock, which fails it with errNotAnswered. The limit is there
// for a request that hangs; a renewal answered late, but before another
// replica took the fence, still keeps it, as its write carries the Lease's
// resourceVersion.
func (g *fenceGuard) renewWithin(ctx context.Context, last *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	limit := time.Duration(g.leaseSeconds()) * time.Second
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := g.clock.NewTimer(limit)
	defer timer.Stop()
	go func() {
		select {
		case <-timer.C():
			cancel(fmt.Errorf("%w within %s", errNotAnswered, limit))
		case <-rctx.Done():
		}
	}()
	renewed, err := g.renewOnce(rctx, last)
	// Cut off by the limit, whatever shape the request's error took.
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(rctx), errNotAnswered) {
		err = fmt.Errorf("%w: %w", context.Cause(rctx), err)
	}
	return renewed, err
}

// leaseSeconds is the fence's duration as its Lease says it.
func (g *fenceGuard) leaseSeconds() int32 {
	return int32(g.duration / time.Second)
}

// renewOnce renews the fence and returns it as written. It first writes
// the Lease as this guard last wrote it, one request where a read and a
// write took two, as client-go's leader election does; only when another
// write came between does it read the Lease and decide on what it finds.
func (g *fenceGuard) renewOnce(ctx context.Context, last *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	now := metav1.NewMicroTime(g.clock.Now())
	seconds := g.leaseSeconds()
	if last != nil {
		lease := last.DeepCopy()
		lease.Spec.HolderIdentity = ptr.To(g.holder)
		lease.Spec.LeaseDurationSeconds = &seconds
		lease.Spec.RenewTime = &now
		err := g.client.Update(ctx, lease)
		if err == nil {
			return lease, nil
		}
		if !apierrors.IsConflict(err) {
			return nil, fmt.Errorf("writing the fence: %w", err)
		}
		// The write took a round trip: the renewal's time is now.
		now = metav1.NewMicroTime(g.clock.Now())
	}
	lease := &coordinationv1.Lease{}
	if err := g.client.Get(ctx, g.key, lease); err != nil {
		return nil, fmt.Errorf("reading the fence: %w", err)
	}
	if holder := lease.Spec.HolderIdentity; holder != nil && *holder != g.holder && !g.expired(lease, now.Time) {
		return nil, fmt.Errorf("%w: %q", errHeldByAnother, *holder)
	}
	lease.Spec.HolderIdentity = &g.holder
	lease.Spec.LeaseDurationSeconds = &seconds
	lease.Spec.RenewTime = &now
	if err := g.client.Update(ctx, lease); err != nil {
		return nil, fmt.Errorf("writing the fence: %w", err)
	}
	return lease, nil
}

// Release stops the renewals and clears the holder if it is still this
// replica; it does nothing unless the fence is held. It waits for a take
// or a failed renewal in flight, which end by their own deadlines, and its
// requests end with ctx.
func (g *fenceGuard) Release(ctx context.Context) {
	g.lock <- struct{}{}
	defer g.unlock()
	if g.held.Load() {
		g.releaseLocked(ctx)
	}
}

func (g *fenceGuard) releaseLocked(ctx context.Context) {
	g.cancel()
	g.held.Store(false)
	// A renewal sent before the cancel may land after the read: the
	// release then conflicts, and reads again.
	_ = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var lease coordinationv1.Lease
		if err := g.client.Get(ctx, g.key, &lease); err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != g.holder {
			return nil
		}
		lease.Spec.HolderIdentity = new(string)
		return g.client.Update(ctx, &lease)
	}) // an unreleased fence expires
}

// maxBelievedFence is the longest another holder's fence is believed to
// last unrenewed, unless this replica's own fences last longer: replicas
// whose --shard-lease-duration differ, as in a rolling change of it, must
// still believe each other's fences.
const maxBelievedFence = 5 * time.Minute

// sighting is another holder's renewal of the fence, written further ahead
// of this replica's clock than the skew allowed, and when this replica
// first read it.
type sighting struct {
	holder        string
	renewed, seen time.Time
}

// expired reports whether the fence Lease has expired at now, as far as
// this replica believes it. Whoever can write Leases in the namespace can
// write any renew time and duration, and a fence renewed a century ahead,
// or for 68 years, kept its space from every replica. So a renewal further
// ahead of now than the fence's duration (the clock skew allowed, as for
// the peer Leases) counts from when this replica first read it, until the
// Lease says another; and a duration counts for at most maxBelievedFence,
// or this replica's own duration if longer. A holder whose clock runs
// ahead keeps its fence as long as it renews it: each renewal is read anew.
func (g *fenceGuard) expired(lease *coordinationv1.Lease, now time.Time) bool {
	spec := lease.Spec
	if spec.RenewTime == nil || spec.LeaseDurationSeconds == nil {
		return true
	}
	lasts := min(time.Duration(*spec.LeaseDurationSeconds)*time.Second, max(g.duration, maxBelievedFence))
	return now.After(g.renewed(ptr.Deref(spec.HolderIdentity, ""), spec.RenewTime.Time, now).Add(lasts))
}

// renewed returns when a renewal at renewed by holder, read at now, is
// believed to have happened.
func (g *fenceGuard) renewed(holder string, renewed, now time.Time) time.Time {
	g.aheadMu.Lock()
	defer g.aheadMu.Unlock()
	if g.ahead.holder == holder && g.ahead.renewed.Equal(renewed) {
		return g.ahead.seen
	}
	if !renewed.After(now.Add(g.duration)) {
		return renewed
	}
	g.ahead = sighting{holder: holder, renewed: renewed, seen: now}
	return now
}
