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

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// TestRecordAndReplayAStage records, with `kubectl stager record`, stage
// dev of a rollout the stager binary runs over KubeStellar's real status
// path, once while it waits for its Deployment and once done, and replays
// each recording offline with `kubectl stager test`: the offline judgement
// gets the outcome, reason and message the controller recorded. An edited
// input then makes the replay report the mismatch.
func TestRecordAndReplayAStage(t *testing.T) {
	const space, name = "wds1", "recorded-e2e"
	startRollout(t, name, func(p *v1alpha1.StagedBindingPolicy) { p.Spec.Placement = v1alpha1.PlacementAccumulate })
	kubeconfig := filepath.Join(t.TempDir(), "wds1.kubeconfig")
	if err := os.WriteFile(kubeconfig, suite.stack.WDS[space].Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	recordAndReplay := func(t *testing.T, stage, dir, want string) {
		t.Helper()
		out, err := runPlugin(suite.ctx, "--kubeconfig", kubeconfig, "record", name, "--stage", stage, "-o", dir)
		if err != nil || !strings.Contains(out, "the controller recorded "+want) {
			t.Fatalf("record %s: %v\n%s\nwant the controller's %s", stage, err, out, want)
		}
		out, err = runPlugin(suite.ctx, "test", dir)
		if err != nil || !strings.Contains(out, "1 passed, 0 failed") {
			t.Fatalf("replaying %s: %v\n%s", dir, err, out)
		}
	}

	// dev waits for its Deployment, whose CombinedStatus has reached the
	// stager: nothing changes until the WECs report it available.
	waiting := policies(space).WaitFor(t, name, "dev to wait for its Deployment", func(p *v1alpha1.StagedBindingPolicy) bool {
		r := p.Status.StageNamed("dev")
		return r != nil && r.Phase == v1alpha1.StageActive && strings.Contains(r.Message, "condition holds for 0 of 1 object(s); not yet for")
	})
	notDone := filepath.Join(t.TempDir(), "dev-waiting")
	recordAndReplay(t, "dev", notDone, "NotDone "+v1alpha1.ReasonConditionNotMet)
	if msg := waiting.Status.StageNamed("dev").Message; !strings.Contains(readFile(t, notDone, "gatetest.yaml"), msg) {
		t.Errorf("the recorded case does not expect the controller's message %q", msg)
	}

	makeAvailable(space, name, "dev")
	policies(space).WaitFor(t, name, "dev done, test active", func(p *v1alpha1.StagedBindingPolicy) bool {
		r := p.Status.StageNamed("dev")
		return p.Status.ActiveStage == "test" && r != nil && r.Phase == v1alpha1.StageSucceeded
	})
	done := filepath.Join(t.TempDir(), "dev-done")
	recordAndReplay(t, "dev", done, "Done")

	// The first recording, its expectation kept, now replayed on the
	// statuses of the second: the offline judgement disagrees, and says so.
	statuses := readFile(t, done, "combinedstatuses.yaml")
	if err := os.WriteFile(filepath.Join(notDone, "combinedstatuses.yaml"), []byte(statuses), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runPlugin(suite.ctx, "test", notDone)
	if err == nil || !strings.Contains(out, "0 passed, 1 failed") || !strings.Contains(out, "outcome: expected NotDone, got Done\n") {
		t.Fatalf("replaying the waiting stage's expectation on the done stage's statuses: %v\n%s\nwant a mismatch, got Done", err, out)
	}
}

// readFile returns the text of a file of dir.
func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
