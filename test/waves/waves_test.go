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
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/sharder"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/controller/sharding"
	"github.com/kubestellar/workload-stager/internal/wave"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/shardaudit"
)

// TestWaveRollsRevisionsOutStepByStep runs policy web through a wave of
// three steps, wds1 → wds2 → wds3, for v1 and then v2. Each space's first
// stage is opened by the test only once the space has started: while a
// space rolls a revision out, every later space stays Pending (v1) or on
// the previous revision (v2), WaitingForWave naming the space it waits
// for, with nothing of the revision placed; a space starts only once the
// one before completed. No later space placed a revision before every
// earlier one completed it (the recorded order), and each held space was
// told once it was released (a WaveReleased Event per revision).
func TestWaveRollsRevisionsOutStepByStep(t *testing.T) {
	wds1, wds2, wds3 := suite.spaces[0], suite.spaces[1], suite.spaces[2]
	r := newRun(t, "web", []*space{wds1}, []*space{wds2}, []*space{wds3})
	r.startStager("stager-steps")
	r.createWave()
	r.createPolicies(nil)

	for i, rev := range []string{"v1", "v2"} {
		running := ""
		phase := v1alpha1.RolloutPending
		if i > 0 {
			running, phase = "v1", v1alpha1.RolloutCompleted
			r.setRevision(rev, wds1, wds2, wds3)
		}
		r.waitStarted(wds1, rev)
		r.staysHeld(fmt.Sprintf("wds2 and wds3 to wait for wds1's %s", rev), func() error {
			if err := r.held(wds2, rev, wave.ReasonWaitingForEarlierSteps, phase, running, "step 2/3", "wds1 (Progressing "+rev+")")(); err != nil {
				return err
			}
			return r.held(wds3, rev, wave.ReasonWaitingForEarlierSteps, phase, running, "step 3/3", "2 of 2 earlier spaces", "wds1 (Progressing "+rev+")")()
		})
		wds1.openDev(r.policy, rev)
		r.waitCompleted(rev, wds1)

		r.waitStarted(wds2, rev)
		r.staysHeld(fmt.Sprintf("wds3 to wait for wds2's %s", rev),
			r.held(wds3, rev, wave.ReasonWaitingForEarlierSteps, phase, running, "1 of 2 earlier spaces", "wds2 (Progressing "+rev+")"))
		wds2.openDev(r.policy, rev)
		r.waitCompleted(rev, wds2)

		r.waitStarted(wds3, rev)
		wds3.openDev(r.policy, rev)
		r.waitCompleted(rev, wds3)
		for _, s := range []*space{wds1, wds2, wds3} {
			environment.Eventually(t, wait, s.Name+" to be held no more", r.notHeld(s))
		}
		r.checkOrder(rev)
	}

	for _, s := range []*space{wds2, wds3} {
		for _, rev := range []string{"v1", "v2"} {
			environment.Eventually(t, wait, fmt.Sprintf("%s's WaveReleased Event of %s", s.Name, rev), func() error {
				if n := r.events(s, v1alpha1.EventReasonWaveReleased, fmt.Sprintf("released revision %q", rev)); n != 1 {
					return fmt.Errorf("%d WaveReleased Events of %s", n, rev)
				}
				return nil
			})
		}
	}
	if n := r.events(wds1, v1alpha1.EventReasonWaitingForWave, "") + r.events(wds1, v1alpha1.EventReasonWaveReleased, ""); n != 0 {
		t.Errorf("wds1, of the first step, got %d wave Events", n)
	}
	w := r.getWave()
	for _, s := range []*space{wds1, wds2, wds3} {
		e := entryOf(w, s.Name)
		if e == nil || !e.Engaged || len(e.Policies) != 1 || e.Policies[0].Phase != string(v1alpha1.RolloutCompleted) ||
			e.Policies[0].CurrentRevision != "v2" || e.Policies[0].CompletedTime == nil {
			t.Errorf("%s's report is not web Completed at v2: %s", s.Name, describeWave(w))
		}
	}
}

