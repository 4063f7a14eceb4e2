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

package wave

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	wavegate "github.com/kubestellar/workload-stager/internal/wave"
)

// The states of stager_wave_step: where one ordered policy of one space
// is, as the wave sees it. A fixed set, so that the series stay bounded.
const (
	// StateDown: the space's report in the wave is missing, engaged false
	// or stale, so the later steps hold whatever its policy does.
	StateDown = "Down"
	// StateMissing: the space has no policy of that name (the later steps
	// hold for it).
	StateMissing = "Missing"
	// StateWaiting: the wave holds the policy's spec.revision
	// (WaitingForWave True, for any reason but the soak).
	StateWaiting = "Waiting"
	// StateSoaking: the wave holds the revision for the step's soak.
	StateSoaking = "Soaking"
	// StateGivenUp: the policy is Aborted or Stalled at its revision.
	StateGivenUp = "GivenUp"
	// StateCompleted: the policy completed its current revision.
	StateCompleted = "Completed"
	// StateProgressing: any other phase (rolling out, suspended, blocked,
	// awaiting approval, or not started and not held).
	StateProgressing = "Progressing"
)

// States are the values of stager_wave_step's state label.
var States = []string{StateDown, StateMissing, StateWaiting, StateSoaking, StateGivenUp, StateCompleted, StateProgressing}

// The reasons of stager_wave_spaces_not_reporting: why a space of a step
// counts as down for the gate.
const (
	// NotReportingNoReport: the wave's status has no entry of the space
	// (no replica serves it, or it was never reported).
	NotReportingNoReport = "NoReport"
	// NotReportingDisengaged: the entry says engaged false (let go, or its
	// API server does not answer), with a fresh heartbeat.
	NotReportingDisengaged = "Disengaged"
	// NotReportingStale: the entry's heartbeat is older (or, by clock
	// skew, newer) than the wave's reportStaleAfter.
	NotReportingStale = "Stale"
)

// NotReportingReasons are the values of stager_wave_spaces_not_reporting's
// reason label; each has a series per wave, 0 when no space has it.
var NotReportingReasons = []string{NotReportingNoReport, NotReportingDisengaged, NotReportingStale}

var (
	stepDesc = prometheus.NewDesc("stager_wave_step",
		"1 for where each ordered policy of each space of a RolloutWave is: its step, its revision and its state (Down, Missing, Waiting, Soaking, GivenUp, Completed, Progressing); exported by the replica that serves the space.",
		[]string{"wave", "step", "space", "policy", "revision", "state"}, nil)
	notReportingDesc = prometheus.NewDesc("stager_wave_spaces_not_reporting",
		"Spaces of each RolloutWave's steps that hold the later steps by not reporting, by reason (NoReport, Disengaged, Stale); the same on every replica.",
		[]string{"wave", "reason"}, nil)
	readErrorsDesc = prometheus.NewDesc("stager_wave_read_errors_total",
		"Failed reads of the hosting cluster's RolloutWaves, to gate a policy's start (WavesUnreadable) or to report the space; exported by the replica that serves the space.",
		[]string{"space"}, nil)
)

// scrapeTimeout bounds each read of a cache in a scrape.
const scrapeTimeout = 5 * time.Second

// collector computes the waves' series at every scrape, from the caches of
// the Reporters exported (ExportMetrics), as the policies' gauges are
// (internal/controller/metrics): a series is a function of what the caches
// hold now, so a changed revision, state or step, a wave deleted or
// edited, and a space let go take their old series along at the next
// scrape, with no bookkeeping to delete them.
type collector struct {
	mu        sync.Mutex
	reporters []*Reporter
}

// exported are the Reporters whose series the stager's metrics endpoint
// serves.
var exported = &collector{}

func init() {
	ctrlmetrics.Registry.MustRegister(exported)
}

// MetricCollectors returns the waves' metrics, registered with
// controller-runtime's registry.
func MetricCollectors() []prometheus.Collector {
	return []prometheus.Collector{exported}
}

