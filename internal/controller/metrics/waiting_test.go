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

package metrics

import (
	"maps"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// TestPolicyWaitingSeries checks stager_policy_waiting and
// stager_policy_next_window_time_seconds as a policy's conditions and
// status.window change, and that both go with the policy.
func TestPolicyWaitingSeries(t *testing.T) {
	c := serveFake(t, "waiting-test")
	p := policyAt("a", "", v1alpha1.RolloutPending, -1)
	c.set(p)
	none := map[string]float64{"policy=a,reason=WaitingForWave": 0, "policy=a,reason=WaitingForWindow": 0, "policy=a,reason=Frozen": 0}
	if got := scraped(t, "stager_policy_waiting", "waiting-test"); !maps.Equal(got, none) {
		t.Fatalf("waiting %v, want every reason at 0", got)
	}
	if got := scraped(t, "stager_policy_next_window_time_seconds", "waiting-test"); len(got) != 0 {
		t.Fatalf("next window %v with no stage waiting, want none", got)
	}

	opens := metav1.NewTime(time.Unix(9000, 0))
	p.Status.Window = &v1alpha1.WindowStatus{Stage: "dev", OpensAt: opens, TimeZone: "Europe/Paris"}
	for _, reason := range []string{v1alpha1.ConditionWaitingForWindow, v1alpha1.ConditionFrozen} {
		meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: reason, Status: metav1.ConditionTrue, Reason: reason})
	}
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionWaitingForWave, Status: metav1.ConditionFalse, Reason: "Released"})
	c.set(p)
	want := map[string]float64{"policy=a,reason=WaitingForWave": 0, "policy=a,reason=WaitingForWindow": 1, "policy=a,reason=Frozen": 1}
	if got := scraped(t, "stager_policy_waiting", "waiting-test"); !maps.Equal(got, want) {
		t.Fatalf("waiting %v, want %v", got, want)
	}
	if got := scraped(t, "stager_policy_next_window_time_seconds", "waiting-test"); !maps.Equal(got, map[string]float64{"policy=a": 9000}) {
		t.Fatalf("next window %v, want a at 9000", got)
	}

	c.delete("a")
	for _, metric := range []string{"stager_policy_waiting", "stager_policy_next_window_time_seconds"} {
		if got := scraped(t, metric, "waiting-test"); len(got) != 0 {
			t.Fatalf("%s %v after the policy left the cache, want none", metric, got)
		}
	}
}
