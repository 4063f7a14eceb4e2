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

// MetricProvider declares one endpoint that the analyses of
// StagedBindingPolicies may query, by its name: a Prometheus-compatible
// API, or a web endpoint answering JSON (an external gate). It lives in the
// stager's hosting cluster and is the platform team's: a policy, written
// in a WDS, only names a provider and gives a PromQL query or a path; the address,
// the CA and the credentials come from here, so that no policy author can
// make the central stager call an address, or send a credential, of their
// choosing.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=mp,categories=kubestellar
// +kubebuilder:printcolumn:name="Prometheus",type=string,JSONPath=`.spec.prometheus.address`
// +kubebuilder:printcolumn:name="Web",type=string,JSONPath=`.spec.web.address`
// +kubebuilder:printcolumn:name="Spaces",type=string,JSONPath=`.spec.spaces`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MetricProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec declares the endpoint.
	Spec MetricProviderSpec `json:"spec"`
}

// MetricProviderSpec declares a metric endpoint: exactly one of prometheus
// and web.
// +kubebuilder:validation:XValidation:rule="has(self.prometheus) != has(self.web)",message="exactly one of prometheus and web must be set"
type MetricProviderSpec struct {
	// Prometheus is a Prometheus-compatible HTTP API (Prometheus, Thanos,
	// Mimir, VictoriaMetrics...), queried at <address>/api/v1/query.
	// +optional
	Prometheus *PrometheusProvider `json:"prometheus,omitempty"`

	// Web is an HTTP endpoint that answers JSON, queried with GET at
	// <address>/<path>?<params> for the analyses that name it (an external
	// gate: a change-management system, a release checklist...). It has
	// the same guard as prometheus: the same fields mean the same.
	// +optional
	Web *WebProvider `json:"web,omitempty"`

	// Spaces names the spaces whose policies may query this provider, as
	// the stager names them in its logs and metrics (e.g. wds1,
	// kubeconfig#wds1, kcp#root:org:wds1); "*" is every space. Default:
	// none. A policy of a space not named here gets an inconclusive
	// measurement saying so: the provider's answers, read with its
	// credentials, are shown to the space in its policies' status.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	// +listType=set
	// +optional
	Spaces []string `json:"spaces,omitempty"`
}

// AllSpaces is the entry of a MetricProvider's spec.spaces that lets every
// space query it.
const AllSpaces = "*"

// CredentialLabel marks the Secrets, of the stager's Secret namespace, that
// MetricProviders may name for their CA and bearer token; its value must
// be "true". The stager neither reads nor sends another Secret.
const CredentialLabel = "community.kubestellar.io/metric-provider-credential"

// Endpoint returns the provider's address and credentials, of whichever
// kind it is; nil when it sets neither.
func (p *MetricProvider) Endpoint() *PrometheusProvider {
	if p.Spec.Prometheus != nil {
		return p.Spec.Prometheus
	}
	if p.Spec.Web != nil {
		return (*PrometheusProvider)(p.Spec.Web)
	}
	return nil
}

// Kinds of provider, as Kind returns them.
const (
	// ProviderPrometheus is a provider with spec.prometheus.
	ProviderPrometheus = "prometheus"
	// ProviderWeb is a provider with spec.web.
	ProviderWeb = "web"
)

// Kind returns ProviderPrometheus or ProviderWeb, or "" when the provider
// sets neither.
func (p *MetricProvider) Kind() string {
	switch {
	case p.Spec.Prometheus != nil:
		return ProviderPrometheus
	case p.Spec.Web != nil:
		return ProviderWeb
	}
	return ""
}

// Serves reports whether the provider's spec.spaces lets space query it.
func (p *MetricProvider) Serves(space string) bool {
	for _, s := range p.Spec.Spaces {
		if s == AllSpaces || s == space {
			return true
		}
	}
	return false
}

// PrometheusProvider is a Prometheus-compatible HTTP API and how to reach it.
type PrometheusProvider struct {
	// Address is the API's base URL, e.g. https://prometheus.monitoring:9090.
	// It must be https unless the stager runs with
	// --allow-insecure-metric-providers. It may carry a path prefix, but no
	// user information, query or fragment.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^\s?#@]+$`
	Address string `json:"address"`

	// CASecretRef names the key of a Secret, in the stager's Secret
	// namespace and labelled community.kubestellar.io/metric-provider-credential=true,
	// that holds the PEM CA bundle the server's certificate must chain to.
	// Default: the system's roots.
	// +optional
	CASecretRef *SecretKeyRef `json:"caSecretRef,omitempty"`

	// BearerTokenSecretRef names the key of a Secret, in the stager's
	// Secret namespace and labelled community.kubestellar.io/metric-provider-credential=true,
	// that holds a bearer token sent with every query.
	// +optional
	BearerTokenSecretRef *SecretKeyRef `json:"bearerTokenSecretRef,omitempty"`

	// Timeout bounds each query, from the connection to the last byte of
	// the answer. Default, and most: the stager's --analysis-query-timeout.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// MaxResponseBytes bounds the size of each answer; a larger one is not
	// read and the measurement is inconclusive. Default, and most: the
	// stager's --analysis-max-response-bytes.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxResponseBytes *int64 `json:"maxResponseBytes,omitempty"`
}

// WebProvider is an HTTP endpoint that answers JSON and how to reach it.
// Its fields are those of PrometheusProvider, and mean the same.
type WebProvider struct {
	// Address is the endpoint's base URL, e.g.
	// https://change.platform.svc/api/gates. It must be https unless the
	// stager runs with --allow-insecure-metric-providers. It may carry a
	// path prefix, but no user information, query or fragment; an
	// analysis's path is appended to it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^\s?#@]+$`
	Address string `json:"address"`

	// CASecretRef names the key of a Secret, in the stager's Secret
	// namespace and labelled community.kubestellar.io/metric-provider-credential=true,
	// that holds the PEM CA bundle the server's certificate must chain to.
	// Default: the system's roots.
	// +optional
	CASecretRef *SecretKeyRef `json:"caSecretRef,omitempty"`

	// BearerTokenSecretRef names the key of a Secret, in the stager's
	// Secret namespace and labelled community.kubestellar.io/metric-provider-credential=true,
	// that holds a bearer token sent with every request.
	// +optional
	BearerTokenSecretRef *SecretKeyRef `json:"bearerTokenSecretRef,omitempty"`

	// Timeout bounds each request, from the connection to the last byte
	// of the answer. Default, and most: the stager's
	// --analysis-query-timeout.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// MaxResponseBytes bounds the size of each answer; a larger one is not
	// read and the measurement is inconclusive. Default, and most: the
	// stager's --analysis-max-response-bytes.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxResponseBytes *int64 `json:"maxResponseBytes,omitempty"`
}

// SecretKeyRef names one key of a Secret in the stager's Secret namespace.
type SecretKeyRef struct {
	// Name is the Secret's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key is the key in the Secret's data.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// MetricProviderList is a list of MetricProviders.
//
// +kubebuilder:object:root=true
type MetricProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the providers.
	Items []MetricProvider `json:"items"`
}
