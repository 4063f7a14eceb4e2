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

package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/cmd/stager/app"
	"github.com/kubestellar/workload-stager/internal/controller/stagedbindingpolicy"
	"github.com/kubestellar/workload-stager/internal/expression"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// startClockedController runs, until the test ends, the controller of
// space s in this process under clk, as the stager runs a space's (its
// cache narrowed and indexed), so that a test can move time on; more
// changes its options.
func startClockedController(t *testing.T, s *space, clk *clocktesting.FakeClock, more ...func(*stagedbindingpolicy.Options)) {
	t.Helper()
	ctx, cancel := context.WithCancel(suite.ctx)
	scheme, err := app.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := cluster.New(s.Config, func(o *cluster.Options) {
		o.Scheme = scheme
		o.Cache = stagedbindingpolicy.NarrowCache(o.Cache)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := stagedbindingpolicy.IndexFields(ctx, cl.GetCache()); err != nil {
		t.Fatal(err)
	}
	clusterDone := make(chan struct{})
	go func() { defer close(clusterDone); _ = cl.Start(ctx) }()
	if !cl.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	engine, err := expression.NewEngine()
	if err != nil {
		t.Fatal(err)
	}
	opts := stagedbindingpolicy.Options{
		MaxConcurrentReconciles: 2, ReconcileTimeout: reconcileTimeout, Logger: testr.New(t), Clock: clk}
	for _, f := range more {
		f(&opts)
	}
	ctrl, err := stagedbindingpolicy.NewController(s.Name, cl, engine, opts)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ctrl.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the controller stopped with %v", err)
		}
		<-clusterDone
	})
}

