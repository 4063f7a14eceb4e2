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

package rollout_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
	"github.com/kubestellar/workload-stager/internal/rollout"
	"github.com/kubestellar/workload-stager/internal/rollout/rollouttest"
)

// TestPlanStateMachine drives Plan, applied as the reconciler applies it,
// and a model of KubeStellar (planmodel_test.go) through random sequences
// of what users and the world do, and checks the rollout's invariants
// after every step (docs/testing.md, "Plan as a state machine").
// `make test` runs rapid's default budget (100 sequences of about 30
// actions); `make check-plan` a long one (-rapid.checks, -rapid.steps).
func TestPlanStateMachine(t *testing.T) {
	engine := rollouttest.NewEngine(t)
	var steps, sequences int
	start := time.Now()
	seen = map[string]int{}
	rapid.Check(t, func(rt *rapid.T) {
		m := newMachine(rt, engine)
		defer func() { steps += m.steps; sequences++ }()
		rt.Repeat(m.actions())
	})
	elapsed := time.Since(start)
	t.Logf("%d sequences, %d Plan steps in %v: %.0f steps/s", sequences, steps, elapsed.Round(time.Millisecond),
		float64(steps)/elapsed.Seconds())
	t.Logf("checks made: %v", seen)
}

// seen counts the checks made, by kind, so that the log shows what a
// budget exercised.
var seen map[string]int

// settleSteps bounds the stager steps a rollout whose WECs are all healthy,
// whose approvals are given and whose KubeStellar answers at once takes to
// complete: a step per write, a few writes per stage and cluster.
const settleSteps = 300

// machine is the state machine: the world and what the invariants need
// to remember of its history.
type machine struct {
	w     *world
	steps int
	// handedOver holds the stage starts whose handover was checked:
	// their advance is recorded later, as the mark says.
	handedOver map[string]bool
	// last is the last change made, to see that none is made twice.
	last *rollout.Action
	// key is the stager process's handover key.
	key rollout.HandoverKey
	// failedAs is the policy's fingerprint when the failure its status
	// records was recorded.
	failedAs string
	// released are the revisions the policy's wave released at a start
	// (statemachine_wave_test.go).
	released map[string]bool
	// promotions are the promotion requests applied
	// (statemachine_promote_test.go).
	promotions map[string]bool
	// ann models the reconciler's announcements of the policy
	// (statemachine_announce_test.go).
	ann *announcer
	// settling is whether settle runs: every notification settles at
	// once.
	settling bool
}

var stageNames = []string{"dev", "test", "prod"}

// newMachine draws a world: WECs, and a policy of two or three stages.
func newMachine(t *rapid.T, engine *expression.Engine) *machine {
	var wecs []*wec
	n := rapid.IntRange(2, 6).Draw(t, "wecs")
	for i := range n {
		wecs = append(wecs, &wec{name: fmt.Sprintf("c%d", i+1),
			stage:  rapid.SampledFrom(append([]string{""}, stageNames...)).Draw(t, "stage"),
			joined: rapid.IntRange(0, 4).Draw(t, "joined") > 0, health: health(rapid.IntRange(0, 2).Draw(t, "health"))})
	}
	m := &machine{w: newWorld(engine, wecs), handedOver: map[string]bool{}}
	m.restartStager()
	m.drawWave(t)
	m.create(t)
	return m
}

// create makes a new policy (a new UID), as a user does.
func (m *machine) create(t *rapid.T) {
	stages := make([]v1alpha1.Stage, rapid.IntRange(2, 3).Draw(t, "stages"))
	for i := range stages {
		s := rollouttest.Stage(stageNames[i])
		if rapid.IntRange(0, 3).Draw(t, "approval") == 0 {
			s.Approval = v1alpha1.ApprovalRequired
		}
		if rapid.Bool().Draw(t, "failureCondition") {
			s.FailureCondition = failureCondition
			s.OnFailure = rapid.SampledFrom([]v1alpha1.FailureAction{v1alpha1.FailureHold, v1alpha1.FailureAbort}).Draw(t, "onFailure")
		}
		if rapid.IntRange(0, 2).Draw(t, "batched") == 0 {
			s.MaxConcurrency = ptr.To(intstr.FromInt32(int32(rapid.IntRange(1, 2).Draw(t, "maxConcurrency"))))
			if rapid.Bool().Draw(t, "maxFailures") {
				s.MaxFailures = ptr.To(intstr.FromInt32(int32(rapid.IntRange(0, 1).Draw(t, "maxFailures"))))
			}
		}
		if rapid.IntRange(0, 3).Draw(t, "analysis") == 0 {
			s.Analysis = []v1alpha1.Analysis{{Name: "errors", Provider: "prom", Query: "rate(errors[1m])",
				Interval: &metav1.Duration{Duration: 30 * time.Second}, Count: 2,
				SuccessCondition: `result.size() > 0 && result.all(v, v < 0.05)`}}
		}
		s.Windows = drawWindows(t)
		drawRegressionWatch(t, &s)
		drawRegressionAnalyses(t, &s)
		stages[i] = s
	}
	p := rollouttest.NewPolicy(stages...)
	p.UID = m.w.nextUID("sbp")
	p.Finalizers = nil
	p.Generation = 1
	p.ResourceVersion = m.w.nextRV()
	p.CreationTimestamp = metav1.NewTime(m.w.now)
	p.Spec.Revision = &v1alpha1.Revision{Name: m.w.revisions[len(m.w.revisions)-1]}
	// A policy without spec.revision: in a wave's later step the wave
	// holds it before it starts (WaveNeedsRevision) and settle gives it
	// a revision; elsewhere it rolls out the whole downsync.
	if rapid.IntRange(0, 3).Draw(t, "revisionless") == 0 {
		p.Spec.Revision = nil
		// What it runs is the workload from before revisions, which
		// the user guide says to leave unlabelled.
		m.w.unlabelled = true
	}
	if rapid.Bool().Draw(t, "accumulate") {
		p.Spec.Placement = v1alpha1.PlacementAccumulate
	}
	if rapid.Bool().Draw(t, "notifications") {
		p.Spec.Notifications = []v1alpha1.Notification{{Destination: "chat", Events: []v1alpha1.NotificationEvent{
			v1alpha1.NotifyStageStarted, v1alpha1.NotifyCompleted, v1alpha1.NotifyFailed, v1alpha1.NotifyAborted}}}
	}
	m.w.policy = p
	m.handedOver = map[string]bool{}
	m.last = nil
}