// ExportMetrics serves r's series on the stager's metrics endpoint
// (controller-runtime's registry) until stop is called: stager_wave_step
// and stager_wave_read_errors_total of the spaces r serves, and
// stager_wave_spaces_not_reporting of every wave r's cache holds. With
// several Reporters in one process (tests), a series two would export is
// exported once, the first one's.
func ExportMetrics(r *Reporter) (stop func()) {
	exported.mu.Lock()
	defer exported.mu.Unlock()
	exported.reporters = append(exported.reporters, r)
	return func() {
		exported.mu.Lock()
		defer exported.mu.Unlock()
		exported.reporters = slices.DeleteFunc(exported.reporters, func(x *Reporter) bool { return x == r })
	}
}

// readFailed counts a failed read of the waves for space, on the served
// space of the exported Reporter that serves it; nothing when none does
// (the space was let go meanwhile), so no series outlives its space.
func readFailed(space string) {
	exported.mu.Lock()
	reporters := slices.Clone(exported.reporters)
	exported.mu.Unlock()
	for _, r := range reporters {
		r.mu.Lock()
		s := r.served[space]
		r.mu.Unlock()
		if s != nil {
			s.readErrors.Add(1)
			return
		}
	}
}

// Describe sends the series' descriptions.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- stepDesc
	ch <- notReportingDesc
	ch <- readErrorsDesc
}

// Collect sends the series of every exported Reporter.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	reporters := slices.Clone(c.reporters)
	c.mu.Unlock()
	sent := map[string]bool{}
	for _, r := range reporters {
		for _, m := range r.series() {
			if key := m.key(); !sent[key] {
				sent[key] = true
				send(ch, m)
			}
		}
	}
}

// series returns r's series now: nothing of the waves while its cache of
// them has not synced (or the kind is not installed), and nothing of a
// served space whose cache of policies has not synced.
func (r *Reporter) series() []metric {
	r.mu.Lock()
	served := make([]*servedSpace, 0, len(r.served))
	for _, s := range r.served {
		served = append(served, s)
	}
	r.mu.Unlock()
	out := make([]metric, 0, len(served))
	for _, s := range served {
		out = append(out, metric{desc: readErrorsDesc, value: float64(s.readErrors.Load()), labels: []string{s.space}})
	}
	var waves hostingv1alpha1.RolloutWaveList
	if err := listSynced(r.Waves, &hostingv1alpha1.RolloutWave{}, &waves); err != nil {
		return out
	}
	policies := map[string]policyReader{}
	for _, s := range served {
		if of, err := s.policyOf(); err == nil {
			policies[s.space] = of
		}
	}
	return append(out, waveSeries(waves.Items, policies, r.Clock.Now())...)
}

// listSynced lists the objects of obj's kind from c once its informer has
// synced: an unsynced cache would block the scrape.
func listSynced(c cache.Cache, obj client.Object, list client.ObjectList) error {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	informer, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		if !meta.IsNoMatchError(err) {
			ctrllog.Log.WithName("waves").Error(err, "Cannot read the RolloutWaves for their series")
		}
		return err
	}
	if !informer.HasSynced() {
		return errNotSynced
	}
	// The scrape only reads them: no copy of every wave per scrape.
	return c.List(ctx, list, client.UnsafeDisableDeepCopy)
}

// errNotSynced reports a cache that has not synced yet.
var errNotSynced = errors.New("the cache has not synced yet")

// policyOf returns the reader of the space's policies from its cache, once
// the cache holds them.
func (s *servedSpace) policyOf() (policyReader, error) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	informer, err := s.policies.GetInformer(ctx, &v1alpha1.StagedBindingPolicy{}, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, err
	}
	if !informer.HasSynced() {
		return nil, errNotSynced
	}
	return func(name string) *v1alpha1.StagedBindingPolicy {
		ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
		defer cancel()
		p := &v1alpha1.StagedBindingPolicy{}
		if err := s.policies.Get(ctx, types.NamespacedName{Name: name}, p); err != nil {
			return nil
		}
		return p
	}, nil
}

// policyReader returns a space's policy of a name, or nil when it has none.
type policyReader func(name string) *v1alpha1.StagedBindingPolicy

// metric is one series: its name and help, its value and its label values.
type metric struct {
	desc   *prometheus.Desc
	value  float64
	labels []string
}

// key identifies the series among those of one scrape.
func (m metric) key() string {
	return m.desc.String() + "\xff" + strings.Join(m.labels, "\xff")
}

