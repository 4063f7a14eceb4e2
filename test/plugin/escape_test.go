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
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/cmd/kubectl-stager/app"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// Terminal control sequences a policy author or a space's objects could
// put in what the plugin prints: one that hides text (so that an approver
// does not see "|| true"), and OSC 52, which writes the clipboard.
const (
	hideText      = "\x1b[8m|| true\x1b[0m"
	writeClipoard = "\x1b]52;c;a3ViZWN0bCBkZWxldGU=\x07"
	rightToLeft   = "\u202e"
)

// TestHostileTextIsEscaped prints a policy whose filter, condition and
// status messages carry terminal control sequences with every command that
// shows them, and requires that no control character other than a newline
// or tab reaches the output, and that each is shown escaped.
func TestHostileTextIsEscaped(t *testing.T) {
	hostile := rollout(t, "hostile", func(p *v1alpha1.StagedBindingPolicy) {
		// Both compile: the sequences stand in string literals.
		p.Spec.Stages[0].Condition = "obj.kind == 'CombinedStatus\x1b[8m' || true || '\x1b[0m' == ''"
		p.Spec.Stages[0].Filter = "downsyncClause.namespace != '" + rightToLeft + writeClipoard + "'"
	})
	// The golden outputs of TestOutputs list every policy of the space.
	t.Cleanup(func() {
		for _, name := range []string{"hostile", "broken"} {
			p := &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if err := suite.wds.Client.Delete(suite.ctx, p); client.IgnoreNotFound(err) != nil {
				t.Error(err)
			}
		}
		environment.Eventually(t, 30*time.Second, "the hostile policies to go", func() error {
			list := &v1alpha1.StagedBindingPolicyList{}
			if err := suite.wds.Client.List(suite.ctx, list); err != nil {
				return err
			}
			for _, p := range list.Items {
				if p.Name == "hostile" || p.Name == "broken" {
					return fmt.Errorf("policy %s is still there", p.Name)
				}
			}
			return nil
		})
	})
	now := hostile.CreationTimestamp.Add(time.Hour)
	setStatus(t, hostile, v1alpha1.StagedBindingPolicyStatus{ActiveStage: "dev", Phase: v1alpha1.RolloutProgressing,
		Conditions: []metav1.Condition{
			trueCondition(v1alpha1.ConditionProgressing, v1alpha1.ReasonConditionNotMet, "stage \"dev\": "+writeClipoard+hideText, now),
		},
		Stages: []v1alpha1.StageStatus{
			{Name: "dev", Phase: v1alpha1.StageActive, StartTime: at(now.Add(-time.Minute)), BindingPolicy: "hostile.stage.dev",
				Message: "condition holds\nfor 0 of 1 " + hideText + writeClipoard},
			{Name: "test", Phase: v1alpha1.StagePending}, {Name: "prod", Phase: v1alpha1.StagePending},
		}})

	outputs := map[string]string{}
	for name, args := range map[string][]string{
		"get":             {"get", "hostile"},
		"get -o wide":     {"get", "hostile", "-o", "wide"},
		"explain":         {"explain", "hostile"},
		"explain --stage": {"explain", "hostile", "--stage", "dev"},
	} {
		out, err := run(t, now, "", args...)
		if err != nil {
			t.Fatalf("%s: %v: %s", name, err, out)
		}
		outputs[name] = out
	}
	// An expression that does not compile fails the command; cobra prints
	// the error, which quotes the expression.
	broken := rollout(t, "broken", func(p *v1alpha1.StagedBindingPolicy) {
		p.Spec.Stages[0].Condition = "true " + hideText
	})
	if out, err := run(t, broken.CreationTimestamp.Add(time.Minute), "", "eval", "broken", "--condition", "true "+writeClipoard); err == nil {
		t.Errorf("eval of an expression that does not compile succeeded: %s", out)
	} else {
		outputs["eval (an error)"] = out
	}
	var watched bytes.Buffer
	ctx, cancel := context.WithCancel(suite.ctx)
	defer time.AfterFunc(2*time.Second, cancel).Stop()
	cmd := app.New(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &watched, ErrOut: &watched}, func() time.Time { return now })
	cmd.SetArgs([]string{"--kubeconfig=" + suite.kubeconfig, "get", "hostile", "--watch", "--interval=100ms"})
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatal(err)
	}
	outputs["get --watch"] = watched.String()

	for name, out := range outputs {
		for _, r := range out {
			if r != '\n' && r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)) {
				t.Errorf("%s prints the control character %U:\n%s", name, r, out)
				break
			}
		}
	}
	for name, want := range map[string]string{"explain": `\x1b[8m' || true`, "explain --stage": `\x1b]52;c;`} {
		if !strings.Contains(outputs[name], want) {
			t.Errorf("%s does not show %s escaped:\n%s", name, want, outputs[name])
		}
	}
}
