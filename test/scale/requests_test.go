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

package scale

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubestellar/workload-stager/internal/controller/stagedbindingpolicy"
)

// apiServerWork is what a kube-apiserver's counters say it did: requests by
// verb and resource, and the watch events it sent by resource, with their
// bytes.
type apiServerWork struct {
	requests map[string]float64
	// refused are the requests answered with a status of 400 or more, by
	// verb, resource and status.
	refused     map[string]float64
	watchEvents map[string]float64
	watchBytes  map[string]float64
	// durations are the stager's requests' times to answer, watches left
	// out: "count", "sum" (seconds) and each bucket's cumulative count
	// under its bound ("le 0.1").
	durations map[string]float64
}

// newAPIServerWork returns an apiServerWork with nothing counted.
func newAPIServerWork() apiServerWork {
	return apiServerWork{requests: map[string]float64{}, refused: map[string]float64{}, watchEvents: map[string]float64{},
		watchBytes: map[string]float64{}, durations: map[string]float64{}}
}

// counters lists w's maps, in the same order for every apiServerWork.
func (w apiServerWork) counters() []map[string]float64 {
	return []map[string]float64{w.requests, w.refused, w.watchEvents, w.watchBytes, w.durations}
}

// readAPIServerWork reads the counters of the kube-apiserver that cfg
// reaches, from its /metrics.
func readAPIServerWork(ctx context.Context, cfg *rest.Config) (apiServerWork, error) {
	body, err := apiServerMetrics(ctx, cfg)
	if err != nil {
		return apiServerWork{}, err
	}
	return parseAPIServerWork(bytes.NewReader(body))
}

// apiServerMetrics returns the /metrics of the API server of cfg.
func apiServerMetrics(ctx context.Context, cfg *rest.Config) ([]byte, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return httpGetWith(ctx, httpClient, strings.TrimSuffix(cfg.Host, "/")+"/metrics")
}

// parseAPIServerWork reads apiserver_request_total,
// apiserver_watch_events_total and the sum of apiserver_watch_events_sizes
// from Prometheus's text format.
func parseAPIServerWork(r io.Reader) (apiServerWork, error) {
	families, err := metricFamilies(r, "the API server's")
	if err != nil {
		return apiServerWork{}, err
	}
	w := newAPIServerWork()
	for _, m := range families["apiserver_request_total"].GetMetric() {
		resource := label(m, "resource")
		if sub := label(m, "subresource"); sub != "" {
			resource += "/" + sub
		}
		request := label(m, "verb") + " " + resource
		w.requests[request] += m.GetCounter().GetValue()
		if code, err := strconv.Atoi(label(m, "code")); err == nil && code >= 400 {
			w.refused[request+" "+label(m, "code")] += m.GetCounter().GetValue()
		}
	}
	for _, m := range families["apiserver_watch_events_total"].GetMetric() {
		w.watchEvents[watchedResource(m)] += m.GetCounter().GetValue()
	}
	for _, m := range families["apiserver_watch_events_sizes"].GetMetric() {
		w.watchBytes[watchedResource(m)] += m.GetHistogram().GetSampleSum()
	}
	return w, nil
}

// label returns the value of a metric's label, or "".
func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// watchedResource is the resource of a watch event metric: its resource
// label, or its kind label in older API servers.
func watchedResource(m *dto.Metric) string {
	return cmp.Or(label(m, "resource"), label(m, "kind"))
}

// spacesWork reads the counters of every space's API server, added up.
func spacesWork(ctx context.Context, spaces []*latencySpace) (apiServerWork, error) {
	sum := newAPIServerWork()
	for _, sp := range spaces {
		w, err := readAPIServerWork(ctx, sp.Config)
		if err != nil {
			return apiServerWork{}, fmt.Errorf("space %s: %w", sp.Name, err)
		}
		sum.add(w)
	}
	return sum, nil
}

// mebibytes returns m's byte counts in MiB.
func mebibytes(m map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v / (1 << 20)
	}
	return out
}

// minus returns the work done since before.
func (w apiServerWork) minus(before apiServerWork) apiServerWork {
	out := newAPIServerWork()
	then, diff := before.counters(), out.counters()
	for i, now := range w.counters() {
		for k, v := range now {
			if d := v - then[i][k]; d > 0 {
				diff[i][k] = d
			}
		}
	}
	return out
}

