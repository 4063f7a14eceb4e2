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
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
)

// Measurement is the answer to one analysis's query, taken by the
// reconciler for an analysis DueAnalyses named; Plan judges and records it.
type Measurement struct {
	// Stage and Analysis name the analysis.
	Stage, Analysis string
	// Time is when the query was sent.
	Time metav1.Time
	// Values are the sample values of the answer of a query.
	Values []float64
	// Answer is the JSON answer of a web analysis's request.
	Answer []byte
	// Error says why there is no answer (the provider could not be
	// reached, answered an error, too slowly or too much): the measurement
	// is inconclusive.
	Error string
}

// DueAnalyses returns the analyses of the active stage that need a
// measurement at now: the stage is active and placed, the rollout is
// neither being deleted, suspended, aborted nor held, and each analysis
// returned is Running and past its initialDelay (its first measurement) or
// its interval since its latest one.
func DueAnalyses(policy *v1alpha1.StagedBindingPolicy, now metav1.Time) []v1alpha1.Analysis {
	if policy.DeletionTimestamp != nil || policy.Spec.Suspend || policy.Spec.Abort || policy.Status.Failure != nil {
		return nil
	}
	active, started, _ := ActiveStage(policy)
	if !started {
		return nil
	}
	stage := policy.Spec.Stages[active]
	record := policy.Status.StageNamed(stage.Name)
	if record == nil || record.Phase != v1alpha1.StageActive || record.PlacedTime == nil {
		return nil
	}
	var due []v1alpha1.Analysis
	for _, a := range stage.Analysis {
		if next, ok := nextMeasurement(a, record.AnalysisNamed(a.Name), record.PlacedTime.Time); ok && !now.Time.Before(next) {
			due = append(due, a)
		}
	}
	return due
}

// nextMeasurement returns when an analysis a, whose record is r (nil
// before its first measurement), of a stage placed at placed takes its next
// measurement, or false when it takes no more.
func nextMeasurement(a v1alpha1.Analysis, r *v1alpha1.AnalysisStatus, placed time.Time) (time.Time, bool) {
	if r != nil && r.Phase != v1alpha1.AnalysisRunning {
		return time.Time{}, false
	}
	if r == nil || len(r.Measurements) == 0 {
		var delay time.Duration
		if a.InitialDelay != nil {
			delay = a.InitialDelay.Duration
		}
		return placed.Add(delay), true
	}
	return r.Measurements[len(r.Measurements)-1].Time.Add(a.MeasurementInterval()), true
}

// measureIn is how long until the next measurement of a, at least a
// second; 0 when it takes no more.
func measureIn(a v1alpha1.Analysis, r *v1alpha1.AnalysisStatus, placed time.Time, now metav1.Time) time.Duration {
	next, ok := nextMeasurement(a, r, placed)
	if !ok {
		return 0
	}
	return max(next.Sub(now.Time), time.Second)
}

// analyses is what Plan learns from the active stage's analyses.
type analyses struct {
	// records are the stage's analysis records with the snapshot's new
	// measurements, one per analysis of the spec.
	records []v1alpha1.AnalysisStatus
	// changed is true when records differ from the stage's record.
	changed bool
	// failed and inconclusive name the first analysis that gates the
	// stage and is Failed, or Inconclusive.
	failed, inconclusive *v1alpha1.AnalysisStatus
	// running names the analyses that gate the stage and are Running.
	running []string
	// nextIn is how long until the next measurement is due (0: none).
	nextIn time.Duration
}

