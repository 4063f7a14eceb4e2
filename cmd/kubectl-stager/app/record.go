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
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/analysis"
	"github.com/kubestellar/workload-stager/internal/expression"
	"github.com/kubestellar/workload-stager/internal/gatetest"
	"github.com/kubestellar/workload-stager/internal/rollout"
	"github.com/kubestellar/workload-stager/providers/kubeconfig"
)

func newRecordCommand(o *options) *cobra.Command {
	var stageName, dir string
	var withAnalysis bool
	var q queryFlags
	cmd := &cobra.Command{
		Use:   "record NAME [--stage S] [--analysis] -o DIR",
		Short: "Record what a stage's gates read into a GateTest that `kubectl stager test` runs",
		Long: `Write, from the live WDS, what the gates of one stage of a policy (the active
one unless --stage names another) read, as plain YAML files in DIR: the
policy (its spec only), the stage's Binding, the CombinedStatuses its filter
selects (stripped to what the gates read), and a gatetest.yaml whose one case
expects what the controller recorded for the stage in the policy's status.
With --analysis, one answer to each of the stage's analysis queries is
taken too, as eval --analysis takes it, and recorded. No Secret, no
MetricProvider and no credential is written; the CombinedStatus of a Secret
is left out. Edit the inputs or the expectation, then run
kubectl stager test DIR.`,
		Example: `  # record dev's gates, test them, then break them on purpose
  kubectl stager record web --stage dev -o web-dev
  kubectl stager test web-dev`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completePolicies,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return errors.New("give the directory to write to with -o")
			}
			return o.record(cmd.Context(), args[0], stageName, dir, withAnalysis, q)
		},
	}
	cmd.Flags().StringVar(&stageName, "stage", "", "The stage to record (default: the active stage)")
	cmd.Flags().StringVarP(&dir, "output-dir", "o", "", "The directory to write to (created; it must not hold a gatetest.yaml)")
	cmd.Flags().BoolVar(&withAnalysis, "analysis", false, "Take and record one answer to each of the stage's analysis queries")
	cmd.Flags().StringVar(&q.hostingContext, "hosting-context", "",
		"With --analysis, the kubeconfig context of the stager's hosting cluster, where the MetricProviders are (default: the current context)")
	cmd.Flags().StringVar(&q.secretNamespace, "metric-provider-secret-namespace", kubeconfig.DefaultNamespace,
		"With --analysis, the namespace of the Secrets MetricProviders name, as the stager's flag of the same name")
	cmd.Flags().StringVar(&q.space, "space", "", "With --analysis, the space's name as the stager knows it")
	cmd.Flags().BoolVar(&q.allowInsecure, "allow-insecure-metric-providers", false,
		"With --analysis, let the MetricProvider be plain http, as the stager's flag of the same name")
	return cmd
}

// recording is what record writes.
type recording struct {
	files map[string][]byte
	test  gatetest.File
}

