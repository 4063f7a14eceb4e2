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
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
)

// Defaults of the per-space bound on queries.
const (
	// DefaultSpaceQPS is how many queries a second each space may send
	// to MetricProviders, on average.
	DefaultSpaceQPS = 5
	// DefaultSpaceBurst is how many queries each space may send at once
	// above DefaultSpaceQPS.
	DefaultSpaceBurst = 20
)

// Options are the stager's bounds on every provider.
type Options struct {
	// AllowInsecure lets providers use plain http addresses.
	AllowInsecure bool
	// Timeout bounds one query; a provider may only lower it.
	Timeout time.Duration
	// MaxResponseBytes bounds the size of one answer; a provider may only
	// lower it.
	MaxResponseBytes int64
	// SecretNamespace is the namespace of the providers' CA and token
	// Secrets; empty, a provider that names a Secret cannot be used.
	SecretNamespace string
	// SpaceQPS and SpaceBurst bound the queries of each space (a token
	// bucket); a query over the bound is not sent and is RateLimited.
	// SpaceQPS 0 bounds nothing.
	SpaceQPS   float32
	SpaceBurst int
	// Clock is the clock of the per-space bound; nil is the real one.
	Clock clock.PassiveClock
}

// Providers queries the Prometheus-compatible APIs that the MetricProviders
// of the hosting cluster declare, for the spaces they serve. It keeps one
// Endpoint, with its connections, per provider until the provider or its
// Secrets change. Its zero value is not usable: set Reader and Options.
type Providers struct {
	// Reader reads MetricProviders and Secrets from the hosting cluster:
	// in the stager, a cache configured by CacheOptions.
	Reader client.Reader
	// Options bound every query.
	Options Options

	mu        sync.Mutex
	endpoints map[string]*cachedEndpoint
	limiters  map[string]flowcontrol.PassiveRateLimiter
}

// cachedEndpoint is a provider's endpoint and the versions it was built
// from.
type cachedEndpoint struct {
	key      string
	endpoint *Endpoint
}

// CacheOptions configure the cache of the view of the hosting cluster
// whose cache is Providers' Reader in the stager (cmd/stager builds it, a
// controller-runtime cluster added to the hosting cluster's manager): it
// watches the MetricProviders, and the Secrets of secretNamespace labelled
// CredentialLabel=true only, from the first query on (a hosting cluster
// without the MetricProvider CRD serves no analysis, and the stager runs).
// The package builds no cluster itself, so that the kubectl plugin, which
// queries through its own client, does not link one.
func CacheOptions(scheme *runtime.Scheme, secretNamespace string) cache.Options {
	byObject := map[client.Object]cache.ByObject{}
	if secretNamespace != "" {
		byObject[&corev1.Secret{}] = cache.ByObject{
			Namespaces: map[string]cache.Config{secretNamespace: {}},
			Label:      labels.SelectorFromSet(labels.Set{hostingv1alpha1.CredentialLabel: "true"}),
		}
	}
	return cache.Options{Scheme: scheme, ByObject: byObject, DefaultTransform: cache.TransformStripManagedFields()}
}

// Query sends query, as an instant query, to the provider named provider
// for a policy of space, and returns the sample values of its answer, in
// the order of the answer. Its errors are *Error: their text is what the
// space may read; Detail gives the stager's log the rest.
func (p *Providers) Query(ctx context.Context, space, provider, query string) ([]float64, error) {
	values, err := p.query(ctx, space, provider, query)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Reason: ReasonUnreachable, Message: "the query failed", Err: err}
		}
		e.Provider = provider
		return nil, e
	}
	return values, nil
}

func (p *Providers) query(ctx context.Context, space, provider, query string) ([]float64, error) {
	endpoint, err := p.resolve(ctx, space, provider, hostingv1alpha1.ProviderPrometheus)
	if err != nil {
		return nil, err
	}
	return endpoint.Query(ctx, query)
}

// Fetch sends a web analysis's GET request (RenderWeb) to the web provider
// named provider for a policy of space, and returns its JSON answer, which
// expression.DecodeJSON accepts. Its errors are *Error, as Query's.
func (p *Providers) Fetch(ctx context.Context, space, provider string, req WebRequest) ([]byte, error) {
	answer, err := p.fetch(ctx, space, provider, req)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Reason: ReasonUnreachable, Message: "the request failed", Err: err}
		}
		e.Provider = provider
		return nil, e
	}
	return answer, nil
}

func (p *Providers) fetch(ctx context.Context, space, provider string, req WebRequest) ([]byte, error) {
	endpoint, err := p.resolve(ctx, space, provider, hostingv1alpha1.ProviderWeb)
	if err != nil {
		return nil, err
	}
	return endpoint.Fetch(ctx, req)
}

