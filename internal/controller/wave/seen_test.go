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

package wave

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	wavegate "github.com/kubestellar/workload-stager/internal/wave"
)

// TestSeenHoldsOnlyOrderedPolicies: whatever the waves order over time and
// whatever the policies do, the revisions a served space remembers given
// up are those of the policies ordered now, at most
// wave.MaxFailedRevisions each, so a space whose waves ordered many names
// over their life holds no more than they order now; and a policy that is
// still ordered keeps what was seen of it (priorOf reports it).
func TestSeenHoldsOnlyOrderedPolicies(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := &servedSpace{seen: map[string][]string{}, wake: make(chan struct{}, 1)}
		s.setOrdered(map[string]bool{})
		names := rapid.SliceOfNDistinct(rapid.StringMatching(`p[0-9]{1,3}`), 1, 40, rapid.ID[string]).Draw(t, "names")
		want := map[string][]string{} // per ordered policy, the revisions seen given up
		for step := range rapid.IntRange(1, 60).Draw(t, "steps") {
			if rapid.IntRange(0, 3).Draw(t, fmt.Sprint("op ", step)) == 0 {
				ordered := map[string]bool{}
				for _, n := range rapid.SliceOfDistinct(rapid.SampledFrom(names), rapid.ID[string]).Draw(t, fmt.Sprint("ordered ", step)) {
					ordered[n] = true
				}
				s.setOrdered(ordered)
				for n := range want {
					if !ordered[n] {
						delete(want, n)
					}
				}
				continue
			}
			p := &v1alpha1.StagedBindingPolicy{}
			p.Name = rapid.SampledFrom(names).Draw(t, fmt.Sprint("policy ", step))
			p.Status.Phase = rapid.SampledFrom([]v1alpha1.RolloutPhase{v1alpha1.RolloutStalled, v1alpha1.RolloutAborted, v1alpha1.RolloutProgressing}).Draw(t, fmt.Sprint("phase ", step))
			p.Status.UpdateRevision = fmt.Sprintf("v%d", rapid.IntRange(0, 40).Draw(t, fmt.Sprint("revision ", step)))
			s.policyChanged(nil, p)
			if (*s.ordered.Load())[p.Name] && wavegate.Failed(p.Status.Phase) {
				want[p.Name] = wavegate.AddFailed(want[p.Name], p.Status.UpdateRevision)
			}

			ordered := *s.ordered.Load()
			for n, revs := range s.seen {
				if !ordered[n] {
					t.Fatalf("seen keeps %s, which no wave orders now (ordered %v)", n, slices.Sorted(maps.Keys(ordered)))
				}
				if len(revs) > wavegate.MaxFailedRevisions {
					t.Fatalf("seen keeps %d revisions of %s", len(revs), n)
				}
			}
			for n, revs := range want {
				if got := s.priorOf(nil, n).FailedRevisions; !slices.Equal(got, revs) {
					t.Fatalf("priorOf(%s) = %v, want %v", n, got, revs)
				}
			}
		}
	})
}
