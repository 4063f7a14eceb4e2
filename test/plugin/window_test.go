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

package plugin

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// openingPattern is the absolute opening in explain's Window line, which
// depends on when the test runs: the golden file has it as <opening>, and
// the test checks it against the status.
var openingPattern = regexp.MustCompile(`opens at \d{4}-\d{2}-\d{2} \d{2}:\d{2} [A-Z+\-0-9]+`)

// TestWindowOutputs checks what get and explain print of a policy whose
// prod stage waits for its change window: REASON says which stage and
// for how long, explain's Window line when it opens, in the window's zone
// and from now.
func TestWindowOutputs(t *testing.T) {
	nightly := rollout(t, "nightly", func(p *v1alpha1.StagedBindingPolicy) {
		p.Spec.Stages[2].Windows = []v1alpha1.ChangeWindow{{Schedule: "0 2 * * *", Duration: metav1.Duration{Duration: 4 * time.Hour}, TimeZone: "Europe/Paris"}}
	})
	// The golden outputs of TestOutputs list every policy of the space.
	t.Cleanup(func() {
		if err := suite.wds.Client.Delete(suite.ctx, nightly); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
		environment.Eventually(t, 30*time.Second, "the nightly policy to go", func() error {
			err := suite.wds.Client.Get(suite.ctx, client.ObjectKeyFromObject(nightly), &v1alpha1.StagedBindingPolicy{})
			if client.IgnoreNotFound(err) != nil {
				return err
			}
			if err == nil {
				return fmt.Errorf("policy nightly is still there")
			}
			return nil
		})
	})
	now := nightly.CreationTimestamp.Add(time.Hour)
	opensAt := now.Add(4*time.Hour + 12*time.Minute)
	message := `stage "prod" waits for its change window to start: the next opens at ...`
	setStatus(t, nightly, v1alpha1.StagedBindingPolicyStatus{ActiveStage: "test", Phase: v1alpha1.RolloutProgressing,
		Window: &v1alpha1.WindowStatus{Stage: "prod", OpensAt: metav1.NewTime(opensAt), TimeZone: "Europe/Paris"},
		Conditions: []metav1.Condition{
			trueCondition(v1alpha1.ConditionWaitingForWindow, v1alpha1.ReasonWaitingForWindow, message, now),
			trueCondition(v1alpha1.ConditionProgressing, v1alpha1.ReasonConditionNotMet, `stage "test": condition holds for all 1 object(s) on 1 cluster(s); prod waits for its change window`, now),
		},
		Stages: []v1alpha1.StageStatus{
			{Name: "dev", Phase: v1alpha1.StageSucceeded, StartTime: at(now.Add(-50 * time.Minute)), CompletionTime: at(now.Add(-40 * time.Minute))},
			{Name: "test", Phase: v1alpha1.StageActive, StartTime: at(now.Add(-40 * time.Minute)), BindingPolicy: "nightly.stage.test",
				Message: "condition holds for all 1 object(s) on 1 cluster(s)"},
			{Name: "prod", Phase: v1alpha1.StagePending},
		}})

	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"get-window", []string{"get", "nightly"}},
		{"explain-window", []string{"explain", "nightly"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, now, "", tt.args...)
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if tt.name == "explain-window" {
				want := "opens at " + opensAt.In(paris).Format("2006-01-02 15:04 MST")
				if !strings.Contains(out, want) {
					t.Fatalf("explain does not say %q:\n%s", want, out)
				}
			}
			golden(t, tt.name, openingPattern.ReplaceAllString(out, "opens at <opening>"))
		})
	}
}