// resolve returns the endpoint of the provider named provider, of the
// given kind, for a policy of space, once the space may use it and its
// bucket has a token.
func (p *Providers) resolve(ctx context.Context, space, provider, kind string) (*Endpoint, error) {
	// The first read of the cache waits for its watch: not longer than a
	// query may take (a stager without list and watch on MetricProviders
	// would otherwise hold the space's worker for the whole reconcile).
	readCtx, cancel := context.WithTimeout(ctx, p.readTimeout())
	defer cancel()
	mp := &hostingv1alpha1.MetricProvider{}
	if err := p.Reader.Get(readCtx, types.NamespacedName{Name: provider}, mp); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			p.forget(provider)
			return nil, &Error{Reason: ReasonNotFound, Message: "it does not exist in the stager's hosting cluster", Err: err}
		}
		return nil, &Error{Reason: ReasonUnreachable, Message: "the stager could not read it", Err: err}
	}
	if got := mp.Kind(); got != kind {
		return nil, &Error{Reason: ReasonWrongKind,
			Message: fmt.Sprintf("it is not a %s provider (it has no spec.%s); a %s", kind, kind, map[string]string{
				hostingv1alpha1.ProviderPrometheus: "query needs spec.prometheus", hostingv1alpha1.ProviderWeb: "web analysis needs spec.web"}[kind]),
			Err: fmt.Errorf("provider kind %q, not %q", got, kind)}
	}
	if !mp.Serves(space) {
		return nil, &Error{Reason: ReasonSpaceNotAllowed, Message: "its spec.spaces does not name this space",
			Err: fmt.Errorf("space %q is not in spec.spaces", space)}
	}
	if !p.allow(space) {
		return nil, &Error{Reason: ReasonRateLimited,
			Message: fmt.Sprintf("the space's queries are over the stager's bound (%g a second, %d at once); measured again shortly",
				p.Options.SpaceQPS, p.Options.SpaceBurst)}
	}
	return p.endpoint(readCtx, mp)
}

// readTimeout bounds the reads of a query's provider and Secrets.
func (p *Providers) readTimeout() time.Duration {
	if p.Options.Timeout > 0 {
		return p.Options.Timeout
	}
	return DefaultTimeout
}

// allow takes a token of space's bucket.
func (p *Providers) allow(space string) bool {
	if p.Options.SpaceQPS <= 0 {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.limiters[space]
	if !ok {
		c := p.Options.Clock
		if c == nil {
			c = clock.RealClock{}
		}
		l = flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(p.Options.SpaceQPS, max(p.Options.SpaceBurst, 1), c)
		if p.limiters == nil {
			p.limiters = map[string]flowcontrol.PassiveRateLimiter{}
		}
		p.limiters[space] = l
	}
	return l.TryAccept()
}

// endpoint returns mp's endpoint, the one kept while mp and its Secrets
// are the versions it was built from, else a new one, whose predecessor's
// idle connections are closed.
func (p *Providers) endpoint(ctx context.Context, mp *hostingv1alpha1.MetricProvider) (*Endpoint, error) {
	key := string(mp.UID) + "/" + mp.ResourceVersion
	spec := mp.Endpoint()
	var ca, token []byte
	if ref := spec.CASecretRef; ref != nil {
		value, version, err := p.secretKey(ctx, ref)
		if err != nil {
			return nil, credentialsRefused(fmt.Errorf("CA: %w", err))
		}
		ca, key = value, key+"/ca:"+version
	}
	if ref := spec.BearerTokenSecretRef; ref != nil {
		value, version, err := p.secretKey(ctx, ref)
		if err != nil {
			return nil, credentialsRefused(fmt.Errorf("bearer token: %w", err))
		}
		token, key = value, key+"/token:"+version
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.endpoints[mp.Name]; ok {
		if c.key == key {
			return c.endpoint, nil
		}
		c.endpoint.close()
		delete(p.endpoints, mp.Name)
	}
	endpoint, err := NewEndpoint(spec, ca, token, p.Options)
	if err != nil {
		return nil, err
	}
	if p.endpoints == nil {
		p.endpoints = map[string]*cachedEndpoint{}
	}
	p.endpoints[mp.Name] = &cachedEndpoint{key: key, endpoint: endpoint}
	return endpoint, nil
}

// forget drops the endpoint of a provider that no longer exists.
func (p *Providers) forget(provider string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.endpoints[provider]; ok {
		c.endpoint.close()
		delete(p.endpoints, provider)
	}
}

// secretKey reads one key of a Secret of the secret namespace, which must
// be labelled CredentialLabel=true, and returns it with the Secret's
// resourceVersion.
func (p *Providers) secretKey(ctx context.Context, ref *hostingv1alpha1.SecretKeyRef) ([]byte, string, error) {
	ns := p.Options.SecretNamespace
	if ns == "" {
		return nil, "", fmt.Errorf("the stager has no Secret namespace for Secret %s", ref.Name)
	}
	secret := &corev1.Secret{}
	if err := p.Reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			// The stager's cache holds only the labelled Secrets.
			return nil, "", fmt.Errorf("no Secret %s/%s labelled %s=true", ns, ref.Name, hostingv1alpha1.CredentialLabel)
		}
		return nil, "", fmt.Errorf("reading Secret %s/%s: %w", ns, ref.Name, err)
	}
	if secret.Labels[hostingv1alpha1.CredentialLabel] != "true" {
		return nil, "", fmt.Errorf("secret %s/%s is not labelled %s=true", ns, ref.Name, hostingv1alpha1.CredentialLabel)
	}
	value, ok := secret.Data[ref.Key]
	if !ok {
		return nil, "", fmt.Errorf("secret %s/%s has no key %q", ns, ref.Name, ref.Key)
	}
	return value, secret.ResourceVersion, nil
}

// credentialsRefused is the error of a provider whose Secrets cannot be
// used; the space is not told which Secret.
func credentialsRefused(err error) *Error {
	return &Error{Reason: ReasonCredentialsRefused, Err: err,
		Message: fmt.Sprintf("a Secret it names is missing, not labelled %s=true, or unusable (the stager's log says which)",
			hostingv1alpha1.CredentialLabel)}
}
