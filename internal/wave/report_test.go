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

package wave_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/wave"
)

// policyIn is the policy web in phase at update revision, having
// completed current at t0-1h when completed is true.
func policyIn(phase v1alpha1.RolloutPhase, update, current string, completed bool) *v1alpha1.StagedBindingPolicy {
	p := &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	p.Status = v1alpha1.StagedBindingPolicyStatus{Phase: phase, UpdateRevision: update, CurrentRevision: current,
		// What does not cross spaces: the stage, messages, other conditions.
		ActiveStage: "prod", Stages: []v1alpha1.StageStatus{{Name: "prod", Message: "secret-ish detail"}}}
	status := metav1.ConditionFalse
	if completed {
		status = metav1.ConditionTrue
	}
	p.Status.Conditions = []metav1.Condition{
		{Type: v1alpha1.ConditionCompleted, Status: status, Reason: "R", Message: "not to cross", LastTransitionTime: *at(-time.Hour)},
		{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "R", LastTransitionTime: *at(-2 * time.Hour)},
	}
	return p
}

// TestReport: a report carries the phase and revision names, the
// completion time, and accumulates the revisions given up, boundedly.
func TestReport(t *testing.T) {
	for name, tc := range map[string]struct {
		policy *v1alpha1.StagedBindingPolicy
		prior  *hostingv1alpha1.WavePolicyReport
		want   hostingv1alpha1.WavePolicyReport
	}{
		"completed": {policy: policyIn(v1alpha1.RolloutCompleted, "v2", "v2", true),
			want: hostingv1alpha1.WavePolicyReport{Name: "web", Phase: "Completed", Revision: "v2", CurrentRevision: "v2", CompletedTime: at(-time.Hour)}},
		"progressing": {policy: policyIn(v1alpha1.RolloutProgressing, "v3", "v2", false),
			want: hostingv1alpha1.WavePolicyReport{Name: "web", Phase: "Progressing", Revision: "v3", CurrentRevision: "v2"}},
		"aborted is given up": {policy: policyIn(v1alpha1.RolloutAborted, "v3", "v2", false),
			want: hostingv1alpha1.WavePolicyReport{Name: "web", Phase: "Aborted", Revision: "v3", CurrentRevision: "v2", FailedRevisions: []string{"v3"}}},
		"stalled is given up, once": {policy: policyIn(v1alpha1.RolloutStalled, "v3", "v2", false),
			prior: &hostingv1alpha1.WavePolicyReport{FailedRevisions: []string{"v1", "v3"}},
			want:  hostingv1alpha1.WavePolicyReport{Name: "web", Phase: "Stalled", Revision: "v3", CurrentRevision: "v2", FailedRevisions: []string{"v1", "v3"}}},
		"given up stays given up once completed": {policy: policyIn(v1alpha1.RolloutCompleted, "v3", "v3", true),
			prior: &hostingv1alpha1.WavePolicyReport{FailedRevisions: []string{"v3"}},
			want:  hostingv1alpha1.WavePolicyReport{Name: "web", Phase: "Completed", Revision: "v3", CurrentRevision: "v3", CompletedTime: at(-time.Hour), FailedRevisions: []string{"v3"}}},
		"the oldest given up are forgotten": {policy: policyIn(v1alpha1.RolloutAborted, "new", "v2", false),
			prior: &hostingv1alpha1.WavePolicyReport{FailedRevisions: revisions(wave.MaxFailedRevisions)},
			want: hostingv1alpha1.WavePolicyReport{Name: "web", Phase: "Aborted", Revision: "new", CurrentRevision: "v2",
				FailedRevisions: append(revisions(wave.MaxFailedRevisions)[1:], "new")}},
		"a policy never started": {policy: policyIn("", "", "", false), want: hostingv1alpha1.WavePolicyReport{Name: "web"}},
	} {
		t.Run(name, func(t *testing.T) {
			if got := wave.Report(tc.policy, tc.prior); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Report: %+v, want %+v", got, tc.want)
			}
		})
	}
}

// revisions returns n revision names r0..r(n-1).
func revisions(n int) []string {
	r := make([]string, n)
	for i := range r {
		r[i] = fmt.Sprintf("r%d", i)
	}
	return r
}
