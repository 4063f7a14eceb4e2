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
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestWithRequestRate(t *testing.T) {
	limiter := flowcontrol.NewFakeAlwaysRateLimiter()
	for _, tc := range []struct {
		name      string
		config    *rest.Config
		wantQPS   float32
		wantBurst int
	}{
		{name: "client-go's default", config: &rest.Config{Host: "https://wds1"}, wantQPS: 50, wantBurst: 100},
		{name: "set in the kubeconfig", config: &rest.Config{Host: "https://wds1", QPS: 3, Burst: 4}, wantQPS: 50, wantBurst: 100},
		{name: "a rate limiter of its own", config: &rest.Config{Host: "https://wds1", RateLimiter: limiter}, wantQPS: 0, wantBurst: 0},
		{name: "rate limiting off", config: &rest.Config{Host: "https://wds1", QPS: -1}, wantQPS: -1, wantBurst: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := *tc.config
			var got *rest.Config
			newClient := WithRequestRate(50, 100, func(config *rest.Config, _ client.Options) (client.Client, error) {
				got = config
				return nil, nil
			})
			if _, err := newClient(tc.config, client.Options{}); err != nil {
				t.Fatal(err)
			}
			if got.QPS != tc.wantQPS || got.Burst != tc.wantBurst || got.Host != tc.config.Host {
				t.Errorf("client made with QPS %v, burst %d, host %s; want %v, %d, %s", got.QPS, got.Burst, got.Host, tc.wantQPS, tc.wantBurst, tc.config.Host)
			}
			switch {
			case tc.config.RateLimiter != nil:
				if got.RateLimiter != tc.config.RateLimiter {
					t.Error("the config's own rate limiter was replaced")
				}
			case tc.wantQPS < 0:
				if got.RateLimiter != nil {
					t.Error("rate limiting turned back on")
				}
			case got.RateLimiter == nil || got.RateLimiter.QPS() != tc.wantQPS:
				// One bucket for every resource's REST client of the client.
				t.Errorf("no shared token bucket of %v requests a second: %v", tc.wantQPS, got.RateLimiter)
			}
			if got == tc.config || tc.config.QPS != before.QPS || tc.config.Burst != before.Burst || tc.config.RateLimiter != before.RateLimiter {
				t.Errorf("the space's config was changed: %+v", tc.config)
			}
		})
	}
}
