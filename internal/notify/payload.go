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

// Package notify posts the rollout events that policies subscribe to
// (spec.notifications) to the NotificationDestinations of the stager's
// hosting cluster: as CloudEvents 1.0 in the structured JSON format, or
// as Slack-compatible text, from one bounded queue per destination and
// space, each with one worker that retries with exponential backoff and
// jitter (docs/proposals/notifications.md). The reconciler offers each
// pending Event (status.pendingEvents) a subscription wants, never
// blocking, and keeps it pending until every subscribed destination has
// it or was given up on.
package notify

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// Notice is one rollout event to post: a pending Event of a policy and
// what names it. Only these fields leave the stager.
type Notice struct {
	// Space, Namespace (empty for a cluster-scoped policy) and Policy name
	// the policy.
	Space, Namespace, Policy string
	// UID is the policy's UID: with Sequence, the event's stable id.
	UID types.UID
	// Sequence is the pending Event's sequence number.
	Sequence int64
	// Type is Normal or Warning; Reason and Note are the Event's.
	Type, Reason, Note string
	// Revision is the revision the policy rolls out, if it names one.
	Revision string
	// Time is when the change was recorded.
	Time time.Time
}

// NoticeOf is the notice of policy's pending Event e in space.
func NoticeOf(space string, policy *v1alpha1.StagedBindingPolicy, e v1alpha1.PendingEvent) Notice {
	n := Notice{Space: space, Namespace: policy.Namespace, Policy: policy.Name, UID: policy.UID, Sequence: e.Sequence,
		Type: e.Type, Reason: e.Reason, Note: e.Note, Time: e.Time.Time}
	if policy.Spec.Revision != nil {
		n.Revision = policy.Spec.Revision.Name
	}
	return n
}

// ID is the notice's CloudEvents id: the policy's UID and the Event's
// sequence number, the same on every retry and after a restart, so that
// a receiver can drop the duplicates at-least-once delivery brings.
func (n Notice) ID() string {
	return string(n.UID) + "-" + strconv.FormatInt(n.Sequence, 10)
}

// Source is the notice's CloudEvents source, a URI reference naming the
// space, the namespace (if any) and the policy, each path-escaped.
func (n Notice) Source() string {
	s := "/spaces/" + url.PathEscape(n.Space)
	if n.Namespace != "" {
		s += "/namespaces/" + url.PathEscape(n.Namespace)
	}
	return s + "/stagedbindingpolicies/" + url.PathEscape(n.Policy)
}

// TypePrefix begins every CloudEvents type the stager posts.
const TypePrefix = "io.kubestellar.stager."

// eventTypes are the CloudEvents types of the rollout events.
var eventTypes = map[v1alpha1.NotificationEvent]string{
	v1alpha1.NotifyStageStarted:     TypePrefix + "stage.started",
	v1alpha1.NotifyStageSucceeded:   TypePrefix + "stage.succeeded",
	v1alpha1.NotifyAwaitingApproval: TypePrefix + "stage.awaitingapproval",
	v1alpha1.NotifyApproved:         TypePrefix + "stage.approved",
	v1alpha1.NotifyStalled:          TypePrefix + "rollout.stalled",
	v1alpha1.NotifyFailed:           TypePrefix + "rollout.failed",
	v1alpha1.NotifyAborted:          TypePrefix + "rollout.aborted",
	v1alpha1.NotifyCompleted:        TypePrefix + "rollout.completed",
	v1alpha1.NotifyPromoted:         TypePrefix + "rollout.promoted",
	v1alpha1.NotifyWaveReleased:     TypePrefix + "wave.released",
}

// EventType is the CloudEvents type of an Event's reason: its rollout
// event's, or TypePrefix+"event" for a reason no subscription names.
func EventType(reason string) string {
	if t, ok := eventTypes[v1alpha1.NotificationEventOf(reason)]; ok {
		return t
	}
	return TypePrefix + "event"
}

// Data is the data of every CloudEvent the stager posts: these documented
// fields and no other.
type Data struct {
	Space     string `json:"space"`
	Namespace string `json:"namespace,omitempty"`
	Policy    string `json:"policy"`
	Revision  string `json:"revision,omitempty"`
	Event     string `json:"event"`
	Severity  string `json:"severity"`
	Reason    string `json:"reason"`
	Message   string `json:"message"`
	Sequence  int64  `json:"sequence"`
}

// CloudEventsContentType is the media type of the structured format.
const CloudEventsContentType = "application/cloudevents+json"

// CloudEvent is the notice as a CloudEvents 1.0 event in the structured
// JSON format.
func CloudEvent(n Notice) ([]byte, error) {
	ev := event.New(event.CloudEventsVersionV1)
	ev.SetID(n.ID())
	ev.SetSource(n.Source())
	ev.SetType(EventType(n.Reason))
	ev.SetSubject(n.Policy)
	ev.SetTime(n.Time.UTC())
	data := Data{Space: n.Space, Namespace: n.Namespace, Policy: n.Policy, Revision: n.Revision,
		Event: string(v1alpha1.NotificationEventOf(n.Reason)), Severity: n.Type, Reason: n.Reason, Message: n.Note, Sequence: n.Sequence}
	if err := ev.SetData(event.ApplicationJSON, data); err != nil {
		return nil, fmt.Errorf("encoding the data of event %s: %w", n.ID(), err)
	}
	if err := ev.Validate(); err != nil {
		return nil, fmt.Errorf("event %s: %w", n.ID(), err)
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encoding event %s: %w", n.ID(), err)
	}
	return body, nil
}

// slackEscaper escapes the three characters Slack's text formatting
// gives a meaning to: a policy's note cannot make a link, a mention
// (<!channel>, <@U123>) or an entity.
var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// SlackEscape escapes s for Slack's text.
func SlackEscape(s string) string {
	return slackEscaper.Replace(s)
}

// slackMessage is a Slack incoming webhook's message.
type slackMessage struct {
	Text string `json:"text"`
}

// Slack is the notice as a Slack incoming webhook's message, every field
// escaped.
func Slack(n Notice) ([]byte, error) {
	where := n.Policy
	if n.Namespace != "" {
		where = n.Namespace + "/" + where
	}
	text := fmt.Sprintf("[%s] %s %s: %s", SlackEscape(n.Space), SlackEscape(where), SlackEscape(n.Reason), SlackEscape(n.Note))
	if n.Revision != "" {
		text += " (revision " + SlackEscape(n.Revision) + ")"
	}
	if n.Type == "Warning" {
		text = ":warning: " + text
	}
	body, err := json.Marshal(slackMessage{Text: text})
	if err != nil {
		return nil, fmt.Errorf("encoding the Slack message of event %s: %w", n.ID(), err)
	}
	return body, nil
}
