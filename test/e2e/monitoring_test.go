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

package e2e

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
	"github.com/kubestellar/workload-stager/test/framework/prometheus"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

const (
	// scrapeInterval is Prometheus's scrape and rule evaluation interval.
	scrapeInterval = time.Second
	// rateInterval stands for Grafana's $__rate_interval: at least four scrapes.
	rateInterval = "10s"
	// stuckHorizon is how far ahead StagerRolloutStuck's expression is
	// evaluated: a rollout is stuck only after an hour in its stage. The
	// lookback delta (lookback) lets that evaluation see the samples taken
	// during the run, as if the rollout had not moved since.
	stuckHorizon = 61 * time.Minute
	// deletionHorizon is how far ahead StagerDeletionStuck's expression is
	// evaluated: a deletion is stuck only after 15 minutes.
	deletionHorizon = 16 * time.Minute
	// approvalHorizon is how far ahead StagerApprovalWaitingTooLong's
	// expression looks, past its threshold of a day: longer than the
	// lookback, so its time() is moved on instead of the evaluation time.
	approvalHorizon = 25 * time.Hour
	// waveName is the RolloutWave the test creates.
	waveName = "monitored"
	lookback = 2 * time.Hour
)

// TestDashboardAndAlerts scrapes the stager with a real Prometheus, loaded
// with the alerting rules of config/prometheus, while rollouts run in wds1
// and wds2 and a third space ("bare", without KubeStellar's API) is engaged
// but not ready, and a RolloutWave orders one of wds2's policies before
// wds1's. It then runs every query of the Grafana dashboard (and its
// variables) and every alert expression through Prometheus's HTTP API: each
// must return data, only for the run's spaces. The alerts for the blocked,
// stalled and aborted rollouts, the evaluation errors and the space that is
// not ready must be pending or firing. When the bare space is unregistered, its series go.
func TestDashboardAndAlerts(t *testing.T) {
	ctx := suite.ctx
	ensureWDS2(t)
	bare := startBareSpace(t)
	spaces := []string{"wds1", "wds2", bare}
	refused := registerRefusedSecret(t)

	root, err := environment.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dashboard, err := prometheus.LoadDashboard(filepath.Join(root, "config", "grafana", "stage-progress.json"))
	if err != nil {
		t.Fatal(err)
	}
	groups, err := prometheus.LoadRuleGroups(filepath.Join(root, "config", "prometheus", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	if err := prometheus.WriteRuleFile(rules, groups); err != nil {
		t.Fatal(err)
	}
	target := suite.stager.Flag("metrics-bind-address")
	// Prometheus scrapes over HTTPS as the stager's default requires, with
	// the token of a ServiceAccount bound to the metrics-reader ClusterRole.
	token, err := suite.stack.MetricsReaderToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	server, err := prometheus.Start(ctx, prometheus.Options{WorkDir: dir, Targets: []string{target}, BearerToken: token,
		ScrapeInterval: scrapeInterval, LookbackDelta: lookback, RuleFiles: []string{rules}})
	if err != nil {
		t.Fatalf("starting Prometheus: %v", err)
	}
	t.Cleanup(func() { _ = server.Stop() })
	start := time.Now()
	t.Logf("Prometheus at %s scrapes the stager at %s", server.URL, target)

	// wds1 rolls "metered" through all three stages; wds2 rolls it to test,
	// where it stays; wds2's "broken" has a condition that fails on the data.
	const metered, broken = "metered", "broken"
	for _, space := range []string{"wds1", "wds2"} {
		createWorkload(t, space, metered, false)
		p := policytest.ThreeStages(metered, metered)
		// Its prod, once done, is checked for regressions a minute later.
		p.Spec.Stages[2].Filter, p.Spec.Stages[2].Condition = policytest.Deployments, policytest.Available
		p.Spec.Stages[2].RegressionWatch = &v1alpha1.RegressionWatch{Interval: &metav1.Duration{Duration: time.Minute}}
		if err := wds(space).Create(ctx, p); err != nil {
			t.Fatalf("creating %s in %s: %v", metered, space, err)
		}
	}
	createWorkload(t, "wds2", broken, false)
	if err := wds("wds2").Create(ctx, brokenPolicy(broken)); err != nil {
		t.Fatalf("creating %s: %v", broken, err)
	}
	// wds2's "stalled" is past its first stage's progressDeadline, which
	// nothing meets; "paused" is suspended before it starts; "gated" awaits
	// the approval of its first stage; "revised" rolls revision v1 out, and
	// "undone" is aborted before it starts, with no revision to go back to;
	// "fleet" places prod's two clusters one at a time; "checked" has an
	// analysis.
	const stalled, paused, gated, revised, undone, fleet, checked = "stalled", "paused", "gated", "revised", "undone", "fleet", "checked"
	createWorkload(t, "wds2", stalled, false)
	createWorkload(t, "wds2", revised, false)
	createWorkload(t, "wds2", fleet, false)
	late := policytest.ThreeStages(stalled, stalled)
	late.Spec.Stages[0].ProgressDeadline = &metav1.Duration{Duration: time.Second}
	held := policytest.ThreeStages(paused, paused)
	held.Spec.Suspend = true
	waiting := policytest.ThreeStages(gated, gated)
	waiting.Spec.Stages[0].Approval = v1alpha1.ApprovalRequired
	revising := policytest.ThreeStages(revised, revised)
	revising.Spec.Revision = &v1alpha1.Revision{Name: "v1"}
	aborted := policytest.ThreeStages(undone, revised)
	aborted.Spec.Revision, aborted.Spec.Abort = &v1alpha1.Revision{Name: "v1"}, true
	// "nightly" waits for its first stage's change window, which opens
	// in about twelve hours (panel "Waiting to start").
	const nightly = "nightly"
	windowed := policytest.ThreeStages(nightly, nightly)
	windowed.Spec.Stages[0].Windows = []v1alpha1.ChangeWindow{{Schedule: fmt.Sprintf("0 %d * * *", time.Now().UTC().Add(12*time.Hour).Hour()),
		Duration: metav1.Duration{Duration: time.Minute}}}
	batched := policytest.Policy(fleet, map[string]string{policytest.AppLabel: fleet}, policytest.Stage("prod", policytest.Deployments, policytest.Available))
	batched.Spec.Stages[0].MaxConcurrency = ptr.To(intstr.FromInt32(1))
	// "checked" measures prod once through this run's Prometheus.
	createProvider(t, "monitoring", hostingv1alpha1.PrometheusProvider{Address: server.URL}, "wds2")
	createWorkload(t, "wds2", checked, false)
	measured := policytest.Policy(checked, map[string]string{policytest.AppLabel: checked}, policytest.Stage("prod", "", ""))
	measured.Spec.Stages[0].Analysis = []v1alpha1.Analysis{{Name: "up", Provider: "monitoring", Query: "vector(1)", SuccessCondition: "result == [1.0]"}}
	for _, p := range []*v1alpha1.StagedBindingPolicy{late, held, waiting, revising, aborted, batched, measured, windowed} {
		if err := wds("wds2").Create(ctx, p); err != nil {
			t.Fatalf("creating %s: %v", p.Name, err)
		}
	}
	// A wave orders "revised": wds2 first, then wds1, which has no such
	// policy, beside a space no replica serves, which holds nothing as it
	// is in the last step (panels "Waves" and "Wave trouble", alert
	// StagerWaveSpacesNotReporting).
	hosting := hostingClient(t)
	monitored := &hostingv1alpha1.RolloutWave{ObjectMeta: metav1.ObjectMeta{Name: waveName}, Spec: hostingv1alpha1.RolloutWaveSpec{
		Policies: []string{revised},
		Steps:    []hostingv1alpha1.WaveStep{{Name: "first", Spaces: []string{"wds2"}}, {Name: "then", Spaces: []string{"wds1", "unserved"}}}}}
	if err := hosting.Create(ctx, monitored); err != nil {
		t.Fatalf("creating RolloutWave %s: %v", monitored.Name, err)
	}
	t.Cleanup(func() { _ = hosting.Delete(context.Background(), monitored) })
	t.Cleanup(func() {
		policies("wds1").Delete(t, metered)
		for _, name := range []string{metered, broken, stalled, paused, gated, revised, undone, fleet, checked, nightly} {
			policies("wds2").Delete(t, name)
		}
	})
	// wds2's "deleting" is deleted while a finalizer nobody removes holds its
	// BindingPolicy, as KubeStellar's does while its controller-manager is down.
	const deleting = "deleting"
	holdDeletion(t, "wds2", deleting)
	for _, space := range []string{"wds1", "wds2"} {
		policies(space).WaitForActiveStage(t, metered, "dev")
		makeAvailable(space, metered, "dev")
		policies(space).WaitForActiveStage(t, metered, "test")
	}
	makeAvailable("wds1", metered, "test")
	makeAvailable("wds1", metered, "prod")
	policies("wds1").WaitForPhase(t, metered, v1alpha1.RolloutCompleted)
	environment.Eventually(t, timeout, "wds2/broken to be Blocked", func() error {
		if p := policies("wds2").Get(t, broken); p.Status.Phase != v1alpha1.RolloutBlocked {
			return fmt.Errorf("%s", policytest.Describe(p))
		}
		return nil
	})
	policies("wds2").WaitForPhase(t, stalled, v1alpha1.RolloutStalled)
	policies("wds2").WaitForPhase(t, paused, v1alpha1.RolloutSuspended)
	policies("wds2").WaitForPhase(t, gated, v1alpha1.RolloutAwaitingApproval)
	policies("wds2").WaitForActiveStage(t, revised, "dev")
	policies("wds2").WaitForPhase(t, undone, v1alpha1.RolloutAborted)
	policies("wds2").WaitFor(t, fleet, "a cluster of prod placed", func(p *v1alpha1.StagedBindingPolicy) bool {
		r := p.Status.StageNamed("prod")
		return r != nil && r.Clusters != nil && r.Clusters.Placed == 1
	})

	// wds2's "promoted" has its dev stage promoted, break-glass (alert
	// StagerStagePromoted); no admission policy guards spec.promotion here.
	const promoted = "promoted"
	createWorkload(t, "wds2", promoted, false)
	if err := wds("wds2").Create(ctx, policytest.ThreeStages(promoted, promoted)); err != nil {
		t.Fatalf("creating %s: %v", promoted, err)
	}
	t.Cleanup(func() { policies("wds2").Delete(t, promoted) })
	policies("wds2").WaitForActiveStage(t, promoted, "dev")
	promotion := &v1alpha1.StagedBindingPolicy{}
	if err := wds("wds2").Get(ctx, client.ObjectKey{Name: promoted}, promotion); err != nil {
		t.Fatalf("reading %s: %v", promoted, err)
	}
	before := promotion.DeepCopy()
	promotion.Spec.Promotion = &v1alpha1.Promotion{Stage: "dev", Reason: "e2e: the dashboard's promotion", RequestedBy: "e2e",
		RequestedAt: metav1.Now()}
	if err := wds("wds2").Patch(ctx, promotion, client.MergeFrom(before)); err != nil {
		t.Fatalf("promoting %s: %v", promoted, err)
	}
	policies("wds2").WaitFor(t, promoted, "dev promoted", func(p *v1alpha1.StagedBindingPolicy) bool {
		r := p.Status.StageNamed("dev")
		return r != nil && r.Promotion != nil
	})

	policies("wds2").WaitForCondition(t, nightly, v1alpha1.ConditionWaitingForWindow, metav1.ConditionTrue, v1alpha1.ReasonWaitingForWindow)
	policies("wds2").WaitFor(t, checked, "prod's analysis measured", func(p *v1alpha1.StagedBindingPolicy) bool {
		r := p.Status.StageNamed("prod")
		return r != nil && len(r.Analyses) == 1 && r.Analyses[0].Successful == 1
	})

	values := map[string]string{
		"datasource":      "prometheus",
		"space":           "(" + strings.Join(spaces, "|") + ")",
		"policy":          "(" + strings.Join([]string{metered, broken, deleting, stalled, paused, gated, revised, undone, fleet, checked, nightly, promoted}, "|") + ")",
		"__rate_interval": rateInterval,
		"__interval":      scrapeInterval.String(),
	}
	environment.Eventually(t, 2*time.Minute, "every dashboard query and alert to show the run", func() error {
		var problems []string
		problems = append(problems, checkVariables(ctx, server, dashboard, values, spaces, []string{metered, broken, deleting, stalled, paused, gated, revised, undone, fleet, checked, nightly, promoted})...)
		problems = append(problems, checkPanels(ctx, server, dashboard, values, spaces, start)...)
		problems = append(problems, checkAlerts(ctx, server, groups, spaces, bare, refused)...)
		if len(problems) > 0 {
			return fmt.Errorf("\n  %s", strings.Join(problems, "\n  "))
		}
		return nil
	})

	queries := 0
	for _, panel := range dashboard.AllPanels() {
		queries += len(panel.Targets)
	}
	alerts := 0
	for _, g := range groups {
		alerts += len(g.Rules)
	}
	t.Logf("%d panel queries, %d variables and %d alert expressions return data for %v", queries, len(dashboard.Templating.List)-1, alerts, spaces)

	// A space that goes away takes its series along.
	if err := environment.UnregisterKubeconfigSecret(ctx, suite.stack.Hosting.Client, stack.StagerSecretNamespace, bare); err != nil {
		t.Fatalf("unregistering %s: %v", bare, err)
	}
	environment.Eventually(t, time.Minute, "the series of "+bare+" to go", func() error {
		samples, err := server.Query(ctx, fmt.Sprintf(`{__name__=~"stager_.+", space=%q}`, bare), time.Now())
		if err != nil {
			return err
		}
		if len(samples) > 0 {
			return fmt.Errorf("%d series left, e.g. %v", len(samples), samples[0].Metric)
		}
		return nil
	})
}

// ensureWDS2 adds wds2 to the stack and registers it with the stager,
// unless an earlier test did.
func ensureWDS2(t *testing.T) {
	t.Helper()
	if _, ok := suite.stack.WDS["wds2"]; ok {
		return
	}
	if _, err := suite.stack.AddWDS(suite.ctx, "wds2"); err != nil {
		t.Fatalf("adding wds2: %v", err)
	}
	if err := prepareWDS(suite.ctx, "wds2"); err != nil {
		t.Fatalf("registering wds2: %v", err)
	}
}

// startBareSpace starts an API server without KubeStellar's or the stager's
// API and registers it with the stager: it is engaged, never ready.
func startBareSpace(t *testing.T) string {
	t.Helper()
	const name = "bare"
	space, err := environment.StartSpace(name)
	if err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() { _ = space.Stop() })
	if err := environment.RegisterKubeconfigSecret(suite.ctx, suite.stack.Hosting.Client, stack.StagerSecretNamespace, name, "", space.Kubeconfig()); err != nil {
		t.Fatalf("registering %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = environment.UnregisterKubeconfigSecret(context.Background(), suite.stack.Hosting.Client, stack.StagerSecretNamespace, name)
	})
	return name
}

// registerRefusedSecret registers a kubeconfig Secret that skips TLS
// verification, which the stager refuses to make a space of, and returns its name.
func registerRefusedSecret(t *testing.T) string {
	t.Helper()
	const name = "refused"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", InsecureSkipTLSVerify: true}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "unused"}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	raw, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := environment.RegisterKubeconfigSecret(suite.ctx, suite.stack.Hosting.Client, stack.StagerSecretNamespace, name, "", raw); err != nil {
		t.Fatalf("registering %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = environment.UnregisterKubeconfigSecret(context.Background(), suite.stack.Hosting.Client, stack.StagerSecretNamespace, name)
	})
	return name
}

