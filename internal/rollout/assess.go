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
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
)

// KubeStellar's labels on a CombinedStatus, naming the workload object and the
// BindingPolicy it reports on (KubeStellar's API module documents them but
// exports no constants).
const (
	// StatusLabelAPIGroup holds the workload object's API group (no version).
	StatusLabelAPIGroup = "status.kubestellar.io/api-group"
	// StatusLabelResource holds the workload object's resource (lowercase plural).
	StatusLabelResource = "status.kubestellar.io/resource"
	// StatusLabelNamespace holds the workload object's namespace ("" when cluster-scoped).
	StatusLabelNamespace = "status.kubestellar.io/namespace"
	// StatusLabelName holds the workload object's name.
	StatusLabelName = "status.kubestellar.io/name"
	// StatusLabelBindingPolicy holds the name of the BindingPolicy.
	StatusLabelBindingPolicy = "status.kubestellar.io/binding-policy"
)

// maxNamedObjects bounds how many objects a stage message names.
const maxNamedObjects = 3

// assessment is what Plan learns about the active stage from its Binding and
// the CombinedStatuses of its workload objects.
type assessment struct {
	// bindingObserved is true when KubeStellar has resolved the current
	// generation of the stage's BindingPolicy into a Binding.
	bindingObserved bool
	// placed is true when that Binding places the workload on at least one
	// cluster, so that earlier stages can be let go.
	placed bool
	// satisfied is true when the stage is done.
	satisfied bool
	// evaluationError is true when a filter or condition failed to evaluate.
	evaluationError bool
	// stalled is true when the stage is past its progressDeadline.
	stalled bool
	// failed is true when the stage's failureCondition holds for a
	// filtered object; reason is then ReasonFailureConditionMet.
	failed bool
	// reason is a condition reason from the API package.
	reason string
	// message says in words what the stage waits for or what it found.
	message string
	// evaluations are the condition evaluations made, for metrics.
	evaluations []Evaluation
}

// Evaluation is one evaluation of a stage condition, reported for metrics.
type Evaluation struct {
	// Result is "true", "false" or "error".
	Result string
	// Duration is how long the evaluation took.
	Duration time.Duration
}

// compiledStage holds the programs of one stage; nil means "no expression".
type compiledStage struct {
	filter           *expression.Program
	condition        *expression.Program
	failureCondition *expression.Program
	// analyses hold each analysis's success and failure conditions, in
	// the order of the spec.
	analyses []compiledAnalysis
}

// compiledAnalysis holds the programs of one analysis; nil means "no
// expression".
type compiledAnalysis struct {
	success, failure *expression.Program
	// web says the analysis is a web one: its programs judge a JSON answer.
	web bool
}

// compileStages compiles the expressions of every stage. It returns one
// compiledStage per stage; or, when an expression does not compile, an
// error naming every stage and expression that does not (an errors.Join of
// one error per expression), and the condition reason to report:
// ReasonExpressionTooCostly when every failure is an estimated cost above the
// limit, else ReasonInvalidExpression.
//
// Plan's rule 5: expressions that do not compile, or whose estimated cost is
// too high, block the rollout, changing nothing placed.
func compileStages(engine *expression.Engine, stages []v1alpha1.Stage) ([]compiledStage, string, error) {
	compiled := make([]compiledStage, len(stages))
	var errs []error
	tooCostly := true
	compile := func(stage v1alpha1.Stage, kind expression.Kind, source string) *expression.Program {
		p, err := engine.Compile(kind, source)
		if err != nil {
			errs = append(errs, fmt.Errorf("stage %q: %w", stage.Name, err))
			tooCostly = tooCostly && expression.IsTooCostly(err)
		}
		return p
	}
	for i, stage := range stages {
		if stage.Filter != "" {
			compiled[i].filter = compile(stage, expression.KindFilter, stage.Filter)
		}
		if stage.Condition != "" {
			compiled[i].condition = compile(stage, expression.KindCondition, stage.Condition)
		}
		if stage.FailureCondition != "" {
			compiled[i].failureCondition = compile(stage, expression.KindCondition, stage.FailureCondition)
		}
		compiled[i].analyses = make([]compiledAnalysis, len(stage.Analysis))
		for j, a := range stage.Analysis {
			kind := expression.KindAnalysis
			if a.Web != nil {
				kind, compiled[i].analyses[j].web = expression.KindWebAnalysis, true
			}
			if a.SuccessCondition != "" {
				compiled[i].analyses[j].success = compile(stage, kind, a.SuccessCondition)
			}
			if a.FailureCondition != "" {
				compiled[i].analyses[j].failure = compile(stage, kind, a.FailureCondition)
			}
		}
	}
	if len(errs) > 0 {
		reason := v1alpha1.ReasonInvalidExpression
		if tooCostly {
			reason = v1alpha1.ReasonExpressionTooCostly
		}
		return nil, reason, errors.Join(errs...)
	}
	return compiled, "", nil
}

