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
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/sharder"
)

// Rendezvous is weighted rendezvous (highest random weight) hashing, in
// place of multicluster-runtime's sharder.HRW, whose rules it keeps: the
// highest score wins, a peer's weight scales its share (0 counts as 1), no
// peers means the caller owns the key. HRW compares FNV-1a hashes of
// key|peer whole; FNV-1a ends with a multiplication that leaves peers whose
// IDs differ only in their last byte, as a fleet's replicas do (r1, r2;
// stager-0, stager-1), with scores whose order follows the key poorly, so
// shares skew (docs/reliability.md). Rendezvous passes the hash through
// MurmurHash3's 64-bit finalizer, and weighs it as -weight/ln(u), u the
// hash as a number in (0, 1), so that shares follow the weights.
type Rendezvous struct{}

var _ sharder.Sharder = Rendezvous{}

// ShouldOwn reports whether self wins key among peers. Equal scores go to
// the smaller ID, so that every replica picks the same winner.
func (Rendezvous) ShouldOwn(key string, peers []sharder.PeerInfo, self sharder.PeerInfo) bool {
	if len(peers) == 0 {
		return true
	}
	var best string
	bestScore := math.Inf(-1)
	for _, p := range peers {
		s := weighted(hash(key, p.ID), p.Weight)
		if s > bestScore || s == bestScore && p.ID < best {
			best, bestScore = p.ID, s
		}
	}
	return best == self.ID
}

// hash is the finalized FNV-1a hash of key, a zero byte and peer.
func hash(key, peer string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(peer))
	return fmix64(h.Sum64())
}

// weighted is a hash's score for a peer of weight w: -w/ln(u), with u the
// hash's top 53 bits as a number strictly between 0 and 1.
func weighted(h uint64, w uint32) float64 {
	u := (float64(h>>11) + 0.5) / (1 << 53)
	return -float64(max(w, 1)) / math.Log(u)
}

// fmix64 is MurmurHash3's 64-bit finalizer: it spreads every input bit over
// every output bit.
func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// SlotRendezvous places the Slots slots (keys "slot-<k>", FenceKey) by
// rendezvous hashing with bounded loads: each peer takes at most its share
// of the slots by weight, rounded up. Rendezvous alone places each key
// apart, which is even over thousands of spaces but not over 64 slots (one
// of three replicas got 30 and another 15). Every slot is placed at once:
// the (slot, peer) pairs in the order of their scores, highest first, each
// slot to the first peer that has room. So every replica that sees the
// same peers computes the same placement, and a peer that leaves moves
// its own slots and few others (TestSlotsStayWhenAPeerLeaves). Keys that
// are not slots are placed by Rendezvous alone.
type SlotRendezvous struct{}

var _ sharder.Sharder = SlotRendezvous{}

// ShouldOwn reports whether self is given key among peers.
func (SlotRendezvous) ShouldOwn(key string, peers []sharder.PeerInfo, self sharder.PeerInfo) bool {
	slot, ok := slotIndex(key)
	if !ok || len(peers) == 0 {
		return Rendezvous{}.ShouldOwn(key, peers, self)
	}
	return placements.of(peers)[slot] == self.ID
}

// placements remembers the last placement computed: the coordinator asks
// for each slot in turn with the same peers.
var placements placementMemo

// placementMemo is placeSlots of the peers it last saw.
type placementMemo struct {
	mu     sync.Mutex
	peers  []sharder.PeerInfo
	placed [Slots]string
}

// of returns placeSlots(peers), computed again only when peers differ from
// the last ones.
func (m *placementMemo) of(peers []sharder.PeerInfo) [Slots]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Equal(m.peers, peers) {
		m.placed, m.peers = placeSlots(peers), slices.Clone(peers)
	}
	return m.placed
}

// slotIndex returns k of a key "slot-<k>", k < Slots.
func slotIndex(key string) (int, bool) {
	digits, ok := strings.CutPrefix(key, "slot-")
	if !ok {
		return 0, false
	}
	k, err := strconv.Atoi(digits)
	if err != nil || k < 0 || k >= Slots || strconv.Itoa(k) != digits {
		return 0, false
	}
	return k, true
}

// placeSlots returns the peer ID that each slot goes to among peers.
func placeSlots(peers []sharder.PeerInfo) [Slots]string {
	type pair struct {
		slot, peer int
		score      float64
	}
	pairs := make([]pair, 0, Slots*len(peers))
	var total float64
	for _, p := range peers {
		total += float64(max(p.Weight, 1))
	}
	room := make([]int, len(peers))
	for j, p := range peers {
		room[j] = int(math.Ceil(Slots * float64(max(p.Weight, 1)) / total))
		for k := range Slots {
			pairs = append(pairs, pair{slot: k, peer: j, score: weighted(hash(fmt.Sprintf("slot-%d", k), p.ID), p.Weight)})
		}
	}
	// Equal scores go to the smaller ID, as Rendezvous does.
	slices.SortFunc(pairs, func(a, b pair) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := strings.Compare(peers[a.peer].ID, peers[b.peer].ID); c != 0 {
			return c
		}
		return cmp.Compare(a.slot, b.slot)
	})
	var placed [Slots]string
	left := Slots
	for _, pr := range pairs {
		if left == 0 {
			break
		}
		if placed[pr.slot] != "" || room[pr.peer] == 0 {
			continue
		}
		placed[pr.slot] = peers[pr.peer].ID
		room[pr.peer]--
		left--
	}
	return placed
}
