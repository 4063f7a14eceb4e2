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

package wave

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// MaxFailedRevisions is how many given-up revisions a report remembers; the
// oldest beyond it are forgotten (the CRD's bound).
const MaxFailedRevisions = 16

// Report returns what a space reports of one of its ordered policies: its
// phase and revision names, when it completed its current revision, and
// the revisions it gave up, prior's (the report it made before, or nil)
// and now its update revision if it is Aborted or Stalled at it. Nothing
// else of the policy crosses to other spaces.
func Report(p *v1alpha1.StagedBindingPolicy, prior *hostingv1alpha1.WavePolicyReport) hostingv1alpha1.WavePolicyReport {
	r := hostingv1alpha1.WavePolicyReport{
		Name:            p.Name,
		Phase:           string(p.Status.Phase),
		Revision:        p.Status.UpdateRevision,
		CurrentRevision: p.Status.CurrentRevision,
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionCompleted); c != nil && c.Status == "True" {
		r.CompletedTime = c.LastTransitionTime.DeepCopy()
	}
	if prior != nil {
		r.FailedRevisions = slices.Clone(prior.FailedRevisions)
	}
	if Failed(p.Status.Phase) && r.Revision != "" {
		r.FailedRevisions = AddFailed(r.FailedRevisions, r.Revision)
	}
	return r
}

// AddFailed returns revisions, a list of given-up revisions oldest first,
// with each of more that it lacks appended, and its oldest dropped beyond
// MaxFailedRevisions. It may reuse revisions' array.
func AddFailed(revisions []string, more ...string) []string {
	for _, rev := range more {
		if !slices.Contains(revisions, rev) {
			revisions = append(revisions, rev)
		}
	}
	if extra := len(revisions) - MaxFailedRevisions; extra > 0 {
		revisions = revisions[extra:]
	}
	return revisions
}

// SpaceReport returns the report of space in w's status, or nil.
func SpaceReport(w *hostingv1alpha1.RolloutWave, space string) *hostingv1alpha1.WaveSpaceReport {
	for i := range w.Status.Spaces {
		if w.Status.Spaces[i].Space == space {
			return &w.Status.Spaces[i]
		}
	}
	return nil
}