// top formats the n largest counts of m, largest first, and their sum.
func top(m map[string]float64, n int) string {
	keys := make([]string, 0, len(m))
	total := 0.0
	for k, v := range m {
		keys = append(keys, k)
		total += v
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), strings.Compare(a, b)) })
	parts := make([]string, 0, n)
	for _, k := range keys[:min(n, len(keys))] {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, m[k]))
	}
	return fmt.Sprintf("%.0f in all; %s", total, strings.Join(parts, ", "))
}

// topPer formats the n largest counts of m divided by spaces, largest
// first, and their sum so divided: what each space cost, on average.
func topPer(m map[string]float64, spaces, n int) string {
	keys := make([]string, 0, len(m))
	total := 0.0
	for k, v := range m {
		keys = append(keys, k)
		total += v
	}
	per := func(v float64) float64 {
		if spaces == 0 {
			return 0
		}
		return v / float64(spaces)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), strings.Compare(a, b)) })
	parts := make([]string, 0, n)
	for _, k := range keys[:min(n, len(keys))] {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, per(m[k])))
	}
	return fmt.Sprintf("%.2f a space; %s", per(total), strings.Join(parts, ", "))
}

// stagerAPIRequests reads the stager's own count of the requests it sent,
// by verb and class (stager_api_requests_total), from its /metrics at addr.
func stagerAPIRequests(ctx context.Context, addr string) (apiServerWork, error) {
	body, err := httpGet(ctx, "http://"+addr+"/metrics")
	if err != nil {
		return apiServerWork{}, fmt.Errorf("reading the stager's metrics: %w", err)
	}
	return parseStagerAPIRequests(bytes.NewReader(body))
}

// parseStagerAPIRequests reads stager_api_requests_total into an
// apiServerWork's requests ("<verb> <class>", as kcp's are "<verb>
// <resource>") and refused (those answered 400 or more, or not at all:
// "<verb> <class> <code>").
func parseStagerAPIRequests(r io.Reader) (apiServerWork, error) {
	families, err := metricFamilies(r, "the stager's")
	if err != nil {
		return apiServerWork{}, err
	}
	w := newAPIServerWork()
	for _, m := range families["stager_api_requests_total"].GetMetric() {
		request := label(m, "verb") + " " + label(m, "class")
		n := m.GetCounter().GetValue()
		w.requests[request] += n
		code := label(m, "code")
		// Codes are exact, a hundred ("4xx") or "error" (no answer).
		if code == "error" || strings.HasPrefix(code, "4") || strings.HasPrefix(code, "5") {
			w.refused[request+" "+code] += n
		}
	}
	for _, m := range families["stager_api_request_duration_seconds"].GetMetric() {
		if label(m, "verb") == "WATCH" {
			continue
		}
		h := m.GetHistogram()
		w.durations["count"] += float64(h.GetSampleCount())
		w.durations["sum"] += h.GetSampleSum()
		for _, b := range h.GetBucket() {
			w.durations[fmt.Sprintf("le %g", b.GetUpperBound())] += float64(b.GetCumulativeCount())
		}
	}
	return w, nil
}

// latency describes the stager's requests' times to answer in w: their
// mean, and the shares answered within 0.1 s and after more than 1 s and
// 10 s.
func latency(w apiServerWork) string {
	n := w.durations["count"]
	if n == 0 {
		return "no request answered"
	}
	share := func(bound string) float64 { return 100 * w.durations["le "+bound] / n }
	return fmt.Sprintf("%.0f answered, mean %.0f ms; within 0.1 s %.1f %%, after more than 1 s %.2f %%, after more than 10 s %.2f %%",
		n, 1000*w.durations["sum"]/n, share("0.1"), 100-share("1"), 100-share("10"))
}

// add adds other's counts to w's.
func (w apiServerWork) add(other apiServerWork) {
	from := other.counters()
	for i, to := range w.counters() {
		for k, v := range from[i] {
			to[k] += v
		}
	}
}