// waveSeries returns, at now, the series of waves: per wave, the count of its
// steps' spaces not reporting by reason (every reason, at 0 too); and per
// wave, step, space of served (the spaces whose policies the caller can
// read) and policy the wave orders, one stager_wave_step series at 1,
// labelled with the policy's revision and state (stateOf). So a wave has at
// most 3 + 64 × 16 series, and a (wave, space, policy) one at a time.
func waveSeries(waves []hostingv1alpha1.RolloutWave, served map[string]policyReader, now time.Time) []metric {
	var out []metric
	for i := range waves {
		w := &waves[i]
		counts := notReporting(w, now)
		for _, reason := range NotReportingReasons {
			out = append(out, metric{desc: notReportingDesc, value: float64(counts[reason]), labels: []string{w.Name, reason}})
		}
		for _, step := range w.Spec.Steps {
			for _, space := range step.Spaces {
				of, ok := served[space]
				if !ok {
					continue
				}
				for _, policy := range w.Spec.Policies {
					revision, state := stateOf(w, space, policy, of(policy), now)
					out = append(out, metric{desc: stepDesc, value: 1, labels: []string{w.Name, step.Name, space, policy, revision, state}})
				}
			}
		}
	}
	return out
}

// stateOf returns the revision and state of policy p (nil: the space has
// none) named policy, of space in wave w at now: Down while the wave has
// no fresh engaged report of the space (the revision its report last
// gave, if any), whatever the policy does, since that is what the later
// steps go by; else Missing without a policy; Soaking or Waiting, with its
// spec.revision, while its WaitingForWave condition is True (the gate's
// view, written by the replica that serves the space); else GivenUp
// (Aborted or Stalled), Completed (with its current revision) or
// Progressing, with its update revision.
func stateOf(w *hostingv1alpha1.RolloutWave, space, policy string, p *v1alpha1.StagedBindingPolicy, now time.Time) (revision, state string) {
	e := wavegate.SpaceReport(w, space)
	if e == nil || !e.Engaged || !wavegate.Fresh(e.HeartbeatTime.Time, now, w.Spec.StaleAfter()) {
		if r := wavegate.PolicyReport(e, policy); r != nil {
			revision = r.Revision
		}
		return revision, StateDown
	}
	if p == nil {
		return "", StateMissing
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, wavegate.ConditionWaitingForWave); c != nil && c.Status == metav1.ConditionTrue {
		if c.Reason == wavegate.ReasonSoaking {
			return p.Spec.SpecRevision(), StateSoaking
		}
		return p.Spec.SpecRevision(), StateWaiting
	}
	switch {
	case wavegate.Failed(p.Status.Phase):
		return p.Status.UpdateRevision, StateGivenUp
	case p.Status.Phase == v1alpha1.RolloutCompleted:
		return p.Status.CurrentRevision, StateCompleted
	}
	return p.Status.UpdateRevision, StateProgressing
}

// notReporting counts the spaces of w's steps by why the gate counts them
// down at now (a space in none of these is reporting).
func notReporting(w *hostingv1alpha1.RolloutWave, now time.Time) map[string]int {
	counts := map[string]int{}
	for _, step := range w.Spec.Steps {
		for _, space := range step.Spaces {
			switch e := wavegate.SpaceReport(w, space); {
			case e == nil:
				counts[NotReportingNoReport]++
			case !wavegate.Fresh(e.HeartbeatTime.Time, now, w.Spec.StaleAfter()):
				counts[NotReportingStale]++
			case !e.Engaged:
				counts[NotReportingDisengaged]++
			}
		}
	}
	return counts
}

// send sends one series; one whose labels are not valid UTF-8 is left out
// rather than failing the whole scrape.
func send(ch chan<- prometheus.Metric, m metric) {
	kind := prometheus.GaugeValue
	if m.desc == readErrorsDesc {
		kind = prometheus.CounterValue
	}
	c, err := prometheus.NewConstMetric(m.desc, kind, m.value, m.labels...)
	if err != nil {
		ctrllog.Log.WithName("waves").V(1).Info("Series left out", "metric", m.desc.String(), "error", err.Error())
		return
	}
	ch <- c
}
