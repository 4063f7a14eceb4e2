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
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// TestEventsConfigHasItsOwnRate: the Events' client sends at the rate it is
// given, through a token bucket of its own, and leaves the space's
// configuration as it was.
func TestEventsConfigHasItsOwnRate(t *testing.T) {
	shared := flowcontrol.NewTokenBucketRateLimiter(1, 1)
	space := &rest.Config{Host: "https://space", QPS: 100, Burst: 200, RateLimiter: shared}
	got := eventsConfig(space, 50, 75)
	if got.QPS != 50 || got.Burst != 75 || got.RateLimiter != nil || got.Host != space.Host {
		t.Errorf("events config: QPS %v, burst %d, rate limiter %v, host %q; want 50, 75, none, %q",
			got.QPS, got.Burst, got.RateLimiter, got.Host, space.Host)
	}
	if space.QPS != 100 || space.Burst != 200 || space.RateLimiter != shared {
		t.Errorf("the space's config changed: QPS %v, burst %d", space.QPS, space.Burst)
	}
}

// TestControllerPostsEventsAtItsEventRate runs a space's controller with an
// Event rate of one, and no more, while two policies start: the first
// StageStarted Event is posted, the second waits for a token, which the
// space's own recorder (5 a second) would not make it do. Stopping the
// controller stops the broadcaster with it.
func TestControllerPostsEventsAtItsEventRate(t *testing.T) {
	needsAPIServer(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c := testSpace.Client
	group := objectName("events-test", "events-rate")
	selector := labels.SelectorFromSet(labels.Set{"events-test": group})
	stopped := startController(ctx, t, "events", selector, Options{MaxConcurrentReconciles: 2, Logger: testr.New(t),
		EventQPS: 0.001, EventBurst: 1})

	var names []string
	for _, base := range []string{"events-a", "events-b"} {
		policy := policytest.Policy(objectName("StagedBindingPolicy", base), map[string]string{"app": base},
			policytest.Stage("dev", "", ""))
		policy.Labels = map[string]string{"events-test": group}
		if err := c.Create(ctx, policy); err != nil {
			t.Fatal(err)
		}
		names = append(names, policy.Name)
	}
	started := func() (int, error) {
		list := &eventsv1.EventList{}
		if err := c.List(ctx, list); err != nil {
			return 0, err
		}
		n := 0
		for _, e := range list.Items {
			if e.Reason == v1alpha1.EventReasonStageStarted && e.ReportingController == ControllerName &&
				(e.Regarding.Name == names[0] || e.Regarding.Name == names[1]) {
				n++
			}
		}
		return n, nil
	}
	environment.Eventually(t, 30*time.Second, "the first StageStarted Event", func() error {
		policies := &v1alpha1.StagedBindingPolicyList{}
		if err := c.List(ctx, policies, client.MatchingLabelsSelector{Selector: selector}); err != nil {
			return err
		}
		for _, p := range policies.Items {
			if p.Status.ActiveStage != "dev" {
				return fmt.Errorf("policy %s has not started", p.Name)
			}
		}
		switch n, err := started(); {
		case err != nil:
			return err
		case n == 0:
			return errors.New("no StageStarted Event yet")
		}
		return nil
	})
	// Both rollouts have started: a recorder at 5 Events a second would
	// post the second Event within a second.
	environment.Consistently(t, 3*time.Second, "one StageStarted Event at one Event and no more", func() error {
		switch n, err := started(); {
		case err != nil:
			return err
		case n != 1:
			return fmt.Errorf("%d StageStarted Events posted, want 1", n)
		}
		return nil
	})

	cancel()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("the controller stopped with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the controller did not stop")
	}
}