// TestParseAPIServerWork reads the counters the harness reports from a
// kube-apiserver's /metrics, and what a run added to them.
func TestParseAPIServerWork(t *testing.T) {
	const before = `# HELP apiserver_request_total Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",group="control.kubestellar.io",resource="bindingpolicies",scope="cluster",subresource="",verb="POST",version="v1alpha1"} 10
apiserver_request_total{code="200",component="apiserver",group="community.kubestellar.io",resource="stagedbindingpolicies",scope="cluster",subresource="status",verb="PUT",version="v1alpha1"} 5
# TYPE apiserver_watch_events_total counter
apiserver_watch_events_total{group="control.kubestellar.io",resource="bindingpolicies",version="v1alpha1"} 30
# TYPE apiserver_watch_events_sizes histogram
apiserver_watch_events_sizes_bucket{group="control.kubestellar.io",resource="bindingpolicies",version="v1alpha1",le="+Inf"} 30
apiserver_watch_events_sizes_sum{group="control.kubestellar.io",resource="bindingpolicies",version="v1alpha1"} 3000
apiserver_watch_events_sizes_count{group="control.kubestellar.io",resource="bindingpolicies",version="v1alpha1"} 30
`
	const after = `# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",group="control.kubestellar.io",resource="bindingpolicies",scope="cluster",subresource="",verb="POST",version="v1alpha1"} 110
apiserver_request_total{code="409",component="apiserver",dry_run="All,Other}",group="control.kubestellar.io",resource="bindingpolicies",scope="cluster",subresource="",verb="POST",version="v1alpha1"} 2
apiserver_request_total{code="200",component="apiserver",group="community.kubestellar.io",resource="stagedbindingpolicies",scope="cluster",subresource="status",verb="PUT",version="v1alpha1"} 305
# TYPE apiserver_watch_events_total counter
apiserver_watch_events_total{group="control.kubestellar.io",kind="BindingPolicy",resource="bindingpolicies",version="v1alpha1"} 330
# TYPE apiserver_watch_events_sizes histogram
apiserver_watch_events_sizes_bucket{group="control.kubestellar.io",resource="bindingpolicies",version="v1alpha1",le="+Inf"} 330
apiserver_watch_events_sizes_sum{group="control.kubestellar.io",resource="bindingpolicies",version="v1alpha1"} 33000
apiserver_watch_events_sizes_count{group="control.kubestellar.io",resource="bindingpolicies",version="v1alpha1"} 330
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1",le="+Inf"} 3
apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 0.01
apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 3
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.5
`
	then, err := parseAPIServerWork(strings.NewReader(before))
	if err != nil {
		t.Fatal(err)
	}
	now, err := parseAPIServerWork(strings.NewReader(after))
	if err != nil {
		t.Fatal(err)
	}
	run := now.minus(then)
	if got, want := top(run.requests, 5), "402 in all; PUT stagedbindingpolicies/status 300, POST bindingpolicies 102"; got != want {
		t.Errorf("requests: %q, want %q", got, want)
	}
	if got, want := top(run.refused, 5), "2 in all; POST bindingpolicies 409 2"; got != want {
		t.Errorf("refused: %q, want %q", got, want)
	}
	if run.watchEvents["bindingpolicies"] != 300 || run.watchBytes["bindingpolicies"] != 30000 {
		t.Errorf("watch events %v of %v bytes, want 300 of 30000 for bindingpolicies", run.watchEvents, run.watchBytes)
	}
	if got, want := top(run.requests, 1), "402 in all; PUT stagedbindingpolicies/status 300"; got != want {
		t.Errorf("top 1: %q, want %q", got, want)
	}
}

// TestParseStagerRequests counts the stager's requests by method, and
// apart from them those that were shed or not answered.
func TestParseStagerRequests(t *testing.T) {
	const metrics = `# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="kcp:6443",method="GET"} 90
rest_client_requests_total{code="404",host="kcp:6443",method="GET"} 10
rest_client_requests_total{code="429",host="kcp:6443",method="GET"} 40
rest_client_requests_total{code="<error>",host="kcp:6443",method="GET"} 5
rest_client_requests_total{code="200",host="kcp:6443",method="PUT"} 30
rest_client_requests_total{code="409",host="kcp:6443",method="PUT"} 2
rest_client_requests_total{code="429",host="kcp:6443",method="PUT"} 3
`
	got, err := parseStagerRequests(strings.NewReader(metrics))
	if err != nil {
		t.Fatal(err)
	}
	if want := "GET 100, GET 429 40, PUT 32, GET <error> 5, PUT 429 3"; got.String() != want {
		t.Errorf("requests: %q, want %q", got.String(), want)
	}
	if got.total() != 180 {
		t.Errorf("total %v, want every attempt, 180", got.total())
	}
}

