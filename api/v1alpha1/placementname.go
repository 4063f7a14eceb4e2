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
	"errors"
	"fmt"
	"slices"
	"strings"
)

// PlacementName is the name of a BindingPolicy the stager generates for one
// stage of a StagedBindingPolicy: what the BindingPolicy places, and its
// name by String. Build one with StagePlacement, then At a revision, On a
// cluster, or with StageCensus; ParsePlacementName reads one back.
//
// String gives:
//
//	StagePlacement(p, s)             "<p>.stage.<s>"            the stage's placement (no spec.revision)
//	StagePlacement(p, s).At(r)       "<p>.stage.<s>.<r>"        one revision of the stage
//	StageCensus(p, s)                "<p>.stage.<s>.clusters.selected"  the clusters of a stage placed in batches
//	StagePlacement(p, s).On(c)       "<p>.stage.<s>.on.<c>"     one cluster of a stage placed in batches
//	StagePlacement(p, s).At(r).On(c) "<p>.stage.<s>.<r>.on.<c>" one revision on one cluster
//
// The StageApproval of a stage is named as the stage's BindingPolicy,
// StagePlacement(p, s).String(): one approval per stage, whatever the
// revision.
//
// Every such name has one reading: the CRD admits no new policy name with a
// dot-separated part "stage", so the first such part ends the policy's
// name; stage and revision names are DNS labels, one part each; the census
// ends in two parts, which no revision (one part) matches; and no revision
// is named "on", so a cluster's name, dots and all, is what follows the
// "on" after the stage or its revision. So two PlacementNames the CRD
// admits never share a name (TestPlacementNameRoundTrip). These names are
// those of objects already stored: String must not change.
//
// +kubebuilder:object:generate=false
type PlacementName struct {
	// Policy is the StagedBindingPolicy's name.
	Policy string
	// Stage is the stage's name.
	Stage string
	// Revision is the revision placed, or "" for a policy without
	// spec.revision (Unrevisioned reads as ""). A census has none.
	Revision string
	// Cluster is the one cluster placed, for a stage placed in batches, or
	// "" for the stage's whole placement. A census has none.
	Cluster string
	// Census marks the BindingPolicy that lists the clusters of a stage
	// placed in batches: it has the stage's clusterSelectors and no
	// downsync, so its Binding names every selected cluster and places
	// nothing. String ignores Revision and Cluster on a census.
	Census bool
}

// StagePlacement names the placement of a stage of a policy, without
// spec.revision: "<policy>.stage.<stage>", which is also the name of the
// stage's StageApproval.
func StagePlacement(policy, stage string) PlacementName {
	return PlacementName{Policy: policy, Stage: stage}
}

// StageCensus names the census of a stage placed in batches:
// "<policy>.stage.<stage>.clusters.selected".
func StageCensus(policy, stage string) PlacementName {
	return PlacementName{Policy: policy, Stage: stage, Census: true}
}

// ActivePlacement names the BindingPolicy a stage keeps while it is active
// and creates first when it starts: its census for a stage placed in
// batches, else the stage at revision.
func ActivePlacement(policy string, stage Stage, revision string) PlacementName {
	if stage.Batched() {
		return StageCensus(policy, stage.Name)
	}
	return StagePlacement(policy, stage.Name).At(revision)
}

// At returns n placing the given revision; "" and Unrevisioned are the
// placement of a policy without spec.revision.
func (n PlacementName) At(revision string) PlacementName {
	if revision == Unrevisioned {
		revision = ""
	}
	n.Revision = revision
	return n
}

// On returns n placing the given cluster only.
func (n PlacementName) On(cluster string) PlacementName {
	n.Cluster = cluster
	return n
}

// The parts of generated names that are not names.
const (
	stagePart    = "stage"
	clusterPart  = "on"
	censusSuffix = ".clusters.selected"
)

// String returns the name of the BindingPolicy. It reads a Revision of
// Unrevisioned as "" itself, not only through At, since the fields are
// exported and a PlacementName built as a literal names the same object.
func (n PlacementName) String() string {
	name := n.Policy + "." + stagePart + "." + n.Stage
	if n.Census {
		return name + censusSuffix
	}
	if n.Revision != "" && n.Revision != Unrevisioned {
		name += "." + n.Revision
	}
	if n.Cluster != "" {
		name += "." + clusterPart + "." + n.Cluster
	}
	return name
}

// errNotPlacementName is wrapped by every error of ParsePlacementName.
var errNotPlacementName = errors.New("not the name of a generated BindingPolicy")

// ParsePlacementName reads a name String gives back into what it names
// (see PlacementName for the grammar). It fails on a name String gives for
// no PlacementName with a policy, stage, revision and cluster of non-empty
// dot-separated parts; for a name it accepts, String gives the name back.
// The stager itself never parses the names it generates (it finds its
// BindingPolicies by their policy's label or index): the parser is kept as the inverse of String
// that the name round-trip properties (TestPlacementNameRoundTrip,
// TestParsePlacementNameReadsOnlyGeneratedNames) check, which is how the
// claim that no two PlacementNames share a name is proved.
func ParsePlacementName(name string) (PlacementName, error) {
	parts := strings.Split(name, ".")
	if slices.Contains(parts, "") {
		return PlacementName{}, fmt.Errorf("%q: %w: an empty dot-separated part", name, errNotPlacementName)
	}
	i := slices.Index(parts, stagePart)
	if i < 1 || i+1 >= len(parts) {
		return PlacementName{}, fmt.Errorf("%q: %w: no %q part after the policy's name followed by a stage", name, errNotPlacementName, stagePart)
	}
	n := StagePlacement(strings.Join(parts[:i], "."), parts[i+1])
	switch rest := parts[i+2:]; {
	case len(rest) == 0:
	case "."+strings.Join(rest, ".") == censusSuffix:
		n.Census = true
	case len(rest) >= 2 && rest[0] == clusterPart:
		n.Cluster = strings.Join(rest[1:], ".")
	case len(rest) == 1 && rest[0] != Unrevisioned:
		n.Revision = rest[0]
	case len(rest) >= 3 && rest[1] == clusterPart && rest[0] != Unrevisioned:
		n.Revision, n.Cluster = rest[0], strings.Join(rest[2:], ".")
	default:
		return PlacementName{}, fmt.Errorf("%q: %w: %q after the stage is no revision, census or cluster", name, errNotPlacementName, strings.Join(rest, "."))
	}
	return n, nil
}
