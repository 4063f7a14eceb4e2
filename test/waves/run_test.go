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

package waves

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
	"github.com/kubestellar/workload-stager/test/framework/process"
	"github.com/kubestellar/workload-stager/test/framework/shardaudit"
)

const (
	// versionLabel is the default spec.revision.labelKey.
	versionLabel = v1alpha1.DefaultRevisionLabelKey
	// wait bounds every wait for the stager; a rollout of two stages in
	// the simulator takes seconds.
	wait = 90 * time.Second
	// hold is how long a held policy is watched staying held.
	hold = 2 * time.Second
	// staleAfter is the waves' reportStaleAfter, the CRD's minimum.
	staleAfter = 30 * time.Second
)

// unavailable is a failureCondition: a WEC reports the workload not
// available (the simulator's Availability reports 0).
const unavailable = `obj.results.exists(r, r.name == '` + policytest.Collector +
	`' && r.rows.exists(row, row.columns.exists(col, col.type == 'Number' && col.float == '0')))`

// stagePlacement names the BindingPolicy that places stage of policy at
// revision.
func stagePlacement(policy, stage, revision string) string {
	return v1alpha1.StagePlacement(policy, stage).At(revision).String()
}

// run is one test's wave: a policy of its own, ordered through the suite's
// spaces by a RolloutWave of its own, the stager processes serving them,
// and a record of what every space placed and completed.
type run struct {
	t      *testing.T
	ctx    context.Context
	cancel context.CancelFunc
	// running counts the watches, which end with ctx.
	running sync.WaitGroup
	policy  string
	steps   [][]*space
	wave    *hostingv1alpha1.RolloutWave
	rec     *recorder
	// procs are the stager processes the clean-up stops.
	procs []*process.Process
	// audit, once set, is given every version of the policy and its
	// BindingPolicies the watches see.
	audit atomic.Pointer[shardaudit.Audit]
}

// newRun starts recording, in the spaces of steps, the BindingPolicies and
// completions of policy, and creates its workload there: a Deployment
// per revision (v1 to v3). Its clean-up deletes the policies and the wave
// (while the stager runs, which removes the policies' finalizers), then
// stops the stager processes and the watches.
func newRun(t *testing.T, policy string, steps ...[]*space) *run {
	t.Helper()
	ctx, cancel := context.WithCancel(suite.ctx)
	r := &run{t: t, ctx: ctx, cancel: cancel, policy: policy, steps: steps, rec: newRecorder()}
	t.Cleanup(r.cleanUp)
	for _, s := range r.spaces() {
		r.record(s)
		for _, rev := range []string{"v1", "v2", "v3"} {
			d := policytest.Deployment(namespace, policy+"-"+rev)
			d.Labels = map[string]string{policytest.AppLabel: policy, versionLabel: rev}
			if err := s.Client.Create(suite.ctx, d); err != nil {
				t.Fatalf("creating Deployment %s in %s: %v", d.Name, s.Name, err)
			}
		}
	}
	return r
}

// spaces returns the spaces of every step, in order.
func (r *run) spaces() []*space {
	var out []*space
	for _, step := range r.steps {
		out = append(out, step...)
	}
	return out
}

// cleanUp deletes what the run created and stops what it started.
func (r *run) cleanUp() {
	for _, s := range r.spaces() {
		p := &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: r.policy}}
		if err := s.Client.Delete(suite.ctx, p); client.IgnoreNotFound(err) != nil {
			r.t.Errorf("deleting policy %s in %s: %v", r.policy, s.Name, err)
		}
	}
	for _, s := range r.spaces() {
		if r.t.Failed() {
			break // the stager may be what failed: leave them to the next
		}
		r.ps(s).WaitGone(r.t, r.policy)
	}
	if r.wave != nil {
		if err := suite.hosting.Client.Delete(suite.ctx, r.wave); client.IgnoreNotFound(err) != nil {
			r.t.Errorf("deleting RolloutWave %s: %v", r.wave.Name, err)
		}
	}
	for _, p := range r.procs {
		if err := p.Stop(); err != nil {
			r.t.Errorf("stopping %s: %v", p.Name(), err)
		}
	}
	r.cancel()
	r.running.Wait()
}

