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
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// DefaultSeriesGrace is how long a SeriesJanitor waits, by default, before
// it deletes a disengaged space's series the second time.
const DefaultSeriesGrace = 10 * time.Second

// SeriesJanitor keeps the metrics of the spaces in line with their states.
// Once a space is disengaged (after its controller has stopped) it deletes
// the space's series: the stager's counters and histograms (its gauges go
// with its controller, see ServePolicies), and controller-runtime's of its
// controller, those a second time after a grace period unless the space was
// engaged again meanwhile. controller-runtime's priority queue does not wait
// for its goroutines when it shuts down, and one may write a series after
// the first deletion.
type SeriesJanitor struct {
	controllerOf func(space string) string
	grace        time.Duration
	logger       logr.Logger

	mu sync.Mutex
	// changes counts each space's engagements and disengagements, while
	// engaged or waiting for its second deletion.
	changes map[string]uint64
	pending sync.WaitGroup
}

// NewSeriesJanitor returns a janitor that deletes the series the second
// time after grace. controllerOf names a space's controller, as its
// controller-runtime series are labelled.
func NewSeriesJanitor(controllerOf func(space string) string, grace time.Duration, logger logr.Logger) *SeriesJanitor {
	return &SeriesJanitor{controllerOf: controllerOf, grace: grace, logger: logger, changes: map[string]uint64{}}
}

// Engaged records that space is engaged (or changed state while engaged),
// and creates its series at zero (SpaceEngaged).
func (j *SeriesJanitor) Engaged(space string) {
	SpaceEngaged(space)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.changes[space]++
}

// Disengaged deletes the series of space (SpaceDisengaged) and of its
// controller, and those of its controller again after the grace period
// unless the space is engaged again meanwhile.
func (j *SeriesJanitor) Disengaged(space string) {
	SpaceDisengaged(space)
	j.mu.Lock()
	j.changes[space]++
	change := j.changes[space]
	j.mu.Unlock()
	j.forget(space)
	j.pending.Add(1)
	time.AfterFunc(j.grace, func() {
		defer j.pending.Done()
		j.mu.Lock()
		unchanged := j.changes[space] == change
		if unchanged {
			delete(j.changes, space)
		}
		j.mu.Unlock()
		if unchanged {
			j.forget(space)
		}
	})
}

// Wait blocks until every second deletion scheduled so far has run. The
// Disengaged calls it waits for must happen before it, as sync.WaitGroup's
// Add calls before its Wait.
func (j *SeriesJanitor) Wait() { j.pending.Wait() }

func (j *SeriesJanitor) forget(space string) {
	if err := ForgetController(j.controllerOf(space)); err != nil {
		j.logger.Error(err, "Could not delete the series of a disengaged space's controller", "space", space)
	}
}