// brokenPolicy is a one-stage policy whose condition compiles but fails on
// every CombinedStatus (there is no 100th row).
func brokenPolicy(name string) *v1alpha1.StagedBindingPolicy {
	return policytest.Policy(name, map[string]string{policytest.AppLabel: name},
		policytest.Stage("dev", policytest.Deployments, `obj.results[0].rows[99].columns[0].float == '1'`))
}

// checkVariables runs the dashboard's label_values() variable queries, as
// Grafana does, and checks that they offer the run's spaces and policies.
func checkVariables(ctx context.Context, server *prometheus.Server, d *prometheus.Dashboard, values map[string]string, spaces, policies []string) []string {
	var problems []string
	want := map[string][]string{"space": spaces, "policy": policies}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		selector, label, err := prometheus.LabelValuesQuery(v.Definition)
		if err == nil {
			selector, err = prometheus.Expand(selector, values)
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("variable %s: %v", v.Name, err))
			continue
		}
		got, err := server.LabelValues(ctx, label, selector)
		if err != nil {
			problems = append(problems, fmt.Sprintf("variable %s: %v", v.Name, err))
			continue
		}
		for _, w := range want[v.Name] {
			if !slices.Contains(got, w) {
				problems = append(problems, fmt.Sprintf("variable %s offers %v, not %s", v.Name, got, w))
			}
		}
	}
	return problems
}

