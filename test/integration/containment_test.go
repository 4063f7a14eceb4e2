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
	"github.com/kubestellar/workload-stager/internal/expression/expressiontest"
)

// reproductions are the review's conditions that ran or allocated past
// their charge (issue 54), which neither need nor read their input.
var reproductions = map[string]string{
	"contained-format":   expressiontest.FormatOverSharedLists(),
	"contained-equality": expressiontest.EqualityOverSharedLists(),
}

// peakRSS is this process's peak resident set.
func peakRSS(t *testing.T) uint64 {
	t.Helper()
	rss, err := expressiontest.PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	return rss
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
