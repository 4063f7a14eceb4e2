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

package stagedbindingpolicy

import (
	"context"
	"errors"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/wave"
)

// fakeWaves answers every Decision with decision or err, and records what
// it was asked.
type fakeWaves struct {
	decision wave.Decision
	err      error
	asked    []string // "space policy revision now"
}

func (f *fakeWaves) Decision(_ context.Context, space, policy, revision string, now time.Time) (wave.Decision, error) {
	f.asked = append(f.asked, space+" "+policy+" "+revision+" "+now.UTC().Format(time.RFC3339Nano))
	return f.decision, f.err
}

func (f *fakeWaves) Source(string) source.Source { return nil }

// TestSnapshotAsksTheWaves checks that a snapshot's Wave is the waves'
// decision on the policy's spec.revision at the reconciler's now, nil when
// no wave orders it or without Waves, and a held decision when the waves
// cannot be read.
func TestSnapshotAsksTheWaves(t *testing.T) {
	needsAPIServer(t)
	now := time.Date(2026, 3, 4, 5, 6, 7, 800, time.UTC)
	held := wave.Decision{Wave: "regions", StepIndex: 1, Steps: 2, Reason: wave.ReasonWaitingForEarlierSteps, Message: "waiting"}
	first := wave.Decision{Released: true, Wave: "regions", Steps: 2, Reason: wave.ReasonFirstStep}
	for _, tc := range []struct {
		name    string
		waves   *fakeWaves // nil: no Waves
		want    *wave.Decision
		wantErr bool // a held WavesUnreadable decision
	}{
		{name: "wave-none"},
		{name: "wave-not-ordered", waves: &fakeWaves{decision: wave.Decision{Released: true, StepIndex: -1, Reason: wave.ReasonNotOrdered}}},
		{name: "wave-held", waves: &fakeWaves{decision: held}, want: &held},
		{name: "wave-first-step", waves: &fakeWaves{decision: first}, want: &first},
		{name: "wave-unreadable", waves: &fakeWaves{err: errors.New("hosting cluster: connection refused")}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestReconciler(t, now)
			if tc.waves != nil {
				r.Waves = tc.waves
			}
			p := createPolicy(t, tc.name)
			p.Spec.Revision = &v1alpha1.Revision{Name: "v7"}
			if err := testSpace.Client.Update(t.Context(), p); err != nil {
				t.Fatalf("setting spec.revision: %v", err)
			}
			snap, err := r.snapshot(t.Context(), types.NamespacedName{Name: p.Name})
			if err != nil {
				t.Fatalf("snapshot: %v", err)
			}
			if tc.waves != nil {
				want := "reconciler " + p.Name + " v7 2026-03-04T05:06:07Z"
				if len(tc.waves.asked) != 1 || tc.waves.asked[0] != want {
					t.Fatalf("asked %q, want [%q]", tc.waves.asked, want)
				}
			}
			switch {
			case tc.wantErr:
				if snap.Wave == nil || snap.Wave.Released || snap.Wave.Reason != ReasonWavesUnreadable || snap.Wave.RecheckAfter <= 0 {
					t.Fatalf("Wave = %+v, want held (%s) with a recheck", snap.Wave, ReasonWavesUnreadable)
				}
			case tc.want == nil:
				if snap.Wave != nil {
					t.Fatalf("Wave = %+v, want nil", snap.Wave)
				}
			case snap.Wave == nil || *snap.Wave != *tc.want:
				t.Fatalf("Wave = %+v, want %+v", snap.Wave, tc.want)
			}
		})
	}
}

// TestReconcileHoldsTheStartWhileTheWavesCannotBeRead runs a new policy
// with spec.revision through the reconciler while its Waves fail: it is
// held Pending with WaitingForWave (WavesUnreadable), places nothing, and
// is requeued; once the waves answer that nothing orders it, it starts.
func TestReconcileHoldsTheStartWhileTheWavesCannotBeRead(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	r := newTestReconciler(t, time.Now())
	waves := &fakeWaves{err: errors.New("hosting cluster: connection refused")}
	r.Waves = waves
	p := createPolicy(t, "wave-unreadable-run")
	p.Spec.Revision = &v1alpha1.Revision{Name: "v1"}
	if err := testSpace.Client.Update(ctx, p); err != nil {
		t.Fatalf("setting spec.revision: %v", err)
	}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}}
	var result reconcile.Result
	for range 3 {
		var err error
		if result, err = r.Reconcile(ctx, req); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	got := getPolicy(t, p.Name)
	c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionWaitingForWave)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonWavesUnreadable {
		t.Fatalf("WaitingForWave = %+v, want True (%s); status %+v", c, ReasonWavesUnreadable, got.Status)
	}
	if got.Status.Phase != v1alpha1.RolloutPending || got.Status.ActiveStage != "" || got.Status.UpdateRevision != "" {
		t.Fatalf("status = %+v, want Pending with nothing started", got.Status)
	}
	if result.RequeueAfter <= 0 || result.RequeueAfter > wavesUnreadableRetry {
		t.Fatalf("result = %+v, want a requeue within %v", result, wavesUnreadableRetry)
	}
	bps := &ksv1alpha1.BindingPolicyList{}
	if err := testSpace.Client.List(ctx, bps, client.MatchingLabels{v1alpha1.PolicyLabel: p.Name}); err != nil {
		t.Fatalf("listing BindingPolicies: %v", err)
	}
	if len(bps.Items) != 0 {
		t.Fatalf("%d BindingPolicies placed while the waves could not be read", len(bps.Items))
	}

	waves.err, waves.decision = nil, wave.Decision{Released: true, StepIndex: -1, Reason: wave.ReasonNotOrdered}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	got = getPolicy(t, p.Name)
	if got.Status.UpdateRevision != "v1" || meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionWaitingForWave) != nil {
		t.Fatalf("status = %+v, want v1 started without WaitingForWave", got.Status)
	}
}
