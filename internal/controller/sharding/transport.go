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

package sharding

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// LeaseConfig returns a copy of cfg for the client of the sharding Leases
// (the fences and the peer Leases). Its requests go over connections of
// their own, so that they do not queue behind the other requests and the
// watches that share cfg's; and client-go does not sleep a server's
// Retry-After inside them and send them again: an API server shedding
// load (kcp's priority and fairness) asks for up to 32 s, which made a
// renewal a success 32 s late. The refusal comes back at once instead,
// the server's wait in its error (apierrors.SuggestsClientDelay), and the
// fence guard tries again on its own schedule, within the tenure.
func LeaseConfig(cfg *rest.Config) *rest.Config {
	leases := rest.CopyConfig(cfg)
	// client-go shares a transport among the configs of one TLS setup; a
	// dial function of its own is a setup of its own.
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	leases.Dial = dialer.DialContext
	leases.Wrap(withoutRetryAfter)
	return leases
}

// maxRefusalBody is how much of a refusal's text body is kept.
const maxRefusalBody = 4 << 10

// withoutRetryAfter takes the Retry-After out of the answers client-go
// would wait on and send again (429 and 5xx): client-go offers no
// setting of its retries for a whole client, only per request, which
// controller-runtime's client does not expose.
func withoutRetryAfter(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err != nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < http.StatusInternalServerError) {
			return resp, err
		}
		after := resp.Header.Get("Retry-After")
		if after == "" {
			return resp, nil
		}
		resp.Header.Del("Retry-After")
		seconds, convErr := strconv.Atoi(after)
		if convErr != nil || !textual(resp) {
			return resp, nil
		}
		keepRetryAfter(req, resp, seconds)
		return resp, nil
	})
}

// keepRetryAfter turns resp's text body, as priority and fairness writes
// it, into a Status that carries the server's wait in
// details.retryAfterSeconds, where client-go took it from the header.
func keepRetryAfter(req *http.Request, resp *http.Response, seconds int) {
	text, _ := io.ReadAll(io.LimitReader(resp.Body, maxRefusalBody))
	_ = resp.Body.Close()
	status := apierrors.NewGenericServerResponse(resp.StatusCode, req.Method, schema.GroupResource{}, "",
		strings.TrimSpace(string(text)), seconds, true).ErrStatus
	status.Kind, status.APIVersion = "Status", "v1"
	body, err := json.Marshal(status)
	if err != nil {
		body = text // a Status always marshals; keep the answer as it was
	} else {
		resp.Header.Set("Content-Type", "application/json")
	}
	resp.Header.Del("Content-Length")
	resp.ContentLength = int64(len(body))
	resp.Body = io.NopCloser(bytes.NewReader(body))
}

// textual reports whether resp's body is text, which client-go does not
// decode: its Retry-After would otherwise be lost with the header.
func textual(resp *http.Response) bool {
	contentType := resp.Header.Get("Content-Type")
	if contentType == "" {
		return true
	}
	media, _, err := mime.ParseMediaType(contentType)
	return err == nil && strings.HasPrefix(media, "text/")
}

// roundTripperFunc is a function as an http.RoundTripper.
type roundTripperFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
