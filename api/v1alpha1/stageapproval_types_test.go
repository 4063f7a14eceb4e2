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

package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestApprovedCountsOnlyItsGenerationAndRevision: an approval counts for the
// generation it was observed at and the revision it names (none: any).
func TestApprovedCountsOnlyItsGenerationAndSpecDigest(t *testing.T) {
	fresh := func() *StageApproval {
		a := &StageApproval{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Spec: StageApprovalSpec{SpecDigest: "r3"}}
		a.SetApproved("alice", metav1.Now())
		return a
	}
	if a := fresh(); a.Approved() == nil || a.Status.ApprovedSpecDigest != "r3" {
		t.Errorf("SetApproved gave %+v: want approved, naming spec digest r3", a.Status)
	}
	for name, change := range map[string]func(*StageApproval){
		"a later generation":  func(a *StageApproval) { a.Generation = 4 },
		"another spec digest": func(a *StageApproval) { a.Status.ApprovedSpecDigest = "r2" },
		"the spec moved on":   func(a *StageApproval) { a.Spec.SpecDigest = "r4" },
		"the condition False": func(a *StageApproval) { a.Status.Conditions[0].Status = metav1.ConditionFalse },
	} {
		a := fresh()
		change(a)
		if a.Approved() != nil {
			t.Errorf("%s: the approval still counts", name)
		}
	}
	a := fresh()
	a.Status.ApprovedSpecDigest = "" // approved by hand, naming no revision
	if a.Approved() == nil {
		t.Error("an approval naming no revision does not count at its generation")
	}
}
