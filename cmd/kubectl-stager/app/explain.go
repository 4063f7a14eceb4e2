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

package app

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
	"github.com/kubestellar/workload-stager/internal/forecast"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

func newExplainCommand(o *options) *cobra.Command {
	var stageName string
	var prom *promFlags
	cmd := &cobra.Command{
		Use:   "explain NAME",
		Short: "Explain what a stage sees and what it waits for",
		Long: `Explain one stage of a rollout (the active one unless --stage names another):
its BindingPolicy and clusters, every workload object of its Binding with
whether the filter selects it, its CombinedStatus and the condition's value for
it, the rows and columns of the CombinedStatus of every selected object the
condition does not hold for, and what the stage waits for. For a policy in a
RolloutWave, the Wave line names the wave, the step and its position, and
whether the wave holds or released the revision; while it holds, "Waits for
wave" says what for. While a stage waits for its change window, the Window
line names it and when the window opens, in its time zone and from now. The
Forecast lines say when the rollout is expected to complete, from the stage
durations of the policy's earlier rollouts (status.history) or, with
--prometheus, from that Prometheus's where it has the stage, on what basis,
and each stage left; or why there is no forecast. The expressions are
evaluated with the stager's own CEL engine and limits.`,
		Example: `  # why is web's active stage not done?
  kubectl stager explain web

  # what does prod see (once it is placed)?
  kubectl stager explain web --stage prod

  # forecast from each stage's median over 30 days in Prometheus
  kubectl stager explain web --prometheus https://prometheus.example.com \
    --prometheus-space kubeconfig#wds1 --prometheus-bearer-token-file ~/.prom-token`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completePolicies,
		RunE: func(cmd *cobra.Command, args []string) error {
			fc, err := newForecaster(prom, o.streams.ErrOut)
			if err != nil {
				return err
			}
			return o.explain(cmd, args[0], stageName, nil, fc)
		},
	}
	cmd.Flags().StringVar(&stageName, "stage", "", "The stage to explain (default: the active stage)")
	prom = addPromFlags(cmd.Flags())
	return cmd
}

// explain prints the explanation of a stage, forecasting with fc; draft,
// when not nil, changes the stage's expressions first (eval).
func (o *options) explain(cmd *cobra.Command, name, stageName string, draft func(*v1alpha1.Stage) string, fc *forecaster) error {
	ctx := cmd.Context()
	c, p, stage, err := o.policyStage(ctx, name, stageName)
	if err != nil {
		return err
	}
	objs, err := readStage(ctx, c, p, stage.Name)
	if err != nil {
		return err
	}
	engine, err := newEngine()
	if err != nil {
		return err
	}
	defer engine.Close()
	tried := stage.DeepCopy()
	what := ""
	if draft != nil {
		what = draft(tried)
	}
	e, err := rollout.ExplainStage(engine, *tried, objs.bindingPolicy, objs.binding, objs.statuses)
	if err != nil {
		return err
	}
	out := o.streams.Out
	if draft != nil {
		printEvaluation(out, p, tried, what, e)
		return nil
	}
	// Why Prometheus did not serve the forecast is on the error stream.
	f, _ := fc.forecast(ctx, "", p, o.now())
	printStage(out, p, stage, objs, e, o, f)
	return nil
}