// queueWork is what the stager's work-queue metrics say of its controllers
// (those whose name starts with the stager's controller name): how many
// runs waited in a queue and how long in all, and how long the runs took.
type queueWork struct {
	waits, waited float64 // runs taken from a queue, and their seconds in it
	runs, ran     float64 // runs finished, and their seconds of work
}

// readQueueWork reads the stager's queueWork from its /metrics at addr.
func readQueueWork(ctx context.Context, addr string) (queueWork, error) {
	body, err := httpGet(ctx, "http://"+addr+"/metrics")
	if err != nil {
		return queueWork{}, fmt.Errorf("reading the stager's metrics: %w", err)
	}
	return parseQueueWork(bytes.NewReader(body))
}

// httpGet returns the body of a GET of url, or an error unless it answers 200.
func httpGet(ctx context.Context, url string) ([]byte, error) {
	return httpGetWith(ctx, http.DefaultClient, url)
}

// httpGetWith is httpGet through client.
func httpGetWith(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %.200s", url, resp.Status, body)
	}
	return body, nil
}

// metricFamilies parses Prometheus's text format; whose names the server
// in errors.
func metricFamilies(r io.Reader, whose string) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("reading %s metrics: %w", whose, err)
	}
	return families, nil
}

// parseQueueWork adds up workqueue_queue_duration_seconds and
// workqueue_work_duration_seconds of the stager's controllers.
func parseQueueWork(r io.Reader) (queueWork, error) {
	families, err := metricFamilies(r, "the stager's")
	if err != nil {
		return queueWork{}, err
	}
	var q queueWork
	for _, m := range families["workqueue_queue_duration_seconds"].GetMetric() {
		if strings.HasPrefix(label(m, "name"), stagedbindingpolicy.ControllerName+"/") {
			q.waits += float64(m.GetHistogram().GetSampleCount())
			q.waited += m.GetHistogram().GetSampleSum()
		}
	}
	for _, m := range families["workqueue_work_duration_seconds"].GetMetric() {
		if strings.HasPrefix(label(m, "name"), stagedbindingpolicy.ControllerName+"/") {
			q.runs += float64(m.GetHistogram().GetSampleCount())
			q.ran += m.GetHistogram().GetSampleSum()
		}
	}
	return q, nil
}

// minus returns the queue work done since before.
func (q queueWork) minus(before queueWork) queueWork {
	return queueWork{waits: q.waits - before.waits, waited: q.waited - before.waited, runs: q.runs - before.runs, ran: q.ran - before.ran}
}

// String says how many runs there were and how long they waited and took on average.
func (q queueWork) String() string {
	mean := func(sum, n float64) time.Duration {
		if n == 0 {
			return 0
		}
		return time.Duration(sum / n * float64(time.Second)).Round(time.Millisecond)
	}
	return fmt.Sprintf("%.0f runs waited %s in the queue on average (%.0f s in all); %.0f runs took %s on average (%.0f s in all)",
		q.waits, mean(q.waited, q.waits), q.waited, q.runs, mean(q.ran, q.runs), q.ran)
}