// record writes the recording of a stage to dir.
func (o *options) record(ctx context.Context, name, stageName, dir string, withAnalysis bool, q queryFlags) error {
	c, p, stage, err := o.policyStage(ctx, name, stageName)
	if err != nil {
		return err
	}
	if stage.Batched() {
		return fmt.Errorf("stage %q of %s is placed in batches: gate tests do not judge a batched stage", stage.Name, p.Name)
	}
	expect, err := recordedExpectation(p, stage.Name)
	if err != nil {
		return err
	}
	objs, err := readStage(ctx, c, p, stage.Name)
	if err != nil {
		return err
	}
	if objs.binding == nil && expect.Reason != v1alpha1.ReasonWaitingForBinding {
		return fmt.Errorf("stage %q of %s has no Binding now (the controller recorded %s): nothing to record; record a stage while it is placed",
			stage.Name, p.Name, expect.Outcome)
	}
	rec := recording{files: map[string][]byte{}}
	c0 := gatetest.Case{Name: fmt.Sprintf("stage %s of %s as recorded", stage.Name, p.Name), Stage: stage.Name,
		Now: ptrTime(metav1.NewTime(o.now().UTC().Truncate(time.Second))), Expect: expect}
	if err := rec.add("policy.yaml", strippedPolicy(p)); err != nil {
		return err
	}
	if objs.binding != nil {
		if err := rec.add("binding.yaml", strippedBinding(objs.binding)); err != nil {
			return err
		}
		c0.Inputs.Binding = "binding.yaml"
	}
	engine, err := newEngine()
	if err != nil {
		return err
	}
	defer engine.Close()
	statuses, left := selectedStatuses(engine, stage, objs)
	for _, l := range left {
		fprintf(o.streams.ErrOut, "Left out the CombinedStatus of %s: record never writes a Secret's status.\n", l)
	}
	if len(statuses) > 0 {
		var b bytes.Buffer
		for i, cs := range statuses {
			data, err := yaml.Marshal(cs)
			if err != nil {
				return fmt.Errorf("writing CombinedStatus %s: %w", cs.Name, err)
			}
			if i > 0 {
				b.WriteString("---\n")
			}
			b.Write(data)
		}
		rec.files["combinedstatuses.yaml"] = b.Bytes()
		c0.Inputs.CombinedStatuses = []string{"combinedstatuses.yaml"}
	}
	if withAnalysis && len(stage.Analysis) > 0 {
		answers, err := o.recordAnswers(ctx, p, stage, objs, q)
		if err != nil {
			return err
		}
		c0.Inputs.Analyses = map[string]gatetest.AnalysisInput{}
		for _, a := range stage.Analysis {
			file := "analysis-" + fileSafe(a.Name) + ".yaml"
			if err := rec.add(file, gatetest.Answers{Answers: []gatetest.Answer{answers[a.Name]}}); err != nil {
				return err
			}
			c0.Inputs.Analyses[a.Name] = gatetest.AnalysisInput{File: file}
		}
	}
	rec.test = gatetest.File{Kind: gatetest.Kind, APIVersion: gatetest.APIVersion, Policy: "policy.yaml", Cases: []gatetest.Case{c0}}
	if err := rec.add("gatetest.yaml", rec.test); err != nil {
		return err
	}
	if err := rec.write(dir); err != nil {
		return err
	}
	fprintf(o.streams.Out, "Recorded stage %s of %s in %s: the controller recorded %s %s; run kubectl stager test %s\n",
		stage.Name, p.Name, dir, expect.Outcome, expect.Reason, dir)
	return nil
}

func ptrTime(t metav1.Time) *metav1.Time { return &t }

// gateReasons are the reasons of an active stage that its gates give.
var gateReasons = []string{v1alpha1.ReasonConditionNotMet, v1alpha1.ReasonWaitingForStatus, v1alpha1.ReasonNoObjectsSelected,
	v1alpha1.ReasonWaitingForBinding, v1alpha1.ReasonNoClustersSelected, v1alpha1.ReasonBindingPolicyPending,
	v1alpha1.ReasonAnalysisRunning}

// blockingReasons are the reasons of an expression that stops the rollout.
var blockingReasons = []string{v1alpha1.ReasonInvalidExpression, v1alpha1.ReasonExpressionTooCostly, v1alpha1.ReasonEvaluationError}

