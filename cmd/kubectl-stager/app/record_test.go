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

package app

import (
	"strings"
	"testing"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/expression"
	"github.com/kubestellar/workload-stager/internal/gatetest"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// TestSelectedStatusesLeavesSecretsOut checks that record writes the
// CombinedStatuses of the objects the stage's filter selects, stripped of
// what the gates do not read, and never a Secret's, whose results may
// hold its data.
func TestSelectedStatusesLeavesSecretsOut(t *testing.T) {
	engine, err := expression.NewEngine()
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	const secretValue = "c2VjcmV0LXZhbHVlLW9mLWdhdGV0ZXN0"
	bp := &ksv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web.stage.dev", UID: "u1", Generation: 1}}
	bp.Status.ObservedGeneration = 1
	binding := &ksv1alpha1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web.stage.dev",
		OwnerReferences: []metav1.OwnerReference{{Kind: "BindingPolicy", Name: bp.Name, UID: bp.UID}}}}
	binding.Spec.Destinations = []ksv1alpha1.Destination{{ClusterId: "dev1"}}
	status := func(group, resource, name, value string) ksv1alpha1.CombinedStatus {
		return ksv1alpha1.CombinedStatus{
			ObjectMeta: metav1.ObjectMeta{Name: name + ".u1", Namespace: "web", ResourceVersion: "7", UID: "cs-uid",
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubestellar"}},
				Labels: map[string]string{rollout.StatusLabelAPIGroup: group, rollout.StatusLabelResource: resource,
					rollout.StatusLabelNamespace: "web", rollout.StatusLabelName: name, rollout.StatusLabelBindingPolicy: bp.Name,
					"other": "x"}},
			Results: []ksv1alpha1.NamedStatusCombination{{Name: "c", ColumnNames: []string{"v"},
				Rows: []ksv1alpha1.StatusCombinationRow{{Columns: []ksv1alpha1.Value{{Type: ksv1alpha1.TypeString, String: &value}}}}}},
		}
	}
	var statuses []ksv1alpha1.CombinedStatus
	for _, o := range []struct{ group, resource, name, value string }{
		{"apps", "deployments", "web", "ok"}, {"", "configmaps", "web-config", "ok"}, {"", "secrets", "web-token", secretValue},
	} {
		binding.Spec.Workload.NamespaceScope = append(binding.Spec.Workload.NamespaceScope, ksv1alpha1.NamespaceScopeDownsyncClause{
			NamespaceScopeDownsyncObject: ksv1alpha1.NamespaceScopeDownsyncObject{
				GroupVersionResource: metav1.GroupVersionResource{Group: o.group, Version: "v1", Resource: o.resource},
				Namespace:            "web", Name: o.name}})
		statuses = append(statuses, status(o.group, o.resource, o.name, o.value))
	}
	objs := stageObjects{bindingPolicy: bp, binding: binding, statuses: statuses}
	for _, tc := range []struct {
		filter string
		want   []string
		left   []string
	}{
		{"", []string{"web.u1", "web-config.u1"}, []string{"secrets web/web-token"}},
		{"downsyncClause.resource == 'deployments'", []string{"web.u1"}, nil},
		{"downsyncClause.resource == 'secrets'", nil, []string{"secrets web/web-token"}},
	} {
		stage := &v1alpha1.Stage{Name: "dev", Filter: tc.filter, Condition: "obj.results.size() > 0"}
		got, left := selectedStatuses(engine, stage, objs)
		var names []string
		for _, cs := range got {
			names = append(names, cs.Name)
			data, err := yaml.Marshal(cs)
			if err != nil {
				t.Fatal(err)
			}
			for _, gone := range []string{"resourceVersion", "uid", "managedFields", "other", secretValue} {
				if strings.Contains(string(data), gone) {
					t.Errorf("filter %q: the recorded %s holds %q:\n%s", tc.filter, cs.Name, gone, data)
				}
			}
		}
		if strings.Join(names, ",") != strings.Join(tc.want, ",") || strings.Join(left, ",") != strings.Join(tc.left, ",") {
			t.Errorf("filter %q: recorded %v, left out %v; want %v, %v", tc.filter, names, left, tc.want, tc.left)
		}
	}
}

