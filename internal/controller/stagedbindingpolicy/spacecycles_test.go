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
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/cluster"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/kubestellar/workload-stager/internal/controller/metrics"
	"github.com/kubestellar/workload-stager/internal/controller/spaces"
	"github.com/kubestellar/workload-stager/internal/rollout/rollouttest"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// spaceCycles is how many times TestSpaceCyclesLeaveNoSeries engages and
// disengages its space.
const spaceCycles = 100

// TestSpaceCyclesLeaveNoSeries engages and disengages one space
// spaceCycles times, as spaces come and go in a fleet, with the stager's
// controller and a policy for it to reconcile, wired as the stager wires
// them: once the space is disengaged and the janitor's grace has passed, no
// series of the metrics registry names it, and the number of series stays
// where the first cycle left it.
func TestSpaceCyclesLeaveNoSeries(t *testing.T) {
	needsAPIServer(t)
	space := objectName("space", "cycling")
	createPolicy(t, "cycled")
	engine := rollouttest.NewEngine(t)
	logger := ctrllog.Log.WithName(t.Name())
	janitor := metrics.NewSeriesJanitor(SpaceControllerName, 200*time.Millisecond, logger)
	// The Runner reports a disengagement after it stops listing the space;
	// the report, which schedules the janitor's second deletion, must come
	// before the janitor's Wait.
	disengaged := make(chan struct{}, 1)
	runner, err := spaces.New(spaces.Options{
		Required: WatchedObjects(),
		NewController: func(name string, cl cluster.Cluster) (manager.Runnable, error) {
			return NewController(name, cl, engine, Options{MaxConcurrentReconciles: 1, Logger: logger})
		},
		IndexFields: IndexFields,
		OnChange: func(state spaces.State) {
			if state.Reason != spaces.ReasonDisengaged { // as in the stager
				janitor.Engaged(state.Name)
				return
			}
			janitor.Disengaged(state.Name)
			select { // never holds up the Runner
			case disengaged <- struct{}{}:
			default:
			}
		},

		Logger: logger,
	})
	if err != nil {
		t.Fatalf("building the Runner: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = runner.Start(ctx) }()

	controllerName := SpaceControllerName(space)
	first := 0
	for i := range spaceCycles {
		clusterCtx, stopCluster := context.WithCancel(ctx)
		cl, err := cluster.New(testSpace.Config, func(o *cluster.Options) { o.Scheme = testSpace.Client.Scheme() })
		if err != nil {
			t.Fatalf("cycle %d: building a cluster: %v", i, err)
		}
		go func() { _ = cl.Start(clusterCtx) }()
		engageCtx, disengage := context.WithCancel(ctx)
		if err := runner.Engage(engageCtx, multicluster.ClusterName(space), cl); err != nil {
			t.Fatalf("cycle %d: engaging: %v", i, err)
		}
		environment.Eventually(t, time.Minute, "the policy reconciled", func() error {
			if n := seriesWith(t, "controller_runtime_reconcile_total", controllerName); n == 0 {
				return fmt.Errorf("no reconcile of %s counted yet", controllerName)
			}
			return nil
		})
		disengage()
		select {
		case <-disengaged:
		case <-time.After(time.Minute):
			t.Fatalf("cycle %d: the space was not reported disengaged within a minute", i+1)
		}
		stopCluster()
		// Past the janitor's second deletion, no series may come back.
		janitor.Wait()
		if named := seriesNaming(t, space); len(named) != 0 {
			t.Fatalf("cycle %d: %d series name the space once it is disengaged, such as %s", i+1, len(named), named[0])
		}
		n := len(seriesNaming(t, ""))
		if i == 0 {
			first = n
			t.Logf("after the first cycle the registry holds %d series", n)
			continue
		}
		if n != first {
			t.Fatalf("after cycle %d the registry holds %d series, after the first %d", i+1, n, first)
		}
	}
}

// seriesNaming returns the series of the controllers' and the stager's
// metrics with a label value that contains s (every series for ""), one
// string each.
func seriesNaming(t *testing.T, s string) []string {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering the metrics: %v", err)
	}
	var named []string
	for _, f := range families {
		// The controllers' and the stager's own: the others (the Go
		// runtime's, the process's, client-go's requests by status code)
		// change by themselves.
		if !strings.HasPrefix(f.GetName(), "controller_runtime_") && !strings.HasPrefix(f.GetName(), "workqueue_") &&
			!strings.HasPrefix(f.GetName(), "stager_") {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), s) {
					named = append(named, fmt.Sprintf("%s%v", f.GetName(), m.GetLabel()))
					break
				}
			}
			if s == "" && len(m.GetLabel()) == 0 {
				named = append(named, f.GetName())
			}
		}
	}
	return named
}

// seriesWith returns the value of the counter name labelled controller.
func seriesWith(t *testing.T, name, controller string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering the metrics: %v", err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}