// actions are what users, KubeStellar, the WECs and the stager do; ""
// is the check after each.
func (m *machine) actions() map[string]func(*rapid.T) {
	actions := map[string]func(*rapid.T){
		"":       m.checkAlways,
		"stager": func(t *rapid.T) { m.stagerStep(t) },
		"stagerRun": func(t *rapid.T) {
			for range 4 {
				if a := m.stagerStep(t); a.Type == rollout.ActionNone {
					return
				}
			}
		},
		"kubestellarResolves": func(t *rapid.T) { m.keepsRunning(t, "KubeStellar resolving", m.w.resolve) },
		"kubestellarResolvesOne": func(t *rapid.T) {
			if len(m.w.bps) == 0 {
				t.Skip("no BindingPolicy")
			}
			name := rapid.SampledFrom(slicesSortedKeys(m.w.bps)).Draw(t, "bindingPolicy")
			m.keepsRunning(t, "KubeStellar resolving "+name, func() { m.w.resolveOne(name) })
		},
		"kubestellarReports": func(*rapid.T) { m.w.report() },
		"wecHealth": func(t *rapid.T) {
			c := rapid.SampledFrom(m.w.wecs).Draw(t, "wec")
			c.health = health(rapid.IntRange(0, 2).Draw(t, "health"))
		},
		"activeWECFails": func(t *rapid.T) {
			m.needPolicy(t)
			i := slices.IndexFunc(m.w.wecs, func(c *wec) bool { return c.joined && c.stage == m.w.policy.Status.ActiveStage })
			if i < 0 {
				t.Skip("no WEC in the active stage")
			}
			m.w.wecs[i].health = failing
			m.w.report() // KubeStellar reports it at once
		},
		"clusterJoinsOrLeaves": func(t *rapid.T) {
			c := rapid.SampledFrom(m.w.wecs).Draw(t, "wec")
			c.joined = !c.joined
		},
		"analysisVerdict": func(t *rapid.T) { m.w.metric = rapid.SampledFrom([]float64{0.01, 0.5}).Draw(t, "metric") },
		"time": func(t *rapid.T) {
			m.w.now = m.w.now.Add(time.Duration(rapid.IntRange(1, 600).Draw(t, "seconds")) * time.Second)
		},
		"stagerRestarts": func(*rapid.T) { m.restartStager() },
		"create": func(t *rapid.T) {
			if m.w.policy != nil {
				t.Skip("the policy exists")
			}
			m.create(t)
		},
		"editDownsync": m.userEdit(func(_ *rapid.T, p *v1alpha1.StagedBindingPolicy) { toggleDownsync(p) }),
		"newRevision": m.userEdit(func(t *rapid.T, p *v1alpha1.StagedBindingPolicy) {
			rev := fmt.Sprintf("r%d", len(m.w.revisions)+1)
			m.w.revisions = append(m.w.revisions, rev)
			p.Spec.Revision = &v1alpha1.Revision{Name: rev}
		}),
		"abort":   m.userEdit(func(_ *rapid.T, p *v1alpha1.StagedBindingPolicy) { p.Spec.Abort = !p.Spec.Abort }),
		"suspend": m.userEdit(func(_ *rapid.T, p *v1alpha1.StagedBindingPolicy) { p.Spec.Suspend = !p.Spec.Suspend }),
		"maxConcurrency": m.userEdit(func(t *rapid.T, p *v1alpha1.StagedBindingPolicy) {
			s := &p.Spec.Stages[rapid.IntRange(0, len(p.Spec.Stages)-1).Draw(t, "stage")]
			switch n := rapid.IntRange(0, 2).Draw(t, "maxConcurrency"); n {
			case 0:
				s.MaxConcurrency, s.MaxFailures = nil, nil
			default:
				s.MaxConcurrency = ptr.To(intstr.FromInt32(int32(n)))
			}
		}),
		"activeStageInBatches": m.userEdit(func(t *rapid.T, p *v1alpha1.StagedBindingPolicy) {
			s := p.Spec.StageNamed(p.Status.ActiveStage)
			if s == nil {
				t.Skip("no active stage")
			}
			s.MaxConcurrency = ptr.To(intstr.FromInt32(int32(rapid.IntRange(1, 2).Draw(t, "maxConcurrency"))))
		}),
		"approvalRequired": m.userEdit(func(t *rapid.T, p *v1alpha1.StagedBindingPolicy) {
			s := &p.Spec.Stages[rapid.IntRange(0, len(p.Spec.Stages)-1).Draw(t, "stage")]
			if s.Approval == v1alpha1.ApprovalRequired {
				s.Approval = ""
			} else {
				s.Approval = v1alpha1.ApprovalRequired
			}
		}),
		"restartOrRetry": func(t *rapid.T) {
			m.needPolicy(t)
			if m.w.policy.Annotations == nil {
				m.w.policy.Annotations = map[string]string{}
			}
			m.w.policy.Annotations[v1alpha1.RestartedAtAnnotation] = m.w.now.Format(time.RFC3339Nano) + fmt.Sprint(m.w.rv)
			m.w.policy.ResourceVersion = m.w.nextRV()
		},
		"dropRestartedAt": func(t *rapid.T) {
			m.needPolicy(t)
			if _, ok := m.w.policy.Annotations[v1alpha1.RestartedAtAnnotation]; !ok {
				t.Skip("no restartedAt annotation")
			}
			delete(m.w.policy.Annotations, v1alpha1.RestartedAtAnnotation)
			m.w.policy.ResourceVersion = m.w.nextRV()
		},
		"stagerAlone": m.stagerAlone,
		"approve": func(t *rapid.T) {
			m.needPolicy(t)
			if len(m.w.approvals) == 0 {
				t.Skip("no StageApproval")
			}
			m.approve(m.w.approvals[rapid.SampledFrom(slicesSortedKeys(m.w.approvals)).Draw(t, "approval")])
		},
		"delete": func(t *rapid.T) {
			m.needPolicy(t)
			if m.w.policy.DeletionTimestamp == nil {
				m.w.policy.DeletionTimestamp = ptr.To(metav1.NewTime(m.w.now))
			}
			if len(m.w.policy.Finalizers) == 0 {
				// The API server deletes it at once. The garbage
				// collector is left out: what the stager placed must
				// go through its finalizer.
				m.w.policy = nil
			}
		},
		"settle": m.settle,
	}
	maps.Copy(actions, m.waveActions())
	maps.Copy(actions, m.freezeActions())
	maps.Copy(actions, m.promoteActions())
	maps.Copy(actions, m.windowActions())
	maps.Copy(actions, m.regressionActions())
	return actions
}

func slicesSortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (m *machine) needPolicy(t *rapid.T) {
	if m.w.policy == nil {
		t.Skip("no policy")
	}
}

// userEdit is a user's change of the policy's spec.
func (m *machine) userEdit(edit func(*rapid.T, *v1alpha1.StagedBindingPolicy)) func(*rapid.T) {
	return func(t *rapid.T) {
		m.needPolicy(t)
		m.w.editSpec(func(p *v1alpha1.StagedBindingPolicy) { edit(t, p) })
	}
}

// approve is a user approving a StageApproval as it is: what its spec
// says the stager asked for.
func (m *machine) approve(a *v1alpha1.StageApproval) {
	if a.Approved() != nil {
		return
	}
	a.SetApproved("someone", metav1.NewTime(m.w.now.Truncate(time.Second)))
	a.ResourceVersion = m.w.nextRV()
	m.w.approvedAs[approvalKey(a)] = m.w.askedFor[approvalKey(a)]
}

func approvalKey(a *v1alpha1.StageApproval) string {
	return fmt.Sprintf("%s/%d", a.UID, a.Generation)
}

// restartStager gives the stager a new process: nothing of the old one
// is left but what it wrote, and a new key seals handover marks and batch
// placements, as the reconciler's process makes at start.
func (m *machine) restartStager() {
	key, err := rollout.NewHandoverKey()
	if err != nil {
		panic(err)
	}
	m.key = key
	m.last = nil
	if m.ann != nil {
		m.ann.posted, m.ann.settled = map[int64]bool{}, map[int64]string{}
	}
}

// planOptions are the options the reconciler passes to Plan that matter
// to the model: its process's handover key.
func (m *machine) planOptions() []rollout.PlanOption {
	// A fixed clock times the evaluations alike in every Plan call, so that
	// checks which plan a step twice compare equal actions.
	return []rollout.PlanOption{rollout.WithHandoverKey(m.key), rollout.WithClock(clocktesting.NewFakePassiveClock(time.Unix(0, 0)))}
}

