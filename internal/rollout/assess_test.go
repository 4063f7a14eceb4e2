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

package rollout

import (
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

func TestObjectKeyString(t *testing.T) {
	tests := []struct {
		key  objectKey
		want string
	}{
		{objectKey{group: "apps", resource: "deployments", namespace: "web", name: "nginx"}, "deployments.apps web/nginx"},
		{objectKey{resource: "configmaps", namespace: "web", name: "settings"}, "configmaps web/settings"},
		{objectKey{resource: "namespaces", name: "web"}, "namespaces web"},
		{objectKey{group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "viewer"}, "clusterroles.rbac.authorization.k8s.io viewer"},
	}
	for _, tt := range tests {
		if got := tt.key.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.key, got, tt.want)
		}
	}
}

func TestNameSome(t *testing.T) {
	tests := []struct {
		names []string
		want  string
	}{
		{nil, ""},
		{[]string{"b", "a"}, "a, b"},
		{[]string{"c", "b", "a"}, "a, b, c"},
		{[]string{"e", "d", "c", "b", "a"}, "a, b, c and 2 more"},
	}
	for _, tt := range tests {
		if got := nameSome(tt.names); got != tt.want {
			t.Errorf("nameSome(%v) = %q, want %q", tt.names, got, tt.want)
		}
	}
}

// TestAssessStageCounts checks the counts and names in the messages of a
// stage with several objects, some passing, some failing, some unreported.
func TestAssessStageCounts(t *testing.T) {
	const statusHint = " (does the downsync clause name a status collector?)"
	engine := newEngine(t)
	p := newPolicy(stageWith("dev", "", seedCondition), stage("test"))
	programs, _, err := compileStages(engine, p.Spec.Stages)
	if err != nil {
		t.Fatalf("compileStages: %v", err)
	}
	bp := ownedBP(p, "dev", "bp-dev")
	deployments := make([]workloadObject, 0, 5)
	for _, name := range []string{"e", "d", "c", "b", "a"} {
		o := deployment
		o.Name, o.UID = name, types.UID("obj-"+name)
		deployments = append(deployments, o)
	}
	binding := bindingFor(bp, deployments...)

	tests := []struct {
		name       string
		counts     map[string]string // deployment name -> reported count; absent = no CombinedStatus
		wantReason string
		wantMsg    string
		satisfied  bool
	}{
		{name: "none reported",
			counts:     map[string]string{},
			wantReason: v1alpha1.ReasonWaitingForStatus,
			wantMsg:    "condition holds for 0 of 5 object(s); waiting for KubeStellar's CombinedStatus of deployments.apps web/a, deployments.apps web/b, deployments.apps web/c and 2 more" + statusHint},
		{name: "missing ones are reported before failing ones",
			counts:     map[string]string{"a": "0", "b": "1", "c": "1", "d": "1"},
			wantReason: v1alpha1.ReasonWaitingForStatus,
			wantMsg:    "condition holds for 3 of 5 object(s); waiting for KubeStellar's CombinedStatus of deployments.apps web/e" + statusHint},
		{name: "some failing",
			counts:     map[string]string{"a": "1", "b": "0", "c": "1", "d": "0", "e": "1"},
			wantReason: v1alpha1.ReasonConditionNotMet,
			wantMsg:    "condition holds for 3 of 5 object(s); not yet for deployments.apps web/b, deployments.apps web/d"},
		{name: "all passing",
			counts:     map[string]string{"a": "1", "b": "1", "c": "1", "d": "1", "e": "1"},
			wantReason: v1alpha1.ReasonStageAdvanced,
			wantMsg:    "condition holds for all 5 object(s) on 2 cluster(s)",
			satisfied:  true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := newSnapshot(p)
			for _, o := range deployments {
				if count, ok := tt.counts[o.Name]; ok {
					snap.CombinedStatuses = append(snap.CombinedStatuses, combinedStatus(bp, o, count))
				}
			}
			got := assessStage(clock.RealClock{}, programs[0], bp, binding, snap.CombinedStatuses, engine.NewBudget())
			if got.reason != tt.wantReason || got.message != tt.wantMsg || got.satisfied != tt.satisfied || !got.bindingObserved {
				t.Errorf("assessStage() = %+v\nwant reason %s, satisfied %v, message %q", got, tt.wantReason, tt.satisfied, tt.wantMsg)
			}
			if strings.Contains(got.message, "%!") {
				t.Errorf("message has a formatting error: %q", got.message)
			}
		})
	}
}

