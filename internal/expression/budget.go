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

package expression

import (
	"fmt"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
)

// Budget bounds what a series of evaluations, such as those of one
// reconcile, may spend together: a total cost and a deadline. It is checked
// before each evaluation, and its deadline also stops a running one; since
// one evaluation never costs more than the engine's cost limit, the total
// cost may overrun the budget by at most that much. Create one with
// Engine.NewBudget; a Budget is not safe for concurrent use.
type Budget struct {
	limit     uint64
	spent     uint64
	deadline  time.Time
	allowance time.Duration
}

// NewBudget returns a fresh Budget with the engine's budget cost and time
// (see WithBudget); its clock starts now.
func (e *Engine) NewBudget() *Budget {
	if e == nil {
		return nil
	}
	return &Budget{limit: e.budgetCost, deadline: time.Now().Add(e.budgetTime), allowance: e.budgetTime}
}

// Spent returns the cost spent so far.
func (b *Budget) Spent() uint64 {
	if b == nil {
		return 0
	}
	return b.spent
}

// EvalFilter is Program.EvalFilter within the budget: it fails with
// ReasonBudgetExhausted if the budget is spent or runs out meanwhile.
func (b *Budget) EvalFilter(p *Program, clause Clause) (bool, error) {
	return p.evalFilter(clause, b)
}

// EvalCondition is Program.EvalCondition within the budget: it fails with
// ReasonBudgetExhausted if the budget is spent or runs out meanwhile.
func (b *Budget) EvalCondition(p *Program, cs *ksv1alpha1.CombinedStatus) (bool, error) {
	return p.evalCondition(cs, b)
}

// EvalAnalysis is Program.EvalAnalysis within the budget: it fails with
// ReasonBudgetExhausted if the budget is spent or runs out meanwhile.
func (b *Budget) EvalAnalysis(p *Program, values []float64) (bool, error) {
	return p.evalAnalysis(values, b)
}

// exhausted says why the budget cannot pay for another evaluation, or "".
func (b *Budget) exhausted(now time.Time) string {
	switch {
	case b.spent >= b.limit:
		return fmt.Sprintf("the evaluations of this run spent %d of a budget of %d", b.spent, b.limit)
	case !now.Before(b.deadline):
		return fmt.Sprintf("the evaluations of this run took their whole budget of %s", b.allowance)
	}
	return ""
}