// TestRegressionInDevWhileProdRollsOut runs two policies dev → prod under
// Accumulate in one space, each with a regressionWatch (interval 1m) on
// dev: v1 completes, v2 is done in dev and rolls out in prod, and dev's
// v2 turns unhealthy. Under a fake clock moved past the interval: with
// onRegression Abort the rollout aborts (status.failure StageRegressed,
// prod back on v1 alone); without, StageRegressed is reported, prod keeps
// rolling out v2, and dev recovers once healthy again.
func TestRegressionInDevWhileProdRollsOut(t *testing.T) {
	const app = "regress"
	s := newSpace(t, "wds-regress", true)
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	startClockedController(t, s, clk)
	createRevisions(t, s, app, "v1", "v2")
	names := map[v1alpha1.RegressionAction]string{v1alpha1.RegressionAbort: "web-abort", v1alpha1.RegressionNone: "web-report"}
	for action, name := range names {
		dev := policytest.Stage("dev", policytest.Deployments, policytest.Available)
		dev.RegressionWatch = &v1alpha1.RegressionWatch{Interval: &metav1.Duration{Duration: time.Minute}, OnRegression: action}
		p := policytest.Policy(name, map[string]string{policytest.AppLabel: app},
			dev, policytest.Stage("prod", policytest.Deployments, policytest.Available))
		p.Spec.Placement = v1alpha1.PlacementAccumulate
		p.Spec.Revision = &v1alpha1.Revision{Name: "v1"}
		create(t, s, p)
	}
	ps := policies(s)
	open := func(name, stage, revision string, available bool) {
		s.availability.SetAvailable(v1alpha1.StagePlacement(name, stage).At(revision).String(), available)
	}
	for _, name := range names {
		open(name, "dev", "v1", true)
		open(name, "prod", "v1", true)
	}
	s.sim.Resync()
	for _, name := range names {
		ps.WaitFor(t, name, "v1 completed", func(p *v1alpha1.StagedBindingPolicy) bool {
			return p.Status.Phase == v1alpha1.RolloutCompleted && p.Status.CurrentRevision == "v1"
		})
		updateObject(t, s, name, func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Revision.Name = "v2" })
		open(name, "dev", "v2", true)
	}
	s.sim.Resync()
	for _, name := range names {
		ps.WaitFor(t, name, "v2 done in dev, rolling out in prod", func(p *v1alpha1.StagedBindingPolicy) bool {
			dev := p.Status.StageNamed("dev")
			return p.Status.UpdateRevision == "v2" && p.Status.ActiveStage == "prod" && dev != nil && dev.Phase == v1alpha1.StageSucceeded
		})
		waitForBindingPolicies(t, s, name, "dev.v2", "prod.v1", "prod.v2")
	}
	if p := ps.Get(t, names[v1alpha1.RegressionAbort]); meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionStageRegressed) != nil {
		t.Fatalf("StageRegressed before any regression: %s", policytest.Describe(p))
	}

	// dev's v2 turns unhealthy; the checks are due once the clock has moved past the interval.
	for _, name := range names {
		open(name, "dev", "v2", false)
	}
	s.sim.Resync()
	regressedAfter := clk.Now()
	aborted := names[v1alpha1.RegressionAbort]
	reported := names[v1alpha1.RegressionNone]
	stepUntil(t, s, clk, "the regression to abort one rollout and be reported in the other", []string{aborted, reported}, func() error {
		p := ps.Get(t, aborted)
		f := p.Status.Failure
		if p.Status.Phase != v1alpha1.RolloutAborted || f == nil || f.Reason != v1alpha1.ReasonStageRegressed ||
			f.Stage != "dev" || f.Action != v1alpha1.FailureAbort {
			return fmt.Errorf("%s not aborted by the regression: %s", aborted, policytest.Describe(p))
		}
		if p := ps.Get(t, reported); meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionStageRegressed) == nil {
			return fmt.Errorf("%s reports no regression: %s", reported, policytest.Describe(p))
		}
		return nil
	})
	p := ps.Get(t, aborted)
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionStageRegressed); c == nil || c.Status != metav1.ConditionTrue ||
		!strings.Contains(c.Message, `stage "dev" regressed`) {
		t.Fatalf("StageRegressed = %+v, want True naming dev", c)
	}
	// Make-before-break: back on v1 in both stages, v2 taken away.
	waitForBindingPolicies(t, s, aborted, "dev.v1", "prod.v1")

	p = ps.WaitForCondition(t, reported, v1alpha1.ConditionStageRegressed, metav1.ConditionTrue, v1alpha1.ReasonStageRegressed)
	if p.Status.Failure != nil || p.Status.ActiveStage != "prod" || p.Status.UpdateRevision != "v2" {
		t.Fatalf("a regression with onRegression None changed the rollout: %s", policytest.Describe(p))
	}
	if dev := p.Status.StageNamed("dev"); dev.Regressed == nil || dev.LastRegressionCheckTime == nil ||
		!dev.LastRegressionCheckTime.After(regressedAfter) || dev.LastRegressionCheckTime.After(clk.Now()) {
		t.Fatalf("dev's record = %+v, want regressed, checked after %s and by %s", dev, regressedAfter, clk.Now())
	}
	waitFor(t, "one StageRegressed Warning per policy", func() error {
		for _, name := range names {
			counts := ps.EventCounts(t, ps.Get(t, name))
			n := 0
			for key, c := range counts {
				if strings.HasPrefix(key, v1alpha1.ReasonStageRegressed+"/") {
					n += c
				}
			}
			if n != 1 {
				return fmt.Errorf("%s: %d StageRegressed Events: %v", name, n, counts)
			}
		}
		return nil
	})
	waitFor(t, "the regression's metrics", func() error {
		labels := map[string]string{"space": s.Name, "policy": reported, "stage": "dev"}
		if v, ok := metricValue(t, "stager_stage_regressed", labels); !ok || v != 1 {
			return fmt.Errorf("stager_stage_regressed%v = %v (present %t), want 1", labels, v, ok)
		}
		if v, _ := metricValue(t, "stager_regression_checks_total", map[string]string{"space": s.Name, "result": "regressed"}); v < 2 {
			return fmt.Errorf("stager_regression_checks_total{result=regressed} = %v, want at least 2 (one per policy)", v)
		}
		return nil
	})
	if got := bindingPolicies(t, s, reported); !slices.Contains(got, v1alpha1.StagePlacement(reported, "prod").At("v2").String()) {
		t.Fatalf("%s's BindingPolicies = %v, want prod still on v2", reported, got)
	}

	// Healthy again: a check an interval later clears it.
	open(reported, "dev", "v2", true)
	s.sim.Resync()
	stepUntil(t, s, clk, "dev to recover", []string{reported}, func() error {
		p := ps.Get(t, reported)
		if meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionStageRegressed) == nil && p.Status.StageNamed("dev").Regressed == nil {
			return nil
		}
		return fmt.Errorf("still regressed: %s", policytest.Describe(p))
	})
	if v, ok := metricValue(t, "stager_stage_regressed", map[string]string{"space": s.Name, "policy": reported, "stage": "dev"}); !ok || v != 0 {
		t.Fatalf("stager_stage_regressed for recovered dev = %v (present %t), want 0", v, ok)
	}
	waitFor(t, "a StageRecovered Event", func() error {
		if n := countReason(ps.EventCounts(t, ps.Get(t, reported)), v1alpha1.EventReasonStageRecovered); n != 1 {
			return fmt.Errorf("%d StageRecovered Events", n)
		}
		return nil
	})
}

