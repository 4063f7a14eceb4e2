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

package scale

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/kcpstack"
)

const (
	// identityRounds is how many times each identity's requests start
	// afresh, past kcp's token cache (10 s).
	identityRounds = 3
	// identityRequests is how many requests a round sends, one after the
	// other, and identityWindow how many of them, at each end, are timed.
	identityRequests = 200
	identityWindow   = 20
	// tokenCacheTTL is how long kcp's token authentication keeps an
	// authenticated user (kube-apiserver's TokenSuccessCacheTTL).
	tokenCacheTTL = 10 * time.Second
)

// BenchmarkKCPStagerIdentity times the stager's requests through its
// export's virtual workspace, as config/kcp/rbac's user and as its
// ServiceAccount, in one run: after kcp's token cache has dropped the
// identity, 200 lists of one workspace's policies one after the other, the
// first 20 and the last 20 timed. kcp v0.28.0 adds a warrant to the
// cached ServiceAccount user's extra attributes at each request, so its
// requests slow down as they follow each other; the user's do not.
func BenchmarkKCPStagerIdentity(b *testing.B) {
	h := startHarness(b, "stager-kcp-identity-")
	ctx := h.ctx
	kcp, err := kcpstack.Start(ctx, kcpstack.Options{WorkDir: h.dir, Scheme: h.scheme, Clusters: clusters,
		SimulatorInterval: time.Hour, StagerIdentity: kcpstack.IdentityUser})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = kcp.Stop() }()
	w, err := kcp.AddWorkspace(ctx, "wds000")
	if err != nil {
		b.Fatal(err)
	}
	export, err := kcp.StagerExportConfig(ctx)
	if err != nil {
		b.Fatal(err)
	}
	// One workspace, not the wildcard: kcp adds the warrant only there.
	host := strings.TrimSuffix(export.Host, "*") + w.ClusterID
	b.ResetTimer()
	type timing struct{ first, last time.Duration }
	timings := map[kcpstack.Identity]timing{}
	for _, id := range []kcpstack.Identity{kcpstack.IdentityUser, kcpstack.IdentityServiceAccount} {
		kubeconfig := map[kcpstack.Identity][]byte{kcpstack.IdentityUser: kcp.UserKubeconfig, kcpstack.IdentityServiceAccount: kcp.ServiceAccountKubeconfig}[id]
		cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
		if err != nil {
			b.Fatal(err)
		}
		cfg = rest.CopyConfig(cfg)
		cfg.Host, cfg.TLSClientConfig = host, export.TLSClientConfig
		cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit
		c, err := client.New(cfg, client.Options{Scheme: h.scheme})
		if err != nil {
			b.Fatal(err)
		}
		// Discovery, once, before the timed rounds.
		if err := c.List(ctx, &v1alpha1.StagedBindingPolicyList{}); err != nil {
			b.Fatalf("listing as the %s: %v", id, err)
		}
		var t timing
		for range identityRounds {
			time.Sleep(tokenCacheTTL + time.Second)
			round := time.Now()
			for i := range identityRequests {
				began := time.Now()
				if err := c.List(ctx, &v1alpha1.StagedBindingPolicyList{}); err != nil {
					b.Fatalf("listing as the %s: %v", id, err)
				}
				switch took := time.Since(began); {
				case i < identityWindow:
					t.first += took
				case i >= identityRequests-identityWindow:
					t.last += took
				}
			}
			// A round longer than the cache lets kcp drop the identity in it,
			// and the last requests would carry fewer warrants.
			if took := time.Since(round); took > tokenCacheTTL {
				b.Logf("a round as the %s took %s, longer than kcp's token cache: its last requests understate the growth", id, took.Round(time.Millisecond))
			}
		}
		n := time.Duration(identityRounds * identityWindow)
		t.first, t.last = t.first/n, t.last/n
		timings[id] = t
	}
	b.StopTimer()
	user, sa := timings[kcpstack.IdentityUser], timings[kcpstack.IdentityServiceAccount]
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(user.first), "ms-user-first")
	b.ReportMetric(ms(user.last), "ms-user-last")
	b.ReportMetric(ms(sa.first), "ms-serviceaccount-first")
	b.ReportMetric(ms(sa.last), "ms-serviceaccount-last")
	b.ReportMetric(ms(sa.last)/ms(user.last), "x-serviceaccount-over-user-last")
	b.Logf("lists through the virtual workspace, requests 1-%d and %d-%d after kcp's token cache dropped the identity: "+
		"user %.1f and %.1f ms (%.2f×); ServiceAccount %.1f and %.1f ms (%.2f×); at the end the ServiceAccount's take %.2f× the user's",
		identityWindow, identityRequests-identityWindow+1, identityRequests, ms(user.first), ms(user.last), ms(user.last)/ms(user.first),
		ms(sa.first), ms(sa.last), ms(sa.last)/ms(sa.first), ms(sa.last)/ms(user.last))
}