// assessAnalyses records the snapshot's measurements of the active stage's
// analyses, judged by their conditions within budget, and sums up where
// the analyses are. A measurement counts once: only one taken after the
// record's latest (and once the stage was placed) is recorded.
func assessAnalyses(snap *Snapshot, active int, programs []compiledAnalysis, budget *expression.Budget) analyses {
	policy := snap.Policy
	stage := policy.Spec.Stages[active]
	record := policy.Status.StageNamed(stage.Name)
	var out analyses
	if len(stage.Analysis) == 0 || record == nil || record.Phase != v1alpha1.StageActive {
		return out
	}
	if record.PlacedTime == nil {
		// Not started: every analysis that gates still holds the stage.
		for _, a := range stage.Analysis {
			if !a.DryRun {
				out.running = append(out.running, fmt.Sprintf("%s (0 of %d, from the stage's placement)", a.Name, a.MeasurementCount()))
			}
		}
		return out
	}
	for i, a := range stage.Analysis {
		r := v1alpha1.AnalysisStatus{Name: a.Name, Phase: v1alpha1.AnalysisRunning}
		old := record.AnalysisNamed(a.Name)
		if old != nil {
			r = *old.DeepCopy()
		}
		r.DryRun = a.DryRun
		if r.Phase == v1alpha1.AnalysisRunning {
			for _, m := range snap.Measurements {
				// The status keeps times to the second.
				m.Time = metav1.NewTime(m.Time.Truncate(time.Second))
				if m.Stage != stage.Name || m.Analysis != a.Name || m.Time.Before(record.PlacedTime) || !after(m.Time, r.Measurements) {
					continue
				}
				if judged, ok := judge(programs[i], m, budget); ok {
					recordMeasurement(&r, judged)
				}
			}
			r.Phase = analysisPhase(a, &r)
		}
		if old == nil || !equalAnalysis(old, &r) {
			out.changed = true
		}
		out.records = append(out.records, r)
		out.nextIn = Earliest(out.nextIn, measureIn(a, &r, record.PlacedTime.Time, snap.Now))
		if a.DryRun {
			continue
		}
		switch r.Phase {
		case v1alpha1.AnalysisFailed:
			if out.failed == nil {
				out.failed = &out.records[len(out.records)-1]
			}
		case v1alpha1.AnalysisInconclusive:
			if out.inconclusive == nil {
				out.inconclusive = &out.records[len(out.records)-1]
			}
		case v1alpha1.AnalysisRunning:
			out.running = append(out.running, fmt.Sprintf("%s (%d of %d)", a.Name, counted(a, &r), a.MeasurementCount()))
		}
	}
	if len(out.records) != len(record.Analyses) {
		out.changed = true
	}
	return out
}

// after reports whether t is after the latest of the measurements.
func after(t metav1.Time, measurements []v1alpha1.Measurement) bool {
	return len(measurements) == 0 || t.After(measurements[len(measurements)-1].Time.Time)
}

// equalAnalysis reports whether two analysis records say the same.
func equalAnalysis(a, b *v1alpha1.AnalysisStatus) bool {
	if a.Phase != b.Phase || a.DryRun != b.DryRun || a.Successful != b.Successful || a.Failed != b.Failed ||
		a.Inconclusive != b.Inconclusive || len(a.Measurements) != len(b.Measurements) {
		return false
	}
	for i := range a.Measurements {
		if !a.Measurements[i].Time.Equal(&b.Measurements[i].Time) || a.Measurements[i].Phase != b.Measurements[i].Phase {
			return false
		}
	}
	return true
}

// recordMeasurement counts m in r and keeps it among the latest.
func recordMeasurement(r *v1alpha1.AnalysisStatus, m v1alpha1.Measurement) {
	switch m.Phase {
	case v1alpha1.MeasurementSuccessful:
		r.Successful++
	case v1alpha1.MeasurementFailed:
		r.Failed++
	default:
		r.Inconclusive++
	}
	r.Measurements = append(r.Measurements, m)
	if n := len(r.Measurements); n > v1alpha1.MaxMeasurements {
		r.Measurements = r.Measurements[n-v1alpha1.MaxMeasurements:]
	}
}

// analysisPhase is the phase of an analysis with the counts of r: Failed
// past failureLimit, Inconclusive past inconclusiveLimit, Successful once
// count measurements are taken (for a web analysis, count conclusive
// ones: a gate that says wait has not passed), else Running.
func analysisPhase(a v1alpha1.Analysis, r *v1alpha1.AnalysisStatus) v1alpha1.AnalysisPhase {
	switch {
	case r.Failed > a.FailureLimit:
		return v1alpha1.AnalysisFailed
	case r.Inconclusive > a.InconclusiveLimit:
		return v1alpha1.AnalysisInconclusive
	case counted(a, r) >= a.MeasurementCount():
		return v1alpha1.AnalysisSuccessful
	}
	return v1alpha1.AnalysisRunning
}