// stepUntil waits until check holds; each try that finds it does not
// moves clk on by two regression intervals and makes a change each policy
// sees, which runs it. A single step would race: a run between the step
// and a new CombinedStatus reaching the cache checks the old status and
// puts the next check an interval past the clock, which then never moves.
func stepUntil(t *testing.T, s *space, clk *clocktesting.FakeClock, what string, policies []string, check func() error) {
	t.Helper()
	waitFor(t, what, func() error {
		err := check()
		if err == nil {
			return nil
		}
		clk.Step(2 * time.Minute)
		for _, name := range policies {
			updateObject(t, s, name, func(p *v1alpha1.StagedBindingPolicy) {
				if p.Annotations == nil {
					p.Annotations = map[string]string{}
				}
				p.Annotations["example.com/poke"] = clk.Now().Format(time.RFC3339)
			})
		}
		return err
	})
}

// countReason sums the counts of Events with reason.
func countReason(counts map[string]int, reason string) int {
	n := 0
	for key, c := range counts {
		if strings.HasPrefix(key, reason+"/") {
			n += c
		}
	}
	return n
}

// TestRegressionWatchValidation checks that the API server refuses a
// regressionWatch it could not honour, saying why, and takes a valid one.
func TestRegressionWatchValidation(t *testing.T) {
	s := suite.wds1
	watched := func(condition, failureCondition string, w v1alpha1.RegressionWatch) v1alpha1.Stage {
		st := policytest.Stage("dev", "", condition)
		st.FailureCondition = failureCondition
		st.RegressionWatch = &w
		return st
	}
	every := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	analysed := func(st v1alpha1.Stage) v1alpha1.Stage {
		st.Analysis = []v1alpha1.Analysis{{Name: "errors", Provider: "prom", Query: "errors", SuccessCondition: "result.all(v, v < 0.05)"}}
		return st
	}
	prod := policytest.Stage("prod", "", "")
	for _, tc := range []struct {
		name      string
		stage     v1alpha1.Stage
		then      *v1alpha1.Stage // a stage after it
		placement v1alpha1.Placement
		want      string // "" when accepted
	}{
		{"interval under a minute", watched(policytest.Available, "", v1alpha1.RegressionWatch{Interval: every(30 * time.Second)}),
			nil, "", "regressionWatch.interval must be between 1m and 24h"},
		{"interval over a day", watched(policytest.Available, "", v1alpha1.RegressionWatch{Interval: every(25 * time.Hour)}),
			nil, "", "regressionWatch.interval must be between 1m and 24h"},
		{"nothing to judge", watched("", "", v1alpha1.RegressionWatch{}), nil, "", "regressionWatch needs something to judge"},
		{"FailureCondition without one", watched(policytest.Available, "", v1alpha1.RegressionWatch{Judge: v1alpha1.RegressionOnFailureCondition}),
			nil, "", "regressionWatch needs something to judge"},
		{"analyses without analysis", watched(policytest.Available, "", v1alpha1.RegressionWatch{Analyses: true}),
			nil, "", "regressionWatch.analyses needs the stage's analysis"},
		{"analyses alone", analysed(watched("", "", v1alpha1.RegressionWatch{Analyses: true})), nil, "", ""},
		{"unknown onRegression", watched(policytest.Available, "", v1alpha1.RegressionWatch{OnRegression: "Rollback"}),
			nil, "", "spec.stages[0].regressionWatch.onRegression"},
		{"valid", watched(policytest.Available, "", v1alpha1.RegressionWatch{Interval: every(time.Minute), OnRegression: v1alpha1.RegressionAbort}), nil, "", ""},
		{"before the last stage under Replace", watched(policytest.Available, "", v1alpha1.RegressionWatch{}), &prod, "",
			"regressionWatch on a stage before the last needs placement Accumulate"},
		{"before the last stage under explicit Replace", watched(policytest.Available, "", v1alpha1.RegressionWatch{}), &prod, v1alpha1.PlacementReplace,
			"regressionWatch on a stage before the last needs placement Accumulate"},
		{"before the last stage under Accumulate", watched(policytest.Available, "", v1alpha1.RegressionWatch{}), &prod, v1alpha1.PlacementAccumulate, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := policytest.Policy("regression-"+strings.ReplaceAll(strings.ToLower(tc.name), " ", "-"), map[string]string{policytest.AppLabel: "none"}, tc.stage)
			if tc.then != nil {
				p.Spec.Stages = append(p.Spec.Stages, *tc.then)
			}
			p.Spec.Placement = tc.placement
			err := s.Client.Create(suite.ctx, p)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("a valid regressionWatch was refused: %v", err)
				}
				t.Cleanup(func() { policies(s).Delete(t, p.Name) })
				return
			}
			if err == nil {
				policies(s).Delete(t, p.Name)
				t.Fatalf("accepted, want refused with %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("refused with %v, want %q", err, tc.want)
			}
		})
	}
}