// TestWaveHoldsTheLastStepForARevisionTheMiddleGaveUp runs policy shop
// through wds1 → wds2 → wds3 (its stages fail when a WEC reports the
// workload unavailable, onFailure Abort): v1 goes through all three; v2
// completes in wds1 and fails in wds2, which aborts back to v1. wds3 never
// starts v2 — WaitingForWave (EarlierStepFailed) names wds2's failure,
// with a WaveRevisionGivenUp Warning — and keeps running v1, never rolled
// back; wds1 stays Completed at v2, untouched.
func TestWaveHoldsTheLastStepForARevisionTheMiddleGaveUp(t *testing.T) {
	wds1, wds2, wds3 := suite.spaces[0], suite.spaces[1], suite.spaces[2]
	r := newRun(t, "shop", []*space{wds1}, []*space{wds2}, []*space{wds3})
	for _, s := range []*space{wds1, wds2, wds3} {
		s.openDev(r.policy, "v1")
	}
	wds1.openDev(r.policy, "v2")
	wds3.openDev(r.policy, "v2")
	r.startStager("stager-failure")
	r.createWave()
	r.createPolicies(func(s *v1alpha1.Stage) {
		if s.Name == "dev" {
			s.FailureCondition, s.OnFailure = unavailable, v1alpha1.FailureAction("Abort")
		}
	})
	r.waitCompleted("v1", wds1, wds2, wds3)

	r.setRevision("v2", wds1, wds2, wds3)
	r.waitCompleted("v2", wds1)
	r.ps(wds2).WaitFor(t, r.policy, "to give v2 up", func(p *v1alpha1.StagedBindingPolicy) bool {
		return p.Status.Phase == v1alpha1.RolloutAborted && p.Status.UpdateRevision == "v2"
	})
	heldForGood := r.held(wds3, "v2", wave.ReasonEarlierStepFailed, v1alpha1.RolloutCompleted, "v1", "wds2 (Aborted v2)", "given up")
	environment.Eventually(t, wait, "wds3 to hold v2, which wds2 gave up", heldForGood)
	// What wds3 runs of v1 once held: its last stage's placement, which
	// it keeps (never rolled back).
	v1Placed, err := r.placed(wds3, "v1")
	if err != nil || !slices.Contains(v1Placed, stagePlacement(r.policy, "prod", "v1")) {
		t.Fatalf("wds3 does not run v1 in prod while held: %v (%v)", v1Placed, err)
	}
	environment.Consistently(t, hold, "wds3 to hold v2 and keep v1, and wds1 to stay at v2", func() error {
		if err := heldForGood(); err != nil {
			return err
		}
		got, err := r.placed(wds3, "v1")
		if err != nil {
			return err
		}
		if !slices.Equal(got, v1Placed) {
			return fmt.Errorf("wds3's placement of v1 changed from %v to %v", v1Placed, got)
		}
		if err := r.completed(wds1, "v2")(); err != nil {
			return err
		}
		return r.notHeld(wds1)()
	})
	w := r.getWave()
	if e := entryOf(w, wds2.Name); e == nil || len(e.Policies) != 1 || !slices.Contains(e.Policies[0].FailedRevisions, "v2") {
		t.Errorf("wds2's report does not give v2 up: %s", describeWave(w))
	}
	environment.Eventually(t, wait, "wds3's WaveRevisionGivenUp Event", func() error {
		if n := r.events(wds3, v1alpha1.EventReasonWaveRevisionGivenUp, "revision v2 was given up in an earlier step, in wds2"); n != 1 {
			return fmt.Errorf("%d WaveRevisionGivenUp Events of v2", n)
		}
		return nil
	})
	r.checkOrder("v1", "v2")
	if _, ok := r.rec.placedAt(wds3.Name, "v2"); ok {
		t.Errorf("wds3 placed v2, which wds2 gave up")
	}
}

// TestWaveHoldsWhileAnEarlierSpaceIsDown runs policy api through wds1 →
// wds2 and stops wds1's kube-apiserver while wds1 rolls v1 out: wds2's
// WaitingForWave turns from waiting for wds1 to wds1 being down
// (EarlierSpaceNotReporting, "disengaged") and stays held through the
// outage; once wds1's API server is back and wds1 has completed v1, wds2
// starts it, and not before.
func TestWaveHoldsWhileAnEarlierSpaceIsDown(t *testing.T) {
	wds1, wds2 := suite.spaces[0], suite.spaces[1]
	r := newRun(t, "api", []*space{wds1}, []*space{wds2})
	wds2.openDev(r.policy, "v1")
	r.startStager("stager-outage")
	r.createWave()
	r.createPolicies(nil)
	r.waitStarted(wds1, "v1")
	r.staysHeld("wds2 to wait for wds1", r.held(wds2, "v1", wave.ReasonWaitingForEarlierSteps, v1alpha1.RolloutPending, "", "wds1 (Progressing v1)"))

	stopped := true
	if err := wds1.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if stopped {
			_ = wds1.StartAPIServer(suite.ctx)
		}
	})
	r.staysHeld("wds2 to hold while wds1 is down", r.held(wds2, "v1", wave.ReasonEarlierSpaceDown, v1alpha1.RolloutPending, "", "wds1 (disengaged)"))
	// wds1's WECs turn healthy during the outage; the simulator reports it
	// once the API server is back.
	wds1.availability.SetAvailable(stagePlacement(r.policy, "dev", "v1"), true)
	if err := wds1.StartAPIServer(suite.ctx); err != nil {
		t.Fatal(err)
	}
	stopped = false
	wds1.sim.Resync()
	r.waitCompleted("v1", wds1, wds2)
	r.checkOrder("v1")
}

