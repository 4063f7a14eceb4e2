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
	"fmt"
	"math"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/sharder"

	"github.com/kubestellar/workload-stager/test/framework"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

var space *environment.Space

func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, "sharding", func(s *framework.Suite) error {
		if testing.Short() {
			return nil // make test-unit: no API server
		}
		return environment.SharedSpace(&space, "sharding")(s)
	}))
}

const prefix = "peer"

// newNamespace makes a namespace of its own for a test's Leases.
func newNamespace(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs an API server")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sharding-"}}
	if err := space.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// newDirect returns an uncached client of the shared API server, as the
// stager reads and writes its Leases.
func newDirect(t *testing.T) client.WithWatch {
	t.Helper()
	direct, err := client.NewWithWatch(space.Config, client.Options{Scheme: space.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return direct
}

// start runs a registry until the test ends or the returned stop is called,
// which waits for Run to return.
func start(t *testing.T, r *PeerRegistry) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// ids returns the IDs of a snapshot.
func ids(peers []sharder.PeerInfo) []string {
	var out []string
	for _, p := range peers {
		out = append(out, p.ID)
	}
	return out
}

// waitFor waits up to 10 s until r's snapshot holds exactly want.
func waitFor(t *testing.T, r *PeerRegistry, want ...string) {
	t.Helper()
	environment.Eventually(t, 10*time.Second, fmt.Sprintf("%s to see %v", r.self.ID, want), func() error {
		if got := ids(r.Snapshot()); !slices.Equal(got, want) {
			return fmt.Errorf("it sees %v", got)
		}
		return nil
	})
}

func TestReplicasSeeEachOther(t *testing.T) {
	ns := newNamespace(t)
	r1 := NewPeerRegistry(space.Client, ns, prefix, "Replica_1", 3*time.Second, 200*time.Millisecond, logr.Discard())
	r2 := NewPeerRegistry(space.Client, ns, prefix, "replica-2", 3*time.Second, 200*time.Millisecond, logr.Discard())
	if len(r1.Snapshot()) != 0 {
		t.Errorf("snapshot before Run: %v, want none", r1.Snapshot())
	}
	start(t, r1)
	start(t, r2)
	waitFor(t, r1, "replica-1", "replica-2")
	waitFor(t, r2, "replica-1", "replica-2")

	lease := &coordinationv1.Lease{}
	if err := space.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "peer-replica-1"}, lease); err != nil {
		t.Fatal(err)
	}
	if d := lease.Spec.LeaseDurationSeconds; d == nil || *d != 3 || lease.Labels[PeerLabel] != prefix {
		t.Errorf("peer Lease: duration %v, labels %v; want 3 s and %s=%s", d, lease.Labels, PeerLabel, prefix)
	}
}

// TestDeadReplicaLeavesOnceItsLeaseExpires: a replica that stops renewing
// (killed) counts until its Lease's duration has passed, then no more.
func TestDeadReplicaLeavesOnceItsLeaseExpires(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	renewed := metav1.NowMicro()
	dead := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: prefix + "-dead", Labels: map[string]string{PeerLabel: prefix}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("dead"), RenewTime: &renewed, LeaseDurationSeconds: ptr.To[int32](3)},
	}
	// Leases that are not peers of this prefix never count.
	other := dead.DeepCopy()
	other.Name, other.Labels[PeerLabel], other.Spec.HolderIdentity = "other-x", "other", ptr.To("x")
	unlabelled := dead.DeepCopy()
	unlabelled.Name, unlabelled.Labels, unlabelled.Spec.HolderIdentity = prefix+"-y", nil, ptr.To("y")
	for _, l := range []*coordinationv1.Lease{dead, other, unlabelled} {
		if err := space.Client.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	r := NewPeerRegistry(space.Client, ns, prefix, "alive", 30*time.Second, 200*time.Millisecond, logr.Discard())
	start(t, r)
	waitFor(t, r, "alive", "dead")
	left := environment.Eventually(t, 20*time.Second, "the dead replica to leave", func() error {
		if got := ids(r.Snapshot()); !slices.Equal(got, []string{"alive"}) {
			return fmt.Errorf("it sees %v", got)
		}
		return nil
	})
	if gone := time.Since(renewed.Time); gone < 3*time.Second {
		t.Errorf("the dead replica left %s after its last renewal (after %s of waiting), before its Lease's 3 s", gone, left)
	}
}

