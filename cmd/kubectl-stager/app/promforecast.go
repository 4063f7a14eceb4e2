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
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/analysis"
	"github.com/kubestellar/workload-stager/internal/controller/metrics"
	"github.com/kubestellar/workload-stager/internal/forecast"
)

// Bounds of the forecast's Prometheus queries: one get -o wide reads every
// policy, so a Prometheus that does not answer must not hold it long.
const (
	// promTimeout bounds one query, from the connection to the last byte.
	promTimeout = 5 * time.Second
	// promMaxResponseBytes bounds one answer: a sample per stage (32 at
	// most) of every space holding a policy of the name.
	promMaxResponseBytes = 256 << 10
	// promRemember is how long an answer, or a failure, is kept: the
	// dashboard asks on every change, and the medians over weeks move
	// slowly; after a failure, the other policies of the command do not
	// wait for Prometheus again.
	promRemember = 30 * time.Second
	// promMaxCached bounds the answers kept.
	promMaxCached = 1024
	// promMaxWarned bounds the warnings remembered as written.
	promMaxWarned = 64
	// promSource names Prometheus in the forecast's basis.
	promSource = "Prometheus"
)

// promFlags are the flags of the forecast's Prometheus source.
type promFlags struct {
	address, tokenFile, caFile, space string
	lookback                          time.Duration
}

func addPromFlags(fs *pflag.FlagSet) *promFlags {
	f := &promFlags{}
	fs.StringVar(&f.address, "prometheus", "",
		"Forecast from this Prometheus's stager_policy_stage_duration_seconds (http or https URL) where it has a stage, from status.history elsewhere")
	fs.DurationVar(&f.lookback, "prometheus-lookback", 30*24*time.Hour, "With --prometheus, how far back the median of each stage looks")
	fs.StringVar(&f.space, "prometheus-space", "",
		"With --prometheus, the space's name as the stager labels its metrics (default: the space's name with --all-spaces; without, any space, if only one has the policy)")
	fs.StringVar(&f.tokenFile, "prometheus-bearer-token-file", "",
		"With --prometheus, a file holding the bearer token of its queries (an https URL, or http on a loopback address)")
	fs.StringVar(&f.caFile, "prometheus-ca-file", "", "With --prometheus, a PEM file of the CA its https certificate must chain to (default: the system's)")
	return f
}

// forecaster forecasts rollouts: from status.history, and, given a
// Prometheus, from its per-policy stage durations where it has a stage
// (forecast.ForObserved). Its zero value, or nil, uses the record only.
type forecaster struct {
	endpoint *analysis.Endpoint
	space    string
	lookback time.Duration
	warnings io.Writer

	mu     sync.Mutex
	warned map[string]bool
	cache  map[promKey]promAnswer
	// down is the last failure of Prometheus itself (not of a query),
	// which every policy's forecast then waits out.
	down *promAnswer
}

// promKey names a policy in a space.
type promKey struct{ space, policy string }

// promAnswer is what Prometheus answered of a policy, or why it did not.
type promAnswer struct {
	at       time.Time
	observed *forecast.Observations
	problem  string
}

// newForecaster returns the forecaster the flags ask for, warning on
// warnings; nil without --prometheus.
func newForecaster(f *promFlags, warnings io.Writer) (*forecaster, error) {
	if f == nil || f.address == "" {
		if f != nil && (f.tokenFile != "" || f.caFile != "" || f.space != "") {
			return nil, errors.New("--prometheus-bearer-token-file, --prometheus-ca-file and --prometheus-space need --prometheus")
		}
		return nil, nil
	}
	if f.lookback < time.Minute || f.lookback > 400*24*time.Hour {
		return nil, fmt.Errorf("--prometheus-lookback %s: want from 1m to 400d", f.lookback)
	}
	u, err := url.Parse(f.address)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		// The address is not echoed: it may carry a password.
		return nil, errors.New("--prometheus: want an http(s) URL without user information, query or fragment (a token goes in --prometheus-bearer-token-file)")
	}
	var token, ca []byte
	if f.tokenFile != "" {
		if u.Scheme == "http" && !loopback(u.Hostname()) {
			return nil, errors.New("--prometheus-bearer-token-file needs an https --prometheus, or an http one on a loopback address: the token would cross the network in the clear")
		}
		if token, err = os.ReadFile(f.tokenFile); err != nil {
			return nil, fmt.Errorf("--prometheus-bearer-token-file: %w", err)
		}
		if t := strings.TrimSpace(string(token)); t == "" || strings.ContainsAny(t, "\r\n") {
			return nil, errors.New("--prometheus-bearer-token-file: the file is empty or spans lines")
		}
	}
	if f.caFile != "" {
		if ca, err = os.ReadFile(f.caFile); err != nil {
			return nil, fmt.Errorf("--prometheus-ca-file: %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(ca) {
			return nil, errors.New("--prometheus-ca-file: the file holds no PEM certificate")
		}
	}
	// The user named this Prometheus: plain http is theirs to choose (a
	// port-forward, say), unlike a MetricProvider's for the stager.
	endpoint, err := analysis.NewEndpoint(&hostingv1alpha1.PrometheusProvider{Address: f.address}, ca, token,
		analysis.Options{AllowInsecure: true, Timeout: promTimeout, MaxResponseBytes: promMaxResponseBytes})
	if err != nil {
		// Its text names neither the address nor the token.
		return nil, fmt.Errorf("--prometheus: %w", err)
	}
	return &forecaster{endpoint: endpoint, space: f.space, lookback: f.lookback, warnings: warnings,
		warned: map[string]bool{}, cache: map[promKey]promAnswer{}}, nil
}

