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

package kcp

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// unknownTypeRefusal is how kcp refused workspaces in its first moments
// after /readyz answered 200 (seen in CI on 2026-11-29).
func unknownTypeRefusal(name string) error {
	return apierrors.NewForbidden(schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspaces"}, name,
		apierrors.NewInternalError(errors.New(`workspacetypes.tenancy.kcp.io "root:universal" not found`)))
}

// refusingClient refuses the first refusals creates with err(name).
func refusingClient(refusals int, err func(string) error) (client.Client, *int) {
	calls := 0
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			calls++
			if calls <= refusals {
				return err(obj.GetName())
			}
			return nil
		},
	}).Build()
	return c, &calls
}

func TestCreateRetriesWhileTheTypeIsUnknown(t *testing.T) {
	c, calls := refusingClient(3, unknownTypeRefusal)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := createRetryingUnknownType(ctx, c, newWorkspace("early")); err != nil {
		t.Fatalf("create: %v", err)
	}
	if *calls != 4 {
		t.Fatalf("create was tried %d times, want 4 (three refusals, then success)", *calls)
	}
}

func TestCreateDoesNotRetryOtherRefusals(t *testing.T) {
	other := func(name string) error {
		return apierrors.NewForbidden(schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspaces"}, name,
			errors.New("user cannot create workspaces"))
	}
	c, calls := refusingClient(1, other)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := createRetryingUnknownType(ctx, c, newWorkspace("denied"))
	if !apierrors.IsForbidden(err) {
		t.Fatalf("create returned %v, want the Forbidden error itself", err)
	}
	if *calls != 1 {
		t.Fatalf("create was tried %d times, want 1", *calls)
	}
}

func TestCreateGivesUpWhenTheContextEnds(t *testing.T) {
	c, _ := refusingClient(1<<30, unknownTypeRefusal)
	ctx, cancel := context.WithTimeout(context.Background(), 3*pollInterval)
	defer cancel()
	err := createRetryingUnknownType(ctx, c, newWorkspace("never"))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `"root:universal" not found`) {
		t.Fatalf("create returned %v, want the deadline and the last refusal", err)
	}
}
