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
	"testing"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// What TestPlanStateMachine found, each as a table test.

// A stage done on its stage-wide BindingPolicy and then placed in batches
// (maxConcurrency set) at the same revision kept that BindingPolicy for
// ever beside its clusters' own: kept() took it for the placement the
// stage's record keeps, which for a batched stage are its clusters' own.
// After a change of the downsync it went on placing what the old one said.
func TestBatchedStageDropsItsStageWidePlacementOfTheSameRevision(t *testing.T) {
	engine := newEngine(t)
	prod := fleetStage(nil)
	f := batched(prod, "store-a", "store-b")
	p := f.Policy
	p.Spec.Revision = &v1alpha1.Revision{Name: "r1"}
	p.Status.UpdateRevision, p.Status.CurrentRevision = "r1", "r1"
	record := p.Status.StageNamed("prod")
	record.Revision = "r1"
	f = f.on("store-a", minutesAgo(30), "1").on("store-b", minutesAgo(30), "1")
	wide := resolvedAs(RevisionBindingPolicy(p, prod, "r1"), "bp-prod-r1", muchEarlier)
	f = f.alsoBP(wide)
	b := bindingFor(wide)
	f.Bindings = append(f.Bindings, *b)

	action := Plan(f.Snapshot, engine)
	if action.Type != ActionDeleteBindingPolicy || action.BindingPolicy.Name != wide.Name {
		t.Fatalf("action = %s (%s), want %s deleted: the clusters' own place revision r1", action.Type, action.Why, wide.Name)
	}
}
