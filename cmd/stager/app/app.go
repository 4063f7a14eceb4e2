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

// Package app wires the stager together: the hosting cluster's manager, the
// cluster provider that engages spaces, and one StagedBindingPolicy
// controller per space.
package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/analysis"
	stagerfreeze "github.com/kubestellar/workload-stager/internal/controller/freeze"
	"github.com/kubestellar/workload-stager/internal/controller/hostingwatch"
	"github.com/kubestellar/workload-stager/internal/controller/metrics"
	"github.com/kubestellar/workload-stager/internal/controller/sharding"
	"github.com/kubestellar/workload-stager/internal/controller/spaces"
	"github.com/kubestellar/workload-stager/internal/controller/stagedbindingpolicy"
	"github.com/kubestellar/workload-stager/internal/controller/wave"
	"github.com/kubestellar/workload-stager/internal/expression"
	"github.com/kubestellar/workload-stager/internal/notify"
	mcproviders "github.com/kubestellar/workload-stager/internal/providers"
	mckcp "github.com/kubestellar/workload-stager/internal/providers/kcp"
	"github.com/kubestellar/workload-stager/internal/reqclass"
	"github.com/kubestellar/workload-stager/internal/rollout"
	"github.com/kubestellar/workload-stager/providers"
	"github.com/kubestellar/workload-stager/providers/kcp"
)

// Options are the stager's flags.
type Options struct {
	// Providers chooses how spaces are found.
	Providers *providers.Options
	// MetricsBindAddress is where Prometheus metrics are served ("0" turns them off).
	MetricsBindAddress string
	// MetricsSecure serves the metrics over HTTPS to callers whose bearer
	// token the hosting cluster authenticates (TokenReview) and authorizes
	// to GET /metrics (SubjectAccessReview). Off, they are served over plain
	// HTTP to anyone, for local use only.
	MetricsSecure bool
	// MetricsCertDir holds the metrics server's tls.crt and tls.key; empty,
	// or without those files, the server uses a self-signed certificate.
	MetricsCertDir string
	// HealthProbeBindAddress is where /healthz and /readyz are served ("0" turns them off).
	HealthProbeBindAddress string
	// PprofBindAddress is where Go's profiles (/debug/pprof/) are served,
	// over plain HTTP and without authentication: empty or "0" turns them
	// off (the default), and it must be a literal loopback IP, not a name
	// (reach it in a Pod with kubectl port-forward).
	PprofBindAddress string
	// LeaderElect makes only one replica work at a time.
	LeaderElect bool
	// LeaderElectionNamespace is the namespace of the leader election Lease.
	LeaderElectionNamespace string
	// Coordination is how replicas share the work: CoordinationLeaderElection
	// (one leader serves every space) or CoordinationSharded (the replicas
	// split the spaces, fenced by the Leases of their slots).
	Coordination string
	// ReplicaID names this replica among its peers: in the sharding Leases,
	// the field manager of its writes, the stager_space_owner metric and the
	// logs. Empty means $POD_NAME, else the hostname.
	ReplicaID string
	// ShardLeaseDuration is how long a space's fence Lease lasts without
	// renewal.
	ShardLeaseDuration time.Duration
	// ShardPeerLeaseDuration is how long a replica's peer Lease lasts
	// without renewal: a dead replica's spaces move after it. Zero means
	// ShardLeaseDuration.
	ShardPeerLeaseDuration time.Duration
	// ShardLeaseRenew is how often a replica renews the fences it holds
	// and its peer Lease.
	ShardLeaseRenew time.Duration
	// ShardProbeInterval is how often a replica decides again which spaces it owns.
	ShardProbeInterval time.Duration
	// MaxConcurrentReconciles is how many policies of one space are
	// reconciled at once. A run mostly waits for the space's API server:
	// more workers put more of a burst's requests on it at once, which
	// slows its other clients more than it speeds up the stager
	// (docs/performance-log.md, "Workers per space").
	MaxConcurrentReconciles int
	// GCPercent is the Go garbage collector's target (GOGC) unless the
	// GOGC environment variable is set (see TuneRuntime).
	GCPercent int
	// SpaceProbeInterval is how often each space's API server is probed.
	SpaceProbeInterval time.Duration
	// SpaceQPS and SpaceBurst bound the requests to each space's API server:
	// at most SpaceQPS a second, in bursts of up to SpaceBurst.
	SpaceQPS   float32
	SpaceBurst int
	// SpaceEventQPS and SpaceEventBurst, when SpaceEventQPS is positive,
	// set the rate of the Events posted to each space, through a token
	// bucket of their own: at most SpaceEventQPS a second, in bursts of up
	// to SpaceEventBurst. Zero keeps client-go's default (5 a second).
	SpaceEventQPS   float32
	SpaceEventBurst int
	// CacheSyncTimeout bounds the wait for a space's caches.
	CacheSyncTimeout time.Duration
	// SpaceCacheMaxBytes bounds the estimated bytes of what one space's
	// cache holds (spaces.Options.MaxCacheBytes); past it the space is not
	// served until it holds less. Zero bounds nothing.
	SpaceCacheMaxBytes int64
	// SpaceCacheRetry, when positive, is the first wait before a space
	// whose cache went over SpaceCacheMaxBytes is tried again, doubling up
	// to 30 times as long; zero means a minute. Not a flag.
	SpaceCacheRetry time.Duration
	// ReconcileTimeout bounds one reconcile of a policy, with every request
	// it makes to the space's API server.
	ReconcileTimeout time.Duration
	// CELCostLimit bounds the cost of one evaluation of a filter or condition.
	CELCostLimit uint64
	// CELEstimatedCostLimit bounds the compile-time estimate of the
	// worst-case cost of a filter or condition.
	CELEstimatedCostLimit uint64
	// CELEvalTimeout bounds the time of one evaluation.
	CELEvalTimeout time.Duration
	// CELReconcileCostBudget bounds the cost of all the evaluations of one reconcile.
	CELReconcileCostBudget uint64
	// CELReconcileTimeBudget bounds the time of all the evaluations of one reconcile.
	CELReconcileTimeBudget time.Duration
	// CELIsolation runs evaluations in worker processes (expression.WithIsolation).
	CELIsolation bool
	// CELWorkers is how many worker processes evaluate at once (0: GOMAXPROCS).
	CELWorkers int
	// CELWorkerMemory is how much memory one worker process may take.
	CELWorkerMemory uint64
	// DeletionWarningAfter is how long a policy's deletion may wait for the
	// finalizers of its BindingPolicies before it is reported as blocked.
	DeletionWarningAfter time.Duration
	// AllowInsecureMetricProviders lets MetricProviders use plain http
	// addresses.
	AllowInsecureMetricProviders bool
	// AnalysisQueryTimeout bounds each query of an analysis to a
	// MetricProvider, at most half of ReconcileTimeout; a provider may only
	// lower it.
	AnalysisQueryTimeout time.Duration
	// AnalysisMaxResponseBytes bounds the size of each answer of a
	// MetricProvider; a provider may only lower it.
	AnalysisMaxResponseBytes int64
	// MetricProviderSecretNamespace is the namespace of the Secrets that
	// MetricProviders name (CA, bearer token); empty means the pod's, else
	// --kubeconfig-namespace.
	MetricProviderSecretNamespace string
	// SpaceAnalysisQPS bounds the queries of analyses each space sends to
	// MetricProviders, a second on average; 0 bounds nothing.
	SpaceAnalysisQPS float32
	// SpaceAnalysisBurst is how many queries above SpaceAnalysisQPS a
	// space may send at once.
	SpaceAnalysisBurst int
	// AllowSeveralInProcess lets more than one stager run in one process, one
	// after the other or side by side (as tests do), by turning off
	// controller-runtime's check that controller names are unique. Not a flag.
	AllowSeveralInProcess bool
	// Clock, when set, is the clock of the spaces' reconcilers, the wave
	// Gates and the Reporter instead of the real one: for tests of what
	// time alone changes (a change window opening). No flag sets it.
	Clock clock.WithTicker
}