// counted is how many of r's measurements count towards a's count: all
// of them, or, for a web analysis, the conclusive ones.
func counted(a v1alpha1.Analysis, r *v1alpha1.AnalysisStatus) int32 {
	if a.Web != nil {
		return r.Successful + r.Failed
	}
	return r.Taken()
}

// judge gives the verdict of one measurement of an analysis with the
// given programs: Inconclusive without an
// answer or when a condition cannot be evaluated; else Failed when the
// failureCondition holds, Successful when the successCondition holds (or
// there is only a failureCondition, which does not), Failed when the
// successCondition does not and there is no failureCondition, and
// Inconclusive when neither holds. It reports false, and the measurement
// is not recorded but taken again, when the run's evaluation budget could
// not pay for the judgement: the stager's state, not the workload's.
func judge(programs compiledAnalysis, m Measurement, budget *expression.Budget) (v1alpha1.Measurement, bool) {
	out := v1alpha1.Measurement{Time: m.Time}
	if m.Error != "" {
		out.Phase, out.Message = v1alpha1.MeasurementInconclusive, cutMessage(m.Error, v1alpha1.MaxMeasurementMessage)
		return out, true
	}
	var exhausted bool
	evalOn := func(p *expression.Program) (bool, error) { return budget.EvalAnalysis(p, m.Values) }
	if programs.web {
		out.Value = formatAnswer(m.Answer)
		evalOn = func(p *expression.Program) (bool, error) { return budget.EvalWebAnalysis(p, m.Answer) }
	} else {
		out.Value = formatValues(m.Values)
	}
	eval := func(p *expression.Program) (bool, bool) {
		if p == nil {
			return false, true
		}
		holds, err := evalOn(p)
		if err != nil {
			var e *expression.Error
			exhausted = errors.As(err, &e) && e.Reason == expression.ReasonBudgetExhausted
			out.Phase, out.Message = v1alpha1.MeasurementInconclusive, cutMessage(err.Error(), v1alpha1.MaxMeasurementMessage)
			return false, false
		}
		return holds, true
	}
	fails, ok := eval(programs.failure)
	if !ok {
		return out, !exhausted
	}
	succeeds, ok := eval(programs.success)
	if !ok {
		return out, !exhausted
	}
	switch {
	case fails:
		out.Phase = v1alpha1.MeasurementFailed
	case programs.success == nil || succeeds:
		out.Phase = v1alpha1.MeasurementSuccessful
	case programs.failure == nil:
		out.Phase = v1alpha1.MeasurementFailed
	default:
		out.Phase = v1alpha1.MeasurementInconclusive
		out.Message = "neither the successCondition nor the failureCondition holds"
	}
	return out, true
}

// JudgeMeasurement judges one answer to an analysis's query (values, or
// queryErr when there was none) as Plan does, with the controller's engine
// and limits, at time at. It returns an error when a condition does not
// compile. It is what `kubectl stager eval --analysis` prints.
func JudgeMeasurement(engine *expression.Engine, a v1alpha1.Analysis, values []float64, queryErr error, at metav1.Time) (v1alpha1.Measurement, error) {
	return judgeOne(engine, a, Measurement{Analysis: a.Name, Time: at, Values: values}, queryErr)
}

// JudgeWebMeasurement is JudgeMeasurement for a web analysis, on its JSON
// answer (or queryErr when there was none).
func JudgeWebMeasurement(engine *expression.Engine, a v1alpha1.Analysis, answer []byte, queryErr error, at metav1.Time) (v1alpha1.Measurement, error) {
	return judgeOne(engine, a, Measurement{Analysis: a.Name, Time: at, Answer: answer}, queryErr)
}

// judgeOne judges m, an answer to a, as Plan does.
func judgeOne(engine *expression.Engine, a v1alpha1.Analysis, m Measurement, queryErr error) (v1alpha1.Measurement, error) {
	compiled, _, err := compileStages(engine, []v1alpha1.Stage{{Name: "eval", Analysis: []v1alpha1.Analysis{a}}})
	if err != nil {
		return v1alpha1.Measurement{}, err
	}
	if queryErr != nil {
		m.Error = queryErr.Error()
	}
	judged, _ := judge(compiled[0].analyses[0], m, engine.NewBudget())
	return judged, nil
}

