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

// Package reqclass counts the requests the stager sends to API servers
// (the hosting cluster's, every space's, kcp's virtual workspaces) by what
// they ask for: stager_api_requests_total{class, verb, code} and
// stager_api_request_duration_seconds{class, verb}. client-go's own
// rest_client_requests_total has the method and host alone, and an API
// server counts only the requests it serves, by all its clients; these
// say which of the stager's reads and writes grow with the spaces.
//
// Every label is one of a fixed list: a server or an object name never adds
// a series. docs/metrics.md documents the metrics.
package reqclass

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Classes that are not a resource.
const (
	// ClassDiscovery is discovery: /api, /apis, their groups and versions,
	// /version and /openapi.
	ClassDiscovery = "discovery"
	// ClassReadyz is /readyz, which the space probes read.
	ClassReadyz = "readyz"
	// ClassOther is any other path, and any resource not in the list.
	ClassOther = "other"
	// ClassFenceLeases are the requests of a space's fence Lease, by name.
	ClassFenceLeases = "leases/fence"
	// ClassPeerLeases are the requests of a replica's peer Lease, by name.
	ClassPeerLeases = "leases/peer"
)

// Verbs: the HTTP method, with a GET told apart as GET of one object, LIST
// of a collection or WATCH, as kube-apiserver's apiserver_request_total
// names them.
const (
	VerbGet    = "GET"
	VerbList   = "LIST"
	VerbWatch  = "WATCH"
	VerbPost   = "POST"
	VerbPut    = "PUT"
	VerbPatch  = "PATCH"
	VerbDelete = "DELETE"
	// VerbOther is any other method.
	VerbOther = "OTHER"
)

// resources are the resources counted by name: those the stager reads or
// writes. Any other is ClassOther.
var resources = []string{
	// Kubernetes.
	"events", "leases", "secrets", "configmaps", "namespaces", "serviceaccounts",
	"customresourcedefinitions", "selfsubjectaccessreviews", "selfsubjectrulesreviews",
	"subjectaccessreviews", "tokenreviews",
	// KubeStellar.
	"bindingpolicies", "bindings", "combinedstatuses", "statuscollectors", "controlplanes",
	// The stager.
	"stagedbindingpolicies", "stageapprovals", "metricproviders", "rolloutwaves", "rolloutfreezes",
	"notificationdestinations",
	// kcp.
	"apibindings", "apiexports", "apiexportendpointslices", "logicalclusters", "workspaces",
}

// Options say how Leases are told apart by name.
type Options struct {
	// FenceLeasePrefix starts the name of every fence Lease; empty: none
	// is told apart.
	FenceLeasePrefix string
	// PeerLeasePrefix starts the name of every peer Lease; empty: none is
	// told apart.
	PeerLeasePrefix string
}

// Classify returns the class and verb of a request of method to u.
func (o Options) Classify(method string, u *url.URL) (class, verb string) {
	segments := strings.Split(strings.Trim(u.Path, "/"), "/")
	segments = stripKCP(segments)
	class, name, watchPath := o.classOf(segments)
	return class, verbOf(method, name, watchPath || watchQuery(u))
}

// stripKCP drops the prefixes of kcp's paths: that of an APIExport's
// virtual workspace (/services/apiexport/<workspace>/<export>), then that
// of a logical cluster (/clusters/<id>, or /clusters/* for all).
func stripKCP(segments []string) []string {
	if len(segments) >= 4 && segments[0] == "services" && segments[1] == "apiexport" {
		segments = segments[4:]
	}
	if len(segments) >= 2 && segments[0] == "clusters" {
		segments = segments[2:]
	}
	return segments
}

// classOf returns the class of a path (without kcp's prefixes), the name of
// the object it names ("" for a collection or no resource), and whether it
// is the old /watch/ form of a watch.
func (o Options) classOf(segments []string) (class, name string, watch bool) {
	var rest []string
	switch {
	case len(segments) == 1 && segments[0] == "version":
		return ClassDiscovery, "-", false
	case len(segments) >= 1 && segments[0] == "openapi":
		return ClassDiscovery, "-", false
	case len(segments) >= 1 && segments[0] == "readyz":
		return ClassReadyz, "-", false
	case len(segments) >= 1 && segments[0] == "api":
		if len(segments) <= 2 {
			return ClassDiscovery, "-", false
		}
		rest = segments[2:]
	case len(segments) >= 1 && segments[0] == "apis":
		if len(segments) <= 3 {
			return ClassDiscovery, "-", false
		}
		rest = segments[3:]
	default:
		return ClassOther, "-", false
	}
	if rest[0] == "watch" {
		watch, rest = true, rest[1:]
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		rest = rest[2:]
	}
	var resource, subresource string
	switch len(rest) {
	case 1:
		resource = rest[0]
	case 2:
		resource, name = rest[0], rest[1]
	case 3:
		resource, name, subresource = rest[0], rest[1], rest[2]
	default:
		return ClassOther, "-", watch
	}
	return o.resourceClass(resource, name, subresource), name, watch
}

// resourceClass returns the class of a resource, one of its objects and
// one of their subresources: the resource if it is in the list, with
// "/status" for the status, and Leases apart by their names' prefixes.
func (o Options) resourceClass(resource, name, subresource string) string {
	if !slices.Contains(resources, resource) {
		return ClassOther
	}
	switch subresource {
	case "":
	case "status":
		return resource + "/status"
	default:
		return ClassOther
	}
	if resource == "leases" && name != "" {
		switch {
		case o.FenceLeasePrefix != "" && strings.HasPrefix(name, o.FenceLeasePrefix):
			return ClassFenceLeases
		case o.PeerLeasePrefix != "" && strings.HasPrefix(name, o.PeerLeasePrefix):
			return ClassPeerLeases
		}
	}
	return resource
}

// watchQuery tells whether u's query asks for a watch.
func watchQuery(u *url.URL) bool {
	query, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return false
	}
	watch, err := strconv.ParseBool(query.Get("watch"))
	return err == nil && watch
}

// verbOf returns the verb of a request of method, of an object named name
// ("" for a collection, "-" for no resource).
func verbOf(method, name string, watch bool) string {
	switch method {
	case http.MethodGet:
		switch {
		case watch:
			return VerbWatch
		case name == "":
			return VerbList
		default:
			return VerbGet
		}
	case http.MethodPost:
		return VerbPost
	case http.MethodPut:
		return VerbPut
	case http.MethodPatch:
		return VerbPatch
	case http.MethodDelete:
		return VerbDelete
	default:
		return VerbOther
	}
}
