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

package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// datasource is the Prometheus the dashboard's variable picks.
var datasource = common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}

// series is a query over the dashboard's time range, one series per legend.
func series(refID, expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(datasource).RefId(refID).Expr(expr).LegendFormat(legend)
}

// rows is an instant query whose result a table shows, a row per series.
func rows(refID, expr string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(datasource).RefId(refID).Expr(expr).
		LegendFormat("__auto").Instant().Format(prometheus.PromQueryFormatTable)
}

// graph is a time series panel of half the width, with its legend below.
func graph(title, description string) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().Title(title).Span(12).Height(8).Datasource(datasource).Description(description).
		Legend(common.NewVizLegendOptionsBuilder().ShowLegend(true).DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom)).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeSingle).Sort(common.SortOrderNone))
}

// rowsTable is a table panel of the given width and height.
func rowsTable(title string, width, height uint32, description string) *table.PanelBuilder {
	return table.NewPanelBuilder().Title(title).Span(width).Height(height).Datasource(datasource).Description(description)
}

// figures is a stat panel of half the width, showing each series' last
// value (Grafana's own default, which the SDK leaves empty).
func figures(title, description string) *stat.PanelBuilder {
	return stat.NewPanelBuilder().Title(title).Span(12).Height(8).Datasource(datasource).Description(description).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}))
}

// labelVariable is a multi-valued variable over the values of one label.
func labelVariable(name, label, query string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(name).Label(label).Datasource(datasource).
		Query(dashboard.StringOrMap{Map: map[string]any{"query": query, "refId": name}}).Definition(query).
		IncludeAll(true).Multi(true).AllValue(".*").
		Current(dashboard.VariableOption{Text: dashboard.StringOrArrayOfString{String: cog.ToPtr("All")},
			Value: dashboard.StringOrArrayOfString{String: cog.ToPtr("$__all")}}).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).Sort(dashboard.VariableSortAlphabeticalAsc)
}

