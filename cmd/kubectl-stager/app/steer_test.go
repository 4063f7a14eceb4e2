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
	"errors"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestDeniedSaysWhoRefused checks that a refusal names what refused it:
// RBAC (with the roles that grant the verb), an admission policy (no RBAC
// hint: RBAC let the request through) or validation, the API server's
// message kept whole in each.
func TestDeniedSaysWhoRefused(t *testing.T) {
	sbp := schema.GroupResource{Group: "community.kubestellar.io", Resource: "stagedbindingpolicies"}
	rbac := apierrors.NewForbidden(sbp, "web", errors.New(`User "pat" cannot patch resource "stagedbindingpolicies"`))
	admission := apierrors.NewForbidden(sbp, "web", errors.New("ValidatingAdmissionPolicy 'workload-stager-promotions' "+
		"with binding 'workload-stager-promotions' denied request: only spec.promotion may change"))
	webhook := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden,
		Message: `admission webhook "freeze.example.com" denied the request: production is frozen`}}
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: sbp.Group, Kind: "StagedBindingPolicy"}, "web", nil)
	for _, tc := range []struct {
		name      string
		err       error
		want      []string
		wantNotIn string
	}{
		{name: "RBAC", err: rbac, want: []string{"pat may not suspend StagedBindingPolicy web", "cannot patch", "ClusterRole"}},
		{name: "admission policy", err: admission, wantNotIn: "ClusterRole",
			want: []string{"an admission policy refused to let pat suspend StagedBindingPolicy web", "only spec.promotion may change"}},
		{name: "admission webhook", err: webhook, wantNotIn: "ClusterRole",
			want: []string{"an admission policy refused to let pat suspend StagedBindingPolicy web", "production is frozen"}},
		{name: "validation", err: invalid, want: []string{"the API server refused to suspend StagedBindingPolicy web"}},
		{name: "other", err: errors.New("connection refused"), want: []string{"suspend StagedBindingPolicy web: connection refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := denied(tc.err, "pat", "suspend StagedBindingPolicy web")
			if !errors.Is(got, tc.err) {
				t.Errorf("denied(%v) does not wrap the API server's error", tc.err)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Error(), w) {
					t.Errorf("denied(...) = %q, want it to say %q", got, w)
				}
			}
			if tc.wantNotIn != "" && strings.Contains(got.Error(), tc.wantNotIn) {
				t.Errorf("denied(...) = %q, should not say %q", got, tc.wantNotIn)
			}
		})
	}
}
