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

package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// Bounds on what the stager writes, as docs/security.md states them.
const (
	// maxConditionMessage is the most a condition message of the stager may hold.
	maxConditionMessage = 4096
	// maxEventNote is the most an Event note of the stager may hold
	// (events.k8s.io/v1 rejects notes of 1 KiB and more).
	maxEventNote = 1023
	// maxQuotedExpression is the most of one expression a message quotes.
	maxQuotedExpression = 200
)

// TestLongInvalidExpressionsKeepTheStatus gives all 32 stages a ~4 KB
// condition that does not parse. Listing every error in full would make a
// condition message longer than the API server accepts, and no status would
// ever land: the status must still say Blocked, with bounded messages that
// quote each expression once and cut.
func TestLongInvalidExpressionsKeepTheStatus(t *testing.T) {
	s := suite.wds2
	const name = "long-invalid"
	filler := strings.Repeat("a", 4000)
	policy := newPolicy(name, name)
	policy.Spec.Stages = nil
	for i := range 32 {
		st := policytest.Stage("dev", "", fmt.Sprintf("obj.results.exists(r, r.name == '%s' &&", filler))
		st.Name = fmt.Sprintf("s%02d", i)
		policy.Spec.Stages = append(policy.Spec.Stages, st)
	}
	create(t, s, policy)

	policy = policies(s).WaitForCondition(t, name, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonInvalidExpression)
	if policy.Status.Phase != v1alpha1.RolloutBlocked {
		t.Fatalf("phase = %q, want Blocked", policy.Status.Phase)
	}
	for _, c := range policy.Status.Conditions {
		if len(c.Message) > maxConditionMessage {
			t.Errorf("condition %s has a message of %d bytes, more than %d", c.Type, len(c.Message), maxConditionMessage)
		}
		if strings.Contains(c.Message, filler[:maxQuotedExpression+1]) {
			t.Errorf("condition %s quotes an expression beyond %d bytes", c.Type, maxQuotedExpression)
		}
	}
	msg := conditionOf(policy, v1alpha1.ConditionReady).Message
	if !strings.Contains(msg, `stage "s00"`) || !strings.Contains(msg, "obj.results.exists(r, r.name == 'aaa") {
		t.Fatalf("Ready message %q does not name the first stage and its expression", msg)
	}
	if !strings.Contains(msg, "32 expressions") {
		t.Fatalf("Ready message %q does not say how many expressions fail", msg)
	}
	if n := strings.Count(msg, "obj.results.exists(r, r.name == 'aaa"); n > 32 {
		t.Fatalf("Ready message quotes expressions %d times", n)
	}

	var note string
	waitFor(t, "the InvalidExpression Event", func() error {
		for _, e := range events(t, s, policy) {
			if e.Reason == v1alpha1.ReasonInvalidExpression {
				note = e.Note
				return nil
			}
		}
		return fmt.Errorf("no InvalidExpression Event")
	})
	if len(note) > maxEventNote || !strings.Contains(note, `stage "s00"`) {
		t.Fatalf("InvalidExpression Event note of %d bytes (at most %d) does not name stage s00: %q", len(note), maxEventNote, note)
	}
}

// TestStuckDeletionIsReported holds a stage's BindingPolicy with a finalizer
// nobody removes, as KubeStellar's finalizer stays while its controller-manager
// is down, and deletes the policy: the policy says what blocks its deletion
// and since when, emits a Warning Event past the threshold, exports the
// deletion's start time, and goes once the finalizer is released.
func TestStuckDeletionIsReported(t *testing.T) {
	s := suite.wds1
	const name = "stuck-deletion"
	const hold = "test.kubestellar.io/hold"
	createWorkload(t, s, name)
	create(t, s, newPolicy(name, name))
	waitForBindingPolicies(t, s, name, "dev")
	bpName := v1alpha1.StagePlacement(name, "dev").String()
	updateObject(t, s, bpName, func(bp *ksv1alpha1.BindingPolicy) { controllerutil.AddFinalizer(bp, hold) })

	policy := policies(s).Get(t, name)
	if err := s.Client.Delete(suite.ctx, policy); err != nil {
		t.Fatalf("deleting StagedBindingPolicy %s: %v", name, err)
	}
	policy = policies(s).WaitForCondition(t, name, v1alpha1.ConditionDeleting, metav1.ConditionTrue, v1alpha1.ReasonDeletionBlocked)
	if policy.DeletionTimestamp == nil {
		t.Fatal("the policy has no deletionTimestamp")
	}
	since := policy.DeletionTimestamp.UTC().Format(time.RFC3339)
	c := meta.FindStatusCondition(policy.Status.Conditions, v1alpha1.ConditionDeleting)
	for _, want := range []string{bpName, hold, since} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Deleting message %q does not name %q", c.Message, want)
		}
	}

	waitFor(t, "the DeletionBlocked Warning Event", func() error {
		for _, e := range events(t, s, policy) {
			if e.Reason == v1alpha1.ReasonDeletionBlocked && e.Type == "Warning" && strings.Contains(e.Note, hold) {
				return nil
			}
		}
		return fmt.Errorf("no DeletionBlocked Warning Event: %v", policies(s).EventCounts(t, policy))
	})
	labels := map[string]string{"space": s.Name, "policy": name}
	waitFor(t, "the deletion metric", func() error {
		v, ok := metricValue(t, "stager_policy_deletion_start_time_seconds", labels)
		if !ok || v != float64(policy.DeletionTimestamp.Unix()) {
			return fmt.Errorf("stager_policy_deletion_start_time_seconds = %v (present: %v), want %d", v, ok, policy.DeletionTimestamp.Unix())
		}
		return nil
	})

	updateObject(t, s, bpName, func(bp *ksv1alpha1.BindingPolicy) { controllerutil.RemoveFinalizer(bp, hold) })
	policies(s).WaitGone(t, name) // once the finalizer is released
	waitFor(t, "the deleted policy's metric series to vanish", func() error {
		if n := series(t, labels); n != 0 {
			return fmt.Errorf("%d series left", n)
		}
		return nil
	})
}

// events returns the Events regarding a policy.
func events(t *testing.T, s *space, policy *v1alpha1.StagedBindingPolicy) []eventsv1.Event {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := s.Client.List(suite.ctx, list); err != nil {
		t.Fatalf("listing Events in %s: %v", s.Name, err)
	}
	var regarding []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.UID == policy.UID {
			regarding = append(regarding, e)
		}
	}
	return regarding
}
