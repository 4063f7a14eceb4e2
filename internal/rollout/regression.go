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
	"slices"
	"strings"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
)

// The verdicts of a regression check, as RegressionCheck.Result says them.
const (
	// RegressionHealthy: the done stage is healthy.
	RegressionHealthy = "healthy"
	// RegressionRegressed: the done stage turned unhealthy.
	RegressionRegressed = "regressed"
	// RegressionInconclusive: the check gave no verdict (an evaluation
	// failed or ran out of the budget, or an object is not reported on).
	RegressionInconclusive = "inconclusive"
)

// RegressionCheck is one check of a done stage's regressionWatch that
// Plan made, for metrics and logs.
type RegressionCheck struct {
	// Stage is the stage checked.
	Stage string
	// Result is RegressionHealthy, RegressionRegressed or RegressionInconclusive.
	Result string
}

// watched is a done stage with a regressionWatch whose placement is kept.
type watched struct {
	index int
	// bp is the name of the stage's BindingPolicy at the update revision.
	bp string
	// next is when its next check is due.
	next time.Time
}

// watchedStages returns the done stages (records Succeeded) of policy
// whose regressionWatch has something to judge: the stage's BindingPolicy
// at the update revision is among bps, the policy's, owned and staying
// (every done stage under Accumulate, the final one of a completed
// rollout; under Replace an earlier stage gave its placement up). Nothing
// is watched while the policy is deleted or aborted.
func watchedStages(policy *v1alpha1.StagedBindingPolicy, bps []ksv1alpha1.BindingPolicy) []watched {
	if policy.DeletionTimestamp != nil || Aborting(policy) || policy.Status.ActiveStage == "" {
		return nil
	}
	var out []watched
	for i, stage := range policy.Spec.Stages {
		if !judgesSomething(stage) {
			continue
		}
		w := stage.RegressionWatch
		record := policy.Status.StageNamed(stage.Name)
		if record == nil || record.Phase != v1alpha1.StageSucceeded {
			continue
		}
		name := v1alpha1.StagePlacement(policy.Name, stage.Name).At(policy.Status.UpdateRevision).String()
		bp := findBindingPolicy(bps, name)
		if bp == nil || bp.DeletionTimestamp != nil || !OwnedBy(bp, policy) {
			continue
		}
		last := record.LastRegressionCheckTime
		if last == nil || record.CompletionTime != nil && record.CompletionTime.After(last.Time) {
			last = record.CompletionTime
		}
		var next time.Time // no record of when it was done: due now
		if last != nil {
			next = last.Add(w.CheckInterval())
		}
		out = append(out, watched{index: i, bp: name, next: next})
	}
	return out
}

// judgesSomething reports whether the stage's regressionWatch has
// something to judge (the CRD refuses one that has not): an expression
// its judge names, or the stage's analyses when it runs them.
func judgesSomething(stage v1alpha1.Stage) bool {
	w := stage.RegressionWatch
	switch {
	case w == nil:
		return false
	case w.RunsAnalyses() && len(stage.Analysis) > 0:
		return true
	case w.OnFailureConditionOnly():
		return stage.FailureCondition != ""
	}
	return stage.Condition != "" || stage.FailureCondition != ""
}

// WatchedAnalyses are the analyses of a done stage that a regression
// check Plan made runs (regressionWatch.analyses), which the reconciler
// measures once each (Snapshot.WatchedMeasurements) before it plans again.
type WatchedAnalyses struct {
	// Stage is the done stage.
	Stage string
	// BindingPolicy names the stage's BindingPolicy, whose Binding names
	// the clusters the queries are rendered with.
	BindingPolicy string
	// Analyses are the stage's analyses but its dryRun ones, which never
	// regress and so are not queried.
	Analyses []v1alpha1.Analysis
}

// RegressionAnalyses returns the analyses to measure for the regression
// checks that a plan made without their measurements (checks, its
// Action.RegressionChecks): those of each checked stage whose watch runs
// analyses. The reconciler measures them, then plans again on the same
// snapshot with Snapshot.WatchedMeasurements, which changes only the
// checks' verdicts; so a done stage's analyses are queried only in a run
// whose write records its check (the same due as RegressionReads): once
// per analysis per interval, but for a write that fails.
func RegressionAnalyses(policy *v1alpha1.StagedBindingPolicy, checks []RegressionCheck) []WatchedAnalyses {
	var out []WatchedAnalyses
	for _, c := range checks {
		stage := policy.Spec.StageNamed(c.Stage)
		if stage == nil || !stage.RegressionWatch.RunsAnalyses() {
			continue
		}
		due := WatchedAnalyses{Stage: stage.Name,
			BindingPolicy: v1alpha1.StagePlacement(policy.Name, stage.Name).At(policy.Status.UpdateRevision).String()}
		for _, a := range stage.Analysis {
			if !a.DryRun {
				due.Analyses = append(due.Analyses, a)
			}
		}
		if len(due.Analyses) > 0 {
			out = append(out, due)
		}
	}
	return out
}

