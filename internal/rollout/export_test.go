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

package rollout

import (
	"crypto/rand"
	"fmt"
)

// RestartProcess gives the package the state of a new stager process: a
// new key seals handover marks and batch placements (handoverKey), so that
// marks written before are no record. The state-machine test calls it for
// a restart of the stager; no other state of the package outlives a run.
func RestartProcess() {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic(fmt.Sprintf("reading a new handover key: %v", err))
	}
	handoverKey = key
}