// TestParseQueueWork adds up the stager controllers' work-queue metrics only.
func TestParseQueueWork(t *testing.T) {
	const metrics = `# TYPE workqueue_queue_duration_seconds histogram
workqueue_queue_duration_seconds_bucket{controller="stagedbindingpolicy/wds01",name="stagedbindingpolicy/wds01",le="+Inf"} 4
workqueue_queue_duration_seconds_sum{controller="stagedbindingpolicy/wds01",name="stagedbindingpolicy/wds01"} 2
workqueue_queue_duration_seconds_count{controller="stagedbindingpolicy/wds01",name="stagedbindingpolicy/wds01"} 4
workqueue_queue_duration_seconds_bucket{controller="stagedbindingpolicy/wds02",name="stagedbindingpolicy/wds02",le="+Inf"} 6
workqueue_queue_duration_seconds_sum{controller="stagedbindingpolicy/wds02",name="stagedbindingpolicy/wds02"} 1
workqueue_queue_duration_seconds_count{controller="stagedbindingpolicy/wds02",name="stagedbindingpolicy/wds02"} 6
workqueue_queue_duration_seconds_bucket{controller="other",name="other",le="+Inf"} 100
workqueue_queue_duration_seconds_sum{controller="other",name="other"} 100
workqueue_queue_duration_seconds_count{controller="other",name="other"} 100
# TYPE workqueue_work_duration_seconds histogram
workqueue_work_duration_seconds_bucket{controller="stagedbindingpolicy/wds01",name="stagedbindingpolicy/wds01",le="+Inf"} 8
workqueue_work_duration_seconds_sum{controller="stagedbindingpolicy/wds01",name="stagedbindingpolicy/wds01"} 4
workqueue_work_duration_seconds_count{controller="stagedbindingpolicy/wds01",name="stagedbindingpolicy/wds01"} 8
`
	before := queueWork{waits: 2, waited: 1, runs: 4, ran: 2}
	q, err := parseQueueWork(strings.NewReader(metrics))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := q.minus(before).String(),
		"8 runs waited 250ms in the queue on average (2 s in all); 4 runs took 500ms on average (2 s in all)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// kcpWatches returns the watches kcp's server holds open
// (apiserver_longrunning_requests with verb WATCH, summed), read from its
// /metrics as the shard admin of its admin kubeconfig (the workspaces'
// admin may not read it).
func kcpWatches(ctx context.Context, adminKubeconfig string) (float64, error) {
	body, err := kcpMetrics(ctx, adminKubeconfig)
	if err != nil {
		return 0, err
	}
	families, err := metricFamilies(bytes.NewReader(body), "kcp's")
	if err != nil {
		return 0, err
	}
	var watches float64
	for _, m := range families["apiserver_longrunning_requests"].GetMetric() {
		if label(m, "verb") == "WATCH" {
			watches += m.GetGauge().GetValue()
		}
	}
	return watches, nil
}

// kcpMetrics reads kcp's /metrics as the shard admin of its admin
// kubeconfig (the workspaces' admin may not read it).
func kcpMetrics(ctx context.Context, adminKubeconfig string) ([]byte, error) {
	raw, err := clientcmd.LoadFromFile(adminKubeconfig)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*raw, "shard-base", &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("the shard admin's context of %s: %w", adminKubeconfig, err)
	}
	body, err := apiServerMetrics(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("reading kcp's metrics: %w", err)
	}
	return body, nil
}

// kcpWork reads the requests kcp served so far, from every client, by
// verb and resource (apiserver_request_total), and those it refused.
func kcpWork(ctx context.Context, adminKubeconfig string) (apiServerWork, error) {
	body, err := kcpMetrics(ctx, adminKubeconfig)
	if err != nil {
		return apiServerWork{}, err
	}
	return parseAPIServerWork(bytes.NewReader(body))
}

// stagerRequests returns the requests the stager served at addr has sent to
// API servers so far (rest_client_requests_total).
func stagerRequests(ctx context.Context, addr string) (requestCounts, error) {
	body, err := httpGet(ctx, "http://"+addr+"/metrics")
	if err != nil {
		return nil, fmt.Errorf("reading the stager's metrics: %w", err)
	}
	return parseStagerRequests(bytes.NewReader(body))
}

// parseStagerRequests reads rest_client_requests_total from Prometheus's
// text format into requestCounts.
func parseStagerRequests(r io.Reader) (requestCounts, error) {
	families, err := metricFamilies(r, "the stager's")
	if err != nil {
		return nil, err
	}
	requests := requestCounts{}
	for _, m := range families["rest_client_requests_total"].GetMetric() {
		key := cmp.Or(label(m, "method"), "?")
		// client-go counts every attempt: those an API server shed
		// (429) and those that got no answer ("<error>") are named
		// apart, as they are load, not work.
		if code := label(m, "code"); code == "429" || code == "<error>" {
			key += " " + code
		}
		requests[key] += m.GetCounter().GetValue()
	}
	return requests, nil
}