// NewOptions returns the default Options.
func NewOptions() *Options {
	return &Options{
		Providers:                providers.NewOptions(),
		MetricsBindAddress:       ":8443",
		MetricsSecure:            true,
		HealthProbeBindAddress:   ":8081",
		LeaderElectionNamespace:  "",
		LeaderElect:              true,
		Coordination:             CoordinationLeaderElection,
		ShardLeaseDuration:       20 * time.Second,
		ShardLeaseRenew:          5 * time.Second,
		ShardProbeInterval:       2 * time.Second,
		MaxConcurrentReconciles:  10,
		GCPercent:                DefaultGCPercent,
		SpaceProbeInterval:       15 * time.Second,
		SpaceQPS:                 spaces.DefaultQPS,
		SpaceBurst:               spaces.DefaultBurst,
		SpaceEventBurst:          stagedbindingpolicy.DefaultEventBurst,
		CacheSyncTimeout:         2 * time.Minute,
		SpaceCacheMaxBytes:       spaces.DefaultMaxCacheBytes,
		ReconcileTimeout:         DefaultReconcileTimeout,
		CELCostLimit:             expression.DefaultCostLimit,
		CELEstimatedCostLimit:    expression.DefaultEstimatedCostLimit,
		CELEvalTimeout:           expression.DefaultEvalTimeout,
		CELReconcileCostBudget:   expression.DefaultBudgetCost,
		CELReconcileTimeBudget:   expression.DefaultBudgetTime,
		CELIsolation:             true,
		CELWorkerMemory:          expression.DefaultWorkerMemory,
		DeletionWarningAfter:     rollout.DefaultDeletionWarningAfter,
		AnalysisQueryTimeout:     analysis.DefaultTimeout,
		AnalysisMaxResponseBytes: analysis.DefaultMaxResponseBytes,
		SpaceAnalysisQPS:         analysis.DefaultSpaceQPS,
		SpaceAnalysisBurst:       analysis.DefaultSpaceBurst,
	}
}

