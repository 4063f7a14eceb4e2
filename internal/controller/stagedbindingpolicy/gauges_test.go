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
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/controller/metrics"
	"github.com/kubestellar/workload-stager/internal/rollout/rollouttest"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// TestPolicyGaugesFollowTheSpaceCache runs a space's controller on a real
// API server: a policy's gauges are scraped from the space's cache while
// the controller runs, go once the policy is deleted, and every gauge of
// the space goes when the controller stops, with no call to
// metrics.SpaceDisengaged or a janitor.
func TestPolicyGaugesFollowTheSpaceCache(t *testing.T) {
	needsAPIServer(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c := testSpace.Client
	group := objectName("gauges-test", "gauges")
	selector := labels.SelectorFromSet(labels.Set{"gauges-test": group})
	cl := startIndexedCluster(ctx, t, func(o *cluster.Options) {
		// Only this test's policies: the shared space holds the others'.
		o.Cache.ByObject = map[client.Object]cache.ByObject{&v1alpha1.StagedBindingPolicy{}: {Label: selector}}
	})
	space := objectName("space", "gauges")
	ctrl, err := NewController(space, cl, rollouttest.NewEngine(t), Options{MaxConcurrentReconciles: 1, Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctrlCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- ctrl.Start(ctrlCtx) }()

	kept := policytest.Policy(objectName("StagedBindingPolicy", "gauges-kept"), map[string]string{"app": "kept"}, policytest.Stage("dev", "", ""))
	gone := policytest.Policy(objectName("StagedBindingPolicy", "gauges-gone"), map[string]string{"app": "gone"},
		policytest.Stage("dev", "", ""), policytest.Stage("prod", "", ""))
	for _, p := range []*v1alpha1.StagedBindingPolicy{kept, gone} {
		p.Labels = map[string]string{"gauges-test": group}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), p) })
	}
	stages := func(policy string) (float64, bool) {
		return gaugeValue(t, "stager_policy_stages", map[string]string{metrics.LabelSpace: space, metrics.LabelPolicy: policy})
	}
	environment.Eventually(t, 30*time.Second, "both policies' stage counts", func() error {
		if n, ok := stages(kept.Name); !ok || n != 1 {
			return fmt.Errorf("%s: stager_policy_stages %v (present %t), want 1", kept.Name, n, ok)
		}
		if n, ok := stages(gone.Name); !ok || n != 2 {
			return fmt.Errorf("%s: stager_policy_stages %v (present %t), want 2", gone.Name, n, ok)
		}
		return nil
	})
	if err := c.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	environment.Eventually(t, 30*time.Second, "the deleted policy's gauges gone", func() error {
		if n := gaugesOf(t, space, gone.Name); n != 0 {
			return fmt.Errorf("%s has %d series", gone.Name, n)
		}
		return nil
	})

	stop()
	if err := <-stopped; err != nil {
		t.Fatalf("the controller stopped with %v", err)
	}
	if n := gaugesOf(t, space, ""); n != 0 {
		t.Fatalf("the space has %d gauge series once its controller stopped, want none", n)
	}
}

// gaugeValue returns the value of the gauge series name with exactly these
// labels, as a scrape of controller-runtime's registry sees it.
func gaugeValue(t *testing.T, name string, want map[string]string) (float64, bool) {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering the metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if maps.Equal(got, want) {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// gaugesOf counts the stager's gauge series of space, and of policy unless
// it is "".
func gaugesOf(t *testing.T, space, policy string) int {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering the metrics: %v", err)
	}
	n := 0
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "stager_") || f.GetType() != dto.MetricType_GAUGE {
			continue
		}
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if got[metrics.LabelSpace] == space && (policy == "" || got[metrics.LabelPolicy] == policy) {
				n++
			}
		}
	}
	return n
}
