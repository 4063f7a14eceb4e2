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
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// CheckAddress parses the address of a platform-owned endpoint and
// refuses what the stager does not allow: a scheme other than https (http
// only if allowInsecure), no host, user information, a query or a
// fragment. Its error's text does not show the address.
func CheckAddress(address string, allowInsecure bool) (*url.URL, error) {
	return checkAddress(address, allowInsecure)
}

// NewGuardedClient is the HTTP client of the stager's calls to a
// platform-owned endpoint at base: no proxy from the stager's environment,
// TLS 1.2 or later chained to ca when given (a PEM bundle; else the
// system's roots), redirects followed to base's own scheme and host only
// and at most maxRedirects times, each call bounded by timeout, keeping
// at most maxIdle idle connections. The caller bounds the answer it reads.
func NewGuardedClient(base *url.URL, ca []byte, timeout time.Duration, maxIdle int) (*http.Client, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, credentialsRefused(errors.New("the CA Secret's key holds no PEM certificate"))
		}
		tlsConfig.RootCAs = pool
	}
	return &http.Client{
		Timeout: timeout,
		// No proxy from the stager's environment.
		Transport: &http.Transport{TLSClientConfig: tlsConfig, ResponseHeaderTimeout: timeout,
			MaxIdleConnsPerHost: maxIdle, IdleConnTimeout: idleConnTimeout, ForceAttemptHTTP2: true},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return errTooManyRedirects
			}
			if req.URL.Scheme != base.Scheme || req.URL.Host != base.Host {
				return fmt.Errorf("%w: %s://%s, not %s://%s", errRedirectElsewhere, req.URL.Scheme, req.URL.Host, base.Scheme, base.Host)
			}
			return nil
		},
	}, nil
}