// AddFlags registers the flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Providers.AddFlags(fs)
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, `address of the Prometheus metrics endpoint ("0" turns it off)`)
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure,
		"serve the metrics over HTTPS to callers the hosting cluster authorizes to GET /metrics, rather than over plain HTTP to anyone")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", o.MetricsCertDir,
		"directory holding the metrics server's tls.crt and tls.key, reloaded when they change (default: a self-signed certificate)")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, `address of the /healthz and /readyz endpoints ("0" turns them off)`)
	fs.StringVar(&o.PprofBindAddress, "pprof-bind-address", o.PprofBindAddress,
		`literal loopback IP and port, e.g. 127.0.0.1:6060, where Go's profiles are served without authentication (default: off)`)
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "elect a leader among replicas, so that only one works at a time")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "namespace of the leader election and sharding Leases (default: the pod's, outside a pod --kubeconfig-namespace)")
	fs.StringVar(&o.Coordination, "coordination", o.Coordination,
		`how replicas share the spaces: "leader-election" (one replica serves them all) or "sharded" (each serves a share, fenced by the Lease of its slot of spaces)`)
	fs.StringVar(&o.ReplicaID, "replica-id", o.ReplicaID, "this replica's name in the sharding Leases, its writes' field manager, metrics and logs (default: $POD_NAME, else the hostname)")
	fs.DurationVar(&o.ShardLeaseDuration, "shard-lease-duration", o.ShardLeaseDuration, "with --coordination=sharded: how long a space's fence Lease lasts unrenewed (whole seconds)")
	fs.DurationVar(&o.ShardPeerLeaseDuration, "shard-peer-lease-duration", o.ShardPeerLeaseDuration, "with --coordination=sharded: how long a replica's peer Lease lasts unrenewed, after which its peers take its spaces (whole seconds, at least --shard-lease-duration; 0: --shard-lease-duration)")
	fs.DurationVar(&o.ShardLeaseRenew, "shard-lease-renew", o.ShardLeaseRenew, "with --coordination=sharded: how often a replica renews its fence and peer Leases (at most half of --shard-lease-duration)")
	fs.DurationVar(&o.ShardProbeInterval, "shard-probe-interval", o.ShardProbeInterval, "with --coordination=sharded: how often a replica decides again which spaces it serves")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", o.MaxConcurrentReconciles, "how many StagedBindingPolicies of one space are reconciled at once")
	fs.IntVar(&o.GCPercent, "gc-percent", o.GCPercent, "the Go garbage collector's target (GOGC), unless the GOGC environment variable is set")
	fs.DurationVar(&o.SpaceProbeInterval, "space-probe-interval", o.SpaceProbeInterval, "how often each space's API server is probed for readiness")
	fs.Float32Var(&o.SpaceQPS, "space-qps", o.SpaceQPS, "the most requests a second the stager sends to each space's API server")
	fs.IntVar(&o.SpaceBurst, "space-burst", o.SpaceBurst, "the most requests the stager sends to each space's API server in a burst, above --space-qps")
	fs.Float32Var(&o.SpaceEventQPS, "space-event-qps", o.SpaceEventQPS, "when positive, the most Events a second the stager posts to each space, apart from --space-qps (0: client-go's default)")
	fs.IntVar(&o.SpaceEventBurst, "space-event-burst", o.SpaceEventBurst, "with --space-event-qps, the most Events the stager posts to each space in a burst, above --space-event-qps")
	fs.DurationVar(&o.CacheSyncTimeout, "cache-sync-timeout", o.CacheSyncTimeout, "how long to wait for a space's caches before retrying it")
	fs.Int64Var(&o.SpaceCacheMaxBytes, "space-cache-max-bytes", o.SpaceCacheMaxBytes,
		"the most one space's cache may hold, in estimated bytes of its objects' JSON; past it the space is not served until it holds less (0: no bound)")
	fs.DurationVar(&o.ReconcileTimeout, "reconcile-timeout", o.ReconcileTimeout, "the longest one reconcile of a policy may take, with every request it makes to the space's API server")
	fs.Uint64Var(&o.CELCostLimit, "cel-cost-limit", o.CELCostLimit, "the most one evaluation of a stage filter or condition may cost (CEL cost units)")
	fs.Uint64Var(&o.CELEstimatedCostLimit, "cel-estimated-cost-limit", o.CELEstimatedCostLimit, "the most the compile-time estimate of a filter's or condition's worst-case cost may be (CEL cost units)")
	fs.DurationVar(&o.CELEvalTimeout, "cel-eval-timeout", o.CELEvalTimeout, "the longest one evaluation of a stage filter or condition may take")
	fs.Uint64Var(&o.CELReconcileCostBudget, "cel-reconcile-cost-budget", o.CELReconcileCostBudget, "the most the evaluations of one reconcile of a policy may cost together (CEL cost units)")
	fs.DurationVar(&o.CELReconcileTimeBudget, "cel-reconcile-time-budget", o.CELReconcileTimeBudget, "the longest the evaluations of one reconcile of a policy may take together")
	fs.BoolVar(&o.CELIsolation, "cel-isolation", o.CELIsolation, "evaluate filters and conditions in worker processes, each with its memory capped and killed at its deadline (false: in the stager's own process)")
	fs.IntVar(&o.CELWorkers, "cel-workers", o.CELWorkers, "how many worker processes stay ready to evaluate (0: as many as the stager has CPUs); while all are busy, up to four times as many run")
	fs.Uint64Var(&o.CELWorkerMemory, "cel-worker-memory", o.CELWorkerMemory, "the most memory (bytes) one worker process may take beyond what it starts with")
	fs.DurationVar(&o.DeletionWarningAfter, "deletion-warning-after", o.DeletionWarningAfter,
		"how long a StagedBindingPolicy's deletion may wait for its BindingPolicies' finalizers before it is reported as blocked with a Warning Event")
	fs.BoolVar(&o.AllowInsecureMetricProviders, "allow-insecure-metric-providers", o.AllowInsecureMetricProviders,
		"let MetricProviders use plain http addresses (default: https only)")
	fs.DurationVar(&o.AnalysisQueryTimeout, "analysis-query-timeout", o.AnalysisQueryTimeout,
		"the longest an analysis's query to a MetricProvider may take, at most half of --reconcile-timeout; a provider may only lower it")
	fs.Int64Var(&o.AnalysisMaxResponseBytes, "analysis-max-response-bytes", o.AnalysisMaxResponseBytes,
		"the largest answer of a MetricProvider the stager reads; a provider may only lower it")
	fs.StringVar(&o.MetricProviderSecretNamespace, "metric-provider-secret-namespace", o.MetricProviderSecretNamespace,
		"namespace of the Secrets MetricProviders may name for their CA and bearer token, each labelled "+hostingv1alpha1.CredentialLabel+
			"=true (default: the pod's, else --kubeconfig-namespace)")
	fs.Float32Var(&o.SpaceAnalysisQPS, "space-analysis-qps", o.SpaceAnalysisQPS,
		"the most queries a second the analyses of each space send to MetricProviders; a query over it is taken again later (0: no bound)")
	fs.IntVar(&o.SpaceAnalysisBurst, "space-analysis-burst", o.SpaceAnalysisBurst,
		"the most queries the analyses of each space send at once, above --space-analysis-qps")
}

