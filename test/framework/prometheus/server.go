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

// Package prometheus runs a real Prometheus server (in $STAGER_PROMETHEUS_DIR,
// which make sets to the one hack/tool.sh builds, or on $PATH) on loopback
// for the tests, queries it through its HTTP API, and reads the repository's
// dashboard and alerting rules so that tests can run their queries.
package prometheus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubestellar/workload-stager/test/framework/process"
)

// DirEnv names the directory holding the prometheus and promtool binaries;
// unset, they are looked up on $PATH. `hack/tool.sh prometheus` builds them
// and prints the directory.
const DirEnv = "STAGER_PROMETHEUS_DIR"

// Binary returns the path of a Prometheus binary ("prometheus" or "promtool").
func Binary(name string) (string, error) {
	if dir := os.Getenv(DirEnv); dir != "" {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("%s from $%s: %w", name, DirEnv, err)
		}
		return path, nil
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s is not installed (set $STAGER_PROMETHEUS_DIR to what `hack/tool.sh prometheus` prints, or run `make test`, which does): %w", name, err)
	}
	return path, nil
}

// Options configure a Server.
type Options struct {
	// WorkDir receives the configuration, the data and the log.
	WorkDir string
	// Targets are the host:port addresses to scrape at /metrics, as job "stager".
	Targets []string
	// BearerToken, when set, makes Prometheus scrape the targets over HTTPS
	// with this token, as the stager's default metrics endpoint requires
	// (the token of an identity bound to the metrics-reader ClusterRole).
	// The targets' certificates are not verified: the stager's is
	// self-signed. Empty, the targets are scraped over plain HTTP.
	BearerToken string
	// ScrapeInterval is also the rule evaluation interval; default 1s.
	ScrapeInterval time.Duration
	// LookbackDelta is how far back an instant query looks for a sample;
	// default Prometheus's 5m.
	LookbackDelta time.Duration
	// RuleFiles are rule files (plain Prometheus format) to load.
	RuleFiles []string
}

// Server is a running Prometheus.
type Server struct {
	// URL is its base URL, e.g. http://127.0.0.1:9090.
	URL string
	// Log is the file receiving its output.
	Log string

	process *process.Process
	http    *http.Client
}

// config is the part of Prometheus's configuration file the tests use.
type config struct {
	Global struct {
		ScrapeInterval     string `json:"scrape_interval"`
		EvaluationInterval string `json:"evaluation_interval"`
	} `json:"global"`
	RuleFiles     []string       `json:"rule_files,omitempty"`
	ScrapeConfigs []scrapeConfig `json:"scrape_configs"`
}

type scrapeConfig struct {
	JobName       string         `json:"job_name"`
	Scheme        string         `json:"scheme,omitempty"`
	TLSConfig     *tlsConfig     `json:"tls_config,omitempty"`
	Authorization *authorization `json:"authorization,omitempty"`
	StaticConfigs []staticConfig `json:"static_configs"`
}

type tlsConfig struct {
	InsecureSkipVerify bool `json:"insecure_skip_verify"`
}

type authorization struct {
	CredentialsFile string `json:"credentials_file"`
}

type staticConfig struct {
	Targets []string `json:"targets"`
}

