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
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// Stage marks of the STAGES column.
const (
	markSucceeded = "✓"
	markActive    = "▶"
	markAwaiting  = "?"
	markSkipped   = "-"
	markPending   = "·"
)

func newGetCommand(o *options) *cobra.Command {
	var output string
	var watch bool
	var interval time.Duration
	var spaces *spaceFlags
	var prom *promFlags
	cmd := &cobra.Command{
		Use:   "get [NAME]",
		Short: "Show where each staged rollout is",
		Long: `Show the StagedBindingPolicies of the WDS and where each rollout is.

STAGES marks each stage: ` + markSucceeded + ` done, ` + markActive + ` active, ` + markAwaiting + ` awaiting approval,
` + markSkipped + ` skipped, ` + markPending + ` not reached, ` + markRegressed + ` done and regressed since (its
regressionWatch); with spec.revision, "@" and the revision the stage
runs ("@v1→v2" while the active stage runs both). REVISION is the revision
being rolled out, after the current one and an arrow while they differ.
REASON is the Progressing condition's reason, or, while a stage waits for
its change window, WaitingForWindow with the stage and the time left
("WaitingForWindow(prod in 4h12m)"). WAVE, shown when a policy is in
a RolloutWave, is the wave and the step's position ("regions 2/3"), with
"held" while the wave holds the revision the spec names.
-o wide adds the active stage's clusters, the soak time left, the approval,
the progress deadline, the completion forecast (FORECAST: the median of each
stage left over the policy's earlier rollouts in status.history, or, with
--prometheus, over that Prometheus's stager_policy_stage_duration_seconds
where it has the stage; "-" when there is none, explain says why; "overdue
5m" past it) and what the stage waits for; -o yaml and -o json print the
objects.`,
		Example: `  # every rollout of the current context's WDS
  kubectl stager get

  # one rollout, with its clusters and what it waits for
  kubectl stager get web -o wide

  # with each stage's median over the last 30 days from Prometheus
  kubectl stager get -o wide --prometheus http://127.0.0.1:9090

  # follow every rollout live, stage by stage
  kubectl stager get --watch

  # every rollout of every WDS the stager serves (the current context being
  # its hosting cluster, where its kubeconfig Secrets live)
  kubectl stager get --all-spaces --kubeconfig-namespace kubestellar-stager

  # ... found from KubeFlex ControlPlanes instead
  kubectl stager get -A --provider kubeflex`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: o.completePolicies,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if prom.address != "" && (output != "wide" || watch) {
				return errors.New("--prometheus serves the FORECAST column of -o wide, without --watch")
			}
			if prom.space != "" && spaces.all {
				return errors.New("--prometheus-space names one space: with --all-spaces, each space's own name is used")
			}
			fc, err := newForecaster(prom, o.streams.ErrOut)
			if err != nil {
				return err
			}
			targets, err := o.targets(ctx, spaces)
			if err != nil {
				return err
			}
			if watch {
				return o.watch(ctx, targets, args, interval, spaces.all)
			}
			found, err := o.collect(ctx, targets, args, spaces.all)
			if err != nil {
				return err
			}
			switch output {
			case "yaml", "json":
				if spaces.all {
					return fmt.Errorf("-o %s shows one space's objects: name it with --context rather than --all-spaces", output)
				}
				policies := make([]v1alpha1.StagedBindingPolicy, 0, len(found))
				for _, f := range found {
					policies = append(policies, f.policy)
				}
				return printObjects(o.streams.Out, output, policies)
			case "", "wide":
				return o.printTable(ctx, found, output == "wide", spaces.all, fc)
			default:
				return fmt.Errorf("unknown output format %q: want wide, yaml or json", output)
			}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: wide, yaml or json")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "Redraw a live view of each rollout until interrupted: every stage with its mark, its clusters and what it says")
	cmd.Flags().DurationVar(&interval, "interval", 2*time.Second, "How often --watch reads the rollouts")
	spaces = addSpaceFlags(cmd.Flags())
	prom = addPromFlags(cmd.Flags())
	return cmd
}

// located is a policy and the space it lives in.
type located struct {
	target
	policy v1alpha1.StagedBindingPolicy
}

// collect reads the named policy, or every policy, of every target. With
// several spaces, a space that cannot be read is reported on the error
// stream and the others are shown.
func (o *options) collect(ctx context.Context, targets []target, names []string, all bool) ([]located, error) {
	var found []located
	for _, t := range targets {
		policies, err := listPolicies(ctx, t.client, names)
		if err != nil {
			if !all {
				return nil, err
			}
			if len(names) == 0 || !strings.Contains(err.Error(), "no StagedBindingPolicy") {
				fprintf(o.streams.ErrOut, "space %s: %v\n", t.space, err)
			}
			continue
		}
		for _, p := range policies {
			found = append(found, located{target: t, policy: p})
		}
	}
	return found, nil
}

// listPolicies reads the named policy, or every policy.
func listPolicies(ctx context.Context, c client.Client, names []string) ([]v1alpha1.StagedBindingPolicy, error) {
	if len(names) == 1 {
		p, err := getPolicy(ctx, c, names[0])
		if err != nil {
			return nil, err
		}
		return []v1alpha1.StagedBindingPolicy{*p}, nil
	}
	list := &v1alpha1.StagedBindingPolicyList{}
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing StagedBindingPolicies: %w", err)
	}
	return list.Items, nil
}

