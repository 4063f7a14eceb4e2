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
	"fmt"
	"sync"

	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/kubestellar/workload-stager/internal/announce"
)

// DefaultEventBurst is the most Events a controller posts to its space in a
// burst above its Event rate (Options.EventQPS), when it has one, unless
// told otherwise (the stager's --space-event-burst).
const DefaultEventBurst = 50

// eventsConfig returns a copy of a space's configuration that sends at most
// qps requests a second, in bursts of up to burst, through a token bucket of
// its own: the Events' own, apart from the controller's other requests, so
// that a burst of Events never holds back a write (see
// spaces.WithRequestRate).
func eventsConfig(config *rest.Config, qps float32, burst int) *rest.Config {
	cfg := rest.CopyConfig(config)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = qps, burst, nil
	return cfg
}

// newEventBroadcaster returns a broadcaster that posts Events to the space
// of cl at up to qps a second, in bursts of up to burst, over the space's
// HTTP client.
func newEventBroadcaster(cl cluster.Cluster, qps float32, burst int) (events.EventBroadcaster, error) {
	sink, err := eventsv1client.NewForConfigAndClient(eventsConfig(cl.GetConfig(), qps, burst), cl.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("building the Events client: %w", err)
	}
	return events.NewBroadcaster(&events.EventSinkImpl{Interface: sink}), nil
}

// newPoster returns the Poster of the space's pending Events (rule 20): over
// the space's HTTP client, at up to qps a second in bursts of up to burst
// when qps is positive (the Events' own rate, see eventsConfig), else at
// the space's.
func newPoster(cl cluster.Cluster, qps float32, burst int, opts announce.Options) (*announce.Poster, error) {
	cfg := rest.CopyConfig(cl.GetConfig())
	if qps > 0 {
		cfg = eventsConfig(cl.GetConfig(), qps, burst)
	}
	client, err := eventsv1client.NewForConfigAndClient(cfg, cl.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("building the Events client: %w", err)
	}
	return announce.NewPoster(client, opts), nil
}

// withEvents is a controller whose pending Events go through a Poster of
// its own, and its other Events through a broadcaster of its own when it
// has one; both start with the controller and stop once its workers have.
// Events not yet posted then are dropped: the pending ones stay in their
// policies' status for the next stager to post.
type withEvents struct {
	controller.Controller
	broadcaster events.EventBroadcaster
	poster      *announce.Poster
}

// Start starts the broadcaster and the Poster, then runs the controller
// until ctx is done.
func (c withEvents) Start(ctx context.Context) error {
	if c.broadcaster != nil {
		if err := c.broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
			return fmt.Errorf("starting to post Events: %w", err)
		}
		defer c.broadcaster.Shutdown()
	}
	ctx, cancel := context.WithCancel(ctx)
	var posting sync.WaitGroup
	posting.Go(func() { _ = c.poster.Start(ctx) })
	defer posting.Wait()
	defer cancel()
	return c.Controller.Start(ctx)
}
