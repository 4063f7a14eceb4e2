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
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// frozenCondition returns the policy's Frozen condition while it is
// True (a RolloutFreeze holds a start), or nil.
func frozenCondition(p *v1alpha1.StagedBindingPolicy) *metav1.Condition {
	c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionFrozen)
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	return c
}

// reasonShown is what get's REASON and MESSAGE columns show of the
// policy: while a freeze holds a start, Frozen and the freeze's message
// (which freeze, until when, why), as it is what stops the rollout;
// else the Progressing condition.
func reasonShown(p *v1alpha1.StagedBindingPolicy) metav1.Condition {
	if c := frozenCondition(p); c != nil {
		return metav1.Condition{Reason: v1alpha1.ConditionFrozen, Message: c.Message}
	}
	return progressing(p)
}

// printFrozen prints explain's Frozen line while a freeze holds a start:
// the condition's reason and message.
func printFrozen(w io.Writer, p *v1alpha1.StagedBindingPolicy) {
	if c := frozenCondition(p); c != nil {
		fprintf(w, "Frozen:\t%s: %s\n", c.Reason, c.Message)
	}
}
