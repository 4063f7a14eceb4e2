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
	"fmt"
	"net/url"
	"strings"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
)

// WebRequest is a web analysis's request, its placeholders replaced: a
// path under the provider's address, escaped, and query parameters.
type WebRequest struct {
	// Path is the escaped path, relative to the provider's address.
	Path string
	// Params are the query parameters.
	Params url.Values
}

// RenderWeb replaces the placeholders of a web analysis's request with the
// values of c: in the path, each value escaped as one path segment (a
// value that is "." or ".." is refused when sent); in the parameters, as
// they are (url.Values escapes them), {{clusters}} being the clusters'
// names joined by commas.
func RenderWeb(req *v1alpha1.WebRequest, c Context) WebRequest {
	segment := url.PathEscape
	path := strings.NewReplacer(
		"{{space}}", segment(c.Space),
		"{{policy}}", segment(c.Policy),
		"{{stage}}", segment(c.Stage),
		"{{revision}}", segment(c.Revision),
	).Replace(req.Path)
	values := strings.NewReplacer(
		"{{space}}", c.Space,
		"{{policy}}", c.Policy,
		"{{stage}}", c.Stage,
		"{{revision}}", c.Revision,
		"{{clusters}}", strings.Join(c.Clusters, ","),
	)
	params := url.Values{}
	for k, v := range req.Params {
		params.Set(k, values.Replace(v))
	}
	return WebRequest{Path: path, Params: params}
}

// webURL returns the address of req under base: base's scheme and host,
// base's path with req's appended. It refuses a path that is not an
// escaped path, or has a "." or ".." segment (escaped or not), a query or
// a fragment.
func webURL(base *url.URL, req WebRequest) (*url.URL, error) {
	refused := func(why string) error {
		return &Error{Reason: ReasonBadRequest, Message: "the analysis's path " + why}
	}
	if strings.ContainsAny(req.Path, "?#\\") {
		return nil, refused("has a query, a fragment or a backslash")
	}
	for _, s := range strings.Split(req.Path, "/") {
		seg, err := url.PathUnescape(s)
		if err != nil {
			return nil, refused("is not an escaped path")
		}
		if seg == "." || seg == ".." {
			return nil, refused("has a . or .. segment")
		}
	}
	u := *base
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	raw := strings.TrimSuffix(base.EscapedPath(), "/")
	if p := strings.TrimLeft(req.Path, "/"); p != "" {
		raw += "/" + p
	}
	path, err := url.PathUnescape(raw)
	if err != nil {
		return nil, refused("is not an escaped path")
	}
	u.Path, u.RawPath = path, raw
	u.RawQuery = req.Params.Encode()
	return &u, nil
}

// Fetch sends req, with GET, to the endpoint's address and returns its
// JSON answer: a 2xx answer that expression.DecodeJSON accepts, within
// the endpoint's bounds. Any other answer is an *Error saying why (the
// status, not JSON, too deep...), never quoting the answer.
func (e *Endpoint) Fetch(ctx context.Context, req WebRequest) ([]byte, error) {
	u, err := webURL(e.base, req)
	if err != nil {
		return nil, err
	}
	status, body, err := e.get(ctx, u)
	if err != nil {
		return nil, err
	}
	if status < 200 || status > 299 {
		return nil, &Error{Reason: ReasonQueryFailed, Message: fmt.Sprintf("HTTP %d", status), Err: e.answeredBy()}
	}
	if _, err := expression.DecodeJSON(body); err != nil {
		return nil, &Error{Reason: ReasonBadAnswer, Message: fmt.Sprintf("HTTP %d: %v", status, err), Err: e.answeredBy()}
	}
	return body, nil
}
