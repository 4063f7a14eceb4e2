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
	"fmt"
	"maps"
	"slices"
	"testing"

	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/sharder"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// owners returns, for each key, the peer that owns it by Rendezvous.
func owners(keys []string, peers []sharder.PeerInfo) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		for _, p := range peers {
			if (Rendezvous{}).ShouldOwn(k, peers, p) {
				out[k] = p.ID
			}
		}
	}
	return out
}

// fenceKeys are n keys named by format, as the sharder is given them.
// These test the hash over many keys; the coordinator gives it the Slots
// slot keys (TestSlotShares).
func fenceKeys(format string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf(format, i)
	}
	return keys
}

func peersNamed(ids ...string) []sharder.PeerInfo {
	out := make([]sharder.PeerInfo, len(ids))
	for i, id := range ids {
		out[i] = sharder.PeerInfo{ID: id, Weight: 1}
	}
	return out
}

// TestRendezvousSharesEvenly checks that replicas named as a fleet names
// them (r1, r2, r3; stager-0, stager-1, ...) get even shares of spaces
// named as the providers name them: each within 5 points of 1/n of 1,000
// spaces (more than 3 standard deviations of a fair draw).
func TestRendezvousSharesEvenly(t *testing.T) {
	for _, tc := range []struct {
		name  string
		keys  []string
		peers []sharder.PeerInfo
	}{
		{"kcp workspaces, r1-r3", fenceKeys("root:wds%03d", 1000), peersNamed("r1", "r2", "r3")},
		{"kubeconfig Secrets, StatefulSet pods", fenceKeys("wds%d", 1000), peersNamed("stager-0", "stager-1", "stager-2")},
		{"KubeFlex ControlPlanes, four replicas", fenceKeys("kubeflex#cp-%d", 1000), peersNamed("r1", "r2", "r3", "r4")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shares := map[string]int{}
			for _, owner := range owners(tc.keys, tc.peers) {
				shares[owner]++
			}
			fair := float64(len(tc.keys)) / float64(len(tc.peers))
			for _, p := range tc.peers {
				if got := float64(shares[p.ID]); got < fair-0.05*float64(len(tc.keys)) || got > fair+0.05*float64(len(tc.keys)) {
					t.Errorf("shares %v of %d spaces, want each near %.0f", shares, len(tc.keys), fair)
					break
				}
			}
		})
	}
}

// TestRendezvousMovesOnlyTheLeaversSpaces checks rendezvous hashing's
// promise: when a replica leaves, only its spaces move, and when one joins
// it takes spaces only.
func TestRendezvousMovesOnlyTheLeaversSpaces(t *testing.T) {
	keys := fenceKeys("root:wds%03d", 300)
	three := owners(keys, peersNamed("r1", "r2", "r3"))
	two := owners(keys, peersNamed("r2", "r3"))
	four := owners(keys, peersNamed("r1", "r2", "r3", "r4"))
	for _, k := range keys {
		if three[k] != "r1" && two[k] != three[k] {
			t.Errorf("%s moved from %s to %s when r1 left", k, three[k], two[k])
		}
		if four[k] != "r4" && four[k] != three[k] {
			t.Errorf("%s moved from %s to %s when r4 joined", k, three[k], four[k])
		}
	}
}

// TestRendezvousFollowsWeights checks that a replica of weight 2 among two
// of weight 1 gets about half the spaces.
func TestRendezvousFollowsWeights(t *testing.T) {
	keys := fenceKeys("root:wds%04d", 3000)
	peers := []sharder.PeerInfo{{ID: "r1", Weight: 2}, {ID: "r2", Weight: 1}, {ID: "r3", Weight: 1}}
	shares := map[string]int{}
	for _, owner := range owners(keys, peers) {
		shares[owner]++
	}
	if r1 := float64(shares["r1"]) / float64(len(keys)); r1 < 0.45 || r1 > 0.55 {
		t.Errorf("shares %v: r1 of weight 2 got %.0f%%, want about 50%%", shares, 100*r1)
	}
}