// recordedExpectation is what the controller recorded for the named stage
// in the policy's status, as a GateTest expectation: a failure of the
// stage, an expression that blocks the rollout, a stage done, or what
// the active stage's gates wait for.
func recordedExpectation(p *v1alpha1.StagedBindingPolicy, stage string) (gatetest.Expect, error) {
	if f := p.Status.Failure; f != nil && f.Stage == stage {
		outcome := rollout.GateFailed
		if f.Reason == v1alpha1.ReasonAnalysisInconclusive {
			outcome = rollout.GateInconclusive
		}
		return gatetest.Expect{Outcome: outcome, Reason: f.Reason, Message: f.Message}, nil
	}
	progressing := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionProgressing)
	if progressing != nil && p.Status.ActiveStage == stage && slices.Contains(blockingReasons, progressing.Reason) {
		return gatetest.Expect{Outcome: rollout.GateBlocked, Reason: progressing.Reason}, nil
	}
	record := p.Status.StageNamed(stage)
	switch {
	case record == nil || record.Phase == v1alpha1.StagePending:
		return gatetest.Expect{}, fmt.Errorf("stage %q of %s has not started: the controller has recorded nothing for it", stage, p.Name)
	case record.Phase == v1alpha1.StageSucceeded:
		return gatetest.Expect{Outcome: rollout.GateDone, Message: record.Message}, nil
	case record.Phase == v1alpha1.StageActive && p.Status.ActiveStage == stage && progressing != nil:
		switch {
		case slices.Contains(gateReasons, progressing.Reason):
			return gatetest.Expect{Outcome: rollout.GateNotDone, Reason: progressing.Reason, Message: record.Message}, nil
		case progressing.Reason == v1alpha1.ReasonStageAdvanced || progressing.Reason == v1alpha1.ReasonSoaking:
			return gatetest.Expect{Outcome: rollout.GateDone}, nil
		case progressing.Reason == v1alpha1.ReasonProgressDeadlineExceeded:
			return gatetest.Expect{Outcome: rollout.GateNotDone}, nil
		}
		return gatetest.Expect{}, fmt.Errorf("stage %q of %s waits for %s, not for its gates: nothing to record", stage, p.Name, progressing.Reason)
	}
	return gatetest.Expect{}, fmt.Errorf("stage %q of %s is %s: nothing of its gates to record", stage, p.Name, record.Phase)
}

// selectedStatuses returns the CombinedStatuses the stage's gates read
// (those of the objects its filter selects), stripped, and names the
// objects whose statuses were left out: Secrets'.
func selectedStatuses(engine *expression.Engine, stage *v1alpha1.Stage, objs stageObjects) ([]*ksv1alpha1.CombinedStatus, []string) {
	if objs.binding == nil || objs.bindingPolicy == nil {
		return nil, nil
	}
	e, err := rollout.ExplainStage(engine, *stage, objs.bindingPolicy, objs.binding, objs.statuses)
	if err != nil {
		// The expressions do not compile: every status the stage's
		// Binding has is recorded, for the test to show the error on.
		e = rollout.StageExplanation{}
		for i := range objs.statuses {
			e.Objects = append(e.Objects, rollout.ObjectExplanation{Selected: true, CombinedStatus: &objs.statuses[i]})
		}
	}
	var out []*ksv1alpha1.CombinedStatus
	var left []string
	for _, obj := range e.Objects {
		if !obj.Selected || obj.CombinedStatus == nil {
			continue
		}
		cs := obj.CombinedStatus
		if cs.Labels[rollout.StatusLabelResource] == "secrets" && cs.Labels[rollout.StatusLabelAPIGroup] == "" {
			left = append(left, obj.Object)
			continue
		}
		out = append(out, strippedStatus(cs))
	}
	return out, left
}