// TestRecordedExpectation checks what record expects of a stage from the
// policy's status, for each way the controller records a stage.
func TestRecordedExpectation(t *testing.T) {
	progressing := func(reason string) []metav1.Condition {
		return []metav1.Condition{{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: reason, Message: "m"}}
	}
	active := []v1alpha1.StageStatus{{Name: "dev", Phase: v1alpha1.StageActive, Message: "waiting"}}
	for _, tc := range []struct {
		name   string
		status v1alpha1.StagedBindingPolicyStatus
		want   gatetest.Expect
		err    string
	}{
		{"failed", v1alpha1.StagedBindingPolicyStatus{ActiveStage: "dev", Stages: active, Conditions: progressing(v1alpha1.ReasonFailureConditionMet),
			Failure: &v1alpha1.RolloutFailure{Stage: "dev", Reason: v1alpha1.ReasonFailureConditionMet, Message: `stage "dev" failed: x`}},
			gatetest.Expect{Outcome: rollout.GateFailed, Reason: v1alpha1.ReasonFailureConditionMet, Message: `stage "dev" failed: x`}, ""},
		{"inconclusive", v1alpha1.StagedBindingPolicyStatus{ActiveStage: "dev", Stages: active,
			Failure: &v1alpha1.RolloutFailure{Stage: "dev", Reason: v1alpha1.ReasonAnalysisInconclusive, Message: "y"}},
			gatetest.Expect{Outcome: rollout.GateInconclusive, Reason: v1alpha1.ReasonAnalysisInconclusive, Message: "y"}, ""},
		{"blocked", v1alpha1.StagedBindingPolicyStatus{ActiveStage: "dev", Stages: active, Conditions: progressing(v1alpha1.ReasonEvaluationError)},
			gatetest.Expect{Outcome: rollout.GateBlocked, Reason: v1alpha1.ReasonEvaluationError}, ""},
		{"waiting", v1alpha1.StagedBindingPolicyStatus{ActiveStage: "dev", Stages: active, Conditions: progressing(v1alpha1.ReasonWaitingForStatus)},
			gatetest.Expect{Outcome: rollout.GateNotDone, Reason: v1alpha1.ReasonWaitingForStatus, Message: "waiting"}, ""},
		{"soaking", v1alpha1.StagedBindingPolicyStatus{ActiveStage: "dev", Stages: active, Conditions: progressing(v1alpha1.ReasonSoaking)},
			gatetest.Expect{Outcome: rollout.GateDone}, ""},
		{"past its deadline", v1alpha1.StagedBindingPolicyStatus{ActiveStage: "dev", Stages: active,
			Conditions: progressing(v1alpha1.ReasonProgressDeadlineExceeded)}, gatetest.Expect{Outcome: rollout.GateNotDone}, ""},
		{"done", v1alpha1.StagedBindingPolicyStatus{ActiveStage: "prod", Conditions: progressing(v1alpha1.ReasonConditionNotMet),
			Stages: []v1alpha1.StageStatus{{Name: "dev", Phase: v1alpha1.StageSucceeded, Message: "condition holds"}}},
			gatetest.Expect{Outcome: rollout.GateDone, Message: "condition holds"}, ""},
		{"waits for a window", v1alpha1.StagedBindingPolicyStatus{ActiveStage: "dev", Stages: active,
			Conditions: progressing(v1alpha1.ReasonWaitingForWindow)}, gatetest.Expect{}, "waits for WaitingForWindow, not for its gates"},
		{"not started", v1alpha1.StagedBindingPolicyStatus{}, gatetest.Expect{}, "has not started"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Status: tc.status}
			got, err := recordedExpectation(p, "dev")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
