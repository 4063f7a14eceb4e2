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

package spaces

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/kubestellar/workload-stager/internal/controller/sharding"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// writingController is a space's controller whose first start begins a
// write to the space, under the space's tenure, that outlasts the
// controller: its Start returns with the write in flight, until the test
// answers it.
type writingController struct {
	manager.Runnable
	tenure sharding.Tenure
	writes *writes
}

// writes is the one write the controllers begin.
type writes struct {
	mu    sync.Mutex
	began bool
	done  func(error) // nil until the write began
}

// Start begins the write if no controller did, then runs the controller.
func (c *writingController) Start(ctx context.Context) error {
	c.writes.mu.Lock()
	if !c.writes.began {
		_, done, err := c.tenure.Hold(ctx, time.Now())
		if err != nil {
			c.writes.mu.Unlock()
			return fmt.Errorf("holding the tenure: %w", err)
		}
		c.writes.began, c.writes.done = true, done
	}
	c.writes.mu.Unlock()
	return c.Runnable.Start(ctx)
}

// answer ends the write with err.
func (w *writes) answer(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done(err)
}

// shardedTenures returns the tenures of replica "a", holding the fence of
// space's slot for an hour.
func shardedTenures(t *testing.T, space string) *sharding.Tenures {
	t.Helper()
	const prefix = "workload-stager-shard"
	tenures := sharding.NewTenures(prefix, "a", suiteLogger.WithName(t.Name()))
	leases := tenures.Client(fake.NewClientBuilder().Build())
	fence := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "stager", Name: prefix + "-" + string(sharding.FenceKey(multicluster.ClusterName(space)))},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), RenewTime: ptr.To(metav1.NowMicro()),
			LeaseDurationSeconds: ptr.To(int32(3600))},
	}
	if err := leases.Create(context.Background(), fence); err != nil {
		t.Fatalf("taking the fence: %v", err)
	}
	return tenures
}

// TestRestartWaitsForTheWritesOfTheControllerBefore runs a sharded space
// (real Tenures, their fence taken) whose first controller leaves a write
// in flight when it stops, and restarts the space's controller twice ways:
// after its API server answers again following an outage (fresh caches),
// and when the space is engaged again with another cluster. Either way
// the new controller is not built, let alone started, while the write is
// in flight, and it starts once the write is answered.
func TestRestartWaitsForTheWritesOfTheControllerBefore(t *testing.T) {
	needsAPIServer(t)
	for _, restart := range []string{"recovered", "replaced"} {
		t.Run(restart, func(t *testing.T) { testRestartWaitsForWrites(t, restart) })
	}
}

func testRestartWaitsForWrites(t *testing.T, restart string) {
	const id, name = "lc000", "root:spacelc000"
	tenures := shardedTenures(t, name)
	w := &writes{}
	h := newHarnessWith(t, func(o *Options) {
		inner := o.NewController
		o.NewController = func(space string, cl cluster.Cluster) (manager.Runnable, error) {
			ctrl, err := inner(space, cl)
			return &writingController{Runnable: ctrl, tenure: tenures.Of(multicluster.ClusterName(space)), writes: w}, err
		}
		o.Quiet = func(ctx context.Context, space string) error {
			return tenures.Of(multicluster.ClusterName(space)).Quiet(ctx)
		}
	}, &corev1.ConfigMap{})
	h.start()
	f := newFakeEndpoint(t)
	shared := h.newCluster()
	spaceCluster := func() *endpointCluster {
		return &endpointCluster{Cluster: shared, config: &rest.Config{Host: f.server.URL + "/clusters/" + id}, endpoint: f.server.URL}
	}
	first := spaceCluster()
	h.engage(name, first)
	environment.Eventually(t, waitTimeout, "the space served", func() error { return h.serving(name, 1, first) })

	second := first
	switch restart {
	case "recovered":
		f.down.Store(true)
		environment.Eventually(t, waitTimeout, "the space unreachable", func() error { return allReady(h, []string{name}, false) })
		f.down.Store(false)
	case "replaced":
		second = spaceCluster()
		h.engage(name, second)
	}
	environment.Eventually(t, waitTimeout, "the first controller stopped", func() error {
		for _, e := range h.ctrls.history() {
			if e.stop && e.id == 1 {
				return nil
			}
		}
		return errors.New("it runs")
	})
	environment.Consistently(t, holdFor, "no new controller while the write is in flight", func() error {
		if n := h.ctrls.builtCount(); n != 1 {
			return fmt.Errorf("the factory built %d controllers; history %v", n, h.ctrls.history())
		}
		return nil
	})
	w.answer(nil)
	environment.Eventually(t, waitTimeout, "the space served again once the write was answered", func() error {
		return h.serving(name, 2, second)
	})
}
