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
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	"sigs.k8s.io/multicluster-runtime/pkg/util/sanitize"

	"github.com/kubestellar/workload-stager/test/framework/environment"
)

const fencePrefix = "workload-stager-shard"

// fenceOf returns the fence Lease of space, held by holder and renewed at
// renewed, for duration seconds.
func fenceOf(space multicluster.ClusterName, holder string, renewed time.Time, duration int32) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: fencePrefix + "-" + sanitize.DNS1123(string(FenceKey(space)))},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(holder),
			RenewTime:            ptr.To(metav1.NewMicroTime(renewed)),
			LeaseDurationSeconds: ptr.To(duration),
		},
	}
}

func TestTenuresFollowTheFenceWrites(t *testing.T) {
	const space = multicluster.ClusterName("kcp#root:a-b")
	renewed := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	later := renewed.Add(10 * time.Second)
	refused := errors.New("refused")
	type write struct {
		lease *coordinationv1.Lease
		err   error
	}
	for _, tc := range []struct {
		name   string
		writes []write
		want   time.Time
	}{
		{"never written", nil, time.Time{}},
		{"taken: three quarters of 20 s", []write{{fenceOf(space, "a", renewed, 20), nil}}, renewed.Add(15 * time.Second)},
		{"renewed", []write{{fenceOf(space, "a", renewed, 20), nil}, {fenceOf(space, "a", later, 20), nil}}, later.Add(15 * time.Second)},
		{"a failed renewal leaves the tenure as it was", []write{{fenceOf(space, "a", renewed, 20), nil}, {fenceOf(space, "a", later, 20), refused}}, renewed.Add(15 * time.Second)},
		{"a renewal of an older time does not shorten it", []write{{fenceOf(space, "a", later, 20), nil}, {fenceOf(space, "a", renewed, 20), nil}}, later.Add(15 * time.Second)},
		{"released", []write{{fenceOf(space, "a", renewed, 20), nil}, {fenceOf(space, "", renewed, 20), nil}}, time.Time{}},
		{"a failed release ends it too", []write{{fenceOf(space, "a", renewed, 20), nil}, {fenceOf(space, "", renewed, 20), refused}}, time.Time{}},
		{"another holder's write", []write{{fenceOf(space, "a", renewed, 20), nil}, {fenceOf(space, "b", later, 20), nil}}, time.Time{}},
		{"another space's fence", []write{{fenceOf("kcp#root:a:b", "a", renewed, 20), nil}}, time.Time{}},
		{"a peer Lease", []write{{func() *coordinationv1.Lease {
			l := fenceOf(space, "a", renewed, 20)
			l.Name = "workload-stager-peer-a"
			return l
		}(), nil}}, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tenures := NewTenures(fencePrefix, "a")
			for _, w := range tc.writes {
				var during time.Time
				err := tenures.write(w.lease, func() error {
					during = tenures.HeldUntil(space)
					return w.err
				})
				if !errors.Is(err, w.err) {
					t.Fatalf("write returned %v, want %v", err, w.err)
				}
				if w.lease.Spec.HolderIdentity != nil && *w.lease.Spec.HolderIdentity == "" && !during.IsZero() {
					t.Errorf("the tenure lasted until %v while the release was sent", during)
				}
			}
			if got := tenures.Of(space).HeldUntil(); !got.Equal(tc.want) {
				t.Errorf("held until %v, want %v", got, tc.want)
			}
		})
	}
}

// stalling is a client whose Lease updates wait while it is stalled, as on
// an API server too busy to answer them.
type stalling struct {
	client.WithWatch
	mu      sync.Mutex
	stalled chan struct{} // closed to let the waiting updates through; nil when not stalled
}

func newStalling(c client.WithWatch) *stalling {
	s := &stalling{}
	s.WithWatch = interceptor.NewClient(c, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			s.mu.Lock()
			wait := s.stalled
			s.mu.Unlock()
			if wait != nil {
				select {
				case <-wait:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return c.Update(ctx, obj, opts...)
		},
	})
	return s
}

func (s *stalling) stall() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalled = make(chan struct{})
}

func (s *stalling) resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.stalled)
	s.stalled = nil
}

// serving is a multicluster.Aware that keeps the context a space was last
// engaged with.
type serving struct {
	mu  sync.Mutex
	ctx map[multicluster.ClusterName]context.Context
}

