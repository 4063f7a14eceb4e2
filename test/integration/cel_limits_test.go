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

package integration

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// Hostile conditions: work that does not depend on the CombinedStatus and
// that, without limits, would hold a worker for a long time per evaluation.
const (
	// hostileEstimated is rejected by the compile-time cost estimate.
	hostileEstimated = `obj.results.exists(r, lists.range(300000).map(i, 'x').size() == 0)`
	// hostileRuntime passes the estimate and is stopped by the runtime cost limit.
	hostileRuntime = `lists.range(300000).map(i, 'x').size() == 0`
)

// TestHostileExpressionsDoNotSlowOtherPolicies checks that two policies with
// hostile conditions, which without limits would hold both workers of the
// space, neither delay a normal policy of the same space
// much beyond the time it takes alone (measured first, in the same run), nor
// go unexplained: their status says ExpressionTooCostly and why.
func TestHostileExpressionsDoNotSlowOtherPolicies(t *testing.T) {
	s := suite.wds1
	const baselineName, loadedName = "cel-baseline", "cel-loaded"

	// rollout times a normal three-stage rollout whose WECs report available
	// from the start.
	rollout := func(name string, within time.Duration) time.Duration {
		t.Helper()
		createWorkload(t, s, name)
		for _, stage := range []string{"dev", "test"} {
			s.openGate(name, stage)
		}
		start := time.Now()
		create(t, s, newPolicy(name, name))
		space := policies(s)
		space.Timeout = within
		space.WaitForPhase(t, name, v1alpha1.RolloutCompleted)
		return time.Since(start)
	}

	baseline := rollout(baselineName, timeout)
	t.Logf("a normal rollout alone took %s", baseline.Round(time.Millisecond))

	hostile := map[string]string{"cel-hostile-estimated": hostileEstimated, "cel-hostile-runtime": hostileRuntime}
	for name, condition := range hostile {
		createWorkload(t, s, name)
		policy := newPolicy(name, name)
		policy.Spec.Stages[0].Condition = condition
		create(t, s, policy)
		t.Cleanup(func() { policies(s).Delete(t, name) })
	}
	// The runtime-hostile policy is being evaluated once its dev Binding reports status.
	waitForBindingPolicies(t, s, "cel-hostile-runtime", "dev")

	bound := 3*baseline + 10*time.Second
	loaded := rollout(loadedName, bound+30*time.Second)
	t.Logf("with two hostile policies in the space, a normal rollout took %s (bound %s)",
		loaded.Round(time.Millisecond), bound.Round(time.Millisecond))
	if loaded > bound {
		t.Errorf("with two hostile policies in the space, a normal rollout took %s, more than %s (3 x %s alone + 10s)",
			loaded.Round(time.Millisecond), bound.Round(time.Millisecond), baseline.Round(time.Millisecond))
	}

	for name, want := range map[string]string{
		"cel-hostile-estimated": "estimated worst-case cost",
		"cel-hostile-runtime":   "cost limit exceeded",
	} {
		p := policies(s).WaitForCondition(t, name, v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonExpressionTooCostly)
		msg := conditionOf(p, v1alpha1.ConditionProgressing).Message
		if !strings.Contains(msg, want) || !strings.Contains(msg, `stage "dev"`) || !strings.Contains(msg, hostile[name]) {
			t.Errorf("%s: Progressing message %q does not name the stage, the expression and %q", name, msg, want)
		}
		if p.Status.Phase != v1alpha1.RolloutBlocked {
			t.Errorf("%s: phase = %q, want Blocked (%s)", name, p.Status.Phase, policytest.Describe(p))
		}
	}
}
