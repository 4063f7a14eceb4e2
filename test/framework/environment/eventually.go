/*
Copyright 2026 The KubeStellar Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package environment

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// pollInterval is how often Eventually and Poll call their check.
const pollInterval = 50 * time.Millisecond

// Eventually calls check every 50ms until it returns nil, and fails the test
// with check's last error if that does not happen within timeout.
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	if err := Poll(context.Background(), timeout, what, check); err != nil {
		t.Fatal(err)
	}
}

// Poll calls check every 50ms until it returns nil, and returns an error
// naming what it waited for, with check's last error, if that does not
// happen within timeout or ctx is done first. It is Eventually for code
// that reports errors rather than failing a test (set-up helpers, benchmarks).
func Poll(ctx context.Context, timeout time.Duration, what string, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s: %w", timeout, what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %w)", what, ctx.Err(), err)
		case <-time.After(pollInterval):
		}
	}
}