// stagerStep is one step of the reconciler: a snapshot, Plan, the change,
// with the invariants of a step checked on the world Plan saw.
func (m *machine) stagerStep(t *rapid.T) rollout.Action {
	if m.w.policy == nil {
		return rollout.Action{Type: rollout.ActionNone}
	}
	snap := m.w.snapshot()
	ann := m.announcements()
	ann.post(&snap.Policy.Status)
	ann.notify(t, snap.Policy, m.settling)
	snap.Announced = ann.announced(&snap.Policy.Status)
	snap.Delivered = ann.delivered(&snap.Policy.Status)
	action := rollout.Plan(snap, m.w.engine, m.planOptions()...)
	action = m.measureWatched(t, snap, action)
	m.steps++
	seen["plan "+string(action.Type)]++
	if action.Type == rollout.ActionNone {
		if n := len(ann.clearable(snap)); n > 0 {
			m.fatalf(t, "announcements: no change, with %d posted (and notified) Events pending", n)
		}
		m.last = nil
		return action
	}
	m.checkStep(t, snap, action)
	m.checkWaveStep(t, snap, action)
	m.checkHistoryStep(t, snap, action)
	m.checkFreezeStep(t, snap, action)
	m.checkPromotionStep(t, snap, action)
	m.checkWindowStep(t, snap, action)
	m.checkRegressionStep(t, snap, action)
	var err error
	m.keepsRunning(t, fmt.Sprintf("%s (%s)", action.Type, action.Why), func() { err = m.w.apply(action) })
	m.checkAnnounceStep(t, ann, snap, action, err == nil)
	if err == nil {
		m.last = &action
		if action.Type == rollout.ActionUpdateStatus && m.w.policy != nil {
			// The stager may die between its write and the posts.
			if rapid.IntRange(0, 7).Draw(t, "killed after the write") == 0 {
				seen["announce: killed after a write"]++
				m.restartStager()
			} else {
				ann.post(&m.w.policy.Status)
			}
		}
	}
	return action
}

// quietSteps bounds the steps the stager takes with nothing else
// happening: KubeStellar resolves nothing, no WEC changes, no time passes.
// A write loop (a status written back and forth) never gets quiet.
const quietSteps = 20

// stagerAlone runs the stager with nothing else happening and checks that
// it comes to rest.
func (m *machine) stagerAlone(t *rapid.T) {
	m.needPolicy(t)
	var trace []string
	for range quietSteps {
		a := m.stagerStep(t)
		if a.Type == rollout.ActionNone {
			return
		}
		trace = append(trace, fmt.Sprintf("%s: %s", a.Type, a.Why))
	}
	m.fatalf(t, "rest: the stager alone makes %d changes and goes on:\n%s", quietSteps, strings.Join(trace, "\n"))
}

// checkAlways holds after every action: nothing of a deleted policy is left.
func (m *machine) checkAlways(t *rapid.T) {
	m.checkWaveRuns(t)
	if m.w.policy != nil {
		return
	}
	if len(m.w.bps) > 0 || len(m.w.approvals) > 0 {
		m.fatalf(t, "the policy is gone, and left BindingPolicies %v and StageApprovals %v", slicesSortedKeys(m.w.bps), slicesSortedKeys(m.w.approvals))
	}
}

