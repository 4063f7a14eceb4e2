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
	"net"
	"syscall"
)

// Reason is a word that says why a query got no answer.
type Reason string

// The reasons of Error. The first five are the platform team's to fix,
// not the policy's (Refused).
const (
	// ReasonNotFound: no MetricProvider has the name.
	ReasonNotFound Reason = "NotFound"
	// ReasonSpaceNotAllowed: the provider's spec.spaces does not name the
	// policy's space.
	ReasonSpaceNotAllowed Reason = "SpaceNotAllowed"
	// ReasonCredentialsRefused: a CA or token Secret the provider names is
	// missing, not labelled as a provider credential, or unusable.
	ReasonCredentialsRefused Reason = "CredentialsRefused"
	// ReasonAddressRefused: the provider's address is not one the stager
	// may call.
	ReasonAddressRefused Reason = "AddressRefused"
	// ReasonWrongKind: the provider is not of the kind the analysis needs
	// (a query needs spec.prometheus, a web analysis spec.web).
	ReasonWrongKind Reason = "WrongKind"
	// ReasonRateLimited: the space sent more queries than the stager's
	// bound; the query was not sent and is taken again later.
	ReasonRateLimited Reason = "RateLimited"
	// ReasonUnreachable: no answer: the connection, TLS or a redirect
	// failed.
	ReasonUnreachable Reason = "Unreachable"
	// ReasonTimeout: no answer within the query's timeout.
	ReasonTimeout Reason = "Timeout"
	// ReasonTooLarge: the answer is larger than the bound.
	ReasonTooLarge Reason = "TooLarge"
	// ReasonBadAnswer: the answer is not a Prometheus API response, or its
	// result is not an instant vector or scalar of numbers; for a web
	// provider, not JSON within the bounds of expression.DecodeJSON.
	ReasonBadAnswer Reason = "BadAnswer"
	// ReasonBadRequest: a web analysis's path, its placeholders replaced,
	// is not a path under the provider's address; nothing was sent.
	ReasonBadRequest Reason = "BadRequest"
	// ReasonQueryFailed: the provider answered with an error (for a web
	// provider, a status other than 2xx).
	ReasonQueryFailed Reason = "QueryFailed"
)

// Refused reports whether the reason is the stager's refusal of the
// provider's configuration for the space, before any query is sent.
func (r Reason) Refused() bool {
	switch r {
	case ReasonNotFound, ReasonSpaceNotAllowed, ReasonCredentialsRefused, ReasonAddressRefused, ReasonWrongKind:
		return true
	}
	return false
}

// Error is why a query got no answer. Its text is what a policy's status
// shows, to whoever reads the space: the provider's name, a reason and a
// message that name no address, Secret or credential. Err, for the
// stager's log (Detail), may name them.
type Error struct {
	// Provider is the MetricProvider's name; empty for an Endpoint's
	// errors.
	Provider string
	// Reason says why, in a word.
	Reason Reason
	// Message says what happened, for the space.
	Message string
	// Err is the cause, for the stager's log only; may be nil.
	Err error
}

// Error returns the text a space may read.
func (e *Error) Error() string {
	if e.Provider == "" {
		return fmt.Sprintf("%s: %s", e.Reason, e.Message)
	}
	if e.Reason == ReasonNotFound {
		return fmt.Sprintf("MetricProvider %q does not exist", e.Provider)
	}
	return fmt.Sprintf("MetricProvider %q: %s: %s", e.Provider, e.Reason, e.Message)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Detail returns err's text with its cause, for the stager's log and for
// those who may read the hosting cluster (kubectl stager eval): it may
// name the provider's address and Secrets, never a credential.
func Detail(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Err != nil {
		return e.Error() + " (" + e.Err.Error() + ")"
	}
	return err.Error()
}

// ReasonOf returns the reason of err, "" when it is not an *Error.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// Sentinels of the redirect guard, which the reasons tell apart.
var (
	errRedirectElsewhere = errors.New("redirected to another scheme or host than the provider's")
	errTooManyRedirects  = fmt.Errorf("more than %d redirects", maxRedirects)
)

// transportError classifies an error of the HTTP client, whose text names
// the provider's address, for the space.
func transportError(err error) *Error {
	var (
		netErr   net.Error
		unknown  x509.UnknownAuthorityError
		invalid  x509.CertificateInvalidError
		hostname x509.HostnameError
		verify   *tls.CertificateVerificationError
		dns      *net.DNSError
		header   tls.RecordHeaderError
	)
	e := &Error{Reason: ReasonUnreachable, Err: err}
	switch {
	case errors.Is(err, errRedirectElsewhere):
		e.Message = errRedirectElsewhere.Error()
	case errors.Is(err, errTooManyRedirects):
		e.Message = errTooManyRedirects.Error()
	case errors.As(err, &unknown), errors.As(err, &invalid), errors.As(err, &hostname), errors.As(err, &verify):
		e.Message = "the server's certificate is not trusted"
	case errors.As(err, &header):
		e.Message = "the server does not speak TLS"
	case errors.As(err, &dns):
		e.Message = "the address's host does not resolve"
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Message = "connection refused"
	case errors.As(err, &netErr) && netErr.Timeout():
		e.Reason, e.Message = ReasonTimeout, "no answer within the query's timeout"
	default:
		e.Message = "the connection failed"
	}
	return e
}