// evaluationReason is the condition reason of a failed evaluation.
func evaluationReason(err error) string {
	if expression.IsTooCostly(err) {
		return v1alpha1.ReasonExpressionTooCostly
	}
	return v1alpha1.ReasonEvaluationError
}

// objectKey identifies a workload object the way a CombinedStatus's labels do.
type objectKey struct {
	group, resource, namespace, name string
}

func (k objectKey) String() string {
	resource := k.resource
	if k.group != "" {
		resource += "." + k.group
	}
	if k.namespace == "" {
		return resource + " " + k.name
	}
	return resource + " " + k.namespace + "/" + k.name
}

func clauseKey(c expression.Clause) objectKey {
	return objectKey{group: c.Group, resource: c.Resource, namespace: c.Namespace, name: c.Name}
}

// bindingClauses returns the workload object clauses of a Binding, namespaced
// and cluster-scoped alike.
func bindingClauses(b *ksv1alpha1.Binding) []expression.Clause {
	clauses := make([]expression.Clause, 0, len(b.Spec.Workload.NamespaceScope)+len(b.Spec.Workload.ClusterScope))
	for _, c := range b.Spec.Workload.NamespaceScope {
		clauses = append(clauses, expression.ClauseFromNamespaceScope(c))
	}
	for _, c := range b.Spec.Workload.ClusterScope {
		clauses = append(clauses, expression.ClauseFromClusterScope(c))
	}
	return clauses
}

// combinedStatusIndex maps each workload object to the CombinedStatus that
// KubeStellar made for it under the given BindingPolicy. A CombinedStatus
// counts only when its name ends with the BindingPolicy's UID, so that one
// left over from an older BindingPolicy of the same name is ignored.
func combinedStatusIndex(statuses []ksv1alpha1.CombinedStatus, bp *ksv1alpha1.BindingPolicy) map[objectKey]*ksv1alpha1.CombinedStatus {
	index := make(map[objectKey]*ksv1alpha1.CombinedStatus, len(statuses))
	suffix := "." + string(bp.UID)
	for i := range statuses {
		cs := &statuses[i]
		labels := cs.Labels
		if labels[StatusLabelBindingPolicy] != bp.Name || !strings.HasSuffix(cs.Name, suffix) {
			continue
		}
		key := objectKey{
			group:     labels[StatusLabelAPIGroup],
			resource:  labels[StatusLabelResource],
			namespace: labels[StatusLabelNamespace],
			name:      labels[StatusLabelName],
		}
		index[key] = cs
	}
	return index
}

// waitingForBinding is the assessment of a stage whose BindingPolicy bp
// KubeStellar has not resolved yet.
func waitingForBinding(bp *ksv1alpha1.BindingPolicy) assessment {
	return assessment{reason: v1alpha1.ReasonWaitingForBinding,
		message: fmt.Sprintf("waiting for KubeStellar to resolve BindingPolicy %s into a Binding", bp.Name)}
}

