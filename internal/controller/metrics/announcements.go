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

package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/announce"
)

// The results of an announcement (Announcement).
const (
	// AnnouncementPosted is an Event of status.pendingEvents the API
	// server took (announce.ResultPosted).
	AnnouncementPosted = announce.ResultPosted
	// AnnouncementRetried is a failed try to post one, to be tried
	// again (announce.ResultRetried).
	AnnouncementRetried = announce.ResultRetried
	// AnnouncementRejected is one the API server refused as such, not
	// posted (announce.ResultRejected).
	AnnouncementRejected = announce.ResultRejected
	// AnnouncementDropped is a pending Event dropped unposted because
	// more than v1alpha1.MaxPendingEvents were pending.
	AnnouncementDropped = "dropped"
	// AnnouncementRefused is a pending Event not posted because its
	// reason is none the stager gives: it did not write it.
	AnnouncementRefused = "refused"
)

var announcements = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "stager_announcements_total",
	Help: "Events recorded in a policy's status.pendingEvents, by result (posted: taken by the API server, again after a restart; retried: a failed try, tried again; rejected: refused by the API server as invalid, not posted; dropped: unposted, over the bound of pending Events; refused: a reason the stager never gives, not posted) and the Event's reason (Other for such a reason).",
}, []string{LabelSpace, LabelResult, LabelReason})

func init() {
	ctrlmetrics.Registry.MustRegister(announcements)
}

// Announcement records a result of a pending Event of reason (one of the
// Announcement* constants);
// a reason the stager never gives is labelled Other, so that entries
// written into the status by someone else cannot grow the series.
func (s *Space) Announcement(result, reason string) {
	if !v1alpha1.IsEventReason(reason) {
		reason = OtherReason
	}
	announcements.WithLabelValues(s.name, result, reason).Inc()
}

// OtherReason labels the announcements of a reason the stager never gives.
const OtherReason = "Other"
