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

package dashboard

import (
	"fmt"
	"html/template"
	"net/url"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/textcut"
)

// cut bounds a string from a WDS for display, marking the cut.
func cut(s string) string {
	if len(s) <= maxString {
		return s
	}
	return textcut.Cut(s, maxString, fmt.Sprintf("… [truncated, %d bytes in all]", len(s)))
}

var funcs = template.FuncMap{
	"cut": cut,
	"query": func(space, name string) string {
		return url.Values{"space": {space}, "name": {name}}.Encode()
	},
}

// policyView is what the page shows of one policy.
type policyView struct {
	// Space and Name are the API's names, which links and forms carry
	// back: not redacted.
	Space, Name string `redact:"-"`
	Phase       string
	Revision    string
	Suspended   bool
	Aborted     bool
	Message     string
	Failure     string
	Wave        string
	Window      string
	Stages      []stageView
	// Verbs are the actions offered, empty when the dashboard is read-only.
	// Neither they nor the token come from a WDS: not redacted.
	Verbs []string `redact:"-"`
	CSRF  string   `redact:"-"`
}

// stageView is what the page shows of one stage.
type stageView struct {
	Name, Phase, Revision                 string
	Active                                bool
	Total, Succeeded, Progressing, Failed int32
	ToApply                               int32
	Batch                                 string
	Clusters                              []v1alpha1.ClusterStatus
	// FailedClusters names the clusters that failed or timed out.
	FailedClusters                           string
	Approval                                 string
	AwaitingApproval                         bool
	Deadline                                 string
	Message                                  string
	Analyses                                 []analysisView
	ApprovedBy, Promotion, Regressed, Placed string
}

// analysisView is what the page shows of one analysis.
type analysisView struct {
	Name, Phase                      string
	Successful, Failed, Inconclusive int32
	DryRun                           bool
	Measurements                     []measurementView
}

type measurementView struct {
	Age, Phase, Value, Message string
}

// maxMeasurementsShown bounds the measurements shown per analysis.
const maxMeasurementsShown = 5

// viewOf makes the view of a policy at now.
func viewOf(space string, p *v1alpha1.StagedBindingPolicy, now time.Time) policyView {
	st := &p.Status
	v := policyView{Space: space, Name: p.Name, Phase: string(st.Phase), Suspended: p.Spec.Suspend, Aborted: p.Spec.Abort}
	if v.Phase == "" {
		v.Phase = "Unknown"
	}
	switch {
	case st.CurrentRevision != "" && st.UpdateRevision != "" && st.CurrentRevision != st.UpdateRevision:
		v.Revision = st.CurrentRevision + "→" + st.UpdateRevision
	case st.UpdateRevision != "":
		v.Revision = st.UpdateRevision
	default:
		v.Revision = st.CurrentRevision
	}
	for _, c := range st.Conditions {
		if c.Type == v1alpha1.ConditionReady && c.Status != metav1.ConditionTrue {
			v.Message = c.Message
		}
	}
	if f := st.Failure; f != nil {
		action := ""
		if f.Action != "" {
			action = " (" + string(f.Action) + ")"
		}
		v.Failure = fmt.Sprintf("stage %s: %s%s, %s ago: %s", f.Stage, f.Reason, action, age(f.Time.Time, now), f.Message)
	}
	if w := st.Wave; w != nil {
		v.Wave = fmt.Sprintf("%s step %s (%s): %s", w.Name, w.Step, w.Position, w.State)
	}
	if w := st.Window; w != nil {
		v.Window = fmt.Sprintf("stage %s waits for its change window, which opens %s (%s, %s)", w.Stage,
			w.OpensAt.UTC().Format(time.RFC3339), relative(w.OpensAt.Time, now), w.TimeZone)
	}
	for _, stage := range p.Spec.Stages {
		sv := stageView{Name: stage.Name, Phase: string(v1alpha1.StagePending), Active: stage.Name == st.ActiveStage}
		if r := st.StageNamed(stage.Name); r != nil {
			fillStage(&sv, r, now)
		}
		v.Stages = append(v.Stages, sv)
	}
	return v
}