// RegressionReads names the BindingPolicies, among bps (the policy's),
// whose Binding and CombinedStatuses the reconciler reads for the
// snapshot at now (Snapshot.WatchedBindings, Snapshot.WatchedStatuses):
// those of the done stages whose regression check is due, so that a
// watched stage costs one read and one evaluation per interval.
func RegressionReads(policy *v1alpha1.StagedBindingPolicy, bps []ksv1alpha1.BindingPolicy, now metav1.Time) []string {
	var names []string
	for _, w := range watchedStages(policy, bps) {
		if !now.Time.Before(w.next) {
			names = append(names, w.bp)
		}
	}
	return names
}

// regressionVerdict is what one check found.
type regressionVerdict struct {
	result, message string
	evaluations     []Evaluation
}

// checkRegression judges the done stage index on the Binding and the
// CombinedStatuses of its BindingPolicy bp, as its regressionWatch says,
// within budget, and, when the watch runs analyses, on their measurements
// taken for this check (judgeWatchedAnalyses), due being when it was due.
func checkRegression(snap *Snapshot, engine *expression.Engine, cfg planConfig, index int, bp *ksv1alpha1.BindingPolicy,
	due time.Time, budget *expression.Budget) regressionVerdict {
	stage := snap.Policy.Spec.Stages[index]
	bare := stage
	if !stage.RegressionWatch.RunsAnalyses() {
		bare.Analysis = nil // a check judges the stage's expressions only
	}
	compiled, _, err := compileStages(engine, []v1alpha1.Stage{bare})
	if err != nil {
		return regressionVerdict{result: RegressionInconclusive, message: err.Error()}
	}
	programs := compiled[0]
	if stage.RegressionWatch.OnFailureConditionOnly() {
		programs.condition = nil
	}
	binding := bindingNamed(snap, bp.Name)
	if binding == nil {
		for i := range snap.WatchedBindings {
			if snap.WatchedBindings[i].Name == bp.Name {
				binding = &snap.WatchedBindings[i]
			}
		}
	}
	var statuses []ksv1alpha1.CombinedStatus
	for _, cs := range snap.WatchedStatuses {
		if cs.Labels[StatusLabelBindingPolicy] == bp.Name {
			statuses = append(statuses, cs)
		}
	}
	a := assessStage(cfg.clock, programs, bp, binding, statuses, budget)
	v := regressionVerdict{message: a.message, evaluations: a.evaluations}
	switch {
	case a.failed || a.reason == v1alpha1.ReasonConditionNotMet:
		v.result = RegressionRegressed
	case a.satisfied:
		v.result = RegressionHealthy
	default: // an evaluation failed or ran out of budget; nothing reported, or placed
		v.result = RegressionInconclusive
	}
	if !stage.RegressionWatch.RunsAnalyses() {
		return v
	}
	failed, inconclusive := judgeWatchedAnalyses(snap, stage, programs.analyses, due, budget)
	switch {
	case len(failed) > 0 && v.result == RegressionRegressed:
		v.message = v.message + "; " + strings.Join(failed, "; ")
	case len(failed) > 0:
		v.result, v.message = RegressionRegressed, strings.Join(failed, "; ")
	case len(inconclusive) > 0 && v.result == RegressionHealthy:
		v.result, v.message = RegressionInconclusive, strings.Join(inconclusive, "; ")
	case len(inconclusive) > 0 && v.result == RegressionInconclusive:
		v.message = v.message + "; " + strings.Join(inconclusive, "; ")
	}
	return v
}

