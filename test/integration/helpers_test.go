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

package integration

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// conditionCombinedStatus is the seed document 001's condition, verbatim
// (root combinedStatus, over several lines).
const conditionCombinedStatus = `combinedStatus.results.exists(r,
  r.name == 'deployments-aggregator' &&
  r.rows.exists(row,
    row.columns.exists(col,
      col.type == 'Number' &&
      col.float == '1'
)))`

// timeout bounds every wait of the suite.
const timeout = 90 * time.Second

// newPolicy returns a dev -> test -> prod policy selecting the workload
// labelled app.kubernetes.io/name=<app>, with a condition on dev (root obj)
// and test (root combinedStatus).
func newPolicy(name, app string) *v1alpha1.StagedBindingPolicy {
	return policytest.Policy(name, map[string]string{policytest.AppLabel: app},
		policytest.Stage("dev", policytest.Deployments, policytest.Available),
		policytest.Stage("test", policytest.Deployments, conditionCombinedStatus),
		policytest.Stage("prod", "", ""))
}

// createWorkload creates a Deployment and a ConfigMap labelled with the app's name.
func createWorkload(t *testing.T, s *space, app string) {
	t.Helper()
	for _, obj := range []client.Object{policytest.Deployment(workloadNamespace, app), policytest.ConfigMap(workloadNamespace, app)} {
		if err := s.Client.Create(suite.ctx, obj); err != nil {
			t.Fatalf("creating %T %s in %s: %v", obj, obj.GetName(), s.Name, err)
		}
	}
}

// create creates a policy in a space.
func create(t *testing.T, s *space, policy *v1alpha1.StagedBindingPolicy) {
	t.Helper()
	if err := s.Client.Create(suite.ctx, policy); err != nil {
		t.Fatalf("creating StagedBindingPolicy %s in %s: %v", policy.Name, s.Name, err)
	}
}

// policies returns the policy helpers of a space.
func policies(s *space) policytest.Space {
	return policytest.Space{Name: s.Name, Client: s.Client, Ctx: suite.ctx, Timeout: timeout}
}

// updateObject changes a cluster-scoped object of a space, reading it again
// on conflicts (the controller and the simulator write concurrently).
func updateObject[T any, PT interface {
	*T
	client.Object
}](t *testing.T, s *space, name string, change func(PT)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj := PT(new(T))
		if err := s.Client.Get(suite.ctx, types.NamespacedName{Name: name}, obj); err != nil {
			return err
		}
		change(obj)
		return s.Client.Update(suite.ctx, obj)
	})
	if err != nil {
		t.Fatalf("updating %T %s in %s: %v", new(T), name, s.Name, err)
	}
}

// waitFor polls check until it returns nil, failing the test with the last
// error after the suite's timeout.
func waitFor(t *testing.T, what string, check func() error) {
	t.Helper()
	environment.Eventually(t, timeout, what, check)
}

// bindingPolicies returns the sorted names of the BindingPolicies generated for a policy.
func bindingPolicies(t *testing.T, s *space, policy string) []string {
	t.Helper()
	list := &ksv1alpha1.BindingPolicyList{}
	if err := s.Client.List(suite.ctx, list, client.MatchingLabels{v1alpha1.PolicyLabel: policy}); err != nil {
		t.Fatalf("listing BindingPolicies in %s: %v", s.Name, err)
	}
	names := make([]string, 0, len(list.Items))
	for _, bp := range list.Items {
		names = append(names, bp.Name)
	}
	sort.Strings(names)
	return names
}

// waitForBindingPolicies waits until exactly the given stages have BindingPolicies.
func waitForBindingPolicies(t *testing.T, s *space, policy string, stages ...string) {
	t.Helper()
	want := make([]string, 0, len(stages))
	for _, stage := range stages {
		want = append(want, v1alpha1.StagePlacement(policy, stage).String())
	}
	sort.Strings(want)
	waitFor(t, fmt.Sprintf("BindingPolicies %v in %s", want, s.Name), func() error {
		list := &ksv1alpha1.BindingPolicyList{}
		if err := s.Client.List(suite.ctx, list, client.MatchingLabels{v1alpha1.PolicyLabel: policy}); err != nil {
			return err
		}
		var got []string
		for _, bp := range list.Items {
			if bp.DeletionTimestamp == nil {
				got = append(got, bp.Name)
			}
		}
		sort.Strings(got)
		if len(list.Items) != len(want) || !slices.Equal(got, want) {
			return fmt.Errorf("BindingPolicies are %v (%d objects)", got, len(list.Items))
		}
		return nil
	})
}

// destinations returns the sorted destinations of a Binding.
func destinations(t *testing.T, s *space, name string) []string {
	t.Helper()
	ids, err := policies(s).Destinations(name)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// waitForDestinations waits until the Binding of bindingPolicy places on
// want, sorted, and no other cluster.
func waitForDestinations(t *testing.T, s *space, bindingPolicy, what string, want ...string) {
	t.Helper()
	waitFor(t, what, func() error {
		if got := destinationsOrNil(s, bindingPolicy); !slices.Equal(got, want) {
			return fmt.Errorf("destinations %v", got)
		}
		return nil
	})
}

// destinationsOrNil returns the sorted destinations of a Binding, or nil when there is none.
func destinationsOrNil(s *space, name string) []string {
	ids, _ := policies(s).Destinations(name)
	return ids
}

// series counts the stager's metric series (served from controller-runtime's
// registry, as on the metrics endpoint) whose labels include all of the given ones.
func series(t *testing.T, labels map[string]string) int {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	n := 0
	for _, family := range families {
		if !strings.HasPrefix(family.GetName(), "stager_") {
			continue
		}
		for _, m := range family.GetMetric() {
			matched := 0
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v == l.GetValue() {
					matched++
				}
			}
			if matched == len(labels) {
				n++
			}
		}
	}
	return n
}

// metricValue returns the value of the stager's gauge or counter series with exactly these labels.
func metricValue(t *testing.T, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, m := range family.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			ok := true
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					ok = false
				}
			}
			if !ok {
				continue
			}
			switch {
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			}
		}
	}
	return 0, false
}

// sampleEvery2ms calls observe every 2 ms, on a goroutine of its own, until
// the test ends.
func sampleEvery2ms(t *testing.T, observe func()) {
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			observe()
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-sampled })
}

// sampleControllers samples how many controllers the stager runs for a
// space, every 2ms until the test ends, and returns a function that tells
// the most seen at once so far.
func sampleControllers(t *testing.T, r *runningStager, space string) (most func() int64) {
	var seen atomic.Int64
	sampleEvery2ms(t, func() {
		if n := int64(r.Spaces.Controllers(space)); n > seen.Load() {
			seen.Store(n)
		}
	})
	return seen.Load
}

// sampleDropOuts samples, every 2ms until the test ends, whether the space
// is engaged, and returns a function that tells how many times it was seen
// not engaged after it had been.
func sampleDropOuts(t *testing.T, r *runningStager, space string) (dropOuts func() int64) {
	var drops atomic.Int64
	engaged := false
	sampleEvery2ms(t, func() {
		_, now := spaceState(r, space)
		if engaged && !now {
			drops.Add(1)
		}
		engaged = now
	})
	return drops.Load
}
