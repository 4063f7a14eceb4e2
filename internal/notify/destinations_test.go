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
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// TestDestinationsReadsTheHostingCluster resolves NotificationDestinations
// against a real API server: a destination serves only the spaces it
// names ("*" every one) and refuses the others for good (a *Refusal); a
// missing one is an error to retry; its token comes only from a Secret of
// the Secret namespace labelled for notifications, not from one labelled
// for MetricProviders or unlabelled, which the stager's cache
// (CacheOptions) does not even hold; a changed token is used at once.
func TestDestinationsReadsTheHostingCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a kube-apiserver; run without -short (make test)")
	}
	scheme := environment.Scheme()
	if err := hostingv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	crds, err := environment.HostingCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	space := environment.StartTestSpace(t, "destinations", environment.WithCRDDirs(crds), environment.WithScheme(scheme))
	c := space.Client
	ctx := t.Context()
	const ns = "stager"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	secret := func(name string, labels map[string]string, token string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Data: map[string][]byte{"token": []byte(token)}}
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	labelled := secret("labelled", map[string]string{hostingv1alpha1.NotificationCredentialLabel: "true"}, "good")
	secret("metric", map[string]string{hostingv1alpha1.CredentialLabel: "true"}, "metric-token")
	secret("bare", nil, "bare-token")
	dest := func(name, tokenSecret string, spaces ...string) {
		d := &hostingv1alpha1.NotificationDestination{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: hostingv1alpha1.NotificationDestinationSpec{Address: "https://hooks.example.com/" + name, Spaces: spaces,
				BearerTokenSecretRef: &hostingv1alpha1.SecretKeyRef{Name: tokenSecret, Key: "token"}}}
		if err := c.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	dest("chat", "labelled", "wds1")
	dest("everyone", "labelled", hostingv1alpha1.AllSpaces)
	dest("metric", "metric", "wds1")
	dest("bare", "bare", "wds1")
	d := &Destinations{Reader: c, SecretNamespace: ns}

	target, err := d.Resolve(ctx, "wds1", "chat")
	if err != nil || target.Token != "good" || target.Format != hostingv1alpha1.FormatCloudEvents || target.URL.Path != "/chat" {
		t.Fatalf("chat for wds1: %+v, %v", target, err)
	}
	var refusal *Refusal
	if _, err := d.Resolve(ctx, "wds2", "chat"); !errors.As(err, &refusal) {
		t.Errorf("chat for wds2: %v, want a refusal", err)
	}
	if _, err := d.Resolve(ctx, "kcp#root:org:wds9", "everyone"); err != nil {
		t.Errorf("everyone for kcp#root:org:wds9: %v", err)
	}
	if _, err := d.Resolve(ctx, "wds1", "missing"); err == nil || errors.As(err, &refusal) {
		t.Errorf("a missing destination: %v, want an error to retry", err)
	}
	for _, name := range []string{"metric", "bare"} {
		_, err := d.Resolve(ctx, "wds1", name)
		if err == nil || !strings.Contains(err.Error(), "is not labelled "+hostingv1alpha1.NotificationCredentialLabel) {
			t.Errorf("%s's Secret: %v, want it refused as not labelled for notifications", name, err)
		}
	}
	// The stager reads through a cache of CacheOptions, which holds the
	// Secrets labelled for notifications only.
	cached, err := cache.New(space.Config, CacheOptions(scheme, ns))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = cached.Start(ctx) }()
	if !cached.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	viaCache := &Destinations{Reader: cached, SecretNamespace: ns}
	if target, err := viaCache.Resolve(ctx, "wds1", "chat"); err != nil || target.Token != "good" {
		t.Errorf("chat through the cache: %+v, %v", target, err)
	}
	if _, err := viaCache.Resolve(ctx, "wds1", "metric"); err == nil || !strings.Contains(err.Error(), "no Secret stager/metric labelled "+hostingv1alpha1.NotificationCredentialLabel) {
		t.Errorf("the MetricProviders' Secret through the cache: %v, want it absent", err)
	}
	labelled.Data["token"] = []byte("rotated")
	if err := c.Update(ctx, labelled); err != nil {
		t.Fatal(err)
	}
	if target, err := d.Resolve(ctx, "wds1", "chat"); err != nil || target.Token != "rotated" {
		t.Errorf("after the rotation: %+v, %v", target, err)
	}
}
