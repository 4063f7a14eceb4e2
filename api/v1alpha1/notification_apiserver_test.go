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
	"fmt"
	"strings"
	"testing"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// TestNotificationsOfTheAPIServer checks spec.notifications against a real
// API server: four subscriptions of every event round-trip; a fifth, a
// destination named twice, an unknown event, no event or a destination
// that is no object name are refused.
func TestNotificationsOfTheAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a kube-apiserver; run without -short (make test)")
	}
	scheme := environment.Scheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := environment.StartTestSpace(t, "notifications", environment.WithStagerCRDs(), environment.WithScheme(scheme)).Client
	every := make([]v1alpha1.NotificationEvent, 0, len(v1alpha1.NotificationReasons))
	for e := range v1alpha1.NotificationReasons {
		every = append(every, e)
	}
	subscriptions := func(n int) []v1alpha1.Notification {
		out := make([]v1alpha1.Notification, n)
		for i := range out {
			out[i] = v1alpha1.Notification{Destination: fmt.Sprintf("chat-%d", i), Events: every}
		}
		return out
	}
	p := newPolicy("four", "prod", "")
	p.Spec.Notifications = subscriptions(4)
	if err := c.Create(t.Context(), p); err != nil {
		t.Fatalf("four subscriptions of every event: %v", err)
	}
	for name, tc := range map[string]struct {
		notifications []v1alpha1.Notification
		want          string
	}{
		"five":             {subscriptions(5), "spec.notifications"},
		"twice":            {append(subscriptions(1), subscriptions(1)...), "Duplicate value"},
		"an unknown event": {[]v1alpha1.Notification{{Destination: "chat", Events: []v1alpha1.NotificationEvent{"Deleted"}}}, "spec.notifications[0].events[0]"},
		"no event":         {[]v1alpha1.Notification{{Destination: "chat"}}, "spec.notifications[0].events"},
		"a bad name":       {[]v1alpha1.Notification{{Destination: "Chat/../x", Events: every[:1]}}, "spec.notifications[0].destination"},
		"a long name":      {[]v1alpha1.Notification{{Destination: strings.Repeat("c", 254), Events: every[:1]}}, "spec.notifications[0].destination"},
	} {
		t.Run(name, func(t *testing.T) {
			p := newPolicy("refused", "prod", "")
			p.Spec.Notifications = tc.notifications
			err := c.Create(t.Context(), p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("created with %v, want a refusal naming %q", err, tc.want)
			}
		})
	}
}

// TestNotificationReasonsAreApart: every Event reason stands for one
// rollout event at most, and each event of the enum has a reason, so a
// subscription's events say without doubt which Events it wants.
func TestNotificationReasonsAreApart(t *testing.T) {
	seen := map[string]v1alpha1.NotificationEvent{}
	for event, reasons := range v1alpha1.NotificationReasons {
		if len(reasons) == 0 {
			t.Errorf("%s stands for no reason", event)
		}
		for _, r := range reasons {
			if other, ok := seen[r]; ok {
				t.Errorf("reason %s stands for %s and %s", r, other, event)
			}
			seen[r] = event
			if got := v1alpha1.NotificationEventOf(r); got != event {
				t.Errorf("NotificationEventOf(%s) = %q, want %s", r, got, event)
			}
		}
	}
	if len(v1alpha1.NotificationReasons) != 10 {
		t.Errorf("%d events, want the enum's 10", len(v1alpha1.NotificationReasons))
	}
	n := v1alpha1.Notification{Destination: "chat", Events: []v1alpha1.NotificationEvent{v1alpha1.NotifyFailed}}
	if !n.Wants(v1alpha1.EventReasonClusterFailed) || n.Wants(v1alpha1.EventReasonStageStarted) || n.Wants("Unknown") {
		t.Error("a subscription of Failed: wrong Wants")
	}
}
