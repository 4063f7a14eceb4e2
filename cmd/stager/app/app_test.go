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

package app

import (
	"reflect"
	"regexp"
	"slices"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/providers"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Options)
		// wantFlags are the flags the error must name; none means valid.
		wantFlags []string
	}{
		{name: "defaults", change: func(*Options) {}},
		{name: "single provider", change: func(o *Options) { o.Providers.Kind = providers.KindSingle }},
		{name: "one reconcile at a time", change: func(o *Options) { o.MaxConcurrentReconciles = 1 }},
		{name: "metrics and probes off", change: func(o *Options) { o.MetricsBindAddress, o.HealthProbeBindAddress = "0", "0" }},
		{name: "leader election", change: func(o *Options) { o.LeaderElect, o.LeaderElectionNamespace = true, "stager" }},
		{name: "smallest positive values",
			change: func(o *Options) {
				o.SpaceProbeInterval, o.CacheSyncTimeout, o.CELCostLimit = time.Nanosecond, time.Nanosecond, 1
				o.CELEstimatedCostLimit, o.CELEvalTimeout, o.CELReconcileCostBudget, o.CELReconcileTimeBudget = 1, time.Nanosecond, 1, time.Nanosecond
			}},
		{name: "sharded", change: func(o *Options) { o.Coordination = CoordinationSharded }},
		{name: "profiles on 127.0.0.1", change: func(o *Options) { o.PprofBindAddress = "127.0.0.1:6060" }},
		{name: "profiles on ::1", change: func(o *Options) { o.PprofBindAddress = "[::1]:6060" }},
		{name: "profiles on another loopback address", change: func(o *Options) { o.PprofBindAddress = "127.0.0.2:6060" }},
		// A name is resolved when the listener binds, through /etc/hosts or
		// DNS, which may map even "localhost" to a routable address.
		{name: "profiles on localhost",
			change:    func(o *Options) { o.PprofBindAddress = "localhost:6060" },
			wantFlags: []string{"--pprof-bind-address"}},
		{name: "profiles on localhost, fully qualified",
			change:    func(o *Options) { o.PprofBindAddress = "localhost.:6060" },
			wantFlags: []string{"--pprof-bind-address"}},
		{name: "profiles on a name under localhost",
			change:    func(o *Options) { o.PprofBindAddress = "stager.localhost:6060" },
			wantFlags: []string{"--pprof-bind-address"}},
		{name: "profiles off", change: func(o *Options) { o.PprofBindAddress = "0" }},
		{name: "profiles on every interface",
			change:    func(o *Options) { o.PprofBindAddress = ":6060" },
			wantFlags: []string{"--pprof-bind-address"}},
		{name: "profiles on a pod's address",
			change:    func(o *Options) { o.PprofBindAddress = "10.0.0.7:6060" },
			wantFlags: []string{"--pprof-bind-address"}},
		{name: "profiles on a name that may not be loopback",
			change:    func(o *Options) { o.PprofBindAddress = "stager.example:6060" },
			wantFlags: []string{"--pprof-bind-address"}},
		{name: "profiles without a port",
			change:    func(o *Options) { o.PprofBindAddress = "127.0.0.1" },
			wantFlags: []string{"--pprof-bind-address"}},
		{name: "no bound on a space's cache", change: func(o *Options) { o.SpaceCacheMaxBytes = 0 }},
		{name: "a negative bound on a space's cache",
			change:    func(o *Options) { o.SpaceCacheMaxBytes = -1 },
			wantFlags: []string{"--space-cache-max-bytes"}},
		{name: "an unknown coordination",
			change:    func(o *Options) { o.Coordination = "raft" },
			wantFlags: []string{"--coordination"}},
		{name: "sharded, renewing no sooner than the Lease lasts",
			change: func(o *Options) {
				o.Coordination, o.ShardLeaseRenew, o.ShardLeaseDuration = CoordinationSharded, 20*time.Second, 20*time.Second
			},
			wantFlags: []string{"--shard-lease-renew", "--shard-lease-duration"}},
		{name: "sharded, renewing later than half the Lease",
			change: func(o *Options) {
				o.Coordination, o.ShardLeaseRenew, o.ShardLeaseDuration = CoordinationSharded, 11*time.Second, 20*time.Second
			},
			wantFlags: []string{"--shard-lease-renew", "--shard-lease-duration"}},
		{name: "sharded, a Lease of part of a second",
			change: func(o *Options) {
				o.Coordination, o.ShardLeaseRenew, o.ShardLeaseDuration = CoordinationSharded, 500*time.Millisecond, 1500*time.Millisecond
			},
			wantFlags: []string{"--shard-lease-duration"}},
		{name: "sharded, peers counted out before their fences expire",
			change: func(o *Options) {
				o.Coordination, o.ShardPeerLeaseDuration = CoordinationSharded, o.ShardLeaseDuration-time.Second
			},
			wantFlags: []string{"--shard-peer-lease-duration", "--shard-lease-duration"}},
		{name: "sharded, peers counted out after their fences expire",
			change: func(o *Options) {
				o.Coordination, o.ShardPeerLeaseDuration = CoordinationSharded, 2*o.ShardLeaseDuration
			}},
		{name: "sharded, peer Leases as long as the fences",
			change: func(o *Options) {
				o.Coordination, o.ShardPeerLeaseDuration = CoordinationSharded, o.ShardLeaseDuration
			}},
		{name: "sharded, a negative peer Lease",
			change: func(o *Options) {
				o.Coordination, o.ShardPeerLeaseDuration = CoordinationSharded, -time.Minute
			},
			wantFlags: []string{"--shard-peer-lease-duration", "--shard-lease-duration"}},
		{name: "sharded, a peer Lease of part of a second",
			change: func(o *Options) {
				o.Coordination, o.ShardPeerLeaseDuration = CoordinationSharded, o.ShardLeaseDuration+500*time.Millisecond
			},
			wantFlags: []string{"--shard-peer-lease-duration", "--shard-lease-duration"}},
		{name: "sharded, no probe interval",
			change:    func(o *Options) { o.Coordination, o.ShardProbeInterval = CoordinationSharded, 0 },
			wantFlags: []string{"--shard-probe-interval"}},
		{name: "no reconcile at all",
			change:    func(o *Options) { o.MaxConcurrentReconciles = 0 },
			wantFlags: []string{"--max-concurrent-reconciles"}},
		{name: "negative reconciles",
			change:    func(o *Options) { o.MaxConcurrentReconciles = -1 },
			wantFlags: []string{"--max-concurrent-reconciles"}},
		{name: "zero probe interval",
			change:    func(o *Options) { o.SpaceProbeInterval = 0 },
			wantFlags: []string{"--space-probe-interval"}},
		{name: "negative probe interval",
			change:    func(o *Options) { o.SpaceProbeInterval = -time.Second },
			wantFlags: []string{"--space-probe-interval"}},
		{name: "no request to a space",
			change:    func(o *Options) { o.SpaceQPS = 0 },
			wantFlags: []string{"--space-qps"}},
		{name: "no burst",
			change:    func(o *Options) { o.SpaceBurst = 0 },
			wantFlags: []string{"--space-burst"}},
		{name: "an Event rate of its own",
			change: func(o *Options) { o.SpaceEventQPS = 20 }},
		{name: "negative Event rate",
			change:    func(o *Options) { o.SpaceEventQPS = -1 },
			wantFlags: []string{"--space-event-qps"}},
		{name: "an Event rate with no burst",
			change:    func(o *Options) { o.SpaceEventQPS, o.SpaceEventBurst = 20, 0 },
			wantFlags: []string{"--space-event-burst"}},
		{name: "zero cache sync timeout",
			change:    func(o *Options) { o.CacheSyncTimeout = 0 },
			wantFlags: []string{"--cache-sync-timeout"}},
		{name: "negative cache sync timeout",
			change:    func(o *Options) { o.CacheSyncTimeout = -time.Minute },
			wantFlags: []string{"--cache-sync-timeout"}},
		{name: "zero CEL cost limit",
			change:    func(o *Options) { o.CELCostLimit = 0 },
			wantFlags: []string{"--cel-cost-limit"}},
		{name: "zero CEL estimated cost limit",
			change:    func(o *Options) { o.CELEstimatedCostLimit = 0 },
			wantFlags: []string{"--cel-estimated-cost-limit"}},
		{name: "negative CEL evaluation timeout",
			change:    func(o *Options) { o.CELEvalTimeout = -time.Second },
			wantFlags: []string{"--cel-eval-timeout"}},
		{name: "zero CEL reconcile budgets",
			change:    func(o *Options) { o.CELReconcileCostBudget, o.CELReconcileTimeBudget = 0, 0 },
			wantFlags: []string{"--cel-reconcile-cost-budget", "--cel-reconcile-time-budget"}},
		{name: "provider flags are validated too",
			change:    func(o *Options) { o.Providers.Kind = "cluster-api" },
			wantFlags: []string{"--provider"}},
		{name: "kubeconfig provider flags are validated too",
			change:    func(o *Options) { o.Providers.Kubeconfig.Namespace = "" },
			wantFlags: []string{"--kubeconfig-namespace"}},
		{name: "every error named",
			change: func(o *Options) {
				o.Providers.Kind, o.Providers.Single.Name = providers.KindSingle, ""
				o.MaxConcurrentReconciles, o.SpaceProbeInterval, o.CacheSyncTimeout, o.CELCostLimit = 0, 0, 0, 0
			},
			wantFlags: []string{"--single-space-name", "--max-concurrent-reconciles", "--space-probe-interval",
				"--cache-sync-timeout", "--cel-cost-limit"}},
	}
	// Every flag is checked: an error names exactly the flags it should.
	fs := pflag.NewFlagSet("stager", pflag.ContinueOnError)
	NewOptions().AddFlags(fs)
	names := map[string]*regexp.Regexp{}
	fs.VisitAll(func(f *pflag.Flag) {
		names["--"+f.Name] = regexp.MustCompile(regexp.QuoteMeta("--"+f.Name) + `($|[^a-z-])`)
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			tt.change(o)
			err := o.Validate()
			if len(tt.wantFlags) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error naming %v", tt.wantFlags)
			}
			for _, w := range tt.wantFlags {
				if names[w] == nil {
					t.Fatalf("%s is not a flag", w)
				}
			}
			for flag, name := range names {
				want := slices.Contains(tt.wantFlags, flag)
				if named := name.MatchString(err.Error()); named != want {
					t.Errorf("Validate() = %q: names %s = %v, want %v", err, flag, named, want)
				}
			}
		})
	}
}