// printObjects prints the policies as YAML or JSON: one object, or a List.
func printObjects(out io.Writer, format string, policies []v1alpha1.StagedBindingPolicy) error {
	var printer printers.ResourcePrinter = &printers.JSONPrinter{}
	if format == "yaml" {
		printer = &printers.YAMLPrinter{}
	}
	kind := v1alpha1.GroupVersion.WithKind("StagedBindingPolicy")
	var obj runtime.Object
	if len(policies) == 1 {
		p := policies[0].DeepCopy()
		p.SetGroupVersionKind(kind)
		obj = p
	} else {
		list := &v1alpha1.StagedBindingPolicyList{Items: policies}
		list.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("StagedBindingPolicyList"))
		for i := range list.Items {
			list.Items[i].SetGroupVersionKind(kind)
		}
		obj = list
	}
	return printer.PrintObj(obj, out)
}

// printTable prints one row per policy, with its space's name first when
// all is set, forecasting with fc.
func (o *options) printTable(ctx context.Context, found []located, wide, all bool, fc *forecaster) error {
	now := o.now()
	w := printers.GetNewTabWriter(o.streams.Out)
	header := []string{"NAME", "STAGES", "PHASE", "REVISION", "REASON", "AGE"}
	if wide {
		header = []string{"NAME", "STAGES", "PHASE", "REVISION", "REASON", "CLUSTERS", "SOAK LEFT", "APPROVAL", "DEADLINE", "FORECAST", "AGE", "MESSAGE"}
	}
	waves := waveShown(found)
	if waves {
		header = slices.Insert(header, 4, "WAVE")
	}
	if all {
		header = append([]string{"SPACE"}, header...)
	}
	fmt.Fprintln(w, strings.Join(header, "\t"))
	for i := range found {
		p := &found[i].policy
		row := []string{p.Name, stageMarks(p), orNone(string(p.Status.Phase)), revisionSummary(p)}
		if waves {
			row = append(row, waveCell(p))
		}
		row = append(row, reasonCell(p, now))
		if wide {
			view, err := o.activeView(ctx, found[i].client, p, now)
			if err != nil {
				return err
			}
			f, _ := fc.forecast(ctx, found[i].space, p, now)
			row = append(row, view.clusters, view.soakLeft, view.approval, view.deadline, f.Short(now))
		}
		row = append(row, age(p.CreationTimestamp.Time, now))
		if wide {
			row = append(row, orNone(withRegression(p, reasonShown(p).Message)))
		}
		if all {
			row = append([]string{found[i].space}, row...)
		}
		fmt.Fprintln(w, strings.Join(printables(row), "\t"))
	}
	return w.Flush()
}

// stageMarks renders the stages of a policy with their marks: "dev✓ test▶ prod·".
func stageMarks(p *v1alpha1.StagedBindingPolicy) string {
	marks := make([]string, 0, len(p.Spec.Stages))
	for _, s := range p.Spec.Stages {
		mark := markPending
		if r := p.Status.StageNamed(s.Name); r != nil {
			switch r.Phase {
			case v1alpha1.StageSucceeded:
				mark = markSucceeded
				if r.Regressed != nil {
					mark = markRegressed
				}
			case v1alpha1.StageActive:
				mark = markActive
			case v1alpha1.StageAwaitingApproval:
				mark = markAwaiting
			case v1alpha1.StageSkipped:
				mark = markSkipped
			}
		}
		if revisioned(p) {
			mark += "@" + stageRevision(p, s.Name)
		}
		if r := p.Status.StageNamed(s.Name); r != nil && r.Clusters != nil {
			mark += batchMark(r.Clusters)
		}
		marks = append(marks, s.Name+mark)
	}
	return strings.Join(marks, " ")
}

// batchMark renders the clusters of a stage placed in batches in its
// stage mark: "(2/5✓)", with ",1✗" when some failed.
func batchMark(c *v1alpha1.StageClusters) string {
	mark := fmt.Sprintf("(%d/%d✓", c.Succeeded, c.Total)
	if failed := c.Failed + c.TimedOut; failed > 0 {
		mark += fmt.Sprintf(",%d✗", failed)
	}
	return mark + ")"
}