// assessStage decides whether the active stage is done. bp is the stage's
// BindingPolicy as it exists in the space, binding its Binding (or nil). All
// evaluations are made within budget, so that one run of a policy with many
// objects or costly expressions cannot hold a worker for long; clk times
// each of them. Its steps: the placement resolved (placementPending), the
// objects the filter selects (selectObjects), each one's CombinedStatus
// judged (judgeObjects), and what that says of the stage (objectVerdicts.assessment).
func assessStage(clk clock.PassiveClock, programs compiledStage, bp *ksv1alpha1.BindingPolicy,
	binding *ksv1alpha1.Binding, statuses []ksv1alpha1.CombinedStatus, budget *expression.Budget) assessment {
	if pending := placementPending(bp, binding); pending != nil {
		return *pending
	}
	clusters := len(binding.Spec.Destinations)
	if programs.condition == nil && programs.failureCondition == nil {
		return assessment{bindingObserved: true, placed: true, satisfied: true, reason: v1alpha1.ReasonStageAdvanced,
			message: fmt.Sprintf("Binding %s places the workload on %d cluster(s); the stage has no condition", binding.Name, clusters)}
	}
	selected, stop := selectObjects(programs.filter, binding, budget)
	if stop != nil {
		return *stop
	}
	v, stop := judgeObjects(clk, programs, selected, combinedStatusIndex(statuses, bp), budget)
	if stop != nil {
		return *stop
	}
	return v.assessment(programs.condition == nil, clusters)
}

// placementPending says what a stage whose BindingPolicy is bp, and its
// Binding binding, waits for before its objects can be judged, or nil:
// the BindingPolicy created, KubeStellar's resolution of its generation,
// a cluster to place on.
func placementPending(bp *ksv1alpha1.BindingPolicy, binding *ksv1alpha1.Binding) *assessment {
	if bp == nil || bp.UID == "" {
		return &assessment{reason: v1alpha1.ReasonBindingPolicyPending,
			message: "waiting for the stage's BindingPolicy to be created"}
	}
	// KubeStellar writes a new BindingPolicy's Binding before it records the
	// resolution in the BindingPolicy's status: until both are there, the
	// stage waits for the same thing and says the same, which spares a
	// status write per stage.
	if binding == nil || !OwnedBy(binding, bp) || bp.Status.ObservedGeneration == 0 {
		waiting := waitingForBinding(bp)
		return &waiting
	}
	if bp.Status.ObservedGeneration != bp.Generation {
		return &assessment{reason: v1alpha1.ReasonWaitingForBinding,
			message: fmt.Sprintf("waiting for KubeStellar to resolve generation %d of BindingPolicy %s (it has resolved generation %d)",
				bp.Generation, bp.Name, bp.Status.ObservedGeneration)}
	}
	if len(binding.Spec.Destinations) == 0 {
		// A stage that places nothing proves nothing: most often its
		// clusterSelectors match no cluster (a typo, or clusters not yet
		// registered), and moving on would skip the stage unnoticed.
		return &assessment{bindingObserved: true, reason: v1alpha1.ReasonNoClustersSelected,
			message: fmt.Sprintf("Binding %s places the workload on no cluster: the stage's clusterSelectors select none", binding.Name)}
	}
	return nil
}

// selectObjects returns the workload objects of binding that filter (nil:
// none) selects, or the assessment that stops the stage: a filter that
// fails to evaluate, or selects nothing.
func selectObjects(filter *expression.Program, binding *ksv1alpha1.Binding, budget *expression.Budget) ([]expression.Clause, *assessment) {
	var selected []expression.Clause
	for _, clause := range bindingClauses(binding) {
		if filter == nil {
			selected = append(selected, clause)
			continue
		}
		pass, err := budget.EvalFilter(filter, clause)
		if err != nil {
			return nil, &assessment{bindingObserved: true, placed: true, evaluationError: true, reason: evaluationReason(err),
				message: fmt.Sprintf("%v (on %s)", err, clauseKey(clause))}
		}
		if pass {
			selected = append(selected, clause)
		}
	}
	if len(selected) == 0 {
		return nil, &assessment{bindingObserved: true, placed: true, reason: v1alpha1.ReasonNoObjectsSelected,
			message: fmt.Sprintf("no workload object of Binding %s passes the stage's filter, so its condition cannot hold yet", binding.Name)}
	}
	return selected, nil
}