func TestAddFlags(t *testing.T) {
	fs := pflag.NewFlagSet("stager", pflag.ContinueOnError)
	o := NewOptions()
	o.AddFlags(fs)
	err := fs.Parse([]string{
		"--provider=single", "--single-space-name=hub",
		"--metrics-bind-address=0", "--health-probe-bind-address=:9000",
		"--leader-elect", "--leader-election-namespace=stager",
		"--max-concurrent-reconciles=5", "--space-probe-interval=30s", "--cache-sync-timeout=1m", "--cel-cost-limit=42",
		"--cel-estimated-cost-limit=43", "--cel-eval-timeout=250ms", "--cel-reconcile-cost-budget=44", "--cel-reconcile-time-budget=3s",
		"--space-qps=7.5", "--space-burst=9", "--space-event-qps=2.5", "--space-event-burst=3", "--pprof-bind-address=127.0.0.1:6060",
		"--coordination=sharded", "--shard-lease-duration=60s", "--shard-lease-renew=15s", "--shard-peer-lease-duration=2m",
		"--shard-probe-interval=3s", "--space-cache-max-bytes=1048576",
	})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := NewOptions()
	want.Providers.Kind, want.Providers.Single.Name = providers.KindSingle, "hub"
	want.MetricsBindAddress, want.HealthProbeBindAddress = "0", ":9000"
	want.LeaderElect, want.LeaderElectionNamespace = true, "stager"
	want.MaxConcurrentReconciles, want.SpaceProbeInterval, want.CacheSyncTimeout, want.CELCostLimit = 5, 30*time.Second, time.Minute, 42
	want.CELEstimatedCostLimit, want.CELEvalTimeout, want.CELReconcileCostBudget, want.CELReconcileTimeBudget = 43, 250*time.Millisecond, 44, 3*time.Second
	want.SpaceQPS, want.SpaceBurst = 7.5, 9
	want.SpaceEventQPS, want.SpaceEventBurst = 2.5, 3
	want.PprofBindAddress = "127.0.0.1:6060"
	want.Coordination, want.ShardLeaseDuration, want.ShardLeaseRenew = CoordinationSharded, time.Minute, 15*time.Second
	want.ShardPeerLeaseDuration, want.ShardProbeInterval = 2*time.Minute, 3*time.Second
	want.SpaceCacheMaxBytes = 1 << 20
	if !reflect.DeepEqual(*o.Providers, *want.Providers) {
		t.Errorf("provider options = %+v, want %+v", *o.Providers, *want.Providers)
	}
	o.Providers, want.Providers = nil, nil
	if *o != *want {
		t.Errorf("options = %+v, want %+v", *o, *want)
	}
	if err := NewOptions().Validate(); err != nil {
		t.Errorf("the defaults do not validate: %v", err)
	}
	// Go's profiles are served only when asked for, and the CEL limits and
	// the reconcile timeout have the defaults docs/security.md gives.
	d := NewOptions()
	if d.PprofBindAddress != "" && d.PprofBindAddress != "0" {
		t.Errorf("profiles are served by default, on %q", d.PprofBindAddress)
	}
	if d.CELCostLimit != 1_000_000 || d.CELEstimatedCostLimit != 10_000_000 || d.CELEvalTimeout != time.Second ||
		d.CELReconcileCostBudget != 10_000_000 || d.CELReconcileTimeBudget != 2*time.Second || d.ReconcileTimeout != 30*time.Second {
		t.Errorf("defaults: cost %d, estimate %d, timeout %s, budget %d and %s, reconcile timeout %s", d.CELCostLimit,
			d.CELEstimatedCostLimit, d.CELEvalTimeout, d.CELReconcileCostBudget, d.CELReconcileTimeBudget, d.ReconcileTimeout)
	}
	// What one space's cache may hold, as docs/security.md gives it.
	if d.SpaceCacheMaxBytes != 64<<20 {
		t.Errorf("default --space-cache-max-bytes %d, want 64 MiB", d.SpaceCacheMaxBytes)
	}
	// The analyses' bounds docs/security.md gives: https only, 10 s and
	// 1 MiB a query, and a query at most half a reconcile.
	if d.AllowInsecureMetricProviders || d.analysisQueryTimeout() != 10*time.Second || d.AnalysisMaxResponseBytes != 1<<20 {
		t.Errorf("defaults: insecure providers %t, query timeout %s, answers of %d bytes", d.AllowInsecureMetricProviders,
			d.analysisQueryTimeout(), d.AnalysisMaxResponseBytes)
	}
	d.ReconcileTimeout = 4 * time.Second
	if err := d.Validate(); err != nil || d.analysisQueryTimeout() != 2*time.Second {
		t.Errorf("a 4s reconcile timeout: %v, query timeout %s, want 2s", err, d.analysisQueryTimeout())
	}
	// Each space's queries are bounded by default, at the rate
	// docs/security.md gives.
	if d.SpaceAnalysisQPS != 5 || d.SpaceAnalysisBurst != 20 {
		t.Errorf("defaults: %g queries a second per space, %d at once; want 5 and 20", d.SpaceAnalysisQPS, d.SpaceAnalysisBurst)
	}
	for _, bad := range []struct {
		qps   float32
		burst int
	}{{-1, 20}, {5, 0}} {
		o := NewOptions()
		o.SpaceAnalysisQPS, o.SpaceAnalysisBurst = bad.qps, bad.burst
		if err := o.Validate(); err == nil {
			t.Errorf("--space-analysis-qps=%g --space-analysis-burst=%d accepted", bad.qps, bad.burst)
		}
	}
}