// TestDeadReplicaLeavesWithoutWaitingForARead: a dead replica's Lease that
// expires between two reads of the peer Leases counts out when it expires,
// not at the next read: a failover starts up to a renewal period sooner.
func TestDeadReplicaLeavesWithoutWaitingForARead(t *testing.T) {
	ns := newNamespace(t)
	renewed := metav1.NowMicro()
	dead := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: prefix + "-dead", Labels: map[string]string{PeerLabel: prefix}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("dead"), RenewTime: &renewed, LeaseDurationSeconds: ptr.To[int32](3)},
	}
	if err := space.Client.Create(context.Background(), dead); err != nil {
		t.Fatal(err)
	}
	// The peer Leases are read at the start and then only a minute later.
	r := NewPeerRegistry(space.Client, ns, prefix, "alive", 2*time.Minute, time.Minute, logr.Discard())
	r.readEvery = time.Minute
	start(t, r)
	waitFor(t, r, "alive", "dead")
	waitFor(t, r, "alive")
	if gone := time.Since(renewed.Time); gone < 3*time.Second {
		t.Errorf("the dead replica left %s after its last renewal, before its Lease's 3 s", gone)
	}
}

// TestNewReplicaIsSeenSoon: a replica that joins is counted in within
// peerReadPeriod, not at its peers' next renewal, up to a renewal period
// later: until then the replica that started first keeps the newcomer's
// share, whose fences the newcomer asks for in vain (issue 61: 30 s of
// a fleet's start).
func TestNewReplicaIsSeenSoon(t *testing.T) {
	ns := newNamespace(t)
	first := NewPeerRegistry(space.Client, ns, prefix, "first", 2*time.Minute, time.Minute, logr.Discard())
	start(t, first)
	waitFor(t, first, "first")
	later := NewPeerRegistry(space.Client, ns, prefix, "later", 2*time.Minute, time.Minute, logr.Discard())
	start(t, later)
	waitFor(t, later, "first", "later")
	waitFor(t, first, "first", "later")
}

// TestStoppedReplicaLeavesAtOnce: a replica that stops deletes its Lease, and
// its peers count it out at their next refresh, long before the Lease's 30 s.
func TestStoppedReplicaLeavesAtOnce(t *testing.T) {
	ns := newNamespace(t)
	r1 := NewPeerRegistry(space.Client, ns, prefix, "r1", 30*time.Second, 200*time.Millisecond, logr.Discard())
	r2 := NewPeerRegistry(space.Client, ns, prefix, "r2", 30*time.Second, 200*time.Millisecond, logr.Discard())
	start(t, r1)
	stop2 := start(t, r2)
	waitFor(t, r1, "r1", "r2")
	stop2()
	err := space.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "peer-r2"}, &coordinationv1.Lease{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("r2's Lease after it stopped: %v, want NotFound", err)
	}
	waitFor(t, r1, "r1")
}

// TestForgedPeerLeasesDoNotCountForEver: a peer Lease renewed far in the
// future, or with a duration far above the replicas', counted as a live
// peer for ever, holding a share of the spaces no replica
// serves. The registry caps a Lease's life by its own duration.
func TestForgedPeerLeasesDoNotCountForEver(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	now := metav1.NowMicro()
	future := metav1.NewMicroTime(now.Add(365 * 24 * time.Hour))
	for _, l := range []*coordinationv1.Lease{{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: prefix + "-future", Labels: map[string]string{PeerLabel: prefix}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("future"), RenewTime: &future, LeaseDurationSeconds: ptr.To[int32](3)},
	}, {
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: prefix + "-long", Labels: map[string]string{PeerLabel: prefix}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("long"), RenewTime: &now, LeaseDurationSeconds: ptr.To[int32](math.MaxInt32)},
	}} {
		if err := space.Client.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	r := NewPeerRegistry(space.Client, ns, prefix, "alive", 3*time.Second, 200*time.Millisecond, logr.Discard())
	start(t, r)
	environment.Eventually(t, 10*time.Second, "the forged peers to leave", func() error {
		if got := ids(r.Snapshot()); !slices.Equal(got, []string{"alive"}) {
			return fmt.Errorf("it sees %v", got)
		}
		return nil
	})
}

