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

package shardaudit

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	stagerapp "github.com/kubestellar/workload-stager/cmd/stager/app"
)

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// fence returns wds1's fence Lease held by replica since at.
func fence(replica string, at time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: stagerapp.ShardFenceLeasePrefix + "-" + FenceOf("wds1")},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &replica, AcquireTime: &metav1.MicroTime{Time: at}},
	}
}

// policy returns a policy written by replica at at, in its active stage.
func policy(replica string, at time.Time, stage string) *v1alpha1.StagedBindingPolicy {
	return &v1alpha1.StagedBindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "web", ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: stagerapp.FieldOwnerPrefix + replica, Time: &metav1.Time{Time: at}},
			{Manager: "kubectl", Time: &metav1.Time{Time: at}},
		}},
		Status: v1alpha1.StagedBindingPolicyStatus{ActiveStage: stage},
	}
}

func TestCheck(t *testing.T) {
	stages := []string{"dev", "test", "prod"}
	all := func(string) bool { return true }
	for _, tc := range []struct {
		name string
		// record feeds the audit: fence r1 from t0, r2 from t0+1m in wds1.
		record       func(a *Audit)
		wantAudited  int
		wantProblems []string
	}{{
		name: "writes in their writers' tenures",
		record: func(a *Audit) {
			a.RecordObject("wds1", policy("r1", t0.Add(30*time.Second), "dev"))
			a.RecordObject("wds1", policy("r2", t0.Add(90*time.Second), "test"))
		},
		wantAudited: 2,
	}, {
		name: "a write after the tenure ended",
		record: func(a *Audit) {
			a.RecordObject("wds1", policy("r1", t0.Add(2*time.Minute), "dev"))
		},
		wantAudited:  1,
		wantProblems: []string{`r1 wrote *v1alpha1.StagedBindingPolicy web in wds1 at 2026-11-27T12:02:00Z without holding its fence (holders then: ["r2"])`},
	}, {
		name: "a write to a space whose fence was never held",
		record: func(a *Audit) {
			a.RecordObject("wds2", policy("r1", t0.Add(30*time.Second), "dev"))
		},
		wantAudited:  1,
		wantProblems: []string{"without holding its fence (holders then: [])"},
	}, {
		name: "a rollout going back a stage",
		record: func(a *Audit) {
			a.RecordObject("wds1", policy("r1", t0.Add(10*time.Second), "dev"))
			a.RecordObject("wds1", policy("r1", t0.Add(20*time.Second), "test"))
			a.RecordObject("wds1", policy("r1", t0.Add(30*time.Second), "dev"))
		},
		wantAudited:  3,
		wantProblems: []string{"rollout wds1/web/ went back: active stages [dev test dev]"},
	}, {
		name: "a rollout through a stage not in the policy",
		record: func(a *Audit) {
			a.RecordObject("wds1", policy("r1", t0.Add(10*time.Second), "staging"))
		},
		wantAudited:  1,
		wantProblems: []string{`rollout wds1/web/ went through stage "staging", not one of [dev test prod]`},
	}, {
		name: "writes before the run began are left out",
		record: func(a *Audit) {
			a.RecordObject("wds1", policy("r1", t0.Add(-time.Hour), "dev"))
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			a := New()
			a.RecordLease(fence("r1", t0))
			a.RecordLease(fence("r1", t0)) // a renewal
			a.RecordLease(fence("r2", t0.Add(time.Minute)))
			tc.record(a)
			audited, problems := a.Check(stages, t0, all)
			if audited != tc.wantAudited {
				t.Errorf("%d writes audited, want %d", audited, tc.wantAudited)
			}
			if len(problems) != len(tc.wantProblems) {
				t.Fatalf("problems %v, want %d", problems, len(tc.wantProblems))
			}
			for i, p := range problems {
				if !strings.Contains(p.Error(), tc.wantProblems[i]) {
					t.Errorf("problem %q, want it to hold %q", p, tc.wantProblems[i])
				}
			}
		})
	}
}

func TestHolder(t *testing.T) {
	a := New()
	if h := a.Holder("wds1"); h != "" {
		t.Errorf("holder %q before any Lease", h)
	}
	a.RecordLease(fence("r1", t0))
	a.RecordLease(fence("", t0)) // released
	if h := a.Holder("wds1"); h != "" {
		t.Errorf("holder %q of a released fence", h)
	}
	a.RecordLease(fence("r2", t0.Add(time.Second)))
	if h := a.Holder("wds1"); h != "r2" {
		t.Errorf("holder %q, want r2", h)
	}
}

// TestReleaseSeenAfterTheNextTake: a watch may show a fence's release only
// after the next holder has taken it; the releaser's tenure ends when the
// next one began, so a write of the releaser after that is caught.
func TestReleaseSeenAfterTheNextTake(t *testing.T) {
	now := time.Now()
	a := New()
	a.RecordLease(fence("r1", now.Add(-time.Minute)))
	a.RecordLease(fence("", now.Add(-time.Minute))) // released: seen now
	a.RecordLease(fence("r2", now.Add(-20*time.Second)))
	a.RecordObject("wds1", policy("r1", now.Add(-10*time.Second), "dev"))
	audited, problems := a.Check([]string{"dev"}, now.Add(-2*time.Minute), func(string) bool { return true })
	if audited != 1 || len(problems) != 1 || !strings.Contains(problems[0].Error(), "r1 wrote") {
		t.Errorf("%d writes audited, problems %v; want r1's write after r2's take caught", audited, problems)
	}
}