// objectVerdicts is what the stage's expressions say of its selected objects.
type objectVerdicts struct {
	// total is how many objects were selected; missing, unmet and failing
	// name those without a CombinedStatus, whose condition does not hold,
	// and whose failureCondition holds.
	total                   int
	missing, unmet, failing []string
	evaluations             []Evaluation
}

// judgeObjects evaluates, on the CombinedStatus of each selected object
// (index), the stage's failureCondition, then its condition, timing each
// evaluation with clk. It returns the verdicts, or the assessment of an
// evaluation that failed, which stops the stage.
func judgeObjects(clk clock.PassiveClock, programs compiledStage, selected []expression.Clause,
	index map[objectKey]*ksv1alpha1.CombinedStatus, budget *expression.Budget) (objectVerdicts, *assessment) {
	v := objectVerdicts{total: len(selected)}
	evaluate := func(p *expression.Program, cs *ksv1alpha1.CombinedStatus, key objectKey) (bool, *assessment) {
		start := clk.Now()
		holds, err := budget.EvalCondition(p, cs)
		evaluation := Evaluation{Result: strconv.FormatBool(holds), Duration: clk.Since(start)}
		if err != nil {
			evaluation.Result = "error"
			return false, &assessment{bindingObserved: true, placed: true, evaluationError: true, reason: evaluationReason(err),
				message:     fmt.Sprintf("%v (on the CombinedStatus of %s)", err, key),
				evaluations: append(v.evaluations, evaluation)}
		}
		v.evaluations = append(v.evaluations, evaluation)
		return holds, nil
	}
	for _, clause := range selected {
		key := clauseKey(clause)
		cs, ok := index[key]
		if !ok {
			v.missing = append(v.missing, key.String())
			continue
		}
		if programs.failureCondition != nil {
			fails, stop := evaluate(programs.failureCondition, cs, key)
			if stop != nil {
				return v, stop
			}
			if fails {
				v.failing = append(v.failing, key.String())
				continue
			}
		}
		if programs.condition == nil {
			continue
		}
		holds, stop := evaluate(programs.condition, cs, key)
		if stop != nil {
			return v, stop
		}
		if !holds {
			v.unmet = append(v.unmet, key.String())
		}
	}
	return v, nil
}

// assessment says what the verdicts mean for a stage placed on clusters
// clusters, which has no condition (only a failureCondition) when
// noCondition: failed, done, or what it waits for.
func (v objectVerdicts) assessment(noCondition bool, clusters int) assessment {
	passing := v.total - len(v.missing) - len(v.unmet) - len(v.failing)
	a := assessment{bindingObserved: true, placed: true, evaluations: v.evaluations}
	switch {
	case len(v.failing) > 0:
		a.failed, a.reason = true, v1alpha1.ReasonFailureConditionMet
		a.message = fmt.Sprintf("failureCondition holds for %s", nameSome(v.failing))
	case noCondition:
		a.satisfied, a.reason = true, v1alpha1.ReasonStageAdvanced
		a.message = fmt.Sprintf("failureCondition holds for none of the %d object(s) reported on %d cluster(s); the stage has no condition",
			v.total-len(v.missing), clusters)
	case len(v.missing) > 0:
		a.reason = v1alpha1.ReasonWaitingForStatus
		a.message = fmt.Sprintf("condition holds for %d of %d object(s); waiting for KubeStellar's CombinedStatus of %s (does the downsync clause name a status collector?)",
			passing, v.total, nameSome(v.missing))
	case len(v.unmet) > 0:
		a.reason = v1alpha1.ReasonConditionNotMet
		a.message = fmt.Sprintf("condition holds for %d of %d object(s); not yet for %s", passing, v.total, nameSome(v.unmet))
	default:
		a.satisfied, a.reason = true, v1alpha1.ReasonStageAdvanced
		a.message = fmt.Sprintf("condition holds for all %d object(s) on %d cluster(s)", v.total, clusters)
	}
	return a
}

// nameSome lists up to maxNamedObjects names, sorted, and says how many more there are.
func nameSome(names []string) string {
	sort.Strings(names)
	if len(names) <= maxNamedObjects {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamedObjects], ", "), len(names)-maxNamedObjects)
}
