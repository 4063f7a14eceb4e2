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
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/cmd/stager/app"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
	"github.com/kubestellar/workload-stager/test/framework/prometheus"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

// TestAnalyses runs stage analyses against a real Prometheus, which
// scrapes the stager, through MetricProviders in the stager's hosting
// cluster: a query over the stager's own series that holds lets the
// rollout go on, one that fails aborts it (onFailure Abort), and a
// provider that is down, never answers, answers too much or does not
// exist gives inconclusive measurements, which hold the rollout.
func TestAnalyses(t *testing.T) {
	ctx := suite.ctx
	token, err := suite.stack.MetricsReaderToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	server, err := prometheus.Start(ctx, prometheus.Options{WorkDir: t.TempDir(), Targets: []string{suite.stager.Flag("metrics-bind-address")},
		BearerToken: token, ScrapeInterval: time.Second})
	if err != nil {
		t.Fatalf("starting Prometheus: %v", err)
	}
	t.Cleanup(func() { _ = server.Stop() })
	environment.Eventually(t, time.Minute, "Prometheus to scrape the stager", func() error {
		samples, err := server.Query(ctx, `up == 1`, time.Now())
		if err == nil && len(samples) == 0 {
			err = fmt.Errorf("no successful scrape yet")
		}
		return err
	})

	// A closed port stands for a Prometheus that is down; silent accepts
	// connections and never answers, and counts them.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downAddress := "http://" + closed.Addr().String()
	_ = closed.Close()
	silent, connections := blackHole(t)

	createProvider(t, "prom", hostingv1alpha1.PrometheusProvider{Address: server.URL}, "wds1")
	createProvider(t, "down", hostingv1alpha1.PrometheusProvider{Address: downAddress}, "wds1")
	createProvider(t, "silent", hostingv1alpha1.PrometheusProvider{Address: "http://" + silent, Timeout: &metav1.Duration{Duration: time.Second}}, "wds1")
	// Prometheus's answer to vector(1) is about 100 bytes.
	createProvider(t, "small", hostingv1alpha1.PrometheusProvider{Address: server.URL, MaxResponseBytes: ptr.To[int64](64)}, "wds1")

	t.Run("a query that holds lets the stage go on", func(t *testing.T) {
		t.Parallel()
		const name = "analysed"
		// stager_policy_stages is the stager's own series for the policy,
		// 3: the query's {{policy}} and {{space}} are filled in. The
		// initialDelay lets Prometheus scrape the series first.
		policy := analysedPolicy(name, v1alpha1.FailureHold, v1alpha1.Analysis{Name: "stages", Provider: "prom", Count: 2,
			Query:            `max(stager_policy_stages{space="{{space}}",policy="{{policy}}"})`,
			InitialDelay:     &metav1.Duration{Duration: 5 * time.Second},
			Interval:         &metav1.Duration{Duration: 2 * time.Second},
			SuccessCondition: `result.size() == 1 && result[0] == 3.0`})
		startAnalysed(t, policy)
		makeAvailable("wds1", name, "dev")
		p := policies("wds1").WaitForActiveStage(t, name, "test")
		r := analysisOf(t, p, "dev", "stages")
		if r.Phase != v1alpha1.AnalysisSuccessful || r.Successful != 2 || len(r.Measurements) != 2 || r.Measurements[1].Value != "[3]" {
			t.Errorf("dev's analysis %+v, want Successful after 2 measurements of [3]", r)
		}
		if gap := r.Measurements[1].Time.Sub(r.Measurements[0].Time.Time); gap < 2*time.Second {
			t.Errorf("measurements %s apart, want at least the interval, 2s", gap)
		}
	})

	t.Run("a query that fails aborts the rollout, keeping the last good stage", func(t *testing.T) {
		t.Parallel()
		const name = "aborted-by-analysis"
		policy := analysedPolicy(name, v1alpha1.FailureAbort, v1alpha1.Analysis{Name: "stages", Provider: "prom",
			Query: `max(stager_policy_stages{space="{{space}}",policy="{{policy}}"})`, SuccessCondition: `result.size() == 1 && result[0] > 3.0`,
			InitialDelay: &metav1.Duration{Duration: 3 * time.Second}})
		policy.Spec.Stages[0].Analysis, policy.Spec.Stages[1].Analysis = nil, policy.Spec.Stages[0].Analysis
		policy.Spec.Stages[1].OnFailure = v1alpha1.FailureAbort
		startAnalysed(t, policy)
		makeAvailable("wds1", name, "dev")
		p := policies("wds1").WaitForPhase(t, name, v1alpha1.RolloutAborted)
		if f := p.Status.Failure; f == nil || f.Stage != "test" || f.Reason != v1alpha1.ReasonAnalysisFailed || f.Action != v1alpha1.FailureAbort {
			t.Errorf("failure %+v, want test's analysis failed, aborting", p.Status.Failure)
		}
		if r := analysisOf(t, p, "test", "stages"); r.Phase != v1alpha1.AnalysisFailed || r.Measurements[0].Value != "[3]" {
			t.Errorf("test's analysis %+v, want Failed on [3]", r)
		}
		// dev's BindingPolicy went when test's was placed (Replace); the
		// abort places dev again and takes test's away.
		waitForOnlyBindingPolicy(t, "wds1", name, "dev", "dev1", "dev2")
		counts := policies("wds1").EventCounts(t, p)
		for _, reason := range []string{v1alpha1.ReasonAnalysisFailed, v1alpha1.ReasonRolloutAborted} {
			if policytest.EventsWithReason(counts, reason) != 1 {
				t.Errorf("events %v, want one %s", counts, reason)
			}
		}
	})

	t.Run("a done stage whose analysis turns bad regresses, aborting the rollout in flight", func(t *testing.T) {
		t.Parallel()
		const name = "regressed-by-analysis"
		// The query's answer, Prometheus's clock, passes turns a minute
		// from now: dev's analysis holds while v1 and then v2 go through
		// dev, and fails at the first regression check of v2's dev, a
		// minute after it was done, while v2 rolls out in test.
		turns := time.Now().Add(time.Minute).Unix()
		policy := analysedPolicy(name, v1alpha1.FailureHold, v1alpha1.Analysis{Name: "clock", Provider: "prom", Query: "vector(time())",
			SuccessCondition: fmt.Sprintf("result.size() == 1 && result[0] < %d.0", turns)})
		policy.Spec.Stages[0].RegressionWatch = &v1alpha1.RegressionWatch{Interval: &metav1.Duration{Duration: time.Minute},
			Analyses: true, OnRegression: v1alpha1.RegressionAbort}
		// Under Replace, dev is no longer placed once test is: nothing of
		// it would be left to watch. Without a revision to go back to, a
		// regression holds the rollout rather than abort it.
		policy.Spec.Placement = v1alpha1.PlacementAccumulate
		policy.Spec.Revision = &v1alpha1.Revision{Name: "v1"}
		for _, rev := range []string{"v1", "v2"} {
			d := policytest.Deployment(namespace, name+"-"+rev)
			d.Labels = map[string]string{policytest.AppLabel: name, v1alpha1.DefaultRevisionLabelKey: rev}
			if err := wds("wds1").Create(suite.ctx, d); err != nil {
				t.Fatalf("creating Deployment %s: %v", d.Name, err)
			}
		}
		if err := wds("wds1").Create(suite.ctx, policy); err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
		t.Cleanup(func() { policies("wds1").Delete(t, name) })
		completeRevision(t, "wds1", name, "v1")
		setRevision(t, "wds1", name, "v2")
		suite.stack.WECs.SetAvailable(stack.Match{WDS: "wds1", BindingPolicy: v1alpha1.StagePlacement(name, "dev").At("v2").String(), Resource: "deployments"}, 1)
		p := policies("wds1").WaitFor(t, name, "v2 done in dev, rolling out in test", func(p *v1alpha1.StagedBindingPolicy) bool {
			return p.Status.UpdateRevision == "v2" && p.Status.ActiveStage == "test"
		})
		if r := analysisOf(t, p, "dev", "clock"); r.Phase != v1alpha1.AnalysisSuccessful {
			t.Fatalf("v2's analysis in dev %+v, want Successful before %s", r, time.Unix(turns, 0).Format(time.TimeOnly))
		}
		slow := policytest.Space{Name: "wds1", Client: wds("wds1"), Ctx: suite.ctx, Timeout: timeout + 2*time.Minute}
		p = slow.WaitFor(t, name, "dev's regression to abort v2", func(p *v1alpha1.StagedBindingPolicy) bool {
			f := p.Status.Failure
			return p.Status.Phase == v1alpha1.RolloutAborted && f != nil && f.Reason == v1alpha1.ReasonStageRegressed && f.Stage == "dev"
		})
		if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionStageRegressed); c == nil || c.Status != metav1.ConditionTrue ||
			!strings.Contains(c.Message, `stage "dev" regressed: analysis "clock" failed`) {
			t.Errorf("StageRegressed = %+v, want True naming dev and its analysis clock", c)
		}
		if p.Status.CurrentRevision != "v1" {
			t.Errorf("current revision %q after the abort, want v1", p.Status.CurrentRevision)
		}
		environment.Eventually(t, timeout, "a StageRegressed Event", func() error {
			if n := policytest.EventsWithReason(policies("wds1").EventCounts(t, p), v1alpha1.ReasonStageRegressed); n == 0 {
				return fmt.Errorf("no StageRegressed Event")
			}
			return nil
		})
	})

	t.Run("providers that do not answer, or answer too much, are inconclusive and hold the rollout", func(t *testing.T) {
		t.Parallel()
		const name = "unanswered"
		policy := analysedPolicy(name, v1alpha1.FailureAbort,
			v1alpha1.Analysis{Name: "down", Provider: "down", Query: "vector(1)", SuccessCondition: "true"},
			v1alpha1.Analysis{Name: "silent", Provider: "silent", Query: "vector(1)", SuccessCondition: "true"},
			v1alpha1.Analysis{Name: "huge", Provider: "small", Query: "vector(1)", SuccessCondition: "true"},
			v1alpha1.Analysis{Name: "nowhere", Provider: "no-such-provider", Query: "vector(1)", SuccessCondition: "true"})
		startAnalysed(t, policy)
		p := policies("wds1").WaitFor(t, name, "the rollout held by an inconclusive analysis", func(p *v1alpha1.StagedBindingPolicy) bool {
			return p.Status.Failure != nil
		})
		if f := p.Status.Failure; f.Reason != v1alpha1.ReasonAnalysisInconclusive || f.Action != v1alpha1.FailureHold || p.Status.Phase != v1alpha1.RolloutStalled {
			t.Errorf("failure %+v in phase %s, want AnalysisInconclusive holding the rollout Stalled, even with onFailure Abort", f, p.Status.Phase)
		}
		for analysis, says := range map[string]string{
			"down":    "connection refused",
			"silent":  `MetricProvider "silent": Timeout:`,
			"huge":    "larger than 64 bytes",
			"nowhere": `MetricProvider "no-such-provider" does not exist`,
		} {
			r := analysisOf(t, p, "dev", analysis)
			if r.Successful != 0 || r.Inconclusive != 1 || !strings.Contains(r.Measurements[0].Message, says) {
				t.Errorf("analysis %s: %+v, want one inconclusive measurement saying %q", analysis, r, says)
			}
		}
		if n := connections.Load(); n < 1 {
			t.Errorf("the silent provider got no connection: its timeout is not what the measurement reports")
		}
		if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionProgressing); c == nil || c.Reason != v1alpha1.ReasonAnalysisInconclusive {
			t.Errorf("Progressing %+v, want AnalysisInconclusive", c)
		}
		// Held: nothing moves on, even once dev is available.
		makeAvailable("wds1", name, "dev")
		stays(t, policies("wds1"), name, "dev", 5*time.Second)
	})
}