// Validate reports flags that cannot work.
func (o *Options) Validate() error {
	var errs []error
	if err := o.Providers.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := validatePprofBindAddress(o.PprofBindAddress); err != nil {
		errs = append(errs, err)
	}
	switch o.Coordination {
	case CoordinationLeaderElection:
	case CoordinationSharded:
		// A replica writes to a space for three quarters of the fence's
		// duration after each renewal (sharding.Tenures): a renewal every
		// half of it leaves a quarter for the renewal to be answered.
		if o.ShardLeaseRenew <= 0 || o.ShardLeaseDuration < 2*o.ShardLeaseRenew {
			errs = append(errs, errors.New("--shard-lease-renew must be positive and at most half of --shard-lease-duration"))
		}
		// A Lease's duration is whole seconds.
		if o.ShardLeaseDuration < time.Second || o.ShardLeaseDuration%time.Second != 0 {
			errs = append(errs, errors.New("--shard-lease-duration must be a whole number of seconds"))
		}
		// A peer counted out before its fences expire moves its spaces to
		// replicas that cannot take them yet.
		if peer := o.ShardPeerLeaseDuration; peer != 0 && (peer < o.ShardLeaseDuration || peer%time.Second != 0) {
			errs = append(errs, errors.New("--shard-peer-lease-duration must be 0 or a whole number of seconds of at least --shard-lease-duration"))
		}
		if o.ShardProbeInterval <= 0 {
			errs = append(errs, errors.New("--shard-probe-interval must be positive"))
		}
	default:
		errs = append(errs, fmt.Errorf(`--coordination must be %q or %q, not %q`, CoordinationLeaderElection, CoordinationSharded, o.Coordination))
	}
	if o.MaxConcurrentReconciles < 1 {
		errs = append(errs, errors.New("--max-concurrent-reconciles must be at least 1"))
	}
	if o.SpaceProbeInterval <= 0 {
		errs = append(errs, errors.New("--space-probe-interval must be positive"))
	}
	if o.SpaceQPS <= 0 {
		errs = append(errs, errors.New("--space-qps must be positive"))
	}
	if o.SpaceBurst < 1 {
		errs = append(errs, errors.New("--space-burst must be at least 1"))
	}
	if o.SpaceEventQPS < 0 {
		errs = append(errs, errors.New("--space-event-qps must not be negative"))
	}
	if o.SpaceEventQPS > 0 && o.SpaceEventBurst < 1 {
		errs = append(errs, errors.New("--space-event-burst must be at least 1"))
	}
	if o.CacheSyncTimeout <= 0 {
		errs = append(errs, errors.New("--cache-sync-timeout must be positive"))
	}
	if o.SpaceCacheMaxBytes < 0 {
		errs = append(errs, errors.New("--space-cache-max-bytes must not be negative"))
	}
	if o.ReconcileTimeout <= 0 {
		errs = append(errs, errors.New("--reconcile-timeout must be positive"))
	}
	if o.CELCostLimit == 0 {
		errs = append(errs, errors.New("--cel-cost-limit must be positive"))
	}
	if o.CELEstimatedCostLimit == 0 {
		errs = append(errs, errors.New("--cel-estimated-cost-limit must be positive"))
	}
	if o.CELEvalTimeout <= 0 {
		errs = append(errs, errors.New("--cel-eval-timeout must be positive"))
	}
	if o.CELReconcileCostBudget == 0 {
		errs = append(errs, errors.New("--cel-reconcile-cost-budget must be positive"))
	}
	if o.CELReconcileTimeBudget <= 0 {
		errs = append(errs, errors.New("--cel-reconcile-time-budget must be positive"))
	}
	if o.CELWorkers < 0 {
		errs = append(errs, errors.New("--cel-workers must not be negative"))
	}
	if o.CELWorkerMemory < 16<<20 {
		errs = append(errs, errors.New("--cel-worker-memory must be at least 16Mi (16777216)"))
	}
	if o.DeletionWarningAfter <= 0 {
		errs = append(errs, errors.New("--deletion-warning-after must be positive"))
	}
	if o.AnalysisQueryTimeout <= 0 {
		errs = append(errs, errors.New("--analysis-query-timeout must be positive"))
	}
	if o.AnalysisMaxResponseBytes < 1 {
		errs = append(errs, errors.New("--analysis-max-response-bytes must be at least 1"))
	}
	if o.SpaceAnalysisQPS < 0 || (o.SpaceAnalysisQPS > 0 && o.SpaceAnalysisBurst < 1) {
		errs = append(errs, errors.New("--space-analysis-qps must not be negative, and --space-analysis-burst at least 1 with it"))
	}
	return errors.Join(errs...)
}

// validatePprofBindAddress accepts no address, "0" (both off) and a
// literal loopback IP: the profiles are served to anyone who can reach the
// port, and they show the process's goroutines, memory and command line.
// A name, "localhost" included, is refused: it is resolved when the
// listener binds, through /etc/hosts or DNS, which may map it to a routable
// address.
func validatePprofBindAddress(addr string) error {
	if addr == "" || addr == "0" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--pprof-bind-address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--pprof-bind-address %q must be a literal loopback IP, such as 127.0.0.1:6060 or [::1]:6060, not a name: the profiles are served without authentication (reach them in a Pod with kubectl port-forward)", addr)
	}
	return nil
}

// spaceCacheBackoff spaces out the attempts to serve a space over its
// cache bound: SpaceCacheRetry doubling up to 30 times as long, or the
// Runner's default.
func (o *Options) spaceCacheBackoff() *wait.Backoff {
	if o.SpaceCacheRetry <= 0 {
		return nil
	}
	return &wait.Backoff{Duration: o.SpaceCacheRetry, Factor: 2, Jitter: 0.1, Steps: 1 << 30, Cap: 30 * o.SpaceCacheRetry}
}

// The ways replicas share the spaces (--coordination).
const (
	// CoordinationLeaderElection has one elected replica serve every space.
	CoordinationLeaderElection = "leader-election"
	// CoordinationSharded has the replicas split the spaces, through
	// sharding.Coordinator.
	CoordinationSharded = "sharded"
)

