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
	"testing"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestSeriesJanitorDeletesAgainUnlessReengaged: a disengaged space's
// controller series are deleted at once, and series written after that (as
// a work queue's goroutine may) are deleted after the grace period; unless
// the space was engaged again meanwhile, whose new controller's series stay.
// The stager's own series of the space go with the first deletion.
func TestSeriesJanitorDeletesAgainUnlessReengaged(t *testing.T) {
	const space = "janitor-test"
	controllerOf := func(space string) string { return "janitor-controller/" + space }
	// A work queue named as the space's controller writes its series.
	write := func() {
		q := priorityqueue.New[reconcile.Request](controllerOf(space))
		q.Add(reconcile.Request{})
		q.ShutDown()
	}
	count := func() int { return seriesLabelled(t, "controller", controllerOf(space)) }
	j := NewSeriesJanitor(controllerOf, 50*time.Millisecond, logr.Discard())

	j.Engaged(space)
	if seriesLabelled(t, LabelSpace, space) == 0 {
		t.Fatal("an engaged space has no series of the stager's")
	}
	write()
	if count() == 0 {
		t.Fatal("the work queue wrote no series")
	}
	j.Disengaged(space)
	if n := count(); n != 0 {
		t.Fatalf("%d series right after the space was disengaged, want none", n)
	}
	if n := seriesLabelled(t, LabelSpace, space); n != 0 {
		t.Fatalf("%d series of the stager's name the space once it is disengaged, want none", n)
	}
	write() // a late write
	j.Wait()
	if n := count(); n != 0 {
		t.Errorf("%d series after the grace period, want none", n)
	}

	j.Disengaged(space)
	j.Engaged(space)
	write() // the new controller's
	j.Wait()
	if count() == 0 {
		t.Error("the series of a space engaged again were deleted")
	}
	j.Disengaged(space)
	j.Wait()
}

// seriesLabelled counts the series of controller-runtime's registry, where
// the stager's metrics are too, whose label name is value.
func seriesLabelled(t *testing.T, name, value string) int {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering the metrics: %v", err)
	}
	n := 0
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == name && l.GetValue() == value {
					n++
				}
			}
		}
	}
	return n
}
