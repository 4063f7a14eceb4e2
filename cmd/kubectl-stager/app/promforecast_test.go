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
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/analysis"
	"github.com/kubestellar/workload-stager/internal/forecast"
)

var promNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// runningPolicy is web rolling out v2, test active for 5m, with one
// earlier rollout that took 10m, 20m and 30m.
func runningPolicy() *v1alpha1.StagedBindingPolicy {
	p := &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	p.Spec.Revision = &v1alpha1.Revision{Name: "v2"}
	p.Spec.Stages = []v1alpha1.Stage{{Name: "dev"}, {Name: "test"}, {Name: "prod"}}
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(promNow.Add(d)) }
	p.Status = v1alpha1.StagedBindingPolicyStatus{ActiveStage: "test", Phase: v1alpha1.RolloutProgressing, UpdateRevision: "v2",
		Stages: []v1alpha1.StageStatus{{Name: "dev", Phase: v1alpha1.StageSucceeded}, {Name: "test", Phase: v1alpha1.StageActive,
			StartTime: ptr.To(at(-5 * time.Minute))}, {Name: "prod", Phase: v1alpha1.StagePending}},
		History: []v1alpha1.RevisionHistory{{Revision: "v1", Outcome: v1alpha1.OutcomeCompleted, StartTime: at(-10 * time.Hour),
			EndTime: ptr.To(at(-9 * time.Hour)), Stages: []v1alpha1.StageHistory{
				{Name: "dev", StartTime: at(-10 * time.Hour), CompletionTime: at(-10*time.Hour + 10*time.Minute)},
				{Name: "test", StartTime: at(-10 * time.Hour), CompletionTime: at(-10*time.Hour + 20*time.Minute)},
				{Name: "prod", StartTime: at(-10 * time.Hour), CompletionTime: at(-10*time.Hour + 30*time.Minute)}}},
			{Revision: "v2", Outcome: v1alpha1.OutcomeProgressing, StartTime: at(-time.Hour)}}}
	return p
}

// fakePrometheus answers the forecast's two queries as Prometheus's API
// does, with medians and counts, or with body for both when set; it
// counts the queries and keeps the last Authorization header.
type fakePrometheus struct {
	medians, counts, body string
	queries               atomic.Int32
	authorization         atomic.Value
}

func (f *fakePrometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.queries.Add(1)
	f.authorization.Store(r.Header.Get("Authorization"))
	if f.body != "" {
		_, _ = fmt.Fprint(w, f.body)
		return
	}
	result := f.counts
	if strings.HasPrefix(r.URL.Query().Get("query"), "histogram_quantile(0.5, sum by (le, space, stage) (increase(stager_policy_stage_duration_seconds_bucket{") {
		result = f.medians
	}
	_, _ = fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, result)
}

func sample(space, stage, value string) string {
	return fmt.Sprintf(`{"metric":{"space":%q,"stage":%q},"value":[1,%q]}`, space, stage, value)
}

