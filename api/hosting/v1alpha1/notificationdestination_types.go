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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NotificationDestination declares one HTTPS endpoint to which the stager
// posts the rollout events that policies subscribe to (spec.notifications
// of a StagedBindingPolicy), by its name. It lives in the stager's hosting
// cluster and is the platform team's: a policy, written in a WDS, only
// names a destination and the events it wants; the address, the CA and
// the token come from here, so that no policy author can make the central
// stager call an address, or send a credential, of their choosing
// (docs/proposals/notifications.md).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=nd,categories=kubestellar
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.spec.address`
// +kubebuilder:printcolumn:name="Format",type=string,JSONPath=`.spec.format`
// +kubebuilder:printcolumn:name="Spaces",type=string,JSONPath=`.spec.spaces`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NotificationDestination struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec declares the endpoint.
	Spec NotificationDestinationSpec `json:"spec"`
}

// NotificationFormat is the body the stager posts to a destination.
// +kubebuilder:validation:Enum=CloudEvents;Slack
type NotificationFormat string

// The formats of a notification.
const (
	// FormatCloudEvents is a CloudEvents 1.0 event in the structured JSON
	// format (application/cloudevents+json).
	FormatCloudEvents NotificationFormat = "CloudEvents"
	// FormatSlack is a Slack-compatible incoming-webhook message,
	// {"text": ...}.
	FormatSlack NotificationFormat = "Slack"
)

// NotificationDestinationSpec declares a notification endpoint.
type NotificationDestinationSpec struct {
	// Address is the URL the stager posts each event to, e.g.
	// https://hooks.example.com/stager. It must be https; it may carry a
	// path, but no user information, query or fragment.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https://[^\s?#@]+$`
	Address string `json:"address"`

	// Format is the body posted: CloudEvents (default) or Slack.
	// +kubebuilder:default=CloudEvents
	// +optional
	Format NotificationFormat `json:"format,omitempty"`

	// CASecretRef names the key of a Secret, in the stager's Secret
	// namespace and labelled
	// community.kubestellar.io/notification-credential=true, that holds the
	// PEM CA bundle the server's certificate must chain to. Default: the
	// system's roots.
	// +optional
	CASecretRef *SecretKeyRef `json:"caSecretRef,omitempty"`

	// BearerTokenSecretRef names the key of a Secret, in the stager's
	// Secret namespace and labelled
	// community.kubestellar.io/notification-credential=true, that holds a
	// bearer token sent with every post.
	// +optional
	BearerTokenSecretRef *SecretKeyRef `json:"bearerTokenSecretRef,omitempty"`

	// Spaces names the spaces whose policies may subscribe to this
	// destination, as the stager names them in its logs and metrics (e.g.
	// wds1, kubeconfig#wds1, kcp#root:org:wds2); "*" is every space.
	// Default: none, as for a MetricProvider: a destination is the
	// platform's channel and carries its token, and a space not named
	// here gets a Warning Event saying so and no post.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	// +listType=set
	// +optional
	Spaces []string `json:"spaces,omitempty"`
}

// NotificationCredentialLabel marks the Secrets, of the stager's Secret
// namespace, that NotificationDestinations may name for their CA and
// bearer token; its value must be "true". It is not the MetricProviders'
// label: a Secret is marked for the one use it was made for.
const NotificationCredentialLabel = "community.kubestellar.io/notification-credential"

// Serves reports whether the destination's spec.spaces lets space
// subscribe to it.
func (d *NotificationDestination) Serves(space string) bool {
	for _, s := range d.Spec.Spaces {
		if s == AllSpaces || s == space {
			return true
		}
	}
	return false
}

// NotificationDestinationList is a list of NotificationDestinations.
//
// +kubebuilder:object:root=true
type NotificationDestinationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the destinations.
	Items []NotificationDestination `json:"items"`
}