// formatAnswer renders a web answer, compacted, bounded: its head, and
// how many bytes are left out.
func formatAnswer(answer []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, answer); err != nil {
		b.Reset()
		b.Write(answer)
	}
	s := strings.ToValidUTF8(b.String(), "?")
	if len(s) <= v1alpha1.MaxMeasurementValue {
		return s
	}
	// Room is kept for the longest tail, " ... 1572864 more bytes"; a
	// rune cut in two is dropped.
	tail := len(fmt.Sprintf(" ... %d more bytes", expression.MaxWebAnswerBytes))
	head := strings.ToValidUTF8(s[:v1alpha1.MaxMeasurementValue-tail], "")
	return fmt.Sprintf("%s ... %d more bytes", head, len(s)-len(head))
}

// formatValues renders values as the conditions saw them, bounded.
func formatValues(values []float64) string {
	var b strings.Builder
	b.WriteByte('[')
	// Room is kept for the longest tail, ", ... 1000 more]".
	tail := len(fmt.Sprintf(", ... %d more]", expression.MaxResultValues))
	for i, v := range values {
		next := strconv.FormatFloat(v, 'g', -1, 64)
		if b.Len()+len(", ")+len(next)+tail > v1alpha1.MaxMeasurementValue {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "... %d more", len(values)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(next)
	}
	b.WriteByte(']')
	return b.String()
}

// withAnalyses puts the analysis records into the active stage's record
// of a status write.
func withAnalyses(action Action, policy *v1alpha1.StagedBindingPolicy, active int, a analyses) Action {
	if a.records == nil || action.Status == nil {
		return action
	}
	if record := action.Status.StageNamed(policy.Spec.Stages[active].Name); record != nil {
		record.Analyses = a.records
	}
	return action
}

// gate holds a stage whose condition is done while its analyses run.
func (a analyses) gate(result assessment) assessment {
	if !result.satisfied || len(a.running) == 0 {
		return result
	}
	result.satisfied = false
	result.reason = v1alpha1.ReasonAnalysisRunning
	result.message = fmt.Sprintf("%s; waiting for analyses %s", result.message, strings.Join(a.running, ", "))
	return result
}

// failHolds reports whether the policy's failure record holds the
// rollout: it says Hold and neither the spec (but spec.suspend) nor the
// restartedAt annotation has changed since.
func failHolds(policy *v1alpha1.StagedBindingPolicy) bool {
	f := policy.Status.Failure
	return f != nil && f.Action == v1alpha1.FailureHold && f.SpecDigest == specDigest(policy)
}

// failAborts reports whether the policy's failure record aborts the
// rollout: it says Abort, the spec names the same revision, and the
// restartedAt annotation has no new value (rule 7's test).
func failAborts(policy *v1alpha1.StagedBindingPolicy) bool {
	f := policy.Status.Failure
	restart := policy.Annotations[v1alpha1.RestartedAtAnnotation]
	return f != nil && f.Action == v1alpha1.FailureAbort && f.Revision == policy.Spec.SpecRevision() &&
		(restart == "" || restart == f.RestartedAt)
}

// failStage records the failure of the active stage: with onFailure Hold
// the rollout stalls where it is; with Abort, the next run aborts it
// (planAbort). A Warning Event with the reason says what failed.
func failStage(snap *Snapshot, active int, a analyses, reason, message string) Action {
	policy := snap.Policy
	stage := policy.Spec.Stages[active]
	action := v1alpha1.FailureHold
	if stage.OnFailure == v1alpha1.FailureAbort && reason != v1alpha1.ReasonAnalysisInconclusive {
		action = v1alpha1.FailureAbort
	}
	message = fmt.Sprintf("stage %q failed: %s", stage.Name, message)
	status := policy.Status.DeepCopy()
	status.Failure = &v1alpha1.RolloutFailure{Stage: stage.Name, Reason: reason, Action: action, Message: cutMessage(message, MaxConditionMessage),
		Time: snap.Now, SpecDigest: specDigest(policy), Revision: policy.Status.UpdateRevision,
		RestartedAt: policy.Annotations[v1alpha1.RestartedAtAnnotation]}
	if record := status.StageNamed(stage.Name); record != nil {
		record.Message = message
		record.ConditionMetTime, record.ProgressDeadlineTime = nil, nil
	}
	note := message + "; onFailure Abort: the rollout is aborted"
	if action == v1alpha1.FailureHold {
		note = holdStatus(status, policy, snap.Now)
	}
	return withAnalyses(Action{Type: ActionUpdateStatus, Status: status,
		Events: []Event{{Type: corev1.EventTypeWarning, Reason: reason, Note: note}},
		Why:    message}, policy, active, a)
}

// holdStatus sets the summary of a rollout that status.failure holds:
// Stalled, Ready as it stands (a failure changes nothing placed), and
// Progressing saying why and until when. It returns that message.
func holdStatus(status *v1alpha1.StagedBindingPolicyStatus, policy *v1alpha1.StagedBindingPolicy, now metav1.Time) string {
	f := status.Failure
	message := f.Message + "; the rollout is held: change its spec or restart it to try the stage again"
	if f.Action == v1alpha1.FailureAbort { // held only while the wave holds what releases it (waveKeepsFailure)
		message = fmt.Sprintf("%s; the rollout is held until its wave releases revision %s, or it is restarted",
			f.Message, describeRevision(policy.Spec.SpecRevision()))
	}
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionUnknown, Reason: v1alpha1.ReasonRolloutHeld}
	if c := meta.FindStatusCondition(policy.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		ready = *c
	}
	setSummary(status, policy, v1alpha1.RolloutStalled, ready,
		metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: f.Reason, Message: message}, now)
	return message
}

