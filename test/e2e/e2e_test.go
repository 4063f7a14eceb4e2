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

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

// TestSeedPolicy applies the seed's policy verbatim, with each root: it stays
// in dev while the dev WECs do not report nginx available, moves to prod
// once they do, and ends with only the prod BindingPolicy, whose Binding
// places nginx on exactly the prod clusters.
func TestSeedPolicy(t *testing.T) {
	const space = "wds1"
	createWorkload(t, space, "nginx", false)
	// testdata holds the seed documents' StagedBindingPolicy, verbatim: 000
	// writes the condition with root obj, 001 with root combinedStatus.
	for _, tt := range []struct{ root, file string }{{"obj", "seed-000-obj.yaml"}, {"combinedStatus", "seed-001-combinedstatus.yaml"}} {
		t.Run(tt.root, func(t *testing.T) {
			manifest, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			policy := &v1alpha1.StagedBindingPolicy{}
			if err := yaml.UnmarshalStrict(manifest, policy); err != nil {
				t.Fatalf("parsing the seed: %v", err)
			}
			name := policy.Name
			suite.stack.WECs.Reset()
			if err := wds(space).Create(suite.ctx, policy); err != nil {
				t.Fatalf("creating the seed policy: %v", err)
			}
			t.Cleanup(func() { policies(space).Delete(t, name) })

			policies(space).WaitForActiveStage(t, name, "dev")
			waitForOnlyBindingPolicy(t, space, name, "dev", "dev1", "dev2")
			// KubeStellar turns WorkStatuses into CombinedStatuses every ~5s:
			// give it time to report the unavailable Deployment, and check
			// that the policy waits.
			environment.Eventually(t, timeout, "the condition to be evaluated false", func() error {
				p := policies(space).Get(t, name)
				if p.Status.Stages[0].Message == "" || p.Status.Conditions == nil {
					return fmt.Errorf("%s", policytest.Describe(p))
				}
				for _, c := range p.Status.Conditions {
					if c.Type == v1alpha1.ConditionProgressing && c.Reason == v1alpha1.ReasonConditionNotMet {
						return nil
					}
				}
				return fmt.Errorf("%s", policytest.Describe(p))
			})
			stays(t, policies(space), name, "dev", 8*time.Second)

			makeAvailable(space, name, "dev")
			policies(space).WaitForActiveStage(t, name, "prod")
			p := policies(space).WaitForPhase(t, name, v1alpha1.RolloutCompleted)
			waitForOnlyBindingPolicy(t, space, name, "prod", "prod1", "prod2")
			if dev := p.Status.Stages[0]; dev.Phase != v1alpha1.StageSucceeded || dev.CompletionTime == nil {
				t.Fatalf("dev record = %+v", dev)
			}
		})
	}
}

// TestThreeStagesWithFilter rolls a Deployment and a ConfigMap through dev,
// test and prod; the filter keeps the ConfigMap, which reports no
// availability, out of the conditions.
func TestThreeStagesWithFilter(t *testing.T) {
	const space, name = "wds1", "web"
	createWorkload(t, space, name, true)
	policy := policytest.ThreeStages(name, name)
	if err := wds(space).Create(suite.ctx, policy); err != nil {
		t.Fatalf("creating the policy: %v", err)
	}
	t.Cleanup(func() { policies(space).Delete(t, name) })

	policies(space).WaitForActiveStage(t, name, "dev")
	waitForOnlyBindingPolicy(t, space, name, "dev", "dev1", "dev2")
	makeAvailable(space, name, "dev")
	policies(space).WaitForActiveStage(t, name, "test")
	waitForOnlyBindingPolicy(t, space, name, "test", "test1")
	makeAvailable(space, name, "test")
	policies(space).WaitForPhase(t, name, v1alpha1.RolloutCompleted)
	waitForOnlyBindingPolicy(t, space, name, "prod", "prod1", "prod2")
}

