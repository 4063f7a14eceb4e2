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

package analysis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
)

// Defaults of the bounds of every query.
const (
	// DefaultTimeout bounds one query, from the connection to the last
	// byte of the answer.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxResponseBytes bounds the size of one answer.
	DefaultMaxResponseBytes = 1 << 20
	// maxRedirects is how many redirects to the provider's own host a
	// query follows.
	maxRedirects = 3
	// maxIdleConns is how many connections to its provider an endpoint
	// keeps: a stage has at most 4 analyses.
	maxIdleConns = 4
	// idleConnTimeout is how long an endpoint keeps an unused connection.
	idleConnTimeout = 90 * time.Second
)

// Endpoint is one provider's API, as the stager's options allow it.
type Endpoint struct {
	base   *url.URL
	token  string
	limit  int64
	client *http.Client
}

// NewEndpoint checks a provider's spec against the stager's options and
// returns its endpoint: an https address (http only if opts allow it),
// without user information, query or fragment; ca, when given, the PEM
// bundle the server's certificate must chain to; token, when given, the
// bearer token of every query. Its queries follow redirects to the
// address's own scheme and host only, and are bounded by the provider's
// timeout and maxResponseBytes, which can only lower the options'.
func NewEndpoint(spec *hostingv1alpha1.PrometheusProvider, ca, token []byte, opts Options) (*Endpoint, error) {
	base, err := checkAddress(spec.Address, opts.AllowInsecure)
	if err != nil {
		return nil, err
	}
	e := &Endpoint{base: base, limit: opts.MaxResponseBytes}
	if token != nil {
		e.token = strings.TrimSpace(string(token))
		if e.token == "" || strings.ContainsAny(e.token, "\r\n") {
			return nil, credentialsRefused(errors.New("the bearer token Secret's key is empty or spans lines"))
		}
	}
	if m := spec.MaxResponseBytes; m != nil && *m > 0 && *m < e.limit {
		e.limit = *m
	}
	timeout := opts.Timeout
	if t := spec.Timeout; t != nil && t.Duration > 0 && t.Duration < timeout {
		timeout = t.Duration
	}
	// The connections are kept for the provider's next queries
	// (Providers keeps its endpoint): at most one per analysis of a
	// stage, queried side by side.
	if e.client, err = NewGuardedClient(base, ca, timeout, maxIdleConns); err != nil {
		return nil, err
	}
	return e, nil
}

// close closes the endpoint's idle connections.
func (e *Endpoint) close() {
	e.client.CloseIdleConnections()
}

// checkAddress parses a provider's address and refuses what the stager
// does not allow, with an AddressRefused *Error whose text does not show
// the address; its cause, for the log, shows it redacted.
func checkAddress(address string, allowInsecure bool) (*url.URL, error) {
	refused := func(why string, shown string) error {
		return &Error{Reason: ReasonAddressRefused, Message: "its address " + why, Err: fmt.Errorf("address %q %s", shown, why)}
	}
	u, err := url.Parse(address)
	if err != nil {
		// The address is not echoed: it may carry a password.
		return nil, &Error{Reason: ReasonAddressRefused, Message: "its address is not a URL"}
	}
	shown := u.Redacted()
	switch {
	case u.Scheme != "https" && u.Scheme != "http", u.Host == "":
		return nil, refused("is not an http(s) URL", shown)
	case u.Scheme == "http" && !allowInsecure:
		return nil, refused("is plain http, which the stager allows only with --allow-insecure-metric-providers", shown)
	case u.User != nil, u.RawQuery != "", u.Fragment != "":
		return nil, refused("has user information, a query or a fragment", shown)
	}
	return u, nil
}

// apiResponse is the envelope of Prometheus's HTTP API.
type apiResponse struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

// Query sends one instant query and decodes the values of its answer.
func (e *Endpoint) Query(ctx context.Context, query string) ([]float64, error) {
	answer, err := e.send(ctx, query)
	if err != nil {
		return nil, err
	}
	from := e.answeredBy()
	values, err := decodeValues(answer.Data.ResultType, answer.Data.Result)
	if err != nil {
		return nil, &Error{Reason: ReasonBadAnswer, Message: err.Error(), Err: from}
	}
	return values, nil
}

