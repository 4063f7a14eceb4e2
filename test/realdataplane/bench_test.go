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

package realdataplane

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// advanceStep is one step of a stage advance, with who takes it.
type advanceStep struct {
	name, by string
}

// advanceSteps are the steps of a stage advance on the real data plane,
// each timed from the one before it.
var advanceSteps = []advanceStep{
	{"pods Ready in a dev WEC → its WorkStatus says available", "status add-on (stand-in)"},
	{"→ the CombinedStatus says available", "KubeStellar (status controller)"},
	{"→ the test stage's BindingPolicy", "the stager"},
	{"→ its Binding names test1", "KubeStellar (binding controller)"},
	{"→ its ManifestWork in the ITS", "KubeStellar (transport)"},
}

// advances counts the advances of every run of BenchmarkStageAdvance, whose
// workloads and policies need distinct names: a run's policies are deleted
// only when the benchmark ends.
var advances int

// BenchmarkStageAdvance times stage advances on the real data plane, from
// the dev WECs' pods becoming Ready to the test stage's ManifestWork in the
// ITS, split in advanceSteps: dev's pods are kept from being Ready (kwok)
// until the dev stage is placed, then let go. Each step's time is from the
// first observation of the step before to the first of its own, polled every
// 10 ms. It also reports the stack's processes, the CPU they use at rest
// (over idleWindow, before the advances) and while the advances run.
func BenchmarkStageAdvance(b *testing.B) {
	const space = "wds1"
	durations := make([][]time.Duration, len(advanceSteps))
	idleBefore, idleBegin := childCPU(), time.Now()
	time.Sleep(idleWindow)
	idle := cpuSince(idleBefore) / time.Since(idleBegin).Seconds()
	cpuBefore, begin := childCPU(), time.Now()
	for i := range b.N {
		advances++
		name := fmt.Sprintf("advance-%d", advances)
		for _, c := range []string{"dev1", "dev2"} {
			if err := suite.stack.RealWECs[c].FailPods(suite.ctx, name); err != nil {
				b.Fatal(err)
			}
		}
		startRollout(b, space, name, name, nil)
		policies(space).WaitForActiveStage(b, name, "dev")
		environment.Eventually(b, timeout, "dev's WECs holding the workload, its pods not Ready", func() error {
			if got := notReady(b, name); !slices.Equal(got, []string{"dev1", "dev2"}) {
				return fmt.Errorf("WECs %v have its pod and none Ready", got)
			}
			return nil
		})
		for _, c := range []string{"dev1", "dev2"} {
			if err := suite.stack.RealWECs[c].RecoverPods(suite.ctx, name); err != nil {
				b.Fatal(err)
			}
		}
		at := observeAdvance(b, space, name)
		for k := range advanceSteps {
			durations[k] = append(durations[k], at[k+1].Sub(at[k]))
		}
		b.Logf("advance %d: %s", i, formatSteps(at))
	}
	elapsed := time.Since(begin)
	var total, ks, ours, standIn time.Duration
	for k, step := range advanceSteps {
		mean := meanOf(durations[k])
		total += mean
		switch {
		case strings.HasPrefix(step.by, "KubeStellar"):
			ks += mean
		case step.by == "the stager":
			ours += mean
		default:
			standIn += mean
		}
		b.Logf("%-65s %-34s mean %6.0f ms over %d", step.name, step.by, ms(mean), len(durations[k]))
	}
	b.ReportMetric(ms(total), "advance-ms")
	b.ReportMetric(ms(ks), "kubestellar-ms")
	b.ReportMetric(ms(ours), "stager-ms")
	b.ReportMetric(ms(standIn), "standin-ms")
	b.ReportMetric(0, "ns/op")

	cpuAfter := childCPU()
	procs, cpu := 0, 0.0
	for _, kind := range slices.Sorted(maps.Keys(cpuAfter)) {
		after, before := cpuAfter[kind], cpuBefore[kind]
		procs += after.count
		cpu += after.seconds - before.seconds
		b.Logf("%-26s %2d processes, %6.1f CPU-s in %.0f s", kind, after.count, after.seconds-before.seconds, elapsed.Seconds())
	}
	b.ReportMetric(float64(procs), "processes")
	b.ReportMetric(cpu/elapsed.Seconds(), "cpu-cores")
	b.ReportMetric(idle, "idle-cpu-cores")
}

// idleWindow is how long BenchmarkStageAdvance measures the stack at rest.
const idleWindow = 10 * time.Second

// cpuSince returns the CPU seconds this test process's children have used
// since before was read.
func cpuSince(before map[string]kindUse) float64 {
	total := 0.0
	for kind, after := range childCPU() {
		total += after.seconds - before[kind].seconds
	}
	return total
}