// Start starts Prometheus on a free loopback port and waits until it is ready.
func Start(ctx context.Context, o Options) (*Server, error) {
	binary, err := Binary("prometheus")
	if err != nil {
		return nil, err
	}
	if o.ScrapeInterval == 0 {
		o.ScrapeInterval = time.Second
	}
	cfg := config{RuleFiles: o.RuleFiles}
	cfg.Global.ScrapeInterval = o.ScrapeInterval.String()
	cfg.Global.EvaluationInterval = o.ScrapeInterval.String()
	scrape := scrapeConfig{JobName: "stager", StaticConfigs: []staticConfig{{Targets: o.Targets}}}
	if o.BearerToken != "" {
		tokenFile := filepath.Join(o.WorkDir, "scrape-token")
		if err := os.WriteFile(tokenFile, []byte(o.BearerToken), 0o600); err != nil {
			return nil, fmt.Errorf("writing %s: %w", tokenFile, err)
		}
		scrape.Scheme = "https"
		scrape.TLSConfig = &tlsConfig{InsecureSkipVerify: true}
		scrape.Authorization = &authorization{CredentialsFile: tokenFile}
	}
	cfg.ScrapeConfigs = []scrapeConfig{scrape}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding the Prometheus configuration: %w", err)
	}
	configFile := filepath.Join(o.WorkDir, "prometheus.yml")
	if err := os.WriteFile(configFile, data, 0o644); err != nil {
		return nil, fmt.Errorf("writing %s: %w", configFile, err)
	}
	addr, err := process.FreeAddress()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--config.file=" + configFile,
		"--storage.tsdb.path=" + filepath.Join(o.WorkDir, "prometheus-data"),
		"--web.listen-address=" + addr,
		"--web.enable-lifecycle",
	}
	if o.LookbackDelta > 0 {
		args = append(args, "--query.lookback-delta="+o.LookbackDelta.String())
	}
	logPath := filepath.Join(o.WorkDir, "prometheus.log")
	proc, err := process.Start(process.Spec{Name: "Prometheus", Binary: binary, Args: args, LogPath: logPath, StopTimeout: 15 * time.Second})
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + addr, Log: logPath, process: proc, http: &http.Client{Timeout: 30 * time.Second}}
	if err := s.waitReady(ctx); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	return s, nil
}

// waitReady polls /-/ready for up to a minute.
func (s *Server) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	for {
		if s.process.Exited() {
			return fmt.Errorf("prometheus exited at start (log %s)", s.Log)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/-/ready", nil)
		if err != nil {
			return err
		}
		if resp, err := s.http.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("prometheus not ready after a minute (log %s)", s.Log)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop stops Prometheus.
func (s *Server) Stop() error {
	return s.process.Stop()
}

// Sample is one series' value at one time.
type Sample struct {
	Metric map[string]string
	Time   time.Time
	Value  float64
}

// Series is one series' values over a range.
type Series struct {
	Metric map[string]string
	Values []Sample
}

// Query runs an instant query at a time and returns its samples. A scalar
// result is returned as one sample without labels.
func (s *Server) Query(ctx context.Context, expr string, at time.Time) ([]Sample, error) {
	params := url.Values{"query": {expr}, "time": {formatTime(at)}}
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := s.get(ctx, "/api/v1/query", params, &data); err != nil {
		return nil, fmt.Errorf("query %q: %w", expr, err)
	}
	switch data.ResultType {
	case "vector":
		var result []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(data.Result, &result); err != nil {
			return nil, fmt.Errorf("query %q: decoding the vector: %w", expr, err)
		}
		samples := make([]Sample, 0, len(result))
		for _, r := range result {
			sample, err := decodeSample(r.Value)
			if err != nil {
				return nil, fmt.Errorf("query %q: %w", expr, err)
			}
			sample.Metric = r.Metric
			samples = append(samples, sample)
		}
		return samples, nil
	case "scalar":
		var value [2]any
		if err := json.Unmarshal(data.Result, &value); err != nil {
			return nil, fmt.Errorf("query %q: decoding the scalar: %w", expr, err)
		}
		sample, err := decodeSample(value)
		if err != nil {
			return nil, fmt.Errorf("query %q: %w", expr, err)
		}
		return []Sample{sample}, nil
	default:
		return nil, fmt.Errorf("query %q: unexpected result type %q", expr, data.ResultType)
	}
}

// QueryRange runs a range query, as a Grafana time series panel does.
func (s *Server) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]Series, error) {
	params := url.Values{"query": {expr}, "start": {formatTime(start)}, "end": {formatTime(end)},
		"step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}}
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		} `json:"result"`
	}
	if err := s.get(ctx, "/api/v1/query_range", params, &data); err != nil {
		return nil, fmt.Errorf("range query %q: %w", expr, err)
	}
	series := make([]Series, 0, len(data.Result))
	for _, r := range data.Result {
		one := Series{Metric: r.Metric}
		for _, v := range r.Values {
			sample, err := decodeSample(v)
			if err != nil {
				return nil, fmt.Errorf("range query %q: %w", expr, err)
			}
			sample.Metric = r.Metric
			one.Values = append(one.Values, sample)
		}
		series = append(series, one)
	}
	return series, nil
}