// Names of the sharding Leases, in --leader-election-namespace.
const (
	// ShardPeerLeasePrefix starts the name of each replica's peer Lease.
	ShardPeerLeasePrefix = "workload-stager-peer"
	// ShardFenceLeasePrefix starts the name of each slot's fence Lease.
	ShardFenceLeasePrefix = "workload-stager-shard"
)

// missingKindRecheck is how long the hosting caches believe that the
// hosting cluster lacks the RolloutWave or RolloutFreeze kind: one that is
// installed at run time is seen within it.
const missingKindRecheck = time.Minute

// instrument returns a copy of cfg whose clients count their requests
// (stager_api_requests_total), the sharding Leases apart.
func instrument(cfg *rest.Config) *rest.Config {
	return reqclass.Options{FenceLeasePrefix: ShardFenceLeasePrefix, PeerLeasePrefix: ShardPeerLeasePrefix}.Instrument(cfg)
}

// replicaID is the name of this replica among its peers.
func (o *Options) replicaID() string {
	if o.ReplicaID != "" {
		return o.ReplicaID
	}
	if pod := os.Getenv("POD_NAME"); pod != "" {
		return pod
	}
	if host, err := os.Hostname(); err == nil && host != "" {
		return host
	}
	return "workload-stager"
}

// DefaultReconcileTimeout bounds one reconcile unless --reconcile-timeout says otherwise.
const DefaultReconcileTimeout = 30 * time.Second

// inClusterNamespaceFile holds the pod's namespace, where controller-runtime
// puts the leader election Lease by default.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// leaderElectionNamespace is where the Lease goes: the flag's namespace, else
// the pod's (controller-runtime finds it), else, outside a pod, the namespace
// of the kubeconfig Secrets, which the stager may already write to.
func (o *Options) leaderElectionNamespace() (string, error) {
	if !o.LeaderElect || o.LeaderElectionNamespace != "" {
		return o.LeaderElectionNamespace, nil
	}
	if _, err := os.Stat(inClusterNamespaceFile); err == nil {
		return "", nil
	}
	if ns, ok := o.Providers.HostingNamespace(); ok {
		return ns, nil
	}
	return "", errors.New("--leader-election-namespace is required outside a pod unless the kubeconfig provider is used (or turn leader election off with --leader-elect=false)")
}

// podOrHostingNamespace is the pod's namespace, else, outside a pod, the
// namespace of the kubeconfig Secrets; false when there is neither.
func (o *Options) podOrHostingNamespace() (string, bool) {
	if ns, err := os.ReadFile(inClusterNamespaceFile); err == nil && len(ns) > 0 {
		return strings.TrimSpace(string(ns)), true
	}
	return o.Providers.HostingNamespace()
}

// shardNamespace is where the sharding Leases go: the flag's namespace,
// else the pod's, else, outside a pod, the namespace of the kubeconfig Secrets.
func (o *Options) shardNamespace() (string, error) {
	if o.LeaderElectionNamespace != "" {
		return o.LeaderElectionNamespace, nil
	}
	if ns, ok := o.podOrHostingNamespace(); ok {
		return ns, nil
	}
	return "", errors.New("--leader-election-namespace is required with --coordination=sharded outside a pod unless the kubeconfig provider is used")
}

// metricProviderSecretNamespace is the namespace of the MetricProviders'
// Secrets: the flag's, else the pod's, else the kubeconfig Secrets'; empty
// when there is none, and a provider that names a Secret cannot be used.
func (o *Options) metricProviderSecretNamespace() string {
	if o.MetricProviderSecretNamespace != "" {
		return o.MetricProviderSecretNamespace
	}
	ns, _ := o.podOrHostingNamespace()
	return ns
}

// celIsolation is the engine option that runs evaluations in worker
// processes, if the flags ask for it; each worker that ends other than by
// the engine's close is logged and counted.
func (o *Options) celIsolation(logger logr.Logger) expression.Option {
	if !o.CELIsolation {
		return nil
	}
	return expression.WithIsolation(expression.Isolation{
		Workers: o.CELWorkers,
		Memory:  o.CELWorkerMemory,
		OnWorkerStopped: func(why string) {
			logger.Info("An evaluation's worker process ended; a new one replaces it", "reason", why)
			metrics.CELWorkerStopped(why)
		},
	})
}

// analysisQueryTimeout bounds each query of an analysis: the flag's, but
// at most half the reconcile's, which the queries are part of.
func (o *Options) analysisQueryTimeout() time.Duration {
	return min(o.AnalysisQueryTimeout, o.ReconcileTimeout/2)
}

// NewScheme returns a scheme with every type the stager reads or writes.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, hostingv1alpha1.AddToScheme, ksv1alpha1.AddToScheme,
		kcp.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building the scheme: %w", err)
		}
	}
	return scheme, nil
}

// Stager is a configured stager, ready to run.
type Stager struct {
	// Manager is the multicluster manager.
	Manager mcmanager.Manager
	// Spaces runs the controller of every engaged space.
	Spaces *spaces.Runner
}