// TestHungRenewalIsSentAgain: a renewal of the replica's own Lease that
// the API server never answers is given up, and the next one sent, so that
// the replica's peers see it.
func TestHungRenewalIsSentAgain(t *testing.T) {
	ns := newNamespace(t)
	var hung atomic.Bool
	hung.Store(true)
	c := interceptor.NewClient(newDirect(t), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if key.Name == prefix+"-hung" && hung.CompareAndSwap(true, false) {
				<-ctx.Done() // the first renewal is never answered
				return ctx.Err()
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	r1, _ := startWithPeer(t, c, ns, "hung")
	waitFor(t, r1, "hung", "peer")
}

// TestHungReadDoesNotHoldUpRenewals: while the API server does not answer
// a replica's read of the peer Leases, the replica still renews its own,
// and its peers keep counting it.
func TestHungReadDoesNotHoldUpRenewals(t *testing.T) {
	ns := newNamespace(t)
	var hung atomic.Bool
	hung.Store(true)
	c := unansweredLists(t, func() bool { return hung.CompareAndSwap(true, false) }) // the first only
	r1, r2 := startWithPeer(t, c, ns, "hung")
	for end := time.Now().Add(3 * pairDuration); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if got := ids(r2.Snapshot()); !slices.Equal(got, []string{"hung", "peer"}) {
			t.Fatalf("once hung's first read hung, peer sees %v", got)
		}
	}
	waitFor(t, r1, "hung", "peer")
}

// TestReplicaThatCannotReadItsPeersLeaves: a replica that has not read
// the peer Leases for a Lease's duration stops renewing its own, so that
// its peers count it out rather than leave it a share it may not serve;
// once it reads them again, it renews again.
func TestReplicaThatCannotReadItsPeersLeaves(t *testing.T) {
	ns := newNamespace(t)
	var blind atomic.Bool
	blind.Store(true)
	c := unansweredLists(t, blind.Load)
	_, r2 := startWithPeer(t, c, ns, "blind")
	environment.Eventually(t, 5*pairDuration, "peer to count blind out", func() error {
		if got := ids(r2.Snapshot()); !slices.Equal(got, []string{"peer"}) {
			return fmt.Errorf("it sees %v", got)
		}
		return nil
	})
	blind.Store(false)
	waitFor(t, r2, "blind", "peer")
}

// pairDuration is the Lease duration of the registries of startWithPeer.
const pairDuration = 3 * time.Second

// startWithPeer starts, in ns, the registry of replica id reaching the API
// server through c (one that fails in the way a test makes it) and, first,
// the registry of replica "peer" reaching it directly, both with
// pairDuration and a 500 ms renewal, and waits until the peer sees both.
func startWithPeer(t *testing.T, c client.Client, ns, id string) (r, peer *PeerRegistry) {
	t.Helper()
	r = NewPeerRegistry(c, ns, prefix, id, pairDuration, 500*time.Millisecond, logr.Discard())
	peer = NewPeerRegistry(space.Client, ns, prefix, "peer", pairDuration, 500*time.Millisecond, logr.Discard())
	start(t, peer)
	start(t, r)
	both := []string{id, "peer"}
	slices.Sort(both)
	waitFor(t, peer, both...)
	return r, peer
}

// unansweredLists returns a client of the shared API server whose Lists
// are never answered while hang, asked at each List, says so.
func unansweredLists(t *testing.T, hang func() bool) client.WithWatch {
	return interceptor.NewClient(newDirect(t), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if hang() {
				<-ctx.Done()
				return ctx.Err()
			}
			return c.List(ctx, list, opts...)
		},
	})
}