// checkStep checks the invariants of one change, action, planned on snap.
func (m *machine) checkStep(t *rapid.T, snap *rollout.Snapshot, action rollout.Action) {
	policy := snap.Policy
	if m.last != nil && sameChange(*m.last, action) {
		m.fatalf(t, "idempotence: %s planned again once made (%s)", action.Type, action.Why)
	}
	if action.Type == rollout.ActionUpdateStatus && equality.Semantic.DeepEqual(&policy.Status, action.Status) {
		m.fatalf(t, "idempotence: a status write that changes nothing (%s)", action.Why)
	}
	seen["step"]++
	for _, e := range action.Events {
		if !v1alpha1.IsEventReason(e.Reason) {
			m.fatalf(t, "announce: an Event of reason %q, which the reconciler takes for forged and never posts", e.Reason)
		}
	}
	if action.Type == rollout.ActionRemoveFinalizer {
		for _, bp := range m.w.ownedBindingPolicies() {
			m.fatalf(t, "deletion: the finalizer goes while BindingPolicy %s is left", bp.Name)
		}
		if len(m.w.approvals) > 0 {
			m.fatalf(t, "deletion: the finalizer goes while StageApprovals %v are left", slicesSortedKeys(m.w.approvals))
		}
	}
	if policy.DeletionTimestamp != nil {
		return
	}
	active, started, _ := rollout.ActiveStage(policy)

	// No stage done before its condition held on the update revision's
	// own statuses.
	if action.Type == rollout.ActionCreateBindingPolicy && action.BindingPolicy.Annotations[v1alpha1.HandedOverFromAnnotation] != "" && started {
		seen["done on condition"]++
		m.doneOnCondition(t, policy, active, "handed over")
		m.handedOver[startKey(policy, active)] = true
	}
	if action.Type == rollout.ActionUpdateStatus {
		for i, s := range policy.Spec.Stages {
			before, after := policy.Status.StageNamed(s.Name), action.Status.StageNamed(s.Name)
			if after == nil || after.Phase != v1alpha1.StageSucceeded || before != nil && before.Phase == v1alpha1.StageSucceeded {
				continue
			}
			if i == active && started && m.handedOver[startKey(policy, active)] || promotedNow(before, after) {
				continue
			}
			seen["done on condition"]++
			m.doneOnCondition(t, policy, i, "recorded Succeeded")
		}
	}

	if action.Type == rollout.ActionUpdateStatus {
		m.checkFailureAndAnalyses(t, policy, action)
	}

	// No gate opens without its approval for this spec and revision.
	for i, s := range policy.Spec.Stages {
		if s.Approval != v1alpha1.ApprovalRequired {
			continue
		}
		// A gate is passed when the stage is entered: a stage that
		// needs approval only once it is active or done (and then
		// places a cluster that joins it) opens no gate, as an
		// unbatched stage's Binding takes such a cluster in.
		before := policy.Status.StageNamed(s.Name)
		wasActive := before != nil && (before.Phase == v1alpha1.StageActive || before.Phase == v1alpha1.StageSucceeded)
		opens := false
		switch action.Type {
		case rollout.ActionUpdateStatus:
			after := action.Status.StageNamed(s.Name)
			opens = !wasActive && after != nil && after.Phase == v1alpha1.StageActive
		case rollout.ActionCreateBindingPolicy:
			bp := action.BindingPolicy
			opens = !wasActive && started && i >= active && bp.Labels[v1alpha1.StageLabel] == s.Name &&
				(bp.Name == v1alpha1.StagePlacement(policy.Name, s.Name).At(policy.Status.UpdateRevision).String() ||
					bp.Name == v1alpha1.StagePlacement(policy.Name, s.Name).At(policy.Status.UpdateRevision).On(bp.Labels[v1alpha1.ClusterLabel]).String())
		}
		if !opens {
			continue
		}
		seen["gate opened"]++
		a := m.w.approvals[v1alpha1.StagePlacement(policy.Name, s.Name).String()]
		if a == nil || a.Approved() == nil || m.w.approvedAs[approvalKey(a)] != fingerprint(policy) {
			m.fatalf(t, "approval: stage %q opens (%s: %s) without an approval of this spec and revision%s", s.Name, action.Type, action.Why, m.w.describe())
		}
	}

	// Never more clusters progressing than a batch, nor placed past the
	// failure budget.
	if action.Type == rollout.ActionCreateBindingPolicy && action.BindingPolicy.Labels[v1alpha1.ClusterLabel] != "" {
		seen["batch placed"]++
		m.batchBounds(t, policy, action.BindingPolicy)
	}
}

func startKey(policy *v1alpha1.StagedBindingPolicy, active int) string {
	r := policy.Status.StageNamed(policy.Spec.Stages[active].Name)
	if r == nil || r.StartTime == nil {
		return policy.Spec.Stages[active].Name
	}
	return policy.Spec.Stages[active].Name + "@" + r.StartTime.String()
}

// sameChange reports whether two Actions make the same change.
func sameChange(a, b rollout.Action) bool {
	if a.Type != b.Type {
		return false
	}
	switch a.Type {
	case rollout.ActionUpdateStatus:
		return equality.Semantic.DeepEqual(a.Status, b.Status)
	case rollout.ActionCreateBindingPolicy, rollout.ActionUpdateBindingPolicy:
		return a.BindingPolicy.Name == b.BindingPolicy.Name && equality.Semantic.DeepEqual(a.BindingPolicy.Spec, b.BindingPolicy.Spec) &&
			equality.Semantic.DeepEqual(a.BindingPolicy.Annotations, b.BindingPolicy.Annotations)
	case rollout.ActionCreateStageApproval, rollout.ActionUpdateStageApproval:
		return a.StageApproval.Name == b.StageApproval.Name && equality.Semantic.DeepEqual(a.StageApproval.Spec, b.StageApproval.Spec)
	case rollout.ActionDeleteBindingPolicy:
		return a.BindingPolicy.UID == b.BindingPolicy.UID
	case rollout.ActionDeleteStageApproval:
		return a.StageApproval.UID == b.StageApproval.UID
	}
	return true
}

// doneOnCondition fails unless stage index of policy is done on the update
// revision's own statuses in the world Plan saw: its BindingPolicy at the
// update revision resolved and every cluster reporting the workload done
// (for a stage placed in batches: every selected cluster placed, none
// progressing, one done).
func (m *machine) doneOnCondition(t *rapid.T, policy *v1alpha1.StagedBindingPolicy, index int, how string) {
	stage := policy.Spec.Stages[index]
	rev := policy.Status.UpdateRevision
	if !stage.Batched() {
		name := v1alpha1.StagePlacement(policy.Name, stage.Name).At(rev).String()
		bp := m.w.bps[name]
		if bp == nil || bp.Status.ObservedGeneration != bp.Generation || m.w.bindings[name] == nil || m.w.statusSays(name) != "1" {
			m.fatalf(t, "done only on its condition: stage %q %s while BindingPolicy %s (update revision %q) does not report it done (statuses say %q)",
				stage.Name, how, name, rev, m.w.statusSays(name))
		}
		return
	}
	census := m.w.bindings[v1alpha1.StageCensus(policy.Name, stage.Name).String()]
	if census == nil {
		m.fatalf(t, "done only on its condition: stage %q %s without a census", stage.Name, how)
	}
	done := 0
	for _, d := range census.Spec.Destinations {
		name := v1alpha1.StagePlacement(policy.Name, stage.Name).At(rev).On(d.ClusterId).String()
		switch says := m.w.statusSays(name); {
		case says == "1":
			done++
		case says == "-1" && stage.FailureCondition != "":
		default:
			m.fatalf(t, "done only on its condition: stage %q %s while cluster %s (BindingPolicy %s) is not done", stage.Name, how, d.ClusterId, name)
		}
	}
	if done == 0 {
		m.fatalf(t, "done only on its condition: stage %q %s with no cluster done", stage.Name, how)
	}
}

