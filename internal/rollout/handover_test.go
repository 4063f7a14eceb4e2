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

package rollout

// The handover rules of Plan: the recorded advance of rules 13 and 15, and
// the handover itself of rule 14.

import (
	"slices"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// handedOverBP is test's BindingPolicy as dev's handover made it, marked
// with the given start of dev.
func handedOverBP(p *v1alpha1.StagedBindingPolicy, devStart metav1.Time) *ksv1alpha1.BindingPolicy {
	bp := ownedBP(p, "test", "bp-test")
	bp.Annotations = map[string]string{v1alpha1.HandedOverFromAnnotation: SealedMark(p.UID, "dev", devStart.Time)}
	return bp
}

// withNextBP puts bp, made from the snapshot's policy, in the snapshot as
// the next stage's BindingPolicy, and among the policy's own when labelled.
func withNextBP(make func(*v1alpha1.StagedBindingPolicy) *ksv1alpha1.BindingPolicy) func(*Snapshot) {
	return func(s *Snapshot) {
		bp := make(s.Policy)
		if bp.Labels[v1alpha1.PolicyLabel] == s.Policy.Name {
			s.BindingPolicies = append(s.BindingPolicies, *bp.DeepCopy())
		}
		s.NextBindingPolicy = bp
	}
}

// withoutActiveBP takes the active stage's BindingPolicy out of the snapshot,
// as if someone deleted it.
func withoutActiveBP(s *Snapshot) {
	s.BindingPolicies = slices.DeleteFunc(s.BindingPolicies, func(bp ksv1alpha1.BindingPolicy) bool {
		return bp.Name == s.ActiveBindingPolicy.Name
	})
	s.ActiveBindingPolicy = nil
}

// TestPlanHandover table-tests the handover from a done stage to the next:
// the next stage's BindingPolicy first, marked with the done stage's start,
// then the status, which takes that mark as the record of the advance (a
// restart of the stager between the two writes plans on the same
// snapshot); an unmarked BindingPolicy, or one marked for another start of
// the stage, records nothing.
func TestPlanHandover(t *testing.T) {
	engine := newEngine(t)
	marked := func(p *v1alpha1.StagedBindingPolicy) *ksv1alpha1.BindingPolicy { return handedOverBP(p, earlier) }
	tests := []struct {
		name string
		snap *Snapshot
		// want is the action's type; for a status write, wantStage is
		// its active stage and wantDevMessage part of dev's record.
		want           ActionType
		wantBP         string
		wantStage      string
		wantDevMessage string
	}{
		{name: "dev done, test free: test's BindingPolicy first",
			snap: at("dev").bound().reporting(deployment, "1").Snapshot,
			want: ActionCreateBindingPolicy, wantBP: "web.stage.test"},
		{name: "handed over, dev still done: the status records the advance",
			snap: at("dev").bound().reporting(deployment, "1").with(withNextBP(marked)).Snapshot,
			want: ActionUpdateStatus, wantStage: "test", wantDevMessage: "condition holds"},
		{name: "handed over, dev no longer done: the advance is recorded all the same",
			snap: at("dev").bound().reporting(deployment, "0").with(withNextBP(marked)).Snapshot,
			want: ActionUpdateStatus, wantStage: "test", wantDevMessage: "the stage was done when BindingPolicy web.stage.test of stage \"test\" was created"},
		{name: "handed over, dev's Binding gone meanwhile: the advance is recorded all the same",
			snap: at("dev").with(withNextBP(marked)).Snapshot,
			want: ActionUpdateStatus, wantStage: "test", wantDevMessage: "the stage was done when"},
		{name: "handed over, dev's BindingPolicy deleted meanwhile: the advance is recorded, dev not placed again",
			snap: at("dev").with(withNextBP(marked)).with(withoutActiveBP).Snapshot,
			want: ActionUpdateStatus, wantStage: "test", wantDevMessage: "the stage was done when"},
		{name: "test's BindingPolicy marked by an earlier start of dev, dev's BindingPolicy gone: dev placed again",
			snap: at("dev").with(withNextBP(func(p *v1alpha1.StagedBindingPolicy) *ksv1alpha1.BindingPolicy {
				return handedOverBP(p, muchEarlier)
			})).with(withoutActiveBP).Snapshot,
			want: ActionCreateBindingPolicy, wantBP: "web.stage.dev"},
		{name: "handed over, dev's BindingPolicy being deleted: the advance is recorded",
			snap: at("dev").with(withNextBP(marked)).with(func(s *Snapshot) { beingDeleted(s.ActiveBindingPolicy) }).Snapshot,
			want: ActionUpdateStatus, wantStage: "test", wantDevMessage: "the stage was done when"},
		{name: "handed over, then suspended: held in dev",
			snap: at("dev").bound().reporting(deployment, "1").with(withNextBP(marked)).with(suspend).Snapshot,
			want: ActionUpdateStatus, wantStage: "dev"},
		{name: "handed over, test's BindingPolicy being deleted: no record, dev not done",
			snap: at("dev").bound().reporting(deployment, "0").with(withNextBP(func(p *v1alpha1.StagedBindingPolicy) *ksv1alpha1.BindingPolicy {
				return beingDeleted(marked(p))
			})).Snapshot,
			want: ActionUpdateStatus, wantStage: "dev"},
		{name: "test's BindingPolicy marked by an earlier start of dev (a restarted rollout), dev not done: taken away, no advance",
			snap: at("dev").bound().reporting(deployment, "0").with(withNextBP(func(p *v1alpha1.StagedBindingPolicy) *ksv1alpha1.BindingPolicy {
				return handedOverBP(p, muchEarlier)
			})).Snapshot,
			want: ActionDeleteBindingPolicy, wantBP: "web.stage.test"},
		// Issue 32: whoever can create BindingPolicies can read the
		// policy's UID and dev's start, and so write this mark.
		{name: "test's BindingPolicy marked by someone else than the stager, dev not done: taken away, no advance",
			snap: at("dev").bound().reporting(deployment, "0").with(withNextBP(func(p *v1alpha1.StagedBindingPolicy) *ksv1alpha1.BindingPolicy {
				bp := ownedBP(p, "test", "bp-test")
				bp.Annotations = map[string]string{v1alpha1.HandedOverFromAnnotation: "dev@" + earlier.UTC().Format(time.RFC3339)}
				return bp
			})).Snapshot,
			want: ActionDeleteBindingPolicy, wantBP: "web.stage.test"},
		{name: "test's BindingPolicy unmarked (left from an earlier rollout), dev not done: taken away, no advance",
			snap: at("dev").bound().reporting(deployment, "0").with(withNextBP(func(p *v1alpha1.StagedBindingPolicy) *ksv1alpha1.BindingPolicy {
				return ownedBP(p, "test", "bp-test")
			})).Snapshot,
			want: ActionDeleteBindingPolicy, wantBP: "web.stage.test"},
		{name: "test's BindingPolicy unmarked, dev done: the advance is recorded first, creating nothing",
			snap: at("dev").bound().reporting(deployment, "1").with(withNextBP(func(p *v1alpha1.StagedBindingPolicy) *ksv1alpha1.BindingPolicy {
				return ownedBP(p, "test", "bp-test")
			})).Snapshot,
			want: ActionUpdateStatus, wantStage: "test", wantDevMessage: "condition holds"},
		{name: "test's name taken by someone else's BindingPolicy, dev done: the advance is recorded first, creating nothing",
			snap: at("dev").bound().reporting(deployment, "1").with(withNextBP(func(p *v1alpha1.StagedBindingPolicy) *ksv1alpha1.BindingPolicy {
				bp := marked(p)
				bp.Labels, bp.OwnerReferences = nil, nil
				return bp
			})).Snapshot,
			want: ActionUpdateStatus, wantStage: "test", wantDevMessage: "condition holds"},
		{name: "test awaits approval, dev done: the advance is recorded first, placing nothing",
			snap: at("dev", gated()...).bound().reporting(deployment, "1").with(withApprovals(testUnapproved)).Snapshot,
			want: ActionUpdateStatus, wantStage: "test", wantDevMessage: "condition holds"},
		{name: "handed over, then test's approval made Required: test's BindingPolicy taken away before the gate",
			snap: at("dev", gated()...).bound().reporting(deployment, "1").with(withApprovals(testUnapproved)).with(withNextBP(marked)).Snapshot,
			want: ActionDeleteBindingPolicy, wantBP: "web.stage.test"},
		{name: "handed over, then test's approval made Required, dev no longer done: taken away all the same",
			snap: at("dev", gated()...).bound().reporting(deployment, "0").with(withApprovals(testUnapproved)).with(withNextBP(marked)).Snapshot,
			want: ActionDeleteBindingPolicy, wantBP: "web.stage.test"},
		{name: "dev's start not recorded, dev done: the advance is recorded first",
			snap: at("dev").bound().reporting(deployment, "1").with(func(s *Snapshot) { s.Policy.Status.Stages[0].StartTime = nil }).Snapshot,
			want: ActionUpdateStatus, wantStage: "test", wantDevMessage: "condition holds"},
		{name: "final stage done: completes, no handover",
			snap: at("prod").bound().reporting(deployment, "1").Snapshot,
			want: ActionUpdateStatus, wantStage: "prod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.snap, engine)
			if got.Type != tt.want {
				t.Fatalf("Plan() = %s (%s), want %s", got.Type, got.Why, tt.want)
			}
			if tt.wantBP != "" && (got.BindingPolicy == nil || got.BindingPolicy.Name != tt.wantBP) {
				t.Errorf("Plan() acts on BindingPolicy %v, want %s", got.BindingPolicy, tt.wantBP)
			}
			if got.Type != ActionUpdateStatus {
				return
			}
			if got.Status.ActiveStage != tt.wantStage {
				t.Errorf("active stage %q, want %q (%s)", got.Status.ActiveStage, tt.wantStage, got.Why)
			}
			if tt.wantStage == "test" {
				dev := got.Status.Stages[0]
				if dev.Phase != v1alpha1.StageSucceeded || !timeEqual(dev.CompletionTime, now) || !strings.Contains(dev.Message, tt.wantDevMessage) {
					t.Errorf("dev's record %+v, want Succeeded now, its message naming %q", dev, tt.wantDevMessage)
				}
			}
		})
	}
}