// ps returns a space's policies as policytest waits for them.
func (r *run) ps(s *space) policytest.Space {
	return policytest.Space{Name: s.Name, Client: s.Client, Ctx: suite.ctx, Timeout: wait}
}

// startStager starts one stager process serving every space.
func (r *run) startStager(name string) *process.Process {
	r.t.Helper()
	p := startStager(r.t, name)
	r.procs = append(r.procs, p)
	return p
}

// createWave creates the run's RolloutWave, steps named s1, s2, ..., and
// waits until every space of it has reported into its status: the
// stager's caches, through which its gates read the wave, hold it then,
// so that no policy created after can start before the wave orders it.
func (r *run) createWave() {
	r.t.Helper()
	w := &hostingv1alpha1.RolloutWave{ObjectMeta: metav1.ObjectMeta{Name: r.policy}, Spec: hostingv1alpha1.RolloutWaveSpec{
		Policies:         []string{r.policy},
		ReportStaleAfter: &metav1.Duration{Duration: staleAfter},
	}}
	for i, step := range r.steps {
		ws := hostingv1alpha1.WaveStep{Name: fmt.Sprintf("s%d", i+1)}
		for _, s := range step {
			ws.Spaces = append(ws.Spaces, s.Name)
		}
		w.Spec.Steps = append(w.Spec.Steps, ws)
	}
	if err := suite.hosting.Client.Create(suite.ctx, w); err != nil {
		r.t.Fatalf("creating RolloutWave %s: %v", w.Name, err)
	}
	r.wave = w
	environment.Eventually(r.t, wait, "every space of wave "+w.Name+" to report", func() error {
		got := r.getWave()
		for _, s := range r.spaces() {
			if e := entryOf(got, s.Name); e == nil || !e.Engaged {
				return fmt.Errorf("no engaged report of %s: %s", s.Name, describeWave(got))
			}
		}
		return nil
	})
}

// getWave reads the run's wave.
func (r *run) getWave() *hostingv1alpha1.RolloutWave {
	r.t.Helper()
	w := &hostingv1alpha1.RolloutWave{}
	if err := suite.hosting.Client.Get(suite.ctx, types.NamespacedName{Name: r.wave.Name}, w); err != nil {
		r.t.Fatalf("reading RolloutWave %s: %v", r.wave.Name, err)
	}
	return w
}

// entryOf returns a space's report in a wave's status, or nil.
func entryOf(w *hostingv1alpha1.RolloutWave, space string) *hostingv1alpha1.WaveSpaceReport {
	for i := range w.Status.Spaces {
		if w.Status.Spaces[i].Space == space {
			return &w.Status.Spaces[i]
		}
	}
	return nil
}

// describeWave says what a wave's status reports, for failure messages.
func describeWave(w *hostingv1alpha1.RolloutWave) string {
	var b strings.Builder
	fmt.Fprintf(&b, "wave %s:", w.Name)
	for _, e := range w.Status.Spaces {
		fmt.Fprintf(&b, " [%s engaged=%t beat=%s", e.Space, e.Engaged, e.HeartbeatTime.UTC().Format(time.RFC3339))
		for _, p := range e.Policies {
			fmt.Fprintf(&b, " %s %s %q current %q failed %v", p.Name, p.Phase, p.Revision, p.CurrentRevision, p.FailedRevisions)
		}
		b.WriteString("]")
	}
	return b.String()
}

