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

package stagedbindingpolicy

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/announce"
	"github.com/kubestellar/workload-stager/internal/controller/metrics"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// postedEvents drains recorder's Events, as "Type Reason Note".
func postedEvents(recorder *events.FakeRecorder) map[string]int {
	got := map[string]int{}
	for {
		select {
		case e := <-recorder.Events:
			got[e]++
		default:
			return got
		}
	}
}

// TestReconcilePostsPendingEventsAgainAfterARestart: the Events of a
// status write are pending in it until posted; a reconciler that did not
// post them (a stager started after the one that wrote was killed) posts
// each again, and a run after the posts clears them, posting nothing twice.
func TestReconcilePostsPendingEventsAgainAfterARestart(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	p := createPolicy(t, "announce-restart", v1alpha1.CleanupFinalizer)
	key := types.NamespacedName{Name: p.Name}
	run := func(r *Reconciler) {
		t.Helper()
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	read := func() *v1alpha1.StagedBindingPolicy {
		t.Helper()
		got := &v1alpha1.StagedBindingPolicy{}
		if err := testSpace.Client.Get(ctx, key, got); err != nil {
			t.Fatalf("reading the policy: %v", err)
		}
		return got
	}

	killed := newTestReconciler(t, time.Now())
	run(killed)
	pending := read().Status.PendingEvents
	if len(pending) == 0 {
		t.Fatalf("the rollout's start left no Event pending")
	}
	want := map[string]int{}
	for _, e := range pending {
		want[fmt.Sprintf("%s %s %s", e.Type, e.Reason, e.Note)]++
	}
	if got := postedEvents(killed.Recorder.(*events.FakeRecorder)); !sameCounts(got, want) {
		t.Errorf("posted after the write: %v, want %v", got, want)
	}

	start := time.Now()
	restarted := newTestReconciler(t, start)
	for i := range 4 {
		restarted.Clock.(*clocktesting.FakePassiveClock).SetTime(start.Add(time.Duration(i) * runGap))
		run(restarted)
	}
	if got := postedEvents(restarted.Recorder.(*events.FakeRecorder)); !containsCounts(got, want) {
		t.Errorf("posted by the restarted reconciler: %v, want each of %v once", got, want)
	}
	after := read().Status
	for _, e := range after.PendingEvents {
		for _, old := range pending {
			if e.Sequence == old.Sequence {
				t.Errorf("#%d %s still pending after it was posted", e.Sequence, e.Reason)
			}
		}
	}
	if after.EventSequence < pending[len(pending)-1].Sequence {
		t.Errorf("eventSequence went back from %d to %d", pending[len(pending)-1].Sequence, after.EventSequence)
	}
}

// sameCounts reports whether got and want are equal.
func sameCounts(got, want map[string]int) bool {
	return len(got) == len(want) && containsCounts(got, want)
}

// containsCounts reports whether got has each of want as many times.
func containsCounts(got, want map[string]int) bool {
	for k, n := range want {
		if got[k] != n {
			return false
		}
	}
	return true
}

// TestPendingEventsOfOneReasonArePostedApart: pending Events of one
// reason posted at once (a restarted stager's; clusters failed together)
// reach the API server each with its own note, through the Poster
// NewController gives: client-go's broadcaster took Events of one object,
// type, reason and action as one series and kept the first one's note.
// Plan is told each is posted only once the API server has it.
func TestPendingEventsOfOneReasonArePostedApart(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	p := createPolicy(t, "announce-apart", v1alpha1.CleanupFinalizer)
	for i, stage := range []string{"dev", "test", "prod"} {
		p.Status.PendingEvents = append(p.Status.PendingEvents, v1alpha1.PendingEvent{Sequence: int64(i + 1), Type: corev1.EventTypeNormal,
			Reason: v1alpha1.EventReasonStageStarted, Action: "UpdateStatus", Note: fmt.Sprintf("stage %q started", stage), Time: metav1.Now()})
	}
	p.Status.EventSequence = 3
	if err := testSpace.Client.Status().Update(ctx, p); err != nil {
		t.Fatalf("writing the pending Events: %v", err)
	}
	sink, err := eventsv1client.NewForConfig(testSpace.Config)
	if err != nil {
		t.Fatal(err)
	}
	r := newTestReconciler(t, time.Now())
	poster := announce.NewPoster(sink, announce.Options{Controller: "announce-test"})
	r.Events = poster
	if announced, _, wait := r.announce(p); len(announced) != 0 || wait <= 0 {
		t.Errorf("announced %v (look again in %v) before the Poster ran", announced, wait)
	}
	go func() { _ = poster.Start(ctx) }()
	environment.Eventually(t, 10*time.Second, "every entry posted", func() error {
		if announced, _, _ := r.announce(p); len(announced) != len(p.Status.PendingEvents) {
			return fmt.Errorf("posted %v of %d", announced, len(p.Status.PendingEvents))
		}
		return nil
	})

	environment.Eventually(t, 10*time.Second, "an Event per pending entry", func() error {
		list := &eventsv1.EventList{}
		if err := testSpace.Client.List(ctx, list); err != nil {
			return err
		}
		notes := map[string]bool{}
		for _, e := range list.Items {
			if e.Regarding.UID == p.UID {
				notes[e.Note] = true
			}
		}
		for _, e := range p.Status.PendingEvents {
			if !notes[e.Note] {
				return fmt.Errorf("no Event %q among %v", e.Note, notes)
			}
		}
		return nil
	})
}

// TestForgedPendingEventsAreNotPosted: an entry of status.pendingEvents
// whose reason the stager never gives was written by someone else who
// may write the status; it is not posted (nor offered to a Notifier),
// counted as refused under the reason Other, and Plan clears it as if
// posted. The stager's own entry beside it is posted.
func TestForgedPendingEventsAreNotPosted(t *testing.T) {
	const space = "announce-forged"
	r := &Reconciler{Space: space, Recorder: events.NewFakeRecorder(10), Metrics: metrics.NewSpace(space),
		Clock: clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))}
	t.Cleanup(func() { metrics.SpaceDisengaged(space) })
	policy := &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "u1"}}
	policy.Status.PendingEvents = []v1alpha1.PendingEvent{
		{Sequence: 1, Type: corev1.EventTypeNormal, Reason: "RolloutCompletedForReal", Action: "forged", Note: "all good, ship it"},
		{Sequence: 2, Type: corev1.EventTypeNormal, Reason: v1alpha1.EventReasonStageStarted, Action: "start", Note: `stage "dev" started`},
	}
	r.announce(policy)
	got := postedEvents(r.Recorder.(*events.FakeRecorder))
	if want := map[string]int{`Normal StageStarted stage "dev" started`: 1}; !sameCounts(got, want) {
		t.Errorf("posted %v, want only the stager's own %v", got, want)
	}
	if n := counterSum(t, "stager_announcements_total", metrics.LabelReason, metrics.OtherReason); n != 1 {
		t.Errorf("%v announcements of reason Other, want the forged one", n)
	}
	if n := counterSum(t, "stager_announcements_total", metrics.LabelReason, "RolloutCompletedForReal"); n != 0 {
		t.Errorf("a series of the forged reason: %v", n)
	}
}