// TestForecasterWithPrometheus: the forecaster takes Prometheus's
// medians where it has a stage, says so in the basis, and, when
// Prometheus cannot serve the forecast (unreachable, garbage, an error,
// too slow, a policy of the name in several spaces), warns once in one
// line and forecasts from status.history: never a made-up number.
func TestForecasterWithPrometheus(t *testing.T) {
	good := &fakePrometheus{medians: sample("wds1", "test", "2400") + "," + sample("wds1", "prod", "NaN"),
		counts: sample("wds1", "test", "7.4") + "," + sample("wds1", "prod", "0")}
	recordBasis := "from 1 earlier rollout; median per stage"
	for _, tt := range []struct {
		name    string
		handler http.Handler
		short   string // Short of the forecast
		basis   string
		warning string // a part of the warning; "" for none
	}{
		{name: "Prometheus has test, the record prod", handler: good, short: "~13:05 UTC (in 1h5m)",
			basis: "from Prometheus: median per stage over 30d (7 completions of test); prod from 1 earlier rollout"},
		{name: "garbage", handler: &fakePrometheus{body: "<html>hello</html>"}, short: "~12:45 UTC (in 45m)", basis: recordBasis,
			warning: "warning: Prometheus not used: BadAnswer: HTTP 200 with no Prometheus API response; forecasting from status.history"},
		{name: "an error", handler: &fakePrometheus{body: `{"status":"error","errorType":"bad_data","error":"no"}`}, short: "~12:45 UTC (in 45m)",
			basis: recordBasis, warning: "QueryFailed: HTTP 200: bad_data: no"},
		{name: "not a vector", handler: &fakePrometheus{body: `{"status":"success","data":{"resultType":"scalar","result":[1,"5"]}}`},
			short: "~12:45 UTC (in 45m)", basis: recordBasis, warning: "not an instant vector"},
		{name: "several spaces", handler: &fakePrometheus{medians: sample("wds1", "test", "60") + "," + sample("wds2", "test", "60"),
			counts: sample("wds1", "test", "1")}, short: "~12:45 UTC (in 45m)", basis: recordBasis,
			warning: `in 2 spaces ("wds1", "wds2"): name one with --prometheus-space`},
		{name: "infinite and negative medians count for nothing", handler: &fakePrometheus{
			medians: sample("wds1", "test", "+Inf") + "," + sample("wds1", "prod", "-5"),
			counts:  sample("wds1", "test", "3") + "," + sample("wds1", "prod", "3")},
			short: "~12:45 UTC (in 45m)", basis: recordBasis + "; Prometheus has no completion of them over 30d"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			server := httptest.NewServer(tt.handler)
			defer server.Close()
			var warnings strings.Builder
			fc, err := newForecaster(&promFlags{address: server.URL, lookback: 30 * 24 * time.Hour}, &warnings)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				f, _ := fc.forecast(context.Background(), "", runningPolicy(), promNow)
				if got := f.Short(promNow); got != tt.short {
					t.Errorf("short %q, want %q", got, tt.short)
				}
				if got := f.Basis.String(); got != tt.basis {
					t.Errorf("basis %q, want %q", got, tt.basis)
				}
			}
			got := warnings.String()
			if tt.warning == "" && got != "" || tt.warning != "" && (!strings.Contains(got, tt.warning) || strings.Count(got, "\n") != 1) {
				t.Errorf("warnings %q, want one line saying %q", got, tt.warning)
			}
		})
	}

	t.Run("unreachable: once per command, not once per policy", func(t *testing.T) {
		server := httptest.NewServer(good)
		address := server.URL
		server.Close()
		var warnings strings.Builder
		fc, err := newForecaster(&promFlags{address: address, lookback: 30 * 24 * time.Hour}, &warnings)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"web", "api", "shop"} {
			p := runningPolicy()
			p.Name = name
			if f, _ := fc.forecast(context.Background(), "", p, promNow); f.Basis.String() != recordBasis {
				t.Errorf("%s: basis %q, want the record's", name, f.Basis)
			}
		}
		if got := warnings.String(); !strings.Contains(got, "Unreachable: connection refused") || strings.Count(got, "\n") != 1 {
			t.Errorf("warnings %q, want one line saying the connection was refused", got)
		}
	})

	t.Run("after a bad answer, no query for the next policies", func(t *testing.T) {
		garbage := &fakePrometheus{body: "<html>hello</html>"}
		server := httptest.NewServer(garbage)
		defer server.Close()
		fc, err := newForecaster(&promFlags{address: server.URL, lookback: 30 * 24 * time.Hour}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"web", "api", "shop"} {
			p := runningPolicy()
			p.Name = name
			_, _ = fc.forecast(context.Background(), "", p, promNow)
		}
		if n := garbage.queries.Load(); n != 1 {
			t.Errorf("%d queries for three policies, want 1", n)
		}
		// Once the failure is older than promRemember, Prometheus is asked again.
		_, _ = fc.forecast(context.Background(), "", runningPolicy(), promNow.Add(promRemember))
		if n := garbage.queries.Load(); n != 2 {
			t.Errorf("%d queries after %s, want 2", n, promRemember)
		}
	})

	t.Run("a Prometheus that never answers holds a command a bounded time", func(t *testing.T) {
		release := make(chan struct{})
		server := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		defer server.Close()
		defer close(release)
		var warnings strings.Builder
		fc, err := newForecaster(&promFlags{address: server.URL, lookback: 30 * 24 * time.Hour}, &warnings)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan forecast.Forecast)
		go func() {
			f, _ := fc.forecast(context.Background(), "", runningPolicy(), promNow)
			done <- f
		}()
		select {
		case f := <-done:
			if f.Basis.String() != recordBasis || !strings.Contains(warnings.String(), "Timeout") {
				t.Errorf("basis %q, warnings %q; want the record's, and a timeout", f.Basis, warnings.String())
			}
		case <-time.After(promTimeout + 20*time.Second): // the bound, with room for a loaded machine
			t.Fatal("the forecast waits for a Prometheus that never answers")
		}
	})

	t.Run("the bearer token goes to Prometheus and nowhere else", func(t *testing.T) {
		const token = "s3cret-prom-token"
		server := httptest.NewServer(&fakePrometheus{body: `{"status":"error","errorType":"unauthorized","error":"no"}`})
		defer server.Close()
		tokenFile := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		var warnings strings.Builder
		fc, err := newForecaster(&promFlags{address: server.URL, tokenFile: tokenFile, lookback: time.Hour}, &warnings)
		if err != nil {
			t.Fatal(err)
		}
		f, note := fc.forecast(context.Background(), "wds1", runningPolicy(), promNow)
		if got := fc.endpoint; got == nil {
			t.Fatal("no endpoint")
		}
		if got := server.Config.Handler.(*fakePrometheus).authorization.Load(); got != "Bearer "+token {
			t.Errorf("Authorization %q, want the token's", got)
		}
		if strings.Contains(warnings.String()+note+f.Sentence(promNow)+f.Basis.String(), token) {
			t.Errorf("the token shows: %q %q", warnings.String(), note)
		}
	})
}