// Sample is one sample of an instant vector: its labels and its value.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// QueryVector sends one instant query whose answer must be an instant
// vector, and decodes its samples with their labels, bounded as Query.
func (e *Endpoint) QueryVector(ctx context.Context, query string) ([]Sample, error) {
	answer, err := e.send(ctx, query)
	if err != nil {
		return nil, err
	}
	from := e.answeredBy()
	if answer.Data.ResultType != "vector" {
		return nil, &Error{Reason: ReasonBadAnswer, Message: fmt.Sprintf("the query gives a %s, not an instant vector", answer.Data.ResultType), Err: from}
	}
	var raw []struct {
		Metric map[string]string `json:"metric"`
		Value  [2]any            `json:"value"`
	}
	if err := json.Unmarshal(answer.Data.Result, &raw); err != nil {
		return nil, &Error{Reason: ReasonBadAnswer, Message: "the vector does not decode", Err: from}
	}
	samples := make([]Sample, len(raw))
	for i, r := range raw {
		v, err := sampleValue(r.Value)
		if err != nil {
			return nil, &Error{Reason: ReasonBadAnswer, Message: err.Error(), Err: from}
		}
		samples[i] = Sample{Labels: r.Metric, Value: v}
	}
	return samples, nil
}

// answeredBy is, for the log, which address answered.
func (e *Endpoint) answeredBy() error {
	return fmt.Errorf("answered by %s", e.base.Redacted())
}

// send sends one instant query and returns its successful answer.
func (e *Endpoint) send(ctx context.Context, query string) (*apiResponse, error) {
	endpoint := e.base.JoinPath("api", "v1", "query")
	endpoint.RawQuery = url.Values{"query": {query}}.Encode()
	status, body, err := e.get(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	from := e.answeredBy()
	var answer apiResponse
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, &Error{Reason: ReasonBadAnswer, Message: fmt.Sprintf("HTTP %d with no Prometheus API response", status), Err: from}
	}
	if answer.Status != "success" {
		return nil, &Error{Reason: ReasonQueryFailed, Message: fmt.Sprintf("HTTP %d: %s: %s", status, answer.ErrorType, answer.Error), Err: from}
	}
	return &answer, nil
}

// get sends a GET request to endpoint, an address under the endpoint's
// base, and returns the status and the body of its answer, within the
// endpoint's bounds.
func (e *Endpoint) get(ctx context.Context, endpoint *url.URL) (int, []byte, error) {
	base, token, limit := e.base, e.token, e.limit
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint.String(), nil)
	if err != nil {
		return 0, nil, &Error{Reason: ReasonBadAnswer, Message: "the request could not be built", Err: err}
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		t := transportError(unwrapURLError(err))
		t.Err = fmt.Errorf("querying %s: %w", base.Redacted(), unwrapURLError(err))
		return 0, nil, t
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		t := transportError(unwrapURLError(err))
		t.Err = fmt.Errorf("reading the answer of %s: %w", base.Redacted(), unwrapURLError(err))
		return 0, nil, t
	}
	if int64(len(body)) > limit {
		return 0, nil, &Error{Reason: ReasonTooLarge, Message: fmt.Sprintf("the answer is larger than %d bytes", limit), Err: e.answeredBy()}
	}
	return resp.StatusCode, body, nil
}

// unwrapURLError drops the URL, with its query, from a client error.
func unwrapURLError(err error) error {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err
	}
	return err
}

// decodeValues returns the values of an instant query's result: one per
// sample of a vector, the one of a scalar.
func decodeValues(resultType string, raw json.RawMessage) ([]float64, error) {
	switch resultType {
	case "vector":
		var samples []struct {
			Value [2]any `json:"value"`
		}
		if err := json.Unmarshal(raw, &samples); err != nil {
			return nil, fmt.Errorf("the vector does not decode: %w", err)
		}
		values := make([]float64, len(samples))
		for i, s := range samples {
			v, err := sampleValue(s.Value)
			if err != nil {
				return nil, err
			}
			values[i] = v
		}
		return values, nil
	case "scalar":
		var sample [2]any
		if err := json.Unmarshal(raw, &sample); err != nil {
			return nil, fmt.Errorf("the scalar does not decode: %w", err)
		}
		v, err := sampleValue(sample)
		if err != nil {
			return nil, err
		}
		return []float64{v}, nil
	default:
		return nil, fmt.Errorf("the query gives a %s; an analysis needs an instant vector or a scalar", resultType)
	}
}

// sampleValue decodes the value of a [time, "value"] pair.
func sampleValue(pair [2]any) (float64, error) {
	s, ok := pair[1].(string)
	if !ok {
		return 0, fmt.Errorf("a sample's value %v is not a string", pair[1])
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("a sample's value %q is not a number", s)
	}
	return v, nil
}
