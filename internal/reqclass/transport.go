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

package reqclass

import (
	"context"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Label names.
const (
	LabelClass = "class"
	LabelVerb  = "verb"
	LabelCode  = "code"
)

// CodeError is the code of a request that got no answer.
const CodeError = "error"

// knownCodes are the status codes counted as themselves; any other is
// counted by its hundred ("2xx" ... "5xx"), or as ClassOther.
var knownCodes = map[string]bool{}

func init() {
	for _, code := range []int{200, 201, 204, 304, 400, 401, 403, 404, 405, 409, 410, 412, 413, 415, 422, 429, 500, 501, 502, 503, 504} {
		knownCodes[strconv.Itoa(code)] = true
	}
}

var (
	requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stager_api_requests_total",
		Help: "Requests the stager sent to API servers (every attempt), by class (the resource, leases/fence and leases/peer apart, discovery, readyz, other), verb (GET, LIST, WATCH, POST, PUT, PATCH, DELETE, OTHER) and code (the HTTP status, or error).",
	}, []string{LabelClass, LabelVerb, LabelCode})

	durations = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "stager_api_request_duration_seconds",
		Help:    "Time from sending a request to an API server to its answer's headers (a watch's: to its start), by class and verb.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
	}, []string{LabelClass, LabelVerb})
)

func init() {
	ctrlmetrics.Registry.MustRegister(requests, durations)
}

// Collectors returns the metrics, registered with controller-runtime's
// registry: the requests' counter, then their durations' histogram.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{requests, durations}
}

// Instrument returns a copy of cfg whose clients count their requests. A
// config instrumented already (or a copy of one) counts each request once.
func (o Options) Instrument(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(o.wrapper(clock.RealClock{}))
	return out
}

// wrapper returns the transport wrapper that counts requests, timed by clk.
func (o Options) wrapper(clk clock.PassiveClock) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		if _, counted := next.(*counting); counted {
			return next
		}
		return &counting{options: o, next: next, clock: clk}
	}
}

// counting is a RoundTripper that counts the requests it sends.
type counting struct {
	options Options
	next    http.RoundTripper
	clock   clock.PassiveClock
}

// RoundTrip sends req and counts it.
func (c *counting) RoundTrip(req *http.Request) (*http.Response, error) {
	if seen, probe := req.Context().Value(probeKey{}).(*bool); probe {
		*seen = true
		return c.next.RoundTrip(req)
	}
	class, verb := c.options.Classify(req.Method, req.URL)
	start := c.clock.Now()
	resp, err := c.next.RoundTrip(req)
	durations.WithLabelValues(class, verb).Observe(c.clock.Since(start).Seconds())
	requests.WithLabelValues(class, verb, codeOf(resp, err)).Inc()
	return resp, err
}

// WrappedRoundTripper returns the transport counting wraps, for client-go's
// utilities that look through wrappers.
func (c *counting) WrappedRoundTripper() http.RoundTripper { return c.next }

// codeOf returns the code label of an answer: its status if known, its
// hundred otherwise, CodeError without one.
func codeOf(resp *http.Response, err error) string {
	if err != nil || resp == nil {
		return CodeError
	}
	code := strconv.Itoa(resp.StatusCode)
	switch {
	case knownCodes[code]:
		return code
	case resp.StatusCode >= 100 && resp.StatusCode < 600:
		return code[:1] + "xx"
	default:
		return ClassOther
	}
}

// probeKey marks the request of Instrumented in its context: the counting
// transport notes that it saw it, and does not count it.
type probeKey struct{}

// answering is the transport under Instrumented's chain: it answers at once.
type answering struct{}

// RoundTrip answers 200 with no body.
func (answering) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
}

// Instrumented tells whether the clients of cfg count their requests: a
// request sent through its transport wrappers (whatever they are) passes a
// counting one. Tests of the wiring ask it.
func Instrumented(cfg *rest.Config) bool {
	if cfg == nil || cfg.WrapTransport == nil {
		return false
	}
	seen := new(bool)
	ctx := context.WithValue(context.Background(), probeKey{}, seen)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://probe.invalid/readyz", http.NoBody)
	if err != nil {
		return false
	}
	resp, err := cfg.WrapTransport(answering{}).RoundTrip(req)
	if err == nil {
		_ = resp.Body.Close()
	}
	return *seen
}