// checkPanels runs every panel query as Grafana would (instant queries at
// now, others over the run) and checks that each returns a number, and
// only for the run's spaces; the health panel must show every space.
func checkPanels(ctx context.Context, server *prometheus.Server, d *prometheus.Dashboard, values map[string]string, spaces []string, start time.Time) []string {
	var problems []string
	for _, panel := range d.AllPanels() {
		for _, target := range panel.Targets {
			what := fmt.Sprintf("panel %q query %s", panel.Title, target.RefID)
			expr, err := prometheus.Expand(target.Expr, values)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", what, err))
				continue
			}
			var samples []prometheus.Sample
			if target.Instant {
				samples, err = server.Query(ctx, expr, time.Now())
			} else {
				var series []prometheus.Series
				series, err = server.QueryRange(ctx, expr, start, time.Now(), scrapeInterval)
				for _, s := range series {
					samples = append(samples, s.Values...)
				}
			}
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", what, err))
				continue
			}
			seen := map[string]bool{}
			finite := 0
			for _, s := range samples {
				if prometheus.Finite(s.Value) {
					finite++
				}
				if space, ok := s.Metric["space"]; ok {
					seen[space] = true
				}
			}
			if finite == 0 {
				problems = append(problems, fmt.Sprintf("%s returns no number: %s", what, expr))
			}
			for space := range seen {
				if !slices.Contains(spaces, space) {
					problems = append(problems, fmt.Sprintf("%s shows space %q, not one of the run's", what, space))
				}
			}
			if panel.Title == "Engaged spaces and their health" {
				for _, space := range spaces {
					if !seen[space] {
						problems = append(problems, fmt.Sprintf("%s misses space %s (has %v)", what, space, slices.Sorted(maps.Keys(seen))))
					}
				}
			}
		}
	}
	return problems
}

