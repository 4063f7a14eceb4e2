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

// Package policytest reads, waits on and deletes the StagedBindingPolicies of
// a WDS for the integration and end-to-end suites, and renders their status
// for failure messages.
package policytest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// Space is the StagedBindingPolicies of one WDS.
type Space struct {
	// Name names the WDS in failure messages.
	Name string
	// Client reaches the WDS.
	Client client.Client
	// Ctx bounds every request.
	Ctx context.Context
	// Timeout bounds every wait.
	Timeout time.Duration
}

// Get reads a policy, failing the test when it cannot.
func (s Space) Get(t testing.TB, name string) *v1alpha1.StagedBindingPolicy {
	t.Helper()
	p := &v1alpha1.StagedBindingPolicy{}
	if err := s.Client.Get(s.Ctx, types.NamespacedName{Name: name}, p); err != nil {
		t.Fatalf("reading StagedBindingPolicy %s in %s: %v", name, s.Name, err)
	}
	return p
}

// WaitFor waits until ok accepts the policy, and returns it.
func (s Space) WaitFor(t testing.TB, name, what string, ok func(*v1alpha1.StagedBindingPolicy) bool) *v1alpha1.StagedBindingPolicy {
	t.Helper()
	var p *v1alpha1.StagedBindingPolicy
	environment.Eventually(t, s.Timeout, fmt.Sprintf("%s/%s %s", s.Name, name, what), func() error {
		p = &v1alpha1.StagedBindingPolicy{}
		if err := s.Client.Get(s.Ctx, types.NamespacedName{Name: name}, p); err != nil {
			return err
		}
		if !ok(p) {
			return fmt.Errorf("%s", Describe(p))
		}
		return nil
	})
	return p
}

// WaitForActiveStage waits until the policy's active stage is the given one.
func (s Space) WaitForActiveStage(t testing.TB, name, stage string) *v1alpha1.StagedBindingPolicy {
	t.Helper()
	return s.WaitFor(t, name, fmt.Sprintf("to reach stage %q", stage), func(p *v1alpha1.StagedBindingPolicy) bool {
		return p.Status.ActiveStage == stage
	})
}

// WaitForPhase waits until the policy's rollout is in the given phase.
func (s Space) WaitForPhase(t testing.TB, name string, phase v1alpha1.RolloutPhase) *v1alpha1.StagedBindingPolicy {
	t.Helper()
	return s.WaitFor(t, name, fmt.Sprintf("to be %s", phase), func(p *v1alpha1.StagedBindingPolicy) bool {
		return p.Status.Phase == phase
	})
}

// WaitForCondition waits until a condition of the policy has the given
// status and reason.
func (s Space) WaitForCondition(t testing.TB, name, conditionType string, status metav1.ConditionStatus, reason string) *v1alpha1.StagedBindingPolicy {
	t.Helper()
	return s.WaitFor(t, name, fmt.Sprintf("to have condition %s=%s (%s)", conditionType, status, reason), func(p *v1alpha1.StagedBindingPolicy) bool {
		c := meta.FindStatusCondition(p.Status.Conditions, conditionType)
		return c != nil && c.Status == status && c.Reason == reason
	})
}

// EventsWithReason returns how many of the Events that EventCounts counted
// have the given reason.
func EventsWithReason(counts map[string]int, reason string) int {
	n := 0
	for key, count := range counts {
		if strings.HasPrefix(key, reason+"/") {
			n += count
		}
	}
	return n
}

// EventCounts counts a policy's Events by "reason/note", with the counts of
// Event series.
func (s Space) EventCounts(t testing.TB, p *v1alpha1.StagedBindingPolicy) map[string]int {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := s.Client.List(s.Ctx, list); err != nil {
		t.Fatalf("listing Events in %s: %v", s.Name, err)
	}
	counts := map[string]int{}
	for _, e := range list.Items {
		if e.Regarding.UID != p.UID {
			continue
		}
		n := 1
		if e.Series != nil {
			n = int(e.Series.Count)
		}
		counts[e.Reason+"/"+e.Note] += n
	}
	return counts
}

// Destinations returns the cluster IDs, sorted, on which the Binding of a
// BindingPolicy (named as it is) places its workload; nil, with the error,
// when the Binding cannot be read.
func (s Space) Destinations(bindingPolicy string) ([]string, error) {
	binding := &ksv1alpha1.Binding{}
	if err := s.Client.Get(s.Ctx, types.NamespacedName{Name: bindingPolicy}, binding); err != nil {
		return nil, fmt.Errorf("reading Binding %s in %s: %w", bindingPolicy, s.Name, err)
	}
	var ids []string
	for _, d := range binding.Spec.Destinations {
		ids = append(ids, d.ClusterId)
	}
	slices.Sort(ids)
	return ids, nil
}

// Delete deletes a policy and waits until it and its BindingPolicies are gone.
func (s Space) Delete(t testing.TB, name string) {
	t.Helper()
	p := &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := s.Client.Delete(s.Ctx, p); err != nil {
		t.Fatalf("deleting StagedBindingPolicy %s in %s: %v", name, s.Name, err)
	}
	s.WaitGone(t, name)
}

// WaitGone waits until a policy and its BindingPolicies are gone.
func (s Space) WaitGone(t testing.TB, name string) {
	t.Helper()
	environment.Eventually(t, s.Timeout, fmt.Sprintf("%s/%s and its BindingPolicies to be gone", s.Name, name), func() error {
		if err := s.Client.Get(s.Ctx, types.NamespacedName{Name: name}, &v1alpha1.StagedBindingPolicy{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("policy still there (%w)", err)
		}
		list := &ksv1alpha1.BindingPolicyList{}
		if err := s.Client.List(s.Ctx, list, client.MatchingLabels{v1alpha1.PolicyLabel: name}); err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d BindingPolicies left", len(list.Items))
		}
		return nil
	})
}

// Describe renders a policy's status for failure messages.
func Describe(p *v1alpha1.StagedBindingPolicy) string {
	var b strings.Builder
	fmt.Fprintf(&b, "activeStage=%q phase=%q", p.Status.ActiveStage, p.Status.Phase)
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, st := range p.Status.Stages {
		fmt.Fprintf(&b, " [%s %s %q]", st.Name, st.Phase, st.Message)
	}
	return b.String()
}
