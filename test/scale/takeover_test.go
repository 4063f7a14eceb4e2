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

package scale

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	"sigs.k8s.io/multicluster-runtime/pkg/util/sanitize"

	"github.com/kubestellar/workload-stager/cmd/stager/app"
	"github.com/kubestellar/workload-stager/internal/controller/sharding"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// TakeoverLatencyEnv sets the milliseconds that BenchmarkFenceTakeover adds
// to every fence request (default 50).
const TakeoverLatencyEnv = "STAGER_TAKEOVER_LATENCY_MS"

// BenchmarkFenceTakeover measures how long a replica takes to serve a dead
// peer's spaces, whose fences have expired, on a real API server: the
// stager's sharding.Coordinator, which takes fences 8 at a time, against
// multicluster-runtime v0.24.1's sharded coordinator, which it forks and
// which takes them one after another. Every fence request is delayed by
// STAGER_TAKEOVER_LATENCY_MS, a fixed latency that stands in for a slow
// API server; the API server itself is idle, so the requests in flight do
// not slow each other down. The replica is running, and has read its
// peers, before the time starts, as a survivor of a failover has: the time
// is from the spaces' engagement to the last one served.
func BenchmarkFenceTakeover(b *testing.B) {
	latency := time.Duration(envInt(b, TakeoverLatencyEnv, 50)) * time.Millisecond
	space, err := environment.StartSpace("takeover")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = space.Stop() }()
	direct, err := client.NewWithWatch(space.Config, client.Options{Scheme: space.Client.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{100, 300} {
		for _, impl := range []struct {
			name  string
			lease func(multicluster.ClusterName) string
			build func(leases client.Client, ns string, peers *sharding.PeerRegistry) mcmanager.Coordinator
		}{{
			name:  "upstream",
			lease: func(s multicluster.ClusterName) string { return sanitize.DNS1123(string(s)) },
			build: func(leases client.Client, ns string, peers *sharding.PeerRegistry) mcmanager.Coordinator {
				return sharded.New(leases, logr.Discard(),
					sharded.WithShardLease(ns, app.ShardFenceLeasePrefix),
					sharded.WithPerClusterLease(true),
					sharded.WithSharder(sharding.Rendezvous{}),
					sharded.WithLeaseTimings(time.Minute, 15*time.Second, time.Second),
					sharded.WithSynchronizationIntervals(time.Second, 3*time.Second),
					sharded.WithPeerRegistry(peers))
			},
		}, {
			name:  "stager",
			lease: func(s multicluster.ClusterName) string { return string(sharding.FenceKey(s)) },
			build: func(leases client.Client, ns string, peers *sharding.PeerRegistry) mcmanager.Coordinator {
				return sharding.NewCoordinator(leases, sharding.CoordinatorOptions{
					Namespace: ns, Prefix: app.ShardFenceLeasePrefix,
					LeaseDuration: time.Minute, LeaseRenew: 15 * time.Second, Throttle: time.Second, Probe: time.Second,
					Sharder: sharding.Rendezvous{}, Peers: peers, Log: logr.Discard(),
				})
			},
		}} {
			b.Run(fmt.Sprintf("spaces=%d/%s", n, impl.name), func(b *testing.B) {
				for range b.N {
					b.StopTimer()
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "takeover-"}}
					if err := direct.Create(ctx, ns); err != nil {
						b.Fatal(err)
					}
					var spaces []multicluster.ClusterName
					expired := metav1.NewMicroTime(time.Now().Add(-2 * time.Minute))
					for i := range n {
						name := multicluster.ClusterName(fmt.Sprintf("wds%03d", i))
						spaces = append(spaces, name)
						if err := direct.Create(ctx, &coordinationv1.Lease{
							ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: app.ShardFenceLeasePrefix + "-" + impl.lease(name)},
							Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("dead"), LeaseDurationSeconds: ptr.To(int32(60)),
								AcquireTime: &expired, RenewTime: &expired},
						}); err != nil {
							b.Fatal(err)
						}
					}
					peers := sharding.NewPeerRegistry(direct, ns.Name, app.ShardPeerLeasePrefix, "alive", time.Minute, 15*time.Second, logr.Discard())
					c := impl.build(delayed(direct, latency), ns.Name, peers)
					served := newCountdown(n)
					c.AddAware(served)
					done := make(chan struct{})
					go func() { defer close(done); _ = c.Runnable().Start(ctx) }()
					if err := environment.Poll(ctx, 10*time.Millisecond, time.Minute, "the peer registry's first read", func() error {
						if len(peers.Snapshot()) == 0 {
							return errors.New("no peer seen")
						}
						return nil
					}); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					start := time.Now()
					for _, name := range spaces {
						if err := c.Engage(ctx, name, nil); err != nil {
							b.Fatal(err)
						}
					}
					select {
					case <-served.done:
					case <-time.After(10 * time.Minute):
						b.Fatalf("%d of %d spaces served after 10 minutes", n-served.left(), n)
					}
					elapsed := time.Since(start)
					b.StopTimer()
					b.ReportMetric(elapsed.Seconds(), "s/takeover")
					cancel()
					<-done
				}
			})
		}
	}
}

// delayed delays every request for a fence Lease through c by latency.
func delayed(c client.WithWatch, latency time.Duration) client.WithWatch {
	wait := func(ctx context.Context, name string) error {
		if !strings.HasPrefix(name, app.ShardFenceLeasePrefix+"-") {
			return nil
		}
		select {
		case <-time.After(latency):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := wait(ctx, key.Name); err != nil {
				return err
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := wait(ctx, obj.GetName()); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := wait(ctx, obj.GetName()); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
	})
}

// countdown is a multicluster.Aware whose done closes once n spaces have
// been engaged with it.
type countdown struct {
	mu   sync.Mutex
	seen map[multicluster.ClusterName]bool
	n    int
	done chan struct{}
}

func newCountdown(n int) *countdown {
	return &countdown{seen: map[multicluster.ClusterName]bool{}, n: n, done: make(chan struct{})}
}

func (c *countdown) Engage(_ context.Context, name multicluster.ClusterName, _ cluster.Cluster) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.seen[name] {
		c.seen[name] = true
		if len(c.seen) == c.n {
			close(c.done)
		}
	}
	return nil
}

func (c *countdown) left() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n - len(c.seen)
}