// recordAnswers takes one answer to each of the stage's analysis queries,
// as eval --analysis does.
func (o *options) recordAnswers(ctx context.Context, p *v1alpha1.StagedBindingPolicy, stage *v1alpha1.Stage, objs stageObjects,
	q queryFlags) (map[string]gatetest.Answer, error) {
	hosting, err := o.hostingClient(q.hostingContext)
	if err != nil {
		return nil, err
	}
	providers := &analysis.Providers{Reader: hosting, Options: analysis.Options{AllowInsecure: q.allowInsecure,
		Timeout: analysis.DefaultTimeout, MaxResponseBytes: analysis.DefaultMaxResponseBytes, SecretNamespace: q.secretNamespace}}
	answers := map[string]gatetest.Answer{}
	for _, a := range stage.Analysis {
		qc := analysis.Context{Space: q.space, Policy: p.Name, Stage: stage.Name, Revision: p.Status.UpdateRevision,
			Clusters: analysis.ClusterNames(objs.binding)}
		at := metav1.NewTime(o.now().UTC().Truncate(time.Second))
		var answer gatetest.Answer
		var queryErr error
		if a.Web != nil {
			var body []byte
			body, queryErr = providers.Fetch(ctx, q.space, a.Provider, analysis.RenderWeb(a.Web, qc))
			answer = gatetest.Answer{Time: &at, Answer: body}
		} else {
			var values []float64
			values, queryErr = providers.Query(ctx, q.space, a.Provider, analysis.Render(a.Query, qc))
			answer = gatetest.Answer{Time: &at, Values: values}
		}
		if queryErr != nil {
			answer = gatetest.Answer{Time: &at, Error: analysis.Detail(queryErr)}
		}
		answers[a.Name] = answer
	}
	return answers, nil
}

// strippedPolicy is the policy's name and spec.
func strippedPolicy(p *v1alpha1.StagedBindingPolicy) *v1alpha1.StagedBindingPolicy {
	return &v1alpha1.StagedBindingPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "StagedBindingPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: p.Name},
		Spec:       *p.Spec.DeepCopy(),
	}
}

// strippedBinding is the Binding's name, its owner BindingPolicy and its spec.
func strippedBinding(b *ksv1alpha1.Binding) *ksv1alpha1.Binding {
	out := &ksv1alpha1.Binding{
		TypeMeta:   metav1.TypeMeta{APIVersion: ksv1alpha1.GroupVersion.String(), Kind: "Binding"},
		ObjectMeta: metav1.ObjectMeta{Name: b.Name},
		Spec:       *b.Spec.DeepCopy(),
	}
	for _, ref := range b.OwnerReferences {
		if ref.Kind == "BindingPolicy" {
			out.OwnerReferences = append(out.OwnerReferences, metav1.OwnerReference{APIVersion: ref.APIVersion, Kind: ref.Kind,
				Name: ref.Name, UID: ref.UID})
		}
	}
	return out
}

// strippedStatus is what the gates read of a CombinedStatus: its name (which
// ends with its BindingPolicy's UID), the labels naming its object and
// BindingPolicy, and its results.
func strippedStatus(cs *ksv1alpha1.CombinedStatus) *ksv1alpha1.CombinedStatus {
	labels := map[string]string{}
	for _, k := range []string{rollout.StatusLabelAPIGroup, rollout.StatusLabelResource, rollout.StatusLabelNamespace,
		rollout.StatusLabelName, rollout.StatusLabelBindingPolicy} {
		if v, ok := cs.Labels[k]; ok {
			labels[k] = v
		}
	}
	return &ksv1alpha1.CombinedStatus{
		TypeMeta:   metav1.TypeMeta{APIVersion: ksv1alpha1.GroupVersion.String(), Kind: "CombinedStatus"},
		ObjectMeta: metav1.ObjectMeta{Name: cs.Name, Namespace: cs.Namespace, Labels: labels},
		Results:    slices.Clone(cs.Results),
	}
}

// fileSafe keeps the letters, digits and '-' of a name for a file name;
// anything else, '.' too (no name may be . or ..), becomes '_'.
func fileSafe(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, name)
}

// add marshals obj as the file name.
func (r *recording) add(name string, obj any) error {
	data, err := yaml.Marshal(obj)
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	r.files[name] = data
	return nil
}

// write writes the files to dir, which must not hold a gatetest.yaml.
func (r *recording) write(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "gatetest.yaml")); err == nil {
		return fmt.Errorf("%s already holds a gatetest.yaml: choose another directory", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	names := make([]string, 0, len(r.files))
	for name := range r.files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), r.files[name], 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}