// LabelValues returns the values of a label on the series matching a selector,
// as Grafana's label_values(selector, label) variable query does.
func (s *Server) LabelValues(ctx context.Context, label, selector string) ([]string, error) {
	var values []string
	if err := s.get(ctx, "/api/v1/label/"+url.PathEscape(label)+"/values", url.Values{"match[]": {selector}}, &values); err != nil {
		return nil, fmt.Errorf("values of %s on %s: %w", label, selector, err)
	}
	return values, nil
}

// RuleState is the state of one loaded rule.
type RuleState struct {
	Group     string
	Name      string
	Query     string
	Health    string
	LastError string
	// Alerts are the labels of the rule's pending or firing alerts, with their
	// state under "alertstate".
	Alerts []map[string]string
}

// Rules returns the state of every loaded rule.
func (s *Server) Rules(ctx context.Context) ([]RuleState, error) {
	var data struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Name      string `json:"name"`
				Query     string `json:"query"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
				Alerts    []struct {
					Labels map[string]string `json:"labels"`
					State  string            `json:"state"`
				} `json:"alerts"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := s.get(ctx, "/api/v1/rules", nil, &data); err != nil {
		return nil, fmt.Errorf("listing rules: %w", err)
	}
	var states []RuleState
	for _, g := range data.Groups {
		for _, r := range g.Rules {
			st := RuleState{Group: g.Name, Name: r.Name, Query: r.Query, Health: r.Health, LastError: r.LastError}
			for _, a := range r.Alerts {
				labels := map[string]string{"alertstate": a.State}
				for k, v := range a.Labels {
					labels[k] = v
				}
				st.Alerts = append(st.Alerts, labels)
			}
			states = append(states, st)
		}
	}
	return states, nil
}

// get calls an API endpoint and decodes the "data" of a successful answer.
func (s *Server) get(ctx context.Context, path string, params url.Values, into any) error {
	u := s.URL + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	var answer struct {
		Status    string          `json:"status"`
		Data      json.RawMessage `json:"data"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return fmt.Errorf("HTTP %d, not an API answer: %.200s", resp.StatusCode, body)
	}
	if answer.Status != "success" {
		return fmt.Errorf("%s: %s", answer.ErrorType, answer.Error)
	}
	if err := json.Unmarshal(answer.Data, into); err != nil {
		return fmt.Errorf("decoding the data: %w", err)
	}
	return nil
}

// decodeSample decodes the API's [unix time, "value"] pair.
func decodeSample(pair [2]any) (Sample, error) {
	t, ok := pair[0].(float64)
	if !ok {
		return Sample{}, fmt.Errorf("sample time %v is not a number", pair[0])
	}
	text, ok := pair[1].(string)
	if !ok {
		return Sample{}, fmt.Errorf("sample value %v is not a string", pair[1])
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return Sample{}, fmt.Errorf("sample value %q: %w", text, err)
	}
	sec, frac := math.Modf(t)
	return Sample{Time: time.Unix(int64(sec), int64(frac*1e9)), Value: v}, nil
}

func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixNano())/1e9, 'f', 3, 64)
}

// Finite reports whether a value is a number a panel can show (not NaN or ±Inf).
func Finite(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0)
}
