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

// Package stagedbindingpolicy holds the controller that rolls a
// StagedBindingPolicy out stage by stage in one space (WDS).
//
// The reconciler is step-based: every run reads the state of one policy into a
// rollout.Snapshot, lets the pure function rollout.Plan choose the single next
// change, makes that change and stops; a watch event, or a requeue, brings the next run.
// A status write that enters a stage is followed at once, in the same run,
// by the step that creates the stage's BindingPolicy (see maxStepsPerRun).
// All state lives in the API server — the active stage is recorded in the
// policy's status — so a restarted controller carries on exactly where the
// previous one stopped, without repeating or skipping a stage.
//
// Moving from one stage to the next is make-before-break: the next stage's
// BindingPolicy is created first, and the previous stage's BindingPolicy is
// deleted only once KubeStellar has resolved the new one into a Binding. For a
// short while both stages' clusters hold the workload, rather than none of them.
package stagedbindingpolicy
