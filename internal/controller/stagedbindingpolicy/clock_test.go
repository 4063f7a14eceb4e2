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
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"k8s.io/apimachinery/pkg/labels"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// TestControllerReadsTheClockItIsGiven: the controller's reconciler reads
// Options.Clock, the one clock the stager also gives its wave Gates and
// Reporter: a stage started under a clock set in 2001 says it started then.
func TestControllerReadsTheClockItIsGiven(t *testing.T) {
	needsAPIServer(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c := testSpace.Client
	group := objectName("clock-test", "given-clock")
	selector := labels.SelectorFromSet(labels.Set{"clock-test": group})
	then := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	stopped := startController(ctx, t, "clock", selector, Options{MaxConcurrentReconciles: 1, Logger: testr.New(t),
		Clock: clocktesting.NewFakeClock(then)})
	defer func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("the controller stopped with %v", err)
		}
	}()

	policy := policytest.Policy(objectName("StagedBindingPolicy", "clock"), map[string]string{"app": "clock"},
		policytest.Stage("dev", "", ""))
	policy.Labels = map[string]string{"clock-test": group}
	if err := c.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	environment.Eventually(t, 30*time.Second, "the stage started by the given clock", func() error {
		got := &v1alpha1.StagedBindingPolicy{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(policy), got); err != nil {
			return err
		}
		if len(got.Status.Stages) == 0 || got.Status.Stages[0].StartTime == nil {
			return fmt.Errorf("no stage started yet: %+v", got.Status.Stages)
		}
		if start := got.Status.Stages[0].StartTime.Time; !start.Equal(then) {
			return fmt.Errorf("the stage started at %s, want %s", start, then)
		}
		return nil
	})
}

// startController starts, until ctx ends, the controller of a space named
// space whose caches hold only the policies selector selects (the shared
// test space holds the other tests' too), and returns what Start returned
// once it has.
func startController(ctx context.Context, t *testing.T, space string, selector labels.Selector, opts Options) <-chan error {
	t.Helper()
	cl := startIndexedCluster(ctx, t, func(o *cluster.Options) {
		o.Cache.ByObject = map[client.Object]cache.ByObject{&v1alpha1.StagedBindingPolicy{}: {Label: selector}}
	})
	engine, err := expression.NewEngine()
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := NewController(space, cl, engine, opts)
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- ctrl.Start(ctx) }()
	return stopped
}