// spec is the run's policy at revision: dev (judged on the Deployments'
// availability) then prod, with extra applied to each stage.
func (r *run) spec(revision string, extra func(*v1alpha1.Stage)) *v1alpha1.StagedBindingPolicy {
	p := policytest.Policy(r.policy, map[string]string{policytest.AppLabel: r.policy},
		policytest.Stage("dev", policytest.Deployments, policytest.Available),
		policytest.Stage("prod", "", ""))
	p.Spec.Revision = &v1alpha1.Revision{Name: revision}
	if extra != nil {
		for i := range p.Spec.Stages {
			extra(&p.Spec.Stages[i])
		}
	}
	return p
}

// createPolicies creates the run's policy at v1 in every space.
func (r *run) createPolicies(extra func(*v1alpha1.Stage)) {
	r.t.Helper()
	for _, s := range r.spaces() {
		if err := s.Client.Create(suite.ctx, r.spec("v1", extra)); err != nil {
			r.t.Fatalf("creating policy %s in %s: %v", r.policy, s.Name, err)
		}
	}
}

// setRevision sets the policy's spec.revision in the given spaces.
func (r *run) setRevision(revision string, spaces ...*space) {
	r.t.Helper()
	for _, s := range spaces {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p := &v1alpha1.StagedBindingPolicy{}
			if err := s.Client.Get(suite.ctx, types.NamespacedName{Name: r.policy}, p); err != nil {
				return err
			}
			p.Spec.Revision.Name = revision
			return s.Client.Update(suite.ctx, p)
		})
		if err != nil {
			r.t.Fatalf("setting revision %s of %s in %s: %v", revision, r.policy, s.Name, err)
		}
	}
}

// get reads the policy in a space.
func (r *run) get(s *space) (*v1alpha1.StagedBindingPolicy, error) {
	p := &v1alpha1.StagedBindingPolicy{}
	if err := s.Client.Get(suite.ctx, types.NamespacedName{Name: r.policy}, p); err != nil {
		return nil, fmt.Errorf("reading policy %s in %s: %w", r.policy, s.Name, err)
	}
	return p, nil
}

// placed lists the names of the BindingPolicies the policy has at
// revision in a space, read from its API server.
func (r *run) placed(s *space, revision string) ([]string, error) {
	list := &ksv1alpha1.BindingPolicyList{}
	if err := s.Client.List(suite.ctx, list, client.MatchingLabels{v1alpha1.PolicyLabel: r.policy, v1alpha1.RevisionLabel: revision}); err != nil {
		return nil, fmt.Errorf("listing the BindingPolicies of %s in %s: %w", r.policy, s.Name, err)
	}
	var names []string
	for _, bp := range list.Items {
		names = append(names, bp.Name)
	}
	slices.Sort(names)
	return names, nil
}

// completed checks that the policy in a space completed revision.
func (r *run) completed(s *space, revision string) func() error {
	return func() error {
		p, err := r.get(s)
		if err != nil {
			return err
		}
		if p.Status.Phase != v1alpha1.RolloutCompleted || p.Status.CurrentRevision != revision {
			return fmt.Errorf("%s has not completed %s: %s", s.Name, revision, policytest.Describe(p))
		}
		return nil
	}
}

// waitCompleted waits until the policy in each space completed revision.
func (r *run) waitCompleted(revision string, spaces ...*space) {
	r.t.Helper()
	for _, s := range spaces {
		environment.Eventually(r.t, wait, fmt.Sprintf("%s to complete %s", s.Name, revision), r.completed(s, revision))
	}
}

// waitStarted waits until the policy in a space rolls revision out in
// its first stage.
func (r *run) waitStarted(s *space, revision string) {
	r.t.Helper()
	r.ps(s).WaitFor(r.t, r.policy, "to start "+revision+" in dev", func(p *v1alpha1.StagedBindingPolicy) bool {
		return p.Status.UpdateRevision == revision && p.Status.ActiveStage == "dev"
	})
}