// TestTwoSpaces adds a second WDS, with its own KubeStellar controller-manager,
// while the stager runs: the stager engages it, and the two rollouts move
// independently, each at the pace of its own WECs.
func TestTwoSpaces(t *testing.T) {
	const name = "shop"
	ensureWDS2(t)
	for _, space := range []string{"wds1", "wds2"} {
		createWorkload(t, space, name, false)
		if err := wds(space).Create(suite.ctx, policytest.ThreeStages(name, name)); err != nil {
			t.Fatalf("creating the policy in %s: %v", space, err)
		}
		policies(space).WaitForActiveStage(t, name, "dev")
	}
	t.Cleanup(func() {
		policies("wds1").Delete(t, name)
		policies("wds2").Delete(t, name)
	})

	// Only wds2's dev WECs turn healthy.
	makeAvailable("wds2", name, "dev")
	policies("wds2").WaitForActiveStage(t, name, "test")
	stays(t, policies("wds1"), name, "dev", 6*time.Second)

	makeAvailable("wds1", name, "dev")
	makeAvailable("wds1", name, "test")
	policies("wds1").WaitForPhase(t, name, v1alpha1.RolloutCompleted)
	waitForOnlyBindingPolicy(t, "wds1", name, "prod", "prod1", "prod2")
	if p := policies("wds2").Get(t, name); p.Status.ActiveStage != "test" {
		t.Fatalf("wds2 moved on without its test WECs: %s", policytest.Describe(p))
	}
	makeAvailable("wds2", name, "test")
	policies("wds2").WaitForPhase(t, name, v1alpha1.RolloutCompleted)
	waitForOnlyBindingPolicy(t, "wds2", name, "prod", "prod1", "prod2")
}

// TestKilledStagerResumes kills the stager with SIGKILL in the middle of a
// rollout and starts it again: it resumes from the recorded stage, and no
// stage is started or completed twice.
func TestKilledStagerResumes(t *testing.T) {
	const space, name = "wds1", "resume"
	startRollout(t, name, nil)
	makeAvailable(space, name, "dev")
	before := policies(space).WaitForActiveStage(t, name, "test")
	devDone := before.Status.Stages[0].CompletionTime
	// A process killed before it has recorded its Events as posted posts
	// them again once restarted (at least once, docs/proposals/announcements.md).
	// Kill it once test's is out and recorded as posted, so that the
	// counts below show any Event posted twice without a cause.
	environment.Eventually(t, timeout, "the StageStarted Event of test, recorded as posted", func() error {
		if n := policies(space).EventCounts(t, before)[`StageStarted/stage "test" started`]; n != 1 {
			return fmt.Errorf("%d", n)
		}
		if pending := policies(space).Get(t, name).Status.PendingEvents; len(pending) > 0 {
			return fmt.Errorf("%d Events still pending: %+v", len(pending), pending)
		}
		return nil
	})

	if err := suite.stager.Kill(); err != nil {
		t.Fatalf("killing the stager: %v", err)
	}
	makeAvailable(space, name, "test")
	stays(t, policies(space), name, "test", 8*time.Second) // nothing moves while the stager is down

	restarted, err := startStager()
	if err != nil {
		t.Fatalf("restarting the stager: %v", err)
	}
	suite.stager = restarted

	p := policies(space).WaitForPhase(t, name, v1alpha1.RolloutCompleted)
	waitForOnlyBindingPolicy(t, space, name, "prod", "prod1", "prod2")
	if got := p.Status.Stages[0].CompletionTime; !got.Equal(devDone) {
		t.Fatalf("dev's completion time changed across the restart: %v, was %v", got, devDone)
	}
	environment.Eventually(t, timeout, "one StageStarted Event per stage and two StageSucceeded", func() error {
		counts := policies(space).EventCounts(t, p)
		for _, stage := range []string{"dev", "test", "prod"} {
			if n := counts[fmt.Sprintf("StageStarted/stage %q started", stage)]; n != 1 {
				return fmt.Errorf("%d StageStarted for %s: %v", n, stage, counts)
			}
		}
		succeeded := 0
		for k, n := range counts {
			if strings.HasPrefix(k, "StageSucceeded/") {
				succeeded += n
			}
		}
		if succeeded != 2 {
			return fmt.Errorf("%d StageSucceeded: %v", succeeded, counts)
		}
		return nil
	})
}