// printStage prints the header of an explanation, with the forecast f,
// then its objects.
func printStage(out io.Writer, p *v1alpha1.StagedBindingPolicy, stage *v1alpha1.Stage, objs stageObjects,
	e rollout.StageExplanation, o *options, f forecast.Forecast) {
	index := 0
	for i, s := range p.Spec.Stages {
		if s.Name == stage.Name {
			index = i + 1
		}
	}
	fprintf(out, "StagedBindingPolicy %s: phase %s, active stage %s\n", p.Name, orNone(string(p.Status.Phase)), orNone(p.Status.ActiveStage))
	w := printers.GetNewTabWriter(out)
	printWave(w, p)
	printFrozen(w, p)
	printWindow(w, p, o.now())
	record := p.Status.StageNamed(stage.Name)
	state := string(v1alpha1.StagePending)
	if record != nil {
		state = string(record.Phase)
		switch {
		case record.Phase == v1alpha1.StageAwaitingApproval && record.ApprovalRequestedTime != nil:
			state += " for " + age(record.ApprovalRequestedTime.Time, o.now())
		case record.StartTime != nil:
			state += ", started " + age(record.StartTime.Time, o.now()) + " ago"
		}
	}
	fprintf(w, "Stage:\t%s (%d of %d), %s\n", stage.Name, index, len(p.Spec.Stages), state)
	printPromotion(w, record, o.now())
	bp := "<none>"
	if objs.bindingPolicy != nil {
		bp = objs.bindingPolicy.Name
	}
	fprintf(w, "BindingPolicy:\t%s\n", bp)
	fmt.Fprintf(w, "Clusters:\t%s\n", orNone(strings.Join(printables(e.Clusters), ", ")))
	if record != nil && record.Clusters != nil {
		fprintf(w, "Batches:\t%s\n", batchSummary(record.Clusters))
		states := make([]string, 0, len(record.Clusters.Clusters))
		for _, c := range record.Clusters.Clusters {
			states = append(states, c.Name+" "+string(c.State))
		}
		fprintf(w, "Cluster states:\t%s\n", orNone(strings.Join(states, ", ")))
	}
	fprintf(w, "Filter:\t%s\n", orNone(stage.Filter))
	fprintf(w, "Condition:\t%s\n", orNone(stage.Condition))
	printFailureGates(w, p, stage, record, o.now())
	printRegressionWatch(w, p, stage, record, o.now())
	switch {
	case p.Status.ActiveStage == "" && heldByWave(p):
		fprintf(w, "Waits for:\tthe wave to release the revision: the rollout has not started\n")
	case p.Status.ActiveStage == "" && frozenCondition(p) != nil:
		fprintf(w, "Waits for:\tthe freeze to end: the rollout has not started\n")
	case record == nil || record.Phase == v1alpha1.StagePending:
		fprintf(w, "Waits for:\tthe rollout to reach it\n")
	case p.Status.Failure != nil && p.Status.Failure.Stage == stage.Name && p.Status.Failure.Action == v1alpha1.FailureHold &&
		record.Phase == v1alpha1.StageActive:
		fprintf(w, "Waits for:\ta change of the policy's spec (but spec.suspend), or a restart: its failure holds the rollout\n")
	case stage.Batched() && record.Phase == v1alpha1.StageActive:
		fprintf(w, "Waits for:\t%s\n", orNone(record.Message))
	case record.Phase == v1alpha1.StageActive:
		fprintf(w, "Waits for:\t%s: %s\n", e.Reason, e.Message)
	case record.Phase == v1alpha1.StageSucceeded && e.Done:
		fprintf(w, "Waits for:\tnothing: it is done, and its condition still holds\n")
	default:
		fprintf(w, "Waits for:\t%s\n", orNone(record.Message))
	}
	printForecast(w, f, o.now())
	_ = w.Flush()
	if stage.Batched() {
		fprintf(out, "\nThe stage places each cluster through a BindingPolicy of its own, labelled %s=<cluster> and %s=%s.\n",
			v1alpha1.ClusterLabel, v1alpha1.StageLabel, stage.Name)
		return
	}
	printObjectTable(out, e)
}

// printForecast prints the rollout's completion forecast f
// (internal/forecast), its basis and its stages left, or why there is
// none.
func printForecast(w io.Writer, f forecast.Forecast, now time.Time) {
	switch f.Kind {
	case forecast.NotRunning, forecast.NoHistory:
		fprintf(w, "Forecast:\tnone: %s\n", f.Sentence(now))
		return
	}
	fprintf(w, "Forecast:\t%s\n", f.Sentence(now))
	fprintf(w, "Basis:\t%s\n", f.Basis.String())
	lines := make([]string, 0, len(f.Stages))
	for _, s := range f.Stages {
		lines = append(lines, s.StageLine())
	}
	fprintf(w, "Stages left:\t%s\n", strings.Join(lines, "; "))
}

// printFailureGates prints a stage's failureCondition, onFailure and
// analyses, each with its record's last measurements, and the failure that
// stopped the rollout at this stage, if any.
func printFailureGates(w io.Writer, p *v1alpha1.StagedBindingPolicy, stage *v1alpha1.Stage, record *v1alpha1.StageStatus, now time.Time) {
	if stage.FailureCondition != "" {
		fprintf(w, "Failure condition:\t%s\n", stage.FailureCondition)
	}
	if stage.FailureCondition == "" && len(stage.Analysis) == 0 {
		return
	}
	onFailure := stage.OnFailure
	if onFailure == "" {
		onFailure = v1alpha1.FailureHold
	}
	fprintf(w, "On failure:\t%s\n", onFailure)
	for _, a := range stage.Analysis {
		fprintf(w, "Analysis %s:\t%s\n", a.Name, analysisSummary(a, record, now))
		if a.Web != nil {
			fprintf(w, "\tweb GET on %s: %s\n", a.Provider, webRequestText(a.Web))
		} else {
			fprintf(w, "\tquery on %s: %s\n", a.Provider, a.Query)
		}
	}
	if f := p.Status.Failure; f != nil && f.Stage == stage.Name {
		fprintf(w, "Failed:\t%s, %s ago (%s): %s\n", f.Reason, age(f.Time.Time, now), f.Action, f.Message)
	}
}

