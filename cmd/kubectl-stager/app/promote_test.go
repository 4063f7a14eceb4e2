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

package app

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// TestRequestTimeIsAfterEveryEarlierRequest: the stager ignores a request
// no later than the last one taken, so two promotions within one second
// (the API keeps requestedAt to the second), or a clock behind the one
// that wrote the last request, still make a new request.
func TestRequestTimeIsAfterEveryEarlierRequest(t *testing.T) {
	now := time.Date(2026, 11, 30, 1, 30, 15, 600_000_000, time.UTC)
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Truncate(time.Second).Add(d)) }
	for _, tc := range []struct {
		name      string
		last, req *metav1.Time
		want      metav1.Time
	}{
		{"no earlier request", nil, nil, at(0)},
		{"an earlier request a minute ago", timePtr(at(-time.Minute)), timePtr(at(-time.Minute)), at(0)},
		{"the last one taken this second", timePtr(at(0)), nil, at(time.Second)},
		{"a pending one this second", nil, timePtr(at(0)), at(time.Second)},
		{"a clock behind the last one's", timePtr(at(time.Hour)), timePtr(at(2 * time.Hour)), at(2*time.Hour + time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1alpha1.StagedBindingPolicy{}
			if tc.last != nil {
				p.Status.LastPromotion = &v1alpha1.LastPromotion{RequestedAt: *tc.last}
			}
			if tc.req != nil {
				p.Spec.Promotion = &v1alpha1.Promotion{RequestedAt: *tc.req}
			}
			if got := requestTime(p, now); !got.Equal(&tc.want) {
				t.Errorf("requestTime = %s, want %s", got.UTC().Format(time.RFC3339Nano), tc.want.UTC().Format(time.RFC3339Nano))
			}
		})
	}
}

func timePtr(t metav1.Time) *metav1.Time { return &t }
