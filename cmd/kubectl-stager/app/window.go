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
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// waitingForWindow returns status.window while the policy's
// WaitingForWindow condition is True, else nil.
func waitingForWindow(p *v1alpha1.StagedBindingPolicy) *v1alpha1.WindowStatus {
	if p.Status.Window == nil || !meta.IsStatusConditionPresentAndEqual(p.Status.Conditions, v1alpha1.ConditionWaitingForWindow, metav1.ConditionTrue) {
		return nil
	}
	return p.Status.Window
}

// reasonCell is get's REASON: the Progressing condition's reason, or,
// while a stage waits for its change window, which and for how long from
// now: "WaitingForWindow(prod in 4h12m)".
func reasonCell(p *v1alpha1.StagedBindingPolicy, now time.Time) string {
	w := waitingForWindow(p)
	if w == nil {
		return orNone(reasonShown(p).Reason)
	}
	return fmt.Sprintf("%s(%s in %s)", v1alpha1.ReasonWaitingForWindow, w.Stage, rollout.ShortDuration(w.OpensAt.Sub(now)))
}

// printWindow prints explain's Window line while a stage waits for its
// change window: "stage prod opens at 2026-11-30 02:00 CET, in 4h12m",
// the time in the window's zone and the wait counted from now.
func printWindow(w io.Writer, p *v1alpha1.StagedBindingPolicy, now time.Time) {
	ws := waitingForWindow(p)
	if ws == nil {
		return
	}
	fprintf(w, "Window:\tstage %s %s\n", ws.Stage, rollout.DescribeOpening(ws.OpensAt.Time, ws.TimeZone, now))
}