func TestRendezvousEdges(t *testing.T) {
	self := sharder.PeerInfo{ID: "r1"}
	if !(Rendezvous{}).ShouldOwn("k", nil, self) {
		t.Error("no peers: want the caller to own the key")
	}
	// A weight of 0 counts as 1: the same owner as with every weight 1.
	zero := []sharder.PeerInfo{{ID: "r1"}, {ID: "r2"}}
	for _, k := range fenceKeys("wds%d", 50) {
		if (Rendezvous{}).ShouldOwn(k, zero, zero[0]) != (Rendezvous{}).ShouldOwn(k, peersNamed("r1", "r2"), zero[0]) {
			t.Errorf("%s: weight 0 does not count as 1", k)
		}
	}
}

// slotKeys are the keys the coordinator gives the sharder: the Slots slots.
func slotKeys() []string {
	seen := map[string]bool{}
	for i := 0; len(seen) < Slots; i++ {
		seen[string(FenceKey(multicluster.ClusterName(fmt.Sprintf("kcp#root:wds%d", i))))] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// slotOwners maps each slot key to the peer the sharder gives it.
func slotOwners(sh sharder.Sharder, peers []sharder.PeerInfo) map[string]string {
	out := map[string]string{}
	for _, k := range slotKeys() {
		for _, p := range peers {
			if sh.ShouldOwn(k, peers, p) {
				if prev, dup := out[k]; dup {
					panic(fmt.Sprintf("%s owned by %s and %s", k, prev, p.ID))
				}
				out[k] = p.ID
			}
		}
	}
	return out
}

// TestSlotShares: with 64 slots, rendezvous hashing alone gave one of three
// replicas 30 slots and another 15 (docs/reliability.md, "Slot fences");
// SlotRendezvous gives every replica its fair share of the slots, rounded
// up, and every slot exactly one owner, for fleets named as
// TestRendezvousSharesEvenly names them, of one to eight replicas.
func TestSlotShares(t *testing.T) {
	for n := 1; n <= 8; n++ {
		for _, format := range []string{"r%d", "stager-%d"} {
			ids := make([]string, n)
			for i := range ids {
				ids[i] = fmt.Sprintf(format, i+1)
			}
			peers := peersNamed(ids...)
			owned := slotOwners(SlotRendezvous{}, peers)
			if len(owned) != Slots {
				t.Fatalf("%v: %d of %d slots owned", ids, len(owned), Slots)
			}
			shares := map[string]int{}
			for _, owner := range owned {
				shares[owner]++
			}
			most := (Slots + n - 1) / n
			for _, p := range peers {
				if shares[p.ID] > most {
					t.Errorf("slot shares %v, want none above %d", shares, most)
					break
				}
			}
		}
	}
}

// TestSlotsStayWhenAPeerLeaves bounds the slots that move between replicas
// that stay when one leaves: a failover should take the dead replica's
// slots, and move few others.
func TestSlotsStayWhenAPeerLeaves(t *testing.T) {
	for n := 2; n <= 8; n++ {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("stager-%d", i)
		}
		before := slotOwners(SlotRendezvous{}, peersNamed(ids...))
		for gone := range ids {
			rest := slices.Delete(slices.Clone(ids), gone, gone+1)
			after := slotOwners(SlotRendezvous{}, peersNamed(rest...))
			moved := 0
			for k, owner := range before {
				if owner != ids[gone] && after[k] != owner {
					moved++
				}
			}
			t.Logf("%d replicas, %s leaves: %d of the survivors' slots move", n, ids[gone], moved)
			if moved > Slots/8 {
				t.Errorf("%d replicas, %s leaves: %d of the survivors' slots move, want at most %d", n, ids[gone], moved, Slots/8)
			}
		}
	}
}
