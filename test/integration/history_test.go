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
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	plugin "github.com/kubestellar/workload-stager/cmd/kubectl-stager/app"
	"github.com/kubestellar/workload-stager/internal/forecast"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// TestUndoRollsACompletedRevisionOutAgain rolls v1 and then v2 out to
// completion with the suite's stager, undoes with kubectl stager undo, and
// sees v1 rolled out again stage by stage (prod keeping v2 until v1
// reaches it), the history reading v1, v2, v1; then, v2's objects
// deleted, undo to v2 is refused and spec.revision stays v1.
func TestUndoRollsACompletedRevisionOutAgain(t *testing.T) {
	s := suite.wds1
	const name = "undo"
	for _, rev := range []string{"v1", "v2"} {
		d := policytest.Deployment(workloadNamespace, name+"-"+rev)
		d.Labels[policytest.AppLabel] = name
		d.Labels[v1alpha1.DefaultRevisionLabelKey] = rev
		if err := s.Client.Create(suite.ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	p := newPolicy(name, name)
	p.Spec.Revision = &v1alpha1.Revision{Name: "v1"}
	create(t, s, p)
	gates := func(rev string, open bool, stages ...string) {
		for _, stage := range stages {
			s.availability.SetAvailable(v1alpha1.StagePlacement(name, stage).At(rev).String(), open)
		}
		s.sim.Resync()
	}
	completed := func(rev string) *v1alpha1.StagedBindingPolicy {
		t.Helper()
		return policies(s).WaitFor(t, name, "revision "+rev+" completed", func(p *v1alpha1.StagedBindingPolicy) bool {
			return p.Status.Phase == v1alpha1.RolloutCompleted && p.Status.CurrentRevision == rev && p.Status.UpdateRevision == rev
		})
	}
	gates("v1", true, "dev", "test")
	completed("v1")
	updateObject(t, s, name, func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Revision.Name = "v2" })
	gates("v2", true, "dev", "test")
	completed("v2")

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, s.Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	undo := func(args ...string) (string, error) {
		var out bytes.Buffer
		cmd := plugin.New(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, time.Now)
		cmd.SetArgs(append([]string{"--kubeconfig=" + kubeconfig, "undo", name}, args...))
		err := cmd.ExecuteContext(suite.ctx)
		return out.String(), err
	}

	// v1 goes out again stage by stage: dev waits for its condition on v1
	// while prod keeps running v2 (under placement Replace, the last stage
	// keeps the completed revision).
	gates("v1", false, "dev", "test")
	if out, err := undo(); err != nil {
		t.Fatalf("undo: %v: %s", err, out)
	}
	inDev := policies(s).WaitFor(t, name, "v1 active in dev", func(p *v1alpha1.StagedBindingPolicy) bool {
		return p.Status.UpdateRevision == "v1" && p.Status.ActiveStage == "dev"
	})
	// The two completed rollouts recorded each stage's duration: the
	// third has a forecast from both (internal/forecast, as the plugin
	// and the dashboard compute it).
	if f := forecast.For(inDev, time.Now()); f.Kind != forecast.Estimated || f.Basis.Rollouts != 2 {
		t.Errorf("with v1 in dev after two completed rollouts, the forecast is %s (%s, %s), want one from 2 earlier rollouts: %s",
			f.Kind, f.Sentence(time.Now()), f.Basis, policytest.Describe(inDev))
	}
	if got := inDev.Status.StageNamed("prod").Revision; got != "v2" {
		t.Errorf("with v1 in dev, prod keeps %q, want v2 until v1 reaches it (%s)", got, policytest.Describe(inDev))
	}
	waitFor(t, "dev placed at v1 and prod kept at v2", func() error {
		if got := strings.Join(bindingPolicies(t, s, name), " "); got != "undo.stage.dev.v1 undo.stage.prod.v2" {
			return fmt.Errorf("BindingPolicies %s", got)
		}
		return nil
	})
	gates("v1", true, "dev")
	policies(s).WaitForActiveStage(t, name, "test")
	gates("v1", true, "test")
	done := completed("v1")
	var got []string
	for _, h := range done.Status.History {
		got = append(got, fmt.Sprintf("%s %s", h.Revision, h.Outcome))
		if h.EndTime == nil || h.EndTime.Before(&h.StartTime) {
			t.Errorf("history entry %+v: want an end after its start", h)
		}
		// Each completed rollout lists every stage it did, in order,
		// each done after it started, within the rollout.
		var stages []string
		for _, st := range h.Stages {
			stages = append(stages, st.Name)
			if st.CompletionTime.Before(&st.StartTime) || st.StartTime.Before(&h.StartTime) || h.EndTime != nil && h.EndTime.Before(&st.CompletionTime) {
				t.Errorf("history entry %s %s..%v lists stage %+v: not done within it", h.Revision, h.StartTime, h.EndTime, st)
			}
		}
		if strings.Join(stages, " ") != "dev test prod" {
			t.Errorf("history entry %s %s lists the stages %v, want dev test prod", h.Revision, h.Outcome, stages)
		}
	}
	if want := []string{"v1 Completed", "v2 Completed", "v1 Completed"}; strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("history %v, want %v", got, want)
	}

	// v2's objects gone, undo to v2 is refused and the spec is left as it is.
	if err := s.Client.Delete(suite.ctx, policytest.Deployment(workloadNamespace, name+"-v2")); err != nil {
		t.Fatal(err)
	}
	out, err := undo()
	if err == nil || !strings.Contains(out, `no object of revision "v2" is left in the WDS`) {
		t.Errorf("undo to v2 with its objects gone: %v: %s, want a refusal", err, out)
	}
	current := &v1alpha1.StagedBindingPolicy{}
	if err := s.Client.Get(suite.ctx, types.NamespacedName{Name: name}, current); err != nil {
		t.Fatal(err)
	}
	if current.Spec.Revision.Name != "v1" || current.Generation != done.Generation {
		t.Errorf("after the refusal spec.revision is %q at generation %d, want v1 at %d", current.Spec.Revision.Name, current.Generation, done.Generation)
	}
}