// batchSummary renders the clusters of a stage placed in batches as its
// record counts them: "batch 2 of 3: 2 succeeded, 1 progressing, 1
// failed, 1 to apply".
func batchSummary(c *v1alpha1.StageClusters) string {
	parts := []string{fmt.Sprintf("%d succeeded", c.Succeeded)}
	if progressing := c.Progressing(); progressing > 0 {
		parts = append(parts, fmt.Sprintf("%d progressing", progressing))
	}
	if c.Failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", c.Failed))
	}
	if c.TimedOut > 0 {
		parts = append(parts, fmt.Sprintf("%d timed out", c.TimedOut))
	}
	if toApply := c.ToApply(); toApply > 0 {
		parts = append(parts, fmt.Sprintf("%d to apply", toApply))
	}
	return fmt.Sprintf("batch %d of %d: %s", c.Batch, c.Batches, strings.Join(parts, ", "))
}

// failedClusters names the clusters the record says failed or timed out.
func failedClusters(c *v1alpha1.StageClusters) []string {
	var names []string
	for _, s := range c.Clusters {
		if s.State == v1alpha1.ClusterFailed || s.State == v1alpha1.ClusterTimedOut {
			names = append(names, s.Name+" ("+string(s.State)+")")
		}
	}
	return names
}

// revisioned reports whether a policy rolls out revisions.
func revisioned(p *v1alpha1.StagedBindingPolicy) bool {
	return p.Spec.Revision != nil || p.Status.UpdateRevision != "" || p.Status.CurrentRevision != ""
}

// revisionSummary renders the revision being rolled out: "-" without
// revisions, "v2" once it is the current one too, "v1→v2" while it is not.
func revisionSummary(p *v1alpha1.StagedBindingPolicy) string {
	current, update := p.Status.CurrentRevision, p.Status.UpdateRevision
	switch {
	case !revisioned(p):
		return "-"
	case update == "" && p.Spec.Revision != nil:
		update = p.Spec.Revision.Name // not picked up yet
	}
	if current == "" || current == update {
		return orNone(update)
	}
	return current + "→" + orNone(update)
}

// stageRevision renders the revision a stage runs: its record's, "-" for
// none, and for the active stage rolling out another, "<kept>→<update>".
func stageRevision(p *v1alpha1.StagedBindingPolicy, stage string) string {
	record := p.Status.StageNamed(stage)
	kept := ""
	if record != nil {
		kept = record.Revision
	}
	if kept == v1alpha1.Unrevisioned {
		kept = "unrevisioned"
	}
	if record != nil && record.Phase == v1alpha1.StageActive && kept != p.Status.UpdateRevision {
		if kept == "" {
			return "→" + p.Status.UpdateRevision
		}
		return kept + "→" + p.Status.UpdateRevision
	}
	if kept == "" {
		return "-"
	}
	return kept
}

// progressing returns the policy's Progressing condition, or an empty one.
func progressing(p *v1alpha1.StagedBindingPolicy) metav1.Condition {
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionProgressing); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// activeView is what the wide view and the watch show of the active stage.
type activeView struct {
	clusters, soakLeft, approval, deadline string
}

// activeView reads and renders the active stage's clusters, soak time left,
// approval and progress deadline.
func (o *options) activeView(ctx context.Context, c client.Client, p *v1alpha1.StagedBindingPolicy, now time.Time) (activeView, error) {
	view := activeView{clusters: "<none>", soakLeft: "-", approval: "-", deadline: "-"}
	stage, record := p.Spec.StageNamed(p.Status.ActiveStage), p.Status.StageNamed(p.Status.ActiveStage)
	if stage == nil || record == nil {
		return view, nil
	}
	if record.Phase == v1alpha1.StageActive || record.Phase == v1alpha1.StageSucceeded {
		objs, err := readStage(ctx, c, p, stage.Name)
		if err != nil {
			return view, err
		}
		if names := clusters(objs.binding); len(names) > 0 {
			view.clusters = strings.Join(names, ",")
		}
	}
	if record.Clusters != nil {
		view.clusters = batchSummary(record.Clusters)
	}
	if stage.SoakDuration != nil && record.ConditionMetTime != nil && record.Phase == v1alpha1.StageActive {
		view.soakLeft = left(record.ConditionMetTime.Add(stage.SoakDuration.Duration), now)
	}
	switch {
	case record.Phase == v1alpha1.StageAwaitingApproval && record.ApprovalRequestedTime != nil:
		view.approval = "awaiting for " + age(record.ApprovalRequestedTime.Time, now)
	case record.ApprovedTime != nil:
		view.approval = "approved by " + orNone(record.ApprovedBy)
	}
	if record.ProgressDeadlineTime != nil && record.Phase == v1alpha1.StageActive {
		view.deadline = left(record.ProgressDeadlineTime.Time, now)
	}
	return view, nil
}

// left tells how long until t, or how long ago it passed.
func left(t, now time.Time) string {
	if d := t.Sub(now); d > 0 {
		return "in " + age(now.Add(-d), now)
	}
	return "passed " + age(t, now) + " ago"
}

// orNone returns s, or "<none>" when it is empty.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