// stageProgress is the dashboard: where every rollout is, what holds it,
// and how the spaces and replicas serving them are.
//
// It is built on the classic dashboard model, which the SDK deprecates for
// its v2 resource: Grafana's dashboard sidecar, Dashboards → Import and
// every Grafana before 12 read the classic JSON, not v2.
func stageProgress() *dashboard.DashboardBuilder { //nolint:staticcheck // the classic model, on purpose (see above)
	const (
		spacePolicy = `space=~"$space", policy=~"$policy"`
		space       = `space=~"$space"`
	)
	d := dashboard.NewDashboardBuilder("KubeStellar Workload Stager: stage progress") //nolint:staticcheck // as above
	return d.
		Uid("kubestellar-stager").
		Description("Where every staged rollout is, per space and policy.").
		Tags([]string{"kubestellar", "stager"}).
		Timezone(common.TimeZoneBrowser).
		Editable().
		Version(1).
		Refresh("30s").
		Time("now-6h", "now").
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Data source").Type("prometheus")).
		WithVariable(labelVariable("space", "Space", "label_values(stager_space_engaged, space)")).
		WithVariable(labelVariable("policy", "Policy", `label_values(stager_policy_stages{space=~"$space"}, policy)`)).
		WithPanel(rowsTable("Where every rollout is now", 24, 9,
			"Each policy's active stage, its phase and how long it has been in the stage.").
			WithTarget(rows("A", `max by (space, policy, stage) (stager_policy_active_stage{`+spacePolicy+`})`)).
			WithTarget(rows("B", `max by (space, policy) (time() - stager_policy_active_stage_start_time_seconds{`+spacePolicy+`})`)).
			WithTarget(rows("C", `max by (space, policy, phase) (stager_policy_phase{`+spacePolicy+`})`)).
			WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}).
			WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
				"excludeByName": map[string]bool{"Time": true, "Value #A": true, "Value #C": true},
				"renameByName":  map[string]string{"Value #B": "Time in stage"},
			}}).
			OverrideByName("Time in stage", []dashboard.DynamicConfigValue{{Id: "unit", Value: "s"}})).
		WithPanel(rowsTable("Stages by revision", 24, 8,
			"For policies with spec.revision, the revisions each stage runs: the one it keeps, and for the active stage the one being rolled out beside it until the stage is done on it. A stage on two revisions is switching; an Aborted policy has put its stages back on the current revision.").
			WithTarget(rows("A", `max by (space, policy, stage, revision) (stager_stage_revision{`+spacePolicy+`})`)).
			WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
				"excludeByName": map[string]bool{"Time": true, "Value": true},
			}})).
		WithPanel(rowsTable("Clusters of stages placed in batches", 24, 8,
			"For stages with maxConcurrency, how many of their clusters are in each state: ToApply (not placed yet), Progressing, Succeeded, and Failed or TimedOut (not done past their progressDeadline; more than maxFailures stalls the rollout).").
			WithTarget(rows("A", `max by (space, policy, stage, state) (stager_stage_clusters{`+spacePolicy+`})`)).
			WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
				"excludeByName": map[string]bool{"Time": true},
				"renameByName":  map[string]string{"Value": "Clusters"},
			}})).
		WithPanel(rowsTable("Analysis measurements", 24, 8,
			"For stages with analyses, how many measurements of each were Successful, Failed and Inconclusive (a provider that could not answer). Past failureLimit the stage fails (onFailure Hold or Abort); past inconclusiveLimit the rollout is held. Aborted rollouts show in \"Policies by phase\".").
			WithTarget(rows("A", `max by (space, policy, stage, analysis, phase) (stager_stage_analysis_measurements{`+spacePolicy+`})`)).
			WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
				"excludeByName": map[string]bool{"Time": true},
				"renameByName":  map[string]string{"Value": "Measurements", "phase": "verdict"},
			}})).
		WithPanel(rowsTable("Regressed stages", 24, 6,
			"Done stages whose regressionWatch found them unhealthy (1), or healthy at their last check (0): see the StageRegressed condition and kubectl stager explain. Checks by result per second: healthy, regressed, inconclusive (an evaluation failed or ran out of the space's budget).").
			WithTarget(rows("A", `max by (space, policy, stage) (stager_stage_regressed{`+spacePolicy+`})`)).
			WithTarget(rows("B", `sum by (space) (rate(stager_regression_checks_total{`+space+`, result="inconclusive"}[$__rate_interval]))`)).
			WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
				"excludeByName": map[string]bool{"Time": true},
				"renameByName":  map[string]string{"Value #A": "Regressed", "Value #B": "Inconclusive checks/s"},
			}})).
		WithPanel(graph("Stage transitions",
			"Stages completed over time.").
			WithTarget(series("A", `sum by (space, policy, stage) (increase(stager_stage_transitions_total{`+spacePolicy+`}[$__rate_interval]))`,
				"{{space}}/{{policy}}: {{stage}} done")).
			DrawStyle(common.GraphDrawStyleBars)).
		WithPanel(graph("Policies by phase",
			"How many policies are in each phase: Pending, Progressing, Completed, Blocked, Suspended, Stalled, AwaitingApproval, Aborted.").
			WithTarget(series("A", `sum by (phase) (stager_policies{`+space+`})`, "{{phase}}"))).
		WithPanel(rowsTable("Blocked or failing rollouts", 12, 8,
			"Policies whose rollout is blocked by an invalid or failing expression or a BindingPolicy name conflict: see the policy's Ready and Progressing conditions.").
			WithTarget(rows("A", `max by (space, policy) (stager_policy_phase{`+spacePolicy+`, phase="Blocked"}) == 1`))).
		WithPanel(graph("Condition evaluation errors",
			"Stage conditions that failed to evaluate, per second.").Unit("ops").
			WithTarget(series("A", `sum by (space) (rate(stager_condition_evaluations_total{`+space+`, result="error"}[$__rate_interval]))`, "{{space}}"))).
		WithPanel(rowsTable("Engaged spaces and their health", 12, 8,
			"1: the space serves KubeStellar's API, its caches are synced and its API server answers; 0: it does not.").
			WithTarget(rows("A", `max by (space) (stager_space_ready{`+space+`})`)).
			Mappings([]dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText,
				Options: map[string]dashboard.ValueMappingResult{
					"0": {Text: cog.ToPtr("not ready"), Color: cog.ToPtr("red")},
					"1": {Text: cog.ToPtr("ready"), Color: cog.ToPtr("green")},
				}}}})).
		WithPanel(figures("Engaged spaces",
			"Spaces engaged by the providers, and how many are ready.").
			WithTarget(series("A", "count(stager_space_engaged)", "engaged")).
			WithTarget(series("B", "sum(stager_space_ready)", "ready"))).
		WithPanel(graph("Condition evaluations",
			"Stage condition evaluations per second, by result.").Unit("ops").
			WithTarget(series("A", `sum by (space, result) (rate(stager_condition_evaluations_total{`+space+`}[$__rate_interval]))`, "{{space}} {{result}}"))).
		WithPanel(graph("Condition evaluation latency (p95)",
			"95th percentile of the time to evaluate a condition on one CombinedStatus.").Unit("s").
			WithTarget(series("A", `histogram_quantile(0.95, sum by (le, space) (rate(stager_condition_evaluation_duration_seconds_bucket{`+space+`}[$__rate_interval])))`, "{{space}}"))).
		WithPanel(graph("Stage duration (median)",
			"Median time from a stage's start to its completion.").Unit("s").
			WithTarget(series("A", `histogram_quantile(0.5, sum by (le, space) (rate(stager_stage_duration_seconds_bucket{`+space+`}[$__rate_interval])))`, "{{space}}"))).
		WithPanel(graph("Reconcile errors",
			"Reconciles that ended in an API error, per second.").Unit("ops").
			WithTarget(series("A", `sum by (space) (rate(stager_reconcile_errors_total{`+space+`}[$__rate_interval]))`, "{{space}}"))).
		WithPanel(rowsTable("Deletions waiting", 24, 8,
			`Policies being deleted and how long, in seconds, their deletion has waited, normally for the finalizers of their BindingPolicies (KubeStellar's controller-manager removes its own): see the policy's Deleting condition, and the README's "Deletion is stuck".`).
			Unit("s").
			WithTarget(rows("A", `max by (space, policy) (time() - stager_policy_deletion_start_time_seconds{`+spacePolicy+`})`))).
		WithPanel(rowsTable("Held rollouts: suspended, awaiting approval or stalled", 12, 8,
			"Policies whose rollout is held: Suspended (spec.suspend), AwaitingApproval (the active stage waits for its StageApproval) or Stalled (the active stage is past its progressDeadline; the rollout keeps waiting and goes on by itself if the condition holds). Deadline left is the time, in seconds, until the active stage's progressDeadline passes (negative once past); awaiting approval, how long the stage has waited for its approval.").
			WithTarget(rows("A", `max by (space, policy, phase) (stager_policy_phase{`+spacePolicy+`, phase=~"Suspended|AwaitingApproval|Stalled"}) == 1`)).
			WithTarget(rows("B", `max by (space, policy) (stager_policy_progress_deadline_time_seconds{`+spacePolicy+`} - time())`)).
			WithTarget(rows("C", `max by (space, policy) (time() - stager_policy_awaiting_approval_since_seconds{`+spacePolicy+`})`))).
		WithPanel(figures("Suspended, awaiting approval and stalled policies",
			"How many policies are Suspended, AwaitingApproval or Stalled (past the active stage's progressDeadline).").
			WithTarget(series("A", `sum by (phase) (stager_policies{`+space+`, phase=~"Suspended|AwaitingApproval|Stalled"})`, "{{phase}}"))).
		WithPanel(rowsTable("Spaces per replica", 12, 8,
			"Which replica serves which space (stager_space_owner): with --coordination=sharded the replicas split the spaces, each served by one replica at a time; with leader election the leader serves them all.").
			WithTarget(rows("A", `max by (space, replica) (stager_space_owner{`+space+`})`))).
		WithPanel(graph("Spaces served, by replica",
			"How many spaces each replica serves over time: a dead replica's spaces move to the survivors, and come back when it returns.").
			WithTarget(series("A", `sum by (replica) (stager_space_owner{`+space+`})`, "{{replica}}"))).
		WithPanel(rowsTable("Waves", 24, 8,
			"Where each RolloutWave is: for each wave, step, space and ordered policy, the revision and its state. Completed, Progressing, GivenUp (Aborted or Stalled: no later step starts that revision), Waiting or Soaking (the wave holds the revision the policy asks for), Missing (no such policy in the space) or Down (the space's report is missing, disengaged or stale: the later steps hold). Each replica shows the spaces it serves.").
			WithTarget(rows("A", `max by (wave, step, space, policy, revision, state) (stager_wave_step{`+spacePolicy+`})`)).
			WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
				"excludeByName": map[string]bool{"Time": true, "Value": true},
				"indexByName":   map[string]int{"wave": 0, "step": 1, "space": 2, "policy": 3, "revision": 4, "state": 5},
			}})).
		WithPanel(graph("Wave trouble",
			"Spaces of each wave's steps that hold the later steps by not reporting (NoReport: no replica reports it; Disengaged: let go or unreachable; Stale: its report is older than the wave's reportStaleAfter), and failed reads of the hosting cluster's RolloutWaves per second, by space (a policy whose start they hold says WavesUnreadable).").
			WithTarget(series("A", `max by (wave, reason) (stager_wave_spaces_not_reporting)`, "{{wave}} not reporting: {{reason}}")).
			WithTarget(series("B", `sum by (space) (rate(stager_wave_read_errors_total{`+space+`}[$__rate_interval]))`, "{{space}} failed reads"))).
		WithPanel(rowsTable("Waiting to start: wave, change window, freeze", 24, 8,
			"Policies whose next start is held, by what holds it (stager_policy_waiting): WaitingForWave (a RolloutWave holds the revision), WaitingForWindow (the stage that would start is outside its change windows) or Frozen (a RolloutFreeze). Window opens in is the time, in seconds, until the waiting stage's next window opens.").
			Unit("s").
			WithTarget(rows("A", `max by (space, policy, reason) (stager_policy_waiting{`+spacePolicy+`}) == 1`)).
			WithTarget(rows("B", `max by (space, policy) (stager_policy_next_window_time_seconds{`+spacePolicy+`} - time())`)).
			WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}).
			WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
				"excludeByName": map[string]bool{"Time": true, "Value #A": true},
				"renameByName":  map[string]string{"Value #B": "Window opens in"},
			}}))
}
