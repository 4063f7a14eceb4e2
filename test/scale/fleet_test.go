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
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/kcp-dev/logicalcluster/v3"
	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/sharder"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/controller/sharding"
	"github.com/kubestellar/workload-stager/test/framework/kcpstack"
	"github.com/kubestellar/workload-stager/test/framework/process"
	"github.com/kubestellar/workload-stager/test/framework/shardaudit"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

// leaseNamespace holds the replicas' sharding Leases in the provider
// workspace, where config/kcp/rbac lets the stager's identity write them.
const leaseNamespace = "default"

// replica is one stager process of the fleet.
type replica struct {
	id      string
	metrics string // address of its plain-HTTP metrics endpoint
	pprof   string // address of its profiles, when asked for
	proc    *process.Process
}

// fleet is the replicas serving the kcp workspaces, sharded
// (--coordination=sharded) when there are several.
type fleet struct {
	replicas []*replica
}

// startFleet starts n replicas r1..rn of the stager with the kcp provider,
// whose --kubeconfig and --kcp-kubeconfig are kubeconfig (the stager's
// identity in the provider workspace) and then $STAGER_SCALE_STAGER_ARGS,
// each logging to <dir>/<id>.log and, with profiles, serving Go's profiles.
func startFleet(binary, dir, kubeconfig string, n int, profiles bool) (*fleet, error) {
	f := &fleet{}
	for i := range n {
		addr, err := process.FreeAddress()
		if err != nil {
			return f, err
		}
		id := fmt.Sprintf("r%d", i+1)
		args := []string{
			"--kubeconfig=" + kubeconfig, "--provider=kcp", "--kcp-kubeconfig=" + kubeconfig,
			// The benchmark reads its readiness from the metrics; the
			// replicas' only cluster is kcp, not a cluster whose
			// ServiceAccount tokens a scraper would present, so the metrics
			// are served over plain HTTP (test/e2e and test/kcpe2e scrape the
			// secure endpoint).
			"--metrics-bind-address=" + addr, "--metrics-secure=false", "--health-probe-bind-address=0",
			"--replica-id=" + id,
		}
		var pprof string
		if profiles {
			if pprof, err = process.FreeAddress(); err != nil {
				return f, err
			}
			args = append(args, "--pprof-bind-address="+pprof)
		}
		if n > 1 {
			args = append(args, "--coordination=sharded", "--leader-election-namespace="+leaseNamespace)
		} else {
			args = append(args, "--leader-elect=false") // one replica: no Lease to hold
		}
		args = append(args, strings.Fields(os.Getenv(StagerArgsEnv))...)
		p, err := stack.StartProcess(binary, args, filepath.Join(dir, id+".log"))
		if err != nil {
			return f, err
		}
		f.replicas = append(f.replicas, &replica{id: id, metrics: addr, pprof: pprof, proc: p})
	}
	return f, nil
}

// stop stops every replica still running.
func (f *fleet) stop() {
	for _, r := range f.replicas {
		_ = r.proc.Stop()
	}
}

// alive returns the replicas that have not exited.
func (f *fleet) alive() []*replica {
	var out []*replica
	for _, r := range f.replicas {
		if !r.proc.Exited() {
			out = append(out, r)
		}
	}
	return out
}

// lost returns an error naming the replicas that have exited, or nil.
func (f *fleet) lost() error {
	var gone []string
	for _, r := range f.replicas {
		if r.proc.Exited() {
			gone = append(gone, r.id)
		}
	}
	if len(gone) > 0 {
		return fmt.Errorf("replicas %v exited (their logs are in the run's directory)", gone)
	}
	return nil
}

// readySpaces returns how many spaces some live replica serves and reports
// ready (stager_space_ready 1, counted once however many report it).
func (f *fleet) readySpaces(ctx context.Context) (int, error) {
	ready := map[string]bool{}
	for _, r := range f.alive() {
		spaces, err := spacesAtOne(ctx, r.metrics, "stager_space_ready")
		if err != nil {
			return 0, err
		}
		for _, s := range spaces {
			ready[s] = true
		}
	}
	return len(ready), nil
}

// shares returns how many spaces each live replica serves (its
// stager_space_owner series at 1).
func (f *fleet) shares(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	for _, r := range f.alive() {
		spaces, err := spacesAtOne(ctx, r.metrics, "stager_space_owner")
		if err != nil {
			return nil, err
		}
		out[r.id] = len(spaces)
	}
	return out, nil
}

