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

package kubestellar

import (
	"sync"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
)

// Availability is a Reporter for tests and demos: it reports, for every
// workload object, one row per destination cluster with the number of
// available replicas (1 or 0) under a StatusCollector of the given name, as a
// "deployments-aggregator"-style collector combines it. Whether the WECs of a
// BindingPolicy report the workload available is switched with SetAvailable.
type Availability struct {
	collector string

	mu        sync.Mutex
	available map[string]bool
	never     map[string]bool
}

// NewAvailability returns an Availability that reports under the given
// StatusCollector name. Objects of the resources listed in never are always
// reported unavailable.
func NewAvailability(collector string, never ...string) *Availability {
	a := &Availability{collector: collector, available: map[string]bool{}, never: map[string]bool{}}
	for _, r := range never {
		a.never[r] = true
	}
	return a
}

// SetAvailable says whether the WECs of a BindingPolicy report its workload
// available. Call the simulator's Resync afterwards for a prompt update.
func (a *Availability) SetAvailable(bindingPolicy string, available bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.available[bindingPolicy] = available
}

// Report is the Reporter.
func (a *Availability) Report(bindingPolicy string, obj ObjectRef, destinations []string) []ksv1alpha1.NamedStatusCombination {
	a.mu.Lock()
	available := a.available[bindingPolicy] && !a.never[obj.Resource]
	a.mu.Unlock()
	value := "0"
	if available {
		value = "1"
	}
	rows := make([]ksv1alpha1.StatusCombinationRow, 0, len(destinations))
	for range destinations {
		v := value
		rows = append(rows, ksv1alpha1.StatusCombinationRow{Columns: []ksv1alpha1.Value{{Type: ksv1alpha1.TypeNumber, Number: &v}}})
	}
	return []ksv1alpha1.NamedStatusCombination{{Name: a.collector, ColumnNames: []string{"availableReplicas"}, Rows: rows}}
}
