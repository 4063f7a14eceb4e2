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
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCheckIntervalIsAtLeastAMinute: whatever an object says (the CRD
// refuses less, an object from before it may not), a regression watch
// checks at most once a minute; unset is the 5m default.
func TestCheckIntervalIsAtLeastAMinute(t *testing.T) {
	for _, tc := range []struct {
		watch *RegressionWatch
		want  time.Duration
	}{
		{nil, DefaultRegressionInterval},
		{&RegressionWatch{}, DefaultRegressionInterval},
		{&RegressionWatch{Interval: &metav1.Duration{Duration: 0}}, time.Minute},
		{&RegressionWatch{Interval: &metav1.Duration{Duration: -time.Hour}}, time.Minute},
		{&RegressionWatch{Interval: &metav1.Duration{Duration: time.Second}}, time.Minute},
		{&RegressionWatch{Interval: &metav1.Duration{Duration: 7 * time.Minute}}, 7 * time.Minute},
	} {
		if got := tc.watch.CheckInterval(); got != tc.want {
			t.Errorf("CheckInterval of %+v = %v, want %v", tc.watch, got, tc.want)
		}
	}
}