// startCPUProfiles starts taking each live replica's CPU profile over the
// next seconds, into <dir>/<id>-<name>.cpu.pb.gz; the returned function
// waits for them and returns the first error.
func (f *fleet) startCPUProfiles(ctx context.Context, dir, name string, seconds int) func() error {
	errs := make(chan error, len(f.replicas))
	started := 0
	for _, r := range f.alive() {
		if r.pprof == "" {
			continue
		}
		started++
		go func() {
			body, err := httpGet(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", r.pprof, seconds))
			if err != nil {
				errs <- fmt.Errorf("reading %s's CPU profile: %w", r.id, err)
				return
			}
			errs <- os.WriteFile(filepath.Join(dir, r.id+"-"+name+".cpu.pb.gz"), body, 0o644)
		}()
	}
	return func() error {
		var first error
		for range started {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
		}
		return first
	}
}

// saveHeapProfiles writes each live replica's heap profile (after a
// collection) to <dir>/<id>-<name>.heap.pb.gz.
func (f *fleet) saveHeapProfiles(ctx context.Context, dir, name string) error {
	for _, r := range f.alive() {
		if r.pprof == "" {
			continue
		}
		body, err := httpGet(ctx, "http://"+r.pprof+"/debug/pprof/heap?gc=1")
		if err != nil {
			return fmt.Errorf("reading %s's heap profile: %w", r.id, err)
		}
		if err := os.WriteFile(filepath.Join(dir, r.id+"-"+name+".heap.pb.gz"), body, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// unsettled returns nil once every space of spaces is served by the live
// replica the coordinator's hash (rendezvous over the live replicas, each
// of weight 1) gives it, and by no other, and an error saying what is not
// yet so otherwise.
func (f *fleet) unsettled(ctx context.Context, spaces []string) error {
	live := f.alive()
	peers := make([]sharder.PeerInfo, 0, len(live))
	for _, r := range live {
		peers = append(peers, sharder.PeerInfo{ID: r.id, Weight: 1})
	}
	owners := map[string][]string{}
	for _, r := range live {
		served, err := spacesAtOne(ctx, r.metrics, "stager_space_owner")
		if err != nil {
			return err
		}
		for _, s := range served {
			owners[s] = append(owners[s], r.id)
		}
	}
	wrong := 0
	for _, s := range spaces {
		var want string
		for _, p := range peers {
			if (sharding.SlotRendezvous{}).ShouldOwn(shardaudit.FenceOf(s), peers, p) {
				want = p.ID
			}
		}
		if got := owners[s]; len(got) != 1 || got[0] != want {
			wrong++
		}
	}
	if wrong > 0 {
		return fmt.Errorf("%d of %d spaces not (only) served by the replica the hash gives them", wrong, len(spaces))
	}
	return nil
}

// requests returns the requests the live replicas have sent so far, by
// method, summed over the replicas.
func (f *fleet) requests(ctx context.Context) (requestCounts, error) {
	sum := requestCounts{}
	for _, r := range f.alive() {
		n, err := stagerRequests(ctx, r.metrics)
		if err != nil {
			return nil, err
		}
		sum.add(n)
	}
	return sum, nil
}

// apiRequests returns the requests the live replicas have sent so far, by
// verb and class (stager_api_requests_total), summed over the replicas.
func (f *fleet) apiRequests(ctx context.Context) (apiServerWork, error) {
	sum := newAPIServerWork()
	for _, r := range f.alive() {
		w, err := stagerAPIRequests(ctx, r.metrics)
		if err != nil {
			return apiServerWork{}, fmt.Errorf("replica %s: %w", r.id, err)
		}
		sum.add(w)
	}
	return sum, nil
}

// renewals sums the fence renewal times of the live replicas so far.
func (f *fleet) renewals(ctx context.Context) (renewalTimes, error) {
	sum := renewalTimes{}
	for _, r := range f.alive() {
		t, err := readRenewalTimes(ctx, r.metrics)
		if err != nil {
			return nil, fmt.Errorf("replica %s: %w", r.id, err)
		}
		sum.add(t)
	}
	return sum, nil
}

// use is what one replica has used so far: CPU seconds, RSS and peak RSS
// (KiB).
type use struct {
	cpu       float64
	rss, peak int
}

// usage is what the replicas have used so far, by replica.
type usage map[string]use

// usage reads every live replica's use.
func (f *fleet) usage() usage {
	out := usage{}
	for _, r := range f.alive() {
		rss, peak := memory(r.proc.Pid())
		out[r.id] = use{cpuSeconds(r.proc.Pid()), rss, peak}
	}
	return out
}

// totals returns the CPU seconds and RSS (KiB) summed over the replicas,
// and the largest peak RSS of one replica.
func (u usage) totals() (cpu float64, rss, maxPeak int) {
	for _, v := range u {
		cpu += v.cpu
		rss += v.rss
		maxPeak = max(maxPeak, v.peak)
	}
	return cpu, rss, maxPeak
}

// describe lists each replica's use, with its share of the spaces.
func (u usage) describe(shares map[string]int) string {
	ids := make([]string, 0, len(u))
	for id := range u {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b strings.Builder
	for _, id := range ids {
		v := u[id]
		perSpace := ""
		if n := shares[id]; n > 0 {
			perSpace = fmt.Sprintf(", %.0f KiB a space", float64(v.rss)/float64(n))
		}
		fmt.Fprintf(&b, "%s: %d spaces, %.1f CPU-s, RSS %d MiB (peak %d MiB%s); ", id, shares[id], v.cpu, v.rss/1024, v.peak/1024, perSpace)
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// spacesAtOne returns the spaces whose series of metric is at 1 on the
// metrics endpoint addr.
func spacesAtOne(ctx context.Context, addr, metric string) ([]string, error) {
	body, err := httpGet(ctx, "http://"+addr+"/metrics")
	if err != nil {
		return nil, fmt.Errorf("reading the metrics of %s: %w", addr, err)
	}
	families, err := metricFamilies(bytes.NewReader(body), "the stager's")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range families[metric].GetMetric() {
		if m.GetGauge().GetValue() == 1 {
			out = append(out, label(m, "space"))
		}
	}
	return out, nil
}

// observer watches, as the stager's identity through the virtual workspace
// of its export, every workspace's policies and BindingPolicies (two
// watches for all), and, as the provider workspace's admin, the fence
// Leases: it feeds the shard audit and keeps each policy's phase.
type observer struct {
	audit *shardaudit.Audit
	// spaceOf maps a logical cluster to its space name (the workspace
	// path); it is only read once observe has returned.
	spaceOf map[logicalcluster.Name]string

	mu     sync.Mutex
	phases map[string]rolloutPhase // by space

	cancel  context.CancelFunc
	running sync.WaitGroup // the watches, until they end after cancel
}

// stop ends the observer's watches and waits for them, after which the
// audit is complete and nothing logs.
func (o *observer) stop() {
	o.cancel()
	o.running.Wait()
}

// rolloutPhase is a policy's phase in the rollout it last restarted with.
type rolloutPhase struct {
	restartedAt string
	phase       v1alpha1.RolloutPhase
}

// observe starts the watches of an observer of the workspaces, which last
// until ctx ends or the observer stops, and returns once each is open.
func observe(ctx context.Context, logf func(string, ...any), kcp *kcpstack.Stack, workspaces []*kcpstack.Workspace, scheme *runtime.Scheme) (_ *observer, err error) {
	o := &observer{audit: shardaudit.New(), spaceOf: map[logicalcluster.Name]string{}, phases: map[string]rolloutPhase{}}
	ctx, o.cancel = context.WithCancel(ctx)
	defer func() {
		if err != nil {
			o.stop()
		}
	}()
	for _, w := range workspaces {
		o.spaceOf[logicalcluster.Name(w.ClusterID)] = w.Path
	}
	exportCfg, err := kcp.StagerExportConfig(ctx)
	if err != nil {
		return nil, err
	}
	export, err := client.NewWithWatch(exportCfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	record := func(obj runtime.Object) {
		c, ok := obj.(client.Object)
		if !ok {
			return
		}
		space, ok := o.spaceOf[logicalcluster.From(c)]
		if !ok {
			return
		}
		o.audit.RecordObject(space, obj)
		if p, ok := obj.(*v1alpha1.StagedBindingPolicy); ok {
			o.mu.Lock()
			o.phases[space] = rolloutPhase{restartedAt: p.Status.RestartedAt, phase: p.Status.Phase}
			o.mu.Unlock()
		}
	}
	opened := []<-chan struct{}{
		shardaudit.WatchForever(ctx, &o.running, logf, "the policies", func(ctx context.Context) (watch.Interface, error) {
			return export.Watch(ctx, &v1alpha1.StagedBindingPolicyList{})
		}, record),
		shardaudit.WatchForever(ctx, &o.running, logf, "the BindingPolicies", func(ctx context.Context) (watch.Interface, error) {
			return export.Watch(ctx, &ksv1alpha1.BindingPolicyList{})
		}, record),
	}

	provider, err := client.NewWithWatch(kcp.KCP.Config(kcp.ProviderPath), client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	opened = append(opened, shardaudit.WatchForever(ctx, &o.running, logf, "the fence Leases", func(ctx context.Context) (watch.Interface, error) {
		return provider.Watch(ctx, &coordinationv1.LeaseList{}, client.InNamespace(leaseNamespace))
	}, o.audit.RecordLease))
	for _, ch := range opened {
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return o, nil
}

// completed returns how many policies have completed the rollout that
// restarted with restartedAt ("" for the first).
func (o *observer) completed(restartedAt string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, p := range o.phases {
		if p.restartedAt == restartedAt && p.phase == v1alpha1.RolloutCompleted {
			n++
		}
	}
	return n
}

// heldBy returns the spaces whose fence replica holds.
func (o *observer) heldBy(replica string) []string {
	var out []string
	for _, space := range o.spaceOf {
		if o.audit.Holder(space) == replica {
			out = append(out, space)
		}
	}
	return out
}
