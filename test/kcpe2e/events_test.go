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

package kcpe2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// claimLabelPrefix starts the labels kcp puts on the objects of a claimed
// resource (apisv1alpha1.APIExportPermissionClaimLabelPrefix).
const claimLabelPrefix = "claimed.internal.apis.kcp.io/"

// TestKCPRewritesEveryEventOfAClaimingWorkspace pins what
// docs/operations.md warns of: in a workspace whose APIBinding accepts
// the stager's claim on events.k8s.io Events, kcp v0.28.0 rewrites every
// Event, whoever wrote it, for as long as it exists. Its claim-label
// controller handles the Event once as a core/v1 Event (no claim: the
// label goes) and once as an events.k8s.io one (claimed: the label comes
// back), each rewrite waking the other, and a rewrite renews the Event's
// time to live. kcp-dev/kcp#3501 (in v0.28.1) labels both alike. When this
// test fails, kcp has the fix: drop the warning.
func TestKCPRewritesEveryEventOfAClaimingWorkspace(t *testing.T) {
	w := wdsNamed("wds1")
	e := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "someone-elses-event"},
		EventTime:           metav1.NewMicroTime(time.Now()),
		ReportingController: "example.com/another-controller",
		ReportingInstance:   "another-controller-1",
		Action:              "Test",
		Reason:              "Tested",
		Type:                corev1.EventTypeNormal,
		Regarding:           corev1.ObjectReference{Kind: "Namespace", Name: metav1.NamespaceDefault, APIVersion: "v1"},
		Note:                "written once, by the workspace's admin",
	}
	if err := w.client.Create(suite.ctx, e); err != nil {
		t.Fatalf("creating an Event in %s: %v", w.space, err)
	}
	versions := map[string]bool{e.ResourceVersion: true}
	labelled, unlabelled := 0, 0
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && (len(versions) < 5 || labelled == 0 || unlabelled == 0) {
		got := &eventsv1.Event{}
		if err := w.client.Get(suite.ctx, client.ObjectKeyFromObject(e), got); err != nil {
			t.Fatal(err)
		}
		versions[got.ResourceVersion] = true
		claimed := false
		for k := range got.Labels {
			claimed = claimed || strings.HasPrefix(k, claimLabelPrefix)
		}
		if claimed {
			labelled++
		} else {
			unlabelled++
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(versions) < 5 || labelled == 0 || unlabelled == 0 {
		t.Errorf("an Event written once had %d versions in 30 s, read %d times with kcp's claim label and %d without: "+
			"kcp no longer rewrites Events in a loop; drop the warning of docs/operations.md", len(versions), labelled, unlabelled)
	}
}