// requestCounts are requests by HTTP method; the attempts an API server
// shed or did not answer are counted apart, as "<method> 429" and
// "<method> <error>".
type requestCounts map[string]float64

// add adds other's requests.
func (c requestCounts) add(other requestCounts) {
	for method, n := range other {
		c[method] += n
	}
}

// since returns the requests sent after those of before, which the same
// replicas sent.
func (c requestCounts) since(before requestCounts) requestCounts {
	out := requestCounts{}
	for method, n := range c {
		out[method] = n - before[method]
	}
	return out
}

// total sums the requests of every method.
func (c requestCounts) total() float64 {
	var sum float64
	for _, n := range c {
		sum += n
	}
	return sum
}

// String lists the requests by method, most first.
func (c requestCounts) String() string {
	methods := make([]string, 0, len(c))
	for method := range c {
		methods = append(methods, method)
	}
	slices.SortFunc(methods, func(a, b string) int {
		return cmp.Or(cmp.Compare(c[b], c[a]), cmp.Compare(a, b))
	})
	parts := make([]string, 0, len(methods))
	for _, method := range methods {
		if c[method] != 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", method, c[method]))
		}
	}
	return strings.Join(parts, ", ")
}

// TestParseStagerAPIRequests reads the stager's own count of its requests
// by verb and class, those refused apart with their code, and what a window
// added, per space.
func TestParseStagerAPIRequests(t *testing.T) {
	const before = `# TYPE stager_api_requests_total counter
stager_api_requests_total{class="leases/fence",code="200",verb="PUT"} 100
stager_api_requests_total{class="stagedbindingpolicies/status",code="200",verb="PUT"} 10
stager_api_requests_total{class="events",code="201",verb="POST"} 4
`
	const after = `# TYPE stager_api_requests_total counter
stager_api_requests_total{class="leases/fence",code="200",verb="PUT"} 400
stager_api_requests_total{class="leases/fence",code="429",verb="PUT"} 6
stager_api_requests_total{class="stagedbindingpolicies/status",code="200",verb="PUT"} 110
stager_api_requests_total{class="stagedbindingpolicies/status",code="409",verb="PUT"} 2
stager_api_requests_total{class="events",code="201",verb="POST"} 4
stager_api_requests_total{class="readyz",code="error",verb="GET"} 1
stager_api_requests_total{class="events",code="2xx",verb="GET"} 3
# TYPE stager_api_request_duration_seconds histogram
stager_api_request_duration_seconds_bucket{class="events",verb="POST",le="0.1"} 2
stager_api_request_duration_seconds_bucket{class="events",verb="POST",le="1"} 3
stager_api_request_duration_seconds_bucket{class="events",verb="POST",le="10"} 4
stager_api_request_duration_seconds_bucket{class="events",verb="POST",le="+Inf"} 4
stager_api_request_duration_seconds_sum{class="events",verb="POST"} 6.4
stager_api_request_duration_seconds_count{class="events",verb="POST"} 4
stager_api_request_duration_seconds_bucket{class="bindings",verb="WATCH",le="+Inf"} 9
stager_api_request_duration_seconds_sum{class="bindings",verb="WATCH"} 900
stager_api_request_duration_seconds_count{class="bindings",verb="WATCH"} 9
`
	then, err := parseStagerAPIRequests(strings.NewReader(before))
	if err != nil {
		t.Fatal(err)
	}
	now, err := parseStagerAPIRequests(strings.NewReader(after))
	if err != nil {
		t.Fatal(err)
	}
	window := now.minus(then)
	if got, want := top(window.requests, 5), "412 in all; PUT leases/fence 306, PUT stagedbindingpolicies/status 102, GET events 3, GET readyz 1"; got != want {
		t.Errorf("requests: %q, want %q", got, want)
	}
	if got, want := top(window.refused, 5), "9 in all; PUT leases/fence 429 6, PUT stagedbindingpolicies/status 409 2, GET readyz error 1"; got != want {
		t.Errorf("refused: %q, want %q", got, want)
	}
	if got, want := topPer(window.requests, 4, 2), "103.00 a space; PUT leases/fence 76.50, PUT stagedbindingpolicies/status 25.50"; got != want {
		t.Errorf("per space: %q, want %q", got, want)
	}
	if got, want := topPer(map[string]float64{}, 0, 2), "0.00 a space; "; got != want {
		t.Errorf("per no space: %q, want %q", got, want)
	}
	if got, want := latency(window), "4 answered, mean 1600 ms; within 0.1 s 50.0 %, after more than 1 s 25.00 %, after more than 10 s 0.00 %"; got != want {
		t.Errorf("latency: %q, want %q", got, want)
	}
	if got, want := latency(then), "no request answered"; got != want {
		t.Errorf("latency before: %q, want %q", got, want)
	}
}

