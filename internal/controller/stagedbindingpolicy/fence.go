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
	"context"
	"time"
)

// Fence says until when this replica holds a space's fence. A sharded
// replica writes to a space only while it holds the space's fence: once
// another replica may have taken it, two would write at once.
type Fence interface {
	// HeldUntil is when this replica's tenure of the fence ends, as far as
	// it knows; the zero time when it does not hold it.
	HeldUntil() time.Time
}

// FenceRetry is how soon a run that found the fence lapsed is tried again:
// a late renewal may yet extend the tenure, and a lost fence stops the
// space's controller at the coordinator's next renewal.
const FenceRetry = time.Second

// fenced returns ctx bounded by the end of the replica's tenure of the
// space's fence, and false once the tenure has ended by the reconciler's
// clock. A write sent in time may still be waited for past the tenure, as
// long as the API server takes to answer it; the tenure ends early enough
// for that (sharding.Tenures).
func (r *Reconciler) fenced(ctx context.Context) (context.Context, context.CancelFunc, bool) {
	if r.Fence == nil {
		return ctx, func() {}, true
	}
	left := r.Fence.HeldUntil().Sub(r.clock().Now())
	if left <= 0 {
		return ctx, func() {}, false
	}
	bounded, cancel := context.WithTimeout(ctx, left)
	return bounded, cancel, true
}
