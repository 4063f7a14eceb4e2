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

package spaces

import (
	"fmt"
	"testing"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout/rollouttest"
)

// thousandPolicies is how many policies one space serves in the scale
// benchmarks (BenchmarkOneSpaceManyPolicies).
const thousandPolicies = 1000

// TestDefaultBoundHoldsAThousandPolicies prices, as the space's cache
// meter does, what one policy at the end of a three-stage Accumulate
// rollout keeps in the cache: the policy, three BindingPolicies, their
// Bindings (three objects on five WECs each) and a CombinedStatus per
// object and BindingPolicy. The default bound must hold the scale
// benchmark's thousand of them, with room to spare, so that it only stops
// a space that holds far more than the stager reads.
func TestDefaultBoundHoldsAThousandPolicies(t *testing.T) {
	policy := rollouttest.AtStage(rollouttest.NewPolicy(), "prod")
	policy.Spec.Placement = v1alpha1.PlacementAccumulate
	policy.ResourceVersion, policy.CreationTimestamp = "123456", metav1.Now()
	objects := []any{policy}
	for i, stage := range policy.Spec.Stages {
		bp := rollouttest.OwnedBP(policy, stage.Name, types.UID(fmt.Sprintf("bp-%d-0000-0000-0000-000000000000", i)))
		bp.ResourceVersion, bp.CreationTimestamp = "123457", metav1.Now()
		binding := rollouttest.BindingFor(bp)
		binding.Spec.Destinations = nil
		for w := range 5 {
			binding.Spec.Destinations = append(binding.Spec.Destinations, ksv1alpha1.Destination{ClusterId: fmt.Sprintf("wec-%s-%d", stage.Name, w)})
		}
		objects = append(objects, bp, binding)
		for _, o := range []rollouttest.WorkloadObject{rollouttest.Deployment, rollouttest.ConfigMap, rollouttest.NamespaceObject} {
			cs := rollouttest.CombinedStatus(bp, o, "5")
			objects = append(objects, &cs)
		}
	}
	var perPolicy int64
	for _, o := range objects {
		perPolicy += cacheCost(o)
	}
	total := perPolicy * thousandPolicies
	t.Logf("one policy: %d objects, %d bytes; %d policies: %.1f MiB of the default %d MiB (%.1f× room)",
		len(objects), perPolicy, thousandPolicies, float64(total)/(1<<20), DefaultMaxCacheBytes>>20, float64(DefaultMaxCacheBytes)/float64(total))
	if total*2 > DefaultMaxCacheBytes {
		t.Errorf("%d policies of this shape take %d bytes: the default bound (%d) leaves less than twice that", thousandPolicies, total, DefaultMaxCacheBytes)
	}
}