// held keeps a rollout that a failed stage holds where it is, saying so.
//
// Plan's rule 6: a rollout a failed stage holds (onFailure Hold, or an
// analysis inconclusive past its limit) stays where it is until its spec or
// restartedAt changes (releaseFailure).
func held(policy *v1alpha1.StagedBindingPolicy, now metav1.Time) Action {
	status := policy.Status.DeepCopy()
	holdStatus(status, policy, now)
	return statusAction(policy, status, Event{}, "a failed stage holds the rollout")
}

// releaseFailure clears a failure record that no longer holds or aborts
// the rollout, and the failed stage's analyses, which start over; the time
// held is added to the stage's suspendedDuration.
//
// Plan's rule 6: once the spec or restartedAt of a held rollout changes, the
// failure is cleared and the stage's analyses start over.
func releaseFailure(policy *v1alpha1.StagedBindingPolicy, now metav1.Time) Action {
	status := policy.Status.DeepCopy()
	f := status.Failure
	status.Failure = nil
	if record := status.StageNamed(f.Stage); record != nil && record.Phase == v1alpha1.StageActive {
		// The time held counts against the deadline no more than a
		// suspension; the analyses start over from the next placement seen.
		held := metav1.Duration{Duration: max(now.Sub(f.Time.Time), 0)}
		if record.SuspendedDuration != nil {
			held.Duration += record.SuspendedDuration.Duration
		}
		record.SuspendedDuration = &held
		record.Analyses, record.PlacedTime, record.ProgressDeadlineTime = nil, nil, nil
	}
	return Action{Type: ActionUpdateStatus, Status: status,
		Events: []Event{{Type: corev1.EventTypeNormal, Reason: v1alpha1.EventReasonResumed,
			Note: fmt.Sprintf("the spec or the restartedAt annotation changed since stage %q failed: the rollout goes on", f.Stage)}},
		Why: fmt.Sprintf("the failure of stage %q no longer holds the rollout", f.Stage)}
}

// describeAnalysis says in words how an analysis ended.
func describeAnalysis(r *v1alpha1.AnalysisStatus) string {
	msg := fmt.Sprintf("analysis %q is %s after %d measurement(s): %d successful, %d failed, %d inconclusive",
		r.Name, r.Phase, r.Taken(), r.Successful, r.Failed, r.Inconclusive)
	if n := len(r.Measurements); n > 0 {
		last := r.Measurements[n-1]
		msg += fmt.Sprintf("; the last was %s", last.Phase)
		if last.Value != "" {
			msg += " with " + last.Value
		}
		if last.Message != "" {
			msg += ": " + last.Message
		}
	}
	return msg
}
