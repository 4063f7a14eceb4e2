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

// Fence bounds a sharded replica's writes to a space by its tenure of the
// space's fence (sharding.Tenure): once another replica may have taken the
// fence, two would write at once.
type Fence interface {
	// Hold starts one write at now, by the reconciler's clock. It returns
	// the write's context, which ends by the tenure's end as it is now,
	// and the function to call with the write's result once it has
	// returned; or an error once the tenure has ended.
	Hold(ctx context.Context, now time.Time) (context.Context, func(error), error)
}

// FenceRetry is how soon a run that found the fence lapsed is tried again:
// a late renewal may yet extend the tenure, and a lost fence stops the
// space's controller at the coordinator's next renewal.
const FenceRetry = time.Second

// applyFenced makes the change an Action describes (apply) within the
// replica's tenure of the space's fence. lapsed is set, and err is the
// reason, when the tenure had ended before the change, or ended while it
// was being made, so that it may or may not have been made.
func (r *Reconciler) applyFenced(ctx context.Context, apply func(context.Context) error) (lapsed bool, err error) {
	if r.Fence == nil {
		return false, apply(ctx)
	}
	write, done, err := r.Fence.Hold(ctx, r.clock().Now())
	if err != nil {
		return true, err
	}
	defer func() { done(err) }()
	err = apply(write)
	return err != nil && write.Err() != nil && ctx.Err() == nil, err
}