// analysedPolicy is ThreeStages with the given analyses on dev.
func analysedPolicy(name string, onFailure v1alpha1.FailureAction, analyses ...v1alpha1.Analysis) *v1alpha1.StagedBindingPolicy {
	p := policytest.ThreeStages(name, name)
	p.Spec.Stages[0].Analysis, p.Spec.Stages[0].OnFailure = analyses, onFailure
	return p
}

// startAnalysed creates the workload and the policy in wds1, deleted when
// the test ends.
func startAnalysed(t *testing.T, policy *v1alpha1.StagedBindingPolicy) {
	t.Helper()
	createWorkload(t, "wds1", policy.Name, false)
	if err := wds("wds1").Create(suite.ctx, policy); err != nil {
		t.Fatalf("creating %s: %v", policy.Name, err)
	}
	t.Cleanup(func() { policies("wds1").Delete(t, policy.Name) })
}

// analysisOf returns a stage's record of an analysis.
func analysisOf(t *testing.T, p *v1alpha1.StagedBindingPolicy, stage, name string) v1alpha1.AnalysisStatus {
	t.Helper()
	if r := p.Status.StageNamed(stage); r != nil {
		for _, a := range r.Analyses {
			if a.Name == name {
				return a
			}
		}
	}
	t.Fatalf("stage %q has no record of analysis %q: %s", stage, name, policytest.Describe(p))
	return v1alpha1.AnalysisStatus{}
}

// hostingClient is a client of the stager's hosting cluster that knows the
// MetricProvider.
func hostingClient(t *testing.T) client.Client {
	t.Helper()
	scheme, err := app.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(suite.stack.Hosting.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// createProvider creates a MetricProvider in the hosting cluster, for the
// policies of the given spaces, deleted when the test ends.
func createProvider(t *testing.T, name string, spec hostingv1alpha1.PrometheusProvider, spaces ...string) {
	t.Helper()
	c := hostingClient(t)
	mp := &hostingv1alpha1.MetricProvider{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: hostingv1alpha1.MetricProviderSpec{Prometheus: &spec, Spaces: spaces}}
	if err := c.Create(suite.ctx, mp); err != nil {
		t.Fatalf("creating MetricProvider %s: %v", name, err)
	}
	t.Cleanup(func() { _ = c.Delete(suite.ctx, mp) })
}

// blackHole listens on a loopback port, accepts connections and never
// answers; it returns its address and the count of connections accepted.
func blackHole(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var count atomic.Int32
	done := make(chan struct{})
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				_ = c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				<-done
				return
			}
			count.Add(1)
			held = append(held, c)
		}
	}()
	t.Cleanup(func() { _ = l.Close(); close(done) })
	return l.Addr().String(), &count
}
