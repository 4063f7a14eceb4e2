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

package stagedbindingpolicy

import (
	"testing"
	"time"

	"github.com/kubestellar/workload-stager/internal/rollout"
)

// TestControllersNeverRunWithTheZeroKey: NewController keeps the key it is
// given, and makes a fresh one for none, as the zero key's seals can be
// forged by anyone who can read a policy.
func TestControllersNeverRunWithTheZeroKey(t *testing.T) {
	given, err := rollout.NewHandoverKey()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	if kept, err := keyOrFresh(given); err != nil || kept.Mark("uid", "dev", start) != given.Mark("uid", "dev", start) {
		t.Errorf("the key given was not kept (%v)", err)
	}
	fresh, err := keyOrFresh(rollout.HandoverKey{})
	if err != nil {
		t.Fatal(err)
	}
	if fresh.IsZero() || fresh.Mark("uid", "dev", start) == (rollout.HandoverKey{}).Mark("uid", "dev", start) {
		t.Errorf("a controller given no key runs with the zero key")
	}
}
