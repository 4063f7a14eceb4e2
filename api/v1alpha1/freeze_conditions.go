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

package v1alpha1

const (
	// ConditionFrozen is True while a RolloutFreeze of the hosting cluster
	// keeps a stage, or a batch of a stage, of the policy from starting:
	// its reason is the freeze's (FreezeActive, FreezeInvalid,
	// FreezesUnreadable), its message names the freeze, its end and why.
	// It goes once nothing the policy would start is frozen.
	ConditionFrozen = "Frozen"

	// EventReasonFrozen marks a start a freeze holds, once per freeze
	// and end.
	EventReasonFrozen = "Frozen"
	// EventReasonUnfrozen marks the end of a freeze's hold: what it held
	// starts.
	EventReasonUnfrozen = "Unfrozen"
)
