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

// Package sharding shares the spaces among the stager's replicas: a
// coordinator that serves a replica's share, each space fenced by a Lease
// of its own; a peer registry whose Leases last at least as long as the
// fences; and the replica's tenure of each fence, which its writes to the
// space hold.
package sharding

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/peers"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/sharder"
	"sigs.k8s.io/multicluster-runtime/pkg/util/sanitize"
)

// PeerLabel marks the peer Leases of the replicas, whose names start with
// the registry's prefix, which is the label's value.
const PeerLabel = "community.kubestellar.io/shard-peer"

// releaseTimeout bounds the deletion of a stopping replica's peer Lease.
const releaseTimeout = 5 * time.Second

// PeerRegistry is the replicas' membership for the Coordinator (and fits
// multicluster-runtime's sharded coordinator, sharded.WithPeerRegistry):
// each replica holds a Lease named <prefix>-<replica>, renews it every
// renew for duration, and counts as peers the replicas whose Lease has not
// expired.
//
// It is a fork of multicluster-runtime v0.24.1's leaseRegistry
// (pkg/manager/coordinator/sharded/peers/registry.go). That registry gives
// every peer Lease 30 s and renews every 10 s, whatever the fences'
// duration (sharded.WithLeaseTimings): a killed replica keeps its share of
// the hash, and so its spaces, for up to 30 s after their fences expire.
// The fork differs in six ways: the duration and renewal are the stager's
// (the fences' renewal, and by default their duration); a stopping replica
// deletes its Lease, so that its peers take its spaces at once; a peer's
// Lease is believed for at most this replica's duration (alive); a request
// not answered in time is given up, and the renewals and reads run apart
// (upstream waited for each request however long, and read only after
// renewing); a replica that has not read its peers for the duration stops
// renewing, so that they count it out; errors are returned wrapped and
// logged at error level.
// docs/proposals/peer-registry-timings.md proposes the upstream change that
// would retire the fork.
type PeerRegistry struct {
	client          client.Client
	namespace       string
	prefix, name    string
	self            sharder.PeerInfo
	duration, renew time.Duration
	// readEvery is how often the peer Leases are read.
	readEvery time.Duration
	log       logr.Logger

	mu sync.RWMutex
	// peers are the peers of the last read, each with when its Lease
	// ends; Snapshot leaves out those ended since.
	peers []listedPeer
	// read is when the peer Leases were last read, or the registry
	// started; under mu.
	read time.Time
	// blind is set while this replica lets its Lease expire for want of
	// a read; renewals' own.
	blind bool
}

var _ peers.Registry = &PeerRegistry{}

// listedPeer is a peer as the last read of the peer Leases saw it.
type listedPeer struct {
	info sharder.PeerInfo
	// ends is when its Lease ends, unless it was renewed since the read.
	ends time.Time
}

// NewPeerRegistry returns the registry of the replica named replica, whose
// Lease in namespace, named <prefix>-<replica>, lasts duration and is
// renewed every renew, through c (which should not be cached: a replica
// must see its peers' renewals as they happen).
func NewPeerRegistry(c client.Client, namespace, prefix, replica string, duration, renew time.Duration, log logr.Logger) *PeerRegistry {
	id := sanitize.DNS1123(replica)
	return &PeerRegistry{
		client:    c,
		namespace: namespace,
		prefix:    prefix,
		name:      prefix + "-" + id,
		self:      sharder.PeerInfo{ID: id, Weight: 1},
		duration:  duration,
		renew:     renew,
		readEvery: min(renew, peerReadPeriod),
		log:       log.WithName("peers").WithValues("namespace", namespace, "lease", prefix+"-"+id),
	}
}

// Self returns this replica.
func (r *PeerRegistry) Self() sharder.PeerInfo { return r.self }

// Snapshot returns the live replicas, this one included, as of the last
// refresh, less those whose Leases have ended since; none before the first
// refresh. A dead peer so counts out when its Lease ends, not up to a
// renewal period later at the next read. A peer renewed since the read and
// counted out by mistake counts again at the next read; its fences stay its
// own meanwhile, as they outlast its peer Lease's last renewal.
func (r *PeerRegistry) Snapshot() []sharder.PeerInfo {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.peers == nil {
		return nil
	}
	now := time.Now()
	live := []sharder.PeerInfo{r.self}
	for _, p := range r.peers {
		if !now.After(p.ends) {
			live = append(live, p.info)
		}
	}
	slices.SortFunc(live, func(a, b sharder.PeerInfo) int { return strings.Compare(a.ID, b.ID) })
	return live
}

// peerReadPeriod is how often, at most, a replica reads the peer Leases:
// more often than it renews its own, so that a replica that joins is
// counted in within seconds. Until then the replica that started first
// serves the newcomer's share, whose fences the newcomer asks for in
// vain; the read is one LIST of a few Leases.
const peerReadPeriod = 5 * time.Second

// Run renews this replica's Lease every renew and reads its peers' every
// renew or peerReadPeriod, whichever is shorter, until ctx ends, then
// deletes this replica's Lease. The renewals and the reads run
// apart, so that a read the API server is slow to answer does not hold up
// a renewal. Failures are logged and retried at the next renewal or read,
// or sooner when the API server was too busy for them: until then the
// last snapshot stands, as the fences do.
func (r *PeerRegistry) Run(ctx context.Context) error {
	r.log.Info("Peer registry starting", "duration", r.duration, "renew", r.renew)
	r.mu.Lock()
	r.read = time.Now()
	r.mu.Unlock()
	var reads sync.WaitGroup
	reads.Add(1)
	go func() {
		defer reads.Done()
		r.every(ctx, r.readEvery, r.refresh, "Cannot read the peer Leases; retrying")
	}()
	r.every(ctx, r.renew, r.renewWhileReading, "Cannot renew this replica's peer Lease; retrying")
	reads.Wait()
	r.release()
	return ctx.Err()
}

