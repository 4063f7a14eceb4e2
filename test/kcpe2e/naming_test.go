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

package kcpe2e

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestSpacesAreNamedFromOneWatch checks that the stager learns its
// workspaces' paths from one list and watch of LogicalClusters an endpoint,
// not from a read of each workspace's: at 1,000 workspaces those reads,
// one a workspace and replica, retried while kcp refused them for load,
// were 96 % of the stager's requests while it engaged its spaces.
func TestSpacesAreNamedFromOneWatch(t *testing.T) {
	w, err := addWorkspace(suite.ctx, "wds5")
	if err != nil {
		t.Fatalf("adding wds5: %v", err)
	}
	if w.space != "kcp#root:wds5" {
		t.Fatalf("space name %q", w.space)
	}
	waitForSpaceReady(t, w.space)
	text, err := metrics(suite.ctx)
	if err != nil {
		t.Fatal(err)
	}
	// client-go lists by a watch (WatchListClient) where the server can.
	if n := logicalClusterRequests(text, "GET"); n != 0 {
		t.Errorf("%v reads of a workspace's LogicalCluster, want none", n)
	}
	if n := logicalClusterRequests(text, "LIST") + logicalClusterRequests(text, "WATCH"); n < 1 {
		t.Errorf("no list or watch of LogicalClusters")
	}
}

// logicalClusterRequests sums the stager's requests of LogicalClusters of
// one verb, whatever their answer.
func logicalClusterRequests(text, verb string) float64 {
	series := regexp.MustCompile(`(?m)^stager_api_requests_total\{([^}]*)\} (\S+)$`)
	class, ofVerb := `class="logicalclusters"`, fmt.Sprintf(`verb=%q`, verb)
	sum := 0.0
	for _, m := range series.FindAllStringSubmatch(text, -1) {
		if !strings.Contains(m[1], class) || !strings.Contains(m[1], ofVerb) {
			continue
		}
		if v, err := strconv.ParseFloat(m[2], 64); err == nil {
			sum += v
		}
	}
	return sum
}
