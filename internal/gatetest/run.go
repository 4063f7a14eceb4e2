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

package gatetest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// OfflineUID is the UID of the BindingPolicy a hand-written Binding
// without an owner reference is taken to be owned by: its CombinedStatuses
// count when named "<anything>.offline", as KubeStellar names them after
// the BindingPolicy's UID.
const OfflineUID = "offline"

// Result is the run of one case.
type Result struct {
	// Case is the case run.
	Case LoadedCase
	// Verdict is what the gates said.
	Verdict rollout.GateVerdict
	// Err is why the case could not be judged (a stage that does not
	// exist); the case then fails.
	Err error
	// Mismatches say how the verdict differs from what the case expects.
	Mismatches []string
}

// Passed reports whether the case was judged and said what it expects.
func (r Result) Passed() bool { return r.Err == nil && len(r.Mismatches) == 0 }

// Run judges every case of s on policy (s.Policy, or the one its
// policyRef names), with engine.
func Run(engine *expression.Engine, s *Suite, policy *v1alpha1.StagedBindingPolicy) []Result {
	results := make([]Result, 0, len(s.Cases))
	for i, c := range s.Cases {
		r := Result{Case: c}
		now := time.Unix(0, 0).UTC()
		if c.Now != nil {
			now = c.Now.Time
		}
		if err := checkStage(policy, i, c); err != nil {
			r.Err = err
			results = append(results, r)
			continue
		}
		v, err := rollout.JudgeGates(engine, policy, c.Stage, c.Binding, c.Statuses, c.Answers, OfflineUID, now)
		if err != nil {
			r.Err = fmt.Errorf("cases[%d]: %w", i, err)
		}
		r.Verdict = v
		r.Mismatches = Compare(c.Expect, v)
		results = append(results, r)
	}
	return results
}

// checkStage checks that the policy has the case's stage, and the stage
// each analysis the case answers.
func checkStage(policy *v1alpha1.StagedBindingPolicy, i int, c LoadedCase) error {
	stage := policy.Spec.StageNamed(c.Stage)
	if stage == nil {
		return fmt.Errorf("cases[%d].stage: StagedBindingPolicy %s has no stage %q", i, policy.Name, c.Stage)
	}
	names := make([]string, 0, len(c.Answers))
	for name := range c.Answers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !slices.ContainsFunc(stage.Analysis, func(a v1alpha1.Analysis) bool { return a.Name == name }) {
			return fmt.Errorf("cases[%d].inputs.analyses[%s]: stage %q of %s has no analysis %q", i, name, stage.Name, policy.Name, name)
		}
	}
	return nil
}

// Compare says how a verdict differs from what is expected: the outcome
// and the reason compared exactly, the message as a substring.
func Compare(want Expect, got rollout.GateVerdict) []string {
	var out []string
	if want.Outcome != got.Outcome {
		out = append(out, fmt.Sprintf("outcome: expected %s, got %s", want.Outcome, got.Outcome))
	}
	if want.Reason != "" && want.Reason != got.Reason {
		out = append(out, fmt.Sprintf("reason: expected %s, got %s", want.Reason, got.Reason))
	}
	if want.Message != "" && !strings.Contains(got.Message, want.Message) {
		out = append(out, fmt.Sprintf("message: expected it to contain %q, got %q", want.Message, got.Message))
	}
	return out
}