// TestDashboardForecastLine: the dashboard's forecast line shows
// Prometheus's basis when it serves the forecast, and why not when it
// does not; without --prometheus, the record's.
func TestDashboardForecastLine(t *testing.T) {
	good := httptest.NewServer(&fakePrometheus{medians: sample("wds1", "test", "2400"), counts: sample("wds1", "test", "3")})
	defer good.Close()
	bad := httptest.NewServer(&fakePrometheus{body: "nope"})
	defer bad.Close()
	for _, tt := range []struct {
		address, want string
	}{
		{"", "completes ~12:45 UTC, in 45m (from 1 earlier rollout; median per stage)"},
		{good.URL, "completes ~13:05 UTC, in 1h5m (from Prometheus: median per stage over 30d (3 completions of test); prod from 1 earlier rollout)"},
		{bad.URL, "completes ~12:45 UTC, in 45m (from 1 earlier rollout; median per stage) " +
			"(Prometheus not used: BadAnswer: HTTP 200 with no Prometheus API response; forecasting from status.history)"},
	} {
		fc, err := newForecaster(&promFlags{address: tt.address, lookback: 30 * 24 * time.Hour}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := forecastLine(context.Background(), fc, "wds1", runningPolicy(), promNow); got != tt.want {
			t.Errorf("--prometheus %q: %q, want %q", tt.address, got, tt.want)
		}
	}
}

// TestForecasterFlags: what the flags refuse, before any query, without
// echoing an address that may hold a password.
func TestForecasterFlags(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("t"), 0o600); err != nil {
		t.Fatal(err)
	}
	month := 30 * 24 * time.Hour
	for _, tt := range []struct {
		flags promFlags
		err   string
	}{
		{promFlags{}, ""},
		{promFlags{address: "http://127.0.0.1:9090", lookback: month}, ""},
		{promFlags{address: "https://prometheus.example.com/prefix", lookback: month, tokenFile: tokenFile}, ""},
		{promFlags{address: "http://localhost:9090", lookback: month, tokenFile: tokenFile}, ""},
		{promFlags{address: "http://[::1]:9090", lookback: month, tokenFile: tokenFile}, ""},
		{promFlags{address: "http://prometheus.example.com", lookback: month, tokenFile: tokenFile}, "in the clear"},
		{promFlags{address: "https://user:hunter2@prometheus.example.com", lookback: month}, "without user information"},
		{promFlags{address: "ftp://prometheus.example.com", lookback: month}, "want an http(s) URL"},
		{promFlags{address: "https://prometheus.example.com?x=hunter2", lookback: month}, "without user information, query"},
		{promFlags{address: "https://prometheus.example.com", lookback: time.Second}, "want from 1m to 400d"},
		{promFlags{address: "https://prometheus.example.com", lookback: month, tokenFile: "/nonexistent"}, "--prometheus-bearer-token-file"},
		{promFlags{address: "https://prometheus.example.com", lookback: month, caFile: tokenFile}, "no PEM certificate"},
		{promFlags{space: "wds1"}, "need --prometheus"},
	} {
		fc, err := newForecaster(&tt.flags, nil)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%+v: %v", tt.flags, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%+v: got %v, want an error saying %q", tt.flags, err, tt.err)
		case err != nil && strings.Contains(err.Error(), "hunter2"):
			t.Errorf("%+v: the error shows the password: %v", tt.flags, err)
		case tt.err == "" && (fc == nil) != (tt.flags.address == ""):
			t.Errorf("%+v: forecaster %v", tt.flags, fc)
		}
	}
}

