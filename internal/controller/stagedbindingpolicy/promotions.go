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
	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// PromotedStages returns the names of the stages whose record says they
// were promoted (status.stages[].promotion) in after and not, or not at
// that time, in before: the stages a status write promoted.
func PromotedStages(before, after *v1alpha1.StagedBindingPolicyStatus) []string {
	was := make(map[string]v1alpha1.StagePromotion, len(before.Stages))
	for _, st := range before.Stages {
		if st.Promotion != nil {
			was[st.Name] = *st.Promotion
		}
	}
	var promoted []string
	for _, st := range after.Stages {
		if st.Promotion == nil {
			continue
		}
		if old, ok := was[st.Name]; ok && old.Time.Equal(&st.Promotion.Time) {
			continue
		}
		promoted = append(promoted, st.Name)
	}
	return promoted
}