// loopback reports whether host is a loopback address or localhost.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// forecast forecasts the rollout of p, a policy of space (the stager's
// name for it, "" when not known), at now. When Prometheus was named but
// did not serve the forecast, note says why in a line, which is also
// written once to the warnings; the forecast is then the record's.
func (fc *forecaster) forecast(ctx context.Context, space string, p *v1alpha1.StagedBindingPolicy, now time.Time) (f forecast.Forecast, note string) {
	if fc == nil || fc.endpoint == nil {
		return forecast.For(p, now), ""
	}
	f = forecast.For(p, now)
	if f.Kind == forecast.NotRunning {
		return f, "" // nothing to ask Prometheus
	}
	if fc.space != "" {
		space = fc.space
	}
	answer := fc.observations(ctx, space, p.Name, now)
	if answer.problem != "" {
		note = "Prometheus not used: " + answer.problem + "; forecasting from status.history"
		fc.warn(note)
		return f, note
	}
	return forecast.ForObserved(p, now, answer.observed), ""
}

// warn writes a warning once.
func (fc *forecaster) warn(note string) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.warned[note] || fc.warnings == nil {
		return
	}
	if len(fc.warned) >= promMaxWarned {
		clear(fc.warned) // a long-running dashboard meets ever new error texts
	}
	fc.warned[note] = true
	fprintf(fc.warnings, "warning: %s\n", note)
}

// observations returns what Prometheus answers of policy in space, from
// the cache when recent; a failure is remembered as long, for every
// policy, so that an unreachable Prometheus delays a command once.
func (fc *forecaster) observations(ctx context.Context, space, policy string, now time.Time) promAnswer {
	key := promKey{space, policy}
	fc.mu.Lock()
	if down := fc.down; down != nil && now.Sub(down.at) < promRemember {
		fc.mu.Unlock()
		return *down
	}
	if a, ok := fc.cache[key]; ok && now.Sub(a.at) < promRemember {
		fc.mu.Unlock()
		return a
	}
	fc.mu.Unlock()

	observed, err := fc.query(ctx, space, policy)
	a := promAnswer{at: now, observed: observed}
	if err != nil {
		a.problem = err.Error()
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if len(fc.cache) >= promMaxCached {
		clear(fc.cache)
	}
	fc.cache[key] = a
	var e *analysis.Error
	if errors.As(err, &e) && e.Reason != analysis.ReasonQueryFailed {
		fc.down = &a
	}
	return a
}

// query asks Prometheus for the median and the count of completions of
// each stage of policy in space (any space when ""), over the lookback.
func (fc *forecaster) query(ctx context.Context, space, policy string) (*forecast.Observations, error) {
	selector := "policy=" + strconv.Quote(policy)
	if space != "" {
		selector += ",space=" + strconv.Quote(space)
	}
	window := fmt.Sprintf("[%ds]", int64(fc.lookback/time.Second))
	medians, err := fc.endpoint.QueryVector(ctx, fmt.Sprintf("histogram_quantile(0.5, sum by (le, space, stage) (increase(%s_bucket{%s}%s)))",
		metrics.PolicyStageDurationName, selector, window))
	if err != nil {
		return nil, err
	}
	counts, err := fc.endpoint.QueryVector(ctx, fmt.Sprintf("sum by (space, stage) (increase(%s_count{%s}%s))",
		metrics.PolicyStageDurationName, selector, window))
	if err != nil {
		return nil, err
	}
	return promObservations(medians, counts, fc.lookback)
}

// promObservations makes the observations of one policy from Prometheus's
// answers: a stage with a finite median not negative and a count that
// rounds to one or more (increase() extrapolates), in one space. An
// answer spanning several spaces is refused: they are other policies of
// the same name.
func promObservations(medians, counts []analysis.Sample, lookback time.Duration) (*forecast.Observations, error) {
	spaces := map[string]bool{}
	for _, s := range slices.Concat(medians, counts) {
		spaces[s.Labels["space"]] = true
	}
	if len(spaces) > 1 {
		names := make([]string, 0, len(spaces))
		for name := range spaces {
			names = append(names, strconv.Quote(name))
		}
		slices.Sort(names)
		if len(names) > 3 {
			names = append(names[:3], "...")
		}
		return nil, fmt.Errorf("the policy has stage durations in %d spaces (%s): name one with --prometheus-space", len(spaces),
			strings.Join(names, ", "))
	}
	o := &forecast.Observations{Source: promSource, Window: lookback, Stages: map[string]forecast.Observed{}}
	count := map[string]int{}
	for _, s := range counts {
		if n := math.Round(s.Value); n >= 1 && n < math.MaxInt32 {
			count[s.Labels["stage"]] = int(n)
		}
	}
	for _, s := range medians {
		stage, v := s.Labels["stage"], s.Value
		if count[stage] == 0 || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			continue
		}
		median := forecast.MaxStageDuration
		if v < median.Seconds() {
			median = time.Duration(math.Round(v)) * time.Second
		}
		o.Stages[stage] = forecast.Observed{Median: median, Count: count[stage]}
	}
	return o, nil
}
