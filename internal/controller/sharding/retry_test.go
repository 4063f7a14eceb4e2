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
	"io"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// TestBusyRetryDelay: a renewal the API server refused as too busy (429,
// 5xx) is tried again after a random point of the second half of the
// server's wait or a quarter of the renew period, whichever is shorter:
// never later, so that a 32 s Retry-After does not eat the tenure, and
// never at once. Any other failure waits for the next period.
func TestBusyRetryDelay(t *testing.T) {
	gr := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	rapid.Check(t, func(t *rapid.T) {
		renew := time.Duration(rapid.Int64Range(int64(time.Millisecond), int64(10*time.Minute)).Draw(t, "renew"))
		seconds := rapid.IntRange(0, 120).Draw(t, "retryAfter")
		busy := []error{
			apierrors.NewTooManyRequests("busy", seconds),
			apierrors.NewGenericServerResponse(503, "PUT", gr, "f", "starting", seconds, true),
			apierrors.NewInternalError(errors.New("etcd")),
			apierrors.NewTimeoutError("slow", seconds),
		}
		err := busy[rapid.IntRange(0, len(busy)-1).Draw(t, "err")]
		err = fmt.Errorf("writing the fence: %w", err)
		delay, ok := busyRetry(err, renew)
		if !ok {
			t.Fatalf("%v is not tried again before the next period", err)
		}
		limit := renew / 4
		if hint, ok := apierrors.SuggestsClientDelay(err); ok && hint > 0 {
			limit = min(limit, time.Duration(hint)*time.Second)
		}
		if delay <= 0 || delay < limit/2 || delay > limit {
			t.Fatalf("%v with a renew period of %s is tried again after %s, want within [%s, %s] and not at once", err, renew, delay, limit/2, limit)
		}
	})
	for _, err := range []error{
		fmt.Errorf("%w within 1m0s: %w", errNotAnswered, context.Canceled),
		&url.Error{Op: "Put", URL: "https://api.example/leases", Err: io.ErrUnexpectedEOF},
		apierrors.NewConflict(gr, "f", errors.New("changed")),
		fmt.Errorf("%w: %q", errHeldByAnother, "b"),
	} {
		if delay, ok := busyRetry(err, time.Second); ok {
			t.Errorf("%v is tried again after %s, want at the next period", err, delay)
		}
	}
}

// timerClock is a fake clock that records the durations of its timers.
type timerClock struct {
	*clocktesting.FakeClock
	mu     sync.Mutex
	timers []time.Duration
}

func (c *timerClock) NewTimer(d time.Duration) clock.Timer {
	timer := c.FakeClock.NewTimer(d)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timers = append(c.timers, d)
	return timer
}

// shorter returns the timers made shorter than d.
func (c *timerClock) shorter(d time.Duration) []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for _, t := range c.timers {
		if t < d {
			out = append(out, t)
		}
	}
	return out
}

// TestThrottledRenewalIsTriedAgainSoon: a renewal answered 429 is timed as
// throttled and tried again, by the guard's clock, after at most the
// server's wait or a quarter of the renew period, whichever is shorter,
// not a whole period later; a retry answered 429 too waits for the next
// period, so that refused fences at most double their renewals; and the
// renewal that succeeds is timed as renewed.
func TestThrottledRenewalIsTriedAgainSoon(t *testing.T) {
	const renew = 10 * time.Second
	for _, retryAfter := range []int{32, 1} {
		t.Run(fmt.Sprintf("Retry-After %d", retryAfter), func(t *testing.T) {
			testThrottledRenewal(t, renew, retryAfter)
		})
	}
}

func testThrottledRenewal(t *testing.T, renew time.Duration, retryAfter int) {
	var updates atomic.Int32
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithInterceptorFuncs(interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if updates.Add(1) <= 2 {
				return apierrors.NewTooManyRequests("Too many requests, please try again later.", retryAfter)
			}
			return c.Update(ctx, obj, opts...)
		},
	}).Build()
	clk := &timerClock{FakeClock: clocktesting.NewFakeClock(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))}
	g := newFenceGuard(c, clk, "ns", fencePrefix+"-busy", "me", 4*renew, renew, func(err error) {
		t.Errorf("the fence was given up for %v", err)
	})
	timed := &timings{}
	g.observe = timed.observe
	ctx := context.Background()
	if !g.TryAcquire(ctx) {
		t.Fatal("the fence was not taken")
	}
	defer g.Release(ctx)

	// The first renewal comes within the period.
	environment.Eventually(t, 10*time.Second, "the first renewal scheduled", func() error {
		if !clk.HasWaiters() {
			return errors.New("no timer yet")
		}
		return nil
	})
	clk.Step(renew)
	limit := min(renew/4, time.Duration(retryAfter)*time.Second)
	var retry time.Duration
	environment.Eventually(t, 20*time.Second, "the throttled renewal's retry scheduled", func() error {
		if n := updates.Load(); n != 1 {
			return fmt.Errorf("%d renewals sent", n)
		}
		short := clk.shorter(renew / 2)
		if len(short) == 0 {
			return errors.New("no timer shorter than half the renew period")
		}
		retry = short[0]
		return nil
	})
	if retry < limit/2 || retry > limit {
		t.Errorf("the throttled renewal is tried again after %s, want within [%s, %s]", retry, limit/2, limit)
	}
	if got := timed.of(renewalThrottled); len(got) != 1 {
		t.Errorf("%d renewals timed as throttled, want 1", len(got))
	}
	clk.Step(limit)
	environment.Eventually(t, 20*time.Second, "the retry sent and timed as throttled", func() error {
		if n := updates.Load(); n != 2 {
			return fmt.Errorf("%d renewals sent", n)
		}
		if got := timed.of(renewalThrottled); len(got) != 2 {
			return fmt.Errorf("%d renewals timed as throttled", len(got))
		}
		return nil
	})
	clk.Step(renew)
	environment.Eventually(t, 20*time.Second, "the next period's renewal sent and timed as renewed", func() error {
		if n := updates.Load(); n != 3 {
			return fmt.Errorf("%d renewals sent", n)
		}
		if got := timed.of(renewalRenewed); len(got) != 1 {
			return fmt.Errorf("%d renewals timed as renewed", len(got))
		}
		return nil
	})
	// The retry's timer would have been made before the period's renewal.
	if short := clk.shorter(renew / 2); len(short) != 1 {
		t.Errorf("early retries scheduled: %v, want one: the retry refused waits for the period", short)
	}
	if got := timed.of(renewalUnanswered); len(got) != 0 {
		t.Errorf("renewals timed as unanswered: %v", got)
	}
}

// TestThrottledPeerRenewalIsTriedAgainSoon: a renewal of the replica's peer
// Lease answered 429 is tried again after the server's wait, here 1 s,
// not a renew period (an hour) later: the Lease client no longer sleeps
// the Retry-After inside the request (LeaseConfig), which was the peer
// Lease's only retry before the next period.
func TestThrottledPeerRenewalIsTriedAgainSoon(t *testing.T) {
	var creates atomic.Int32
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if creates.Add(1) == 1 {
				return apierrors.NewTooManyRequests("Too many requests, please try again later.", 1)
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	r := NewPeerRegistry(c, "ns", prefix, "me", 2*time.Hour, time.Hour, logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	environment.Eventually(t, 20*time.Second, "the refused peer Lease created on a retry", func() error {
		if n := creates.Load(); n != 2 {
			return fmt.Errorf("%d creates sent", n)
		}
		return nil
	})
}
