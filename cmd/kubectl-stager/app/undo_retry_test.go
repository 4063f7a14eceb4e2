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
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	stagerapp "github.com/kubestellar/workload-stager/cmd/stager/app"
)

// TestPatchUndoRetriesPastStatusWrites checks undo's write against a
// policy the stager writes while undo runs: a status write before each of
// undo's first writes is written past; a spec change, or a status write
// before every write, is not.
func TestPatchUndoRetriesPastStatusWrites(t *testing.T) {
	scheme, err := stagerapp.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		statusOnly bool // the write before undo's changes the status only (else the spec)
		writes     int  // how many of undo's writes the stager's write precedes
		want       func(error) bool
		wantRev    string
	}{
		{name: "two status writes are written past", statusOnly: true, writes: 2, want: func(err error) bool { return err == nil }, wantRev: "v1"},
		{name: "a spec change is not", statusOnly: false, writes: 1, want: func(err error) bool { return errors.Is(err, errChangedWhileUndoing) }, wantRev: "v2"},
		{name: "status writes before every write give up", statusOnly: true, writes: 100, want: apierrors.IsConflict, wantRev: "v2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p := &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 1},
				Spec: v1alpha1.StagedBindingPolicySpec{Revision: &v1alpha1.Revision{Name: "v2"}, Stages: []v1alpha1.Stage{{Name: "dev"}}},
				Status: v1alpha1.StagedBindingPolicyStatus{UpdateRevision: "v2", History: []v1alpha1.RevisionHistory{
					{Revision: "v1", Outcome: v1alpha1.OutcomeCompleted}, {Revision: "v2", Outcome: v1alpha1.OutcomeCompleted}}}}
			stagerWrites := 0
			base := fake.NewClientBuilder().WithScheme(scheme).WithObjects(p).WithStatusSubresource(p).Build()
			c := interceptor.NewClient(base, interceptor.Funcs{
				Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if stagerWrites < tc.writes {
						stagerWrites++
						now := &v1alpha1.StagedBindingPolicy{}
						if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), now); err != nil {
							return err
						}
						if tc.statusOnly {
							now.Status.ObservedGeneration++
							if err := cl.Status().Update(ctx, now); err != nil {
								return err
							}
						} else {
							now.Spec.Suspend = true
							now.Generation++
							if err := cl.Update(ctx, now); err != nil {
								return err
							}
						}
					}
					return cl.Patch(ctx, obj, patch, opts...)
				}})
			read := &v1alpha1.StagedBindingPolicy{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(p), read); err != nil {
				t.Fatal(err)
			}
			err := patchUndo(ctx, c, read, "v1", "")
			if !tc.want(err) {
				t.Fatalf("patchUndo = %v", err)
			}
			got := &v1alpha1.StagedBindingPolicy{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
				t.Fatal(err)
			}
			if got.Spec.Revision.Name != tc.wantRev {
				t.Fatalf("spec.revision = %s, want %s", got.Spec.Revision.Name, tc.wantRev)
			}
		})
	}
}
