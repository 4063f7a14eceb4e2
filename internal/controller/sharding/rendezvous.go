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
	"hash/fnv"

	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/sharder"
)

// Rendezvous is rendezvous (highest random weight) hashing, as
// multicluster-runtime's sharder.HRW, whose ownership rules it keeps (the
// highest score wins, a score is multiplied by its peer's weight, weight 0
// counts as 1, no peers means the caller owns the key), with a score whose
// every bit depends on every byte of the key and the peer.
//
// HRW scores FNV-1a of key|peer and compares the scores whole. FNV-1a's
// last step multiplies by 2^40+435, so peers whose IDs differ only in the
// last byte, as a fleet's replicas do (r1, r2, r3; stager-0, stager-1),
// get scores that differ mostly in a few middle bits, and their order
// follows the key poorly: one of three replicas got 517 of 1,000 spaces
// (TestRendezvousSharesEvenly). Rendezvous passes the FNV-1a hash through
// MurmurHash3's 64-bit finalizer.
type Rendezvous struct{}

var _ sharder.Sharder = Rendezvous{}

// ShouldOwn reports whether self wins key among peers.
func (Rendezvous) ShouldOwn(key string, peers []sharder.PeerInfo, self sharder.PeerInfo) bool {
	if len(peers) == 0 {
		return true
	}
	var best string
	var bestScore uint64
	for _, p := range peers {
		score := score(key, p.ID) * uint64(max(p.Weight, 1))
		if score >= bestScore {
			best, bestScore = p.ID, score
		}
	}
	return best == self.ID
}

// score is the finalized FNV-1a hash of key, a zero byte and peer.
func score(key, peer string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(peer))
	return fmix64(h.Sum64())
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