func TestNewScheme(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatalf("NewScheme: %v", err)
	}
	ks := ksv1alpha1.SchemeGroupVersion
	tests := []struct {
		obj  runtime.Object
		want schema.GroupVersionKind
	}{
		{&v1alpha1.StagedBindingPolicy{}, v1alpha1.GroupVersion.WithKind("StagedBindingPolicy")},
		{&v1alpha1.StagedBindingPolicyList{}, v1alpha1.GroupVersion.WithKind("StagedBindingPolicyList")},
		{&ksv1alpha1.BindingPolicy{}, ks.WithKind("BindingPolicy")},
		{&ksv1alpha1.BindingPolicyList{}, ks.WithKind("BindingPolicyList")},
		{&ksv1alpha1.Binding{}, ks.WithKind("Binding")},
		{&ksv1alpha1.CombinedStatus{}, ks.WithKind("CombinedStatus")},
		{&ksv1alpha1.CombinedStatusList{}, ks.WithKind("CombinedStatusList")},
		{&corev1.Secret{}, corev1.SchemeGroupVersion.WithKind("Secret")},
		{&corev1.SecretList{}, corev1.SchemeGroupVersion.WithKind("SecretList")},
	}
	for _, tt := range tests {
		t.Run(tt.want.Kind, func(t *testing.T) {
			gvks, _, err := scheme.ObjectKinds(tt.obj)
			if err != nil {
				t.Fatalf("ObjectKinds(%T): %v", tt.obj, err)
			}
			found := false
			for _, gvk := range gvks {
				found = found || gvk == tt.want
			}
			if !found {
				t.Errorf("ObjectKinds(%T) = %v, want %v", tt.obj, gvks, tt.want)
			}
			if !scheme.Recognizes(tt.want) {
				t.Errorf("scheme does not recognize %v", tt.want)
			}
		})
	}
	if v1alpha1.GroupVersion.Group != "community.kubestellar.io" || ks.Group != "control.kubestellar.io" {
		t.Errorf("groups = %s, %s; want community.kubestellar.io, control.kubestellar.io", v1alpha1.GroupVersion.Group, ks.Group)
	}

	// Each call builds its own scheme.
	other, err := NewScheme()
	if err != nil {
		t.Fatalf("NewScheme: %v", err)
	}
	if other == scheme {
		t.Errorf("NewScheme returned the same scheme twice")
	}
}