// TestPromObservations: counts round (increase() extrapolates), and a
// stage needs both a usable median and a completion; medians beyond the
// forecast's bound count as the bound.
func TestPromObservations(t *testing.T) {
	s := func(stage string, v float64) analysis.Sample {
		return analysis.Sample{Labels: map[string]string{"space": "a", "stage": stage}, Value: v}
	}
	o, err := promObservations(
		[]analysis.Sample{s("dev", 59.6), s("test", 600), s("prod", 1e300), s("edge", 30), s("qa", math.NaN())},
		[]analysis.Sample{s("dev", 2.6), s("test", 0.4), s("prod", 1), s("qa", 3)}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]forecast.Observed{"dev": {Median: 60 * time.Second, Count: 3}, "prod": {Median: forecast.MaxStageDuration, Count: 1}}
	if fmt.Sprint(o.Stages) != fmt.Sprint(want) {
		t.Errorf("observations %v, want %v", o.Stages, want)
	}
}

// TestForecasterKeepsPoliciesApart: what Prometheus answers of one
// policy is never another's, whatever the policies are called; a policy
// named as the forecaster's outage marker once was took every other
// policy's forecast.
func TestForecasterKeepsPoliciesApart(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		median := "600"
		if strings.Contains(r.URL.Query().Get("query"), `policy="web"`) {
			median = "2400"
		}
		_, _ = fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, sample("wds1", "test", median))
	}))
	defer server.Close()
	fc, err := newForecaster(&promFlags{address: server.URL, lookback: 30 * 24 * time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"down", "\x00down", "web"} {
		p := runningPolicy()
		p.Name = name
		_, _ = fc.forecast(context.Background(), "", p, promNow)
	}
	f, _ := fc.forecast(context.Background(), "", runningPolicy(), promNow)
	if got, want := f.Short(promNow), "~13:05 UTC (in 1h5m)"; got != want {
		t.Errorf("web's forecast %q, want %q (from its own median of test, 40m)", got, want)
	}
}

// TestForecasterRemembersBoundedWarnings: a long-running dashboard meets
// ever new error texts; the warnings remembered as written stay bounded.
func TestForecasterRemembersBoundedWarnings(t *testing.T) {
	var warnings strings.Builder
	fc := &forecaster{warnings: &warnings, warned: map[string]bool{}}
	for i := range 10 * promMaxWarned {
		fc.warn(fmt.Sprintf("Prometheus not used: error %d", i))
	}
	if len(fc.warned) > promMaxWarned {
		t.Errorf("%d warnings remembered, want at most %d", len(fc.warned), promMaxWarned)
	}
	if n := strings.Count(warnings.String(), "\n"); n != 10*promMaxWarned {
		t.Errorf("%d warnings written, want each of the %d once", n, 10*promMaxWarned)
	}
}
