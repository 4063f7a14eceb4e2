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

// Package rollout is the decision of a staged rollout: given a Snapshot of
// one StagedBindingPolicy and the objects around its active stage, Plan
// returns the single next change (an Action). Plan is a pure function of the
// Snapshot and the CEL engine: it reads no API server, keeps no state and
// takes the time from the Snapshot, so every rule has a table test and a
// restarted controller decides alike.
//
// Besides Plan, the package holds what the decision is made of: the
// assessment of a stage's condition over its CombinedStatuses (assess.go),
// approvals (approval.go), the handover from one stage to the next
// (handover.go), revisions and abort (revision.go), stages placed in
// batches (batches.go, and their arithmetic in batchmath.go), the moves
// from stage to stage (stages.go), the timers (timers.go), the deletion
// (deletion.go), the status Plan writes (status.go), what the reconciler
// reads for a Snapshot (reads.go), and the explanation kubectl stager
// prints (explain.go).
package rollout