// New builds the stager against the hosting cluster's config.
func New(ctx context.Context, cfg *rest.Config, o *Options, logger logr.Logger) (*Stager, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	// Every client of the hosting cluster, the Leases' among them, and of
	// the kcp workspaces reached through it, is built from cfg's copies.
	cfg = instrument(cfg)
	spaceCache := stagedbindingpolicy.NarrowCache(cache.Options{Scheme: scheme})
	shard := o.Coordination == CoordinationSharded
	replica := o.replicaID()
	logger = logger.WithValues("replica", replica)
	leaseNamespace, err := o.leaderElectionNamespace()
	if err != nil {
		return nil, err
	}

	hosting, err := manager.New(cfg, manager.Options{
		Scheme:                  scheme,
		Logger:                  logger,
		Cache:                   mcproviders.HostingCacheOptions(o.Providers, spaceCache),
		Metrics:                 o.metricsServerOptions(),
		HealthProbeBindAddress:  o.HealthProbeBindAddress,
		PprofBindAddress:        o.PprofBindAddress,
		LeaderElection:          o.LeaderElect && !shard,
		LeaderElectionID:        "workload-stager.community.kubestellar.io",
		LeaderElectionNamespace: leaseNamespace,
		// A stopping leader hands over at once instead of after its Lease
		// expires; it stops every controller before it releases.
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: ptr.To(o.AllowSeveralInProcess)},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the hosting cluster's manager: %w", err)
	}
	if err := hosting.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding the health check: %w", err)
	}

	spaceClusterOptions := func(co *cluster.Options) {
		co.Scheme = scheme
		co.Logger = logger
		co.Cache = spaceCache
		co.NewClient = spaces.WithRequestRate(o.SpaceQPS, o.SpaceBurst, co.NewClient)
	}
	// The kcp provider's shared caches are narrowed as a space's own, and
	// its spaces' requests limited as theirs (it builds their clients).
	kcpOptions := mckcp.CacheOptions{
		Narrow: stagedbindingpolicy.NarrowCache,
		NewRateLimiter: func() flowcontrol.RateLimiter {
			return flowcontrol.NewTokenBucketRateLimiter(o.SpaceQPS, o.SpaceBurst)
		},
	}
	provider, err := mcproviders.New(o.Providers, hosting, kcpOptions, spaceClusterOptions)
	if err != nil {
		return nil, fmt.Errorf("building the cluster provider: %w", err)
	}
	var mcOptions []mcmanager.Option
	var tenures *sharding.Tenures
	if shard {
		var coordinator *sharding.Coordinator
		coordinator, tenures, err = o.shardingCoordinator(cfg, scheme, replica, logger)
		if err != nil {
			return nil, err
		}
		mcOptions = append(mcOptions, mcmanager.WithCoordinator(coordinator))
	}
	mgr, err := mcmanager.WithMultiCluster(hosting, provider, mcOptions...)
	if err != nil {
		return nil, fmt.Errorf("creating the multicluster manager: %w", err)
	}
	if err := provider.SetupWithManager(ctx, mgr); err != nil {
		return nil, fmt.Errorf("setting up the cluster provider: %w", err)
	}

	engine, err := expression.NewEngine(
		expression.WithCostLimit(o.CELCostLimit),
		expression.WithEstimatedCostLimit(o.CELEstimatedCostLimit),
		expression.WithEvalTimeout(o.CELEvalTimeout),
		expression.WithBudget(o.CELReconcileCostBudget, o.CELReconcileTimeBudget),
		o.celIsolation(logger.WithName("cel-workers")),
	)
	if err != nil {
		return nil, fmt.Errorf("creating the CEL engine: %w", err)
	}
	// The engine's workers end with the manager, or at once if the
	// stager is not built.
	built := false
	defer func() {
		if !built {
			engine.Close()
		}
	}()
	if err := hosting.Add(onEveryReplica(func(ctx context.Context) error {
		<-ctx.Done()
		engine.Close()
		return nil
	})); err != nil {
		return nil, fmt.Errorf("adding the CEL engine's closer: %w", err)
	}
	// The MetricProviders and their labelled Secrets, watched on every
	// replica: an analysis reads them from memory.
	metricProviders, err := cluster.New(cfg, func(co *cluster.Options) {
		co.Scheme = scheme
		co.Cache = analysis.CacheOptions(scheme, o.metricProviderSecretNamespace())
	})
	if err != nil {
		return nil, fmt.Errorf("creating the MetricProviders' cache: %w", err)
	}
	if err := hosting.Add(metricProviders); err != nil {
		return nil, fmt.Errorf("adding the MetricProviders' cache: %w", err)
	}
	// One clock for every time the spaces' reconcilers, the wave Gates and
	// the Reporter read, so that a decision and the reports it reads are
	// timed alike.
	var clk clock.WithTicker = clock.RealClock{}
	if o.Clock != nil {
		clk = o.Clock
	}
	// The RolloutWaves, watched on every replica: each reports the spaces
	// it serves into the waves that name them (docs/proposals/waves.md).
	// Their status carries a field manager per space, which the cache
	// strips. Without a wave, nothing is written. The same cache gates the
	// spaces' starts: every space's reconciler asks it whether a wave holds
	// a revision (Plan's rule 6a), and fails at once while its list fails.
	gates := &wave.Gates{Clock: clk}
	waves, err := cluster.New(cfg, func(co *cluster.Options) {
		co.Scheme = scheme
		co.Cache = cache.Options{Scheme: scheme, DefaultTransform: cache.TransformStripManagedFields(),
			DefaultWatchErrorHandler: gates.WatchErrorHandler}
	})
	if err != nil {
		return nil, fmt.Errorf("creating the RolloutWaves' cache: %w", err)
	}
	if err := hosting.Add(waves); err != nil {
		return nil, fmt.Errorf("adding the RolloutWaves' cache: %w", err)
	}
	// Every served space asks these caches for their kinds, which the
	// hosting cluster may lack: it is asked once a minute, whatever the
	// number of spaces.
	wavesCache := hostingwatch.RememberMissingKinds(waves.GetCache(), clk, missingKindRecheck)
	gates.Waves = wavesCache
	// The RolloutFreezes, watched on every replica in a cache of their
	// own (its list's failures are the freezes', not the waves'): every
	// space's reconciler asks which stages they hold (Plan's rule 6c),
	// and holds every start while they cannot be read.
	frozen := &stagerfreeze.Freezes{Clock: clk}
	freezeCluster, err := cluster.New(cfg, func(co *cluster.Options) {
		co.Scheme = scheme
		co.Cache = cache.Options{Scheme: scheme, DefaultTransform: cache.TransformStripManagedFields(),
			DefaultWatchErrorHandler: frozen.WatchErrorHandler}
	})
	if err != nil {
		return nil, fmt.Errorf("creating the RolloutFreezes' cache: %w", err)
	}
	if err := hosting.Add(freezeCluster); err != nil {
		return nil, fmt.Errorf("adding the RolloutFreezes' cache: %w", err)
	}
	frozen.Cache = hostingwatch.RememberMissingKinds(freezeCluster.GetCache(), clk, missingKindRecheck)
	reporter := &wave.Reporter{Client: hosting.GetClient(), Waves: wavesCache, Clock: clk, Log: logger.WithName("waves")}
	// Its series (stager_wave_*) are served on the metrics endpoint while
	// the stager runs, on every replica.
	if err := hosting.Add(onEveryReplica(func(ctx context.Context) error {
		defer wave.ExportMetrics(reporter)()
		<-ctx.Done()
		return nil
	})); err != nil {
		return nil, fmt.Errorf("adding the waves' metrics: %w", err)
	}
	// The NotificationDestinations and their labelled Secrets, watched on
	// every replica, and the Dispatcher that posts the notifications of
	// the spaces the replica serves (docs/proposals/notifications.md).
	destinations, err := cluster.New(cfg, func(co *cluster.Options) {
		co.Scheme = scheme
		co.Cache = notify.CacheOptions(scheme, o.metricProviderSecretNamespace())
	})
	if err != nil {
		return nil, fmt.Errorf("creating the NotificationDestinations' cache: %w", err)
	}
	if err := hosting.Add(destinations); err != nil {
		return nil, fmt.Errorf("adding the NotificationDestinations' cache: %w", err)
	}
	dispatcher := &notify.Dispatcher{Clock: clk, Resolver: &notify.Destinations{Reader: destinations.GetCache(),
		SecretNamespace: o.metricProviderSecretNamespace()}}
	if err := hosting.Add(dispatcher); err != nil {
		return nil, fmt.Errorf("adding the notifications' dispatcher: %w", err)
	}
	unconfirmed := stagedbindingpolicy.NewUnconfirmed()
	// One key per process seals the handover marks of every space: a mark
	// outlives neither a restart nor a move to another replica.
	handoverKey, err := rollout.NewHandoverKey()
	if err != nil {
		return nil, err
	}
	controllerOptions := stagedbindingpolicy.Options{
		MaxConcurrentReconciles: o.MaxConcurrentReconciles,
		CacheSyncTimeout:        o.CacheSyncTimeout,
		ReconcileTimeout:        o.ReconcileTimeout,
		Logger:                  logger.WithName(stagedbindingpolicy.ControllerName),
		DeletionWarningAfter:    o.DeletionWarningAfter,
		HandoverKey:             handoverKey,
		EventQPS:                o.SpaceEventQPS,
		EventBurst:              o.SpaceEventBurst,
		Measurer: &analysis.Providers{Reader: metricProviders.GetCache(), Options: analysis.Options{
			AllowInsecure:    o.AllowInsecureMetricProviders,
			Timeout:          o.analysisQueryTimeout(),
			MaxResponseBytes: o.AnalysisMaxResponseBytes,
			SecretNamespace:  o.metricProviderSecretNamespace(),
			SpaceQPS:         o.SpaceAnalysisQPS,
			SpaceBurst:       o.SpaceAnalysisBurst,
		}},
		Unconfirmed: unconfirmed,
		Waves:       gates,
		Freezes:     frozen,
		Notifier:    dispatcher,
		Clock:       clk,
	}
	if shard {
		// Each replica writes under a field manager of its own, so the
		// objects' managedFields tell which replica wrote a space.
		controllerOptions.FieldOwner = FieldOwnerPrefix + replica
	}
	janitor := metrics.NewSeriesJanitor(stagedbindingpolicy.SpaceControllerName, metrics.DefaultSeriesGrace, logger.WithName("space-metrics"))
	// A sharded replica starts a space's controller again only once the
	// writes of the one before can no longer land; an unsharded one does
	// not count its writes, and waits for nothing.
	var quiet func(ctx context.Context, space string) error
	if tenures != nil {
		quiet = func(ctx context.Context, space string) error {
			return tenures.Of(multicluster.ClusterName(space)).Quiet(ctx)
		}
	}
	runner, err := spaces.New(spaces.Options{
		Replica:  replica,
		Required: stagedbindingpolicy.WatchedObjects(),
		NewController: func(space string, cl cluster.Cluster) (manager.Runnable, error) {
			opts := controllerOptions
			var fence wave.Fence
			if tenures != nil {
				// A sharded replica writes to a space, and its reports to
				// the waves, only while it holds the space's fence.
				tenure := tenures.Of(multicluster.ClusterName(space))
				opts.Fence, fence = tenure, tenure
			}
			ctrl, err := stagedbindingpolicy.NewController(space, cl, engine, opts)
			if err != nil {
				return nil, err
			}
			return reporter.Alongside(space, cl.GetCache(), fence, ctrl), nil
		},
		NewCluster: func(space string, cl cluster.Cluster) (cluster.Cluster, error) {
			// A space of shared caches is given caches of its own only once
			// they refuse its objects (past --space-cache-max-bytes).
			if o.Providers.SharesCaches(space) && !spaces.CacheRefused(cl) {
				return nil, nil
			}
			return cluster.New(cl.GetConfig(), spaceClusterOptions)
		},
		Quiet:            quiet,
		IndexFields:      stagedbindingpolicy.IndexFields,
		ProbeInterval:    o.SpaceProbeInterval,
		CacheSyncTimeout: o.CacheSyncTimeout,
		MaxCacheBytes:    o.SpaceCacheMaxBytes,
		OverLimitBackoff: o.spaceCacheBackoff(),
		OnChange: func(state spaces.State) {
			reporter.SetReachable(state.Name, state.Ready || state.Reason != spaces.ReasonUnreachable)
			if state.Reason != spaces.ReasonDisengaged {
				janitor.Engaged(state.Name)
				return
			}
			janitor.Disengaged(state.Name)
			unconfirmed.Forget(state.Name)
		},
		Logger: logger.WithName("spaces"),
	})
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(runner); err != nil {
		return nil, fmt.Errorf("adding the space runner: %w", err)
	}
	// Every replica, leader or not, keeps what the providers read from the
	// hosting cluster in its cache: the readiness check waits for it, and a
	// new leader starts warm. The informers start after the manager's
	// caches, so that a replica that cannot read them still stops when asked.
	hostingObjects := mcproviders.HostingObjects(o.Providers)
	for _, obj := range hostingObjects {
		warm := onEveryReplica(func(ctx context.Context) error {
			_, err := hosting.GetCache().GetInformer(ctx, obj, cache.BlockUntilSynced(false))
			return err
		})
		if err := hosting.Add(warm); err != nil {
			return nil, fmt.Errorf("watching the providers' %T in the hosting cluster: %w", obj, err)
		}
	}
	if err := hosting.AddReadyzCheck("spaces", readiness(hosting, runner, hostingObjects)); err != nil {
		return nil, fmt.Errorf("adding the readiness check: %w", err)
	}
	built = true
	return &Stager{Manager: mgr, Spaces: runner}, nil
}

