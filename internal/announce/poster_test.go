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

package announce

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// apiServer is the fake clientset's Events, answering each create with
// the next of its answers (nil: store it) once they run out.
type apiServer struct {
	*fake.Clientset
	mu      sync.Mutex
	answers []error
	creates int
	hold    chan struct{}
}

func newAPIServer(answers ...error) *apiServer {
	s := &apiServer{Clientset: fake.NewClientset(), answers: answers}
	s.PrependReactor("create", "events", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if s.hold != nil {
			<-s.hold
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.creates++
		if len(s.answers) == 0 {
			return false, nil, nil
		}
		err := s.answers[0]
		s.answers = s.answers[1:]
		if errors.Is(err, errLost) {
			// Made, but the answer was lost.
			create := action.(k8stesting.CreateAction)
			if err := s.Tracker().Create(create.GetResource(), create.GetObject(), create.GetNamespace()); err != nil {
				return true, nil, err
			}
			return true, nil, errors.New("http2: response body closed")
		}
		return err != nil, nil, err
	})
	return s
}

// errLost marks an answer as lost after the create was made.
var errLost = errors.New("lost")

func (s *apiServer) stored(t *testing.T) []eventsv1.Event {
	t.Helper()
	list, err := s.EventsV1().Events("").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func (s *apiServer) createCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.creates
}

type outcomes struct {
	mu  sync.Mutex
	got []string
}

func (o *outcomes) record(reason, result string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, reason+" "+result)
}

func (o *outcomes) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.got)
}

var (
	policy = types.NamespacedName{Name: "web"}
	start  = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

func ref(uid types.UID, seq int64) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "StagedBindingPolicy",
		Name: policy.Name, UID: uid, FieldPath: fmt.Sprintf("status.pendingEvents{%d}", seq)}
}

func pending(seq int64) v1alpha1.PendingEvent {
	return v1alpha1.PendingEvent{Sequence: seq, Type: corev1.EventTypeNormal, Reason: v1alpha1.EventReasonStageStarted,
		Action: "UpdateStatus", Note: fmt.Sprintf("entry %d", seq), Time: metav1.NewTime(start.Add(-time.Minute))}
}

// started returns a running Poster over server with a fake clock.
func started(t *testing.T, server *apiServer, queue int) (*Poster, *clocktesting.FakePassiveClock, *outcomes) {
	t.Helper()
	clk := clocktesting.NewFakePassiveClock(start)
	o := &outcomes{}
	// Backoffs longer than Poll, for the tests to tell them apart.
	p := NewPoster(server.EventsV1(), Options{Controller: "stager", Instance: "stager-a", Clock: clk,
		QueueLength: queue, FirstBackoff: 5 * time.Second, OnOutcome: o.record})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return p, clk, o
}

// settle offers e until its outcome is not Pending, moving clk past each
// wait it is told, and returns the outcome.
func settle(t *testing.T, p *Poster, clk *clocktesting.FakePassiveClock, uid types.UID, e v1alpha1.PendingEvent) Outcome {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		outcome, wait := p.Post(policy, ref(uid, e.Sequence), e)
		if outcome != Pending {
			return outcome
		}
		if wait > Poll {
			clk.SetTime(clk.Now().Add(wait))
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("entry %d still pending after 10 s", e.Sequence)
	return Pending
}

// TestPostedOnceTaken: an Event is Posted once the API server stored it,
// as the recorder would make it (regarding the entry's field, timed when
// Plan recorded it), and offering it again posts nothing more.
func TestPostedOnceTaken(t *testing.T) {
	server := newAPIServer()
	p, clk, o := started(t, server, 8)
	e := pending(1)
	if got := settle(t, p, clk, "u1", e); got != Posted {
		t.Fatalf("outcome %v, want Posted", got)
	}
	for range 3 {
		if got, _ := p.Post(policy, ref("u1", 1), e); got != Posted {
			t.Fatalf("offered again: %v, want Posted", got)
		}
	}
	stored := server.stored(t)
	if len(stored) != 1 || server.createCount() != 1 {
		t.Fatalf("%d Events stored after %d creates, want 1 and 1", len(stored), server.createCount())
	}
	ev := stored[0]
	if ev.Regarding.FieldPath != "status.pendingEvents{1}" || ev.Regarding.UID != "u1" || ev.Note != e.Note ||
		ev.Reason != e.Reason || ev.Type != e.Type || ev.Action != e.Action || !ev.EventTime.Time.Equal(e.Time.Time) ||
		ev.ReportingController != "stager" || ev.ReportingInstance != "stager-a" || ev.Namespace != metav1.NamespaceDefault {
		t.Errorf("stored %+v, not the pending entry %+v", ev, e)
	}
	if got, want := o.list(), []string{"StageStarted posted"}; !slices.Equal(got, want) {
		t.Errorf("outcomes %v, want %v", got, want)
	}
}

// TestFailedTriesAreTriedAgainWithBackoff: an Event whose tries fail
// (unreachable, throttled, forbidden, timed out) stays Pending, is not
// tried again before its backoff, then is Posted; one whose answer was
// lost after it was made is Posted by the try that finds it existing.
func TestFailedTriesAreTriedAgainWithBackoff(t *testing.T) {
	gr := schema.GroupResource{Group: "events.k8s.io", Resource: "events"}
	server := newAPIServer(
		errors.New("connection refused"),
		apierrors.NewTooManyRequests("slow down", 1),
		apierrors.NewForbidden(gr, "", errors.New("not yet")),
		errLost,
	)
	p, clk, o := started(t, server, 8)
	e := pending(1)
	var waits []time.Duration
	deadline := time.Now().Add(10 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("still pending; outcomes %v", o.list())
		}
		outcome, wait := p.Post(policy, ref("u1", 1), e)
		if outcome == Posted {
			break
		}
		if outcome != Pending {
			t.Fatalf("outcome %v, want Pending then Posted", outcome)
		}
		if wait > Poll {
			before := server.createCount()
			// Not tried before its time.
			if again, _ := p.Post(policy, ref("u1", 1), e); again != Pending || server.createCount() != before {
				t.Fatalf("tried again before its backoff")
			}
			waits = append(waits, wait)
			clk.SetTime(clk.Now().Add(wait))
		}
		time.Sleep(2 * time.Millisecond)
	}
	if !slices.Equal(waits, []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second}) {
		t.Errorf("backoffs %v, want 5s 10s 20s 40s", waits)
	}
	// The lost answer's Event is there once; the next try found it.
	if n := len(server.stored(t)); n != 1 {
		t.Errorf("%d Events stored, want 1", n)
	}
	want := []string{"StageStarted retried", "StageStarted retried", "StageStarted retried", "StageStarted retried", "StageStarted posted"}
	if got := o.list(); !slices.Equal(got, want) {
		t.Errorf("outcomes %v, want %v", got, want)
	}
}