// batchBounds fails when placing bp, a cluster's BindingPolicy, makes more
// clusters progress than a batch holds, or places one past the failure
// budget.
func (m *machine) batchBounds(t *rapid.T, policy *v1alpha1.StagedBindingPolicy, bp *ksv1alpha1.BindingPolicy) {
	stage := policy.Spec.StageNamed(bp.Labels[v1alpha1.StageLabel])
	if stage == nil || !stage.Batched() {
		m.fatalf(t, "batches: %s places a cluster of stage %q, which is not placed in batches", bp.Name, bp.Labels[v1alpha1.StageLabel])
	}
	census := m.w.bindings[v1alpha1.StageCensus(policy.Name, stage.Name).String()]
	progressingN, failed := 0, 0
	if census != nil {
		for _, d := range census.Spec.Destinations {
			name := v1alpha1.StagePlacement(policy.Name, stage.Name).At(policy.Status.UpdateRevision).On(d.ClusterId).String()
			placed := m.w.bps[name]
			if placed == nil || name == bp.Name {
				continue
			}
			switch says := m.w.statusSays(name); {
			case placed.Status.ObservedGeneration != placed.Generation || m.w.bindings[name] == nil:
				// KubeStellar has not resolved its spec yet: the statuses
				// are the generation's before, and Plan counts the
				// cluster Progressing, as doneOnCondition does.
				progressingN++
			case says == "1":
			case says == "-1" && stage.FailureCondition != "":
				failed++ // without a failureCondition a failing WEC is one not done yet
			default:
				progressingN++
			}
		}
	}
	limit := stage.MaxConcurrency.IntValue()
	if stage.Canary != nil {
		limit = max(limit, int(*stage.Canary))
	}
	if progressingN+1 > limit {
		m.fatalf(t, "batches: placing %s makes %d clusters of stage %q progress, more than maxConcurrency %d", bp.Name, progressingN+1, stage.Name, limit)
	}
	allowed := 0
	if stage.MaxFailures != nil {
		allowed = stage.MaxFailures.IntValue()
	}
	if failed > allowed {
		m.fatalf(t, "batches: %s placed with %d clusters of stage %q failed, past maxFailures %d", bp.Name, failed, stage.Name, allowed)
	}
}

// keepsRunning does change and fails if it leaves a WEC of the active
// stage that ran a revision running none, or one that ran the update
// revision or the one the stage's record keeps running neither: the old
// revision goes only once the new one is placed (make-before-break),
// whatever the stage's batches, a superseded revision that was in flight
// included.
func (m *machine) keepsRunning(t *rapid.T, change string, do func()) {
	var before map[string][]string
	var stage string
	var wanted []string
	check := m.w.policy != nil && m.w.policy.DeletionTimestamp == nil && !rollout.Aborting(m.w.policy) && m.w.policy.Status.Failure == nil
	if check {
		before, stage, wanted = m.w.runs(), m.w.policy.Status.ActiveStage, m.revisionsKept()
	}
	do()
	if !check || m.w.policy == nil || m.w.policy.Status.ActiveStage != stage || stage == "" ||
		rollout.Aborting(m.w.policy) || m.w.policy.Status.Failure != nil {
		return
	}
	wanted = append(wanted, m.revisionsKept()...)
	runsOne := func(revs []string) bool {
		return slices.ContainsFunc(revs, func(r string) bool { return slices.Contains(wanted, r) })
	}
	// The unlabelled Deployment belongs to every revision, as a namespace
	// does; it is the workload only for a rollout without spec.revision
	// or a stage that keeps what ran before it (revision "-").
	workload := func(revs []string) []string {
		if m.w.policy.Status.UpdateRevision == "" || slices.Contains(wanted, v1alpha1.Unrevisioned) {
			return revs
		}
		return slices.DeleteFunc(slices.Clone(revs), func(r string) bool { return r == v1alpha1.Unrevisioned })
	}
	after := m.w.runs()
	seen["make-before-break"]++
	for _, c := range m.w.wecs {
		if c.joined && c.stage == stage && len(workload(before[c.name])) > 0 && len(workload(after[c.name])) == 0 || // runs nothing
			c.joined && c.stage == stage && runsOne(before[c.name]) && !runsOne(after[c.name]) {
			m.fatalf(t, "make-before-break: WEC %s of active stage %q ran %v and runs %v after %s (revisions kept: %v)",
				c.name, stage, before[c.name], after[c.name], change, wanted)
		}
	}
}