// TestAssessStageNoClusters checks that a Binding with no destination never
// satisfies a stage, whatever its filter, condition and CombinedStatuses say.
func TestAssessStageNoClusters(t *testing.T) {
	engine := newEngine(t)
	p := newPolicy(stage("dev"), stageWith("plain", "", ""), stageWith("all", "", seedCondition),
		stageWith("none", `downsyncClause.resource == 'statefulsets'`, ""))
	programs, _, err := compileStages(engine, p.Spec.Stages)
	if err != nil {
		t.Fatalf("compileStages: %v", err)
	}
	oneCluster := []ksv1alpha1.Destination{{ClusterId: "cluster1"}}

	tests := []struct {
		name         string
		stage        int
		destinations []ksv1alpha1.Destination
		wantReason   string
		satisfied    bool
		wantMsg      []string
	}{
		{name: "condition would hold, destinations nil",
			stage: 0, destinations: nil,
			wantReason: v1alpha1.ReasonNoClustersSelected, wantMsg: []string{"web.stage.dev", "no cluster"}},
		{name: "condition would hold, destinations empty",
			stage: 0, destinations: []ksv1alpha1.Destination{},
			wantReason: v1alpha1.ReasonNoClustersSelected, wantMsg: []string{"web.stage.dev", "no cluster"}},
		{name: "no filter, condition would hold for every object, no destination",
			stage: 2, destinations: nil,
			wantReason: v1alpha1.ReasonNoClustersSelected, wantMsg: []string{"web.stage.all", "no cluster"}},
		{name: "no condition, no destination",
			stage: 1, destinations: nil,
			wantReason: v1alpha1.ReasonNoClustersSelected, wantMsg: []string{"web.stage.plain", "no cluster"}},
		{name: "no condition, filter selecting nothing, no destination",
			stage: 3, destinations: nil,
			wantReason: v1alpha1.ReasonNoClustersSelected, wantMsg: []string{"web.stage.none", "no cluster"}},
		{name: "no condition, one destination",
			stage: 1, destinations: oneCluster,
			wantReason: v1alpha1.ReasonStageAdvanced, satisfied: true, wantMsg: []string{"web.stage.plain", "1 cluster(s)"}},
		{name: "condition holds, one destination",
			stage: 2, destinations: oneCluster,
			wantReason: v1alpha1.ReasonStageAdvanced, satisfied: true, wantMsg: []string{"all 3 object(s) on 1 cluster(s)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := p.Spec.Stages[tt.stage]
			bp := ownedBP(p, s.Name, types.UID("bp-"+s.Name))
			binding := bindingFor(bp)
			binding.Spec.Destinations = tt.destinations
			statuses := []ksv1alpha1.CombinedStatus{
				combinedStatus(bp, deployment, "1"), combinedStatus(bp, configMap, "1"), combinedStatus(bp, namespaceObj, "1"),
			}
			got := assessStage(clock.RealClock{}, programs[tt.stage], bp, binding, statuses, engine.NewBudget())
			if got.reason != tt.wantReason || got.satisfied != tt.satisfied || !got.bindingObserved || got.evaluationError {
				t.Errorf("assessStage() = %+v\nwant reason %s, satisfied %v, binding observed, no evaluation error",
					got, tt.wantReason, tt.satisfied)
			}
			for _, sub := range tt.wantMsg {
				if !strings.Contains(got.message, sub) {
					t.Errorf("message %q does not contain %q", got.message, sub)
				}
			}
		})
	}
}

// steppingClock is a clock that moves on by step at every read.
type steppingClock struct {
	now  time.Time
	step time.Duration
}

func (c *steppingClock) Now() time.Time {
	c.now = c.now.Add(c.step)
	return c.now
}

func (c *steppingClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// TestPlanTimesEvaluationsByItsClock: the duration of every evaluation in
// an Action is read from the clock Plan is given (the reconciler's), not
// from the wall clock.
func TestPlanTimesEvaluationsByItsClock(t *testing.T) {
	snap := at("dev").bound().reporting(deployment, "1").Snapshot
	action := Plan(snap, newEngine(t), WithClock(&steppingClock{now: now.Time, step: time.Hour}))
	if len(action.Evaluations) != 1 {
		t.Fatalf("Plan made %d evaluations, want 1: %+v", len(action.Evaluations), action)
	}
	if got := action.Evaluations[0].Duration; got != time.Hour {
		t.Errorf("evaluation took %s by the wall clock, want the one hour the given clock moved", got)
	}
}