// analysisSummary says where an analysis is, from the stage's record: its
// phase and counts, and its measurements, latest first.
func analysisSummary(a v1alpha1.Analysis, record *v1alpha1.StageStatus, now time.Time) string {
	r := record.AnalysisNamed(a.Name)
	dryRun := ""
	if a.DryRun {
		dryRun = " (dry run)"
	}
	if r == nil {
		return fmt.Sprintf("not started, %d measurement(s) to take%s", a.MeasurementCount(), dryRun)
	}
	summary := fmt.Sprintf("%s%s, %d of %d taken: %d successful, %d failed (limit %d), %d inconclusive (limit %d)", r.Phase, dryRun,
		r.Taken(), a.MeasurementCount(), r.Successful, r.Failed, a.FailureLimit, r.Inconclusive, a.InconclusiveLimit)
	for i := len(r.Measurements) - 1; i >= 0; i-- {
		m := r.Measurements[i]
		summary += fmt.Sprintf("; %s ago %s", age(m.Time.Time, now), m.Phase)
		if m.Value != "" {
			summary += " " + m.Value
		}
		if m.Message != "" {
			summary += ": " + m.Message
		}
	}
	return summary
}

// printObjectTable prints one row per workload object of the explanation,
// then what the condition read for each selected object it does not hold for.
func printObjectTable(out io.Writer, e rollout.StageExplanation) {
	if len(e.Objects) == 0 {
		fmt.Fprintln(out, "\nNo workload object: the stage has no Binding yet.")
		return
	}
	fmt.Fprintln(out)
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "OBJECT\tSELECTED\tCOMBINED STATUS\tCONDITION")
	for _, obj := range e.Objects {
		selected := yesNo(obj.Selected)
		if obj.FilterError != "" {
			selected = "error"
		}
		status := yesNo(obj.CombinedStatus != nil)
		fprintf(w, "%s\t%s\t%s\t%s\n", obj.Object, selected, status, verdict(obj))
	}
	_ = w.Flush()
	for _, obj := range e.Objects {
		switch {
		case obj.FilterError != "":
			fprintf(out, "\n%s: the filter fails: %s\n", obj.Object, obj.FilterError)
		case obj.ConditionError != "":
			fprintf(out, "\n%s: the condition fails: %s\n", obj.Object, obj.ConditionError)
			printResults(out, obj.CombinedStatus)
		case obj.Holds != nil && !*obj.Holds:
			fprintf(out, "\n%s: the condition does not hold on its CombinedStatus:\n", obj.Object)
			printResults(out, obj.CombinedStatus)
		}
	}
}

// verdict is the CONDITION cell of an object.
func verdict(obj rollout.ObjectExplanation) string {
	switch {
	case obj.ConditionError != "":
		return "error"
	case obj.Holds != nil:
		return strconv.FormatBool(*obj.Holds)
	case obj.Selected && obj.CombinedStatus == nil:
		return "no status yet"
	}
	return "-"
}

// printResults prints the rows and columns of a CombinedStatus, one table
// per status collector.
func printResults(out io.Writer, cs *ksv1alpha1.CombinedStatus) {
	if cs == nil {
		return
	}
	if len(cs.Results) == 0 {
		fmt.Fprintln(out, "  (no results: does the downsync clause name a status collector?)")
		return
	}
	for _, r := range cs.Results {
		fprintf(out, "  results[name=%s]: %d row(s)\n", r.Name, len(r.Rows))
		w := printers.GetNewTabWriter(out)
		fmt.Fprintf(w, "    ROW\t%s\n", strings.Join(printables(r.ColumnNames), "\t"))
		for i, row := range r.Rows {
			cells := make([]string, 0, len(row.Columns))
			for _, v := range row.Columns {
				cells = append(cells, printable(value(v)))
			}
			fmt.Fprintf(w, "    %d\t%s\n", i, strings.Join(cells, "\t"))
		}
		_ = w.Flush()
	}
}

// value renders one column value with its type, as the condition sees it.
func value(v ksv1alpha1.Value) string {
	switch {
	case v.String != nil:
		return fmt.Sprintf("%q (%s)", *v.String, v.Type)
	case v.Number != nil:
		return fmt.Sprintf("%s (%s)", *v.Number, v.Type)
	case v.Bool != nil:
		return fmt.Sprintf("%t (%s)", *v.Bool, v.Type)
	case v.Object != nil:
		return fmt.Sprintf("%s (%s)", v.Object.Raw, v.Type)
	case v.Array != nil:
		return fmt.Sprintf("%s (%s)", v.Array.Raw, v.Type)
	}
	return string(v.Type)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// newEngine returns the engine the plugin evaluates with: the stager's
// defaults, with every evaluation that its input's sizes do not bound in a
// worker process (the plugin re-executed), as the stager evaluates, so that
// a hostile expression costs the user's machine no more than the stager.
func newEngine() (*expression.Engine, error) {
	return expression.NewEngine(expression.WithIsolation(expression.Isolation{Workers: 1}))
}

// webRequestText shows a web analysis's request as written: its path and
// its parameters, sorted, placeholders unreplaced.
func webRequestText(req *v1alpha1.WebRequest) string {
	names := slices.Sorted(maps.Keys(req.Params))
	params := make([]string, len(names))
	for i, k := range names {
		params[i] = k + "=" + req.Params[k]
	}
	text := "/" + strings.TrimLeft(req.Path, "/")
	if len(params) > 0 {
		text += "?" + strings.Join(params, "&")
	}
	return text
}
