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
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// reproductions are the review's conditions that ran or allocated past
// their charge (issue 54), which neither need nor read their input: N1,
// format building 570 MB before it is charged, and N2, equality over
// shared sub-lists walking 10^9 leaves in one call that is never
// interrupted.
var reproductions = map[string]string{
	"contained-format": `[lists.range(30000)].exists(x, [[` + strings.TrimSuffix(strings.Repeat("x, ", 10), ", ") + `]].exists(y, '` +
		strings.Repeat("%s", 300) + `'.format([` + strings.TrimSuffix(strings.Repeat("y, ", 300), ", ") + `]).size() > 0))`,
	"contained-equality": sharedSubLists(9) + `v9 != v9` + strings.Repeat(")", 10),
}

// sharedSubLists binds v0 to ten ints and each v<i>, up to v<k>, to ten
// copies of v<i-1>, leaving the expression open for a body.
func sharedSubLists(k int) string {
	var b strings.Builder
	b.WriteString(`[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]].exists(v0, `)
	for i := 1; i <= k; i++ {
		fmt.Fprintf(&b, `[[%s]].exists(v%d, `, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("v%d, ", i-1), 10), ", "), i)
	}
	return b.String()
}

// peakRSS is this process's peak resident set.
func peakRSS(t *testing.T) uint64 {
	t.Helper()
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		t.Fatalf("getrusage: %v", err)
	}
	return uint64(u.Maxrss) << 10
}

// TestContainedExpressionsStopNoOtherSpace puts the review's reproductions
// in policies of wds1 while a normal policy rolls out in wds2, with the
// stager (in this process) evaluating as it does by default, in worker
// processes. Built with the tag celholes, which removes the reproductions'
// own fixes, only the workers' containment stands between them and the
// stager (make test runs it so). The hostile policies must be Blocked with
// ExpressionTooCostly, the other space's rollout must complete, and this
// process's peak memory must stay where it was.
func TestContainedExpressionsStopNoOtherSpace(t *testing.T) {
	before := peakRSS(t)
	for name, condition := range reproductions {
		createWorkload(t, suite.wds1, name)
		policy := newPolicy(name, name)
		policy.Spec.Stages[0].Condition = condition
		create(t, suite.wds1, policy)
		t.Cleanup(func() { policies(suite.wds1).Delete(t, name) })
	}
	waitForBindingPolicies(t, suite.wds1, "contained-equality", "dev")

	const other = "contained-other"
	createWorkload(t, suite.wds2, other)
	for _, stage := range []string{"dev", "test"} {
		suite.wds2.openGate(other, stage)
	}
	start := time.Now()
	create(t, suite.wds2, newPolicy(other, other))
	t.Cleanup(func() { policies(suite.wds2).Delete(t, other) })
	policies(suite.wds2).WaitForPhase(t, other, v1alpha1.RolloutCompleted)
	t.Logf("wds2's rollout completed in %s beside the hostile policies of wds1", time.Since(start).Round(time.Millisecond))

	for name := range reproductions {
		p := policies(suite.wds1).WaitForCondition(t, name, v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonExpressionTooCostly)
		msg := conditionOf(p, v1alpha1.ConditionProgressing).Message
		t.Logf("%s: %s", name, msg)
		if !strings.Contains(msg, `stage "dev"`) {
			t.Errorf("%s: Progressing message %q does not name the stage", name, msg)
		}
		if p.Status.Phase != v1alpha1.RolloutBlocked {
			t.Errorf("%s: phase = %q, want Blocked", name, p.Status.Phase)
		}
	}
	if grown := peakRSS(t) - before; grown > 128<<20 {
		t.Errorf("the stager's process grew its peak RSS by %d MiB", grown>>20)
	}
}