// checkAlerts evaluates every alert expression (StagerRolloutStuck
// stuckHorizon ahead, StagerDeletionStuck deletionHorizon ahead,
// StagerApprovalWaitingTooLong with time() approvalHorizon ahead) and checks
// that each returns data for the run's spaces (or its refused kubeconfig
// Secret), that Prometheus evaluates every rule without error, and that the
// blocked rollout, its evaluation errors, the bare space and the refused
// Secret raise alerts.
func checkAlerts(ctx context.Context, server *prometheus.Server, groups []prometheus.RuleGroup, spaces []string, bare, refused string) []string {
	var problems []string
	for _, g := range groups {
		for _, r := range g.Rules {
			at, expr := time.Now(), r.Expr
			switch r.Alert {
			case "StagerRolloutStuck":
				at = at.Add(stuckHorizon)
			case "StagerDeletionStuck":
				at = at.Add(deletionHorizon)
			case "StagerApprovalWaitingTooLong":
				expr = strings.ReplaceAll(expr, "time()", fmt.Sprintf("(time() + %d)", int(approvalHorizon.Seconds())))
			case "StagerStageRegressed":
				// wds1's metered prod is checked and healthy: its series is there, at 0.
				expr = strings.ReplaceAll(expr, "== 1", ">= 0")
			}
			samples, err := server.Query(ctx, expr, at)
			if err != nil {
				problems = append(problems, fmt.Sprintf("alert %s: %v", r.Alert, err))
				continue
			}
			if len(samples) == 0 {
				problems = append(problems, fmt.Sprintf("alert %s: its expression returns nothing", r.Alert))
			}
			for _, s := range samples {
				if !slices.Contains(spaces, s.Metric["space"]) && s.Metric["secret"] != refused && s.Metric["wave"] != waveName {
					problems = append(problems, fmt.Sprintf("alert %s: series %v is not of the run's spaces", r.Alert, s.Metric))
				}
			}
		}
	}

	states, err := server.Rules(ctx)
	if err != nil {
		return append(problems, err.Error())
	}
	active := map[string][]string{}
	for _, st := range states {
		if st.Health != "ok" {
			problems = append(problems, fmt.Sprintf("rule %s: health %q %s", st.Name, st.Health, st.LastError))
		}
		for _, a := range st.Alerts {
			active[st.Name] = append(active[st.Name], a["space"]+"/"+a["policy"]+a["secret"]+a["wave"])
		}
	}
	for alert, want := range map[string]string{
		"StagerRolloutBlocked":            "wds2/broken",
		"StagerRolloutStalled":            "wds2/stalled",
		"StagerRolloutAborted":            "wds2/undone",
		"StagerConditionEvaluationErrors": "wds2/",
		"StagerSpaceNotReady":             bare + "/",
		"StagerKubeconfigSecretRefused":   "/" + refused,
		"StagerWaveSpacesNotReporting":    "/" + waveName,
	} {
		if !slices.Contains(active[alert], want) {
			problems = append(problems, fmt.Sprintf("alert %s is not pending or firing for %s (active: %v)", alert, want, active[alert]))
		}
	}
	return problems
}