// every runs step at once and then every period until ctx ends, logging its
// failures with msg. A step not answered once the Lease's duration less a
// renewal period has passed (when a renewal sent on time can no longer
// keep the Lease) is given up, and the next one runs at once. A step on
// the period that the API server refused as too busy runs again sooner,
// as a fence's renewal does (busyRetry).
func (r *PeerRegistry) every(ctx context.Context, period time.Duration, step func(context.Context) error, msg string) {
	t := time.NewTicker(period)
	defer t.Stop()
	early := false // whether this step is a busy one's early retry
	for {
		sctx, cancel := context.WithTimeout(ctx, max(r.duration-r.renew, r.renew))
		err := step(sctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			r.log.Error(err, msg)
		}
		var ok bool
		if early, ok = nextStep(ctx, clock.RealClock{}, t.C, err, period, !early); !ok {
			return
		}
	}
}

// durationSeconds is the Lease duration in whole seconds, rounded up.
func (r *PeerRegistry) durationSeconds() int32 {
	return int32(min(math.Ceil(r.duration.Seconds()), math.MaxInt32))
}

// renewWhileReading renews this replica's Lease unless the peer Leases have
// not been read for the Lease's duration: a replica that cannot read them
// decides on a stale view, or none, and may leave unserved the share its
// peers leave it; letting its Lease expire, it is counted out.
func (r *PeerRegistry) renewWhileReading(ctx context.Context) error {
	r.mu.RLock()
	read := r.read
	r.mu.RUnlock()
	if blind := time.Since(read) > r.duration; blind != r.blind {
		r.blind = blind
		if blind {
			r.log.Info("Not renewing this replica's peer Lease: the peer Leases have not been read since", "read", read)
		} else {
			r.log.Info("Renewing this replica's peer Lease again: the peer Leases were read", "read", read)
		}
	}
	if r.blind {
		return nil
	}
	return r.renewSelf(ctx)
}

// renewSelf creates or renews this replica's Lease.
func (r *PeerRegistry) renewSelf(ctx context.Context) error {
	now := metav1.NowMicro()
	lease := &coordinationv1.Lease{}
	err := r.client.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: r.name}, lease)
	switch {
	case apierrors.IsNotFound(err):
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: r.namespace, Name: r.name, Labels: map[string]string{PeerLabel: r.prefix}},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(r.self.ID), AcquireTime: &now, RenewTime: &now,
				LeaseDurationSeconds: ptr.To(r.durationSeconds()),
			},
		}
		if err := r.client.Create(ctx, lease); err != nil {
			return fmt.Errorf("creating peer Lease %s/%s: %w", r.namespace, r.name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading peer Lease %s/%s: %w", r.namespace, r.name, err)
	}
	if lease.Labels == nil {
		lease.Labels = map[string]string{}
	}
	lease.Labels[PeerLabel] = r.prefix
	lease.Spec.HolderIdentity, lease.Spec.RenewTime = ptr.To(r.self.ID), &now
	lease.Spec.LeaseDurationSeconds = ptr.To(r.durationSeconds())
	if err := r.client.Update(ctx, lease); err != nil {
		return fmt.Errorf("renewing peer Lease %s/%s: %w", r.namespace, r.name, err)
	}
	return nil
}

// refresh reads the peer Leases and keeps, with this replica, the holders
// of those not expired.
func (r *PeerRegistry) refresh(ctx context.Context) error {
	list := &coordinationv1.LeaseList{}
	if err := r.client.List(ctx, list, client.InNamespace(r.namespace), client.MatchingLabels{PeerLabel: r.prefix}); err != nil {
		return fmt.Errorf("listing the peer Leases in %s: %w", r.namespace, err)
	}
	now := time.Now()
	live := []listedPeer{}
	for _, l := range list.Items {
		if !strings.HasPrefix(l.Name, r.prefix+"-") || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" ||
			*l.Spec.HolderIdentity == r.self.ID || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
			continue
		}
		ends, ok := r.ends(l.Spec.RenewTime.Time, *l.Spec.LeaseDurationSeconds, now)
		if !ok || now.After(ends) {
			continue
		}
		live = append(live, listedPeer{info: sharder.PeerInfo{ID: *l.Spec.HolderIdentity, Weight: 1}, ends: ends})
	}
	r.mu.Lock()
	r.peers, r.read = live, now
	r.mu.Unlock()
	return nil
}

// ends returns when a peer Lease renewed at renewed for seconds ends, read
// at now. Whoever can write Leases in the namespace can write any time and
// duration, so neither is taken beyond this replica's own duration: a
// renewal further ahead than that is not one (false), and a Lease lasts at
// most that long after it.
func (r *PeerRegistry) ends(renewed time.Time, seconds int32, now time.Time) (time.Time, bool) {
	if renewed.After(now.Add(r.duration)) {
		return time.Time{}, false
	}
	return renewed.Add(min(time.Duration(seconds)*time.Second, r.duration)), true
}

// release deletes this replica's Lease, so that its peers count it out at
// their next refresh rather than once it expires.
func (r *PeerRegistry) release() {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: r.namespace, Name: r.name}}
	if err := r.client.Delete(ctx, lease); err != nil && !apierrors.IsNotFound(err) {
		r.log.Error(err, "Cannot delete this replica's peer Lease; its peers count it out once it expires")
		return
	}
	r.log.Info("Peer Lease released")
}
