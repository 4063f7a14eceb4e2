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
	"fmt"
	"math"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/controller/metrics"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
	"github.com/kubestellar/workload-stager/test/framework/prometheus"
)

// TestForecastFromPrometheus: a real Prometheus scrapes the stager's own
// metrics (its metrics package, served from this process, recording the
// stage completions of a policy as the reconciler does), and `get -o wide
// --prometheus` and `explain --prometheus` forecast from its median of the
// stage it has, from status.history for the other, and say so; with
// another space's name, or a Prometheus that does not answer, they say
// why and forecast from the record alone.
func TestForecastFromPrometheus(t *testing.T) {
	const space = "kubeconfig#wds-forecast"
	recorder := metrics.NewSpace(space)
	t.Cleanup(func() { metrics.SpaceDisengaged(space) })
	// The write that starts a rollout creates its stages' series at 0.
	recorder.PolicyStages("promfc", []string{"dev", "test", "prod"})
	listener, err := (&net.ListenConfig{}).Listen(suite.ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := &http.Server{Handler: promhttp.HandlerFor(ctrlmetrics.Registry, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = endpoint.Serve(listener) }()
	t.Cleanup(func() { _ = endpoint.Close() })
	server, err := prometheus.Start(suite.ctx, prometheus.Options{WorkDir: t.TempDir(), Targets: []string{listener.Addr().String()},
		ScrapeInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("starting Prometheus: %v", err)
	}
	t.Cleanup(func() { _ = server.Stop() })
	counts := `sum by (stage) (stager_policy_stage_duration_seconds_count{policy="promfc"})`
	environment.Eventually(t, 30*time.Second, "Prometheus to scrape the stages' series at 0", func() error {
		samples, err := server.Query(suite.ctx, counts, time.Now())
		if err != nil || len(samples) != 3 {
			return fmt.Errorf("%d series (%w)", len(samples), err)
		}
		return nil
	})
	// Seven completions of test, 18m to 25m; none of prod.
	for _, minutes := range []int{18, 19, 20, 20, 21, 22, 25} {
		recorder.StageDone("promfc", "test", time.Duration(minutes)*time.Minute)
	}
	// increase() extrapolates from the last sample to now, by up to a
	// scrape interval: 7 × (1 + 0.1s / the time sampled) rounds to 7 once
	// 50 samples (5s) are in, as over weeks.
	environment.Eventually(t, 60*time.Second, "Prometheus to sample test's 7 completions for 5s", func() error {
		samples, err := server.Query(suite.ctx, `count_over_time(stager_policy_stage_duration_seconds_count{policy="promfc",stage="test"}[30d])`, time.Now())
		if err != nil || len(samples) != 1 || samples[0].Value < 50 {
			return fmt.Errorf("%v (%w)", samples, err)
		}
		return nil
	})
	if samples, err := server.Query(suite.ctx, `sum(increase(stager_policy_stage_duration_seconds_count{policy="promfc",stage="test"}[30d]))`,
		time.Now()); err != nil || len(samples) != 1 || math.Round(samples[0].Value) != 7 {
		t.Fatalf("Prometheus counts %v completions of test (%v), want about 7", samples, err)
	}

	p := rollout(t, "promfc", func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Revision = &v1alpha1.Revision{Name: "v2"} })
	t.Cleanup(func() {
		_ = suite.wds.Client.Delete(suite.ctx, p)
		_ = suite.wds.Client.Delete(suite.ctx, policytest.Deployment(namespace, "promfc"))
		_ = suite.wds.Client.Delete(suite.ctx, policytest.ConfigMap(namespace, "promfc"))
	})
	// Three hours after its creation, at a whole minute: its age is "3h".
	now := p.CreationTimestamp.Add(3*time.Hour + 59*time.Second).Truncate(time.Minute)
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	setStatus(t, p, v1alpha1.StagedBindingPolicyStatus{ActiveStage: "test", Phase: v1alpha1.RolloutProgressing,
		CurrentRevision: "v1", UpdateRevision: "v2",
		Stages: []v1alpha1.StageStatus{
			{Name: "dev", Phase: v1alpha1.StageSucceeded, StartTime: at(now.Add(-15 * time.Minute)), CompletionTime: at(now.Add(-5 * time.Minute))},
			{Name: "test", Phase: v1alpha1.StageActive, StartTime: at(now.Add(-5 * time.Minute))},
			{Name: "prod", Phase: v1alpha1.StagePending}},
		History: []v1alpha1.RevisionHistory{
			{Revision: "v1", Outcome: v1alpha1.OutcomeCompleted, StartTime: ago(24 * time.Hour), EndTime: ptr.To(ago(23 * time.Hour)),
				Stages: []v1alpha1.StageHistory{
					{Name: "dev", StartTime: ago(24 * time.Hour), CompletionTime: ago(24*time.Hour - 10*time.Minute)},
					{Name: "test", StartTime: ago(24*time.Hour - 10*time.Minute), CompletionTime: ago(24*time.Hour - 30*time.Minute)},
					{Name: "prod", StartTime: ago(24*time.Hour - 30*time.Minute), CompletionTime: ago(23 * time.Hour)}}},
			{Revision: "v2", Outcome: v1alpha1.OutcomeProgressing, StartTime: ago(15 * time.Minute),
				Stages: []v1alpha1.StageHistory{{Name: "dev", StartTime: ago(15 * time.Minute), CompletionTime: ago(5 * time.Minute)}}},
		}})

	// The histogram's median of test is 18m45s, interpolated in its
	// 10m-20m bucket (4 of the 7 are at most 20m): 13m45s left; prod's
	// 30m from the record.
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"get-wide-prometheus", []string{"get", "promfc", "-o", "wide", "--prometheus", server.URL, "--prometheus-space", space}},
		{"explain-prometheus", []string{"explain", "promfc", "--prometheus", server.URL}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, now, "", tt.args...)
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			golden(t, tt.name, forecastClocks(out, now))
		})
	}

	t.Run("another space: the record, and why", func(t *testing.T) {
		out, err := run(t, now, "", "explain", "promfc", "--prometheus", server.URL, "--prometheus-space", "kubeconfig#elsewhere")
		if err != nil || !strings.Contains(out, "Basis:           from 1 earlier rollout; median per stage; Prometheus has no completion of them over 30d") ||
			!strings.Contains(out, "in 45m") {
			t.Errorf("%v:\n%s", err, out)
		}
	})
	t.Run("a Prometheus that does not answer: a warning, and the record", func(t *testing.T) {
		closed, err := (&net.ListenConfig{}).Listen(suite.ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		address := "http://" + closed.Addr().String()
		_ = closed.Close()
		out, err := run(t, now, "", "get", "promfc", "-o", "wide", "--prometheus", address)
		if err != nil || !strings.Contains(out, "warning: Prometheus not used: Unreachable: connection refused; forecasting from status.history\n") ||
			!strings.Contains(out, "(in 45m)") {
			t.Errorf("%v:\n%s", err, out)
		}
	})
	t.Run("--prometheus-space is for one space", func(t *testing.T) {
		if out, err := run(t, now, "", "get", "-A", "-o", "wide", "--prometheus", server.URL, "--prometheus-space", space); err == nil ||
			!strings.Contains(out, "each space's own name is used") {
			t.Errorf("get --all-spaces --prometheus-space: %v:\n%s", err, out)
		}
	})
	t.Run("--prometheus is for -o wide", func(t *testing.T) {
		if out, err := run(t, now, "", "get", "promfc", "--prometheus", server.URL); err == nil || !strings.Contains(out, "-o wide") {
			t.Errorf("get without -o wide: %v:\n%s", err, out)
		}
	})
}