// TestPlanHandoverRecordIsOneWrite records handovers to a next stage with
// and without a progress deadline: the record says all the next stage's
// first run would (its deadline too), so that run has nothing to write
// until KubeStellar resolves the stage.
func TestPlanHandoverRecordIsOneWrite(t *testing.T) {
	engine := newEngine(t)
	for _, next := range []v1alpha1.Stage{stage("test"), deadlined("test", seedCondition, 30*time.Minute)} {
		t.Run("test's progressDeadline "+ptrDuration(next.ProgressDeadline).String(), func(t *testing.T) {
			f := at("dev", stage("dev"), next, stage("prod")).bound().reporting(deployment, "1")
			handover := Plan(f.Snapshot, engine)
			if handover.Type != ActionCreateBindingPolicy {
				t.Fatalf("Plan() = %s (%s), want CreateBindingPolicy", handover.Type, handover.Why)
			}
			snap := placed(f.Snapshot, handover.BindingPolicy)
			record := Plan(snap, engine)
			if record.Type != ActionUpdateStatus || record.Status.ActiveStage != "test" {
				t.Fatalf("Plan() = %s (%s), want the advance recorded", record.Type, record.Why)
			}
			if got := record.Status.Stages[1].ProgressDeadlineTime; (next.ProgressDeadline != nil) != (got != nil) ||
				got != nil && !timeEqual(got, metav1.NewTime(now.Add(30*time.Minute))) {
				t.Errorf("test's progressDeadlineTime %v, want it set from its start only when it has a deadline", got)
			}
			if again := replan(t, snap, engine, record); again.Type != ActionNone {
				t.Errorf("after the record, Plan() = %s (%s), want None", again.Type, again.Why)
			}
		})
	}
}