// TestSuspendAndResume suspends a rollout in its first stage, with the real
// KubeStellar controller-manager: while suspended, the stage's WECs turning
// healthy starts no next stage and the phase says Suspended; resumed, the
// rollout goes on from where it stopped and completes.
func TestSuspendAndResume(t *testing.T) {
	const space, name = "wds1", "suspended"
	startRollout(t, name, nil)
	waitForOnlyBindingPolicy(t, space, name, "dev", "dev1", "dev2")

	setSuspend(t, name, true)
	policies(space).WaitForPhase(t, name, v1alpha1.RolloutSuspended)
	makeAvailable(space, name, "dev")
	stays(t, policies(space), name, "dev", 8*time.Second) // KubeStellar reports the Deployment available meanwhile
	if p := policies(space).Get(t, name); p.Status.Phase != v1alpha1.RolloutSuspended {
		t.Fatalf("not suspended any more: %s", policytest.Describe(p))
	}
	waitForOnlyBindingPolicy(t, space, name, "dev", "dev1", "dev2") // placement stays as it was

	setSuspend(t, name, false)
	policies(space).WaitForActiveStage(t, name, "test")
	makeAvailable(space, name, "test")
	policies(space).WaitForPhase(t, name, v1alpha1.RolloutCompleted)
	counts := policies(space).EventCounts(t, policies(space).Get(t, name))
	for _, reason := range []string{v1alpha1.EventReasonSuspended, v1alpha1.EventReasonResumed} {
		if policytest.EventsWithReason(counts, reason) == 0 {
			t.Errorf("no %s Event; Events: %v", reason, counts)
		}
	}
}

// setSuspend sets a policy's spec.suspend.
func setSuspend(t *testing.T, name string, suspend bool) {
	const space = "wds1"
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := policies(space).Get(t, name)
		p.Spec.Suspend = suspend
		return wds(space).Update(suite.ctx, p)
	})
	if err != nil {
		t.Fatalf("setting spec.suspend=%t on %s/%s: %v", suspend, space, name, err)
	}
}

// TestRestart restarts a completed rollout with the restartedAt annotation,
// with the real KubeStellar controller-manager: the rollout starts again in
// dev and completes again, ending with prod's BindingPolicy alone; the same
// value set again restarts nothing (one RolloutRestarted Event). Plan's table
// test checks that prod's BindingPolicy stays until dev's is placed.
func TestRestart(t *testing.T) {
	const space, name = "wds1", "restarted"
	startRollout(t, name, nil)
	makeAvailable(space, name, "dev")
	policies(space).WaitForActiveStage(t, name, "test")
	makeAvailable(space, name, "test")
	policies(space).WaitForPhase(t, name, v1alpha1.RolloutCompleted)
	waitForOnlyBindingPolicy(t, space, name, "prod", "prod1", "prod2")

	const value = "2026-11-23T14:00:00Z"
	annotate := func() {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p := policies(space).Get(t, name)
			p.Annotations = map[string]string{v1alpha1.RestartedAtAnnotation: value}
			return wds(space).Update(suite.ctx, p)
		})
		if err != nil {
			t.Fatalf("annotating %s: %v", name, err)
		}
	}
	annotate()
	p := policies(space).WaitFor(t, name, "to restart in dev", func(p *v1alpha1.StagedBindingPolicy) bool {
		return p.Status.RestartedAt == value && p.Status.ActiveStage == "dev"
	})
	if p.Status.Phase == v1alpha1.RolloutCompleted {
		t.Fatalf("restarted but still Completed: %s", policytest.Describe(p))
	}
	// dev's WECs still report the workload available: the rollout goes
	// through again, and ends with prod's BindingPolicy alone.
	policies(space).WaitForPhase(t, name, v1alpha1.RolloutCompleted)
	waitForOnlyBindingPolicy(t, space, name, "prod", "prod1", "prod2")
	annotate() // the same value: nothing happens
	stays(t, policies(space), name, "prod", 6*time.Second)
	counts := policies(space).EventCounts(t, policies(space).Get(t, name))
	if restarts := policytest.EventsWithReason(counts, v1alpha1.EventReasonRestarted); restarts != 1 {
		t.Errorf("%d RolloutRestarted Events, want 1: %v", restarts, counts)
	}
}