// observeAdvance polls until the test stage's ManifestWork is in the ITS and
// returns when each step was first seen: [0] a dev WEC's Deployment
// available, then one time per advanceSteps.
func observeAdvance(b *testing.B, space, name string) []time.Time {
	at := make([]time.Time, len(advanceSteps)+1)
	testPolicy := v1alpha1.StagePlacement(name, "test").String()
	checks := []func() bool{
		func() bool { return len(running(b, name)) > 0 },
		func() bool { return workStatusAvailable(b, space, name) },
		func() bool { return combinedStatusAvailable(b, space, name) },
		func() bool {
			var bp ksv1alpha1.BindingPolicy
			return wds(space).Get(suite.ctx, types.NamespacedName{Name: testPolicy}, &bp) == nil
		},
		func() bool {
			var binding ksv1alpha1.Binding
			err := wds(space).Get(suite.ctx, types.NamespacedName{Name: testPolicy}, &binding)
			return err == nil && slices.ContainsFunc(binding.Spec.Destinations, func(d ksv1alpha1.Destination) bool { return d.ClusterId == "test1" })
		},
		func() bool {
			mw := &unstructured.Unstructured{}
			mw.SetAPIVersion("work.open-cluster-management.io/v1")
			mw.SetKind("ManifestWork")
			return suite.stack.ITS.Client.Get(suite.ctx, types.NamespacedName{Namespace: "test1", Name: testPolicy + "-" + space + "-0"}, mw) == nil
		},
	}
	deadline := time.Now().Add(timeout)
	for next := 0; next < len(checks); {
		if time.Now().After(deadline) {
			b.Fatalf("stage advance of %s not seen past step %d within %s", name, next, timeout)
		}
		now := time.Now()
		// A later step seen first (between two polls) is given the
		// earlier steps' time.
		for k := len(checks) - 1; k >= next; k-- {
			if checks[k]() {
				for j := next; j <= k; j++ {
					at[j] = now
				}
				next = k + 1
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return at
}

// workStatusAvailable says whether a WorkStatus of space's Deployment
// name/name in a dev WEC's namespace reports an available replica.
func workStatusAvailable(b *testing.B, space, name string) bool {
	for _, ws := range itsList(b, "WorkStatus", "control.kubestellar.io", "v1alpha1", client.MatchingLabels{originWDSLabel: space}) {
		ref, _, _ := unstructured.NestedStringMap(ws.Object, "spec", "sourceRef")
		avail, _, _ := unstructured.NestedInt64(ws.Object, "status", "availableReplicas")
		if ref["kind"] == "Deployment" && ref["name"] == name && strings.HasPrefix(ws.GetNamespace(), "dev") && avail > 0 {
			return true
		}
	}
	return false
}

// combinedStatusAvailable says whether the seed's condition holds for the
// CombinedStatus of Deployment name/name in space: a row with one available
// replica.
func combinedStatusAvailable(b *testing.B, space, name string) bool {
	var list ksv1alpha1.CombinedStatusList
	if err := wds(space).List(suite.ctx, &list, client.InNamespace(name)); err != nil {
		b.Fatal(err)
	}
	for _, cs := range list.Items {
		for _, r := range cs.Results {
			if r.Name != policytest.Collector {
				continue
			}
			for _, row := range r.Rows {
				for _, col := range row.Columns {
					if col.Number != nil && *col.Number == "1" {
						return true
					}
				}
			}
		}
	}
	return false
}

// formatSteps renders the steps' durations of one advance.
func formatSteps(at []time.Time) string {
	parts := make([]string, 0, len(at)-1)
	for k := 1; k < len(at); k++ {
		parts = append(parts, fmt.Sprintf("%.0f", ms(at[k].Sub(at[k-1]))))
	}
	return strings.Join(parts, " + ") + fmt.Sprintf(" = %.0f ms", ms(at[len(at)-1].Sub(at[0])))
}

// meanOf returns the mean of durations.
func meanOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// ms returns d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// kindUse is how many processes of one kind run and the CPU seconds they
// have used.
type kindUse struct {
	count   int
	seconds float64
}

// childCPU returns, by command name, the processes this test process
// started and the CPU they have used.
func childCPU() map[string]kindUse {
	use := map[string]kindUse{}
	for _, pid := range framework.ChildProcesses() {
		name, cpu, ok := framework.ProcessUsage(pid)
		if !ok {
			continue
		}
		u := use[name]
		u.count++
		u.seconds += cpu
		use[name] = u
	}
	return use
}