// judgeWatchedAnalyses judges, within budget, the measurement of each
// analysis of the done stage (dryRun ones aside: they never regress) that
// the snapshot took for its check due at due (Snapshot.WatchedMeasurements,
// the latest one not before due). It returns what says the stage
// regressed (a Failed measurement) and what leaves the check without a
// verdict (an Inconclusive measurement, none taken, or a judgement the
// budget could not pay for). Nothing is recorded in the stage's analyses.
func judgeWatchedAnalyses(snap *Snapshot, stage v1alpha1.Stage, programs []compiledAnalysis, due time.Time,
	budget *expression.Budget) (failed, inconclusive []string) {
	for i, a := range stage.Analysis {
		if a.DryRun {
			continue
		}
		var m *Measurement
		for j := range snap.WatchedMeasurements {
			c := &snap.WatchedMeasurements[j]
			if c.Stage == stage.Name && c.Analysis == a.Name && !c.Time.Time.Before(due) && (m == nil || c.Time.After(m.Time.Time)) {
				m = c
			}
		}
		if m == nil {
			inconclusive = append(inconclusive, fmt.Sprintf("analysis %q was not measured (its query was over the space's bound)", a.Name))
			continue
		}
		judged, ok := judge(programs[i], *m, budget)
		switch {
		case !ok:
			inconclusive = append(inconclusive, fmt.Sprintf("analysis %q: %s", a.Name, judged.Message))
		case judged.Phase == v1alpha1.MeasurementFailed:
			failed = append(failed, strings.TrimSuffix(fmt.Sprintf("analysis %q failed with %s: %s", a.Name, judged.Value, judged.Message), ": "))
		case judged.Phase == v1alpha1.MeasurementInconclusive:
			inconclusive = append(inconclusive, strings.TrimSuffix(fmt.Sprintf("analysis %q is inconclusive: %s", a.Name, judged.Message), ": "))
		}
	}
	return failed, inconclusive
}

// regressionAfter is Plan's rule 15b, applied to the run's Action once
// the other rules decided, like status.wave (waveAfter): each done stage
// whose regressionWatch is due (watchedStages: at least an interval after
// its last check, or its completion, by Snapshot.Now) is judged over the
// CombinedStatuses of its placement (checkRegression), all of them
// within one budget of the space (engine.NewBudget); a check that fails
// to evaluate, or runs out of the budget, is inconclusive and changes
// no verdict. A watch with analyses judges too one measurement of each
// analysis taken for the check (judgeWatchedAnalyses): a Failed one is a
// regression, an Inconclusive one, or none, leaves no verdict. The check
// is recorded in the stage's
// lastRegressionCheckTime; a stage found unhealthy records regressed
// (a Warning Event StageRegressed once), one found healthy again clears
// it (StageRecovered). The StageRegressed condition is True while a
// record says regressed (regressionCondition). A regression of a stage
// with onRegression Abort, while the rollout is in flight (a later stage
// not done, no failure recorded), records status.failure with reason
// StageRegressed, which rule 4 acts on (Abort), or, without a current
// revision to go back to, rule 6 (Hold, as spec.abort holds such a
// rollout). The records and the condition are written with the run's
// status write, or alone when the run makes none; a run that makes
// another change leaves the checks to the next run. The run is due again
// when the next check is.
func regressionAfter(snap *Snapshot, engine *expression.Engine, cfg planConfig, action *Action) {
	policy := snap.Policy
	if policy.DeletionTimestamp != nil || !hasFinalizer(policy) || action.Type != ActionNone && action.Type != ActionUpdateStatus {
		return
	}
	status := action.Status
	if status == nil {
		status = policy.Status.DeepCopy()
	}
	stages := watchedStages(policy, snap.BindingPolicies)
	var events []Event
	var regressed []int
	var budget *expression.Budget
	var next time.Duration
	for _, w := range stages {
		if snap.Now.Time.Before(w.next) {
			next = Earliest(next, w.next.Sub(snap.Now.Time))
			continue
		}
		stage := policy.Spec.Stages[w.index]
		record := status.StageNamed(stage.Name)
		if record == nil || record.Phase != v1alpha1.StageSucceeded {
			continue // the run's own write leaves the stage
		}
		if budget == nil {
			budget = engine.NewBudget()
		}
		v := checkRegression(snap, engine, cfg, w.index, findBindingPolicy(snap.BindingPolicies, w.bp), w.next, budget)
		action.Evaluations = append(action.Evaluations, v.evaluations...)
		action.RegressionChecks = append(action.RegressionChecks, RegressionCheck{Stage: stage.Name, Result: v.result})
		record.LastRegressionCheckTime = &metav1.Time{Time: snap.Now.Time}
		next = Earliest(next, stage.RegressionWatch.CheckInterval())
		message := cutMessage(fmt.Sprintf("stage %q regressed: %s", stage.Name, v.message), MaxConditionMessage)
		switch v.result {
		case RegressionRegressed:
			regressed = append(regressed, w.index)
			if record.Regressed == nil {
				record.Regressed = &v1alpha1.StageRegression{Time: snap.Now, Message: message}
				events = append(events, Event{Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonStageRegressed, Note: message})
			} else {
				record.Regressed.Message = message
			}
		case RegressionHealthy:
			if record.Regressed != nil {
				record.Regressed = nil
				events = append(events, Event{Type: corev1.EventTypeNormal, Reason: v1alpha1.EventReasonStageRecovered,
					Note: fmt.Sprintf("stage %q is healthy again: %s", stage.Name, v.message)})
			}
		default:
			events = append(events, Event{Type: corev1.EventTypeWarning, Reason: v1alpha1.EventReasonRegressionCheckInconclusive,
				Note: fmt.Sprintf("the regression check of stage %q gave no verdict: %s", stage.Name, v.message)})
		}
	}
	forgetRegressions(status)
	regressionCondition(status, policy, snap.Now)
	if i, ok := regressionAborts(policy, status, regressed); ok {
		abort := abortOnRegression(snap, status, i)
		// The abort's Event says the regression too: one Event, not two.
		events = slices.DeleteFunc(events, func(e Event) bool {
			return e.Reason == v1alpha1.ReasonStageRegressed && e.Note == status.Failure.Message
		})
		events = append(events, abort)
	}
	action.RequeueAfter = Earliest(action.RequeueAfter, next)
	if action.Status == nil {
		if equality.Semantic.DeepEqual(&policy.Status, status) {
			return
		}
		action.Type, action.Status = ActionUpdateStatus, status
		action.Why = "a done stage's regression check is recorded"
	}
	action.Events = append(action.Events, events...)
}

