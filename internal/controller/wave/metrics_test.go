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

package wave_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/controller/wave"
	wavegate "github.com/kubestellar/workload-stager/internal/wave"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// waveMetrics are the names of the waves' series.
var waveMetrics = []string{"stager_wave_step", "stager_wave_spaces_not_reporting", "stager_wave_read_errors_total"}

// exposition returns the stager's metrics endpoint's text of the waves'
// series would be, given their lines: HELP and TYPE as the registry
// describes them, for the families that have lines.
func exposition(t *testing.T, lines ...string) string {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range families {
		if !slices.Contains(waveMetrics, f.GetName()) {
			continue
		}
		var own []string
		for _, l := range lines {
			if strings.HasPrefix(l, f.GetName()+"{") {
				own = append(own, l)
			}
		}
		if len(own) == 0 {
			continue
		}
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n%s\n", f.GetName(), f.GetHelp(), f.GetName(),
			strings.ToLower(f.GetType().String()), strings.Join(own, "\n"))
	}
	return b.String()
}

// TestWaveSeriesAgainstAPIServers checks the waves' series as the stager's
// metrics endpoint serves them (controller-runtime's registry), with real
// API servers: a hosting cluster with a wave of two steps and a space per
// step, each served by a replica (Reporter) of its own, both exported.
// Each replica exports the stager_wave_step series of its own space, one
// per ordered policy; a series follows its policy's revision and state,
// the wave's edit and the space's let-go, leaving no old series behind;
// stager_wave_spaces_not_reporting counts the space let go, then stale;
// stager_wave_read_errors_total counts the failed reads of the gate and
// of the reporter, for a served space only; and a wave deleted takes its
// series along.
func TestWaveSeriesAgainstAPIServers(t *testing.T) {
	scheme, hosting, wdsA, wdsB, w := startTwoStepWave(t, "metrics")
	ctx := t.Context()
	setStatus(t, wdsA.Client, v1alpha1.RolloutCompleted, "v1", "v1")
	setStatus(t, wdsB.Client, v1alpha1.RolloutProgressing, "v1", "")

	waves := startCache(t, hosting, scheme)
	cacheA, cacheB := startCache(t, wdsA, scheme), startCache(t, wdsB, scheme)
	begin := time.Now().Truncate(time.Second)
	clockA, clockB := clocktesting.NewFakeClock(begin), clocktesting.NewFakeClock(begin)
	reporterA := &wave.Reporter{Client: hosting.Client, Waves: waves, Clock: clockA, Log: testr.New(t)}
	reporterB := &wave.Reporter{Client: hosting.Client, Waves: waves, Clock: clockB, Log: testr.New(t)}
	t.Cleanup(wave.ExportMetrics(reporterA))
	unexportB := wave.ExportMetrics(reporterB)
	t.Cleanup(unexportB)
	stopA := serve(t, reporterA, spaceA, cacheA, nil)
	stopB := serve(t, reporterB, spaceB, cacheB, nil)

	expect := func(what string, lines ...string) {
		t.Helper()
		environment.Eventually(t, waitFor, what, func() error {
			return testutil.GatherAndCompare(ctrlmetrics.Registry, strings.NewReader(exposition(t, lines...)), waveMetrics...)
		})
	}
	step := func(stepName, space, policy, revision, state string) string {
		return fmt.Sprintf(`stager_wave_step{policy=%q,revision=%q,space=%q,state=%q,step=%q,wave="metrics"} 1`, policy, revision, space, state, stepName)
	}
	notReporting := func(noReport, disengaged, stale int) []string {
		return []string{
			fmt.Sprintf(`stager_wave_spaces_not_reporting{reason="Disengaged",wave="metrics"} %d`, disengaged),
			fmt.Sprintf(`stager_wave_spaces_not_reporting{reason="NoReport",wave="metrics"} %d`, noReport),
			fmt.Sprintf(`stager_wave_spaces_not_reporting{reason="Stale",wave="metrics"} %d`, stale),
		}
	}
	readErrors := func(space string, n int) string {
		return fmt.Sprintf(`stager_wave_read_errors_total{space=%q} %d`, space, n)
	}

	expect("each replica's series of its own space", append(notReporting(0, 0, 0),
		step("one", spaceA, "web", "v1", wave.StateCompleted),
		step("one", spaceA, "api", "", wave.StateMissing),
		step("two", spaceB, "web", "v1", wave.StateProgressing),
		step("two", spaceB, "api", "", wave.StateMissing),
		readErrors(spaceA, 0), readErrors(spaceB, 0))...)

	// wds-b's web asks for v2, which the wave holds (as its reconciler
	// writes it); then wds-a completes v2.
	p := &v1alpha1.StagedBindingPolicy{}
	if err := wdsB.Client.Get(ctx, client.ObjectKey{Name: "web"}, p); err != nil {
		t.Fatal(err)
	}
	p.Spec.Revision = &v1alpha1.Revision{Name: "v2"}
	if err := wdsB.Client.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	apimeta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: wavegate.ConditionWaitingForWave, Status: metav1.ConditionTrue,
		Reason: wavegate.ReasonWaitingForEarlierSteps, Message: `revision "v2" is held: waiting`})
	if err := wdsB.Client.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	setStatus(t, wdsA.Client, v1alpha1.RolloutCompleted, "v2", "v2")
	expect("the held revision and the new one, the old series gone", append(notReporting(0, 0, 0),
		step("one", spaceA, "web", "v2", wave.StateCompleted),
		step("one", spaceA, "api", "", wave.StateMissing),
		step("two", spaceB, "web", "v2", wave.StateWaiting),
		step("two", spaceB, "api", "", wave.StateMissing),
		readErrors(spaceA, 0), readErrors(spaceB, 0))...)

	// The platform team renames the second step and drops api.
	if err := hosting.Client.Get(ctx, client.ObjectKey{Name: "metrics"}, w); err != nil {
		t.Fatal(err)
	}
	w.Spec.Steps[1].Name, w.Spec.Policies = "later", []string{"web"}
	if err := hosting.Client.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	expect("the series of the wave as edited", append(notReporting(0, 0, 0),
		step("one", spaceA, "web", "v2", wave.StateCompleted),
		step("later", spaceB, "web", "v2", wave.StateWaiting),
		readErrors(spaceA, 0), readErrors(spaceB, 0))...)

	// The gate's reads fail (a user without rights on the waves): counted
	// for the space asking, which wds-a's replica serves.
	unprivileged := func(name string) cache.Cache {
		kubeconfig, err := hosting.AddUser(name)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		return startCache(t, &environment.Space{Name: name, Config: cfg}, scheme)
	}
	gates := &wave.Gates{Waves: unprivileged("no-waves"), Clock: clockA, ReadTimeout: 100 * time.Millisecond}
	for range 2 {
		if _, err := gates.Decision(ctx, spaceA, "web", "v3", clockA.Now()); err == nil {
			t.Fatal("the gate read the waves without the right to")
		}
	}
	// A reporter whose reads fail counts them for its space.
	const spaceC = "wds-c"
	reporterC := &wave.Reporter{Client: hosting.Client, Waves: unprivileged("no-waves-either"), Clock: clocktesting.NewFakeClock(begin), Log: testr.New(t)}
	t.Cleanup(wave.ExportMetrics(reporterC))
	stopC := serve(t, reporterC, spaceC, cacheA, nil)
	environment.Eventually(t, 2*waitFor, "the reporter's failed read counted", func() error {
		families, err := ctrlmetrics.Registry.Gather()
		if err != nil {
			return err
		}
		for _, f := range families {
			for _, m := range f.GetMetric() {
				if f.GetName() == "stager_wave_read_errors_total" && m.GetLabel()[0].GetValue() == spaceC && m.GetCounter().GetValue() >= 1 {
					return nil
				}
			}
		}
		return errors.New("no failed read counted for " + spaceC)
	})
	stopC()
	expect("the gate's failed reads counted, wds-c's series gone with it", append(notReporting(0, 0, 0),
		step("one", spaceA, "web", "v2", wave.StateCompleted),
		step("later", spaceB, "web", "v2", wave.StateWaiting),
		readErrors(spaceA, 2), readErrors(spaceB, 0))...)

	// wds-b is let go, and its replica goes: its series go, and the wave
	// counts it disengaged, then, once its report is stale, stale.
	stopB()
	unexportB()
	expect("wds-b let go", append(notReporting(0, 1, 0),
		step("one", spaceA, "web", "v2", wave.StateCompleted),
		readErrors(spaceA, 2))...)
	clockA.Step(staleAfter + time.Second)
	expect("wds-b's report stale", append(notReporting(0, 0, 1),
		step("one", spaceA, "web", "v2", wave.StateCompleted),
		readErrors(spaceA, 2))...)
	// A read failing for a space no replica serves adds no series.
	if _, err := gates.Decision(ctx, spaceB, "web", "v3", clockA.Now()); err == nil {
		t.Fatal("the gate read the waves without the right to")
	}

	if err := hosting.Client.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	expect("the wave's series gone with it", readErrors(spaceA, 2))
	stopA()
	expect("wds-a let go: no series left")
}