// held checks that the wave holds revision in a space: WaitingForWave
// True with reason and a message holding every one of words, the revision
// not started (updateRevision is still running, "" for none), the phase
// as given, and nothing of revision placed.
func (r *run) held(s *space, revision, reason string, phase v1alpha1.RolloutPhase, running string, words ...string) func() error {
	return func() error {
		p, err := r.get(s)
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionWaitingForWave)
		switch {
		case c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason:
			return fmt.Errorf("%s not held by the wave with %s: %s", s.Name, reason, policytest.Describe(p))
		case !strings.HasPrefix(c.Message, fmt.Sprintf("revision %q is held: ", revision)):
			return fmt.Errorf("%s's WaitingForWave is not about %s: %q", s.Name, revision, c.Message)
		case p.Status.Phase != phase || p.Status.UpdateRevision != running || p.Status.CurrentRevision != running:
			return fmt.Errorf("%s is not %s running %q: %s", s.Name, phase, running, policytest.Describe(p))
		}
		for _, w := range words {
			if !strings.Contains(c.Message, w) {
				return fmt.Errorf("%s's WaitingForWave message %q does not say %q", s.Name, c.Message, w)
			}
		}
		names, err := r.placed(s, revision)
		if err != nil {
			return err
		}
		if len(names) > 0 {
			return fmt.Errorf("%s placed %v of held revision %s", s.Name, names, revision)
		}
		return nil
	}
}

// staysHeld waits until held says so, then checks it keeps saying so for
// the hold period.
func (r *run) staysHeld(what string, check func() error) {
	r.t.Helper()
	environment.Eventually(r.t, wait, what, check)
	environment.Consistently(r.t, hold, what, check)
}

// notHeld checks that a policy has no WaitingForWave condition.
func (r *run) notHeld(s *space) func() error {
	return func() error {
		p, err := r.get(s)
		if err != nil {
			return err
		}
		if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionWaitingForWave); c != nil {
			return fmt.Errorf("%s has %s: %s", s.Name, v1alpha1.ConditionWaitingForWave, policytest.Describe(p))
		}
		return nil
	}
}

// events counts the policy's Events in a space with reason whose note
// holds says.
func (r *run) events(s *space, reason, says string) int {
	r.t.Helper()
	p, err := r.get(s)
	if err != nil {
		r.t.Fatal(err)
	}
	n := 0
	for key, count := range r.ps(s).EventCounts(r.t, p) {
		if strings.HasPrefix(key, reason+"/") && strings.Contains(key, says) {
			n += count
		}
	}
	return n
}

// checkOrder checks, for each revision, that every space of a step after
// the first placed it (its first BindingPolicy at it was created) no
// earlier than every space of the earlier steps completed it (the
// lastTransitionTime of their Completed condition), to the second the API
// keeps, and that no space placed it unless all of them completed it; it
// logs the order seen.
func (r *run) checkOrder(revisions ...string) {
	r.t.Helper()
	for _, rev := range revisions {
		r.t.Logf("%s %s: %s", r.policy, rev, r.rec.timeline(rev))
		for j := 1; j < len(r.steps); j++ {
			for _, later := range r.steps[j] {
				placed, ok := r.rec.placedAt(later.Name, rev)
				if !ok {
					continue
				}
				for _, step := range r.steps[:j] {
					for _, earlier := range step {
						done, ok := r.rec.completedAt(earlier.Name, rev)
						switch {
						case !ok:
							r.t.Errorf("%s placed %s (%s) while %s, of an earlier step, never completed it",
								later.Name, rev, placed.Format(time.RFC3339), earlier.Name)
						case placed.Before(done):
							r.t.Errorf("%s placed %s at %s, before %s, of an earlier step, completed it at %s",
								later.Name, rev, placed.Format(time.RFC3339), earlier.Name, done.Format(time.RFC3339))
						}
					}
				}
			}
		}
	}
}