// errorRate stands for the MetricProviders: it answers every query with
// its value and counts the queries of each stage (the query is the
// stage's name, rendered from {{stage}}).
type errorRate struct {
	mu      sync.Mutex
	value   float64
	queries map[string]int
}

func (e *errorRate) Query(_ context.Context, _, _, query string) ([]float64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.queries[query]++
	return []float64{e.value}, nil
}

func (e *errorRate) set(v float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.value = v
}

func (e *errorRate) count(stage string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.queries[stage]
}

// TestRegressionWatchRunsAnalyses runs a policy dev → prod under
// Accumulate whose dev gates on an analysis and watches it once done
// (regressionWatch.analyses, interval 1m), under a fake clock, against a
// real API server: once the rollout completed, runs that are not due
// (the policy poked, the clock still) query nothing; each interval one
// query is made; an error rate up regresses dev, naming the analysis.
func TestRegressionWatchRunsAnalyses(t *testing.T) {
	const app, name = "regress-an", "web-analysed"
	s := newSpace(t, "wds-regress-an", true)
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	rate := &errorRate{value: 0.01, queries: map[string]int{}}
	startClockedController(t, s, clk, func(o *stagedbindingpolicy.Options) { o.Measurer = rate })
	d := policytest.Deployment(workloadNamespace, app)
	d.Labels = map[string]string{policytest.AppLabel: app}
	if err := s.Client.Create(suite.ctx, d); err != nil {
		t.Fatalf("creating Deployment %s: %v", d.Name, err)
	}
	dev := policytest.Stage("dev", policytest.Deployments, policytest.Available)
	dev.Analysis = []v1alpha1.Analysis{{Name: "errors", Provider: "prom", Query: "{{stage}}", SuccessCondition: "result.all(v, v < 0.05)"}}
	dev.RegressionWatch = &v1alpha1.RegressionWatch{Interval: &metav1.Duration{Duration: time.Minute}, Analyses: true}
	p := policytest.Policy(name, map[string]string{policytest.AppLabel: app}, dev, policytest.Stage("prod", policytest.Deployments, policytest.Available))
	p.Spec.Placement = v1alpha1.PlacementAccumulate
	create(t, s, p)
	ps := policies(s)
	for _, stage := range []string{"dev", "prod"} {
		s.availability.SetAvailable(v1alpha1.StagePlacement(name, stage).String(), true)
	}
	s.sim.Resync()
	done := ps.WaitFor(t, name, "the rollout completed", func(p *v1alpha1.StagedBindingPolicy) bool { return p.Status.Phase == v1alpha1.RolloutCompleted })
	activeRun := done.Status.StageNamed("dev").Analyses
	poke := func() {
		updateObject(t, s, name, func(p *v1alpha1.StagedBindingPolicy) {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations["example.com/poke"] = fmt.Sprint(time.Now().UnixNano())
		})
	}
	active := rate.count("dev") // the measurements of dev's active run
	for range 3 {
		poke()
	}
	time.Sleep(time.Second) // the pokes' runs, with the clock still: none is due (the counts below see any late one)
	if n := rate.count("dev"); n != active {
		t.Fatalf("%d queries of dev's analysis with no check due, want none", n-active)
	}

	clk.Step(2 * time.Minute)
	poke()
	p = ps.WaitFor(t, name, "dev checked", func(p *v1alpha1.StagedBindingPolicy) bool {
		r := p.Status.StageNamed("dev")
		return r.LastRegressionCheckTime != nil && r.LastRegressionCheckTime.Time.Equal(clk.Now())
	})
	poke()
	time.Sleep(time.Second)
	if n := rate.count("dev"); n != active+1 {
		t.Fatalf("%d queries of dev's analysis for one check, want 1", n-active)
	}
	if r := p.Status.StageNamed("dev"); r.Regressed != nil || len(activeRun) != 1 || !equality.Semantic.DeepEqual(r.Analyses, activeRun) {
		t.Fatalf("dev's record after a healthy check = %+v, want not regressed, its analyses those of its active run (%+v)", r, activeRun)
	}

	rate.set(0.5)
	clk.Step(2 * time.Minute)
	poke()
	p = ps.WaitForCondition(t, name, v1alpha1.ConditionStageRegressed, metav1.ConditionTrue, v1alpha1.ReasonStageRegressed)
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionStageRegressed); !strings.Contains(c.Message, `analysis "errors" failed with [0.5]`) {
		t.Fatalf("StageRegressed = %q, want it to name analysis errors and its value", c.Message)
	}
	if n := rate.count("dev"); n != active+2 {
		t.Fatalf("%d queries of dev's analysis for two checks, want 2", n-active)
	}
	if n := rate.count("prod"); n != 0 {
		t.Fatalf("%d queries for prod, which has no analysis", n)
	}
}
