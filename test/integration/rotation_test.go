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

package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/controller/spaces"
)

// TestSecretRotationKeepsOneController rotates a space's kubeconfig Secret
// (a new client certificate for the same server) ten times during a rollout.
// Each rotation makes the provider build a new cluster and engage it under
// the space's name while the old one drains. The space must stay engaged and
// keep exactly one controller throughout, and the rollout must complete.
func TestSecretRotationKeepsOneController(t *testing.T) {
	const name, rotations = "rotated", 10
	s := newSpace(t, "rotated", true)
	if err := register(suite.ctx, s); err != nil {
		t.Fatalf("registering the space: %v", err)
	}
	waitForSpace(t, suite.stager, s.Name, true, spaces.ReasonReady)

	most := sampleControllers(t, suite.stager, s.Name)
	dropped := sampleDropOuts(t, suite.stager, s.Name)

	rotated := 0
	rotate := func(n int) {
		t.Helper()
		for range n {
			if err := register(suite.ctx, s); err != nil {
				t.Fatalf("rotating the Secret: %v", err)
			}
			rotated++
			time.Sleep(300 * time.Millisecond)
		}
	}

	createWorkload(t, s, name)
	create(t, s, newPolicy(name, name))
	rotate(3)
	policies(s).WaitForActiveStage(t, name, "dev")
	s.openGate(name, "dev")
	rotate(3)
	policies(s).WaitForActiveStage(t, name, "test")
	s.openGate(name, "test")
	rotate(rotations - rotated)
	policies(s).WaitForPhase(t, name, v1alpha1.RolloutCompleted)

	waitForSpace(t, suite.stager, s.Name, true, spaces.ReasonReady)
	waitFor(t, "one controller for the space", func() error {
		if n := suite.stager.Spaces.Controllers(s.Name); n != 1 {
			return fmt.Errorf("%d controllers", n)
		}
		return nil
	})
	if v, ok := metricValue(t, "stager_space_ready", map[string]string{"space": s.Name}); !ok || v != 1 {
		t.Errorf("stager_space_ready{space=%s} = %v (present %t), want 1", s.Name, v, ok)
	}
	if m := most(); m != 1 {
		t.Errorf("the space had up to %d controllers at once during %d rotations, want 1", m, rotated)
	}
	if n := dropped(); n != 0 {
		t.Errorf("the space was not engaged %d times during %d rotations, want it engaged throughout", n, rotated)
	}
	policies(s).Delete(t, name)
}