// FieldOwnerPrefix is the start of the field manager of a sharded
// replica's writes, which ends with the replica's ID.
const FieldOwnerPrefix = "workload-stager-"

// shardingCoordinator is the replica's sharding coordinator, with its peer
// Lease and the spaces' fence Leases in the sharding namespace, read and
// written uncached; and the replica's tenures of the fences, from its
// writes of them.
func (o *Options) shardingCoordinator(cfg *rest.Config, scheme *runtime.Scheme, replica string, logger logr.Logger) (*sharding.Coordinator, *sharding.Tenures, error) {
	namespace, err := o.shardNamespace()
	if err != nil {
		return nil, nil, err
	}
	direct, err := leaseClient(cfg, scheme)
	if err != nil {
		return nil, nil, err
	}
	log := logger.WithName("sharding")
	peers := sharding.NewPeerRegistry(direct, namespace, ShardPeerLeasePrefix, replica,
		o.shardPeerLeaseDuration(), o.ShardLeaseRenew, log)
	tenures := sharding.NewTenures(ShardFenceLeasePrefix, peers.Self().ID, log)
	return sharding.NewCoordinator(tenures.Client(direct), sharding.CoordinatorOptions{
		Namespace:     namespace,
		Prefix:        ShardFenceLeasePrefix,
		LeaseDuration: o.ShardLeaseDuration,
		LeaseRenew:    o.ShardLeaseRenew,
		Throttle:      time.Second,
		Probe:         o.ShardProbeInterval,
		Sharder:       sharding.SlotRendezvous{},
		Peers:         peers,
		Log:           log,
	}), tenures, nil
}