// holdDeletion creates a policy, holds its first stage's BindingPolicy with a
// finalizer nobody removes and deletes the policy, which then waits; the
// test's cleanup releases the BindingPolicy and waits until the policy is gone.
func holdDeletion(t *testing.T, space, name string) {
	t.Helper()
	const hold = "e2e.kubestellar.io/hold"
	ctx := suite.ctx
	createWorkload(t, space, name, false)
	if err := wds(space).Create(ctx, policytest.ThreeStages(name, name)); err != nil {
		t.Fatalf("creating %s in %s: %v", name, space, err)
	}
	policies(space).WaitForActiveStage(t, name, "dev")
	bpName := v1alpha1.StagePlacement(name, "dev").String()
	changeFinalizers := func(change func(*ksv1alpha1.BindingPolicy)) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			bp := &ksv1alpha1.BindingPolicy{}
			if err := wds(space).Get(ctx, types.NamespacedName{Name: bpName}, bp); err != nil {
				return err
			}
			change(bp)
			return wds(space).Update(ctx, bp)
		})
		if err != nil {
			t.Fatalf("changing the finalizers of BindingPolicy %s in %s: %v", bpName, space, err)
		}
	}
	environment.Eventually(t, timeout, "BindingPolicy "+bpName, func() error {
		return wds(space).Get(ctx, types.NamespacedName{Name: bpName}, &ksv1alpha1.BindingPolicy{})
	})
	changeFinalizers(func(bp *ksv1alpha1.BindingPolicy) { controllerutil.AddFinalizer(bp, hold) })
	t.Cleanup(func() {
		changeFinalizers(func(bp *ksv1alpha1.BindingPolicy) { controllerutil.RemoveFinalizer(bp, hold) })
		policies(space).WaitGone(t, name) // once released
	})
	if err := wds(space).Delete(ctx, &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("deleting %s in %s: %v", name, space, err)
	}
	policies(space).WaitFor(t, name, "to wait for its BindingPolicy's finalizers", func(p *v1alpha1.StagedBindingPolicy) bool {
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionDeleting)
		return c != nil && strings.Contains(c.Message, hold)
	})
}
