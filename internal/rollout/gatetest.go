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
	"fmt"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
)

// GateOutcome is what a stage's gates say of it, as `kubectl stager test`
// compares it.
type GateOutcome string

// The outcomes of a stage's gates.
const (
	// GateDone: the condition holds for every selected object, no
	// failureCondition holds, and every gating analysis is Successful.
	GateDone GateOutcome = "Done"
	// GateNotDone: the stage waits (a condition not met, a status or a
	// Binding not there yet, an analysis still running).
	GateNotDone GateOutcome = "NotDone"
	// GateFailed: a failureCondition holds, or a gating analysis Failed.
	GateFailed GateOutcome = "Failed"
	// GateInconclusive: a gating analysis is Inconclusive past its limit.
	GateInconclusive GateOutcome = "Inconclusive"
	// GateBlocked: an expression does not compile, costs too much, or
	// fails to evaluate; the controller changes nothing placed.
	GateBlocked GateOutcome = "Blocked"
)

// GateVerdict is the judgement of one stage's gates on given inputs.
type GateVerdict struct {
	// Outcome sums the verdict up.
	Outcome GateOutcome
	// Reason and Message are what the controller writes: the condition
	// reason, and the stage record's message (for a failed stage, the
	// failure's message).
	Reason, Message string
	// Explanation is what the filter and condition say of each object.
	Explanation StageExplanation
	// Analyses are the analysis records the answers make, in spec order.
	Analyses []v1alpha1.AnalysisStatus
}

// GateAnswer is one recorded answer to an analysis's query: its values
// (for a web analysis, its JSON Answer), or Error when there was none.
// Time is when it was taken.
type GateAnswer struct {
	Time   time.Time
	Values []float64
	Answer []byte
	Error  string
}

// JudgeGates judges the gates of the named stage of policy (its filter,
// condition, failureCondition and analyses; and, as rule 5 does, whether
// every stage's expressions compile) on the given Binding (nil: none
// yet), CombinedStatuses and analysis answers (by analysis name, oldest
// first), as Plan's rules 5 and 15 do, with the controller's engine, limits
// and messages, at now. It reads no clock and nothing else: the timers
// around the gates (soak, progressDeadline, windows, approvals) are not
// judged. A stage placed in batches is refused.
//
// The stage's BindingPolicy is the one the Binding's owner reference of
// kind BindingPolicy names (KubeStellar sets it); a Binding without one is
// taken as owned by a BindingPolicy of its own name with UID bpUID.
// The analyses are judged as measurements taken after the stage was placed.
func JudgeGates(engine *expression.Engine, policy *v1alpha1.StagedBindingPolicy, stageName string,
	binding *ksv1alpha1.Binding, statuses []ksv1alpha1.CombinedStatus, answers map[string][]GateAnswer,
	bpUID string, now time.Time) (GateVerdict, error) {
	active := stageIndex(policy, stageName)
	if active < 0 {
		return GateVerdict{}, fmt.Errorf("StagedBindingPolicy %s has no stage %q", policy.Name, stageName)
	}
	stage := policy.Spec.Stages[active]
	if stage.Batched() {
		// Rule 15 judges a batched stage per cluster, on the Bindings and
		// statuses of one BindingPolicy per cluster.
		return GateVerdict{}, fmt.Errorf("stage %q of %s is placed in batches: gate tests do not judge a batched stage", stage.Name, policy.Name)
	}
	// Rule 5 compiles every stage: one that does not compile blocks them all.
	compiled, reason, err := compileStages(engine, policy.Spec.Stages)
	if err != nil {
		return GateVerdict{Outcome: GateBlocked, Reason: reason, Message: compileFailures(errorList(err), MaxConditionMessage)}, nil
	}
	programs := compiled[active]
	binding = binding.DeepCopy()
	bp := gateBindingPolicy(policy, stage, binding, bpUID)
	budget := engine.NewBudget()
	result := assessStage(fixedClock(now), programs, bp, binding, statuses, budget)
	explanation, err := ExplainStage(engine, stage, bp, binding, statuses)
	if err != nil {
		return GateVerdict{}, err
	}

	snap := gateSnapshot(policy, active, answers, now)
	an := assessAnalyses(snap, active, programs.analyses, budget)
	v := GateVerdict{Explanation: explanation, Analyses: an.records}
	fail := func(outcome GateOutcome, reason, message string) (GateVerdict, error) {
		f := failStage(snap, active, an, reason, message).Status.Failure
		v.Outcome, v.Reason, v.Message = outcome, f.Reason, f.Message
		return v, nil
	}
	// planAfterAssessment's order: a failure first, even beside an
	// evaluation error (an analysis can fail while a condition errs).
	switch {
	case result.failed:
		return fail(GateFailed, v1alpha1.ReasonFailureConditionMet, result.message)
	case an.failed != nil:
		return fail(GateFailed, v1alpha1.ReasonAnalysisFailed, describeAnalysis(an.failed))
	case an.inconclusive != nil:
		return fail(GateInconclusive, v1alpha1.ReasonAnalysisInconclusive, describeAnalysis(an.inconclusive))
	case result.evaluationError:
		v.Outcome, v.Reason, v.Message = GateBlocked, result.reason, cutMessage(result.message, MaxConditionMessage)
		return v, nil
	}
	gated := an.gate(result)
	v.Outcome, v.Reason, v.Message = GateNotDone, gated.reason, cutMessage(gated.message, MaxConditionMessage)
	if gated.satisfied {
		v.Outcome = GateDone
	}
	return v, nil
}