// TestSoakRestartsWhenTheConditionFlips gives dev a soakDuration, with the
// real KubeStellar controller-manager: the condition holding starts the
// clock; the workload turning unavailable clears it, and dev does not end;
// available again, dev ends only once the condition has held for the whole
// soakDuration since then.
func TestSoakRestartsWhenTheConditionFlips(t *testing.T) {
	const space, name, soak = "wds1", "soaked", 15 * time.Second
	startRollout(t, name, func(p *v1alpha1.StagedBindingPolicy) {
		p.Spec.Stages[0].SoakDuration = &metav1.Duration{Duration: soak}
	})
	devAvailable := func(replicas int32) {
		suite.stack.WECs.SetAvailable(stack.Match{WDS: space, BindingPolicy: v1alpha1.StagePlacement(name, "dev").String(), Resource: "deployments"}, replicas)
		suite.stack.WECs.Resync()
	}
	metSince := func(p *v1alpha1.StagedBindingPolicy) *metav1.Time {
		for _, r := range p.Status.Stages {
			if r.Name == "dev" {
				return r.ConditionMetTime
			}
		}
		return nil
	}

	devAvailable(1)
	first := metSince(policies(space).WaitFor(t, name, "to soak in dev", func(p *v1alpha1.StagedBindingPolicy) bool { return metSince(p) != nil }))
	devAvailable(0)
	policies(space).WaitFor(t, name, "the soak clock cleared", func(p *v1alpha1.StagedBindingPolicy) bool { return metSince(p) == nil })
	if p := policies(space).Get(t, name); p.Status.ActiveStage != "dev" {
		t.Fatalf("dev ended though its condition stopped holding during the soak (first held at %s): %s", first, policytest.Describe(p))
	}

	devAvailable(1)
	second := metSince(policies(space).WaitFor(t, name, "to soak in dev again", func(p *v1alpha1.StagedBindingPolicy) bool { return metSince(p) != nil }))
	if !second.After(first.Time) {
		t.Errorf("the clock did not restart: it held at %s, then at %s", first, second)
	}
	p := policies(space).WaitForActiveStage(t, name, "test")
	if done := p.Status.Stages[0].CompletionTime; done == nil || done.Sub(second.Time) < soak {
		t.Errorf("dev ended at %v, less than %s after its condition held again at %s", done, soak, second)
	}
}

// TestAccumulatePlacement rolls out with spec.placement Accumulate, with the
// real KubeStellar controller-manager: each stage's placement stays as the
// next starts, so the end state places the workload on every stage's
// clusters.
func TestAccumulatePlacement(t *testing.T) {
	const space, name = "wds1", "accumulated"
	startRollout(t, name, func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Placement = v1alpha1.PlacementAccumulate })
	makeAvailable(space, name, "dev")
	policies(space).WaitForActiveStage(t, name, "test")
	waitForPlacement(t, space, name, map[string][]string{"dev": {"dev1", "dev2"}, "test": {"test1"}})
	makeAvailable(space, name, "test")
	policies(space).WaitForPhase(t, name, v1alpha1.RolloutCompleted)
	waitForPlacement(t, space, name, map[string][]string{"dev": {"dev1", "dev2"}, "test": {"test1"}, "prod": {"prod1", "prod2"}})
}

// TestRestartedStagerKeepsTheSoakDeadline stops the stager while dev soaks,
// as a rolling upgrade does (it releases its Lease), and starts it again
// half a soak later: the soak's clock is in the status, so the restarted
// stager keeps conditionMetTime and ends dev at the same deadline, not a
// soakDuration after its own start.
func TestRestartedStagerKeepsTheSoakDeadline(t *testing.T) {
	const space, name, soak = "wds1", "soak-resume", 20 * time.Second
	startRollout(t, name, func(p *v1alpha1.StagedBindingPolicy) {
		p.Spec.Stages[0].SoakDuration = &metav1.Duration{Duration: soak}
	})
	makeAvailable(space, name, "dev")
	soaking := policies(space).WaitFor(t, name, "to soak in dev", func(p *v1alpha1.StagedBindingPolicy) bool {
		return p.Status.Stages[0].ConditionMetTime != nil
	})
	met := soaking.Status.Stages[0].ConditionMetTime

	if err := suite.stager.Stop(); err != nil {
		t.Fatalf("stopping the stager: %v", err)
	}
	// Half the soak passes while the stager is down: a deadline kept in
	// memory would end dev a whole soakDuration after the restart, 10s late.
	time.Sleep(time.Until(met.Add(soak / 2)))
	restartedAt := time.Now()
	restarted, err := startStager()
	if err != nil {
		t.Fatalf("restarting the stager: %v", err)
	}
	suite.stager = restarted

	p := policies(space).WaitForActiveStage(t, name, "test")
	if got := p.Status.Stages[0].ConditionMetTime; got == nil || !got.Equal(met) {
		t.Errorf("conditionMetTime changed across the restart: %v, was %v", got, met)
	}
	done := p.Status.Stages[0].CompletionTime
	if done == nil || done.Sub(met.Time) < soak {
		t.Fatalf("dev ended at %v, less than %s after its condition held at %s", done, soak, met)
	}
	// The restarted stager needs a few seconds to sync its caches: allow
	// half of the 10s a lost deadline would cost.
	if late := done.Sub(restartedAt.Add(soak)); late > -soak/4 {
		t.Errorf("dev ended at %s, a whole soakDuration after the restart at %s: the deadline did not survive it (held since %s)",
			done, restartedAt.Format(time.RFC3339), met)
	}
}