// revisionsKept are the revisions a WEC of the active stage may not lose
// all of: the update revision and the one the active stage's record keeps.
func (m *machine) revisionsKept() []string {
	st := m.w.policy.Status
	kept := []string{st.UpdateRevision}
	if r := st.StageNamed(st.ActiveStage); r != nil {
		kept = append(kept, r.Revision)
	}
	return slices.DeleteFunc(kept, func(r string) bool { return r == "" })
}

// settle fixes everything (WECs healthy, a cluster in every stage, the
// rollout resumed, released, not aborted, approvals given, KubeStellar
// answering at once) and checks that the rollout completes in settleSteps
// steps, then stays as it is, with nothing stale placed; a policy being
// deleted goes, leaving nothing behind.
func (m *machine) settle(t *rapid.T) {
	m.needPolicy(t)
	w := m.w
	for _, c := range w.wecs {
		c.health = healthy
	}
	w.metric = 0.01
	for _, s := range w.policy.Spec.Stages {
		if !slices.ContainsFunc(w.wecs, func(c *wec) bool { return c.joined && c.stage == s.Name }) {
			w.wecs = append(w.wecs, &wec{name: fmt.Sprintf("c%d", len(w.wecs)+1), stage: s.Name, joined: true, health: healthy})
		}
	}
	if w.policy.DeletionTimestamp == nil {
		w.editSpec(func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Suspend, p.Spec.Abort = false, false })
		if w.policy.Status.Failure != nil {
			if w.policy.Annotations == nil {
				w.policy.Annotations = map[string]string{}
			}
			w.policy.Annotations[v1alpha1.RestartedAtAnnotation] = "settle-" + fmt.Sprint(w.rv)
		}
		m.releaseWave()
	}
	w.freeze = nil // the platform team lifts its freeze
	// The destinations take every notification from now on.
	m.settling = true
	defer func() { m.settling = false }()
	// A user may change the downsync once while it settles: a stage
	// approved and measured then awaits approval again, and starts over.
	editAt := -1
	if w.policy.DeletionTimestamp == nil && rapid.Bool().Draw(t, "edit while settling") {
		editAt = rapid.IntRange(0, 20).Draw(t, "edit at step")
	}
	var trace []string
	for i := range settleSteps {
		if i == editAt {
			w.editSpec(toggleDownsync)
		}
		// KubeStellar resolves what it has in no order the stager may
		// count on: all of it, or one BindingPolicy, before each step.
		if names := slicesSortedKeys(w.bps); len(names) > 0 && rapid.IntRange(0, 2).Draw(t, "resolve all") == 0 {
			name := rapid.SampledFrom(names).Draw(t, "resolve")
			m.keepsRunning(t, "KubeStellar resolving "+name, func() { w.resolveOne(name) })
		} else {
			m.keepsRunning(t, "KubeStellar resolving", w.resolve)
		}
		w.report()
		for _, name := range slicesSortedKeys(w.approvals) {
			m.approve(w.approvals[name])
		}
		a := m.stagerStep(t)
		if w.policy == nil {
			seen["settled: deleted"]++
			return // checkAlways checks what is left
		}
		trace = append(trace, fmt.Sprintf("%s: %s", a.Type, a.Why))
		if a.Type != rollout.ActionNone {
			continue
		}
		if w.policy.DeletionTimestamp == nil && w.policy.Status.Phase == v1alpha1.RolloutCompleted &&
			w.policy.Status.UpdateRevision == w.policy.Spec.SpecRevision() && m.atRest(t) {
			seen["settled: completed"]++
			m.completedClean(t)
			m.checkAnnouncedAtRest(t)
			return
		}
		w.now = w.now.Add(max(a.RequeueAfter, time.Second))
	}
	m.fatalf(t, "liveness: with every WEC healthy the rollout is not completed after %d steps (phase %s); last steps:\n%s",
		settleSteps, w.policy.Status.Phase, strings.Join(trace[max(len(trace)-12, 0):], "\n"))
}

// atRest reports whether the stager has nothing to do once KubeStellar
// has resolved and reported everything.
func (m *machine) atRest(t *rapid.T) bool {
	m.keepsRunning(t, "KubeStellar resolving", m.w.resolve)
	m.w.report()
	return m.stagerStep(t).Type == rollout.ActionNone
}