// fillStage fills a stage's view from its record.
func fillStage(sv *stageView, r *v1alpha1.StageStatus, now time.Time) {
	sv.Phase, sv.Revision, sv.Message, sv.ApprovedBy = string(r.Phase), r.Revision, r.Message, r.ApprovedBy
	if c := r.Clusters; c != nil {
		sv.Total, sv.Succeeded, sv.Failed, sv.Progressing, sv.ToApply = c.Total, c.Succeeded, c.Failed+c.TimedOut, c.Progressing(), c.ToApply()
		if c.Batches > 0 {
			sv.Batch = fmt.Sprintf("batch %d of %d", c.Batch, c.Batches)
		}
		sv.Clusters = c.Clusters
		sv.FailedClusters = failedClusters(c.Clusters)
	}
	if r.Phase == v1alpha1.StageAwaitingApproval {
		sv.AwaitingApproval = true
		sv.Approval = "awaiting approval"
		if r.ApprovalRequestedTime != nil {
			sv.Approval += " for " + age(r.ApprovalRequestedTime.Time, now)
		}
	} else if r.ApprovedBy != "" {
		sv.Approval = "approved by " + r.ApprovedBy
	}
	if r.ProgressDeadlineTime != nil && r.Phase == v1alpha1.StageActive {
		sv.Deadline = fmt.Sprintf("progress deadline %s (%s)", r.ProgressDeadlineTime.UTC().Format(time.RFC3339), relative(r.ProgressDeadlineTime.Time, now))
	}
	if r.PlacedTime != nil {
		sv.Placed = age(r.PlacedTime.Time, now) + " ago"
	}
	if pr := r.Promotion; pr != nil {
		sv.Promotion = fmt.Sprintf("promoted by %s %s ago: %s", pr.By, age(pr.Time.Time, now), pr.Reason)
	}
	if rg := r.Regressed; rg != nil {
		sv.Regressed = fmt.Sprintf("regressed %s ago: %s", age(rg.Time.Time, now), rg.Message)
	}
	for _, a := range r.Analyses {
		av := analysisView{Name: a.Name, Phase: string(a.Phase), Successful: a.Successful, Failed: a.Failed,
			Inconclusive: a.Inconclusive, DryRun: a.DryRun}
		for i := len(a.Measurements) - 1; i >= 0 && len(av.Measurements) < maxMeasurementsShown; i-- {
			m := a.Measurements[i]
			av.Measurements = append(av.Measurements, measurementView{Age: age(m.Time.Time, now) + " ago", Phase: string(m.Phase),
				Value: m.Value, Message: m.Message})
		}
		sv.Analyses = append(sv.Analyses, av)
	}
}

// failedClusters names the clusters that failed, and those that timed
// out marked so, in the record's order (failed and timed out first).
func failedClusters(clusters []v1alpha1.ClusterStatus) string {
	var names []string
	for _, c := range clusters {
		switch c.State {
		case v1alpha1.ClusterFailed:
			names = append(names, c.Name)
		case v1alpha1.ClusterTimedOut:
			names = append(names, c.Name+" (timed out)")
		}
	}
	return strings.Join(names, ", ")
}

// clusterRow is one cluster of a stage placed in batches, as the policy's
// page lists it.
type clusterRow struct {
	Stage, Name string
	State       v1alpha1.ClusterState
}

// clusterRows lists the named clusters of every stage placed in batches,
// in the stages' order.
func clusterRows(p *v1alpha1.StagedBindingPolicy) []clusterRow {
	var rows []clusterRow
	for _, stage := range p.Spec.Stages {
		r := p.Status.StageNamed(stage.Name)
		if r == nil || r.Clusters == nil {
			continue
		}
		for _, c := range r.Clusters.Clusters {
			rows = append(rows, clusterRow{Stage: stage.Name, Name: c.Name, State: c.State})
		}
	}
	return rows
}

// eventView is what the page shows of one Event.
type eventView struct {
	Age, Type, Reason, Message string
	Count                      int32
}

// eventViews returns the Events latest first, at most maxEvents.
func eventViews(events []corev1.Event, now time.Time) []eventView {
	sort.SliceStable(events, func(i, j int) bool { return eventTime(events[i]).After(eventTime(events[j])) })
	var out []eventView
	for i, e := range events {
		if i == maxEvents {
			break
		}
		out = append(out, eventView{Age: age(eventTime(e), now), Type: e.Type, Reason: e.Reason, Message: e.Message, Count: eventCount(e)})
	}
	return out
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// eventCount is how often an Event happened: its series' count for one
// posted through the events.k8s.io API (the core API shows count 0 for
// those), else its count, and at least once.
func eventCount(e corev1.Event) int32 {
	switch {
	case e.Series != nil && e.Series.Count > 0:
		return e.Series.Count
	case e.Count > 0:
		return e.Count
	}
	return 1
}

// age tells how long ago t was, as kubectl does.
func age(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// relative tells when t is from now.
func relative(t, now time.Time) string {
	if t.Before(now) {
		return duration.HumanDuration(now.Sub(t)) + " ago"
	}
	return "in " + duration.HumanDuration(t.Sub(now))
}