// gateBindingPolicy is the stage's BindingPolicy as KubeStellar has
// resolved it into binding.
func gateBindingPolicy(policy *v1alpha1.StagedBindingPolicy, stage v1alpha1.Stage, binding *ksv1alpha1.Binding,
	bpUID string) *ksv1alpha1.BindingPolicy {
	bp := DesiredBindingPolicy(policy, stage)
	bp.Generation, bp.Status.ObservedGeneration = 1, 1
	if binding == nil {
		bp.UID = "pending"
		return bp
	}
	bp.Name = binding.Name
	for _, ref := range binding.OwnerReferences {
		if ref.Kind == "BindingPolicy" {
			bp.Name, bp.UID = ref.Name, ref.UID
			return bp
		}
	}
	bp.UID = types.UID(bpUID)
	binding.OwnerReferences = append(binding.OwnerReferences, metav1.OwnerReference{
		APIVersion: ksv1alpha1.GroupVersion.String(), Kind: "BindingPolicy", Name: bp.Name, UID: bp.UID})
	return bp
}

// gateSnapshot is a snapshot in which the stage is active, placed a second
// before the first answer, with the answers as its measurements.
func gateSnapshot(policy *v1alpha1.StagedBindingPolicy, active int, answers map[string][]GateAnswer, now time.Time) *Snapshot {
	p := policy.DeepCopy()
	stage := p.Spec.Stages[active]
	placed := now.Truncate(time.Second)
	var measurements []Measurement
	for _, a := range stage.Analysis {
		list := answers[a.Name]
		for i, ans := range list {
			// Answers without a time were taken a second apart, the
			// last at now: the controller records one per time.
			at := ans.Time.Truncate(time.Second)
			if ans.Time.IsZero() {
				at = now.Truncate(time.Second).Add(-time.Duration(len(list)-1-i) * time.Second)
			}
			if at.Before(placed) {
				placed = at
			}
			measurements = append(measurements, Measurement{Stage: stage.Name, Analysis: a.Name,
				Time: metav1.NewTime(at), Values: ans.Values, Answer: ans.Answer, Error: ans.Error})
		}
	}
	placedTime := metav1.NewTime(placed.Add(-time.Second))
	p.Status.ActiveStage = stage.Name
	p.Status.Failure = nil
	p.Status.Stages = []v1alpha1.StageStatus{{Name: stage.Name, Phase: v1alpha1.StageActive,
		StartTime: &placedTime, PlacedTime: &placedTime}}
	return &Snapshot{Policy: p, Measurements: measurements, Now: metav1.NewTime(now)}
}

// fixedClock is a clock that stands at one time, for the evaluations'
// durations, which a gate test does not report.
type fixedClock time.Time

func (c fixedClock) Now() time.Time                  { return time.Time(c) }
func (c fixedClock) Since(t time.Time) time.Duration { return time.Time(c).Sub(t) }
