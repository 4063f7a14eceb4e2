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
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Default request rate of a space's client: client-go's own default (5
// requests a second, bursts of 10, for each resource) holds back a space
// where many policies advance at once, each advance taking a few writes.
const (
	DefaultQPS   = 100
	DefaultBurst = 200
)

// WithRequestRate returns a client.NewClientFunc (for cluster.Options) that
// makes, with next, a client sending at most qps requests a second to the
// space's API server, in bursts of up to burst, for all resources together:
// one token bucket per client made, which every resource's REST client of it
// shares. The space's rest.Config is copied, not changed; a config with a
// RateLimiter of its own, or with rate limiting turned off (negative QPS),
// keeps it.
func WithRequestRate(qps float32, burst int, next client.NewClientFunc) client.NewClientFunc {
	if next == nil {
		next = client.New
	}
	return func(config *rest.Config, options client.Options) (client.Client, error) {
		limited := rest.CopyConfig(config)
		if limited.RateLimiter == nil && limited.QPS >= 0 {
			limited.QPS, limited.Burst = qps, burst
			limited.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(qps, burst)
		}
		return next(limited, options)
	}
}
