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

package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/cmd/kubectl-stager/app"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// rollout creates a policy for the workload app (a Deployment, which turns
// available when its stage's WECs say so, and a ConfigMap, which never
// does), shaped by change, and returns it.
func rollout(t *testing.T, app string, change func(*v1alpha1.StagedBindingPolicy)) *v1alpha1.StagedBindingPolicy {
	t.Helper()
	for _, obj := range []client.Object{policytest.Deployment(namespace, app), policytest.ConfigMap(namespace, app)} {
		if err := suite.wds.Client.Create(suite.ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	p := policytest.ThreeStages(app, app)
	if change != nil {
		change(p)
	}
	if err := suite.wds.Client.Create(suite.ctx, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// place creates the BindingPolicy of a policy's stage, as the stager does,
// and waits until the simulator has resolved it and reported the status of
// its objects.
func place(t *testing.T, p *v1alpha1.StagedBindingPolicy, stage string) {
	t.Helper()
	var selectors []metav1.LabelSelector
	for _, s := range p.Spec.Stages {
		if s.Name == stage {
			selectors = s.ClusterSelectors
		}
	}
	bp := &ksv1alpha1.BindingPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name:            v1alpha1.StagePlacement(p.Name, stage).String(),
			Labels:          map[string]string{v1alpha1.PolicyLabel: p.Name, v1alpha1.StageLabel: stage},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(p, v1alpha1.GroupVersion.WithKind("StagedBindingPolicy"))},
		},
		Spec: ksv1alpha1.BindingPolicySpec{ClusterSelectors: selectors, Downsync: p.Spec.Downsync},
	}
	if err := suite.wds.Client.Create(suite.ctx, bp); err != nil {
		t.Fatal(err)
	}
	environment.Eventually(t, 30*time.Second, "the simulator to resolve "+bp.Name, func() error {
		statuses := &ksv1alpha1.CombinedStatusList{}
		if err := suite.wds.Client.List(suite.ctx, statuses, client.MatchingLabels{"status.kubestellar.io/binding-policy": bp.Name}); err != nil {
			return err
		}
		binding := &ksv1alpha1.Binding{}
		if err := suite.wds.Client.Get(suite.ctx, types.NamespacedName{Name: bp.Name}, binding); err != nil {
			return err
		}
		current := &ksv1alpha1.BindingPolicy{}
		if err := suite.wds.Client.Get(suite.ctx, types.NamespacedName{Name: bp.Name}, current); err != nil {
			return err
		}
		if len(statuses.Items) < 2 || current.Status.ObservedGeneration != current.Generation {
			return fmt.Errorf("%d CombinedStatuses, observed generation %d of %d", len(statuses.Items), current.Status.ObservedGeneration, current.Generation)
		}
		return nil
	})
}

// setStatus writes a policy's status as the stager would.
func setStatus(t *testing.T, p *v1alpha1.StagedBindingPolicy, status v1alpha1.StagedBindingPolicyStatus) {
	t.Helper()
	current := &v1alpha1.StagedBindingPolicy{}
	if err := suite.wds.Client.Get(suite.ctx, client.ObjectKeyFromObject(p), current); err != nil {
		t.Fatal(err)
	}
	status.ObservedGeneration = current.Generation
	current.Status = status
	if err := suite.wds.Client.Status().Update(suite.ctx, current); err != nil {
		t.Fatal(err)
	}
}

func at(t time.Time) *metav1.Time { return ptr.To(metav1.NewTime(t)) }

// trueCondition is a True condition of the policy's status, as of now.
func trueCondition(kind, reason, message string, now time.Time) metav1.Condition {
	return metav1.Condition{Type: kind, Status: metav1.ConditionTrue, Reason: reason, Message: message,
		LastTransitionTime: metav1.NewTime(now)}
}

// TestOutputs sets up three rollouts, as the stager and KubeStellar leave
// them, and compares what get, explain and eval print with golden files:
// web is in test (under a progress deadline), api awaits approval of prod,
// fresh has not started, soaked soaks in dev, shop rolls revision v2 out over
// v1 and has it in test, stores places prod's clusters in batches, one of
// them failed, checked is held by test's failed analysis, and queued is
// held by a wave that released shop's v2, and frozen has not started: a
// RolloutFreeze holds its first stage.
func TestOutputs(t *testing.T) {
	web := rollout(t, "web", func(p *v1alpha1.StagedBindingPolicy) {
		p.Spec.Stages[1].SoakDuration = &metav1.Duration{Duration: 10 * time.Minute}
		p.Spec.Stages[1].ProgressDeadline = &metav1.Duration{Duration: time.Hour}
		p.Spec.Stages[2].Approval = v1alpha1.ApprovalRequired
	})
	api := rollout(t, "api", func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Stages[2].Approval = v1alpha1.ApprovalRequired })
	fresh := rollout(t, "fresh", nil)
	soaked := rollout(t, "soaked", func(p *v1alpha1.StagedBindingPolicy) {
		p.Spec.Stages[0].SoakDuration = &metav1.Duration{Duration: 10 * time.Minute}
		p.Spec.Stages[0].ProgressDeadline = &metav1.Duration{Duration: time.Hour}
	})
	shop := rollout(t, "shop", func(p *v1alpha1.StagedBindingPolicy) {
		p.Spec.Placement = v1alpha1.PlacementAccumulate
		p.Spec.Revision = &v1alpha1.Revision{Name: "v2"}
		p.Spec.Stages[0].RegressionWatch = &v1alpha1.RegressionWatch{Interval: &metav1.Duration{Duration: 5 * time.Minute}}
	})
	stores := rollout(t, "stores", func(p *v1alpha1.StagedBindingPolicy) {
		p.Spec.Stages[2].MaxConcurrency = ptr.To(intstr.FromInt32(2))
		p.Spec.Stages[2].MaxFailures = ptr.To(intstr.FromInt32(1))
		p.Spec.Stages[2].ProgressDeadline = &metav1.Duration{Duration: 10 * time.Minute}
	})
	checked := rollout(t, "checked", func(p *v1alpha1.StagedBindingPolicy) {
		p.Spec.Stages[1].FailureCondition = `obj.results.exists(r, r.rows.exists(row, row.columns.exists(c, c.float == '0')))`
		p.Spec.Stages[1].Analysis = []v1alpha1.Analysis{
			{Name: "error-rate", Provider: "prom", Query: `sum(rate(http_errors_total{cluster=~"{{clusters}}"}[5m]))`, Count: 3,
				SuccessCondition: "result.all(v, v < 0.01)", FailureLimit: 1},
			{Name: "latency", Provider: "prom", Query: `max(http_p99_seconds{cluster=~"{{clusters}}"})`, SuccessCondition: "result.all(v, v < 0.5)",
				DryRun: true},
		}
	})
	queued := rollout(t, "queued", func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Revision = &v1alpha1.Revision{Name: "v2"} })
	frozen := rollout(t, "frozen", nil)
	place(t, web, "test")

	// Three hours after the last policy was made, at the next whole
	// minute: every age is "3h" (less than two minutes more for the
	// earlier ones), and a forecast's clock is a whole number of minutes
	// from now (forecastClocks).
	now := time.Time{}
	for _, p := range []*v1alpha1.StagedBindingPolicy{web, api, fresh, soaked, shop, stores, checked, queued, frozen} {
		if created := p.CreationTimestamp.Add(3 * time.Hour); created.After(now) {
			now = created
		}
	}
	now = now.Truncate(time.Minute).Add(time.Minute)
	setStatus(t, web, v1alpha1.StagedBindingPolicyStatus{ActiveStage: "test", Phase: v1alpha1.RolloutProgressing,
		Conditions: []metav1.Condition{
			trueCondition(v1alpha1.ConditionReady, v1alpha1.ReasonBindingPolicyInSync, `BindingPolicy web.stage.test places stage "test"`, now),
			trueCondition(v1alpha1.ConditionProgressing, v1alpha1.ReasonConditionNotMet,
				`stage "test": condition holds for 0 of 1 object(s); not yet for deployments.apps web/web`, now),
		},
		Stages: []v1alpha1.StageStatus{
			{Name: "dev", Phase: v1alpha1.StageSucceeded, StartTime: at(now.Add(-2 * time.Hour)), CompletionTime: at(now.Add(-20 * time.Minute)),
				BindingPolicy: "web.stage.dev", Message: "condition holds for all 1 object(s) on 2 cluster(s)"},
			{Name: "test", Phase: v1alpha1.StageActive, StartTime: at(now.Add(-20 * time.Minute)), BindingPolicy: "web.stage.test",
				ProgressDeadlineTime: at(now.Add(40 * time.Minute)), Message: "condition holds for 0 of 1 object(s); not yet for deployments.apps web/web"},
			{Name: "prod", Phase: v1alpha1.StagePending},
		}})
	setStatus(t, api, v1alpha1.StagedBindingPolicyStatus{ActiveStage: "prod", Phase: v1alpha1.RolloutAwaitingApproval,
		Conditions: []metav1.Condition{
			trueCondition(v1alpha1.ConditionProgressing, v1alpha1.ReasonAwaitingApproval,
				`stage "prod": waiting for approval: set the Approved condition of StageApproval api.stage.prod to True`, now),
		},
		Stages: []v1alpha1.StageStatus{
			{Name: "dev", Phase: v1alpha1.StageSucceeded, StartTime: at(now.Add(-150 * time.Minute)), CompletionTime: at(now.Add(-2 * time.Hour))},
			{Name: "test", Phase: v1alpha1.StageSucceeded, StartTime: at(now.Add(-2 * time.Hour)), CompletionTime: at(now.Add(-90 * time.Minute))},
			{Name: "prod", Phase: v1alpha1.StageAwaitingApproval, Approval: "api.stage.prod", ApprovalRequestedTime: at(now.Add(-90 * time.Minute)),
				Message: "waiting for approval: set the Approved condition of StageApproval api.stage.prod to True"},
		}})

	setStatus(t, soaked, v1alpha1.StagedBindingPolicyStatus{ActiveStage: "dev", Phase: v1alpha1.RolloutProgressing,
		Conditions: []metav1.Condition{
			trueCondition(v1alpha1.ConditionProgressing, v1alpha1.ReasonSoaking,
				`stage "dev": condition holds for all 1 object(s) on 2 cluster(s) since 2026-11-23T14:56:00Z; the stage is done at ... unless it stops holding (soakDuration 10m0s)`, now),
		},
		Stages: []v1alpha1.StageStatus{
			{Name: "dev", Phase: v1alpha1.StageActive, StartTime: at(now.Add(-30 * time.Minute)), ConditionMetTime: at(now.Add(-4 * time.Minute)),
				ProgressDeadlineTime: at(now.Add(30 * time.Minute)), BindingPolicy: "soaked.stage.dev",
				Message: "condition holds for all 1 object(s) on 2 cluster(s); soaking"},
			{Name: "test", Phase: v1alpha1.StagePending}, {Name: "prod", Phase: v1alpha1.StagePending},
		}})

	// shop's dev, done, regressed since: its regressionWatch reports it.
	const shopRegressed = `stage "dev" regressed: condition holds for 0 of 1 object(s); not yet for deployments.apps shop/shop-v2`
	setStatus(t, shop, v1alpha1.StagedBindingPolicyStatus{ActiveStage: "test", Phase: v1alpha1.RolloutProgressing,
		CurrentRevision: "v1", UpdateRevision: "v2",
		Wave: &v1alpha1.WaveStatus{Name: "regions", Step: "canary", Position: "1/3", State: v1alpha1.WaveReleased, Revision: "v2"},
		Conditions: []metav1.Condition{
			trueCondition(v1alpha1.ConditionProgressing, v1alpha1.ReasonWaitingForStatus,
				`stage "test": waiting for the CombinedStatus of deployments.apps shop/shop-v2`, now),
			trueCondition(v1alpha1.ConditionStageRegressed, v1alpha1.ReasonStageRegressed, shopRegressed, now),
		},
		Stages: []v1alpha1.StageStatus{
			{Name: "dev", Phase: v1alpha1.StageSucceeded, Revision: "v2", StartTime: at(now.Add(-30 * time.Minute)), CompletionTime: at(now.Add(-10 * time.Minute)),
				BindingPolicy: "shop.stage.dev.v2", LastRegressionCheckTime: at(now.Add(-2 * time.Minute)),
				Regressed: &v1alpha1.StageRegression{Time: metav1.NewTime(now.Add(-5 * time.Minute)), Message: shopRegressed}},
			{Name: "test", Phase: v1alpha1.StageActive, Revision: "v1", StartTime: at(now.Add(-10 * time.Minute)), BindingPolicy: "shop.stage.test.v2",
				Message: "waiting for the CombinedStatus of deployments.apps shop/shop-v2"},
			{Name: "prod", Phase: v1alpha1.StagePending, Revision: "v1"},
		},
		// Four earlier rollouts, one of them with a slow test: shop's
		// forecast takes the median per stage (test 25m, prod 31m).
		History: append(shopHistory(now, [][3]int{{10, 20, 30}, {12, 90, 30}, {10, 24, 40}, {11, 26, 32}}),
			v1alpha1.RevisionHistory{Revision: "v2", Outcome: v1alpha1.OutcomeProgressing, StartTime: metav1.NewTime(now.Add(-30 * time.Minute)),
				Stages: []v1alpha1.StageHistory{{Name: "dev", StartTime: metav1.NewTime(now.Add(-30 * time.Minute)), CompletionTime: metav1.NewTime(now.Add(-10 * time.Minute))}}}),
	})

	setStatus(t, stores, v1alpha1.StagedBindingPolicyStatus{ActiveStage: "prod", Phase: v1alpha1.RolloutProgressing,
		Conditions: []metav1.Condition{
			trueCondition(v1alpha1.ConditionProgressing, v1alpha1.ReasonBatchInProgress,
				`stage "prod": batch 2 of 3: waiting for prod1; 2 of 5 cluster(s) succeeded, 1 progressing, 1 failed`, now),
		},
		Stages: []v1alpha1.StageStatus{
			{Name: "dev", Phase: v1alpha1.StageSucceeded, StartTime: at(now.Add(-90 * time.Minute)), CompletionTime: at(now.Add(-80 * time.Minute))},
			{Name: "test", Phase: v1alpha1.StageSucceeded, StartTime: at(now.Add(-80 * time.Minute)), CompletionTime: at(now.Add(-70 * time.Minute))},
			{Name: "prod", Phase: v1alpha1.StageActive, StartTime: at(now.Add(-70 * time.Minute)), BindingPolicy: "stores.stage.prod",
				Message: "batch 2 of 3: waiting for prod1; 2 of 5 cluster(s) succeeded, 1 progressing, 1 failed",
				Clusters: &v1alpha1.StageClusters{Total: 5, Placed: 4, Succeeded: 2, Failed: 1, Batch: 2, Batches: 3,
					Clusters: []v1alpha1.ClusterStatus{{Name: "edge1", State: v1alpha1.ClusterFailed}, {Name: "prod1", State: v1alpha1.ClusterProgressing},
						{Name: "dev1", State: v1alpha1.ClusterSucceeded}, {Name: "dev2", State: v1alpha1.ClusterSucceeded}}}},
		}})

	held := `stage "test" failed: analysis "error-rate" is Failed after 2 measurement(s): 0 successful, 2 failed, 0 inconclusive; the last was Failed with [0.2]`
	setStatus(t, checked, v1alpha1.StagedBindingPolicyStatus{ActiveStage: "test", Phase: v1alpha1.RolloutStalled,
		Failure: &v1alpha1.RolloutFailure{Stage: "test", Reason: v1alpha1.ReasonAnalysisFailed, Action: v1alpha1.FailureHold, Message: held,
			Time: metav1.NewTime(now.Add(-5 * time.Minute)), SpecDigest: "0123"},
		Conditions: []metav1.Condition{
			{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonAnalysisFailed,
				Message: held + "; the rollout is held: change its spec or restart it to try the stage again", LastTransitionTime: metav1.NewTime(now)},
		},
		Stages: []v1alpha1.StageStatus{
			{Name: "dev", Phase: v1alpha1.StageSucceeded, StartTime: at(now.Add(-40 * time.Minute)), CompletionTime: at(now.Add(-20 * time.Minute))},
			{Name: "test", Phase: v1alpha1.StageActive, StartTime: at(now.Add(-20 * time.Minute)), PlacedTime: at(now.Add(-19 * time.Minute)),
				BindingPolicy: "checked.stage.test", Message: held,
				Analyses: []v1alpha1.AnalysisStatus{
					{Name: "error-rate", Phase: v1alpha1.AnalysisFailed, Failed: 2, Measurements: []v1alpha1.Measurement{
						{Time: metav1.NewTime(now.Add(-6 * time.Minute)), Phase: v1alpha1.MeasurementFailed, Value: "[0.05]"},
						{Time: metav1.NewTime(now.Add(-5 * time.Minute)), Phase: v1alpha1.MeasurementFailed, Value: "[0.2]"}}},
					{Name: "latency", Phase: v1alpha1.AnalysisRunning, DryRun: true, Inconclusive: 1, Measurements: []v1alpha1.Measurement{
						{Time: metav1.NewTime(now.Add(-6 * time.Minute)), Phase: v1alpha1.MeasurementInconclusive,
							Message: `MetricProvider "prom": querying https://prom:9090: context deadline exceeded`}}},
				}},
			{Name: "prod", Phase: v1alpha1.StagePending},
		}})

	setStatus(t, queued, v1alpha1.StagedBindingPolicyStatus{Phase: v1alpha1.RolloutPending,
		Conditions: []metav1.Condition{
			trueCondition(v1alpha1.ConditionWaitingForWave, "WaitingForEarlierSteps",
				`revision "v2" is held: wave regions step 2/3 (eu): waiting for revision v2 to complete in 1 of 1 earlier spaces: wds-canary (Progressing v2)`, now),
		},
		Wave: &v1alpha1.WaveStatus{Name: "regions", Step: "eu", Position: "2/3", State: v1alpha1.WaveHeld, Revision: "v2"}})

	setStatus(t, frozen, v1alpha1.StagedBindingPolicyStatus{Phase: v1alpha1.RolloutPending,
		Conditions: []metav1.Condition{
			trueCondition(v1alpha1.ConditionFrozen, "FreezeActive",
				`stage "dev" does not start: frozen by xmas-2026 until 2027-01-02 00:00 UTC (2027-01-02 01:00 CET Europe/Berlin): code freeze`, now),
		}})

	available := `obj.results.exists(r, r.name == 'deployments-aggregator' && r.rows.exists(row, row.columns.exists(c, c.float == '0')))`
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"get", []string{"get"}},
		{"get-wide", []string{"get", "-o", "wide"}},
		{"explain-web", []string{"explain", "web"}},
		{"explain-web-prod", []string{"explain", "web", "--stage", "prod"}},
		{"explain-api", []string{"explain", "api"}},
		{"explain-stores", []string{"explain", "stores"}},
		{"explain-checked", []string{"explain", "checked"}},
		{"explain-queued", []string{"explain", "queued"}},
		{"explain-shop", []string{"explain", "shop"}},
		{"explain-frozen", []string{"explain", "frozen"}},
		{"explain-shop-dev", []string{"explain", "shop", "--stage", "dev"}},
		{"eval-condition", []string{"eval", "web", "--condition", available}},
		{"eval-filter", []string{"eval", "web", "--filter", "downsyncClause.namespace == 'web'"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, now, "", tt.args...)
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			golden(t, tt.name, forecastClocks(out, now))
		})
	}

	t.Run("watch", func(t *testing.T) {
		// Not on a terminal: the first view, once, with absolute times.
		var out bytes.Buffer
		ctx, cancel := context.WithCancel(suite.ctx)
		defer time.AfterFunc(2*time.Second, cancel).Stop()
		cmd := app.New(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, func() time.Time { return now })
		cmd.SetArgs([]string{"--kubeconfig=" + suite.kubeconfig, "get", "--watch", "--interval=100ms"})
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Fatal(err)
		}
		golden(t, "watch", relativeClocks(out.String(), now))
	})
	t.Run("eval-invalid", func(t *testing.T) {
		out, err := run(t, now, "", "eval", "web", "--condition", "obj.results.exists(")
		if err == nil {
			t.Fatalf("an expression that does not compile was accepted: %s", out)
		}
		golden(t, "eval-invalid", out)
	})
	t.Run("eval-contained", func(t *testing.T) {
		// Equality over shared sub-lists walks 10^9 leaves in one call
		// that is never interrupted (issue 54's N2): the plugin evaluates
		// it as the stager does, in a worker it kills at the deadline, or
		// refuses it before it runs.
		hostile := `[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]].exists(v0, `
		for i := 1; i <= 9; i++ {
			hostile += fmt.Sprintf(`[[%s]].exists(v%d, `, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("v%d, ", i-1), 10), ", "), i)
		}
		hostile += `v9 != v9` + strings.Repeat(")", 10)
		start := time.Now()
		out, err := run(t, now, "", "eval", "web", "--condition", hostile)
		t.Logf("eval took %s: %v\n%s", time.Since(start), err, out)
		if took := time.Since(start); took > 30*time.Second {
			t.Errorf("eval of a hostile condition took %s", took)
		}
		if !strings.Contains(out, "evaluation timed out") && !strings.Contains(out, "was not run") {
			t.Errorf("eval of a hostile condition does not say it was stopped:\n%s", out)
		}
	})
	t.Run("completion", func(t *testing.T) {
		out, err := run(t, now, "", "__complete", "explain", "")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"web", "api", "fresh", "soaked", "shop", "stores", "checked"} {
			if !slices.Contains(strings.Split(out, "\n"), name) {
				t.Errorf("completing a policy name offers no %s:\n%s", name, out)
			}
		}
	})
	t.Run("get-json", func(t *testing.T) {
		out, err := run(t, now, "", "get", "web", "-o", "json")
		if err != nil {
			t.Fatal(err)
		}
		got := &v1alpha1.StagedBindingPolicy{}
		if err := json.Unmarshal([]byte(out), got); err != nil || got.Kind != "StagedBindingPolicy" || got.Status.ActiveStage != "test" {
			t.Errorf("-o json printed %v (%v): %s", got, err, out)
		}
	})
}

