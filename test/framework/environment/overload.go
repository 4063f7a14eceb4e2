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

package environment

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OverloadRetry is how a test tries its own writes again when an API server
// (kcp, mostly) is too busy to take them: for up to about a minute.
var OverloadRetry = wait.Backoff{Steps: 7, Duration: time.Second, Factor: 2, Jitter: 0.1}

// Overloaded reports whether err is an API server turning a request away
// under load (such as kcp's "resource quota evaluation timed out"), which a
// test's own writes wait out rather than fail on.
func Overloaded(err error) bool {
	return apierrors.IsInternalError(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err)
}

// CreateRetrying creates obj through c, again after an Overloaded error
// (OverloadRetry). AlreadyExists after such an error means an earlier try
// landed, and is success.
func CreateRetrying(ctx context.Context, c client.Client, obj client.Object) error {
	tried := false
	return retry.OnError(OverloadRetry, Overloaded, func() error {
		err := c.Create(ctx, obj)
		if tried && apierrors.IsAlreadyExists(err) {
			return nil
		}
		tried = true
		return err
	})
}