// TestProgressDeadlineStallsAndRecovers gives dev a progressDeadline and
// suspends the rollout for longer than that right after dev starts, with
// the real KubeStellar controller-manager: the time suspended does not
// count, so dev stalls only a deadline after it started plus the time
// suspended, with a Warning Event; once dev's WECs turn healthy the rollout
// goes on by itself.
func TestProgressDeadlineStallsAndRecovers(t *testing.T) {
	const space, name = "wds1", "deadline"
	const deadline, pause = 10 * time.Second, 15 * time.Second
	startRollout(t, name, func(p *v1alpha1.StagedBindingPolicy) {
		p.Spec.Stages[0].ProgressDeadline = &metav1.Duration{Duration: deadline}
	})
	setSuspend(t, name, true)
	policies(space).WaitForPhase(t, name, v1alpha1.RolloutSuspended)
	stays(t, policies(space), name, "dev", pause)
	setSuspend(t, name, false)

	dev := func(p *v1alpha1.StagedBindingPolicy) v1alpha1.StageStatus { return p.Status.Stages[0] }
	p := policies(space).WaitFor(t, name, "to resume with the suspension recorded", func(p *v1alpha1.StagedBindingPolicy) bool {
		return p.Status.SuspendedTime == nil && dev(p).SuspendedDuration != nil && dev(p).ProgressDeadlineTime != nil
	})
	record := dev(p)
	if record.SuspendedDuration.Duration < pause {
		t.Errorf("suspendedDuration %s, want at least the %s the rollout was suspended", record.SuspendedDuration.Duration, pause)
	}
	want := record.StartTime.Add(deadline + record.SuspendedDuration.Duration)
	if !record.ProgressDeadlineTime.Time.Equal(want) {
		t.Errorf("progressDeadlineTime %s, want startTime + %s + suspendedDuration = %s", record.ProgressDeadlineTime, deadline, want)
	}

	p = policies(space).WaitForPhase(t, name, v1alpha1.RolloutStalled)
	stalledAt := time.Now()
	if stalledAt.Before(want) {
		t.Errorf("stalled at %s, before its deadline %s", stalledAt, want)
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionProgressing); c == nil ||
		c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonProgressDeadlineExceeded {
		t.Errorf("Progressing %v, want False ProgressDeadlineExceeded", c)
	}
	// Events are recorded in the background: wait for it, then for no second one.
	environment.Eventually(t, timeout, "the ProgressDeadlineExceeded Event", func() error {
		if counts := policies(space).EventCounts(t, p); policytest.EventsWithReason(counts, v1alpha1.ReasonProgressDeadlineExceeded) == 0 {
			return fmt.Errorf("none yet; Events: %v", counts)
		}
		return nil
	})
	environment.Consistently(t, 3*time.Second, "one ProgressDeadlineExceeded Event", func() error {
		if counts := policies(space).EventCounts(t, p); policytest.EventsWithReason(counts, v1alpha1.ReasonProgressDeadlineExceeded) != 1 {
			return fmt.Errorf("Events: %v", counts)
		}
		return nil
	})

	makeAvailable(space, name, "dev")
	p = policies(space).WaitForActiveStage(t, name, "test")
	if p.Status.Phase != v1alpha1.RolloutProgressing {
		t.Errorf("after dev's condition held: %s, want Progressing", policytest.Describe(p))
	}
}