// shopHistory is one ended entry of status.history per element of
// minutes, the minutes each of dev, test and prod took, a day apart, the
// last ended a day before now.
func shopHistory(now time.Time, minutes [][3]int) []v1alpha1.RevisionHistory {
	var out []v1alpha1.RevisionHistory
	for i, took := range minutes {
		at := now.Add(-time.Duration(len(minutes)-i) * 24 * time.Hour)
		h := v1alpha1.RevisionHistory{Revision: fmt.Sprintf("v1-%d", i), Outcome: v1alpha1.OutcomeCompleted, StartTime: metav1.NewTime(at)}
		for j, name := range []string{"dev", "test", "prod"} {
			end := at.Add(time.Duration(took[j]) * time.Minute)
			h.Stages = append(h.Stages, v1alpha1.StageHistory{Name: name, StartTime: metav1.NewTime(at), CompletionTime: metav1.NewTime(end)})
			at = end
		}
		h.EndTime = ptr.To(metav1.NewTime(at))
		out = append(out, h)
	}
	return out
}

// forecastPattern matches the clock of a forecast ("~14:05 UTC", "~Mar 3
// 14:05 UTC").
var forecastPattern = regexp.MustCompile(`~(?:[A-Z][a-z]{2} \d{1,2} )?\d\d:\d\d UTC\b`)

