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

package policytest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// floodWriters is how many goroutines CreateBindingPolicies writes from.
const floodWriters = 8

// CreateBindingPolicies floods a WDS, for the tests of the stager's cache
// bound: it creates n BindingPolicies named prefix-<i> through c, each with
// the given labels and an annotation of padding bytes, from 8 goroutines,
// each create tried again while the API server is overloaded
// (environment.CreateRetrying). It returns the first error of each
// goroutine.
func CreateBindingPolicies(ctx context.Context, c client.Client, prefix string, n, padding int, labels map[string]string) error {
	annotation := strings.Repeat("x", padding)
	errs := make([]error, floodWriters)
	var wg sync.WaitGroup
	for w := range floodWriters {
		wg.Go(func() {
			for i := w; i < n; i += floodWriters {
				bp := &ksv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i), Labels: labels,
					Annotations: map[string]string{"example.com/padding": annotation}}}
				if err := environment.CreateRetrying(ctx, c, bp); err != nil {
					errs[w] = fmt.Errorf("creating BindingPolicy %s: %w", bp.Name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
