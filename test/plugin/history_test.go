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
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// TestHistoryAndUndo prints a policy's history and undoes its rollout:
// undo goes back to the newest completed revision whose objects are in
// the WDS, and refuses, changing nothing, a revision whose objects are
// gone, one that never completed, and a policy without spec.revision.
func TestHistoryAndUndo(t *testing.T) {
	ctx := suite.ctx
	// The other tests list every policy of the WDS: leave none behind.
	var made []client.Object
	t.Cleanup(func() {
		for _, obj := range made {
			if err := client.IgnoreNotFound(suite.wds.Client.Delete(ctx, obj)); err != nil {
				t.Errorf("deleting %s: %v", obj.GetName(), err)
			}
		}
	})
	now := time.Now().Truncate(time.Second)
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	// The objects of v1 and v2 are in the WDS; v0's are gone.
	for _, rev := range []string{"v1", "v2"} {
		d := policytest.Deployment(namespace, "hist-"+rev)
		d.Labels[policytest.AppLabel] = "hist"
		d.Labels[v1alpha1.DefaultRevisionLabelKey] = rev
		if err := suite.wds.Client.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		made = append(made, d)
	}
	// An object of v0 that the policy's downsync does not select counts
	// for nothing.
	stray := policytest.ConfigMap(namespace, "other")
	stray.Labels[v1alpha1.DefaultRevisionLabelKey] = "v0"
	if err := suite.wds.Client.Create(ctx, stray); err != nil {
		t.Fatal(err)
	}
	made = append(made, stray)
	p := policytest.ThreeStages("hist", "hist")
	p.Spec.Revision = &v1alpha1.Revision{Name: "v3"}
	if err := suite.wds.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	made = append(made, p)
	setStatus(t, p, v1alpha1.StagedBindingPolicyStatus{ActiveStage: "dev", Phase: v1alpha1.RolloutProgressing,
		CurrentRevision: "v2", UpdateRevision: "v3",
		Stages: []v1alpha1.StageStatus{{Name: "dev", Phase: v1alpha1.StageActive, StartTime: at(now.Add(-5 * time.Minute))},
			{Name: "test", Phase: v1alpha1.StagePending}, {Name: "prod", Phase: v1alpha1.StagePending}},
		History: []v1alpha1.RevisionHistory{
			{Revision: "v0", Outcome: v1alpha1.OutcomeCompleted, StartTime: ago(72 * time.Hour), EndTime: ptr.To(ago(71 * time.Hour)), ApprovedBy: []string{"alice"}},
			{Revision: "v1", Outcome: v1alpha1.OutcomeCompleted, StartTime: ago(48 * time.Hour), EndTime: ptr.To(ago(47 * time.Hour)), ApprovedBy: []string{"alice", "bob"}},
			{Revision: "v2", Outcome: v1alpha1.OutcomeAborted, StartTime: ago(30 * time.Hour), EndTime: ptr.To(ago(29 * time.Hour))},
			{Revision: "v2", Outcome: v1alpha1.OutcomeCompleted, StartTime: ago(26 * time.Hour), EndTime: ptr.To(ago(25*time.Hour + 30*time.Minute)),
				ApprovedBy: []string{"carol"}, PromotedBy: []string{"dave"}},
			{Revision: "v3", Outcome: v1alpha1.OutcomeProgressing, StartTime: ago(5 * time.Minute)},
		}})

	out, err := run(t, now, "", "history", "hist")
	if err != nil {
		t.Fatalf("history: %v: %s", err, out)
	}
	golden(t, "history", out)

	specRevision := func() string {
		current := &v1alpha1.StagedBindingPolicy{}
		if err := suite.wds.Client.Get(ctx, types.NamespacedName{Name: "hist"}, current); err != nil {
			t.Fatal(err)
		}
		return current.Spec.Revision.Name
	}
	var refusals strings.Builder
	for _, args := range [][]string{
		{"undo", "hist", "--to-revision", "v0"}, // completed, its objects gone
		{"undo", "hist", "--to-revision", "v9"}, // never rolled out
		{"undo", "hist", "--to-revision", "v3"}, // the one the spec names
	} {
		out, err := run(t, now, "", args...)
		if err == nil {
			t.Errorf("%v: succeeded (%s), want a refusal", args, out)
		}
		refusals.WriteString("$ kubectl stager " + strings.Join(args, " ") + "\n" + out)
		if got := specRevision(); got != "v3" {
			t.Fatalf("%v refused, and spec.revision is %q, want it left at v3", args, got)
		}
	}
	golden(t, "undo-refused", refusals.String())

	// The downsync's namespace selectors count: with one that the
	// objects' namespace does not meet, v1's objects are not the
	// policy's; with one it meets, they are.
	selectNamespaces := func(labels map[string]string) {
		t.Helper()
		current := &v1alpha1.StagedBindingPolicy{}
		if err := suite.wds.Client.Get(ctx, types.NamespacedName{Name: "hist"}, current); err != nil {
			t.Fatal(err)
		}
		current.Spec.Downsync[0].NamespaceSelectors = []metav1.LabelSelector{{MatchLabels: labels}}
		if err := suite.wds.Client.Update(ctx, current); err != nil {
			t.Fatal(err)
		}
	}
	selectNamespaces(map[string]string{"team": "nobody"})
	if out, err := run(t, now, "", "undo", "hist", "--to-revision", "v1"); err == nil || !strings.Contains(out, `no object of revision "v1" is left`) {
		t.Errorf("undo to v1 with its namespace not selected: %v: %s, want a refusal", err, out)
	}
	selectNamespaces(map[string]string{"kubernetes.io/metadata.name": namespace})

	// Undo without --to-revision: the newest Completed other than v3, v2.
	out, err = run(t, now, "", "undo", "hist")
	if err != nil {
		t.Fatalf("undo: %v: %s", err, out)
	}
	golden(t, "undo", out)
	if got := specRevision(); got != "v2" {
		t.Errorf("after undo spec.revision is %q, want v2", got)
	}

	// A policy without spec.revision has nothing to go back to.
	plain := rollout(t, "plain", nil)
	made = append(made, plain, policytest.Deployment(namespace, "plain"), policytest.ConfigMap(namespace, "plain"))
	out, err = run(t, now, "", "undo", plain.Name)
	if err == nil || !strings.Contains(out, "has no spec.revision") {
		t.Errorf("undo of a policy without spec.revision: %v: %s, want a refusal", err, out)
	}
	out, err = run(t, now, "", "history", plain.Name)
	if err != nil || !strings.Contains(out, "has no spec.revision") {
		t.Errorf("history of a policy without spec.revision: %v: %s", err, out)
	}
}
