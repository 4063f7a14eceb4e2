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

package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/analysis"
)

// Target is a destination as a worker posts to it.
type Target struct {
	// URL is the destination's address.
	URL *url.URL
	// Format is the body posted.
	Format hostingv1alpha1.NotificationFormat
	// Token, when set, is sent as a bearer token.
	Token string
	// Client is the guarded client of the destination
	// (analysis.NewGuardedClient).
	Client *http.Client
}

// Resolver finds the target of a destination for a space.
type Resolver interface {
	// Resolve returns the target of the destination named name for space,
	// or an error; a *Refusal when the destination is there and refuses
	// the space, which no retry changes.
	Resolve(ctx context.Context, space, name string) (*Target, error)
}

// Refusal is an error no retry mends: the destination refuses the space,
// or its receiver refused the event.
type Refusal struct{ Reason string }

// Error is the refusal's reason.
func (r *Refusal) Error() string { return r.Reason }

// Destinations resolves NotificationDestinations from a reader of the
// hosting cluster (a cache of CacheOptions), keeping each destination's
// client while the destination and its Secrets are the versions it was
// built from.
type Destinations struct {
	// Reader reads NotificationDestinations and the labelled Secrets of
	// SecretNamespace.
	Reader client.Reader
	// SecretNamespace is the namespace of the Secrets destinations name.
	SecretNamespace string
	// Timeout bounds each post; 0 means DefaultTimeout.
	Timeout time.Duration

	mu      sync.Mutex
	targets map[string]cachedTarget
}

// cachedTarget is a target and the versions it was built from.
type cachedTarget struct {
	key    string
	target *Target
}

// DefaultTimeout bounds each post, from the connection to the last byte
// of the answer.
const DefaultTimeout = 10 * time.Second

// readTimeout bounds a read of the hosting cluster's cache.
const readTimeout = 5 * time.Second

// maxIdleConns is how many connections to a destination a target keeps.
const maxIdleConns = 2

// CacheOptions configure the cache of the hosting cluster the
// Destinations read: the NotificationDestinations, and the Secrets of
// secretNamespace labelled NotificationCredentialLabel=true only (none
// when secretNamespace is empty), each from its first read on.
func CacheOptions(scheme *runtime.Scheme, secretNamespace string) cache.Options {
	byObject := map[client.Object]cache.ByObject{}
	if secretNamespace != "" {
		byObject[&corev1.Secret{}] = cache.ByObject{
			Namespaces: map[string]cache.Config{secretNamespace: {}},
			Label:      labels.SelectorFromSet(labels.Set{hostingv1alpha1.NotificationCredentialLabel: "true"}),
		}
	}
	return cache.Options{Scheme: scheme, ByObject: byObject, DefaultTransform: cache.TransformStripManagedFields()}
}

// Resolve implements Resolver.
func (d *Destinations) Resolve(ctx context.Context, space, name string) (*Target, error) {
	// A cache that has never synced (no list on the kind, no CRD yet)
	// would hold the read until ctx ends.
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	dest := &hostingv1alpha1.NotificationDestination{}
	if err := d.Reader.Get(ctx, types.NamespacedName{Name: name}, dest); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("no NotificationDestination %s", name)
		}
		return nil, fmt.Errorf("reading NotificationDestination %s: %w", name, err)
	}
	if !dest.Serves(space) {
		return nil, &Refusal{Reason: fmt.Sprintf("NotificationDestination %s does not let space %s subscribe", name, space)}
	}
	key := string(dest.UID) + "/" + dest.ResourceVersion
	var ca, token []byte
	if ref := dest.Spec.CASecretRef; ref != nil {
		value, version, err := d.secretKey(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("the CA of NotificationDestination %s: %w", name, err)
		}
		ca, key = value, key+"/ca:"+version
	}
	if ref := dest.Spec.BearerTokenSecretRef; ref != nil {
		value, version, err := d.secretKey(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("the token of NotificationDestination %s: %w", name, err)
		}
		token, key = value, key+"/token:"+version
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.targets[name]; ok {
		if c.key == key {
			return c.target, nil
		}
		c.target.Client.CloseIdleConnections()
		delete(d.targets, name)
	}
	target, err := NewTarget(&dest.Spec, ca, token, d.Timeout)
	if err != nil {
		return nil, fmt.Errorf("NotificationDestination %s: %w", name, err)
	}
	if d.targets == nil {
		d.targets = map[string]cachedTarget{}
	}
	d.targets[name] = cachedTarget{key: key, target: target}
	return target, nil
}

// NewTarget checks a destination's spec and returns its target: an https
// address without user information, query or fragment; ca, when given,
// the PEM bundle the receiver's certificate must chain to; token, when
// given, the bearer token of every post; posts bounded by timeout (0:
// DefaultTimeout), redirects followed to the address's host only.
func NewTarget(spec *hostingv1alpha1.NotificationDestinationSpec, ca, token []byte, timeout time.Duration) (*Target, error) {
	u, err := analysis.CheckAddress(spec.Address, false)
	if err != nil {
		return nil, err
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	t := &Target{URL: u, Format: spec.Format}
	if t.Format == "" {
		t.Format = hostingv1alpha1.FormatCloudEvents
	}
	if token != nil {
		t.Token = strings.TrimSpace(string(token))
		if t.Token == "" || strings.ContainsAny(t.Token, "\r\n") {
			return nil, errors.New("the bearer token Secret's key is empty or spans lines")
		}
	}
	if t.Client, err = analysis.NewGuardedClient(u, ca, timeout, maxIdleConns); err != nil {
		return nil, err
	}
	return t, nil
}

// secretKey reads one key of a Secret of the secret namespace, which must
// be labelled NotificationCredentialLabel=true, and returns it with the
// Secret's resourceVersion.
func (d *Destinations) secretKey(ctx context.Context, ref *hostingv1alpha1.SecretKeyRef) ([]byte, string, error) {
	ns := d.SecretNamespace
	if ns == "" {
		return nil, "", fmt.Errorf("the stager has no Secret namespace for Secret %s", ref.Name)
	}
	secret := &corev1.Secret{}
	if err := d.Reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			// The cache holds only the labelled Secrets.
			return nil, "", fmt.Errorf("no Secret %s/%s labelled %s=true", ns, ref.Name, hostingv1alpha1.NotificationCredentialLabel)
		}
		return nil, "", fmt.Errorf("reading Secret %s/%s: %w", ns, ref.Name, err)
	}
	if secret.Labels[hostingv1alpha1.NotificationCredentialLabel] != "true" {
		return nil, "", fmt.Errorf("secret %s/%s is not labelled %s=true", ns, ref.Name, hostingv1alpha1.NotificationCredentialLabel)
	}
	value, ok := secret.Data[ref.Key]
	if !ok {
		return nil, "", fmt.Errorf("secret %s/%s has no key %q", ns, ref.Name, ref.Key)
	}
	return value, secret.ResourceVersion, nil
}