// leaseClient is the uncached client of the sharding Leases: the fences
// and the peer Leases, on connections of their own and answered at once
// when the API server is too busy (sharding.LeaseConfig).
func leaseClient(cfg *rest.Config, scheme *runtime.Scheme) (client.WithWatch, error) {
	c, err := client.NewWithWatch(sharding.LeaseConfig(cfg), client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating the sharding Leases' client: %w", err)
	}
	return c, nil
}

// shardPeerLeaseDuration is how long a peer Lease lasts: by default as
// long as the fences, so that a dead replica's spaces move once its fences
// expire.
func (o *Options) shardPeerLeaseDuration() time.Duration {
	if o.ShardPeerLeaseDuration == 0 {
		return o.ShardLeaseDuration
	}
	return o.ShardPeerLeaseDuration
}

// Start runs the stager until ctx is done.
func (s *Stager) Start(ctx context.Context) error {
	return s.Manager.Start(ctx)
}

// onEveryReplica is a runnable that runs on every replica, elected or not.
type onEveryReplica func(ctx context.Context) error

// Start runs the function.
func (f onEveryReplica) Start(ctx context.Context) error { return f(ctx) }

// NeedLeaderElection is false: the function runs on every replica.
func (onEveryReplica) NeedLeaderElection() bool { return false }

// readiness is ready once the hosting cluster's caches have synced, among
// them those of hostingObjects (what the providers read there: the
// kubeconfig Secrets), and, on the elected replica, the space runner (and with it the providers' controllers)
// has started. A replica waiting for the Lease is ready: it can take over.
func readiness(hosting manager.Manager, runner *spaces.Runner, hostingObjects []client.Object) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !hosting.GetCache().WaitForCacheSync(ctx) {
			return errors.New("the hosting cluster's caches have not synced")
		}
		// The cache has synced what it watches so far, which may not yet
		// include what the providers read: each must have synced too.
		for _, obj := range hostingObjects {
			informer, err := hosting.GetCache().GetInformer(ctx, obj, cache.BlockUntilSynced(false))
			if err != nil {
				return fmt.Errorf("watching %T in the hosting cluster: %w", obj, err)
			}
			if !informer.HasSynced() {
				return fmt.Errorf("the hosting cluster's cache of %T has not synced", obj)
			}
		}
		select {
		case <-hosting.Elected():
			if !runner.Started() {
				return errors.New("elected, but the spaces' runner has not started")
			}
		default:
		}
		return nil
	}
}

// metricsServerOptions are the options of the metrics endpoint: by default
// HTTPS with a self-signed certificate, or the one in MetricsCertDir, and
// every request authenticated and authorized by the hosting cluster.
func (o *Options) metricsServerOptions() metricsserver.Options {
	opts := metricsserver.Options{BindAddress: o.MetricsBindAddress}
	if !o.MetricsSecure {
		return opts
	}
	opts.SecureServing = true
	opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	opts.CertDir = o.MetricsCertDir
	// Plain HTTP/2 is open to the HTTP/2 Stream Cancellation and Rapid
	// Reset CVEs: the endpoint speaks HTTP/1.1 only.
	opts.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	return opts
}
