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

	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
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

// withEvents is a controller whose Events go through a broadcaster of its
// own, which starts with the controller and stops once its workers have.
// Events not yet posted then are dropped, as with the recorder of the
// space's cluster when it stops.
type withEvents struct {
	controller.Controller
	broadcaster events.EventBroadcaster
}

// Start starts the broadcaster, then runs the controller until ctx is done.
func (c withEvents) Start(ctx context.Context) error {
	if err := c.broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return fmt.Errorf("starting to post Events: %w", err)
	}
	defer c.broadcaster.Shutdown()
	return c.Controller.Start(ctx)
}
