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

package v1alpha1_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
)

// newFreeze is a valid freeze: a range and a weekend schedule in Berlin,
// of prod, in two spaces.
func newFreeze(name string) *v1alpha1.RolloutFreeze {
	start := metav1.NewTime(time.Date(2026, 12, 20, 0, 0, 0, 0, time.UTC))
	return &v1alpha1.RolloutFreeze{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.RolloutFreezeSpec{
			Ranges: []v1alpha1.FreezeRange{{Start: start, End: metav1.NewTime(start.Add(13 * 24 * time.Hour))}},
			Schedules: []v1alpha1.FreezeSchedule{{Schedule: "0 18 * * FRI", Duration: metav1.Duration{Duration: 62 * time.Hour}, TimeZone: "Europe/Berlin"},
				{Schedule: "@daily", Duration: metav1.Duration{Duration: time.Minute}}},
			Spaces: []string{"wds1", "kcp#root:org:wds2"}, Stages: []string{"prod"}, Reason: "code freeze",
		},
	}
}

// TestRolloutFreezeOfTheAPIServer checks the RolloutFreeze CRD against a
// real API server: a valid freeze and the largest one round-trip; each
// bound and rule refuses what it should: what the stager would otherwise
// have to refuse itself (docs/proposals/freezes.md).
func TestRolloutFreezeOfTheAPIServer(t *testing.T) {
	c := startHosting(t)
	ctx := t.Context()

	t.Run("valid freezes round-trip", func(t *testing.T) {
		want := newFreeze("valid")
		if err := c.Create(ctx, want.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		got := &v1alpha1.RolloutFreeze{}
		if err := c.Get(ctx, client.ObjectKey{Name: "valid"}, got); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(got.Spec, want.Spec) {
			t.Errorf("stored spec %+v, want %+v", got.Spec, want.Spec)
		}
		largest := newFreeze("largest")
		largest.Spec.Ranges = slicesRepeat(largest.Spec.Ranges[0], 16)
		largest.Spec.Schedules = slicesRepeat(largest.Spec.Schedules[0], 8)
		largest.Spec.Spaces = spaceNames(strings.Repeat("s", 500), 64)
		largest.Spec.Policies = spaceNames("p", 16)
		largest.Spec.Stages = spaceNames("st", 16)
		largest.Spec.Reason = strings.Repeat("r", 256)
		if err := c.Create(ctx, largest); err != nil {
			t.Errorf("the largest freeze: %v", err)
		}
		every := newFreeze("every-space")
		every.Spec.Spaces, every.Spec.Stages, every.Spec.Schedules = nil, nil, nil
		if err := c.Create(ctx, every); err != nil {
			t.Errorf("a freeze of every space and stage: %v", err)
		}
	})

	t.Run("invalid freezes are refused", func(t *testing.T) {
		checkRefusals(t, c, func() *v1alpha1.RolloutFreeze { return newFreeze("invalid") }, map[string]refusal[*v1alpha1.RolloutFreeze]{
			"neither range nor schedule": {func(f *v1alpha1.RolloutFreeze) { f.Spec.Ranges, f.Spec.Schedules = nil, nil }, "a freeze needs a range or a schedule"},
			"an end before the start": {func(f *v1alpha1.RolloutFreeze) {
				f.Spec.Ranges[0].End = metav1.NewTime(f.Spec.Ranges[0].Start.Add(-time.Hour))
			},
				"end must be after start"},
			"an empty range":   {func(f *v1alpha1.RolloutFreeze) { f.Spec.Ranges[0].End = f.Spec.Ranges[0].Start }, "end must be after start"},
			"17 ranges":        {func(f *v1alpha1.RolloutFreeze) { f.Spec.Ranges = slicesRepeat(f.Spec.Ranges[0], 17) }, "spec.ranges"},
			"9 schedules":      {func(f *v1alpha1.RolloutFreeze) { f.Spec.Schedules = slicesRepeat(f.Spec.Schedules[0], 9) }, "spec.schedules"},
			"@every":           {func(f *v1alpha1.RolloutFreeze) { f.Spec.Schedules[0].Schedule = "@every 1h" }, "spec.schedules[0].schedule"},
			"a zone inside":    {func(f *v1alpha1.RolloutFreeze) { f.Spec.Schedules[0].Schedule = "CRON_TZ=UTC 0 0 * * *" }, "spec.schedules[0].schedule"},
			"six fields":       {func(f *v1alpha1.RolloutFreeze) { f.Spec.Schedules[0].Schedule = "0 0 0 * * *" }, "spec.schedules[0].schedule"},
			"a 30s period":     {func(f *v1alpha1.RolloutFreeze) { f.Spec.Schedules[0].Duration.Duration = 30 * time.Second }, "duration must be between 1m and 8784h"},
			"a 367-day period": {func(f *v1alpha1.RolloutFreeze) { f.Spec.Schedules[0].Duration.Duration = 367 * 24 * time.Hour }, "duration must be between 1m and 8784h"},
			"a zone as a path": {func(f *v1alpha1.RolloutFreeze) { f.Spec.Schedules[0].TimeZone = "../../etc/passwd" }, "spec.schedules[0].timeZone"},
			"65 spaces":        {func(f *v1alpha1.RolloutFreeze) { f.Spec.Spaces = spaceNames("s", 65) }, "spec.spaces"},
			"17 policies":      {func(f *v1alpha1.RolloutFreeze) { f.Spec.Policies = spaceNames("p", 17) }, "spec.policies"},
			"17 stages":        {func(f *v1alpha1.RolloutFreeze) { f.Spec.Stages = spaceNames("s", 17) }, "spec.stages"},
			"a long reason":    {func(f *v1alpha1.RolloutFreeze) { f.Spec.Reason = strings.Repeat("r", 257) }, "spec.reason"},
			"a name over 63":   {func(f *v1alpha1.RolloutFreeze) { f.Name = strings.Repeat("f", 64) }, "the freeze name must be at most 63 characters"},
		})
	})
}

// slicesRepeat is n copies of v.
func slicesRepeat[T any](v T, n int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestRolloutFreezeIsTheHostingClustersOnly: no manifest a space gets
// (its CRDs, the space chart, kcp's export) names the RolloutFreeze, and
// the hosting cluster's CRD is there: only the platform team, who writes
// in the hosting cluster, can freeze rollouts.
func TestRolloutFreezeIsTheHostingClustersOnly(t *testing.T) {
	checkHostingClustersOnly(t, "RolloutFreeze", "rolloutfreezes")
}