// TestWaveResumesAfterTheStagerIsKilled runs policy cart through wds1 →
// wds2, SIGKILLs the stager while wds1 rolls v1 out and wds2 waits, lets
// wds1's WECs turn healthy while no stager runs, and starts it again:
// wds2, watched throughout, places nothing of v1 until wds1 has completed
// it, and the wave then completes.
func TestWaveResumesAfterTheStagerIsKilled(t *testing.T) {
	wds1, wds2 := suite.spaces[0], suite.spaces[1]
	r := newRun(t, "cart", []*space{wds1}, []*space{wds2})
	wds2.openDev(r.policy, "v1")
	stager := r.startStager("stager-killed")
	r.createWave()
	r.createPolicies(nil)
	r.waitStarted(wds1, "v1")
	r.staysHeld("wds2 to wait for wds1", r.held(wds2, "v1", wave.ReasonWaitingForEarlierSteps, v1alpha1.RolloutPending, "", "wds1 (Progressing v1)"))

	if err := stager.Kill(); err != nil {
		t.Fatal(err)
	}
	wds1.openDev(r.policy, "v1")
	r.startStager("stager-restarted")
	r.waitCompleted("v1", wds1, wds2)
	r.checkOrder("v1")
}

// TestWaveAcrossShardedReplicas runs two replicas with
// --coordination=sharded whose names put wds1 and wds2 on different
// replicas (checked on their fence Leases), and policy mail through wds1 →
// wds2: wds2's replica, which never serves wds1, holds wds2 while wds1
// rolls v1 out and releases it once wds1 completed it, reading only what
// the other replica reported into the wave; every write to a space comes
// from the holder of its fence.
func TestWaveAcrossShardedReplicas(t *testing.T) {
	wds1, wds2 := suite.spaces[0], suite.spaces[1]
	ids, owners := replicasApart(t, wds1.Name, wds2.Name)
	r := newRun(t, "mail", []*space{wds1}, []*space{wds2})
	audit := shardaudit.New()
	watchFences(r, audit)
	began := time.Now()
	for _, id := range ids {
		r.procs = append(r.procs, startReplica(t, id))
	}
	environment.Eventually(t, wait, fmt.Sprintf("wds1 and wds2 to be held by %v", owners), func() error {
		for _, s := range []*space{wds1, wds2} {
			if h := audit.Holder(s.Name); h != owners[s.Name] {
				return fmt.Errorf("%s's fence is held by %q", s.Name, h)
			}
		}
		return nil
	})
	r.audit.Store(audit)
	wds2.openDev(r.policy, "v1")
	r.createWave()
	r.createPolicies(nil)
	r.waitStarted(wds1, "v1")
	r.staysHeld("wds2 to wait for wds1, served by another replica",
		r.held(wds2, "v1", wave.ReasonWaitingForEarlierSteps, v1alpha1.RolloutPending, "", "wds1 (Progressing v1)"))
	wds1.openDev(r.policy, "v1")
	r.waitCompleted("v1", wds1, wds2)
	r.checkOrder("v1")
	for _, s := range []*space{wds1, wds2} {
		if h := audit.Holder(s.Name); h != owners[s.Name] {
			t.Errorf("%s moved to %q during the wave; the test needs it on %q", s.Name, h, owners[s.Name])
		}
	}
	audited, problems := audit.Check([]string{"dev", "prod"}, began, func(replica string) bool { return slices.Contains(ids, replica) })
	for _, p := range problems {
		t.Error(p)
	}
	if audited == 0 {
		t.Error("no write of the replicas was audited")
	}
}

// replicasApart returns the names of two replicas of which the sharding
// hash gives space a to one and space b to the other, and the owner of
// each: the first pair of r<n>a, r<n>b that does.
func replicasApart(t *testing.T, a, b string) ([]string, map[string]string) {
	t.Helper()
	for n := 1; n <= 64; n++ {
		ids := []string{fmt.Sprintf("r%da", n), fmt.Sprintf("r%db", n)}
		peers := []sharder.PeerInfo{{ID: ids[0], Weight: 1}, {ID: ids[1], Weight: 1}}
		owners := map[string]string{}
		for _, s := range []string{a, b} {
			for _, p := range peers {
				if (sharding.SlotRendezvous{}).ShouldOwn(shardaudit.FenceOf(s), peers, p) {
					owners[s] = p.ID
				}
			}
		}
		if owners[a] != "" && owners[b] != "" && owners[a] != owners[b] {
			return ids, owners
		}
	}
	t.Fatalf("no pair of replica names puts %s and %s apart", a, b)
	return nil, nil
}

// watchFences records every holder of the spaces' fence Leases.
func watchFences(r *run, a *shardaudit.Audit) {
	r.t.Helper()
	wc, err := client.NewWithWatch(suite.hosting.Config, client.Options{Scheme: suite.hosting.Client.Scheme()})
	if err != nil {
		r.t.Fatal(err)
	}
	opened := shardaudit.WatchForever(r.ctx, &r.running, r.t.Logf, "the fence Leases", func(ctx context.Context) (watch.Interface, error) {
		return wc.Watch(ctx, &coordinationv1.LeaseList{}, client.InNamespace(secretNamespace))
	}, a.RecordLease)
	awaitOpened(r.t, opened, "the fence Leases")
}

// awaitOpened waits until a watch is open.
func awaitOpened(t *testing.T, opened <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-opened:
	case <-time.After(wait):
		t.Fatalf("the watch of %s did not open", what)
	}
}
