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
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// verdicts renders an explanation's objects as
// "<object>: selected=<bool> status=<bool> holds=<true|false|error|->".
func verdicts(e StageExplanation) []string {
	var out []string
	for _, o := range e.Objects {
		holds := "-"
		switch {
		case o.ConditionError != "":
			holds = "error"
		case o.Holds != nil:
			holds = fmt.Sprint(*o.Holds)
		}
		out = append(out, fmt.Sprintf("%s: selected=%t status=%t holds=%s", o.Object, o.Selected, o.CombinedStatus != nil, holds))
	}
	return out
}

func TestExplainStage(t *testing.T) {
	engine := newEngine(t)
	dev := stageWith("dev", deploymentsFilter, seedCondition)
	tests := []struct {
		name       string
		stage      v1alpha1.Stage
		snap       *Snapshot
		want       []string
		wantReason string
		wantDone   bool
	}{
		{name: "no Binding yet: nothing to explain but the wait",
			stage: dev, snap: at("dev").Snapshot, wantReason: v1alpha1.ReasonWaitingForBinding},
		{name: "every object, selected or not, with the condition's value",
			stage: dev, snap: at("dev").bound().reporting(deployment, "0").reporting(configMap, "1").Snapshot,
			want:       []string{"deployments.apps web/nginx: selected=true status=true holds=false", "configmaps web/settings: selected=false status=true holds=-", "namespaces web: selected=false status=false holds=-"},
			wantReason: v1alpha1.ReasonConditionNotMet},
		{name: "without a filter every object is evaluated, not only up to the first that fails",
			stage: stageWith("dev", "", seedCondition), snap: at("dev").bound().reporting(deployment, "1").reporting(configMap, "0").Snapshot,
			want:       []string{"deployments.apps web/nginx: selected=true status=true holds=true", "configmaps web/settings: selected=true status=true holds=false", "namespaces web: selected=true status=false holds=-"},
			wantReason: v1alpha1.ReasonWaitingForStatus},
		{name: "the condition holds for every selected object",
			stage: dev, snap: at("dev").bound().reporting(deployment, "1").Snapshot,
			want:       []string{"deployments.apps web/nginx: selected=true status=true holds=true", "configmaps web/settings: selected=false status=false holds=-", "namespaces web: selected=false status=false holds=-"},
			wantReason: v1alpha1.ReasonStageAdvanced, wantDone: true},
		{name: "an evaluation error is the object's, and the others still get theirs",
			stage:      stageWith("dev", "", `obj.results[0].rows[5].columns[0].float == '1'`),
			snap:       at("dev").bound().reporting(deployment, "1").reporting(configMap, "1").Snapshot,
			want:       []string{"deployments.apps web/nginx: selected=true status=true holds=error", "configmaps web/settings: selected=true status=true holds=error", "namespaces web: selected=true status=false holds=-"},
			wantReason: v1alpha1.ReasonEvaluationError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := ExplainStage(engine, tt.stage, tt.snap.ActiveBindingPolicy, tt.snap.Binding, tt.snap.CombinedStatuses)
			if err != nil {
				t.Fatal(err)
			}
			if got := verdicts(e); !slices.Equal(got, tt.want) {
				t.Errorf("objects\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
			if e.Reason != tt.wantReason || e.Done != tt.wantDone {
				t.Errorf("reason %s done %t (%s), want %s %t", e.Reason, e.Done, e.Message, tt.wantReason, tt.wantDone)
			}
			if tt.snap.Binding != nil && !slices.Equal(e.Clusters, []string{"cluster1", "cluster2"}) {
				t.Errorf("clusters %v", e.Clusters)
			}
		})
	}

	if _, err := ExplainStage(engine, stageWith("dev", "", "obj.results.exists("), nil, nil, nil); err == nil ||
		!strings.Contains(err.Error(), `stage "dev"`) {
		t.Errorf("an expression that does not compile: %v, want the compile error naming the stage", err)
	}
}