func (s *serving) Engage(ctx context.Context, name multicluster.ClusterName, _ cluster.Cluster) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ctx[name] = ctx
	return nil
}

func (s *serving) of(name multicluster.ClusterName) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctx[name]
}

// TestTenureEndsWhileRenewalsStall runs the sharded coordinator as the
// stager does, with the fence Leases' client stalling, as a saturated API
// server does: the tenure ends before the fence expires, while the
// coordinator still serves the space; another replica takes the expired
// fence, and the tenure stays ended until the coordinator, its renewal
// answered at last, stops serving the space.
func TestTenureEndsWhileRenewalsStall(t *testing.T) {
	ns := newNamespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	direct, err := client.NewWithWatch(space.Config, client.Options{Scheme: space.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	slow := newStalling(direct)
	tenures := NewTenures(fencePrefix, "a")
	leases := tenures.Client(slow)
	const duration, renew = 4 * time.Second, time.Second
	c := NewFencedCoordinator(sharded.New(leases, logr.Discard(),
		sharded.WithShardLease(ns, fencePrefix),
		sharded.WithPerClusterLease(true),
		sharded.WithLeaseTimings(duration, renew, 100*time.Millisecond),
		sharded.WithSynchronizationIntervals(200*time.Millisecond, time.Second),
		sharded.WithPeerRegistry(NewPeerRegistry(direct, ns, "workload-stager-peer", "a", time.Minute, renew, logr.Discard())),
	))
	served := &serving{ctx: map[multicluster.ClusterName]context.Context{}}
	c.AddAware(served)
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Runnable().Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	const name = multicluster.ClusterName("kcp#root:wds031")
	if err := c.Engage(ctx, name, nil); err != nil {
		t.Fatal(err)
	}
	tenure := tenures.Of(name)

	var first time.Time
	environment.Eventually(t, 20*time.Second, "the space served and its tenure renewed", func() error {
		if served.of(name) == nil {
			return errors.New("not served yet")
		}
		if first.IsZero() {
			first = tenure.HeldUntil()
			return fmt.Errorf("held until %v", first)
		}
		if !tenure.HeldUntil().After(first) {
			return fmt.Errorf("held until %v, not renewed since", first)
		}
		return nil
	})

	slow.stall()
	resumed := false
	defer func() {
		if !resumed {
			slow.resume()
		}
	}()
	lease := &coordinationv1.Lease{}
	key := types.NamespacedName{Namespace: ns, Name: fenceOf(name, "", time.Time{}, 0).Name}
	environment.Eventually(t, 2*duration, "the fence expired while the coordinator still serves", func() error {
		if err := direct.Get(ctx, key, lease); err != nil {
			return err
		}
		expires := lease.Spec.RenewTime.Add(time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second)
		if now := time.Now(); now.Before(expires) {
			if now.Before(tenure.HeldUntil()) {
				return fmt.Errorf("held until %v", tenure.HeldUntil())
			}
			return fmt.Errorf("the fence expires at %v", expires)
		}
		return nil
	})
	if err := served.of(name).Err(); err != nil {
		t.Fatalf("the coordinator stopped serving the space before its renewal was answered: %v", err)
	}
	if until := tenure.HeldUntil(); !until.Before(lease.Spec.RenewTime.Add(duration)) {
		t.Fatalf("the tenure ends at %v, not before the fence expires", until)
	}

	// Another replica takes the expired fence.
	lease.Spec.HolderIdentity = ptr.To("b")
	lease.Spec.RenewTime = ptr.To(metav1.NowMicro())
	if err := direct.Update(ctx, lease); err != nil {
		t.Fatalf("taking the expired fence as b: %v", err)
	}
	if now := time.Now(); now.Before(tenure.HeldUntil()) {
		t.Fatalf("b holds the fence, and a's tenure lasts until %v", tenure.HeldUntil())
	}
	slow.resume()
	resumed = true
	environment.Eventually(t, 10*time.Second, "the coordinator stops serving the space", func() error {
		if served.of(name).Err() == nil {
			return errors.New("still served")
		}
		return nil
	})
	if held := tenure.HeldUntil(); time.Now().Before(held) {
		t.Errorf("a's renewal lost to b, and a's tenure lasts until %v", held)
	}
	if err := direct.Get(ctx, key, lease); err != nil || *lease.Spec.HolderIdentity != "b" {
		t.Errorf("the fence is held by %q (%v), want b", ptr.Deref(lease.Spec.HolderIdentity, ""), err)
	}
}