// forecastClocks replaces each forecast's clock in out by its distance
// from now ("~<now+46m0s>"), so that an output stays the same whenever
// the test runs; now is at a whole minute.
func forecastClocks(out string, now time.Time) string {
	return forecastPattern.ReplaceAllStringFunc(out, func(clock string) string {
		now := now.UTC()
		layout, text := "15:04 UTC", clock[1:]
		if len(text) > len("15:04 UTC") {
			layout = "Jan 2 15:04 UTC"
		}
		t, err := time.Parse(layout, text)
		if err != nil {
			return clock
		}
		at := time.Date(now.Year(), now.Month(), now.Day(), t.Hour(), t.Minute(), 0, 0, time.UTC)
		if layout != "15:04 UTC" {
			at = time.Date(now.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), 0, 0, time.UTC)
		}
		if d := at.Sub(now); d < 0 {
			return fmt.Sprintf("~<now%v>", d)
		}
		return fmt.Sprintf("~<now+%v>", at.Sub(now))
	})
}

// clockPattern matches the times of day the live view prints.
var clockPattern = regexp.MustCompile(`\b\d\d:\d\d:\d\dZ\b`)

// relativeClocks replaces each time of day in out by its distance from now
// ("<now-90m>"), so that a view stays the same whenever the test runs.
func relativeClocks(out string, now time.Time) string {
	return clockPattern.ReplaceAllStringFunc(out, func(clock string) string {
		t, err := time.Parse("15:04:05Z", clock)
		if err != nil {
			return clock
		}
		now := now.UTC()
		at := time.Date(now.Year(), now.Month(), now.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.UTC)
		switch d := at.Sub(now); {
		case d > 12*time.Hour:
			at = at.Add(-24 * time.Hour)
		case d < -12*time.Hour:
			at = at.Add(24 * time.Hour)
		}
		return fmt.Sprintf("<now%+v>", at.Sub(now))
	})
}