// renewalTimes are the fence renewals of replicas by result, each as the
// cumulative counts of stager_fence_renewal_duration_seconds' buckets.
type renewalTimes map[string]map[float64]float64

// readRenewalTimes reads a replica's renewalTimes from its /metrics at addr.
func readRenewalTimes(ctx context.Context, addr string) (renewalTimes, error) {
	body, err := httpGet(ctx, "http://"+addr+"/metrics")
	if err != nil {
		return nil, fmt.Errorf("reading the stager's metrics: %w", err)
	}
	return parseRenewalTimes(bytes.NewReader(body))
}

// parseRenewalTimes reads stager_fence_renewal_duration_seconds, the +Inf
// bucket being the count.
func parseRenewalTimes(r io.Reader) (renewalTimes, error) {
	families, err := metricFamilies(r, "the stager's")
	if err != nil {
		return nil, err
	}
	out := renewalTimes{}
	f := families["stager_fence_renewal_duration_seconds"]
	if f == nil {
		return out, nil
	}
	for _, m := range f.GetMetric() {
		h := m.GetHistogram()
		buckets := map[float64]float64{math.Inf(1): float64(h.GetSampleCount())}
		for _, b := range h.GetBucket() {
			buckets[b.GetUpperBound()] = float64(b.GetCumulativeCount())
		}
		out[label(m, "result")] = buckets
	}
	return out, nil
}

// add adds other's counts to t's.
func (t renewalTimes) add(other renewalTimes) {
	for result, buckets := range other {
		if t[result] == nil {
			t[result] = map[float64]float64{}
		}
		for le, n := range buckets {
			t[result][le] += n
		}
	}
}

// String tells, for each result, how many renewals took up to 1, 10, 30
// and 60 s, and longer.
func (t renewalTimes) String() string {
	var parts []string
	for _, result := range slices.Sorted(maps.Keys(t)) {
		b := t[result]
		parts = append(parts, fmt.Sprintf("%s %.0f (≤1 s %.0f, 1–10 s %.0f, 10–30 s %.0f, 30–60 s %.0f, >60 s %.0f)", result,
			b[math.Inf(1)], b[1], b[10]-b[1], b[30]-b[10], b[60]-b[30], b[math.Inf(1)]-b[60]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

func TestParseRenewalTimes(t *testing.T) {
	metrics := `# TYPE stager_fence_renewal_duration_seconds histogram
stager_fence_renewal_duration_seconds_bucket{result="renewed",le="1"} 5
stager_fence_renewal_duration_seconds_bucket{result="renewed",le="10"} 7
stager_fence_renewal_duration_seconds_bucket{result="renewed",le="30"} 7
stager_fence_renewal_duration_seconds_bucket{result="renewed",le="60"} 8
stager_fence_renewal_duration_seconds_bucket{result="renewed",le="+Inf"} 9
stager_fence_renewal_duration_seconds_sum{result="renewed"} 100
stager_fence_renewal_duration_seconds_count{result="renewed"} 9
`
	got, err := parseRenewalTimes(strings.NewReader(metrics))
	if err != nil {
		t.Fatal(err)
	}
	got.add(got)
	want := "renewed 18 (≤1 s 10, 1–10 s 4, 10–30 s 0, 30–60 s 2, >60 s 2)"
	if s := got.String(); s != want {
		t.Errorf("String() = %q, want %q", s, want)
	}
}
