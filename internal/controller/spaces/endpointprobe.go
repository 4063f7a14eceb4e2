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

package spaces

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// SharedEndpoint is implemented by the cluster of a space whose API server
// serves other spaces too, each at a path of one endpoint, as kcp's virtual
// workspaces serve logical clusters at .../clusters/<id>. The Runner probes
// such an endpoint once a round for all its spaces, instead of once per
// space: at 300 kcp spaces the per-space probes were most of the fleet's
// requests (issue 61). Other spaces are probed one by one.
type SharedEndpoint interface {
	// ProbeEndpoint names the endpoint: spaces that name the same one
	// share a probe. An empty name shares nothing.
	ProbeEndpoint() string
}

// endpointOf returns the endpoint cl's space shares with others, or "".
func endpointOf(cl cluster.Cluster) string {
	if se, ok := cl.(SharedEndpoint); ok {
		return se.ProbeEndpoint()
	}
	return ""
}

// endpointProbe probes one endpoint, every ProbeInterval (more often while
// it does not answer), for as long as a space of it runs its controller,
// and tells each of them the answer.
type endpointProbe struct {
	// cancel stops the probe.
	cancel context.CancelFunc
	// subs are the spaces told, the longest subscribed first. Guarded by
	// the Runner's probesMu.
	subs []*probeSubscriber
}

// probeSubscriber is one space running its controller, told the answers of
// its endpoint's probe.
type probeSubscriber struct {
	runner *Runner
	e      *engagement
	// probe asks the space's own path of the endpoint.
	probe  *prober
	logger logr.Logger
	// recovered is sent to once the space answers again after an outage.
	recovered chan struct{}

	mu sync.Mutex
	// closed is set once the space no longer listens: it is told nothing
	// more, so that no late answer marks ready a space whose controller
	// has stopped.
	closed      bool
	unreachable bool
}

// subscribe has sub told the answers of the probe of endpoint, started
// with the first subscriber and stopped with the last; endpoint "" is
// sub's alone. The returned function unsubscribes; sub is told nothing once
// it has returned.
func (r *Runner) subscribe(endpoint string, sub *probeSubscriber) (unsubscribe func()) {
	r.probesMu.Lock()
	defer r.probesMu.Unlock()
	ep := r.endpoints[endpoint]
	if endpoint == "" || ep == nil {
		ctx, cancel := context.WithCancel(context.Background())
		ep = &endpointProbe{cancel: cancel}
		if endpoint != "" {
			r.endpoints[endpoint] = ep
		}
		go r.runProbe(ctx, ep)
	}
	ep.subs = append(ep.subs, sub)
	return func() {
		sub.close()
		r.probesMu.Lock()
		defer r.probesMu.Unlock()
		ep.subs = slices.DeleteFunc(ep.subs, func(s *probeSubscriber) bool { return s == sub })
		if len(ep.subs) > 0 {
			return
		}
		ep.cancel()
		if r.endpoints[endpoint] == ep {
			delete(r.endpoints, endpoint)
		}
	}
}

// subscribers returns ep's subscribers, the longest subscribed first.
func (r *Runner) subscribers(ep *endpointProbe) []*probeSubscriber {
	r.probesMu.Lock()
	defer r.probesMu.Unlock()
	return slices.Clone(ep.subs)
}

// runProbe probes ep until ctx is done, every ProbeInterval, or every
// outageProbeInterval while it does not answer, and tells its subscribers.
func (r *Runner) runProbe(ctx context.Context, ep *endpointProbe) {
	timer := time.NewTimer(r.opts.ProbeInterval)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		subs := r.subscribers(ep)
		if len(subs) == 0 {
			return
		}
		answers := r.probeEndpoint(ctx, subs)
		if ctx.Err() != nil {
			return
		}
		next := r.opts.ProbeInterval
		for i, sub := range subs {
			err := answers[min(i, len(answers)-1)]
			sub.report(err)
			if err != nil {
				next = min(next, outageProbeInterval)
			}
		}
		timer.Reset(next)
	}
}

// probeEndpoint probes the endpoint of subs, and returns the answer of
// each: answers[i] is subs[i]'s, and the last answer is every later
// subscriber's.
//
// What is probed is the oldest subscriber's own path (its prober's
// alive: /readyz, or /apis once the server has answered that it has no
// /readyz, as kcp's virtual workspaces do), not the endpoint's wildcard
// path: a space's path crosses the same server, connection and
// authentication as every space of the endpoint, and proves the endpoint
// serves its logical clusters, not only that it answers; and the Runner
// need not know how a provider lays out its paths. The oldest
// subscriber's prober has long learnt whether there is a /readyz, so a
// round is one GET. Should that path fail, the next subscriber's is asked:
// if it answers, the endpoint does, and only the first space is
// unreachable (its logical cluster going away, say), not all of them.
func (r *Runner) probeEndpoint(ctx context.Context, subs []*probeSubscriber) []error {
	first := r.probeOne(ctx, subs[0])
	if first == nil || len(subs) == 1 {
		return []error{first}
	}
	return []error{first, r.probeOne(ctx, subs[1])}
}

// probeOne probes sub's path, within ProbeInterval.
func (r *Runner) probeOne(ctx context.Context, sub *probeSubscriber) error {
	ctx, cancel := context.WithTimeout(ctx, r.opts.ProbeInterval)
	defer cancel()
	return sub.probe.alive(ctx)
}

// report tells sub the answer of its endpoint's probe, err: the space is
// unreachable, recovered (once after an outage) or ready.
func (s *probeSubscriber) report(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
	case err != nil:
		if !s.unreachable {
			s.logger.Info("Space does not answer", "error", err.Error())
		}
		s.unreachable = true
		s.runner.setState(s.e, false, ReasonUnreachable, err.Error())
	case s.unreachable:
		select {
		case s.recovered <- struct{}{}:
		default:
		}
	default:
		s.runner.setState(s.e, true, ReasonReady, "serving")
	}
}

// close tells sub nothing more, once any report under way has ended.
func (s *probeSubscriber) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
}