// TestRejectedEventsAreSettled: an Event the API server refuses as such
// is Rejected and never tried again.
func TestRejectedEventsAreSettled(t *testing.T) {
	server := newAPIServer(apierrors.NewInvalid(schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}, "x", nil))
	p, clk, o := started(t, server, 8)
	if got := settle(t, p, clk, "u1", pending(1)); got != Rejected {
		t.Fatalf("outcome %v, want Rejected", got)
	}
	clk.SetTime(clk.Now().Add(time.Hour))
	if got, _ := p.Post(policy, ref("u1", 1), pending(1)); got != Rejected || server.createCount() != 1 {
		t.Errorf("offered again: %v after %d creates, want Rejected after 1", got, server.createCount())
	}
	if got, want := o.list(), []string{"StageStarted rejected"}; !slices.Equal(got, want) {
		t.Errorf("outcomes %v, want %v", got, want)
	}
}

// TestFullQueueRefusesUntilThereIsRoom: offers past the queue's bound are
// refused without blocking, and taken when offered again once it drains;
// every Event is posted in the end, in the order queued.
func TestFullQueueRefusesUntilThereIsRoom(t *testing.T) {
	server := newAPIServer()
	server.hold = make(chan struct{})
	p, clk, _ := started(t, server, 2)
	const n = 6
	for seq := int64(1); seq <= n; seq++ {
		if got, _ := p.Post(policy, ref("u1", seq), pending(seq)); got != Pending {
			t.Fatalf("entry %d: %v, want Pending", seq, got)
		}
	}
	p.mu.Lock()
	queued := 0
	for _, en := range p.policies[policy].seqs {
		if en.queued {
			queued++
		}
	}
	p.mu.Unlock()
	// One in the worker's hands, two in the queue at most.
	if queued > 3 {
		t.Fatalf("%d entries queued past a queue of 2", queued)
	}
	close(server.hold)
	for seq := int64(1); seq <= n; seq++ {
		if got := settle(t, p, clk, "u1", pending(seq)); got != Posted {
			t.Fatalf("entry %d: %v, want Posted", seq, got)
		}
	}
	if got := len(server.stored(t)); got != n {
		t.Errorf("%d Events stored, want %d", got, n)
	}
}

// TestSyncForgetsWhatIsNoLongerPending: an entry cleared from the status
// is forgotten (its sequence, offered again, is posted anew), as is every
// entry of an earlier policy of the name.
func TestSyncForgetsWhatIsNoLongerPending(t *testing.T) {
	server := newAPIServer()
	p, clk, _ := started(t, server, 8)
	for seq := int64(1); seq <= 2; seq++ {
		settle(t, p, clk, "u1", pending(seq))
	}
	p.Sync(policy, "u1", []v1alpha1.PendingEvent{pending(2)})
	settle(t, p, clk, "u1", pending(1))
	settle(t, p, clk, "u1", pending(2))
	if got := server.createCount(); got != 3 {
		t.Errorf("%d creates, want 3: entry 1 anew after Sync cleared it, entry 2 once", got)
	}
	p.Sync(policy, "u2", nil)
	settle(t, p, clk, "u2", pending(2))
	if got := server.createCount(); got != 4 {
		t.Errorf("%d creates, want 4: the new policy's entry 2 is its own", got)
	}
	p.Forget(policy)
	if len(p.policies) != 0 {
		t.Errorf("Forget kept %v", p.policies)
	}
}

// TestRecordedPostsAsOffered: a Poster over a recorder posts an Event when
// first offered, counts it posted then, and posts it once however often
// it is offered.
func TestRecordedPostsAsOffered(t *testing.T) {
	recorder := events.NewFakeRecorder(10)
	o := &outcomes{}
	p := NewRecorded(recorder, Options{Controller: "stager", OnOutcome: o.record})
	for range 3 {
		if got, _ := p.Post(policy, ref("u1", 1), pending(1)); got != Posted {
			t.Fatalf("outcome %v, want Posted", got)
		}
	}
	if got := len(recorder.Events); got != 1 {
		t.Errorf("%d Events recorded, want 1", got)
	}
	if got := <-recorder.Events; got != "Normal StageStarted entry 1" {
		t.Errorf("recorded %q", got)
	}
	if got, want := o.list(), []string{"StageStarted posted"}; !slices.Equal(got, want) {
		t.Errorf("outcomes %v, want %v", got, want)
	}
}
