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

package expression

import (
	"testing"
	"time"
)

// TestTimeoutsAreShared checks that evaluations starting within a
// sixteenth of the timeout share a context, and that each context ends
// between 15/16 of the timeout and the timeout after its evaluation starts.
func TestTimeoutsAreShared(t *testing.T) {
	to := &timeouts{timeout: 16 * time.Second}
	start := time.Now()
	first, end := to.context(start)
	if want := start.Add(16 * time.Second); !end.Equal(want) {
		t.Errorf("deadline %s after the start, want 16s", end.Sub(start))
	}
	if d, ok := first.Deadline(); !ok || !d.Equal(end) {
		t.Errorf("context deadline %v, want %v", d, end)
	}
	if same, _ := to.context(start.Add(time.Second)); same != first {
		t.Error("an evaluation 1s later got a new context")
	}
	later, end := to.context(start.Add(1500 * time.Millisecond))
	if later == first {
		t.Error("an evaluation 1.5s later shares a context that ends 14.5s after it")
	}
	if want := start.Add(17500 * time.Millisecond); !end.Equal(want) {
		t.Errorf("deadline %s after the start, want 17.5s", end.Sub(start))
	}
}
