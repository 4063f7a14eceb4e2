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

package rollout

import (
	"slices"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
)

// StageExplanation says, for one stage of a policy, what the controller sees:
// the stage's clusters, each workload object of its Binding with what its
// filter and condition say of it, and what the stage waits for. It is what
// `kubectl stager explain` and `kubectl stager eval` print.
type StageExplanation struct {
	// Clusters are the destinations of the stage's Binding, sorted.
	Clusters []string
	// Objects has one entry per workload object of the stage's Binding, in
	// the Binding's order.
	Objects []ObjectExplanation
	// Reason and Message are the controller's assessment of the stage: a
	// condition reason (ConditionNotMet, WaitingForStatus, ...) and what it
	// waits for, as the Progressing condition would say while it is active.
	Reason, Message string
	// Done is true when the stage's condition holds for every selected object.
	Done bool
}

// ObjectExplanation is what a stage's expressions say of one workload object.
type ObjectExplanation struct {
	// Object names the object: "<resource>.<group> <namespace>/<name>".
	Object string
	// Selected is the filter's value (true without a filter).
	Selected bool
	// FilterError is the filter's evaluation error, if any.
	FilterError string
	// CombinedStatus is KubeStellar's CombinedStatus of the object under the
	// stage's BindingPolicy, or nil when there is none yet.
	CombinedStatus *ksv1alpha1.CombinedStatus
	// Holds is the condition's value; nil when it was not evaluated (the
	// object is not selected, has no CombinedStatus, or the stage has no
	// condition).
	Holds *bool
	// ConditionError is the condition's evaluation error, if any.
	ConditionError string
}

// ExplainStage evaluates the stage's filter and condition, with the
// controller's engine and limits, on every workload object of the stage's
// Binding, without stopping at the first that fails, and assesses the stage
// as the controller does. bp is the stage's BindingPolicy (nil when it does
// not exist), binding its Binding (nil when none), statuses the
// CombinedStatuses labelled with its name. It returns an error when an
// expression does not compile.
func ExplainStage(engine *expression.Engine, stage v1alpha1.Stage, bp *ksv1alpha1.BindingPolicy,
	binding *ksv1alpha1.Binding, statuses []ksv1alpha1.CombinedStatus) (StageExplanation, error) {
	compiled, _, err := compileStages(engine, []v1alpha1.Stage{stage})
	if err != nil {
		return StageExplanation{}, err
	}
	programs := compiled[0]
	result := assessStage(clock.RealClock{}, programs, bp, binding, statuses, engine.NewBudget())
	explanation := StageExplanation{Reason: result.reason, Message: result.message, Done: result.satisfied}
	if binding == nil || bp == nil || !OwnedBy(binding, bp) {
		return explanation, nil
	}
	for _, d := range binding.Spec.Destinations {
		explanation.Clusters = append(explanation.Clusters, d.ClusterId)
	}
	slices.Sort(explanation.Clusters)

	index := combinedStatusIndex(statuses, bp)
	budget := engine.NewBudget()
	for _, clause := range bindingClauses(binding) {
		key := clauseKey(clause)
		o := ObjectExplanation{Object: key.String(), Selected: true, CombinedStatus: index[key]}
		if programs.filter != nil {
			selected, err := budget.EvalFilter(programs.filter, clause)
			o.Selected = selected
			if err != nil {
				o.FilterError = err.Error()
			}
		}
		if o.Selected && o.CombinedStatus != nil && programs.condition != nil {
			holds, err := budget.EvalCondition(programs.condition, o.CombinedStatus)
			if err != nil {
				o.ConditionError = err.Error()
			} else {
				o.Holds = &holds
			}
		}
		explanation.Objects = append(explanation.Objects, o)
	}
	return explanation, nil
}
