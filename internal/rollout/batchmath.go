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
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// This file holds the arithmetic of a stage placed in batches, apart from
// its clusters' states (CEL, deadlines: assessClusters): as OCM's rollout
// helpers split the clusters' statuses from the choice of what to roll out
// next, and as Argo Rollouts computes its steps from replica counts.

// batchStep is what the arithmetic of batches says a stage does next.
type batchStep int

// The steps of a stage placed in batches.
const (
	// stepWait waits for the clusters of the batch that are Progressing.
	stepWait batchStep = iota
	// stepFill places the next cluster at once: the first of the stage, or
	// one of a batch that has started.
	stepFill
	// stepBatchDone: the batch is done, and the next cluster, which starts
	// a batch, is placed once the stage has soaked.
	stepBatchDone
	// stepDone: every cluster is placed, none Progressing, one at least
	// Succeeded, within the budget.
	stepDone
	// stepNoneSucceeded: every cluster is placed, none Progressing, and
	// none Succeeded.
	stepNoneSucceeded
	// stepCanaryFailed: a cluster of the canary batch failed; nothing more
	// is placed.
	stepCanaryFailed
	// stepBudgetExceeded: more clusters failed than maxFailures allows;
	// nothing more is placed.
	stepBudgetExceeded
)

// batchTally is the arithmetic of a stage's batches over the states of its
// placed clusters.
type batchTally struct {
	step batchStep
	// total is how many clusters the stage selects, placed how many are
	// placed, and the rest how many are in each state.
	total, placed, succeeded, failed, timedOut, progressing int
	// allowed is how many clusters may fail (maxFailures).
	allowed int
	// batch is the batch being placed or awaited, of batches; nextBatch
	// that of the next cluster to place.
	batch, batches, nextBatch int
	// filling says the next cluster belongs to a batch that has started.
	filling bool
	// canaryFailed are the indexes, in placement order, of the canary
	// batch's clusters that failed or timed out.
	canaryFailed []int
}

// tallyBatches is the arithmetic of a stage of total clusters (at least
// one) whose placed clusters are in the given states, in placement order:
// the counts, the batch, and the step the stage takes next. The canary
// batch may not fail; more failures than maxFailures stop the stage; the
// next cluster goes at once while its batch fills, else once no placed
// cluster is Progressing.
func tallyBatches(stage v1alpha1.Stage, total int, states []v1alpha1.ClusterState) batchTally {
	first, size, allowed := batchSizes(stage, total)
	t := batchTally{total: total, placed: len(states), allowed: allowed}
	for i, s := range states {
		switch s {
		case v1alpha1.ClusterSucceeded:
			t.succeeded++
		case v1alpha1.ClusterFailed:
			t.failed++
		case v1alpha1.ClusterTimedOut:
			t.timedOut++
		default:
			t.progressing++
		}
		if (s == v1alpha1.ClusterFailed || s == v1alpha1.ClusterTimedOut) && stage.Canary != nil && i < first {
			t.canaryFailed = append(t.canaryFailed, i)
		}
	}
	t.batch, t.batches = batchOf(t.placed, first, size, total)
	t.nextBatch = batchNumber(t.placed+1, first, size)
	switch {
	case len(t.canaryFailed) > 0:
		t.step = stepCanaryFailed
	case t.failed+t.timedOut > allowed:
		t.step = stepBudgetExceeded
	case t.placed < total:
		t.filling = t.placed > 0 && !isBoundary(t.placed, first, size)
		switch {
		case t.placed == 0 || t.filling:
			t.step = stepFill
		case t.progressing == 0:
			t.step = stepBatchDone
		default:
			t.step = stepWait
		}
	case t.progressing > 0:
		t.step = stepWait
	case t.succeeded == 0:
		t.step = stepNoneSucceeded
	default:
		t.step = stepDone
	}
	return t
}

// batchSizes returns the size of a stage's first batch (canary, or
// maxConcurrency), of every later one (maxConcurrency, a percentage
// rounded up, at least one), and how many clusters may fail (maxFailures,
// a percentage rounded down), for a stage of total clusters.
func batchSizes(stage v1alpha1.Stage, total int) (first, size, allowed int) {
	size = scaled(stage.MaxConcurrency, total, true)
	size = max(size, 1)
	first = size
	if stage.Canary != nil && *stage.Canary > 0 {
		first = int(*stage.Canary)
	}
	allowed = max(scaled(stage.MaxFailures, total, false), 0)
	return min(first, total), size, allowed
}

// scaled is value as a number of clusters out of total; 0 for no value or
// one that does not parse (the CRD admits neither).
func scaled(value *intstr.IntOrString, total int, roundUp bool) int {
	if value == nil {
		return 0
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(value, total, roundUp)
	if err != nil {
		return 0
	}
	return n
}

// isBoundary reports whether n placed clusters fill whole batches.
func isBoundary(n, first, size int) bool {
	return n == first || n > first && (n-first)%size == 0
}

// batchNumber is the batch, from 1, of the n-th cluster placed (from 1).
func batchNumber(n, first, size int) int {
	if n <= first {
		return 1
	}
	return 2 + (n-first-1)/size
}

// batchOf returns the batch being placed or awaited with placed clusters
// placed, and how many batches total clusters make.
func batchOf(placed, first, size, total int) (batch, count int) {
	count = batchNumber(total, first, size)
	return min(batchNumber(max(placed, 1), first, size), count), count
}