// TestPlanHandoverRecordsTheTimeOfTheHandover records handovers whose next
// BindingPolicy was created at various times: the done stage completed,
// and the next one started (its 30-minute deadline with it), when the
// BindingPolicy was created; at the record's own time when the space's
// clock disagrees with the stager's (before the done stage started or was
// done, or after now), or when the record ends a suspension. A record past
// the next stage's deadline warns of it.
func TestPlanHandoverRecordsTheTimeOfTheHandover(t *testing.T) {
	engine := newEngine(t)
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	tests := []struct {
		name    string
		dev     v1alpha1.Stage
		created metav1.Time
		with    func(*Snapshot)
		want    metav1.Time
		stalled bool
	}{
		{name: "created five seconds before the record", created: ago(5 * time.Second), want: ago(5 * time.Second)},
		{name: "no creation time", want: now},
		{name: "created before dev started", created: muchEarlier, want: now},
		{name: "created after now", created: metav1.NewTime(now.Add(time.Minute)), want: now},
		{name: "created before dev's soak was over", dev: soakingFor(10 * time.Minute), created: ago(5 * time.Minute),
			with: metSince(ago(8 * time.Minute)), want: now},
		{name: "created once dev's soak was over", dev: soakingFor(10 * time.Minute), created: ago(5 * time.Minute),
			with: metSince(ago(20 * time.Minute)), want: ago(5 * time.Minute)},
		{name: "suspended since, resumed now: test starts now", created: ago(5 * time.Minute), with: resumedAfter(4 * time.Minute), want: now},
		{name: "recorded past test's deadline: Stalled, with a Warning", created: ago(40 * time.Minute), want: ago(40 * time.Minute), stalled: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dev := tt.dev
			if dev.Name == "" {
				dev = stage("dev")
			}
			f := at("dev", dev, deadlined("test", seedCondition, 30*time.Minute), stage("prod")).bound().reporting(deployment, "1").
				with(withNextBP(func(p *v1alpha1.StagedBindingPolicy) *ksv1alpha1.BindingPolicy {
					bp := handedOverBP(p, earlier)
					bp.CreationTimestamp = tt.created
					return bp
				}))
			if tt.with != nil {
				f = f.with(tt.with)
			}
			got := Plan(f.Snapshot, engine)
			if got.Type != ActionUpdateStatus || got.Status.ActiveStage != "test" {
				t.Fatalf("Plan() = %s (%s), want the advance recorded", got.Type, got.Why)
			}
			devRecord, test := got.Status.Stages[0], got.Status.Stages[1]
			if !timeEqual(devRecord.CompletionTime, tt.want) || !timeEqual(test.StartTime, tt.want) {
				t.Errorf("dev completed %v and test started %v, want both at %v", devRecord.CompletionTime, test.StartTime, tt.want)
			}
			if !timeEqual(test.ProgressDeadlineTime, metav1.NewTime(tt.want.Add(30*time.Minute))) {
				t.Errorf("test's progressDeadlineTime %v, want 30m after %v", test.ProgressDeadlineTime, tt.want)
			}
			warned := slices.ContainsFunc(got.Events, func(e Event) bool { return e.Reason == v1alpha1.ReasonProgressDeadlineExceeded })
			if stalled := got.Status.Phase == v1alpha1.RolloutStalled; stalled != tt.stalled || warned != tt.stalled {
				t.Errorf("phase %s, Warning %v (events %v), want stalled and warned: %v", got.Status.Phase, warned, got.Events, tt.stalled)
			}
		})
	}
}

// ptrDuration is the duration d points to, or zero.
func ptrDuration(d *metav1.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.Duration
}
