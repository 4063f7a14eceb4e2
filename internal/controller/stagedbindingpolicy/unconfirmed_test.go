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
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/controller/metrics"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// lostAnswer is the error of a request cancelled before its answer came,
// as when a space's controller is restarted after an outage.
var lostAnswer = &url.Error{Op: "Put", URL: "https://space/status", Err: context.Canceled}

// statusWrites returns a client of the test space whose status writes end
// with lostAnswer: made first when made is true, else not sent at all.
func statusWrites(t *testing.T, made bool) client.Client {
	t.Helper()
	return interceptor.NewClient(directClient(t), interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if made {
				if err := c.SubResource(sub).Update(ctx, obj, opts...); err != nil {
					return err
				}
			}
			return lostAnswer
		},
	})
}

// reasonsPosted drains the Events a test reconciler has posted and counts
// them by reason.
func reasonsPosted(r *Reconciler) map[string]int {
	reasons := map[string]int{}
	fake := r.Recorder.(*events.FakeRecorder)
	for {
		select {
		case e := <-fake.Events:
			reasons[strings.Fields(e)[1]]++
		default:
			return reasons
		}
	}
}

// advanceWithLostAnswer has a reconciler hand a policy whose dev stage is
// done over to stage test, then record the advance through client, whose
// answer is lost.
func advanceWithLostAnswer(t *testing.T, p *v1alpha1.StagedBindingPolicy, unconfirmed *Unconfirmed, writes client.Client, now time.Time) {
	t.Helper()
	r := newTestReconciler(t, now)
	r.Unconfirmed = unconfirmed
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}}
	if _, err := r.Reconcile(t.Context(), req); err != nil {
		t.Fatalf("Reconcile handing over: %v", err)
	}
	r.Client = writes
	if _, err := r.Reconcile(t.Context(), req); !errors.Is(err, context.Canceled) {
		t.Fatalf("Reconcile recording the advance = %v, want the lost answer", err)
	}
	if n := reasonsPosted(r)[v1alpha1.EventReasonStageSucceeded]; n != 0 {
		t.Errorf("%d StageSucceeded Events posted before the advance was known to be recorded", n)
	}
}

// TestStatusWriteWhoseAnswerWasLostIsReportedOnceSeen: the API server made
// the status write that recorded an advance, but the request ended without
// its answer (the space's controller was restarted). The space's next
// controller sees the advance recorded, posts its Events and counts the
// stage completed, once.
func TestStatusWriteWhoseAnswerWasLostIsReportedOnceSeen(t *testing.T) {
	needsAPIServer(t)
	p := createPolicy(t, "answer-lost", v1alpha1.CleanupFinalizer)
	devDone(t, p, "answer-lost")
	unconfirmed := NewUnconfirmed()
	advanceWithLostAnswer(t, p, unconfirmed, statusWrites(t, true), time.Now())
	if got := getPolicy(t, p.Name); got.Status.ActiveStage != "test" {
		t.Fatalf("active stage %q, want test: the API server made the write", got.Status.ActiveStage)
	}

	next := newTestReconciler(t, time.Now())
	next.Unconfirmed = unconfirmed
	// The space of newTestReconciler's, and a metrics name of its own.
	next.Metrics = metrics.NewSpace(next.Space)
	completed := func() float64 { return counterSum(t, "stager_stage_transitions_total", metrics.LabelPolicy, p.Name) }
	completedBefore := completed()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}}
	for range 2 {
		if _, err := next.Reconcile(t.Context(), req); err != nil {
			t.Fatalf("Reconcile of the next controller: %v", err)
		}
	}
	posted := reasonsPosted(next)
	for _, reason := range []string{v1alpha1.EventReasonStageSucceeded, v1alpha1.EventReasonStageStarted} {
		if posted[reason] != 1 {
			t.Errorf("the next controller posted %d %s Events, want 1 (all: %v)", posted[reason], reason, posted)
		}
	}
	if got := completed() - completedBefore; got != 1 {
		t.Errorf("stager_stage_transitions_total of %s rose by %v, want 1", p.Name, got)
	}
}

// TestStatusWriteWhoseAnswerWasLostIsNotReportedTwice: the status write
// whose answer was lost was not made, and the next controller makes it
// again: its Events are posted once, with the write that was made.
func TestStatusWriteWhoseAnswerWasLostIsNotReportedTwice(t *testing.T) {
	needsAPIServer(t)
	p := createPolicy(t, "answer-lost-unmade", v1alpha1.CleanupFinalizer)
	devDone(t, p, "answer-lost-unmade")
	unconfirmed := NewUnconfirmed()
	// One time for both controllers: the next one's advance writes the
	// very status the lost write would have.
	now := time.Now()
	advanceWithLostAnswer(t, p, unconfirmed, statusWrites(t, false), now)
	if got := getPolicy(t, p.Name); got.Status.ActiveStage != "dev" {
		t.Fatalf("active stage %q, want dev: the write was not sent", got.Status.ActiveStage)
	}

	next := newTestReconciler(t, now)
	next.Unconfirmed = unconfirmed
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}}
	for range 3 {
		if _, err := next.Reconcile(t.Context(), req); err != nil {
			t.Fatalf("Reconcile of the next controller: %v", err)
		}
	}
	if got := getPolicy(t, p.Name); got.Status.ActiveStage != "test" {
		t.Fatalf("active stage %q, want test after the next controller's runs", got.Status.ActiveStage)
	}
	if n := reasonsPosted(next)[v1alpha1.EventReasonStageSucceeded]; n != 1 {
		t.Errorf("%d StageSucceeded Events, want 1", n)
	}
}