// TestMetricsServerOptions checks that the metrics endpoint is secure by
// default (HTTPS, every request authenticated and authorized by the hosting
// cluster) and plain HTTP only when asked; test/e2e's
// TestMetricsEndpointIsSecure proves the secure endpoint against a real
// API server.
func TestMetricsServerOptions(t *testing.T) {
	secure := NewOptions().metricsServerOptions()
	if !secure.SecureServing || secure.FilterProvider == nil || secure.BindAddress != ":8443" {
		t.Errorf("default metrics options: secure %v, filter %v, address %q; want HTTPS with authn/authz on :8443",
			secure.SecureServing, secure.FilterProvider != nil, secure.BindAddress)
	}

	fs := pflag.NewFlagSet("stager", pflag.ContinueOnError)
	o := NewOptions()
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--metrics-cert-dir=/certs"}); err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if withCerts := o.metricsServerOptions(); withCerts.CertDir != "/certs" || !withCerts.SecureServing {
		t.Errorf("--metrics-cert-dir=/certs: cert dir %q, secure %v", withCerts.CertDir, withCerts.SecureServing)
	}
	if err := fs.Parse([]string{"--metrics-secure=false", "--metrics-bind-address=:8080"}); err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if plain := o.metricsServerOptions(); plain.SecureServing || plain.FilterProvider != nil || plain.BindAddress != ":8080" {
		t.Errorf("--metrics-secure=false: secure %v, filter %v, address %q; want plain HTTP on :8080",
			plain.SecureServing, plain.FilterProvider != nil, plain.BindAddress)
	}
}

// TestShardPeerLeaseDuration: a peer Lease lasts as long as the fences
// unless --shard-peer-lease-duration says otherwise.
func TestShardPeerLeaseDuration(t *testing.T) {
	o := NewOptions()
	if got := o.shardPeerLeaseDuration(); got != o.ShardLeaseDuration {
		t.Errorf("by default a peer Lease lasts %v, want the fences' %v", got, o.ShardLeaseDuration)
	}
	o.ShardPeerLeaseDuration = 3 * o.ShardLeaseDuration
	if got := o.shardPeerLeaseDuration(); got != o.ShardPeerLeaseDuration {
		t.Errorf("with --shard-peer-lease-duration=%v a peer Lease lasts %v", o.ShardPeerLeaseDuration, got)
	}
}
