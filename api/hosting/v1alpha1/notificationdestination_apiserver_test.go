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

package v1alpha1_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
)

// newDestination is a valid destination: Slack, with a CA and a token, for
// two spaces.
func newDestination(name string) *v1alpha1.NotificationDestination {
	return &v1alpha1.NotificationDestination{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.NotificationDestinationSpec{
			Address: "https://hooks.example.com/services/T0/B0", Format: v1alpha1.FormatSlack,
			CASecretRef:          &v1alpha1.SecretKeyRef{Name: "hooks-ca", Key: "ca.crt"},
			BearerTokenSecretRef: &v1alpha1.SecretKeyRef{Name: "hooks-token", Key: "token"},
			Spaces:               []string{"wds1", "kcp#root:org:wds2"},
		},
	}
}

// TestNotificationDestinationOfTheAPIServer checks the
// NotificationDestination CRD against a real API server: a valid
// destination round-trips, the format defaults to CloudEvents, and each
// bound refuses what it should: plain http, user information, a query or
// fragment, an unknown format, too many spaces.
func TestNotificationDestinationOfTheAPIServer(t *testing.T) {
	c := startHosting(t)
	ctx := t.Context()

	t.Run("valid destinations round-trip", func(t *testing.T) {
		want := newDestination("valid")
		if err := c.Create(ctx, want.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		got := &v1alpha1.NotificationDestination{}
		if err := c.Get(ctx, client.ObjectKey{Name: "valid"}, got); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(got.Spec, want.Spec) {
			t.Errorf("stored spec %+v, want %+v", got.Spec, want.Spec)
		}
		bare := &v1alpha1.NotificationDestination{ObjectMeta: metav1.ObjectMeta{Name: "bare"},
			Spec: v1alpha1.NotificationDestinationSpec{Address: "https://events.example.com"}}
		if err := c.Create(ctx, bare); err != nil {
			t.Fatal(err)
		}
		if bare.Spec.Format != v1alpha1.FormatCloudEvents || bare.Spec.Spaces != nil {
			t.Errorf("a bare destination: format %q, spaces %v; want CloudEvents and none", bare.Spec.Format, bare.Spec.Spaces)
		}
		largest := newDestination("largest")
		largest.Spec.Spaces = spaceNames(strings.Repeat("s", 500), 256)
		largest.Spec.Address = "https://" + strings.Repeat("a", 2040)
		if err := c.Create(ctx, largest); err != nil {
			t.Errorf("the largest destination: %v", err)
		}
	})

	t.Run("invalid destinations are refused", func(t *testing.T) {
		checkRefusals(t, c, func() *v1alpha1.NotificationDestination { return newDestination("invalid") },
			map[string]refusal[*v1alpha1.NotificationDestination]{
				"plain http":       {func(d *v1alpha1.NotificationDestination) { d.Spec.Address = "http://hooks.example.com" }, "spec.address"},
				"user information": {func(d *v1alpha1.NotificationDestination) { d.Spec.Address = "https://u:p@hooks.example.com" }, "spec.address"},
				"a query":          {func(d *v1alpha1.NotificationDestination) { d.Spec.Address = "https://hooks.example.com/?k=v" }, "spec.address"},
				"a fragment":       {func(d *v1alpha1.NotificationDestination) { d.Spec.Address = "https://hooks.example.com/#f" }, "spec.address"},
				"no address":       {func(d *v1alpha1.NotificationDestination) { d.Spec.Address = "" }, "spec.address"},
				"a long address": {func(d *v1alpha1.NotificationDestination) {
					d.Spec.Address = "https://" + strings.Repeat("a", 2041)
				}, "spec.address"},
				"an unknown format": {func(d *v1alpha1.NotificationDestination) { d.Spec.Format = "Teams" }, "spec.format"},
				"257 spaces":        {func(d *v1alpha1.NotificationDestination) { d.Spec.Spaces = spaceNames("s", 257) }, "spec.spaces"},
				"an empty space":    {func(d *v1alpha1.NotificationDestination) { d.Spec.Spaces = []string{""} }, "spec.spaces[0]"},
				"a token without key": {func(d *v1alpha1.NotificationDestination) {
					d.Spec.BearerTokenSecretRef.Key = ""
				}, "spec.bearerTokenSecretRef.key"},
			})
	})
}

// TestNotificationDestinationIsTheHostingClustersOnly: no manifest a space
// gets names the NotificationDestination, and the hosting cluster's CRD is
// there: only the platform team declares where the stager posts.
func TestNotificationDestinationIsTheHostingClustersOnly(t *testing.T) {
	checkHostingClustersOnly(t, "NotificationDestination", "notificationdestinations")
}

// TestNotificationDestinationServes: "*" serves every space, a name its
// space only, none no space.
func TestNotificationDestinationServes(t *testing.T) {
	d := newDestination("d")
	if !d.Serves("wds1") || d.Serves("wds3") || d.Serves("") {
		t.Errorf("spaces %v: serves wds1 %v, wds3 %v", d.Spec.Spaces, d.Serves("wds1"), d.Serves("wds3"))
	}
	d.Spec.Spaces = nil
	if d.Serves("wds1") {
		t.Error("a destination of no space serves wds1")
	}
	d.Spec.Spaces = []string{v1alpha1.AllSpaces}
	if !d.Serves("kcp#root:org:any") {
		t.Error(`a destination of "*" does not serve kcp#root:org:any`)
	}
}