func TestAnswerLost(t *testing.T) {
	gr := schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "stagedbindingpolicies"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{lostAnswer, true},
		{fmt.Errorf("wrapped: %w", context.DeadlineExceeded), true},
		{apierrors.NewTimeoutError("the write may still be made", 1), true},
		{apierrors.NewServerTimeout(gr, "update", 1), true},
		{apierrors.NewInternalError(errors.New("etcd answered late")), true},
		{apierrors.NewGenericServerResponse(502, "update", gr, "p", "bad gateway", 0, true), true},
		{apierrors.NewConflict(gr, "p", errors.New("changed")), false},
		{apierrors.NewForbidden(gr, "p", errors.New("no")), false},
		{apierrors.NewTooManyRequests("busy", 1), false},
	} {
		if got := answerLost(tc.err); got != tc.want {
			t.Errorf("answerLost(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestUnconfirmedLanded: which status a run sees decides whether an
// unconfirmed write is reported, kept or dropped.
func TestUnconfirmedLanded(t *testing.T) {
	const space = "space"
	now := time.Now()
	policy := func(uid types.UID, active string) *v1alpha1.StagedBindingPolicy {
		p := &v1alpha1.StagedBindingPolicy{}
		p.Name, p.UID, p.Status.ActiveStage = "p", uid, active
		return p
	}
	// A write from stage dev to stage test.
	write := rollout.Action{Type: rollout.ActionUpdateStatus, Status: &policy("a", "test").Status}
	for _, tc := range []struct {
		name string
		// seen are the policies the runs see, in turn; want, whether each reports the write.
		seen []*v1alpha1.StagedBindingPolicy
		want []bool
		// then, when set, acts on the store before the last run.
		then func(u *Unconfirmed)
	}{
		{name: "seen as written", seen: []*v1alpha1.StagedBindingPolicy{policy("a", "test"), policy("a", "test")}, want: []bool{true, false}},
		{name: "kept while the status before shows", seen: []*v1alpha1.StagedBindingPolicy{policy("a", "dev"), policy("a", "test")}, want: []bool{false, true}},
		{name: "dropped by another status", seen: []*v1alpha1.StagedBindingPolicy{policy("a", "prod"), policy("a", "test")}, want: []bool{false, false}},
		{name: "dropped for a new policy of the same name", seen: []*v1alpha1.StagedBindingPolicy{policy("b", "test"), policy("a", "test")}, want: []bool{false, false}},
		{name: "dropped by an answered write", seen: []*v1alpha1.StagedBindingPolicy{policy("a", "test")}, want: []bool{false},
			then: func(u *Unconfirmed) { u.drop(space, types.NamespacedName{Name: "p"}) }},
		{name: "forgotten with the space", seen: []*v1alpha1.StagedBindingPolicy{policy("a", "test")}, want: []bool{false},
			then: func(u *Unconfirmed) { u.Forget(space) }},
		{name: "dropped after unconfirmedFor", seen: []*v1alpha1.StagedBindingPolicy{policy("a", "test")}, want: []bool{false},
			then: func(u *Unconfirmed) {
				other := policy("c", "dev")
				other.Name = "other"
				if err := u.add(space, other, write, now.Add(unconfirmedFor)); err != nil {
					t.Fatal(err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := NewUnconfirmed()
			if err := u.add(space, policy("a", "dev"), write, now); err != nil {
				t.Fatal(err)
			}
			if tc.then != nil {
				tc.then(u)
			}
			for i, seen := range tc.seen {
				if _, got := u.landed(space, seen); got != tc.want[i] {
					t.Errorf("run %d, seeing stage %q of UID %s: reported = %v, want %v", i+1, seen.Status.ActiveStage, seen.UID, got, tc.want[i])
				}
			}
		})
	}
}

// TestStatusWriteCutOffByTheTenureIsReportedOnceSeen: the status write
// recording an advance is made, but the fence's tenure ends before its
// answer comes; the next run posts its Events once it sees it made.
func TestStatusWriteCutOffByTheTenureIsReportedOnceSeen(t *testing.T) {
	needsAPIServer(t)
	p := createPolicy(t, "answer-lapsed", v1alpha1.CleanupFinalizer)
	devDone(t, p, "answer-lapsed")
	now := time.Now()
	r := newTestReconciler(t, now)
	r.Space = objectName("space", "answer-lapsed")
	r.Unconfirmed = NewUnconfirmed()
	// Renewed now for 4 s: the tenure ends in 3 s by the reconciler's clock.
	tenures, _ := fenceFor(t, r.Space, now, 4)
	r.Fence = tenures.Of(multicluster.ClusterName(r.Space))
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}}
	if _, err := r.Reconcile(t.Context(), req); err != nil {
		t.Fatalf("Reconcile handing over: %v", err)
	}
	r.Client = interceptor.NewClient(directClient(t), interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := c.SubResource(sub).Update(ctx, obj, opts...); err != nil {
				return err
			}
			<-ctx.Done()
			return ctx.Err()
		},
	})
	if result, err := r.Reconcile(t.Context(), req); err != nil || result.RequeueAfter != FenceRetry {
		t.Fatalf("Reconcile recording the advance = %+v, %v; want the tenure ended", result, err)
	}
	if n := reasonsPosted(r)[v1alpha1.EventReasonStageSucceeded]; n != 0 {
		t.Errorf("%d StageSucceeded Events posted before the advance was known to be recorded", n)
	}

	r.Client, r.Fence = testSpace.Client, nil
	if _, err := r.Reconcile(t.Context(), req); err != nil {
		t.Fatalf("Reconcile once the fence is no longer in the way: %v", err)
	}
	if n := reasonsPosted(r)[v1alpha1.EventReasonStageSucceeded]; n != 1 {
		t.Errorf("%d StageSucceeded Events, want 1", n)
	}
}