// record watches a space's policy and BindingPolicies into the run's
// recorder.
func (r *run) record(s *space) {
	r.t.Helper()
	wc, err := client.NewWithWatch(s.Config, client.Options{Scheme: s.Client.Scheme()})
	if err != nil {
		r.t.Fatal(err)
	}
	opened := []<-chan struct{}{
		shardaudit.WatchForever(r.ctx, &r.running, r.t.Logf, s.Name+"'s policies", func(ctx context.Context) (watch.Interface, error) {
			return wc.Watch(ctx, &v1alpha1.StagedBindingPolicyList{})
		}, func(obj runtime.Object) {
			if p, ok := obj.(*v1alpha1.StagedBindingPolicy); ok && p.Name == r.policy {
				r.rec.policy(s.Name, p)
				if a := r.audit.Load(); a != nil {
					a.RecordObject(s.Name, p)
				}
			}
		}),
		shardaudit.WatchForever(r.ctx, &r.running, r.t.Logf, s.Name+"'s BindingPolicies", func(ctx context.Context) (watch.Interface, error) {
			return wc.Watch(ctx, &ksv1alpha1.BindingPolicyList{}, client.MatchingLabels{v1alpha1.PolicyLabel: r.policy})
		}, func(obj runtime.Object) {
			if bp, ok := obj.(*ksv1alpha1.BindingPolicy); ok {
				r.rec.bindingPolicy(s.Name, bp)
				if a := r.audit.Load(); a != nil {
					a.RecordObject(s.Name, bp)
				}
			}
		}),
	}
	for _, o := range opened {
		awaitOpened(r.t, o, "the policies and BindingPolicies of "+s.Name)
	}
}

// mark is when something was first seen: by the API's clock (to the
// second) and by the test's.
type mark struct {
	at   time.Time // the API's time: a creationTimestamp or lastTransitionTime
	seen time.Time
}

// recorder keeps, per space and revision, the first BindingPolicy of a
// policy seen at the revision and its first completion of it.
type recorder struct {
	mu        sync.Mutex
	placed    map[[2]string]mark
	completed map[[2]string]mark
}

func newRecorder() *recorder {
	return &recorder{placed: map[[2]string]mark{}, completed: map[[2]string]mark{}}
}

func (c *recorder) bindingPolicy(space string, bp *ksv1alpha1.BindingPolicy) {
	rev := bp.Labels[v1alpha1.RevisionLabel]
	c.mu.Lock()
	defer c.mu.Unlock()
	k := [2]string{space, rev}
	if m, ok := c.placed[k]; !ok || bp.CreationTimestamp.Before(&metav1.Time{Time: m.at}) {
		c.placed[k] = mark{at: bp.CreationTimestamp.Time, seen: time.Now()}
	}
}

func (c *recorder) policy(space string, p *v1alpha1.StagedBindingPolicy) {
	done := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionCompleted)
	if p.Status.Phase != v1alpha1.RolloutCompleted || done == nil || done.Status != metav1.ConditionTrue {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := [2]string{space, p.Status.CurrentRevision}
	if _, ok := c.completed[k]; !ok {
		c.completed[k] = mark{at: done.LastTransitionTime.Time, seen: time.Now()}
	}
}

func (c *recorder) placedAt(space, revision string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.placed[[2]string{space, revision}]
	return m.at, ok
}

func (c *recorder) completedAt(space, revision string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.completed[[2]string{space, revision}]
	return m.at, ok
}

// timeline lists what was seen of revision, in the order the test saw it.
func (c *recorder) timeline(revision string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	type entry struct {
		what string
		m    mark
	}
	var es []entry
	for k, m := range c.placed {
		if k[1] == revision {
			es = append(es, entry{k[0] + " placed", m})
		}
	}
	for k, m := range c.completed {
		if k[1] == revision {
			es = append(es, entry{k[0] + " completed", m})
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].m.seen.Before(es[j].m.seen) })
	var parts []string
	for _, e := range es {
		parts = append(parts, fmt.Sprintf("%s at %s", e.what, e.m.at.Format("15:04:05")))
	}
	return strings.Join(parts, ", ")
}