// completedClean checks a completed rollout at rest: every BindingPolicy
// left is the update revision's (or a census), in line with the spec, and
// under Replace the last stage's only.
func (m *machine) completedClean(t *rapid.T) {
	p := m.w.policy
	last := p.Spec.Stages[len(p.Spec.Stages)-1].Name
	for _, bp := range m.w.ownedBindingPolicies() {
		stage := p.Spec.StageNamed(bp.Labels[v1alpha1.StageLabel])
		if stage == nil {
			m.fatalf(t, "completed: BindingPolicy %s of no stage is left", bp.Name)
		}
		if p.Spec.Placement != v1alpha1.PlacementAccumulate && stage.Name != last {
			m.fatalf(t, "completed: BindingPolicy %s of stage %q is left under Replace", bp.Name, stage.Name)
		}
		var want *ksv1alpha1.BindingPolicy
		switch {
		case bp.Name == v1alpha1.StageCensus(p.Name, stage.Name).String():
			want = rollout.CensusBindingPolicy(p, *stage)
		case bp.Labels[v1alpha1.ClusterLabel] != "":
			want = rollout.ClusterBindingPolicy(p, *stage, bp.Labels[v1alpha1.ClusterLabel])
			census := m.w.bindings[v1alpha1.StageCensus(p.Name, stage.Name).String()]
			if census == nil || !slices.ContainsFunc(census.Spec.Destinations, func(d ksv1alpha1.Destination) bool {
				return d.ClusterId == bp.Labels[v1alpha1.ClusterLabel]
			}) {
				// A cluster the stage no longer selects places
				// nothing; its BindingPolicy goes with the stage's
				// others (batches.go), and is brought in line if the
				// cluster comes back.
				continue
			}
		default:
			want = rollout.RevisionBindingPolicy(p, *stage, p.Status.UpdateRevision)
		}
		if bp.Name != want.Name {
			m.fatalf(t, "completed: BindingPolicy %s is left, not the update revision's %s", bp.Name, want.Name)
		}
		if !equality.Semantic.DeepEqual(bp.Spec, want.Spec) {
			m.fatalf(t, "completed: BindingPolicy %s is not in line with the spec%s", bp.Name, m.w.describe())
		}
	}
}

// checkFailureAndAnalyses checks a status write: a failure that holds the
// rollout is released only by a change of the spec (but spec.suspend) or
// of the restartedAt annotation; a stage's analyses start once its
// placement is resolved on a cluster at least, and measure only its
// current placement.
func (m *machine) checkFailureAndAnalyses(t *rapid.T, policy *v1alpha1.StagedBindingPolicy, action rollout.Action) {
	before, after := policy.Status.Failure, action.Status.Failure
	switch {
	case before == nil && after != nil:
		m.failedAs = fingerprint(policy)
	case before != nil && after == nil && before.Action == v1alpha1.FailureHold && m.failedAs == fingerprint(policy) && !releasedForPromotion(policy):
		m.fatalf(t, "hold: the failure of stage %q is released with the spec and restartedAt as they were (%s)", before.Stage, action.Why)
	}
	for _, s := range policy.Spec.Stages {
		r, was := action.Status.StageNamed(s.Name), policy.Status.StageNamed(s.Name)
		if r == nil || r.Phase != v1alpha1.StageActive {
			continue
		}
		if (was == nil || was.Phase != v1alpha1.StageActive) && (r.PlacedTime != nil || len(r.Analyses) > 0) {
			m.fatalf(t, "analyses: stage %q is entered (%s) with the analyses or placement of an earlier entry", s.Name, action.Why)
		}
		placedNow := r.PlacedTime != nil && (was == nil || was.PlacedTime == nil || !was.PlacedTime.Equal(r.PlacedTime))
		if placedNow && !m.placedSomewhere(policy, s) {
			m.fatalf(t, "analyses: stage %q recorded placed (placedTime) while no BindingPolicy of it places the workload on a cluster", s.Name)
		}
		for _, a := range r.Analyses {
			seen["measurements kept"] += len(a.Measurements)
			for _, ms := range a.Measurements {
				if r.PlacedTime == nil || ms.Time.Before(r.PlacedTime) || r.StartTime != nil && ms.Time.Before(r.StartTime) {
					m.fatalf(t, "analyses: stage %q keeps a measurement of %s taken %v, before its placement (%v) or start (%v)",
						s.Name, a.Name, ms.Time, r.PlacedTime, r.StartTime)
				}
			}
		}
	}
	if after != nil {
		seen["failure recorded"]++
	}
}

// placedSomewhere reports whether a resolved Binding of the stage's update
// revision places the workload on a cluster.
func (m *machine) placedSomewhere(policy *v1alpha1.StagedBindingPolicy, stage v1alpha1.Stage) bool {
	for name, b := range m.w.bindings {
		bp := m.w.bps[name]
		if bp == nil || bp.Labels[v1alpha1.StageLabel] != stage.Name || len(b.Spec.Destinations) == 0 || len(b.Spec.Workload.NamespaceScope) == 0 {
			continue
		}
		if name == v1alpha1.StagePlacement(policy.Name, stage.Name).At(policy.Status.UpdateRevision).String() || strings.HasPrefix(name, v1alpha1.StagePlacement(policy.Name, stage.Name).At(policy.Status.UpdateRevision).String()+".on.") {
			return true
		}
	}
	return false
}

// fatalf fails the sequence, saying after how many Plan steps.
func (m *machine) fatalf(t *rapid.T, format string, args ...any) {
	t.Helper()
	t.Fatalf("%s (after %d Plan steps)", fmt.Sprintf(format, args...), m.steps)
}

// toggleDownsync changes the policy's downsync and back: a namespace more
// or less, which selects the same objects.
func toggleDownsync(p *v1alpha1.StagedBindingPolicy) {
	c := &p.Spec.Downsync[0]
	if len(c.Namespaces) == 1 {
		c.Namespaces = []string{"web", "extra"}
	} else {
		c.Namespaces = []string{"web"}
	}
}