// forgetRegressions clears the regression record of every stage that is
// no longer done, but that of the stage whose regression status.failure
// records: a new rollout judges the stage afresh.
func forgetRegressions(status *v1alpha1.StagedBindingPolicyStatus) {
	for i := range status.Stages {
		r := &status.Stages[i]
		if r.Phase == v1alpha1.StageSucceeded {
			continue
		}
		if f := status.Failure; f != nil && f.Reason == v1alpha1.ReasonStageRegressed && f.Stage == r.Name {
			continue
		}
		r.Regressed, r.LastRegressionCheckTime = nil, nil
	}
}

// regressionCondition sets the StageRegressed condition True, naming the
// regressed stages, while a record says regressed, and removes it
// otherwise.
func regressionCondition(status *v1alpha1.StagedBindingPolicyStatus, policy *v1alpha1.StagedBindingPolicy, now metav1.Time) {
	var messages []string
	for _, r := range status.Stages {
		if r.Regressed != nil {
			messages = append(messages, r.Regressed.Message)
		}
	}
	if len(messages) == 0 {
		meta.RemoveStatusCondition(&status.Conditions, v1alpha1.ConditionStageRegressed)
		return
	}
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: v1alpha1.ConditionStageRegressed, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonStageRegressed, Message: cutMessage(strings.Join(messages, "; "), MaxConditionMessage),
		ObservedGeneration: policy.Generation, LastTransitionTime: now})
}

// regressionAborts returns the first of the stages found regressed by
// this run's checks whose onRegression is Abort, when status is a
// rollout in flight: a stage is active and not done, and no failure or
// spec.abort acts on it already.
func regressionAborts(policy *v1alpha1.StagedBindingPolicy, status *v1alpha1.StagedBindingPolicyStatus, regressed []int) (int, bool) {
	if policy.Spec.Abort || status.Failure != nil || status.ActiveStage == "" ||
		status.Phase == v1alpha1.RolloutCompleted || status.Phase == v1alpha1.RolloutAborted {
		return 0, false
	}
	if active := status.StageNamed(status.ActiveStage); active == nil || active.Phase == v1alpha1.StageSucceeded {
		return 0, false
	}
	for _, i := range regressed {
		if policy.Spec.Stages[i].RegressionWatch.OnRegression == v1alpha1.RegressionAbort {
			return i, true
		}
	}
	return 0, false
}

// abortOnRegression records in status the failure of the regressed stage
// index, with reason StageRegressed: Abort, which rule 4 acts on, or Hold
// when there is no current revision to go back to. It returns its Event.
func abortOnRegression(snap *Snapshot, status *v1alpha1.StagedBindingPolicyStatus, index int) Event {
	policy := snap.Policy
	stage := policy.Spec.Stages[index]
	message := status.StageNamed(stage.Name).Regressed.Message
	action := v1alpha1.FailureAbort
	if status.CurrentRevision == "" {
		action = v1alpha1.FailureHold
	}
	status.Failure = &v1alpha1.RolloutFailure{Stage: stage.Name, Reason: v1alpha1.ReasonStageRegressed, Action: action,
		Message: message, Time: snap.Now, SpecDigest: specDigest(policy), Revision: policy.Status.UpdateRevision,
		RestartedAt: policy.Annotations[v1alpha1.RestartedAtAnnotation]}
	if action == v1alpha1.FailureHold {
		note := holdStatus(status, policy, snap.Now)
		return Event{Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonStageRegressed,
			Note: note + " (onRegression Abort, and there is no current revision to go back to)"}
	}
	return Event{Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonStageRegressed,
		Note: message + "; onRegression Abort: the rollout in flight is aborted"}
}
